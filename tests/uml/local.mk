# tests/uml: real kernel md, md-cluster and the kernel DLM, inside
# User-Mode Linux instances that boot over our member files
# (uml-functions.sh; they SKIP where UML cannot run).
UML_TESTS = \
	tests/uml/kernel-md-assemble.sh \
	tests/uml/dlm-cluster.sh \
	tests/uml/md-cluster-interop.sh \
	tests/uml/dlm-lock-service.sh \
	tests/uml/dlm-mdcluster-refusal.sh \
	tests/uml/uml-harness.sh
TESTS += $(UML_TESTS)
dist_check_SCRIPTS += $(UML_TESTS)
EXTRA_DIST += tests/uml/uml-functions.sh tests/uml/uml-init.sh tests/uml/guest-functions.sh
# The two UML tests that boot three instances each never run at once
# (uml-functions.sh's UML_EXCLUSIVE lock): under make -j dlm-cluster
# waits in make for kernel-md-assemble, when both are being run, so that
# it does not hold a job slot only to wait for the lock.  $(filter) keeps
# `make check TESTS=tests/uml/dlm-cluster.sh` from running the other (a
# GNU make function: the project builds with GNU make only, hence
# -Wno-portability).
AUTOMAKE_OPTIONS = -Wno-portability
tests/uml/dlm-cluster.log: $(filter tests/uml/kernel-md-assemble.log,$(TEST_LOGS))
