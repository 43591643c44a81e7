#!/bin/sh
# Bad input: examine prints one clear line and exits 1 (never crashes);
# every refused create leaves every device byte-identical.
. "${top_srcdir:-.}/tests/functions.sh"
requires mkfs.ext4
requires sha256sum
[ -x "$SBPATCH" ] || fail "tests/format/sbpatch is not built"

SB=4096          # superblock byte offset (v1.2)
BM=8192          # slot 0 bitmap superblock

fresh() {   # fresh N: a clean clustered RAID5 (or RAID1 for N=2) on d0..dN-1
    _f=$(mkfiles "$1" 64M)
    _lvl=5; [ "$1" = 2 ] && _lvl=1
    # shellcheck disable=SC2086
    "$CLRAID" create --level=$_lvl --raid-devices="$1" --nodes=4 --home-cluster=t $_f >/dev/null
    echo "$_f"
}

# ---- examine ----
files=$(fresh 3)
d0=$TESTDIR/d0
truncate -s 64M "$TESTDIR/zero"
expect_refusal "examine zeroed device" "$CLRAID" examine "$TESTDIR/zero"
grep -q "are zero" "$TESTDIR/err" || fail "zeroed: message"

cp "$d0" "$TESTDIR/x"; "$SBPATCH" "$TESTDIR/x" $SB 4 0x12345678
expect_refusal "examine wrong magic" "$CLRAID" examine "$TESTDIR/x"
grep -q "magic 0x12345678" "$TESTDIR/err" || fail "magic: message"

cp "$d0" "$TESTDIR/x"; "$SBPATCH" "$TESTDIR/x" $((SB + 100)) 1 0x5a
expect_refusal "examine bad checksum" "$CLRAID" examine "$TESTDIR/x"
grep -q "checksum" "$TESTDIR/err" || fail "checksum: message"

cp "$d0" "$TESTDIR/x"; truncate -s 20M "$TESTDIR/x"
expect_refusal "examine truncated device" "$CLRAID" examine "$TESTDIR/x"
grep -q "truncated" "$TESTDIR/err" || fail "truncated: message"

truncate -s 6000 "$TESTDIR/tiny"
expect_refusal "examine tiny file" "$CLRAID" examine "$TESTDIR/tiny"

cp "$d0" "$TESTDIR/x"; "$SBPATCH" "$TESTDIR/x" $((SB + 128)) 8 999999999; "$SBPATCH" --fix-csum "$TESTDIR/x"
expect_refusal "examine data_offset past the end" "$CLRAID" examine "$TESTDIR/x"
grep -q "past the end" "$TESTDIR/err" || fail "data_offset: message"

cp "$d0" "$TESTDIR/x"; "$SBPATCH" "$TESTDIR/x" $((SB + 92)) 4 100000; "$SBPATCH" --fix-csum "$TESTDIR/x"
expect_refusal "examine absurd raid_disks" "$CLRAID" examine "$TESTDIR/x"

cp "$d0" "$TESTDIR/x"; "$SBPATCH" "$TESTDIR/x" $((SB + 220)) 4 0xffffffff
expect_refusal "examine absurd max_dev" "$CLRAID" examine "$TESTDIR/x"

cp "$d0" "$TESTDIR/x"; "$SBPATCH" "$TESTDIR/x" $((SB + 72)) 4 7; "$SBPATCH" --fix-csum "$TESTDIR/x"
expect_refusal "examine unsupported level" "$CLRAID" examine "$TESTDIR/x"

cp "$d0" "$TESTDIR/x"; "$SBPATCH" "$TESTDIR/x" $((BM + 68)) 4 100000
expect_refusal "examine absurd bitmap node count" "$CLRAID" examine "$TESTDIR/x"

cp "$d0" "$TESTDIR/x"; "$SBPATCH" "$TESTDIR/x" $((BM + 52)) 4 3000
expect_refusal "examine corrupt bitmap chunk size" "$CLRAID" examine "$TESTDIR/x"

cp "$d0" "$TESTDIR/x"; "$SBPATCH" "$TESTDIR/x" $((BM + 8)) 1 0xee
expect_refusal "examine bitmap of another array" "$CLRAID" examine "$TESTDIR/x"

cp "$d0" "$TESTDIR/x"; "$SBPATCH" "$TESTDIR/x" $((BM + 40)) 8 0x7fffffffffffffff
expect_refusal "examine absurd bitmap sync size" "$CLRAID" examine "$TESTDIR/x"

mkdir "$TESTDIR/other"
"$CLRAID" create --level=1 --raid-devices=2 --nodes=2 --home-cluster=t \
    "$TESTDIR/d1" "$TESTDIR/d2" --force >/dev/null
cp "$TESTDIR/d1" "$TESTDIR/other/m"
files=$(fresh 3)
set +e
"$CLRAID" examine "$TESTDIR/d0" "$TESTDIR/d1" "$TESTDIR/other/m" >/dev/null 2>"$TESTDIR/err"; rc=$?
set -e
[ $rc = 1 ] || fail "mixed arrays: exit $rc"
[ "$(wc -l <"$TESTDIR/err")" = 1 ] && grep -q "not members of one array" "$TESTDIR/err" || fail "mixed arrays: $(cat "$TESTDIR/err")"
echo "ok: examine a member of another array mixed in -> $(cat "$TESTDIR/err")"

