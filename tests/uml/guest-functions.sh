# shellcheck shell=sh
# Helpers for scripts that run INSIDE a User-Mode Linux instance (started by
# uml-functions.sh).  Source it first:  . "$UML_LIB/guest-functions.sh"
# The instance sees the host's binaries read-only; $UML_WORK is the host
# work dir, writable; /dev/ubda, /dev/ubdb, ... are the member files.

# r KEY VALUE...: one result line for the host (uml_results / uml_r).
r() { echo "R $*"; }
# gfail WHY: report and end the test script with status 1.
gfail() { echo "R fail $*"; exit 1; }

# modload NAME...: load kernel modules from the UML kernel's module tree.
modload() {
    for _m in "$@"; do
        modprobe -d "$UML_WORK/modroot" "$_m" || gfail "modprobe $_m"
    done
}

# ubd N: the device node of the Nth member file (0 -> /dev/ubda).
ubd() { printf '/dev/ubd%s\n' "$(printf '%s' abcdefghijklmnop | cut -c "$(($1 + 1))")"; }

# wait_for SECONDS CMD...: poll CMD until it succeeds, every 0.2 s for the
# first 2 s, then every second: inside UML each poll's fork and exec cost
# 40 ms of CPU or more (the sleep's own too), and most waits are long.
wait_for() {
    _left=$(($1 * 10)) _i=0  # tenths of a second
    shift
    while [ "$_left" -gt 0 ]; do
        "$@" >/dev/null 2>&1 && return 0
        if [ "$_i" -lt 10 ]; then
            sleep 0.2
            _left=$((_left - 2))
        else
            sleep 1
            _left=$((_left - 10))
        fi
        _i=$((_i + 1))
    done
    return 1
}

# ---- the cluster stack inside: corosync (udpu) + dlm_controld ----------
# UML_NODES="n1:10.77.0.1 n2:10.77.0.2 ..." (set by uml_start --ip) lists
# every node; CLUSTER names the cluster (default clraiduml).

# guest_corosync: writes /run/corosync.conf, starts corosync, waits for
# quorum.  Logs in $UML_WORK/$NODE.corosync.log.
guest_corosync() {
    _cluster=${CLUSTER:-clraiduml}
    _n=0
    for _e in $(echo "$UML_NODES" | tr , " "); do _n=$((_n + 1)); done
    {
        printf 'totem {\n\tversion: 2\n\tcluster_name: %s\n\ttransport: udpu\n' "$_cluster"
        # token 3000 ms: a guest starved for a second on a loaded host
        # (CI: two cores, the rest of the suite beside it) lost its token
        # at 1000 and merged back, and dlm_controld ends on such a merge
        printf '\tcrypto_cipher: none\n\tcrypto_hash: none\n\ttoken: 3000\n}\n'
        printf 'logging {\n\tto_stderr: no\n\tto_syslog: no\n\tto_logfile: yes\n'
        printf '\tlogfile: %s/%s.corosync.log\n\ttimestamp: hires\n}\n' "$UML_WORK" "$NODE"
        printf 'quorum {\n\tprovider: corosync_votequorum\n'
        [ "$_n" = 2 ] && printf '\ttwo_node: 1\n\twait_for_all: 0\n'
        printf '}\nnodelist {\n'
        _i=0
        for _e in $(echo "$UML_NODES" | tr , " "); do
            _i=$((_i + 1))
            printf '\tnode {\n\t\tname: %s\n\t\tnodeid: %s\n\t\tring0_addr: %s\n\t}\n' \
                "${_e%%:*}" "$_i" "${_e#*:}"
        done
        printf '}\n'
    } >/run/corosync.conf
    corosync -f -c /run/corosync.conf >"$UML_WORK/$NODE.corosync.out" 2>&1 &
    wait_for 60 sh -c 'corosync-quorumtool -s 2>/dev/null | grep -q "Quorate: *Yes"' ||
        gfail "corosync: no quorum in 60 s"
}

# guest_dlm: loads the DLM and starts dlm_controld (no fencing: the
# instances are powered off by the test itself), waits until it answers.
guest_dlm() {
    modload configfs dlm
    mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config ||
        gfail "mount configfs"
    dlm_controld --foreground 1 --enable_fencing 0 --enable_startup_fencing 0 \
        --protocol tcp >"$UML_WORK/$NODE.dlm_controld.log" 2>&1 &
    wait_for 60 sh -c 'dlm_tool status 2>/dev/null | grep -q "^cluster nodeid"' || gfail "dlm_controld did not come up in 60 s"
    # dlm_controld answers before it has given the kernel our address: a
    # lockspace made before that fails ("no local IP address has been set")
    wait_for 60 sh -c 'grep -qx 1 /sys/kernel/config/dlm/cluster/comms/*/local' ||
        gfail "dlm_controld did not configure the kernel DLM's address in 60 s"
}

# guest_nodeid: this node's corosync node id (1-based position in UML_NODES).
guest_nodeid() {
    _i=0
    for _e in $(echo "$UML_NODES" | tr , " "); do
        _i=$((_i + 1))
        [ "${_e%%:*}" = "$NODE" ] && { echo "$_i"; return 0; }
    done
    return 1
}
