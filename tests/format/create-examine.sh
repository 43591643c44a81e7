#!/bin/sh
# clraid create / examine on sparse files: every level, spares,
# --assume-clean, --force over old signatures, JSON and text output.
. "${top_srcdir:-.}/tests/functions.sh"
requires jq
requires blkid
requires mkfs.ext4

# Every level, JSON view.
for level in 1 10 5 6; do
    files=$(mkfiles 4 200M)
    # shellcheck disable=SC2086
    "$CLRAID" create --level=$level --raid-devices=4 --nodes=3 --home-cluster=demo \
        --name=l$level $files >"$TESTDIR/create.out"
    grep -q "created raid$level array 'l$level'" "$TESTDIR/create.out" || fail "create output: $(cat "$TESTDIR/create.out")"
    # shellcheck disable=SC2086
    "$CLRAID" examine --json $files >"$TESTDIR/ex.json"
    [ "$(jq length "$TESTDIR/ex.json")" = 4 ] || fail "examine --json: 4 entries expected"
    [ "$(jq -r '[.[].superblock.array_uuid] | unique | length' "$TESTDIR/ex.json")" = 1 ] || fail "one UUID expected"
    [ "$(jq -r '[.[].superblock.device_uuid] | unique | length' "$TESTDIR/ex.json")" = 4 ] || fail "device UUIDs must differ"
    [ "$(jq -r '[.[].superblock.device_number] | join(",")' "$TESTDIR/ex.json")" = "0,1,2,3" ] || fail "device numbers"
    [ "$(jq -r '.[3].superblock.device_role' "$TESTDIR/ex.json")" = "Active device 3" ] || fail "role"
    [ "$(jq -r '.[0].superblock.level' "$TESTDIR/ex.json")" = "raid$level" ] || fail "level"
    [ "$(jq -r '.[0].superblock.state' "$TESTDIR/ex.json")" = "active" ] || fail "state must be active before the initial resync"
    [ "$(jq -r '.[0].bitmap.nodes' "$TESTDIR/ex.json")" = 3 ] || fail "nodes"
    [ "$(jq -r '.[0].bitmap.cluster_name' "$TESTDIR/ex.json")" = demo ] || fail "cluster name"
    bits=$(jq -r '.[0].bitmap.bits' "$TESTDIR/ex.json")
    [ "$bits" -gt 0 ] || fail "no bitmap bits"
    [ "$(jq -r '.[0].bitmap.slots[0].dirty_bits' "$TESTDIR/ex.json")" = "$bits" ] || fail "slot 0 must start dirty"
    [ "$(jq -r '[.[0].bitmap.slots[1:][].dirty_bits] | add' "$TESTDIR/ex.json")" = 0 ] || fail "other slots clean"
    case $level in
    1) want_sectors=$(jq -r '.[0].superblock.used_dev_sectors' "$TESTDIR/ex.json") ;;
    10) want_sectors=$(( $(jq -r '.[0].superblock.used_dev_sectors' "$TESTDIR/ex.json") * 2 )) ;;
    5) want_sectors=$(( $(jq -r '.[0].superblock.used_dev_sectors' "$TESTDIR/ex.json") * 3 )) ;;
    6) want_sectors=$(( $(jq -r '.[0].superblock.used_dev_sectors' "$TESTDIR/ex.json") * 2 )) ;;
    esac
    [ "$(jq -r '.[0].superblock.array_sectors' "$TESTDIR/ex.json")" = "$want_sectors" ] || fail "raid$level array size"
    # Text view.
    "$CLRAID" examine "${files%% *}" >"$TESTDIR/ex.txt"
    [ "$(field "$TESTDIR/ex.txt" "Raid Level")" = "raid$level" ] || fail "text level"
    grep -q "Node Slot 2 : events 0" "$TESTDIR/ex.txt" || fail "text slots"
    echo "ok: raid$level create + examine"
done

# Spares and --assume-clean.
files=$(mkfiles 3 100M)
# shellcheck disable=SC2086
"$CLRAID" create --level=1 --raid-devices=2 --spare-devices=1 --assume-clean --nodes=2 \
    --home-cluster=demo $files >/dev/null
# shellcheck disable=SC2086
"$CLRAID" examine --json $files >"$TESTDIR/ex.json"
[ "$(jq -r '.[2].superblock.device_role' "$TESTDIR/ex.json")" = spare ] || fail "third device must be a spare"
[ "$(jq -r '.[0].superblock.array_state' "$TESTDIR/ex.json")" = AA ] || fail "array state"
[ "$(jq -r '.[0].superblock.state' "$TESTDIR/ex.json")" = clean ] || fail "--assume-clean must be clean"
[ "$(jq -r '[.[0].bitmap.slots[].dirty_bits] | add' "$TESTDIR/ex.json")" = 0 ] || fail "--assume-clean: no dirty bits"
echo "ok: spares and --assume-clean"

