/* Unit tests of agent/evidence.c: the evidence attribute's format, the
 * error window, and the decider's facts built from a CIB whose status
 * section holds every node's attribute (as attrd writes it), down to the
 * decision.  CLR_SEED=<n> replays the random part. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "agent/evidence.h"

static char err[CLR_CIB_ERR_MAX];

static void test_format_parse(void **s)
{
    struct clr_evidence e, back;
    char buf[CLR_EV_VALUE_MAX];

    (void)s;
    memset(&e, 0, sizeof(e));
    e.n_devs = 4;
    e.redundancy = 1;
    e.err[1] = CLR_POL_ERR_PATH;
    e.errors[1] = 3;
    e.err[2] = CLR_POL_ERR_MEDIA;
    e.errors[2] = 1;
    e.media_writes[2] = 1;
    e.probe[1] = CLR_POL_PROBE_FAILED;
    e.probe_seq[1] = 7;
    e.probe[3] = CLR_POL_PROBE_OK;
    e.probe_seq[3] = 2;
    e.frozen = true;
    assert_int_equal(clr_evidence_format(&e, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "n=4 r=1 m1=path:3 m2=media:1 w2=1 p1=failed:7 p3=ok:2 frozen");
    assert_int_equal(clr_evidence_parse(buf, &back, err, sizeof(err)), 0);
    assert_memory_equal(&e, &back, sizeof(e));
    /* a clean node */
    memset(&e, 0, sizeof(e));
    e.n_devs = 2;
    e.redundancy = 1;
    assert_int_equal(clr_evidence_format(&e, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "n=2 r=1");
    /* too short a buffer */
    assert_int_equal(clr_evidence_format(&e, buf, 5), -ENOSPC);
    /* the longest value fits */
    memset(&e, 0, sizeof(e));
    e.n_devs = CLR_POL_MAX_DEVS;
    e.redundancy = CLR_POL_MAX_DEVS;
    e.frozen = true;
    for (unsigned d = 0; d < CLR_POL_MAX_DEVS; d++) {
        e.err[d] = CLR_POL_ERR_MEDIA;
        e.errors[d] = 65535;
        e.media_writes[d] = 65535;
        e.probe[d] = CLR_POL_PROBE_FAILED;
        e.probe_seq[d] = 65535;
    }
    assert_int_equal(clr_evidence_format(&e, buf, sizeof(buf)), 0);
    assert_int_equal(clr_evidence_parse(buf, &back, err, sizeof(err)), 0);
    assert_memory_equal(&e, &back, sizeof(e));
    /* a newer daemon's keys and flags are skipped */
    assert_int_equal(clr_evidence_parse("n=3  r=0 x=5 m0=hung:2 sleepy", &back, err, sizeof(err)), 0);
    assert_int_equal(back.n_devs, 3);
    assert_int_equal(back.redundancy, 0);
    assert_int_equal(back.err[0], CLR_POL_ERR_HUNG);
    assert_int_equal(back.errors[0], 2);
    assert_false(back.frozen);
    assert_int_equal(clr_evidence_attr_name("vm", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "clraid-vm-io");
}

static void test_parse_rejects(void **s)
{
    static const struct {
        const char *v, *why;
    } bad[] = {
        { "", "no n=MEMBERS" },
        { "n=4", "no r=REDUNDANCY" },
        { "r=1", "no n=MEMBERS" },
        { "n=65 r=1", "n=65: want a number from 0 to 64" },
        { "n=4 r=-1", "r=-1: want a number from 0 to 64" },
        { "n=4 r=1 m4=path:1", "role 4 is past n=4" },
        { "n=4 r=1 p9=ok", "role 9 is past n=4" },
        { "n=4 r=1 m1=bogus:1", "m1=bogus:1: want mI=CLASS:COUNT, CLASS media, path, hung or resv" },
        { "n=4 r=1 m1=path", "m1=path: want mI=CLASS:COUNT, CLASS media, path, hung or resv" },
        { "n=4 r=1 m1=path:65536", "m1=path:65536: want mI=CLASS:COUNT, CLASS media, path, hung or resv" },
        { "n=4 r=1 mx=path:1", "mx=path:1: not a member role from 0 to 63" },
        { "n=4 r=1 m64=path:1", "m64=path:1: not a member role from 0 to 63" },
        { "n=4 r=1 p1=maybe", "p1=maybe: a probe is pending, ok[:SEQ] or failed[:SEQ]" },
        { "n=4 r=1 p1=pending:3", "p1=pending:3: a probe is pending, ok[:SEQ] or failed[:SEQ]" },
        { "n=4 r=1 p1=failed:x", "p1=failed:x: a probe is pending, ok[:SEQ] or failed[:SEQ]" },
        { "n=4 r=1 m1=none:0", "m1=none:0: want mI=CLASS:COUNT, CLASS media, path, hung or resv" },
        { "n=4 r=1 w1=x", "w1=x: want wI=COUNT, I a member role from 0 to 63" },
        { "n=4 r=1 w4=1", "role 4 is past n=4" },
    };
    struct clr_evidence e;

    (void)s;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (clr_evidence_parse(bad[i].v, &e, err, sizeof(err)) != -EINVAL)
            fail_msg("'%s' accepted", bad[i].v);
        if (strcmp(err, bad[i].why))
            fail_msg("'%s': '%s', want '%s'", bad[i].v, err, bad[i].why);
    }
    assert_int_equal(clr_evidence_parse(NULL, &e, err, sizeof(err)), -EINVAL);
}

