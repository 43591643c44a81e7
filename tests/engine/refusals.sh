#!/bin/sh
# Bad starts are refused with one line and write nothing (stale member,
# member of another array, missing device, lock backend, already running);
# the control socket answers malformed requests with an error, not a crash.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

files=$(create 1 2 64M --assume-clean)
set -- $files
cp --sparse=always "$2" "$TESTDIR/d1.old"
engine_start r "$1" "$2"
qio r 'write -P 0x21 0 1M' || fail "write"
engine_stop r
engine_start r "$1" "$2"
engine_stop r
cp --sparse=always "$TESTDIR/d1.old" "$2"
before=$(sums "$1" "$2")
expect_refusal "stale member" "$CLRAID" start r "$1" "$2" --run-dir "$RUN"
grep -qi stale "$TESTDIR/err" || fail "the refusal must say stale: $(cat "$TESTDIR/err")"
[ "$(sums "$1" "$2")" = "$before" ] || fail "a refused start wrote to a member"
[ ! -e "$RUN/r.pid" ] || fail "a refused start left a pid file"

truncate -s 64M "$TESTDIR/o0" "$TESTDIR/o1"
"$CLRAID" create --level=1 --raid-devices=2 --nodes=1 --assume-clean "$TESTDIR/o0" "$TESTDIR/o1" >/dev/null
before=$(sums "$1" "$TESTDIR/o1")
expect_refusal "member of another array" "$CLRAID" start r "$1" "$TESTDIR/o1" --run-dir "$RUN"
[ "$(sums "$1" "$TESTDIR/o1")" = "$before" ] || fail "a refused start wrote to a member"
expect_refusal "missing device" "$CLRAID" start r "$1" "$TESTDIR/nope" --run-dir "$RUN"
expect_refusal "lock backend" "$CLRAID" start r "$TESTDIR/o0" "$TESTDIR/o1" --lock bogus --run-dir "$RUN"
# --lock dlm where there is no kernel DLM (this host; tests/uml/dlm-*.sh
# run it on one): refused, saying what to start, nothing written.
if [ ! -e /dev/misc/dlm-control ] && [ ! -e /sys/kernel/dlm ]; then
    truncate -s 64M "$TESTDIR/k0" "$TESTDIR/k1"
    "$CLRAID" create --level=1 --raid-devices=2 --nodes=2 --home-cluster=c --assume-clean "$TESTDIR/k0" "$TESTDIR/k1" >/dev/null
    before=$(sums "$TESTDIR/k0" "$TESTDIR/k1")
    expect_refusal "clustered dlm without a DLM" "$CLRAID" start d "$TESTDIR/k0" "$TESTDIR/k1" --lock dlm --run-dir "$RUN"
    if built_with_lock dlm; then
        grep -q "start the cluster stack" "$TESTDIR/err" || fail "the dlm refusal must say what to do: $(cat "$TESTDIR/err")"
    else
        # built without it (./configure --without-dlm): says so (the log names the packages)
        grep -q "Package not installed" "$TESTDIR/err" || fail "the dlm refusal must say it is not built: $(cat "$TESTDIR/err")"
    fi
    [ "$(sums "$TESTDIR/k0" "$TESTDIR/k1")" = "$before" ] || fail "a refused start wrote to a member"
fi
expect_refusal "bad name" "$CLRAID" start ../x "$TESTDIR/o0" --run-dir "$RUN"
expect_refusal "not running" "$CLRAID" status nothere --run-dir "$RUN"

# The control socket.
engine_start o "$TESTDIR/o0" "$TESTDIR/o1"
expect_refusal "already running" "$CLRAID" start o "$TESTDIR/o0" "$TESTDIR/o1" --run-dir "$RUN"
[ "$(stat -c %a "$RUN/o.ctl")" = 600 ] || fail "ctl socket mode $(stat -c %a "$RUN/o.ctl")"
for req in 'garbage' '{' '[1,2]' '{"v":1}' '{"v":2,"cmd":"status"}' '{"v":1,"cmd":"explode"}' \
        '{"v":1,"cmd":"fail","args":{}}' '{"v":1,"cmd":"status"} trailing' \
        '{"v":1,"cmd":"fault","args":{"device":"/nope","op":"read"}}'; do
    cli ctl o "$req" >"$TESTDIR/reply" 2>&1 && fail "request '$req' was accepted"
    jq -e '.v == 1 and .ok == false and (.error | length > 0)' "$TESTDIR/reply" >/dev/null ||
        fail "request '$req': bad reply $(cat "$TESTDIR/reply")"
done
big=$(head -c 70000 /dev/zero | tr '\0' 'x')
cli ctl o "$big" >"$TESTDIR/reply" 2>&1 && fail "oversized request accepted"
jq -e '.ok == false' "$TESTDIR/reply" >/dev/null || fail "oversized request: $(head -c 200 "$TESTDIR/reply")"
cli ctl o '{"v":1,"cmd":"status"}' >"$TESTDIR/reply" || fail "status after bad requests"
jq -e '.ok == true and .result.state != null' "$TESTDIR/reply" >/dev/null || fail "status reply"
# Only root may talk to it.
if command -v setpriv >/dev/null; then
    chmod 755 "$TESTDIR" "$RUN"
    setpriv --reuid=65534 --regid=65534 --clear-groups timeout 20 "$CLRAID" status o --run-dir "$RUN" \
        >/dev/null 2>&1 && fail "a non-root user reached the control socket"
    chmod 700 "$RUN"
fi
engine_stop o
[ ! -e "$RUN/o.ctl" ] || fail "stop left the control socket"
echo "ok: refusals and control socket robustness"
