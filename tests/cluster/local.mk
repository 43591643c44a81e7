# tests/cluster: three engines (--lock cpg) over the same member files on a
# private corosync in private namespaces; one is killed mid-write and the
# survivors take over (see cluster-engine-functions.sh); and three engines
# on three corosync nodes, one cut off the network: the others hold writes
# until it is confirmed dead (test-cluster-partition.sh).
CLUSTER_TESTS = \
	tests/cluster/test-cluster-raid1.sh \
	tests/cluster/test-cluster-raid10.sh \
	tests/cluster/test-cluster-partition.sh
TESTS += $(CLUSTER_TESTS)
dist_check_SCRIPTS += $(CLUSTER_TESTS)
EXTRA_DIST += tests/cluster/cluster-engine-functions.sh
