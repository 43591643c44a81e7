# tests/cluster: three engines (--lock cpg) over the same member files on a
# private corosync in private namespaces; one is killed mid-write and the
# survivors take over (see cluster-engine-functions.sh); RAID5/6 the same,
# the victim dying while all three write one stripe, then member devices
# fail under the survivors; and three engines
# on three corosync nodes, one cut off the network: the others hold writes
# until it is confirmed dead (test-cluster-partition.sh).
CLUSTER_TESTS = \
	tests/cluster/test-cluster-raid1.sh \
	tests/cluster/test-cluster-raid10.sh \
	tests/cluster/test-cluster-raid5.sh \
	tests/cluster/test-cluster-raid6.sh \
	tests/cluster/test-cluster-partition.sh
TESTS += $(CLUSTER_TESTS)
dist_check_SCRIPTS += $(CLUSTER_TESTS)
EXTRA_DIST += tests/cluster/cluster-engine-functions.sh tests/cluster/pattern-functions.sh

# The writer of the cluster tests: sequential NBD writes, each acknowledgement
# stamped by the client.
check_PROGRAMS += tests/cluster/nbd_seq_write
tests_cluster_nbd_seq_write_CFLAGS = $(AM_CFLAGS) $(LIBNBD_CFLAGS)
tests_cluster_nbd_seq_write_LDADD = $(LIBNBD_LIBS)
