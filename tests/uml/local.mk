# tests/uml: real kernel md, md-cluster and the kernel DLM, inside
# User-Mode Linux instances that boot over our member files
# (uml-functions.sh; they SKIP where UML cannot run).
UML_TESTS = \
	tests/uml/kernel-md-assemble.sh \
	tests/uml/dlm-cluster.sh \
	tests/uml/dlm-cluster-raid5.sh \
	tests/uml/md-cluster-interop.sh \
	tests/uml/dlm-lock-service.sh \
	tests/uml/dlm-mdcluster-refusal.sh \
	tests/uml/kernel-raid56-refusal.sh \
	tests/uml/uml-harness.sh
TESTS += $(UML_TESTS)
dist_check_SCRIPTS += $(UML_TESTS)
EXTRA_DIST += tests/uml/uml-functions.sh tests/uml/uml-init.sh tests/uml/guest-functions.sh
# The UML tests run one after another (each boots two or three instances;
# side by side on two cores their guests' corosync lost its token), while
# make -j runs the rest of the suite beside them: each UML test's log waits
# in make for the logs of the UML tests before it, so that no test holds a
# job slot only to wait for uml-functions.sh's lock.  $(filter) keeps
# `make check TESTS=tests/uml/dlm-cluster.sh` from running the others (a GNU
# make function: the project builds with GNU make only, hence
# -Wno-portability).
AUTOMAKE_OPTIONS = -Wno-portability
UML_LOGS = $(filter $(UML_TESTS:.sh=.log),$(TEST_LOGS))
tests/uml/dlm-cluster.log: $(filter tests/uml/kernel-md-assemble.log,$(UML_LOGS))
tests/uml/dlm-cluster-raid5.log: $(filter tests/uml/kernel-md-assemble.log tests/uml/dlm-cluster.log,$(UML_LOGS))
tests/uml/md-cluster-interop.log: $(filter tests/uml/kernel-md-assemble.log tests/uml/dlm-cluster.log tests/uml/dlm-cluster-raid5.log,$(UML_LOGS))
tests/uml/dlm-lock-service.log: $(filter tests/uml/kernel-md-assemble.log tests/uml/dlm-cluster.log tests/uml/dlm-cluster-raid5.log tests/uml/md-cluster-interop.log,$(UML_LOGS))
tests/uml/kernel-raid56-refusal.log: $(filter tests/uml/kernel-md-assemble.log tests/uml/dlm-cluster.log tests/uml/dlm-cluster-raid5.log tests/uml/md-cluster-interop.log tests/uml/dlm-lock-service.log,$(UML_LOGS))
tests/uml/dlm-mdcluster-refusal.log: $(filter-out tests/uml/dlm-mdcluster-refusal.log tests/uml/uml-harness.log,$(UML_LOGS))
tests/uml/uml-harness.log: $(filter-out tests/uml/uml-harness.log,$(UML_LOGS))
# uml_xstate.so: preloaded into UML only on hosts whose XSAVE area (AMX)
# is larger than UML 6.1's (see the file); a shared object, never installed.
check_LTLIBRARIES = tests/uml/uml_xstate.la
tests_uml_uml_xstate_la_SOURCES = tests/uml/uml_xstate.c
tests_uml_uml_xstate_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_uml_uml_xstate_la_LIBADD = -ldl
