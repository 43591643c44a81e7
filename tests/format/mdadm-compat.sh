#!/bin/sh
# External check: what `clraid create` writes, mdadm 4.2 and blkid read back
# the same, for all four levels over a spread of geometries.
. "${top_srcdir:-.}/tests/functions.sh"
requires mdadm
requires blkid
requires jq
requires losetup
requires_root

# level devices layout chunkKiB bitmapchunkKiB nodes
CASES="
1 2 - - 4096 2
1 3 - - 65536 32
1 8 - - 16384 8
10 2 n2 64 4096 2
10 3 n2 512 8192 4
10 4 f2 256 16384 16
10 5 o2 1024 65536 3
10 6 n3 128 4096 32
5 3 left-symmetric 64 4096 2
5 4 left-asymmetric 128 8192 4
5 5 right-symmetric 256 16384 8
5 6 right-asymmetric 512 32768 16
5 7 parity-first 1024 65536 32
5 8 parity-last 64 4096 5
6 4 left-symmetric 64 4096 2
6 6 left-symmetric 512 16384 8
6 8 left-symmetric 1024 65536 32
"

n=0
echo "$CASES" | while read -r level ndev layout chunk bchunk nodes; do
    [ -n "$level" ] || continue
    n=$((n + 1))
    files=$(mkfiles "$ndev" 300M)
    opts="--level=$level --raid-devices=$ndev --bitmap-chunk=$bchunk --nodes=$nodes --home-cluster=cl$nodes --name=t$n"
    [ "$layout" = - ] || opts="$opts --layout=$layout"
    [ "$chunk" = - ] || opts="$opts --chunk=$chunk"
    # shellcheck disable=SC2086
    "$CLRAID" create $opts $files >/dev/null || fail "create $opts"

    # shellcheck disable=SC2086
    "$CLRAID" examine --json $files >"$TESTDIR/ex.json" || fail "clraid examine $opts"
    uuid=$(jq -r '.[0].superblock.array_uuid' "$TESTDIR/ex.json")
    # per device: events, data offset, layout name (one jq for the case)
    jq -r '.[].superblock | "\(.events) \(.data_offset) \(.layout_name)"' "$TESTDIR/ex.json" >"$TESTDIR/sb.txt"
    dashed=$(echo "$uuid" | tr -d : | sed 's/^\(........\)\(....\)\(....\)\(....\)\(............\)$/\1-\2-\3-\4-\5/')
    i=0
    exec 3<"$TESTDIR/sb.txt"
    for f in $files; do
        read -r sb_events sb_offset sb_layout <&3 || fail "case $n: clraid examine listed fewer devices"
        mdadm --examine "$f" >"$TESTDIR/md.txt" 2>&1 || { cat "$TESTDIR/md.txt"; fail "mdadm --examine $f"; }
        # "NAME : value" lines into a case list, read in the shell (no
        # process per field: 90 devices here)
        md=$(sed -n 's/^ *\([A-Za-z][A-Za-z ]*[A-Za-z]\) : *\(.*[^ ]\) *$/\1=\2/p' "$TESTDIR/md.txt")
        want() {
            got=$(echo "$md" | while IFS= read -r kv; do [ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; break; }; done)
            [ "$got" = "$2" ] || fail "case $n ($opts) $f: mdadm '$1' is '$got', clraid wrote '$2'"
        }
        want "Raid Level" "raid$level"
        want "Raid Devices" "$ndev"
        want "Array UUID" "$uuid"
        want "Device Role" "Active device $i"
        want "Events" "$sb_events"
        want "Cluster Name" "cl$nodes"
        want "Name" "t$n"
        # RAID5/6 for several nodes carry clraid's own feature bit, which
        # keeps kernel md off them; mdadm still reads and prints them
        case $level in 5 | 6) want "Feature Map" "0x40000101" ;; *) want "Feature Map" "0x101" ;; esac
        want "Data Offset" "$sb_offset sectors"
        csum=$(field "$TESTDIR/md.txt" Checksum)
        case "$csum" in
        *" - correct") ;;
        *) fail "case $n $f: mdadm says checksum '$csum'" ;;
        esac
        if [ "$level" != 1 ]; then
            want "Chunk Size" "${chunk}K"
            want "Layout" "$sb_layout"
            case "$level:$layout" in
            10:n*) want Layout "near=${layout#n}" ;;
            10:f*) want Layout "far=${layout#f}" ;;
            10:o*) want Layout "offset=${layout#o}" ;;
            *) want Layout "$layout" ;;
            esac
        fi
        blkid -p -o export "$f" >"$TESTDIR/blkid.txt" || fail "blkid -p $f found nothing"
        grep -qx 'TYPE=linux_raid_member' "$TESTDIR/blkid.txt" || fail "blkid TYPE on $f: $(cat "$TESTDIR/blkid.txt")"
        grep -qx "UUID=$dashed" "$TESTDIR/blkid.txt" || fail "blkid UUID on $f, expected $dashed"
        i=$((i + 1))
    done

    exec 3<&-
    # --examine-bitmap reads block devices only: look through a loop device.
    loop=$(loop_attach "${files%% *}")
    mdadm --examine-bitmap "$loop" >"$TESTDIR/x.txt" 2>&1 || { cat "$TESTDIR/x.txt"; fail "mdadm -X $loop"; }
    [ "$(field "$TESTDIR/x.txt" "Cluster nodes")" = "$nodes" ] || fail "case $n: mdadm -X cluster nodes"
    slots=$(grep -c '^ *Node Slot :' "$TESTDIR/x.txt")
    [ "$slots" = "$nodes" ] || fail "case $n: mdadm -X shows $slots node slots, expected $nodes"
    [ "$(field "$TESTDIR/x.txt" Version)" = 5 ] || fail "case $n: bitmap version"
    bits=$(jq -r '.[0].bitmap.bits' "$TESTDIR/ex.json")
    # slot 0 starts all-dirty (initial resync), every other slot clean
    grep -q "Bitmap : $bits bits (chunks), $bits dirty (100.0%)" "$TESTDIR/x.txt" ||
        fail "case $n: slot 0 not fully dirty in mdadm -X"
    clean=$(grep -c "Bitmap : $bits bits (chunks), 0 dirty (0.0%)" "$TESTDIR/x.txt")
    [ "$clean" = $((nodes - 1)) ] || fail "case $n: $clean clean slots in mdadm -X, expected $((nodes - 1))"
    losetup -d "$loop"
    echo "ok: case $n raid$level x$ndev layout=$layout chunk=$chunk bitmap=${bchunk}K nodes=$nodes"
    # shellcheck disable=SC2086
    rm -f $files
done
