# shellcheck shell=sh disable=SC2034
# Helpers for the Pacemaker tests.  Source it first thing, instead of
# tests/functions.sh (which it sources):
#   . "${top_srcdir:-.}/tests/pacemaker/pcmk-functions.sh"
#
# pcs and crm_resource find agents only under /usr/lib/ocf/resource.d.  So
# that nothing host-wide changes, each test re-runs itself in a private
# mount namespace and bind-mounts there a copy of that directory holding
# ocf:clraid:clraid from the source tree.  The mount ends with the test.

if [ -z "${CLRAID_PCMK_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (private mount namespace)"; exit 77; }
	command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare is not installed"; exit 77; }
	# shellcheck disable=SC2086
	CLRAID_PCMK_NS=1 exec unshare -m ${CLRAID_PCMK_UNSHARE:-} --propagation private "${SHELL:-/bin/sh}" "$0" "$@"
fi

. "${top_srcdir:-.}/tests/functions.sh"

AGENT="$top_srcdir/ocf/clraid"
FAKE_CLRAID="$top_srcdir/tests/pacemaker/fake-clraid"
RNG_OCF11="$top_srcdir/tests/pacemaker/ra-api-1.1.rng"
OCF_RA_DIR=/usr/lib/ocf/resource.d
export OCF_ROOT=/usr/lib/ocf
export CLRAID_REAL="$CLRAID"
# clraid-policyd checks the agent's policy parameters.  The agent looks for
# it next to its clraid binary, then in PATH: the fake clraid has none next
# to it, so the build tree's goes into PATH (alone, through a folder of its
# own: the build tree's clraid must not shadow anything).
if [ -x "$top_builddir/clraid-policyd" ]; then
	mkdir -p "$TESTDIR/policyd-bin"
	ln -sf "$top_builddir/clraid-policyd" "$TESTDIR/policyd-bin/clraid-policyd"
	PATH="$TESTDIR/policyd-bin:$PATH"
	export PATH
fi
# The engine's nbdkit plugin, from the build tree unless given.
if [ -z "${CLRAID_NBDKIT_PLUGIN:-}" ] && [ -r "$top_builddir/.libs/nbdkit-clraid-plugin.so" ]; then
	CLRAID_NBDKIT_PLUGIN="$top_builddir/.libs/nbdkit-clraid-plugin.so"
	export CLRAID_NBDKIT_PLUGIN
fi

# private_ocf: make ocf:clraid:clraid visible to Pacemaker tools, in this
# mount namespace only.
private_ocf() {
	[ -d "$OCF_RA_DIR" ] || skip "$OCF_RA_DIR does not exist (resource-agents)"
	mkdir -p "$TESTDIR/resource.d"
	cp -a "$OCF_RA_DIR/." "$TESTDIR/resource.d/"
	mkdir -p "$TESTDIR/resource.d/clraid"
	cp "$AGENT" "$TESTDIR/resource.d/clraid/clraid"
	chmod 755 "$TESTDIR/resource.d/clraid/clraid"
	mount --bind "$TESTDIR/resource.d" "$OCF_RA_DIR" || fail "bind mount over $OCF_RA_DIR"
	cleanup_fn "umount $OCF_RA_DIR"
}

# make_array NAME LEVEL N [create options...]: N sparse 64 MiB members made
# by "clraid create"; prints their paths.
make_array() {
	_n=$1 _l=$2 _c=$3; shift 3
	_devs=""
	_i=0
	while [ "$_i" -lt "$_c" ]; do
		truncate -s 64M "$TESTDIR/$_n-$_i"
		_devs="$_devs $TESTDIR/$_n-$_i"
		_i=$((_i + 1))
	done
	# shellcheck disable=SC2086
	"$CLRAID" create --level="$_l" --raid-devices="$_c" --name="$_n" \
		--assume-clean "$@" $_devs >/dev/null || fail "clraid create $_n"
	echo "${_devs# }"
}

# agent ACTION: run the agent with the OCF_RESKEY_* of the environment;
# stdout+stderr in $TESTDIR/agent.out, returns its exit code.
agent() {
	set +e
	__OCF_ACTION=$1 "$AGENT" "$1" >"$TESTDIR/agent.out" 2>&1
	_rc=$?
	set -e
	return "$_rc"
}

# expect_rc WANT WHAT ACTION: the agent's ACTION must exit WANT.
expect_rc() {
	_want=$1 _what=$2
	if agent "$3"; then _got=0; else _got=$?; fi
	if [ "$_got" -ne "$_want" ]; then
		cat "$TESTDIR/agent.out" >&2
		fail "$_what: $3 exited $_got, expected $_want"
	fi
	echo "ok: $_what ($3 -> $_got) $(sed -n 's/^ocf-exit-reason://p' "$TESTDIR/agent.out" | head -n 1)"
}

# expect_reason TEXT: the last agent run gave an exit reason containing TEXT.
expect_reason() {
	grep -q "^ocf-exit-reason:.*$1" "$TESTDIR/agent.out" || {
		cat "$TESTDIR/agent.out" >&2
		fail "no exit reason matching '$1'"
	}
}