# Single-node bitmap (--nodes=1): a plain v4 bitmap, no cluster feature.
files=$(mkfiles 2 100M)
# shellcheck disable=SC2086
"$CLRAID" create --level=1 --raid-devices=2 --nodes=1 $files >/dev/null
# shellcheck disable=SC2086
"$CLRAID" examine --json $files >"$TESTDIR/ex.json"
[ "$(jq -r '.[0].superblock.feature_map' "$TESTDIR/ex.json")" = 1 ] || fail "--nodes=1 feature map"
[ "$(jq -r '.[0].bitmap.version' "$TESTDIR/ex.json")" = 4 ] || fail "--nodes=1 bitmap version"
echo "ok: single-node bitmap"

# A RAID5/6 for several nodes: clraid's feature bit, and every slot's
# partial-parity log reserved after the bitmaps and written empty.
files=$(mkfiles 4 100M)
# shellcheck disable=SC2086
"$CLRAID" create --level=6 --raid-devices=4 --nodes=3 --home-cluster=demo $files >/dev/null
# shellcheck disable=SC2086
"$CLRAID" examine --json $files >"$TESTDIR/ex.json"
"$CLRAID" examine "$TESTDIR/d0" >"$TESTDIR/ex.txt"
[ "$(jq -r '.[0].superblock.feature_map' "$TESTDIR/ex.json")" = $((0x40000101)) ] || fail "RAID6 --nodes=3 feature map"
[ "$(jq -r '.[0].superblock.clraid_parity_cluster' "$TESTDIR/ex.json")" = true ] || fail "parity cluster flag"
[ "$(jq -r '[.[].parity_log.slots[].state] | unique | join(",")' "$TESTDIR/ex.json")" = empty ] ||
    fail "parity logs: $(jq -c '.[0].parity_log' "$TESTDIR/ex.json")"
[ "$(jq -r '.[0].parity_log.slots | length' "$TESTDIR/ex.json")" = 3 ] || fail "parity log slots"
end=$(jq -r '.[0].parity_log.start + 3 * .[0].parity_log.slot_bytes' "$TESTDIR/ex.json")
[ "$end" -le $(($(jq -r '.[0].superblock.data_offset' "$TESTDIR/ex.json") * 512)) ] || fail "parity logs past data_offset"
grep -q "Parity Logs : 3 slots x 1024 KiB from byte" "$TESTDIR/ex.txt" || fail "text parity logs: $(cat "$TESTDIR/ex.txt")"
grep -q "Log Slot 2 : empty" "$TESTDIR/ex.txt" || fail "text log slot"
# a header copy that is not a log (garbage where slot 1's log starts)
start=$(jq -r '.[0].parity_log.start' "$TESTDIR/ex.json")
printf 'garbage' | dd of="$TESTDIR/d0" bs=1 seek=$((start + 1048576)) conv=notrunc status=none
"$CLRAID" examine "$TESTDIR/d0" | grep -q "Log Slot 1 : no valid header: .*checksum" || fail "garbage log header not reported"
# the same for one node: plain md, no log
files=$(mkfiles 4 100M)
# shellcheck disable=SC2086
"$CLRAID" create --level=6 --raid-devices=4 --nodes=1 $files >/dev/null
"$CLRAID" examine --json "$TESTDIR/d0" >"$TESTDIR/ex.json"
[ "$(jq -r '.[0].parity_log' "$TESTDIR/ex.json")" = null ] || fail "a one-node RAID6 has a parity log"
echo "ok: clustered RAID6: feature bit, 3 empty parity logs below data_offset"

# --force over an ext4 filesystem leaves only our signature.
files=$(mkfiles 2 100M)
mkfs.ext4 -q -F "$TESTDIR/d0"
# shellcheck disable=SC2086
"$CLRAID" create --level=1 --raid-devices=2 --nodes=2 --home-cluster=demo --force $files >/dev/null
blkid -p -o export "$TESTDIR/d0" >"$TESTDIR/blkid.txt" || fail "blkid after --force"
grep -qx TYPE=linux_raid_member "$TESTDIR/blkid.txt" || fail "blkid TYPE after --force: $(cat "$TESTDIR/blkid.txt")"
grep -q ext4 "$TESTDIR/blkid.txt" && fail "ext4 signature survived --force"
echo "ok: --force replaces an old filesystem"

# --force over an existing member: a new array UUID.
old=$("$CLRAID" examine --json "$TESTDIR/d0" | jq -r '.[0].superblock.array_uuid')
# shellcheck disable=SC2086
"$CLRAID" create --level=1 --raid-devices=2 --nodes=2 --home-cluster=demo --force $files >/dev/null
new=$("$CLRAID" examine --json "$TESTDIR/d0" | jq -r '.[0].superblock.array_uuid')
[ "$old" != "$new" ] || fail "re-create with --force kept the UUID"
echo "ok: --force re-create"

# --uuid is honoured.
# shellcheck disable=SC2086
"$CLRAID" create --level=1 --raid-devices=2 --nodes=2 --home-cluster=demo --force \
    --uuid=01234567:89abcdef:01234567:89abcdef $files >/dev/null
[ "$("$CLRAID" examine --json "$TESTDIR/d1" | jq -r '.[0].superblock.array_uuid')" = 01234567:89abcdef:01234567:89abcdef ] ||
    fail "--uuid"
echo "ok: --uuid"