# A corrupt node slot other than 0 is reported in place, not fatal.
cp "$d0" "$TESTDIR/x"
stride=$("$CLRAID" examine --json "$TESTDIR/x" | jq -r '.[0].bitmap.slots | length') # 4 slots
"$SBPATCH" "$TESTDIR/x" $((BM + 4096 * 2)) 4 0
"$CLRAID" examine "$TESTDIR/x" >"$TESTDIR/out"
grep -q "Node Slot 2 : unreadable" "$TESTDIR/out" || fail "bad slot 2 not reported (slots=$stride)"
echo "ok: examine reports a corrupt node slot"

# ---- create refusals: nothing written anywhere ----
refuse_create() {   # WHAT DEV... -- create args before the devices in $ARGS
    _what=$1; shift
    _before=$(sums "$TESTDIR"/d*)
    # shellcheck disable=SC2086
    expect_refusal "create: $_what" "$CLRAID" create $ARGS "$@"
    _after=$(sums "$TESTDIR"/d*)
    [ "$_before" = "$_after" ] || fail "create: $_what: a device changed"
}

rm -f "$TESTDIR"/d*
mkfiles 4 16M >/dev/null
ARGS="--level=5 --raid-devices=3 --nodes=2 --home-cluster=t"
refuse_create "duplicate device" "$TESTDIR/d0" "$TESTDIR/d1" "$TESTDIR/d0"
ln -s "$TESTDIR/d1" "$TESTDIR/link"
refuse_create "same device through a symlink" "$TESTDIR/d0" "$TESTDIR/d1" "$TESTDIR/link"
refuse_create "missing device" "$TESTDIR/d0" "$TESTDIR/d1" "$TESTDIR/nonexistent"
refuse_create "a directory" "$TESTDIR/d0" "$TESTDIR/d1" "$TESTDIR/other"
truncate -s 1M "$TESTDIR/d3"
refuse_create "too-small device" "$TESTDIR/d0" "$TESTDIR/d1" "$TESTDIR/d3"
grep -q "needs at least" "$TESTDIR/err" || fail "too small: message"
truncate -s 16M "$TESTDIR/d3"
refuse_create "too few devices" "$TESTDIR/d0" "$TESTDIR/d1"
mkfs.ext4 -q -F "$TESTDIR/d2"
refuse_create "device with a filesystem" "$TESTDIR/d0" "$TESTDIR/d1" "$TESTDIR/d2"
grep -q "ext4" "$TESTDIR/err" || fail "ext4: message"
ARGS="--level=1 --raid-devices=2 --nodes=2 --home-cluster=t"
"$CLRAID" create $ARGS "$TESTDIR/d0" "$TESTDIR/d3" >/dev/null
refuse_create "member of another array" "$TESTDIR/d1" "$TESTDIR/d3"
grep -q "md/clraid member" "$TESTDIR/err" || fail "member: message"
# --force never overrides structural errors
ARGS="--level=1 --raid-devices=2 --nodes=2 --home-cluster=t --force"
refuse_create "duplicate device with --force" "$TESTDIR/d1" "$TESTDIR/d1"
truncate -s 1M "$TESTDIR/d1"
refuse_create "too-small device with --force" "$TESTDIR/d0" "$TESTDIR/d1"
truncate -s 16M "$TESTDIR/d1"
# Parameter errors are reported before any device is even probed: use
# blank devices so only the parameter can be the reason.
rm -f "$TESTDIR"/d*
mkfiles 2 16M >/dev/null
while IFS='|' read -r bad word; do
    [ -n "$bad" ] || continue
    ARGS="$bad"
    case "$bad" in *nodes=4*) ;; *) ARGS="$ARGS --home-cluster=t" ;; esac
    refuse_create "bad parameters: $bad" "$TESTDIR/d0" "$TESTDIR/d1"
    grep -q -- "$word" "$TESTDIR/err" || fail "bad parameters $bad: message does not mention $word"
done <<'CASES'
--level=7|--level
--level=5 --raid-devices=2|raid5
--level=10 --raid-devices=2 --chunk=96|--chunk
--level=1 --raid-devices=2 --nodes=0|--nodes
--level=1 --raid-devices=2 --nodes=65|--nodes
--level=10 --raid-devices=2 --layout=n3|copies
--level=6 --raid-devices=2 --layout=right-symmetric|raid6
--level=5 --raid-devices=2 --layout=bogus|--layout
--level=1 --raid-devices=2 --bitmap-chunk=3|--bitmap-chunk
--level=1 --raid-devices=2 --nodes=4|--home-cluster
--level=1 --raid-devices=two|--raid-devices
--level=1 --raid-devices=2 --uuid=xyz|--uuid
--level=1 --raid-devices=3|devices given
CASES
echo "ok: every refusal left the devices untouched"
