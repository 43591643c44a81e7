#!/bin/sh
# ocf-tester (resource-agents) on the agent, as issue 6 asks:
#   ocf-tester -n o1 -o name=o1 -o devices="A B" -o lock=local -o run_dir=DIR ocf/clraid
# against an array that "clraid create" made.  With the fake engine it must
# pass every check; with the real clraid it must pass every check up to
# start, and all of them once the engine serves arrays ("clraid start").
. "${top_srcdir:-.}/tests/pacemaker/pcmk-functions.sh"
requires ocf-tester
requires xmllint
requires jq
requires nbdkit

DEVS=$(make_array o1 1 2 --nodes=4 --home-cluster=c)
RUN="$TESTDIR/run"
# shellcheck disable=SC2016 # expanded when the cleanup runs
cleanup_fn 'for p in "$RUN"/*.pid; do [ -r "$p" ] && kill "$(cat "$p")"; done 2>/dev/null'
# No cluster may be consulted: a CIB file that does not exist makes the
# agent start standalone (lock=local), and attrd_updater is a no-op.
mkdir -p "$TESTDIR/bin" && printf '#!/bin/sh\nexit 0\n' >"$TESTDIR/bin/attrd_updater"
chmod 755 "$TESTDIR/bin/attrd_updater"
export PATH="$TESTDIR/bin:$PATH" CIB_file="$TESTDIR/no-such-cib.xml"

# ocf-tester runs the agent as "nobody" for meta-data: use a copy it can read.
cp "$AGENT" "$TESTDIR/clraid" && chmod 755 "$TESTDIR/clraid" "$TESTDIR"

tester() { # BINARY: ocf-tester's output in $TESTDIR/tester.out, its exit code
	mkdir -p "$TESTDIR/path" && ln -sf "$1" "$TESTDIR/path/clraid"
	set +e
	PATH="$TESTDIR/path:$PATH" ocf-tester -n o1 -o name=o1 -o devices="$DEVS" \
		-o lock=local -o run_dir="$RUN" "$TESTDIR/clraid" >"$TESTDIR/tester.out" 2>&1
	_rc=$?
	set -e
	return "$_rc"
}

if tester "$FAKE_CLRAID"; then
	grep -q "passed all tests" "$TESTDIR/tester.out" || { cat "$TESTDIR/tester.out"; fail "no pass line"; }
	echo "ok: ocf-tester passes with the fake engine"
else
	cat "$TESTDIR/tester.out"
	fail "ocf-tester fails with the fake engine"
fi

if "$CLRAID" start --help >/dev/null 2>&1; then
	tester "$CLRAID" || { cat "$TESTDIR/tester.out"; fail "ocf-tester fails with the real engine"; }
	echo "ok: ocf-tester passes with the real engine"
else
	# The engine cannot start arrays yet: every check before start must
	# pass, and start must fail with an exit reason, nothing else.
	tester "$CLRAID" && fail "ocf-tester passed although clraid has no start"
	errors=$(grep -c '^\* rc=' "$TESTDIR/tester.out" || true)
	if [ "$errors" -ne 1 ] || ! grep -q '^\* rc=1: Start failed' "$TESTDIR/tester.out"; then
		cat "$TESTDIR/tester.out"
		fail "ocf-tester found more than the missing engine"
	fi
	echo "ok: ocf-tester with the real clraid: meta-data, validate-all, monitor and probe pass; start waits for the engine"
fi
