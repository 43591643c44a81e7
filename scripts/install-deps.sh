#!/bin/sh
# Installs every build and test dependency of clraid on Debian 12, as root.
# Services shipped by these packages (corosync, pacemaker, pcsd, mdmonitor,
# nbd-client) are NOT started: the test suite runs its own private
# corosync/pacemaker, and a host-wide one would be a cluster we must never
# touch.  nbd-client is for the agent's nbd_device (its tests use a stub;
# nbd-client itself needs the nbd kernel module only when it attaches).
# debhelper, dh-autoreconf, dpkg-dev and lintian build and check the Debian
# package (debian/, tests/engine/package-deb.sh).
set -eu

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps.sh: run as root (apt-get needs it)" >&2
    exit 1
fi

PKGS="
 build-essential autoconf automake libtool pkg-config git
 clang clang-format libclang-rt-14-dev libfuzzer-14-dev valgrind shellcheck
 libcmocka-dev libblkid-dev libjson-c-dev liburing-dev libisal-dev
 libxml2-dev libxml2-utils uuid-runtime
 corosync libcpg-dev libquorum-dev libcorosync-common-dev libqb-dev
 libdlm-dev pacemaker pacemaker-dev pacemaker-cli-utils pcs crmsh
 resource-agents fence-agents
 nbdkit nbdkit-plugin-dev libnbd-dev libnbd-bin nbd-client
 qemu-utils qemu-system-common mdadm fio util-linux iproute2 procps
 jq e2fsprogs coreutils mount cpio xsltproc groff-base man-db python3 gnutls-bin
 user-mode-linux kmod dlm-controld
 debhelper dh-autoreconf dpkg-dev lintian
"

# Keep package post-install scripts from starting daemons on this host.
made_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
fi
cleanup() { [ "$made_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d; return 0; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $PKGS
