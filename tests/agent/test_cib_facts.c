/* Unit tests of agent/cib_facts.c: CIB XML in, facts out.  The CIBs here
 * are written in the form Pacemaker 2.1.5 writes them (and node_state
 * with the join timestamps of later versions); tests/agent/policyd-cib.sh
 * reads CIBs that Pacemaker's own tools build. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <libxml/parser.h>

#include "agent/cib_facts.h"

static struct clr_cib_facts f;
static char err[CLR_CIB_ERR_MAX];

static int parse(const char *xml)
{
    err[0] = '\0';
    return clr_cib_facts_parse(xml, strlen(xml), &f, err, sizeof(err));
}

#define NODES3                                                                                               \
    "<nodes><node id=\"1\" uname=\"n1\"/>"                                                                   \
    "<node id=\"2\" uname=\"n2\"><instance_attributes id=\"na2\">"                                           \
    "<nvpair id=\"na2-s\" name=\"standby\" value=\"on\"/></instance_attributes></node>"                      \
    "<node id=\"3\" uname=\"n3\"/></nodes>"

static const char cib3[] =
    "<cib have-quorum=\"1\" dc-uuid=\"1\" epoch=\"7\" num_updates=\"3\" admin_epoch=\"0\">"
    "<configuration><crm_config><cluster_property_set id=\"cib-bootstrap-options\">"
    "<nvpair id=\"o1\" name=\"no-quorum-policy\" value=\"freeze\"/>"
    "</cluster_property_set></crm_config>" NODES3
    "<resources><primitive id=\"fence1\" class=\"stonith\" type=\"fence_dummy\"/>"
    "<clone id=\"clraid-vm-clone\"><primitive id=\"clraid-vm\" class=\"ocf\" provider=\"clraid\" "
    "type=\"clraid\"><instance_attributes id=\"ia\">"
    "<nvpair id=\"p1\" name=\"name\" value=\"vm\"/>"
    "<nvpair id=\"p2\" name=\"path_failure_action\" value=\"fail-disk\"/>"
    "<nvpair id=\"p3\" name=\"freeze_timeout\" value=\"2m\"/>"
    "<nvpair id=\"p4\" name=\"confirm_timeout\" value=\"500ms\"/>"
    "<nvpair id=\"p5\" name=\"max_read_errors\" value=\"7\"/>"
    "</instance_attributes></primitive></clone>"
    "<primitive id=\"other\" class=\"ocf\" provider=\"heartbeat\" type=\"Dummy\"/>"
    "</resources><constraints/></configuration>"
    "<status>"
    "<node_state id=\"1\" uname=\"n1\" in_ccm=\"true\" crmd=\"online\" join=\"member\" expected=\"member\"/>"
    "<node_state id=\"2\" uname=\"n2\" in_ccm=\"true\" crmd=\"online\" join=\"member\" expected=\"member\"/>"
    "<node_state id=\"3\" uname=\"n3\" in_ccm=\"false\" crmd=\"offline\" join=\"down\" expected=\"down\"/>"
    "</status></cib>";

static void test_three_nodes(void **s)
{
    const struct clr_cib_array *a;

    (void)s;
    assert_int_equal(parse(cib3), 0);
    assert_true(f.have_quorum);
    assert_string_equal(f.dc_uuid, "1");
    assert_true(f.stonith_enabled); /* not set: Pacemaker's default */
    assert_int_equal(f.fence_devices, 1);
    assert_int_equal(f.n_nodes, 3);
    assert_true(f.node[0].member && f.node[1].member);
    assert_false(f.node[2].member || f.node[2].in_ccm || f.node[2].online);
    assert_true(f.node[1].standby);
    assert_false(f.node[0].standby);
    assert_int_equal(f.n_arrays, 1);
    a = &f.array[0];
    assert_string_equal(a->rsc, "clraid-vm");
    assert_string_equal(a->name, "vm");
    assert_true(a->cloned);
    assert_string_equal(a->error, "");
    assert_int_equal(a->settings.path_failure_action, CLR_POL_PATH_FAIL_DISK);
    assert_int_equal(a->settings.last_device_action, CLR_POL_LAST_FREEZE); /* default */
    assert_int_equal(a->settings.freeze_timeout, 120000);
    assert_int_equal(a->settings.confirm_timeout, 500);
    assert_int_equal(a->settings.max_read_errors, 7);
    assert_int_equal(a->settings.io_timeout, 60000); /* default */
    assert_non_null(clr_cib_node_find(&f, "n3"));
    assert_null(clr_cib_node_find(&f, "n4"));
}

/* Later Pacemakers write the time a node joined instead of true/online. */
static void test_timestamp_states(void **s)
{
    (void)s;
    assert_int_equal(
        parse("<cib have-quorum=\"0\"><configuration><crm_config/>" NODES3
              "<resources/></configuration><status>"
              "<node_state id=\"1\" uname=\"n1\" in_ccm=\"1733400000\" crmd=\"1733400001\" "
              "join=\"member\"/>"
              "<node_state id=\"2\" uname=\"n2\" in_ccm=\"1733400000\" crmd=\"0\" join=\"down\"/>"
              "</status></cib>"),
        0);
    assert_false(f.have_quorum);
    assert_string_equal(f.dc_uuid, "");
    assert_true(f.node[0].member);
    assert_true(f.node[1].in_ccm);
    assert_false(f.node[1].online || f.node[1].member);
    assert_false(f.node[2].in_ccm); /* no node_state at all */
}