static void test_window(void **s)
{
    struct clr_ev_hist h;

    (void)s;
    clr_ev_hist_init(&h, 0, 0);
    assert_int_equal(clr_ev_hist_window(&h, 1000, 500), 0);
    /* five errors before the daemon started, the last at t=1000 */
    clr_ev_hist_init(&h, 5, 1000);
    assert_int_equal(clr_ev_hist_window(&h, 2000, 500), 0);
    assert_int_equal(clr_ev_hist_window(&h, 2000, 1000), 0);
    assert_int_equal(clr_ev_hist_window(&h, 2000, 1001), 5);
    clr_ev_hist_add(&h, 3000, 5); /* no change: no sample */
    assert_int_equal(h.n, 1);
    clr_ev_hist_add(&h, 3000, 8);
    assert_int_equal(clr_ev_hist_window(&h, 3500, 1000), 3);
    assert_int_equal(clr_ev_hist_window(&h, 3500, 3000), 8);
    assert_int_equal(clr_ev_hist_window(&h, 9000, 1000), 0);
    /* the engine restarted: its count fell */
    clr_ev_hist_add(&h, 4000, 2);
    assert_int_equal(clr_ev_hist_window(&h, 4000, 100), 2);
    assert_int_equal(clr_ev_hist_window(&h, 5000, 100), 0);
    /* a huge jump is capped */
    clr_ev_hist_add(&h, 6000, 100000);
    assert_int_equal(clr_ev_hist_window(&h, 6000, 10), 65535);
}

/* Random counts: the window never counts fewer errors than came within it
 * (the policy's threshold is a floor), and exactly as many while no
 * sample has been merged. */
static void test_window_random(void **s)
{
    unsigned seed =
        getenv("CLR_SEED") ? (unsigned)strtoul(getenv("CLR_SEED"), NULL, 0) : (unsigned)time(NULL);
    static uint64_t t[1000], c[1000];

    (void)s;
    printf("test_window_random: CLR_SEED=%u\n", seed);
    srand(seed);
    for (int round = 0; round < 50; round++) {
        struct clr_ev_hist h;
        uint64_t now = 1000, count = 0;
        unsigned n = 0, adds = 0;

        clr_ev_hist_init(&h, 0, 0);
        for (int i = 0; i < 300; i++) {
            now += (uint64_t)(rand() % 2000);
            if (rand() % 3 == 0) {
                count += (uint64_t)(1 + rand() % 5);
                t[n] = now;
                c[n] = count;
                n++;
                adds++;
            }
            clr_ev_hist_add(&h, now, count);
            for (int k = 0; k < 5; k++) {
                uint64_t w = (uint64_t)(rand() % 100000), since = now > w ? now - w : 0, before = 0;
                uint16_t got = clr_ev_hist_window(&h, now, w);

                for (unsigned j = 0; j < n && t[j] <= since; j++)
                    before = c[j];
                if (got < count - before)
                    fail_msg("seed %u: window %llu at %llu counted %u, %llu came", seed,
                             (unsigned long long)w, (unsigned long long)now, got,
                             (unsigned long long)(count - before));
                if (adds <= CLR_EV_HIST_MAX && got != count - before)
                    fail_msg("seed %u: window %llu at %llu counted %u, want %llu", seed,
                             (unsigned long long)w, (unsigned long long)now, got,
                             (unsigned long long)(count - before));
            }
        }
    }
}

/* ---- from a CIB to a decision ------------------------------------------- */

#define NS(id, up, attrs)                                                                                    \
    "<node_state id=\"" id "\" uname=\"n" id "\" in_ccm=\"" up "\" crmd=\"" up "\" join=\"member\" "         \
    "expected=\"member\"><transient_attributes id=\"" id "\"><instance_attributes id=\"status-" id           \
    "\">" attrs "</instance_attributes></transient_attributes></node_state>"
