#!/bin/sh
# Runs one test (the automake driver's command line, from
# TESTS_ENVIRONMENT in scripts/run-tests.sh) in a cgroup of its own where
# cgroup v1's cpuacct is there and writable, and appends "CPU_SECONDS LOG"
# to tests/cpu.txt: the CPU of the test and of everything it started,
# daemons and User-Mode Linux instances included.  Elsewhere it only runs
# the test.  The test's exit status is the script's.
root=/sys/fs/cgroup/cpuacct
log="" prev=""
for a in "$@"; do
    [ "$prev" = --log-file ] && log=$a
    prev=$a
done
cg=$root/clraid-test.$$
if [ -n "$log" ] && [ -w "$root/tasks" ] && mkdir "$cg" 2>/dev/null; then
    if echo $$ >"$cg/tasks" 2>/dev/null; then
        "$@"
        rc=$?
        echo $$ >"$root/tasks" 2>/dev/null
        ns=$(cat "$cg/cpuacct.usage" 2>/dev/null) || ns=""
        [ -z "$ns" ] || echo "$((ns / 1000000000)) $log" >>tests/cpu.txt
        # a daemon the test left behind keeps the group; it is empty else
        rmdir "$cg" 2>/dev/null
        exit "$rc"
    fi
    rmdir "$cg" 2>/dev/null
fi
exec "$@"
