#!/bin/sh
# shellcheck disable=SC2086,SC2015,SC2030,SC2031
# (member lists split on purpose; "A && B || fail"; the env of subshells)
# clraid start --dry-run: every check of start, nothing written, nothing
# started.  Good members give exit 0 and one "would start" line; bad input
# (a missing path, a zeroed device, a member of another array, clustered
# RAID5, a stale member, an engine already running, no nbdkit, no plugin)
# gives the one line start would print, with the exit code of its reason
# (1 not now, 2 the configuration, 3 this node); the sha256 of every
# member is the same after each run, and no run directory, pid file or
# engine appears.  No randomness.
. "${top_srcdir:-.}/tests/engine/engine-functions.sh"

D="$TESTDIR/dry"        # the run directory of the dry runs: never created
ALL=""                  # every member file, for the sums

# dry WANT WHAT ARGS...: "clraid start --dry-run ARGS --run-dir $D" exits
# WANT, prints one line (stdout for 0, stderr otherwise) and writes nothing.
dry() {
    _want=$1 _what=$2; shift 2
    _before=$(sums $ALL)
    set +e
    "$CLRAID" start --dry-run "$@" --run-dir "$D" >"$TESTDIR/out" 2>"$TESTDIR/err"
    _rc=$?
    set -e
    [ "$_rc" -eq "$_want" ] || { cat "$TESTDIR/out" "$TESTDIR/err" >&2; fail "$_what: exit $_rc, expected $_want"; }
    if [ "$_want" -eq 0 ]; then _f=$TESTDIR/out; else _f=$TESTDIR/err; fi
    [ "$(wc -l <"$_f")" -eq 1 ] && grep -q . "$_f" ||
        { cat "$TESTDIR/out" "$TESTDIR/err" >&2; fail "$_what: not one line"; }
    [ "$(sums $ALL)" = "$_before" ] || fail "$_what: a dry run wrote to a member"
    [ ! -e "$D" ] || fail "$_what: a dry run created the run directory $D"
    echo "ok: $_what (exit $_rc) -> $(cat "$_f")"
}

# RAID1 of two, clustered-capable (2 slots); a RAID5 of three, 2 slots; a
# zeroed file; the members of another RAID1.
truncate -s 16M "$TESTDIR/a0" "$TESTDIR/a1" "$TESTDIR/p0" "$TESTDIR/p1" "$TESTDIR/p2" \
    "$TESTDIR/z" "$TESTDIR/o0" "$TESTDIR/o1"
"$CLRAID" create --level=1 --raid-devices=2 --nodes=2 --home-cluster=c --assume-clean \
    --name=a "$TESTDIR/a0" "$TESTDIR/a1" >/dev/null || fail "create a"
"$CLRAID" create --level=5 --raid-devices=3 --nodes=2 --home-cluster=c --assume-clean \
    "$TESTDIR/p0" "$TESTDIR/p1" "$TESTDIR/p2" >/dev/null || fail "create p"
"$CLRAID" create --level=1 --raid-devices=2 --nodes=1 --assume-clean \
    "$TESTDIR/o0" "$TESTDIR/o1" >/dev/null || fail "create o"
A="$TESTDIR/a0 $TESTDIR/a1" P="$TESTDIR/p0 $TESTDIR/p1 $TESTDIR/p2"
F="$TESTDIR/f0 $TESTDIR/f1 $TESTDIR/f2 $TESTDIR/f3"
# shellcheck disable=SC2086
truncate -s 16M $F
# shellcheck disable=SC2086
"$CLRAID" create --level=10 --layout=f2 --raid-devices=4 --nodes=2 --home-cluster=c --assume-clean \
    $F >/dev/null || fail "create f"
ALL="$A $P $TESTDIR/z $TESTDIR/o0 $TESTDIR/o1"

echo "--- good members"
dry 0 "raid1, lock local" a $A
grep -q "^would start array 'a' (raid1, UUID [0-9a-f:]*, 15 MiB, 2 of 2 members in sync, lock local): nbd+unix:///?socket=$D/a.sock\$" \
    "$TESTDIR/out" || fail "summary: $(cat "$TESTDIR/out")"
dry 0 "raid1, lock cpg (no lockspace joined: no corosync needed)" a $A --lock cpg
# The kernel DLM is asked nothing either: start may still refuse for it.
dry 0 "raid1, lock dlm" a $A --lock dlm
dry 0 "raid1, one member: degraded" a "$TESTDIR/a0"
grep -q "1 of 2 members in sync: degraded" "$TESTDIR/out" || fail "no degraded: $(cat "$TESTDIR/out")"
dry 0 "raid5, lock local" p $P
dry 0 "raid5, lock cpg (stripe-zone locks)" p $P --lock cpg
dry 0 "raid5, lock dlm" p $P --lock dlm
dry 0 "raid10 f2, lock cpg (resynced in array sectors: clustered too)" f $F --lock cpg
dry 0 "raid10 f2, lock dlm" f $F --lock dlm

