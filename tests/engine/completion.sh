#!/bin/bash
# The bash completion (completion/clraid) against the clraid of this
# tree: commands and options as its --help lists them, option values,
# array names from the run directory (NAME.ctl sockets), member paths.
# No engine runs: a socket file stands in for a running array.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${top_srcdir:-.}/tests/functions.sh"
requires python3
. "$top_srcdir/completion/clraid"
complete -p clraid >/dev/null || fail "no completion registered for clraid"

# comp WORD...: COMPREPLY for the line "WORD..." with the cursor on the
# last word (give "" for an empty one), sorted, one line
comp() {
    COMP_WORDS=("$CLRAID" "$@")
    COMP_CWORD=$(($# ))
    COMPREPLY=()
    _clraid
    printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' ' | sed 's/ $//'
}
# expect WANT WORD...: the completions are exactly WANT
expect() {
    local want=$1 got
    shift
    got=$(comp "$@")
    [ "$got" = "$want" ] || fail "clraid $*<TAB>: got '$got', want '$want'"
    echo "ok: clraid $*<TAB> -> $got"
}

run="$TESTDIR/run"
mkdir -p "$run"
# two "running" arrays: their control sockets
python3 -c 'import socket,sys
for p in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX); s.bind(p)' "$run/r0.ctl" "$run/vmstore.ctl"
: >"$run/notanarray.log"
: >"$TESTDIR/d0" && : >"$TESTDIR/d1"

# every command its --help lists, and nothing else
all=$("$CLRAID" --help 2>&1 | awk '/^commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 }' | sort | tr '\n' ' ' | sed 's/ $//')
[ "$(echo "$all" | wc -w)" -ge 10 ] || fail "clraid --help lists too few commands: $all"
expect "$all" ""
expect "start status stop" st
expect "re-add remove repair" re
# options from the command's --help
expect "--lock" start r0 --lo
expect "--prometheus --prometheus-file" status --pro
expect "--layout= --level=" create --l
# option values
expect "cpg dlm local" start r0 --lock ""
expect "--level=1 --level=10 --level=5 --level=6" create --level=
expect "--bitmap=all-dirty --bitmap=normal" start r0 --bitmap=
expect "--tls-certificates= --tls-psk= --tls-verify-peer --tls=" start r0 --tls
expect "--tls=off --tls=require" start r0 --tls=
expect "tcp: unix" start r0 --export ""
expect "$TESTDIR/d0 $TESTDIR/d1" start r0 --export unix "$TESTDIR/d"
# array names from the run directory
expect "r0 vmstore" status --run-dir "$run" ""
expect "vmstore" stop --run-dir "$run" v
expect "r0" fail --run-dir "$run" r
# member paths after the name; nothing after a command's last argument
expect "$TESTDIR/d0 $TESTDIR/d1" fail --run-dir "$run" r0 "$TESTDIR/d"
expect "" stop --run-dir "$run" r0 ""
expect "" start ""
expect "$TESTDIR/d0 $TESTDIR/d1" start newname "$TESTDIR/d"
echo "ok: completion"