#define IO(id, v) "<nvpair id=\"status-" id "-io\" name=\"clraid-vm-io\" value=\"" v "\"/>"

#define CIB(dc, status)                                                                                      \
    "<cib have-quorum=\"1\" " dc " epoch=\"7\" num_updates=\"3\" admin_epoch=\"0\"><configuration>"          \
    "<crm_config/><nodes><node id=\"1\" uname=\"n1\"/><node id=\"2\" uname=\"n2\"/>"                         \
    "<node id=\"3\" uname=\"n3\"/></nodes><resources>"                                                       \
    "<clone id=\"clraid-vm-clone\"><primitive id=\"clraid-vm\" class=\"ocf\" provider=\"clraid\" "           \
    "type=\"clraid\"><instance_attributes id=\"ia\"><nvpair id=\"p1\" name=\"name\" value=\"vm\"/>"          \
    "</instance_attributes></primitive></clone></resources><constraints/></configuration>"                   \
    "<status>" status "</status></cib>"

static struct clr_cib_facts cf;
static struct clr_pol_facts pf;
static struct clr_ev_state st;
static char bad[400];

static int facts_for(const char *xml, const char *self, uint64_t now)
{
    assert_int_equal(clr_cib_facts_parse(xml, strlen(xml), &cf, err, sizeof(err)), 0);
    assert_int_equal(cf.n_arrays, 1);
    return clr_evidence_facts(&cf, 0, self, now, &st, &pf, bad, sizeof(bad));
}

static void test_facts_path_one_node(void **s)
{
    static const char xml[] = CIB("dc-uuid=\"1\"", NS("1", "true", IO("1", "n=2 r=1 p1=ok"))
                                                       NS("2", "true", IO("2", "n=2 r=1 m1=path:3 p1=failed"))
                                                           NS("3", "true", IO("3", "n=2 r=1 p1=ok")));
    struct clr_pol_settings set;
    struct clr_pol_decision d;

    (void)s;
    memset(&st, 0, sizeof(st));
    assert_int_equal(facts_for(xml, "n1", 1000), 0);
    assert_string_equal(bad, "");
    assert_int_equal(pf.n_nodes, 3);
    assert_int_equal(pf.n_devs, 2);
    assert_int_equal(pf.self, 0);
    assert_true(pf.decider);
    assert_true(pf.quorate);
    assert_int_equal(pf.redundancy, 1);
    for (unsigned n = 0; n < 3; n++) {
        assert_true(pf.node[n].online);
        assert_true(pf.node[n].active);
        assert_int_equal(pf.node[n].id, n + 1);
    }
    assert_int_equal(pf.node[1].err[1], CLR_POL_ERR_PATH);
    assert_int_equal(pf.node[1].errors[1], 3);
    assert_int_equal(pf.node[1].probe[1], CLR_POL_PROBE_FAILED);
    assert_int_equal(pf.node[0].probe[1], CLR_POL_PROBE_OK);
    assert_int_equal(pf.dev[1].since_report_ms, 0);
    clr_policy_settings_default(&set);
    clr_policy_decide(&pf, &set, &d);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.row, 3);
    assert_int_equal(d.nodes, 1u << 1);
    /* the report's age grows between calls */
    assert_int_equal(facts_for(xml, "n1", 4000), 0);
    assert_int_equal(pf.dev[1].since_report_ms, 3000);
    /* n2 is not the DC: it decides nothing */
    assert_int_equal(facts_for(xml, "n2", 4000), 0);
    assert_false(pf.decider);
    assert_int_equal(pf.self, 1);
    clr_policy_decide(&pf, &set, &d);
    assert_int_equal(d.action, CLR_POL_NONE);
}

static void test_facts_everywhere(void **s)
{
    static const char xml[] = CIB("dc-uuid=\"2\"", NS("1", "true", IO("1", "n=3 r=1 m0=path:1 p0=failed"))
                                                       NS("2", "true", IO("2", "n=3 r=1 m0=path:2 p0=failed"))
                                                           NS("3", "true", IO("3", "n=3 r=1 p0=failed")));
    struct clr_pol_settings set;
    struct clr_pol_decision d;

    (void)s;
    memset(&st, 0, sizeof(st));
    assert_int_equal(facts_for(xml, "n2", 10), 0);
    assert_true(pf.decider);
    clr_policy_settings_default(&set);
    clr_policy_decide(&pf, &set, &d);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.row, 2);
    assert_int_equal(d.devs, 1u);
}

/* row 1 from the CIB: a media error on a read is rewritten; one that hit
 * a write fails the disk */
