#!/bin/sh
# clraid single-node RAID6 demo on sparse files (no cluster needed; the
# cluster demo is scripts/demo.sh): a RAID6 over six 256 MiB
# sparse files, served over NBD by the engine (nbdkit + the clraid plugin).
# It writes data, loses two disks, reads the data back, re-adds the disks
# (resync from the write-intent bitmap only), checks parity, and shows that
# mdadm reads the metadata. Everything lives in a temp dir removed at exit.
set -eu
cd "$(dirname "$0")/.."
top=$(pwd)
CLRAID="$top/clraid"
[ -x "$CLRAID" ] || { echo "demo: build first: ./autogen.sh && ./configure && make" >&2; exit 1; }
# Use the plugin from this build tree (an installed clraid finds its own).
[ -e "$top/.libs/nbdkit-clraid-plugin.so" ] && export CLRAID_NBDKIT_PLUGIN="$top/.libs/nbdkit-clraid-plugin.so"
dir=$(mktemp -d "${TMPDIR:-/var/tmp}/clraid-demo.XXXXXX")
run="$dir/run"
uri="nbd+unix:///?socket=$run/vm.sock"
cleanup() {
    "$CLRAID" stop vm --run-dir "$run" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
status() { "$CLRAID" status vm --run-dir "$run"; }
wait_idle() {   # until no sync action runs
    i=0
    while [ "$("$CLRAID" status vm --run-dir "$run" --json | jq -r .sync_action)" != idle ]; do
        i=$((i + 1)); [ $i -lt 600 ] || { echo "demo: sync did not finish" >&2; exit 1; }
        sleep 0.2
    done
}
disks=""
for i in 0 1 2 3 4 5; do truncate -s 256M "$dir/disk$i"; disks="$disks $dir/disk$i"; done

step "clraid create: RAID6 over six sparse files, clustered bitmap with 4 node slots"
# shellcheck disable=SC2086
"$CLRAID" create --level=6 --raid-devices=6 --chunk=128 --bitmap-chunk=4M \
    --nodes=4 --home-cluster=demo --name=vm $disks

step "mdadm --examine disk3: the admin's own tool reads the same metadata"
mdadm --examine "$dir/disk3" | sed -n '1,12p;/Events/p;/Layout/p;/Device Role/p'

step "clraid start: the engine serves the array over NBD and runs the initial resync"
# shellcheck disable=SC2086
"$CLRAID" start vm $disks --run-dir "$run"
status
wait_idle
status

step "write 64 MiB of random data through NBD (nbdcopy)"
head -c 64M /dev/urandom >"$dir/data"
nbdcopy "$dir/data" "$uri"
sum=$(sha256sum <"$dir/data" | cut -d' ' -f1)
echo "sha256 of the data: $sum"

step "two disks fail (RAID6 keeps serving)"
"$CLRAID" fail vm "$dir/disk1" --run-dir "$run"
"$CLRAID" fail vm "$dir/disk4" --run-dir "$run"
status
got=$(nbdcopy "$uri" - | head -c 64M | sha256sum | cut -d' ' -f1)
[ "$got" = "$sum" ] && echo "read back while degraded: identical (sha256 $got)"

step "re-add both: only the chunks dirty in the bitmap are resynced"
for d in disk1 disk4; do
    "$CLRAID" remove vm "$dir/$d" --run-dir "$run"
    "$CLRAID" re-add vm "$dir/$d" --run-dir "$run"
    wait_idle
done
status

step "clraid check: parity scrub"
"$CLRAID" check vm --wait --run-dir "$run"

step "clraid stop, then examine: clean, no dirty bits"
"$CLRAID" stop vm --run-dir "$run"
"$CLRAID" examine "$dir/disk0" | sed -n '/State/p;/Events/p;/Node Slot/p'

step "refusals write nothing: try to create over a live member"
before=$(sha256sum <"$dir/disk0" | cut -d' ' -f1)
"$CLRAID" create --level=1 --raid-devices=2 --nodes=2 --home-cluster=demo "$dir/disk0" "$dir/disk1" || true
after=$(sha256sum <"$dir/disk0" | cut -d' ' -f1)
[ "$before" = "$after" ] && echo "disk0 unchanged"
step "done"
