# Pacemaker integration: the OCF resource agent ocf:clraid:clraid, the
# crm templates, and their tests (offline pcs/crm_simulate/crm_verify, the
# agent against a fake and the real engine, a live single-node Pacemaker).

# Pacemaker looks for agents under /usr/lib/ocf whatever the prefix
# (configure --with-ocf-root).
ocfdir = $(OCF_ROOT_DIR)/resource.d/clraid
dist_ocf_SCRIPTS = ocf/clraid

crmtemplatesdir = $(datadir)/clraid/crm-templates
# the pcs recipes are scripts (usage: pcs-clraid-cpg.sh CIB_FILE), installed
# executable as they are in the tree
dist_crmtemplates_SCRIPTS = \
	crm-templates/pcs-clraid-cpg.sh \
	crm-templates/pcs-clraid-dlm.sh
# (their own directory: a plain _DATA list would flatten crmsh/ away)
crmshtemplatesdir = $(crmtemplatesdir)/crmsh
dist_crmshtemplates_DATA = \
	crm-templates/crmsh/clraid-cpg \
	crm-templates/crmsh/clraid-dlm

EXTRA_DIST += doc/pacemaker.md \
	tests/pacemaker/pcmk-functions.sh \
	tests/pacemaker/fake-clraid \
	tests/pacemaker/fence_clraidtest \
	tests/pacemaker/stub-nbd-client \
	tests/pacemaker/ra-api-1.1.rng

PACEMAKER_TESTS = \
	tests/pacemaker/agent-lint.sh \
	tests/pacemaker/agent-metadata.sh \
	tests/pacemaker/agent-actions.sh \
	tests/pacemaker/agent-nbd.sh \
	tests/pacemaker/agent-tls.sh \
	tests/pacemaker/agent-ocf-tester.sh \
	tests/pacemaker/pcs-offline.sh \
	tests/pacemaker/crmsh-template.sh \
	tests/pacemaker/live-pacemaker.sh \
	tests/pacemaker/live-cluster3.sh \
	tests/pacemaker/live-cluster3-policy.sh
TESTS += $(PACEMAKER_TESTS)
dist_check_SCRIPTS += $(PACEMAKER_TESTS)