static void test_facts_media(void **s)
{
    static const char rd[] = CIB("dc-uuid=\"1\"", NS("1", "true", IO("1", "n=2 r=1"))
                                                      NS("2", "true", IO("2", "n=2 r=1 m1=media:2")));
    static const char wr[] = CIB("dc-uuid=\"1\"", NS("1", "true", IO("1", "n=2 r=1"))
                                                      NS("2", "true", IO("2", "n=2 r=1 m1=media:3 w1=1")));
    struct clr_pol_settings set;
    struct clr_pol_decision d;

    (void)s;
    clr_policy_settings_default(&set);
    memset(&st, 0, sizeof(st));
    assert_int_equal(facts_for(rd, "n1", 10), 0);
    assert_false(pf.dev[1].media_on_write);
    assert_int_equal(pf.dev[1].read_errors, 2);
    clr_policy_decide(&pf, &set, &d);
    assert_int_equal(d.action, CLR_POL_REWRITE);
    assert_int_equal(d.row, 1);
    memset(&st, 0, sizeof(st));
    assert_int_equal(facts_for(wr, "n1", 10), 0);
    assert_true(pf.dev[1].media_on_write);
    clr_policy_decide(&pf, &set, &d);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.row, 1);
    assert_int_equal(d.devs, 1u << 1);
}

static void test_facts_edges(void **s)
{
    /* n3 is down (its attribute is left over), n2's value is malformed,
     * no DC: the lowest online id decides */
    static const char xml[] =
        CIB("", NS("1", "true", IO("1", "n=2 r=1 frozen")) NS("2", "true", IO("2", "n=2 r=7 m9=path:1"))
                    NS("3", "false", IO("3", "n=2 r=0 m0=path:1")));
    static const char none[] = CIB("dc-uuid=\"1\"", NS("1", "true", "") NS("2", "true", ""));

    (void)s;
    memset(&st, 0, sizeof(st));
    assert_int_equal(facts_for(xml, "n1", 500), 0);
    assert_string_equal(bad, "n2: role 9 is past n=2");
    assert_true(pf.decider);
    assert_true(pf.node[0].active);
    assert_false(pf.node[1].active);
    assert_true(pf.node[1].online);
    assert_false(pf.node[2].active);
    assert_false(pf.node[2].online);
    assert_int_equal(pf.redundancy, 1); /* n3's r=0 is not counted */
    assert_int_equal(pf.dev[0].since_report_ms, 0);
    assert_int_equal(st.first_report_ms[0], 0);
    assert_true(pf.frozen);
    assert_int_equal(facts_for(xml, "n1", 2500), 0);
    assert_int_equal(pf.since_freeze_ms, 2000);
    assert_int_equal(facts_for(xml, "n2", 2500), 0);
    assert_false(pf.decider);
    assert_int_equal(facts_for(xml, "n9", 2500), -ENOENT);
    assert_int_equal(facts_for(none, "n1", 2500), -ENODATA);
    assert_int_equal(st.freeze_ms, 0);
}

static void test_facts_decider_runs_array(void **s)
{
    /* the DC (n1) does not run the array: no clraid-policyd there; the
     * lowest id that runs it (n2) decides */
    static const char xml[] = CIB("dc-uuid=\"1\"", NS("1", "true", "") NS("2", "true", IO("2", "n=2 r=1"))
                                                       NS("3", "true", IO("3", "n=2 r=1")));
    static const char dc_runs[] =
        CIB("dc-uuid=\"3\"", NS("1", "true", IO("1", "n=2 r=1")) NS("2", "true", IO("2", "n=2 r=1"))
                                 NS("3", "true", IO("3", "n=2 r=1")));

    (void)s;
    memset(&st, 0, sizeof(st));
    assert_int_equal(facts_for(xml, "n1", 10), 0);
    assert_false(pf.decider);
    assert_int_equal(facts_for(xml, "n2", 10), 0);
    assert_true(pf.decider);
    assert_int_equal(facts_for(xml, "n3", 10), 0);
    assert_false(pf.decider);
    /* a DC that runs it decides, whatever its id */
    assert_int_equal(facts_for(dc_runs, "n3", 10), 0);
    assert_true(pf.decider);
    assert_int_equal(facts_for(dc_runs, "n1", 10), 0);
    assert_false(pf.decider);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_parse),
        cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_window_random),
        cmocka_unit_test(test_facts_path_one_node),
        cmocka_unit_test(test_facts_everywhere),
        cmocka_unit_test(test_facts_media),
        cmocka_unit_test(test_facts_edges),
        cmocka_unit_test(test_facts_decider_runs_array),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
