#!/bin/sh
# clraid start --export tcp:ADDR:PORT: NBD over TCP through nbdkit's TLS.
# A RAID1 served with a pre-shared key is written by qemu-io and nbdcopy
# with the key and read back; clients without the key, or with a wrong
# one, are refused; plain TCP is refused at start unless --tls=off is
# given; bad export and TLS options are refused with one line and write
# nothing; X.509 certificates (certtool makes them).
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"
requires ss
requires certtool

SEED=${SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
echo "seed $SEED (SEED=$SEED to repeat)"

# free_port: a TCP port nothing listens on now, from the seed (each export
# below is stopped before the next one starts, so the same port may come
# back).
free_port() {
    _p=$((20000 + SEED % 30000))
    while [ -n "$(ss -Hltn "sport = :$_p")" ]; do _p=$((_p + 1)); done
    echo "$_p"
}

# hexkey: 32 random bytes in hex.
hexkey() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }

files=$(create 1 2 32M --assume-clean)
set -- $files
before=$(sums "$@")
P=$(free_port)
psk="$TESTDIR/keys.psk"
( umask 077 && printf 'alice:%s\n' "$(hexkey)" >"$psk" )

# Refused at start, before anything runs: one line each, nothing written.
start() { timeout "$T" "$CLRAID" start t1 "$@" --run-dir "$RUN"; }
expect_refusal "plain TCP without --tls=off" start $files --export "tcp:127.0.0.1:$P"
grep -q 'plain TCP refused' "$TESTDIR/err" || fail "plain TCP: unexpected message"
expect_refusal "--tls=on" start $files --export "tcp:127.0.0.1:$P" --tls=on
expect_refusal "--tls=require without a key" start $files --export "tcp:127.0.0.1:$P" --tls=require
expect_refusal "a key with the unix export" start $files --tls=require --tls-psk="$psk"
expect_refusal "a host name" start $files --export tcp:localhost:"$P" --tls=off
expect_refusal "port 0" start $files --export tcp:127.0.0.1:0 --tls=off
expect_refusal "no port" start $files --export tcp:127.0.0.1 --tls=off
expect_refusal "IPv6 without brackets" start $files --export "tcp:::1:$P" --tls=off
grep -q 'in brackets' "$TESTDIR/err" || fail "IPv6 without brackets: message"
expect_refusal "--tls=off with a key" start $files --export "tcp:127.0.0.1:$P" --tls=off --tls-psk="$psk"
chmod 644 "$psk"
expect_refusal "a key others can read" start $files --export "tcp:127.0.0.1:$P" --tls=require --tls-psk="$psk"
grep -q 'chmod 600' "$TESTDIR/err" || fail "world-readable key: no chmod hint"
chmod 600 "$psk"
( umask 077 && printf 'alice=%s\n' "$(hexkey)" >"$TESTDIR/bad.psk" )
expect_refusal "a malformed key file" start $files --export "tcp:127.0.0.1:$P" --tls=require \
    --tls-psk="$TESTDIR/bad.psk"
expect_refusal "a missing key file" start $files --export "tcp:127.0.0.1:$P" --tls=require \
    --tls-psk="$TESTDIR/nosuch.psk"
[ -z "$(ss -Hltn "sport = :$P")" ] || fail "something listens on $P after the refusals"
[ ! -e "$RUN/t1.pid" ] || fail "a refused start left a pid file"
[ "$(sums "$@")" = "$before" ] || fail "a refused start wrote to a member"
echo "ok: 12 refusals, nothing listening, members unchanged"

# The PSK export: --dry-run says what it would serve, start serves it.
out=$(start $files --export "tcp:127.0.0.1:$P" --tls=require --tls-psk="$psk" --dry-run) ||
    fail "dry run: $out"
case $out in *"nbds://alice@127.0.0.1:$P/?tls-psk-file=$psk") ;; *) fail "dry run: $out" ;; esac
out=$(start $files --export "tcp:127.0.0.1:$P" --tls=require --tls-psk="$psk") ||
    { cat "$RUN/t1.log" >&2; fail "start with a PSK: $out"; }
cleanup_fn "engine_kill t1"
echo "ok: $out"
U="nbds://alice@127.0.0.1:$P/?tls-psk-file=$psk"
[ "$(st t1 .export)" = "$U" ] || fail "status export: $(st t1 .export)"
cli status t1 | grep -qF "export: $U" || fail "status text: no export line"
[ ! -e "$RUN/t1.sock" ] || fail "a TCP export also made a unix socket"

