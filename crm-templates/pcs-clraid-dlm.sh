#!/bin/sh
# pcs recipe: a clraid array with the DLM lock backend (ocf:pacemaker:controld), a GFS2
# file system clone on top, fencing, on every node of the cluster.
#
# lock=dlm: each engine claims a bitmap slot with a DLM lock of its own and
# the survivors take a dead node's slot over once the DLM has recovered
# (after dlm_controld fenced it); see doc/cluster.md.  It was run in
# User-Mode Linux (tests/uml/dlm-cluster.sh), not yet under this recipe.
#
#   usage: pcs-clraid-dlm.sh CIB_FILE
#
# Works on a CIB file (pcs -f), so it can be reviewed before it is pushed:
#   pcs cluster cib cib.xml && sh pcs-clraid-dlm.sh cib.xml &&
#   crm_verify -x cib.xml && pcs cluster cib-push cib.xml --config
#
# Settings (environment variables):
#   ARRAY        array name, as given to "clraid create --name" (default r0)
#   DEVICES      member devices, the same stable paths on every node
#   NODES        cluster node names (pcmk_host_list of the fence device)
#   FENCING      scsi: fence_scsi on the member devices (shared SAS/SAN; the
#                default), or existing: a stonith device is already configured
#                (fence_ipmilan, fence_sbd, ...); nothing is created.
#   FS_DEVICE    the NBD block device that carries GFS2 (default /dev/nbd0):
#                the agent attaches the array to it (nbd_device), with
#                NBD_CONNECTIONS connections (default 4)
#   MOUNTPOINT   where GFS2 is mounted (default /srv/ARRAY)
#   CLRAID_BIN   the clraid command (default clraid, from PATH)
#
# The dlm lock backend takes the array's locks through libdlm, so the clraid
# clone starts after dlm_controld (ocf:pacemaker:controld) on each node and
# runs only where it runs; GFS2 uses the same DLM.  dlm_controld waits for
# fencing before it releases a dead node's locks.
set -eu

CIB=${1:?usage: $0 CIB_FILE}
: "${ARRAY:=r0}"
: "${DEVICES:=/dev/disk/by-id/wwn-0x5000c500a0000001 /dev/disk/by-id/wwn-0x5000c500a0000002}"
: "${NODES:=node1 node2 node3}"
: "${FENCING:=scsi}"
: "${FS_DEVICE:=/dev/nbd0}"
: "${NBD_CONNECTIONS:=4}"
: "${MOUNTPOINT:=/srv/$ARRAY}"
: "${CLRAID_BIN:=clraid}"

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
	name="$ARRAY" devices="$DEVICES" lock=dlm binary="$CLRAID_BIN" \
	nbd_device="$FS_DEVICE" nbd_connections="$NBD_CONNECTIONS" \
	path_failure_action=fence last_device_action=freeze \
	op start timeout=90s \
	op stop timeout=120s on-fail=fence \
	op monitor interval=10s timeout=30s on-fail=fence \
	op monitor interval=30s timeout=30s OCF_CHECK_LEVEL=10 on-fail=fence \
	op monitor interval=120s timeout=60s OCF_CHECK_LEVEL=20 on-fail=fence \
	meta requires="$REQUIRES" \
	clone "clraid-$ARRAY-clone" meta interleave=true

pcs_ resource create dlm ocf:pacemaker:controld \
	op monitor interval=30s timeout=20s on-fail=fence \
	clone dlm-clone meta interleave=true

pcs_ resource create "fs-$ARRAY" ocf:heartbeat:Filesystem \
	device="$FS_DEVICE" directory="$MOUNTPOINT" fstype=gfs2 options=noatime \
	op monitor interval=20s timeout=40s on-fail=fence \
	clone "fs-$ARRAY-clone" meta interleave=true

pcs_ constraint order start dlm-clone "then" "clraid-$ARRAY-clone"
pcs_ constraint colocation add "clraid-$ARRAY-clone" with dlm-clone
pcs_ constraint order start "clraid-$ARRAY-clone" "then" "fs-$ARRAY-clone"
pcs_ constraint colocation add "fs-$ARRAY-clone" with "clraid-$ARRAY-clone"
