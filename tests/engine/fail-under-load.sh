#!/bin/sh
# A member fails under load (two for RAID6) through the ctl fault hook: the
# client sees no error and the data is intact; with READD=1 the returning
# member is then re-added and resynced from the bitmap only (readd-bitmap.sh).
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

# The device comes back: re-add resyncs only what changed while it was out.
readd() {
    qio $name 'write -P 0x33 40M 1M' || fail "raid$level: write while degraded"
    for v in $victims; do
        cli fault $name "$v" clear >/dev/null || fail "fault clear"
        cli remove $name "$v" >/dev/null || fail "remove $v"
        cli re-add $name "$v" >/dev/null || fail "re-add $v"
    done
    wait_idle $name
    resynced=$(st $name .last_resync.bytes)
    echo "raid$level: re-add resynced $resynced of $size bytes"
    [ "$resynced" -lt $((size / 2)) ] || fail "raid$level: re-add rewrote $resynced bytes: not from the bitmap"
    [ "$(st $name .state)" != degraded ] || fail "raid$level: still degraded after re-add"
    same $name "$TESTDIR/data"
    qio $name 'read -P 0x33 40M 1M' || fail "raid$level: data written while degraded"
}

for level in 1 5 6; do
    name=f$level
    files=$(create $level 4 64M --assume-clean --bitmap-chunk=1024)
    set -- $files
    # shellcheck disable=SC2086
    engine_start $name $files
    size=$(st $name .size_bytes)
    rand "$TESTDIR/data" 16
    # Slow the victim's I/O so the failure lands mid-copy.
    cli fault $name "$2" delay --ms 2 >/dev/null || fail "fault delay"
    (rc=0; timeout "$T" nbdcopy --flush "$TESTDIR/data" "$(uri $name)" || rc=$?
        echo $rc >"$TESTDIR/copy.rc") &
    copier=$!
    sleep 0.5
    cli fault $name "$2" vanish >/dev/null || fail "fault vanish $2"
    victims="$2"
    if [ $level = 6 ]; then
        sleep 0.2
        # a media error (ENODATA, 61) this time: counted as such
        cli fault $name "$3" rw --errno 61 >/dev/null || fail "fault rw $3"
        victims="$2 $3"
    fi
    wait $copier || true
    [ "$(cat "$TESTDIR/copy.rc")" = 0 ] || fail "raid$level: the client saw an error"
    same $name "$TESTDIR/data"
    [ "$(st $name .state)" = degraded ] || fail "raid$level: state $(st $name .state), expected degraded"
    for v in $victims; do
        [ "$(st $name ".devices[] | select(.path == \"$v\") | .state")" = faulty ] || fail "raid$level: $v not faulty"
    done
    # the errors that failed them, by class (the policy daemon's input)
    e2=$(st $name ".devices[] | select(.path == \"$2\") | .io_errors | \"\\(.path) \\(.media) \\(.last_errno)\"")
    case "$e2" in
    "0 "* | *" null") fail "raid$level: $2 vanished (ENODEV) but io_errors says: $e2" ;;
    *" 0 ENODEV") ;;
    *) fail "raid$level: $2 vanished (ENODEV): io_errors path/media/last: $e2" ;;
    esac
    if [ $level = 6 ]; then
        e3=$(st $name ".devices[] | select(.path == \"$3\") | .io_errors | \"\\(.path) \\(.media) \\(.last_errno)\"")
        case "$e3" in
        "0 "[1-9]*" ENODATA") ;;
        *) fail "raid$level: $3 failed with ENODATA: io_errors path/media/last: $e3" ;;
        esac
    fi
    cli status $name | grep -q "$(basename "$2"): [0-9]* I/O error(s) here" ||
        fail "raid$level: clraid status does not show $2's I/O errors: $(cli status $name)"
    echo "raid$level: $2 failed with path/media/last: $e2${e3:+; $3: $e3}"
    [ "${READD:-0}" = 1 ] && readd
    zero_mismatches $name
    engine_stop $name
    echo "ok: raid$level fail under load${READD:+ + re-add}"
done
