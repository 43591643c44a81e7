# Helpers for the engine integration tests: arrays on sparse files served
# by nbdkit + the clraid plugin, driven through real NBD clients.
#   . "${top_srcdir:-.}/tests/engine/engine-functions.sh"
. "${top_srcdir:-.}/tests/functions.sh"

requires_root
requires nbdkit
requires qemu-io
requires nbdcopy
requires nbdinfo
requires jq

: "${CLRAID_NBDKIT_PLUGIN:=$top_builddir/.libs/nbdkit-clraid-plugin.so}"
export CLRAID_NBDKIT_PLUGIN
[ -r "$CLRAID_NBDKIT_PLUGIN" ] || fail "plugin not built: $CLRAID_NBDKIT_PLUGIN"
RUN="$TESTDIR/run"
# Every client call is bounded: a hang fails the test instead of CI.
T=${CLIENT_TIMEOUT:-120}

uri() { echo "nbd+unix:///?socket=$RUN/$1.sock"; }

# create LEVEL NDEV SIZE [create options...]: members $TESTDIR/d0..; prints paths.
create() {
    _lvl=$1 _n=$2 _sz=$3; shift 3
    _files=$(mkfiles "$_n" "$_sz")
    # shellcheck disable=SC2086
    "$CLRAID" create --level="$_lvl" --raid-devices="$_n" --nodes=1 "$@" $_files >/dev/null ||
        fail "create raid$_lvl"
    echo "$_files"
}

# engine_start NAME DEV...: start; the engine is killed at exit if still up.
engine_start() {
    _name=$1; shift
    timeout "$T" "$CLRAID" start "$_name" "$@" --run-dir "$RUN" >/dev/null ||
        { cat "$RUN/$_name.log" >&2 2>/dev/null; fail "start $_name"; }
    cleanup_fn "engine_kill $_name"
}

engine_pid() { cat "$RUN/$1.pid" 2>/dev/null || true; }

engine_kill() {
    _p=$(engine_pid "$1")
    [ -n "$_p" ] && kill -9 "$_p" 2>/dev/null
    return 0
}

# engine_crash NAME: kill -9 and wait until the process is really gone.
engine_crash() {
    _p=$(engine_pid "$1")
    [ -n "$_p" ] || fail "$1: no pid file"
    kill -9 "$_p"
    _i=0
    while [ -e "/proc/$_p" ] && ! grep -q '^[^)]*) [ZX]' "/proc/$_p/stat" 2>/dev/null; do
        _i=$((_i + 1))
        [ "$_i" -le 300 ] || fail "$1: pid $_p survived kill -9"
        sleep 0.1
    done
}

engine_stop() {
    timeout "$T" "$CLRAID" stop "$1" --run-dir "$RUN" >/dev/null || fail "stop $1"
}

# cli CMD ARGS...: a clraid command against the test run dir, bounded.
cli() { timeout "$T" "$CLRAID" "$@" --run-dir "$RUN"; }

# st NAME JQ-EXPR: one value of the status JSON.
st() { cli status "$1" --json | jq -r "$2"; }

# wait_idle NAME [SECONDS]: until no sync action runs or is due.
wait_idle() {
    _i=0
    while [ "$(st "$1" '.sync_action + "/" + .state')" != idle/clean ] &&
          [ "$(st "$1" '.sync_action + "/" + .state')" != idle/active ] &&
          [ "$(st "$1" '.sync_action + "/" + .state')" != idle/degraded ]; do
        _i=$((_i + 1))
        [ "$_i" -le $((${2:-120} * 5)) ] || fail "$1: still $(st "$1" '.sync_action + "/" + .state')"
        sleep 0.2
    done
}

# wait_state NAME STATE [SECONDS]
wait_state() {
    _i=0
    while [ "$(st "$1" .state)" != "$2" ]; do
        _i=$((_i + 1))
        [ "$_i" -le $((${3:-60} * 5)) ] || fail "$1: state $(st "$1" .state), expected $2"
        sleep 0.2
    done
}

# qio NAME qemu-io-commands...: e.g. qio r1 'write -P 0xab 0 1M'
qio() {
    _name=$1; shift
    _args=""
    for _c in "$@"; do _args="$_args -c '$_c'"; done
    eval timeout "$T" qemu-io -f raw "'$(uri "$_name")'" "$_args" >"$TESTDIR/qio.out" 2>&1 ||
        { cat "$TESTDIR/qio.out" >&2; return 1; }
    ! grep -qi 'fail\|error\|mismatch' "$TESTDIR/qio.out" ||
        { cat "$TESTDIR/qio.out" >&2; return 1; }
}

# put NAME FILE: writes FILE at offset 0 of the array.
put() { timeout "$T" nbdcopy --flush "$2" "$(uri "$1")" || fail "nbdcopy to $1"; }

# same NAME FILE: the array's first bytes equal FILE.
same() {
    _n=$(stat -c %s "$2")
    timeout "$T" nbdcopy "$(uri "$1")" - | cmp -n "$_n" - "$2" >/dev/null ||
        fail "$1: data read back differs from $2"
}

# rand FILE SIZE-MiB
rand() { head -c "$(($2 * 1048576))" /dev/urandom >"$1"; }

# zero_mismatches NAME
zero_mismatches() {
    cli check "$1" --wait >"$TESTDIR/check.out" || fail "check $1"
    _m=$(st "$1" .last_check.mismatches)
    [ "$_m" = 0 ] || fail "$1: check found $_m mismatches"
}
