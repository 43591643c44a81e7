# Shared helpers for clraid's shell tests. Source it first thing:
#   . "${top_srcdir:-.}/tests/functions.sh"
# Exit 77 means "skipped" to the automake harness.
set -eu

: "${top_builddir:=$(pwd)}"
: "${top_srcdir:=$top_builddir}"
CLRAID="$top_builddir/clraid"
SBPATCH="$top_builddir/tests/format/sbpatch"

skip() { echo "SKIP: $*"; exit 77; }
# fail MSG: the test fails; MSG is said again after the cleanup's output,
# so that it is the last line of the log (CI shows a log's tail)
fail() { _fail_msg="$*"; echo "FAIL: $*" >&2; exit 1; }
_fail_msg=""
requires() { command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"; }
requires_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
# built_with_lock NAME: true if this build has the NAME (cpg, dlm) lock
# backend; ./configure leaves one out when its libraries are missing.
built_with_lock() {
    grep -q "^#define HAVE_LOCK_$(echo "$1" | tr '[:lower:]' '[:upper:]') 1" "$top_builddir/config.h"
}
requires_lock() { built_with_lock "$1" || skip "clraid was built without the $1 lock backend (see ./configure)"; }

TESTDIR=$(mktemp -d "${TMPDIR:-/var/tmp}/clraid-test.XXXXXX")
_cleanup_cmds=""
# cleanup_fn CMD...: run CMD at exit (last registered runs first).
cleanup_fn() { _cleanup_cmds="$*; $_cleanup_cmds"; }
_cleanup() {
    rc=$?
    set +e
    eval "$_cleanup_cmds"
    # CLRAID_KEEP_TESTDIR=1 keeps a failed test's files for a post-mortem
    if { [ "$rc" -ne 0 ] && [ -n "${CLRAID_KEEP_TESTDIR:-}" ]; } || [ "${CLRAID_KEEP_TESTDIR:-}" = always ]; then
        echo "kept for a post-mortem: $TESTDIR" >&2
    else
        rm -rf "$TESTDIR"
    fi
    [ -z "$_fail_msg" ] || echo "FAIL (said above): $_fail_msg" >&2
    exit $rc
}
trap _cleanup EXIT
trap 'exit 130' INT TERM

# mkfiles N SIZE: sparse member files $TESTDIR/d0 .. d(N-1); prints paths.
mkfiles() {
    _i=0
    while [ "$_i" -lt "$1" ]; do
        rm -f "$TESTDIR/d$_i"
        truncate -s "$2" "$TESTDIR/d$_i"
        printf '%s ' "$TESTDIR/d$_i"
        _i=$((_i + 1))
    done
}

# loop_attach FILE: attaches a read-only loop device, detached at exit.
loop_attach() {
    _l=$(losetup -f --show -r "$1") || fail "losetup $1"
    cleanup_fn "losetup -d $_l"
    echo "$_l"
}

# sums FILE...: one line of sha256 sums, to prove nothing was written.
sums() { sha256sum "$@" | awk '{print $1}' | tr '\n' ' '; }

# expect_refusal WHAT CMD...: CMD must exit 1 (not crash) and print exactly
# one non-empty line on stderr; the line is left in $TESTDIR/err.
expect_refusal() {
    _what=$1; shift
    set +e
    "$@" >"$TESTDIR/out" 2>"$TESTDIR/err"
    _rc=$?
    set -e
    [ "$_rc" -eq 1 ] || { cat "$TESTDIR/err" >&2; fail "$_what: exit $_rc, expected 1"; }
    _lines=$(wc -l <"$TESTDIR/err")
    [ "$_lines" -eq 1 ] || { cat "$TESTDIR/err" >&2; fail "$_what: $_lines lines on stderr, expected 1"; }
    grep -q . "$TESTDIR/err" || fail "$_what: empty error"
    echo "ok: $_what -> $(cat "$TESTDIR/err")"
}

# wait_until SECONDS CMD...: poll CMD every 0.1 s until it succeeds; false
# if it has not after SECONDS.  A state the test then asserts is polled for,
# never waited for with a fixed sleep: a slow machine reaches it late.
wait_until() {
    _wu_n=$(($1 * 10)); shift
    until "$@"; do
        _wu_n=$((_wu_n - 1))
        [ "$_wu_n" -gt 0 ] || return 1
        sleep 0.1
    done
}

# gone PID: the process has exited (no such process, or a zombie).
gone() { [ ! -e "/proc/$1" ] || grep -q '^[^)]*) [ZX]' "/proc/$1/stat" 2>/dev/null; }

# field FILE NAME: value of "NAME : value" in mdadm-style output.
field() { sed -n "s/^ *$2 : *//p" "$1" | head -n 1 | sed 's/ *$//'; }

# test_pki DIR IP: with certtool, a test CA and a server certificate for
# IP in DIR (mode 700): ca-cert.pem, server-cert.pem, server-key.pem (600),
# what nbdkit's --tls-certificates loads; valid two days.
test_pki() {
    mkdir -m 700 "$1"
    certtool --generate-privkey --outfile "$1/ca-key.pem" 2>/dev/null || fail "certtool: CA key"
    printf 'cn = clraid test CA\nca\ncert_signing_key\nexpiration_days = 2\n' >"$1/ca.info"
    certtool --generate-self-signed --load-privkey "$1/ca-key.pem" --template "$1/ca.info" \
        --outfile "$1/ca-cert.pem" 2>/dev/null || fail "certtool: CA"
    certtool --generate-privkey --outfile "$1/server-key.pem" 2>/dev/null || fail "certtool: server key"
    printf 'cn = node1\nip_address = %s\ntls_www_server\nencryption_key\nsigning_key\nexpiration_days = 2\n' \
        "$2" >"$1/server.info"
    certtool --generate-certificate --load-privkey "$1/server-key.pem" --load-ca-certificate "$1/ca-cert.pem" \
        --load-ca-privkey "$1/ca-key.pem" --template "$1/server.info" --outfile "$1/server-cert.pem" \
        2>/dev/null || fail "certtool: server certificate"
    chmod 600 "$1"/*-key.pem
}
