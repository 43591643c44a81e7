#!/bin/sh
# The agent with export=tcp and the real engine: validate-all refuses what
# clraid start would refuse (plain TCP without tls=off, a key others can
# read, nbd_device with tcp, no address); start serves the array over TCP
# with a pre-shared key; the depth-20 monitor reads through that export;
# a client without the key is refused; stop ends it.  No cluster is
# consulted: lock=local, a CIB file that does not exist, attrd_updater a
# stub.
. "${top_srcdir:-.}/tests/pacemaker/pcmk-functions.sh"
requires nbdkit
requires nbdinfo
requires nbdcopy
requires ss
requires certtool
requires jq

SEED=${SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
echo "seed $SEED (SEED=$SEED to repeat)"
P=$((20000 + SEED % 30000))
while [ -n "$(ss -Hltn "sport = :$P")" ]; do P=$((P + 1)); done

mkdir -p "$TESTDIR/bin" && printf '#!/bin/sh\nexit 0\n' >"$TESTDIR/bin/attrd_updater"
chmod 755 "$TESTDIR/bin/attrd_updater"
export PATH="$TESTDIR/bin:$PATH" CIB_file="$TESTDIR/no-such-cib.xml"
RUN="$TESTDIR/run"
# shellcheck disable=SC2016 # expanded when the cleanup runs
cleanup_fn 'for p in "$RUN"/*.pid; do [ -r "$p" ] && kill -9 "$(cat "$p")"; done 2>/dev/null'

DEVS=$(make_array t1 1 2 --nodes=1)
# a key path with a space and a '&': one word to clraid start, escaped in
# the URI it prints
mkdir -p "$TESTDIR/key dir"
psk="$TESTDIR/key dir/k&s.psk"
(umask 077 && printf 'node:%s\n' "$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')" >"$psk")
export OCF_RESOURCE_INSTANCE=clraid-t1
export OCF_RESKEY_name=t1 OCF_RESKEY_devices="$DEVS" OCF_RESKEY_lock=local \
	OCF_RESKEY_run_dir="$RUN" OCF_RESKEY_binary="$CLRAID" OCF_RESKEY_export=tcp \
	OCF_RESKEY_tcp_address=0.0.0.0 OCF_RESKEY_tcp_port="$P" OCF_RESKEY_CRM_meta_timeout=60000

echo "--- validate-all"
OCF_RESKEY_tcp_address="" expect_rc 6 "export=tcp without tcp_address" validate-all
expect_reason "export=tcp needs tcp_address"
OCF_RESKEY_nbd_device=/dev/nbd0 expect_rc 6 "export=tcp with nbd_device" validate-all
expect_reason "nbd_device attaches the unix export"
expect_rc 6 "tls=require without a key" validate-all
expect_reason "give one of --tls-psk=FILE or --tls-certificates=DIR"
OCF_RESKEY_tls=on expect_rc 6 "tls=on" validate-all
chmod 644 "$psk"
OCF_RESKEY_tls_psk="$psk" expect_rc 5 "a key file others can read" validate-all
expect_reason "chmod 600"
chmod 600 "$psk"
OCF_RESKEY_tcp_address=node1 OCF_RESKEY_tls_psk="$psk" expect_rc 6 "a host name, not an address" validate-all
(umask 077 && echo 'node=00ff' >"$TESTDIR/bad.psk")
OCF_RESKEY_tls_psk="$TESTDIR/bad.psk" expect_rc 5 "a malformed key file (this node's)" validate-all
expect_reason "expected USERNAME:HEXKEY"
OCF_RESKEY_tls=off expect_rc 0 "tls=off (plain TCP, asked for)" validate-all
export OCF_RESKEY_tls_psk="$psk"
expect_rc 0 "tls=require with a key" validate-all
[ -z "$(ss -Hltn "sport = :$P")" ] || fail "validate-all left a listener on $P"

echo "--- start, monitor, stop"
expect_rc 0 "start" start
epsk=$(echo "$psk" | sed 's/ /%20/g; s/&/%26/g')
U="nbds://node@127.0.0.1:$P/?tls-psk-file=$epsk"
[ "$("$CLRAID" status t1 --run-dir "$RUN" --json | jq -r .export)" = "nbds://node@0.0.0.0:$P/?tls-psk-file=$epsk" ] ||
	fail "status export: $("$CLRAID" status t1 --run-dir "$RUN" --json | jq -r .export)"
OCF_CHECK_LEVEL=20 expect_rc 0 "monitor depth 20 (reads start and end through the TLS export)" monitor
grep -q "Read of" "$TESTDIR/agent.out" && fail "monitor depth 20 logged a failed read"
size=$(timeout 60 nbdinfo --size "$U") || fail "nbdinfo with the key"
if timeout 60 nbdinfo --size "nbd://127.0.0.1:$P/" >"$TESTDIR/plain.out" 2>&1; then
	fail "a client without the key got in"
fi
grep -qi tls "$TESTDIR/plain.out" || fail "plain client: $(cat "$TESTDIR/plain.out")"
echo "ok: size $size with the key; without it: $(tail -n 1 "$TESTDIR/plain.out")"
# The monitor's read fails when the export does not answer with this key.
(umask 077 && printf 'node:%s\n' "$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')" >"$TESTDIR/other.psk")
OCF_RESKEY_tls_psk="$TESTDIR/other.psk" OCF_CHECK_LEVEL=20 expect_rc 1 "monitor depth 20 with another key" monitor
expect_reason "does not answer"
expect_rc 0 "stop" stop
[ -z "$(ss -Hltn "sport = :$P")" ] || fail "still listening on $P after stop"
expect_rc 7 "monitor after stop" monitor

# X.509: a server certificate for the node's address (192.0.2.10), not for
# the loopback address the monitor connects to.
echo "--- tls_certificates"
c="$TESTDIR/pki"
test_pki "$c" 192.0.2.10
export OCF_RESKEY_tls_psk="" OCF_RESKEY_tls_certificates="$c"
expect_rc 0 "start with certificates" start
OCF_CHECK_LEVEL=20 expect_rc 0 "monitor depth 20 over X.509 (certificate for another address)" monitor
expect_rc 0 "stop" stop

# TLS on IPv6: the engine serves it; the depth-20 read says why it cannot.
if [ -n "$(ip -6 addr show dev lo 2>/dev/null)" ]; then
	echo "--- IPv6"
	export OCF_RESKEY_tls_certificates="" OCF_RESKEY_tls_psk="$psk" OCF_RESKEY_tcp_address=::1
	expect_rc 0 "start on [::1] with a key" start
	ss -Hltn "sport = :$P" | grep -q '\[::1\]' || fail "nothing listens on [::1]:$P"
	OCF_CHECK_LEVEL=10 expect_rc 0 "monitor depth 10 on IPv6" monitor
	OCF_CHECK_LEVEL=20 expect_rc 6 "monitor depth 20 with TLS on IPv6" monitor
	expect_reason "cannot read through a TLS export on IPv6"
	expect_rc 0 "stop" stop
else
	echo "note: no IPv6 on lo here: the IPv6 cases were not run"
fi
echo "ok: agent tls"
