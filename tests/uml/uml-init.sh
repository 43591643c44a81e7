#!/bin/sh
# PID 1 of a User-Mode Linux instance started by uml-functions.sh.
# The root file system is the host's own /, read-only over hostfs, so the
# host's binaries (and the build tree) are there.  The kernel passes the
# unknown KEY=value words of its command line to us as environment:
#   UML_WORK   the host work dir of this run (made writable here)
#   UML_HOSTDIRS  further host dirs to make visible and writable (e.g.
#              the build tree), space separated
#   UML_TEST   the script to run; its exit status is printed as
#              "UML-EXIT N" and the instance powers off
#   NODE       this instance's name;  IP  its address on vec0 (optional)
# Every line the test prints reaches the host's console log; result lines
# start with "R " (guest-functions.sh: r).
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
# private writable scratch: nothing of the host's /run, /tmp, /dev/shm
for d in /run /tmp /dev/shm; do
    mkdir -p "$d" 2>/dev/null
    mount -t tmpfs -o mode=1777 tmpfs "$d"
done
# The host dirs we need, writable.  A dir under /tmp or /run is hidden by
# the tmpfs above: its mount point is made first.
for d in $UML_WORK $(echo "$UML_HOSTDIRS" | tr , " "); do
    mkdir -p "$d" 2>/dev/null
    mount -t hostfs -o "$d" hostfs "$d" || echo "R uml-init-error hostfs $d"
done
mount -t configfs configfs /sys/kernel/config 2>/dev/null
# libdlm and dlm_controld look for /dev/misc/dlm-control and
# /dev/misc/dlm_LOCKSPACE: a second devtmpfs there makes them appear.
mkdir -p /dev/misc && mount -t devtmpfs devtmpfs /dev/misc
# writable state dirs of the cluster stack, all private
for d in /var/lib/corosync /var/log /var/lib/pacemaker /etc/corosync /var/run; do
    [ -d "$d" ] && [ ! -L "$d" ] && mount -t tmpfs tmpfs "$d"
done
hostname "${NODE:-uml}"
ip link set lo up 2>/dev/null
if [ -n "${IP:-}" ]; then
    ip addr add "$IP/24" dev vec0 && ip link set vec0 up || echo "R uml-init-error vec0"
fi

cd "$UML_WORK" || echo "R uml-init-error cd $UML_WORK"
rc=0
/bin/sh "$UML_TEST" || rc=$?
echo "UML-EXIT $rc"
sync
echo o >/proc/sysrq-trigger
# PID 1 must not exit before the power-off: that is a kernel panic
while :; do sleep 10; done
