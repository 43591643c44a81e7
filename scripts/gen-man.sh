#!/bin/sh
# Writes a man page from a program's own --help, so that the page cannot
# drift from it (issue 17: one source).  Used by the build (Makefile.am).
#   gen-man.sh clraid BIN OUT          clraid(8): every command's --help
#   gen-man.sh clraid-policyd BIN OUT  clraid-policyd(8)
# The help texts go in as they are (no-fill blocks); the sections around
# them (name, exit status, examples, see also) are written here.
set -eu
what=$1 bin=$2 out=$3
ver=$("$bin" --version 2>/dev/null | awk '{ print $2; exit }') || ver=
[ -n "$ver" ] || ver=$(awk -F'"' '/PACKAGE_VERSION/ { print $2; exit }' "$(dirname "$bin")/config.h" 2>/dev/null || echo "?")

# roff-safe: backslashes, and lines that would start a request
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }
block() { printf '.nf\n'; esc; printf '.fi\n'; }

tmp=$out.tmp
{
case $what in
clraid)
    printf '.TH CLRAID 8 "" "clraid %s" "System Administration"\n' "$ver"
    printf '.SH NAME\nclraid \\- clustered software RAID (md v1.2) for Pacemaker clusters\n'
    printf '.SH SYNOPSIS\n.B clraid\n.I COMMAND\n.RI [ OPTIONS ]\n.I ...\n'
    printf '.SH DESCRIPTION\n'
    printf 'clraid creates md v1.2 arrays (RAID1, RAID10, RAID5, RAID6) with a clustered\n'
    printf 'write-intent bitmap, and serves each over NBD from a resident engine (nbdkit\n'
    printf 'with the clraid plugin); with \\fB--lock cpg\\fR or \\fBdlm\\fR several nodes run one\n'
    printf 'array on shared disks at once.  The commands:\n'
    "$bin" --help 2>&1 | awk '/^commands:/ { c = 1; next } c && /^$/ { exit } c' | block
    printf '.SH COMMANDS\n'
    for c in $("$bin" --help 2>&1 | awk '/^commands:/ { c = 1; next } c && /^  [a-z]/ { print $1 }'); do
        printf '.SS %s\n' "$c"
        "$bin" "$c" --help 2>&1 | block
    done
    printf '.SH EXIT STATUS\n'
    printf '0 on success, 1 on a failure or refusal (one line on standard error says what\n'
    printf 'to do).  \\fBclraid start --dry-run\\fR exits 1 (not now), 2 (the configuration)\n'
    printf 'or 3 (this node), as above.\n'
    printf '.SH EXAMPLES\n.nf\n'
    printf 'clraid create \\-\\-level=6 \\-\\-raid-devices=6 \\-\\-nodes=4 \\-\\-home-cluster=c1 \\-\\-name=vmstore /dev/sd[b-g]\n'
    printf 'clraid start vmstore \\-\\-lock cpg /dev/sd[b-g]\n'
    printf 'clraid status vmstore\n'
    printf 'clraid status \\-\\-prometheus-file /var/lib/prometheus/node-exporter/clraid.prom\n'
    printf 'clraid fail vmstore /dev/sdc; clraid remove vmstore /dev/sdc; clraid add vmstore /dev/sdh\n'
    printf 'clraid stop vmstore\n.fi\n'
    printf '.SH SEE ALSO\n.BR clraid-policyd (8),\n.BR ocf_clraid_clraid (7),\n.BR mdadm (8),\n.BR nbdkit (1)\n'
    ;;
clraid-policyd)
    printf '.TH CLRAID-POLICYD 8 "" "clraid %s" "System Administration"\n' "$ver"
    printf '.SH NAME\nclraid-policyd \\- decides whether a disk or a node is at fault in a clraid cluster\n'
    printf '.SH SYNOPSIS\n'
    "$bin" --help 2>&1 | sed -n '1,/^Watches/p' | sed '$d' | block
    printf '.SH DESCRIPTION\n'
    printf 'Started by the OCF agent ocf:clraid:clraid on every node of a clustered array.\n'
    printf 'Its options, as \\fBclraid-policyd --help\\fR prints them:\n'
    "$bin" --help 2>&1 | sed -n '/^Watches/,$p' | grep -v '^Exit codes:' | block
    printf '.SH EXIT STATUS\n'
    "$bin" --help 2>&1 | grep '^Exit codes:' | esc
    printf '.SH EXAMPLES\n.nf\nclraid-policyd \\-\\-once \\-\\-json\nCIB_file=cib.xml clraid-policyd \\-\\-once\n'
    printf 'clraid-policyd \\-\\-check-settings path_failure_action=fence confirm_timeout=15s\n.fi\n'
    printf '.SH SEE ALSO\n.BR clraid (8),\n.BR ocf_clraid_clraid (7),\n.BR crm_mon (8)\n'
    ;;
*) echo "gen-man.sh: unknown page $what" >&2; exit 2 ;;
esac
} >"$tmp"
mv "$tmp" "$out"
