#!/bin/sh
# Runs shellcheck over the agent, the pcs recipes and these tests (POSIX sh).
. "${top_srcdir:-.}/tests/functions.sh"
requires shellcheck

cd "$top_srcdir"
shellcheck -s sh ocf/clraid crm-templates/*.sh tests/pacemaker/fake-clraid tests/pacemaker/stub-nbd-client
# The tests source helpers that shellcheck follows with -x.
shellcheck -s sh -x -e SC1091 tests/pacemaker/*.sh
echo "ok: shellcheck clean"
