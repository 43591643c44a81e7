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
# One UML test at a time: under make -j each waits for the one before it
# (when both run), so the other job slot goes to other tests rather than
# to a test that would only wait for uml-functions.sh's lock.  The
# longest comes first.  $(filter) keeps `make check TESTS=one-of-them`
# from running the others (a GNU make function: the project builds with
# GNU make only, hence -Wno-portability).
AUTOMAKE_OPTIONS = -Wno-portability
tests/uml/dlm-cluster.log: $(filter tests/uml/kernel-md-assemble.log,$(TEST_LOGS))
tests/uml/md-cluster-interop.log: $(filter tests/uml/dlm-cluster.log,$(TEST_LOGS))
tests/uml/dlm-lock-service.log: $(filter tests/uml/md-cluster-interop.log,$(TEST_LOGS))
tests/uml/dlm-mdcluster-refusal.log: $(filter tests/uml/dlm-lock-service.log,$(TEST_LOGS))
tests/uml/uml-harness.log: $(filter tests/uml/dlm-mdcluster-refusal.log,$(TEST_LOGS))
