#!/bin/sh
# pcs recipe: a clraid array with the corosync CPG lock backend, a GFS2
# file system clone on top, fencing, on every node of the cluster.
#
#   usage: pcs-clraid-cpg.sh CIB_FILE
#
# Works on a CIB file (pcs -f), so it can be reviewed before it is pushed:
#   pcs cluster cib cib.xml && sh pcs-clraid-cpg.sh cib.xml &&
#   crm_verify -x cib.xml && pcs cluster cib-push cib.xml --config
#
# Settings (environment variables):
#   ARRAY        array name, as given to "clraid create --name" (default r0)
#   DEVICES      member devices, the same stable paths on every node
#   NODES        cluster node names (pcmk_host_list of the fence device)
#   FENCING      scsi: fence_scsi on the member devices (shared SAS/SAN; the
#                default), or existing: a stonith device is already configured
#                (fence_ipmilan, fence_sbd, ...); nothing is created.
#   FILESYSTEM   gfs2: a dlm clone and a GFS2 Filesystem clone on top (the
#                default), or none: the array only (VMs, LVM, your own stack)
#   FS_DEVICE    the NBD block device that carries GFS2 (default /dev/nbd0):
#                the agent attaches the array to it (nbd_device), with
#                NBD_CONNECTIONS connections (default 4)
#   MOUNTPOINT   where GFS2 is mounted (default /srv/ARRAY)
#   CLRAID_BIN   the clraid command (default clraid, from PATH)
#   CLRAID_PLUGIN  the engine's nbdkit plugin (default: the engine's own)
#
# The cpg lock backend needs no kernel DLM: its lock provider is corosync
# itself, which runs beneath Pacemaker, so the clraid clone needs no order
# constraint for its locks.  GFS2 always locks through the kernel DLM, so
# the dlm clone (ocf:pacemaker:controld) is still there, ordered before
# the file system only.
set -eu

CIB=${1:?usage: $0 CIB_FILE}
: "${ARRAY:=r0}"
: "${DEVICES:=/dev/disk/by-id/wwn-0x5000c500a0000001 /dev/disk/by-id/wwn-0x5000c500a0000002}"
: "${NODES:=node1 node2 node3}"
: "${FENCING:=scsi}"
: "${FILESYSTEM:=gfs2}"
: "${FS_DEVICE:=/dev/nbd0}"
: "${NBD_CONNECTIONS:=4}"
: "${MOUNTPOINT:=/srv/$ARRAY}"
: "${CLRAID_BIN:=clraid}"
: "${CLRAID_PLUGIN:=}"

case "$FILESYSTEM" in
gfs2)	FS_NBD=$FS_DEVICE ;;  # the agent attaches the block device GFS2 mounts
none)	FS_NBD="" ;;
*)	echo "FILESYSTEM must be gfs2 or none" >&2; exit 1 ;;
esac

pcs_() { pcs -f "$CIB" "$@"; }

# Shared storage: fencing on, and freeze (keep I/O blocked, never stop the
# array) when quorum is lost.
pcs_ property set stonith-enabled=true no-quorum-policy=freeze

case "$FENCING" in
scsi)
	# SCSI-3 persistent reservations on the members: a fenced node loses
	# access to the disks; every node is "unfenced" (registered) before
	# it may start a resource that requires it.
	pcs_ stonith create fence-scsi fence_scsi \
		pcmk_host_list="$NODES" devices="$(echo "$DEVICES" | tr ' ' ',')" \
		op monitor interval=60s \
		meta provides=unfencing
	REQUIRES=unfencing ;;
existing)
	REQUIRES=fencing ;;
*)	echo "FENCING must be scsi or existing" >&2; exit 1 ;;
esac

pcs_ resource create "clraid-$ARRAY" ocf:clraid:clraid \
	name="$ARRAY" devices="$DEVICES" lock=cpg binary="$CLRAID_BIN" \
	${CLRAID_PLUGIN:+plugin="$CLRAID_PLUGIN"} \
	${FS_NBD:+nbd_device="$FS_NBD"} ${FS_NBD:+nbd_connections="$NBD_CONNECTIONS"} \
	path_failure_action=fence last_device_action=freeze \
	op start timeout=90s \
	op stop timeout=120s on-fail=fence \
	op monitor interval=10s timeout=30s on-fail=fence \
	op monitor interval=30s timeout=30s OCF_CHECK_LEVEL=10 on-fail=fence \
	op monitor interval=120s timeout=60s OCF_CHECK_LEVEL=20 on-fail=fence \
	meta requires="$REQUIRES" \
	clone "clraid-$ARRAY-clone" meta interleave=true

[ "$FILESYSTEM" = gfs2 ] || exit 0

pcs_ resource create dlm ocf:pacemaker:controld \
	op monitor interval=30s timeout=20s on-fail=fence \
	clone dlm-clone meta interleave=true

pcs_ resource create "fs-$ARRAY" ocf:heartbeat:Filesystem \
	device="$FS_DEVICE" directory="$MOUNTPOINT" fstype=gfs2 options=noatime \
	op monitor interval=20s timeout=40s on-fail=fence \
	clone "fs-$ARRAY-clone" meta interleave=true

pcs_ constraint order start dlm-clone "then" "fs-$ARRAY-clone"
pcs_ constraint colocation add "fs-$ARRAY-clone" with dlm-clone
pcs_ constraint order start "clraid-$ARRAY-clone" "then" "fs-$ARRAY-clone"
pcs_ constraint colocation add "fs-$ARRAY-clone" with "clraid-$ARRAY-clone"
