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
