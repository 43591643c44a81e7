# tests/uml: real kernel md, md-cluster and the kernel DLM, inside
# User-Mode Linux instances that boot over our member files
# (uml-functions.sh; they SKIP where UML cannot run).
UML_TESTS = \
	tests/uml/uml-harness.sh \
	tests/uml/kernel-md-assemble.sh
TESTS += $(UML_TESTS)
dist_check_SCRIPTS += $(UML_TESTS)
EXTRA_DIST += tests/uml/uml-functions.sh tests/uml/uml-init.sh tests/uml/guest-functions.sh