size=$(timeout "$T" nbdinfo --size "$U") || fail "nbdinfo with the key"
[ "$size" -gt 0 ] || fail "size $size"
qdir="$TESTDIR/qemu-psk"
mkdir -m 700 "$qdir"
cp "$psk" "$qdir/keys.psk"
timeout "$T" qemu-io --object "tls-creds-psk,id=tls0,endpoint=client,dir=$qdir,username=alice" \
    --image-opts "driver=nbd,server.type=inet,server.host=127.0.0.1,server.port=$P,tls-creds=tls0" \
    -c 'write -P 0x5a 1M 1M' -c 'read -P 0x5a 1M 1M' >"$TESTDIR/qio.out" 2>&1 ||
    { cat "$TESTDIR/qio.out" >&2; fail "qemu-io with the key"; }
! grep -qi 'fail\|error\|mismatch' "$TESTDIR/qio.out" || { cat "$TESTDIR/qio.out" >&2; fail "qemu-io"; }
rand "$TESTDIR/data" 1
timeout "$T" nbdcopy --flush "$TESTDIR/data" "$U" || fail "nbdcopy to the TLS export"
timeout "$T" nbdcopy "$U" - | cmp -n 1048576 - "$TESTDIR/data" >/dev/null || fail "read back over TLS differs"
echo "ok: nbdinfo, qemu-io (0x5a at 1M) and nbdcopy (1 MiB random) with the key"

# Clients without the key, with another key, or another user: refused.
refused() { # refused CMD...: CMD fails; its output is kept
    if "$@" >"$TESTDIR/cl.out" 2>&1; then fail "a client got in: $*"; fi
    echo "ok: refused: $(grep . "$TESTDIR/cl.out" | tail -n 1)"
}
refused timeout "$T" nbdinfo --size "nbd://127.0.0.1:$P/"
grep -qi 'TLS' "$TESTDIR/cl.out" || fail "plain client: not refused for TLS: $(cat "$TESTDIR/cl.out")"
( umask 077 && printf 'alice:%s\n' "$(hexkey)" >"$TESTDIR/wrong.psk" )
refused timeout "$T" nbdinfo --size "nbds://alice@127.0.0.1:$P/?tls-psk-file=$TESTDIR/wrong.psk"
( umask 077 && sed 's/^alice:/mallory:/' "$psk" >"$TESTDIR/user.psk" )
refused timeout "$T" nbdinfo --size "nbds://mallory@127.0.0.1:$P/?tls-psk-file=$TESTDIR/user.psk"
refused timeout "$T" qemu-io -f raw -c 'read 0 4k' "nbd://127.0.0.1:$P/"
engine_stop t1
[ -z "$(ss -Hltn "sport = :$P")" ] || fail "still listening on $P after stop"

# What went over TLS is on the members: the unix export reads it back.
engine_start t1 $files
qio t1 'read -P 0x5a 1M 1M' || fail "0x5a not on the array after a restart"
same t1 "$TESTDIR/data"
engine_stop t1
echo "ok: the data written over TLS reads back through the unix export"

# --tls=off: plain TCP, when asked for explicitly.
P2=$(free_port)
out=$(start $files --export "tcp:127.0.0.1:$P2" --tls=off) || { cat "$RUN/t1.log" >&2; fail "--tls=off: $out"; }
case $out in *"nbd://127.0.0.1:$P2/ "*) ;; *) fail "--tls=off: $out" ;; esac
timeout "$T" nbdcopy "nbd://127.0.0.1:$P2/" - | cmp -n 1048576 - "$TESTDIR/data" >/dev/null ||
    fail "plain TCP read differs"
engine_stop t1
echo "ok: --tls=off serves plain TCP ($out)"

# X.509: a CA, a server certificate for 127.0.0.1; the client trusts the CA.
c="$TESTDIR/pki" cc="$TESTDIR/pki-client"
test_pki "$c" 127.0.0.1
mkdir -m 700 "$cc"
cp "$c/ca-cert.pem" "$cc/"
P3=$(free_port)
out=$(start $files --export "tcp:127.0.0.1:$P3" --tls=require --tls-certificates="$c") ||
    { cat "$RUN/t1.log" >&2; fail "X.509 start: $out"; }
timeout "$T" nbdcopy "nbds://127.0.0.1:$P3/?tls-certificates=$cc" - |
    cmp -n 1048576 - "$TESTDIR/data" >/dev/null || fail "X.509 read differs"
refused timeout "$T" nbdinfo --size "nbd://127.0.0.1:$P3/"
engine_stop t1
echo "ok: X.509: read back with the CA; a plain client refused"
echo "ok: tls export"