static void test_stonith_disabled(void **s)
{
    (void)s;
    assert_int_equal(parse("<cib><configuration><crm_config><cluster_property_set id=\"c\">"
                           "<nvpair id=\"x\" name=\"stonith-enabled\" value=\"false\"/>"
                           "</cluster_property_set></crm_config><nodes/><resources/></configuration>"
                           "<status/></cib>"),
                     0);
    assert_false(f.stonith_enabled);
    assert_int_equal(f.fence_devices, 0);
    assert_int_equal(f.n_nodes, 0);
    assert_int_equal(f.n_arrays, 0);
}

/* A bad value: that resource keeps the defaults and says why. */
static void test_bad_settings(void **s)
{
    static const char *const bad[][3] = {
        { "path_failure_action", "panic", "path_failure_action=panic: use fence, fail-disk or ignore" },
        { "last_device_action", "retry", "last_device_action=retry: use freeze, error or fence" },
        { "fence_action", "cycle", "fence_action=cycle: use reboot or off" },
        { "io_timeout", "soon", "io_timeout=soon: give a time such as 15s, 500ms, 2m or 1h" },
        { "probe_timeout", "-5s", "probe_timeout=-5s: give a time such as 15s, 500ms, 2m or 1h" },
        { "error_threshold", "1e3", "error_threshold=1e3: give a whole number from 0 to 4294967295" },
        { "confirm_timeout", "0", "probe_timeout, confirm_timeout and io_timeout must be above 0" },
    };
    char xml[2048];

    (void)s;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(xml, sizeof(xml),
                 "<cib><configuration><resources><primitive id=\"r\" class=\"ocf\" provider=\"clraid\" "
                 "type=\"clraid\"><instance_attributes id=\"i\"><nvpair id=\"a\" name=\"name\" value=\"x\"/>"
                 "<nvpair id=\"b\" name=\"freeze_timeout\" value=\"9s\"/>"
                 "<nvpair id=\"c\" name=\"%s\" value=\"%s\"/></instance_attributes></primitive>"
                 "</resources></configuration></cib>",
                 bad[i][0], bad[i][1]);
        assert_int_equal(parse(xml), 0);
        assert_int_equal(f.n_arrays, 1);
        assert_false(f.array[0].cloned);
        assert_string_equal(f.array[0].error, bad[i][2]);
        /* the good value next to it is not taken either: all defaults */
        assert_int_equal(f.array[0].settings.freeze_timeout, 0);
        assert_int_equal(f.array[0].settings.path_failure_action, CLR_POL_PATH_FENCE);
    }
}

static void test_not_a_cib(void **s)
{
    (void)s;
    assert_int_equal(parse("<config/>"), -EINVAL);
    assert_string_equal(err, "not a CIB: the root element is <config>, not <cib>");
    assert_int_equal(parse("<cib><configuration>"), -EINVAL);
    assert_string_equal(err, "the CIB is not well-formed XML");
    assert_int_equal(parse(""), -EINVAL);
}

/* From a tree: the <cib> element need not be its document's root (the
 * daemon hands over libcib's copy as it is). */
static void test_read_tree(void **s)
{
    static const char wrapped[] = "<reply><cib have-quorum=\"1\"><configuration>" NODES3
                                  "</configuration><status><node_state id=\"3\" uname=\"n3\" in_ccm=\"true\" "
                                  "crmd=\"online\" join=\"member\"/></status></cib></reply>";
    xmlDocPtr doc = xmlReadMemory(wrapped, (int)strlen(wrapped), "w.xml", NULL, 0);
    xmlNodePtr cib;

    (void)s;
    assert_non_null(doc);
    cib = xmlDocGetRootElement(doc)->children;
    assert_int_equal(clr_cib_facts_read(xmlDocGetRootElement(doc), &f, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "not a CIB: the root element is <reply>, not <cib>");
    assert_int_equal(clr_cib_facts_read(cib, &f, err, sizeof(err)), 0);
    assert_true(f.have_quorum);
    assert_int_equal(f.n_nodes, 3);
    assert_true(f.node[2].member);
    assert_false(f.node[0].member);
    xmlFreeDoc(doc);
}

static void test_policy_param(void **s)
{
    struct clr_pol_settings st;
    char e[CLR_CIB_ERR_MAX];

    (void)s;
    clr_policy_settings_default(&st);
    assert_int_equal(clr_cib_policy_param(&st, "name", "x", e, sizeof(e)), 0);
    assert_int_equal(clr_cib_policy_param(&st, "io_timeout", "90", e, sizeof(e)), 1);
    assert_int_equal(st.io_timeout, 90000); /* no unit: seconds */
    assert_int_equal(clr_cib_policy_param(&st, "error_window", "1h", e, sizeof(e)), 1);
    assert_int_equal(st.error_window, 3600000);
    assert_int_equal(clr_cib_policy_param(&st, "freeze_timeout", "99999999999999999999", e, sizeof(e)),
                     -EINVAL);
    assert_int_equal(clr_cib_policy_param(&st, "fence_action", "off", e, sizeof(e)), 1);
    assert_int_equal(st.fence_action, CLR_POL_FENCE_OFF);
    for (int i = 0; clr_cib_policy_params[i]; i++)
        assert_int_not_equal(clr_cib_policy_param(&st, clr_cib_policy_params[i], "bogus!", e, sizeof(e)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_nodes),      cmocka_unit_test(test_timestamp_states),
        cmocka_unit_test(test_stonith_disabled), cmocka_unit_test(test_bad_settings),
        cmocka_unit_test(test_not_a_cib),        cmocka_unit_test(test_read_tree),
        cmocka_unit_test(test_policy_param),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