echo "--- bad input"
dry 3 "a missing path" a "$TESTDIR/a0" "$TESTDIR/nope"
grep -q "nope: No such file or directory (check the device path)" "$TESTDIR/err" || fail "message"
dry 3 "a zeroed device" a "$TESTDIR/a0" "$TESTDIR/z"
grep -q "z: not a usable md member" "$TESTDIR/err" || fail "message"
dry 3 "a member of another array" a "$TESTDIR/a0" "$TESTDIR/o1"
grep -q "o1: belongs to another array" "$TESTDIR/err" || fail "message"
dry 2 "a bad lock" a $A --lock zk
dry 2 "a bad option, before --dry-run counts too" a $A --bitmap=sometimes
dry 2 "a bad name" ../x "$TESTDIR/a0"
# (Subshells: an assignment before a function call may outlive it.)
(
    export CLRAID_NBDKIT=/nonexistent/nbdkit
    dry 3 "no nbdkit" a $A
    grep -q "cannot run /nonexistent/nbdkit" "$TESTDIR/err" || fail "message"
)
(
    export CLRAID_NBDKIT=nbdkit-not-here
    dry 3 "no nbdkit in PATH" a $A
)
(
    export CLRAID_NBDKIT_PLUGIN=/nonexistent/plugin.so
    dry 3 "no plugin" a $A
    grep -q "nbdkit plugin /nonexistent/plugin.so" "$TESTDIR/err" || fail "message"
)
# Without CLRAID_NBDKIT_PLUGIN: the clraid of a build tree finds the plugin
# built next to it; the same binary elsewhere looks for the installed one.
if [ -e "$top_builddir/config.status" ]; then
    (
        unset CLRAID_NBDKIT_PLUGIN
        dry 0 "no CLRAID_NBDKIT_PLUGIN, clraid of the build tree: its plugin" a $A
        mkdir -p "$TESTDIR/bin"
        cp "$CLRAID" "$TESTDIR/bin/clraid"
        inst=$("$CLRAID" start --help 2>&1 | sed -n 's/^  (\(.*nbdkit-clraid-plugin\.so\))\.$/\1/p')
        [ -n "$inst" ] || fail "start --help names no installed plugin path"
        if [ ! -e "$inst" ]; then
            CLRAID=$TESTDIR/bin/clraid dry 3 "no CLRAID_NBDKIT_PLUGIN, clraid outside a build tree" a $A
            grep -q "nbdkit plugin $inst" "$TESTDIR/err" || fail "message"
        fi
    )
fi

# Each refusal is the line start prints, and start exits 1 on it.
for c in "a $TESTDIR/a0 $TESTDIR/o1" "a $A --lock zk" "a $TESTDIR/a0 $TESTDIR/nope"; do
    "$CLRAID" start --dry-run $c --run-dir "$D" 2>"$TESTDIR/dry.err" || :
    expect_refusal "start $c" "$CLRAID" start $c --run-dir "$D"
    cmp -s "$TESTDIR/dry.err" "$TESTDIR/err" || fail "dry run '$(cat "$TESTDIR/dry.err")', start '$(cat "$TESTDIR/err")'"
    rm -rf "$D"
done
echo "ok: the dry runs' refusals are start's"

echo "--- a stale member, and an engine already running"
# a1 goes stale: the array runs (and writes) without it, then stops.
cp --sparse=always "$TESTDIR/a1" "$TESTDIR/a1.old"
engine_start a $A
qio a 'write -P 0x5a 0 1M' || fail "write"
engine_stop a
engine_start a $A
engine_stop a
cp --sparse=always "$TESTDIR/a1.old" "$TESTDIR/a1"
dry 1 "a stale member" a $A
grep -qi stale "$TESTDIR/err" || fail "message"
dry 0 "a stale member, --skip-stale" a $A --skip-stale
grep -q "1 of 2 members in sync: degraded" "$TESTDIR/out" || fail "summary: $(cat "$TESTDIR/out")"

engine_start o "$TESTDIR/o0" "$TESTDIR/o1"
pid=$(engine_pid o)
before=$(sums "$RUN"/o.pid)
set +e
"$CLRAID" start --dry-run o "$TESTDIR/o0" "$TESTDIR/o1" --run-dir "$RUN" >"$TESTDIR/out" 2>"$TESTDIR/err"
rc=$?
set -e
[ "$rc" -eq 1 ] && [ "$(wc -l <"$TESTDIR/err")" -eq 1 ] && grep -q "already running (pid $pid)" "$TESTDIR/err" ||
    fail "already running: exit $rc, $(cat "$TESTDIR/err")"
[ -S "$RUN/o.sock" ] && [ -S "$RUN/o.ctl" ] && [ "$(sums "$RUN"/o.pid)" = "$before" ] ||
    fail "a dry run touched the running engine's files"
st o .state >/dev/null || fail "the engine stopped answering"
echo "ok: an engine already running (exit 1) -> $(cat "$TESTDIR/err")"
engine_stop o

# A killed engine's leftovers: start removes them, a dry run does not.
mkdir -p "$D"
echo 999999 >"$D/a.pid"
: >"$D/a.sock"
"$CLRAID" start --dry-run a $A --skip-stale --run-dir "$D" >/dev/null || fail "dry run over leftovers"
[ -e "$D/a.pid" ] && [ -e "$D/a.sock" ] || fail "a dry run removed a dead engine's files"
[ ! -e "$D/a.log" ] || fail "a dry run wrote a log"
echo "ok: a dry run leaves a dead engine's files alone"
