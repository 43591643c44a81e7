#!/bin/sh
# Runs shellcheck over the agent, the pcs recipes and these tests (POSIX sh).
. "${top_srcdir:-.}/tests/functions.sh"
requires shellcheck

cd "$top_srcdir"
shellcheck -s sh ocf/clraid crm-templates/*.sh tests/pacemaker/fake-clraid tests/pacemaker/stub-nbd-client
# The tests source helpers that shellcheck follows with -x.
set --
for f in tests/pacemaker/*.sh; do
	[ "$f" = tests/pacemaker/live-cluster3.sh ] || set -- "$@" "$f"
done
shellcheck -s sh -x -e SC1091 "$@" tests/pacemaker/fence_clraidtest
# The three-node test and the pattern writers it shares are bash.
shellcheck -s bash -x -e SC1091 tests/pacemaker/live-cluster3.sh tests/cluster/pattern-functions.sh
echo "ok: shellcheck clean"
