/*
 * Unit tests of the policy decision core (agent/policy.c): one test per row
 * of issue 15's table, the boundaries of its timeouts and counts, and
 * random fact sets checked against the invariants (CLR_SEED=<n> replays a
 * run; the seed is printed).
 */
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

#include "agent/policy.h"

enum {
    N1,
    N2,
    N3,
    N4,
    N5
}; /* node indexes; their ids are index + 1 */

#define BIT(n) (1u << (n))

/* n nodes, all online with the array active, quorate, node 1 (index 0) the
 * decider; d members, redundancy 1, no errors */
static void base(struct clr_pol_facts *f, unsigned n, unsigned d)
{
    memset(f, 0, sizeof(*f));
    f->n_nodes = n;
    f->n_devs = d;
    f->quorate = true;
    f->decider = true;
    f->redundancy = 1;
    for (unsigned i = 0; i < n; i++) {
        f->node[i].id = i + 1;
        f->node[i].online = true;
        f->node[i].active = true;
    }
}

static struct clr_pol_settings defaults(void)
{
    struct clr_pol_settings s;

    clr_policy_settings_default(&s);
    return s;
}

static void report(struct clr_pol_facts *f, unsigned n, unsigned d, enum clr_pol_err e)
{
    f->node[n].err[d] = (uint8_t)e;
}

/* the probe result of each of the first f->n_nodes nodes on member d */
static void probes(struct clr_pol_facts *f, unsigned d, ...)
{
    va_list ap;

    va_start(ap, d);
    for (unsigned n = 0; n < f->n_nodes; n++)
        f->node[n].probe[d] = (uint8_t)va_arg(ap, int);
    va_end(ap);
}

#define OK      CLR_POL_PROBE_OK
#define FAILED  CLR_POL_PROBE_FAILED
#define PENDING CLR_POL_PROBE_PENDING
#define NOT_RUN CLR_POL_PROBE_NOT_RUN

static struct clr_pol_decision decide(const struct clr_pol_facts *f, const struct clr_pol_settings *s)
{
    struct clr_pol_decision d;
    enum clr_pol_action a = clr_policy_decide(f, s, &d);

    assert_int_equal(a, d.action);
    assert_true(memchr(d.evidence, '\0', sizeof(d.evidence)) != NULL);
    assert_true(d.evidence[0] != '\0');
    return d;
}

/* the row 3 picture: disk1 fails on node 2 only, nodes 1 and 3 read and
 * write it */
static void path_subset(struct clr_pol_facts *f)
{
    base(f, 3, 2);
    report(f, N2, 1, CLR_POL_ERR_PATH);
    probes(f, 1, OK, FAILED, OK);
}

/* ---- one test per row ------------------------------------------------ */

/* 1: a media error on a read, redundancy left: rewrite from a good copy */
static void test_row1_media_read_rewrites(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 3, 2);
    report(&f, N2, 0, CLR_POL_ERR_MEDIA);
    f.dev[0].read_errors = 3;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_REWRITE);
    assert_int_equal(d.row, 1);
    assert_int_equal(d.devs, 1);
    assert_int_equal(d.nodes, 0);
    assert_string_equal(
        d.evidence,
        "rewrite disk0 from a good copy: media error on a read reported by node 2 (3 corrected reads)");
}

/* 1: md's rule: up to max_read_errors corrected reads are rewritten, one
 * more fails the disk */
static void test_row1_media_beyond_max_read_errors_fails(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 3, 2);
    report(&f, N2, 1, CLR_POL_ERR_MEDIA);
    f.dev[1].read_errors = 20;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_REWRITE);
    f.dev[1].read_errors = 21;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.row, 1);
    assert_int_equal(d.devs, BIT(1));
    assert_non_null(strstr(d.evidence, "21 corrected reads > max_read_errors 20"));
}

/* 1: a media error on a write fails the disk (nothing to rewrite from) */
static void test_row1_media_on_write_fails(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 3, 2);
    report(&f, N1, 0, CLR_POL_ERR_MEDIA);
    f.dev[0].media_on_write = true;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.row, 1);
    assert_int_equal(d.devs, 1);
}

/* 2: the probe fails on every node: fail the disk cluster-wide, fence
 * nobody */
static void test_row2_probe_fails_everywhere_fails_disk(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 3, 2);
    report(&f, N1, 1, CLR_POL_ERR_PATH);
    probes(&f, 1, FAILED, FAILED, FAILED);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.row, 2);
    assert_int_equal(d.devs, BIT(1));
    assert_int_equal(d.nodes, 0);
    assert_string_equal(d.evidence, "fail disk1: fails on every node (node 1, node 2, node 3), redundancy 1");
}

/* 3: the probe fails on one node only: fence it, fail no disk */
static void test_row3_path_failure_subset_fences(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    path_subset(&f);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.row, 3);
    assert_int_equal(d.nodes, BIT(N2));
    assert_int_equal(d.devs, 0);
    assert_int_equal(d.fence_action, CLR_POL_FENCE_REBOOT);
    assert_string_equal(d.evidence,
                        "fence node 2: disk1 failed on node 2 only; node 1, node 3 read and wrote it");
    /* with names, and fence_action=off */
    {
        const char *const names[] = { "n1", "n2", "n3" };

        f.node_names = names;
        s.fence_action = CLR_POL_FENCE_OFF;
        d = decide(&f, &s);
        assert_int_equal(d.fence_action, CLR_POL_FENCE_OFF);
        assert_string_equal(d.evidence, "fence n2: disk1 failed on n2 only; n1, n3 read and wrote it");
    }
}

/* 3 with path_failure_action=fail-disk: the disk fails cluster-wide, as
 * md fails it, and nobody is fenced; =ignore: nothing */
static void test_row3_path_failure_actions(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    path_subset(&f);
    s.path_failure_action = CLR_POL_PATH_FAIL_DISK;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.row, 3);
    assert_int_equal(d.nodes, 0);
    assert_int_equal(d.devs, BIT(1));
    assert_non_null(strstr(d.evidence, "fail disk1 cluster-wide (path_failure_action=fail-disk)"));
    /* not the last copy: with no redundancy left, the node is fenced */
    f.redundancy = 0;
    d = decide(&f, &s);
    assert_int_not_equal(d.action, CLR_POL_FAIL_DISK);
    f.redundancy = 1;
    s.path_failure_action = CLR_POL_PATH_IGNORE;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_int_equal(d.row, 3);
    assert_int_equal(d.nodes, 0);
}

/* A failed probe left behind once nobody reports the member any more (it
 * was failed cluster-wide, redundancy 0 now): nothing to decide.  Live,
 * a decider once fenced the node whose daemon had not withdrawn it yet. */
static void test_stale_failed_probe_decides_nothing(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    path_subset(&f);
    f.node[N2].err[1] = CLR_POL_ERR_NONE;
    f.node[N2].errors[1] = 0;
    f.redundancy = 0;
    for (int pa = CLR_POL_PATH_FENCE; pa <= CLR_POL_PATH_IGNORE; pa++) {
        s.path_failure_action = (enum clr_pol_path_action)pa;
        d = decide(&f, &s);
        assert_int_equal(d.action, CLR_POL_NONE);
        assert_int_equal(d.nodes, 0);
        assert_int_equal(d.devs, 0);
    }
}

/* A member the decider's engine no longer uses (failed cluster-wide):
 * the reports that still name it, before their nodes caught up, decide
 * nothing.  Row 4 counts the members in use only. */
static void test_member_out_decides_nothing(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    path_subset(&f);
    f.dev[1].out = true;
    f.redundancy = 0;
    s.path_failure_action = CLR_POL_PATH_FAIL_DISK;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_int_equal(d.nodes, 0);
    /* three members, one out: n2 lost both others, row 4 */
    base(&f, 3, 3);
    f.dev[2].out = true;
    report(&f, N2, 0, CLR_POL_ERR_PATH);
    report(&f, N2, 1, CLR_POL_ERR_PATH);
    d = decide(&f, &s);
    assert_int_equal(d.row, 4);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.nodes, BIT(N2));
}

/* 3: fencing must leave quorate survivors; two nodes of two: freeze,
 * unless the quorum says one node suffices (corosync two_node) */
static void test_row3_survivors_not_quorate_freezes(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 2, 1);
    report(&f, N2, 0, CLR_POL_ERR_PATH);
    probes(&f, 0, OK, FAILED);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.row, 3);
    assert_int_equal(d.nodes, 0);
    f.quorum_nodes = 1;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.nodes, BIT(N2));
    /* five nodes, quorum 3: fencing two leaves 3 */
    base(&f, 5, 1);
    report(&f, N4, 0, CLR_POL_ERR_PATH);
    probes(&f, 0, OK, OK, OK, FAILED, FAILED);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.nodes, BIT(N4) | BIT(N5));
    /* ... but not three */
    f.node[N3].probe[0] = FAILED;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
}

/* 4: one node errors on every member, the others report nothing: its HBA,
 * fenced without waiting for probes */
static void test_row4_one_node_all_members_fences(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 3, 3);
    for (unsigned m = 0; m < 3; m++)
        report(&f, N3, m, CLR_POL_ERR_PATH);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.row, 4);
    assert_int_equal(d.nodes, BIT(N3));
    assert_string_equal(d.evidence, "fence node 3: path errors on all 3 members; node 1, node 2 report none");
    /* two of three members only: wait for the probes */
    report(&f, N3, 2, CLR_POL_ERR_NONE);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_int_equal(d.row, 0);
    assert_int_equal(d.devs, BIT(0) | BIT(1));
    /* a media error another node read is the disk's, not a path: still
     * this row */
    report(&f, N3, 2, CLR_POL_ERR_PATH);
    report(&f, N1, 0, CLR_POL_ERR_MEDIA);
    d = decide(&f, &s);
    assert_int_equal(d.row, 4);
    assert_int_equal(d.nodes, BIT(N3));
    /* every member, but another node reports a path error on one too:
     * not this row */
    report(&f, N1, 0, CLR_POL_ERR_PATH);
    d = decide(&f, &s);
    assert_int_not_equal(d.row, 4);
    assert_int_equal(d.action, CLR_POL_NONE);
}

/* 5: more members fail everywhere than the redundancy: freeze, fail none;
 * as many as the redundancy: fail them (row 2) */
static void test_row5_several_disks_everywhere_freezes(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 3, 4);
    for (unsigned m = 1; m < 3; m++) {
        report(&f, N1, m, CLR_POL_ERR_PATH);
        report(&f, N2, m, CLR_POL_ERR_PATH);
        probes(&f, m, FAILED, FAILED, FAILED);
    }
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.row, 5);
    assert_int_equal(d.devs, BIT(1) | BIT(2));
    assert_int_equal(d.nodes, 0);
    f.redundancy = 2;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.row, 2);
    assert_int_equal(d.devs, BIT(1) | BIT(2));
}

/* 6: I/O hung on one node only: fence it once io_timeout has passed */
static void test_row6_hung_one_node_fences_after_io_timeout(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 3, 2);
    report(&f, N2, 0, CLR_POL_ERR_HUNG);
    probes(&f, 0, OK, PENDING, OK);
    f.dev[0].since_report_ms = s.io_timeout - 1;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_int_equal(d.row, 0);
    assert_int_equal(d.devs, 1);
    f.dev[0].since_report_ms = s.io_timeout;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.row, 6);
    assert_int_equal(d.nodes, BIT(N2));
    /* a hung I/O cannot be failed back to its client: fail-disk fences */
    s.path_failure_action = CLR_POL_PATH_FAIL_DISK;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    s.path_failure_action = CLR_POL_PATH_IGNORE;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_int_equal(d.row, 6);
    /* hung everywhere: the disk is down (row 2), nobody fenced */
    s = defaults();
    report(&f, N1, 0, CLR_POL_ERR_HUNG);
    report(&f, N3, 0, CLR_POL_ERR_HUNG);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.row, 2);
}

/* 7: EBADE on this node: it has been fenced; stop, even without quorum */
static void test_row7_ebade_stops(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    path_subset(&f);
    f.self = N2;
    f.decider = false;
    f.quorate = false;
    report(&f, N2, 0, CLR_POL_ERR_RESV);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_STOP);
    assert_int_equal(d.row, 7);
    assert_string_equal(d.evidence, "stop: reservation conflict (EBADE) on disk0: node 2 has been fenced");
    /* on the decider, another node's EBADE means that node is fenced: its
     * reports no longer count, nothing left to decide */
    f.self = N1;
    f.decider = true;
    f.quorate = true;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_int_equal(d.row, 0);
}

/* 8: without quorum the decider decides nothing but freeze */
static void test_row8_not_quorate_freezes(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    path_subset(&f);
    f.quorate = false;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.row, 8);
    assert_int_equal(d.nodes, 0);
    assert_int_equal(d.devs, 0);
    /* and a non-decider with quorum leaves it to the decider */
    f.quorate = true;
    f.decider = false;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_int_equal(d.row, 0);
}

/* 9: fencing failed: stay frozen, fail no disk, retry the fencing after
 * confirm_timeout */
static void test_row9_fence_failed_stays_frozen(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    path_subset(&f);
    /* disk0 fails everywhere too: row 2 would fail it */
    report(&f, N1, 0, CLR_POL_ERR_PATH);
    probes(&f, 0, FAILED, FAILED, FAILED);
    f.node[N2].fence = CLR_POL_FENCE_FAILED;
    f.node[N2].since_fence_ms = s.confirm_timeout - 1;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.row, 9);
    assert_int_equal(d.nodes, 0);
    assert_int_equal(d.devs, 0);
    f.node[N2].since_fence_ms = s.confirm_timeout;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.nodes, BIT(N2));
    assert_string_equal(d.evidence,
                        "freeze: fencing node 2 failed or timed out; no disk failed; retrying node 2");
    /* requested, not done: wait */
    f.node[N2].fence = CLR_POL_FENCE_REQUESTED;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_int_equal(d.row, 0);
    /* done: node 2 no longer counts; disk0 still fails on 1 and 3 */
    f.node[N2].fence = CLR_POL_FENCE_DONE;
    f.node[N2].online = false;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.devs, BIT(0));
}

/* 10: the last copy fails: freeze (bounded by freeze_timeout), error or
 * fence as last_device_action says */
static void test_row10_last_device_action(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 3, 2);
    f.redundancy = 0;
    report(&f, N1, 1, CLR_POL_ERR_PATH);
    report(&f, N2, 1, CLR_POL_ERR_PATH);
    probes(&f, 1, FAILED, FAILED, FAILED);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.row, 10);
    assert_int_equal(d.devs, BIT(1));
    /* default freeze_timeout 0: frozen until the operator */
    f.frozen = true;
    f.since_freeze_ms = UINT64_MAX / 2;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    s.freeze_timeout = 30000;
    f.since_freeze_ms = 29999;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    f.since_freeze_ms = 30000;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_ERROR);
    assert_int_equal(d.row, 10);
    assert_int_equal(d.nodes, 0);
    s.last_device_action = CLR_POL_LAST_ERROR;
    f.frozen = false;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_ERROR);
    s.last_device_action = CLR_POL_LAST_FENCE;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.row, 10);
    assert_int_equal(d.nodes, BIT(N1) | BIT(N2) | BIT(N3));
    /* a media error on the last copy cannot be rewritten either */
    s = defaults();
    base(&f, 3, 1);
    f.redundancy = 0;
    report(&f, N1, 0, CLR_POL_ERR_MEDIA);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.row, 10);
}

/* ---- boundaries ------------------------------------------------------ */

/* probes still pending wait until probe_timeout; then a pending probe has
 * failed */
static void test_probe_timeout_boundary(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    path_subset(&f);
    probes(&f, 1, OK, PENDING, OK);
    f.dev[1].since_report_ms = s.probe_timeout - 1;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_int_equal(d.devs, BIT(1));
    f.dev[1].since_report_ms = s.probe_timeout;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.row, 3);
    assert_int_equal(d.nodes, BIT(N2));
    f.dev[1].since_report_ms = s.probe_timeout + 1;
    assert_int_equal(decide(&f, &s).action, CLR_POL_FENCE);
    /* a probe never run by then has failed too: nodes 2 and 3 at fault,
     * node 1 alone would not be quorate */
    probes(&f, 1, OK, PENDING, NOT_RUN);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.row, 3);
    f.quorum_nodes = 1;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.nodes, BIT(N2) | BIT(N3));
    f.quorum_nodes = 0;
    /* all probes back before the deadline: decided at once */
    probes(&f, 1, OK, FAILED, OK);
    f.dev[1].since_report_ms = 0;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.nodes, BIT(N2));
}

/* a write waits at most confirm_timeout, even when probe_timeout is longer */
static void test_confirm_timeout_bounds_probes(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;

    (void)state;
    path_subset(&f);
    probes(&f, 1, OK, PENDING, OK);
    s.confirm_timeout = 5000;
    f.dev[1].since_report_ms = 4999;
    assert_int_equal(decide(&f, &s).action, CLR_POL_NONE);
    f.dev[1].since_report_ms = 5000;
    assert_int_equal(decide(&f, &s).action, CLR_POL_FENCE);
}

/* redundancy 1 fails the one member; 0 is the last copy (row 10) */
static void test_redundancy_boundary(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 2, 2);
    report(&f, N1, 0, CLR_POL_ERR_PATH);
    probes(&f, 0, FAILED, FAILED);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.devs, BIT(0));
    f.redundancy = 0;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.row, 10);
    /* and a media read error with none left is not rewritten */
    base(&f, 2, 2);
    report(&f, N1, 0, CLR_POL_ERR_MEDIA);
    assert_int_equal(decide(&f, &s).action, CLR_POL_REWRITE);
    f.redundancy = 0;
    assert_int_equal(decide(&f, &s).row, 10);
}

/* every probe passes: retry, unless a node reported error_threshold errors
 * in the window (a flaky path: row 3); never the disk on counts alone */
static void test_error_threshold_boundary(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    path_subset(&f);
    probes(&f, 1, OK, OK, OK);
    f.node[N2].errors[1] = (uint16_t)(s.error_threshold - 1);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_int_equal(d.row, 0);
    assert_int_equal(d.devs, BIT(1));
    assert_non_null(strstr(d.evidence, "every probe passed"));
    f.node[N2].errors[1] = (uint16_t)s.error_threshold;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.row, 3);
    assert_int_equal(d.nodes, BIT(N2));
    /* every node over the threshold: nobody's path stands out */
    f.node[N1].errors[1] = f.node[N3].errors[1] = (uint16_t)s.error_threshold;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    /* threshold 0: off */
    s.error_threshold = 0;
    f.node[N1].errors[1] = f.node[N3].errors[1] = 0;
    assert_int_equal(decide(&f, &s).action, CLR_POL_NONE);
}

/* a node that is offline, fenced, or has not the array active is no
 * witness: its reports and probes do not count */
static void test_only_live_nodes_count(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    path_subset(&f);
    f.node[N3].active = false;
    probes(&f, 1, FAILED, FAILED, OK);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FAIL_DISK);
    assert_int_equal(d.row, 2);
    f.node[N3].active = true;
    f.node[N3].online = false;
    assert_int_equal(decide(&f, &s).action, CLR_POL_FAIL_DISK);
    /* node 3 back: it reads and writes disk1, so nodes 1 and 2 are at
     * fault (and node 3 alone is no quorum of 3) */
    f.node[N3].online = true;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.row, 3);
    f.quorum_nodes = 1;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(d.nodes, BIT(N1) | BIT(N2));
}

static void test_bad_facts_freeze(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;

    (void)state;
    base(&f, 3, 2);
    f.self = 3;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FREEZE);
    assert_int_equal(d.row, 0);
    base(&f, 3, 2);
    f.n_devs = CLR_POL_MAX_DEVS + 1;
    assert_int_equal(decide(&f, &s).action, CLR_POL_FREEZE);
    base(&f, 3, 2);
    f.n_nodes = 0;
    assert_int_equal(decide(&f, &s).action, CLR_POL_FREEZE);
    /* nothing reported: nothing to do */
    base(&f, 3, 2);
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_NONE);
    assert_string_equal(d.evidence, "none: no errors");
}

/* long names are cut, the line stays terminated */
static void test_evidence_truncated(void **state)
{
    struct clr_pol_settings s = defaults();
    struct clr_pol_facts f;
    struct clr_pol_decision d;
    char longname[300];
    const char *names[3];

    (void)state;
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    names[0] = names[1] = names[2] = longname;
    path_subset(&f);
    f.node_names = names;
    d = decide(&f, &s);
    assert_int_equal(d.action, CLR_POL_FENCE);
    assert_int_equal(strlen(d.evidence), sizeof(d.evidence) - 1);
    assert_memory_equal(d.evidence, "fence xxx", 9);
}

static void test_errno_class(void **state)
{
    (void)state;
    assert_int_equal(clr_policy_errno_class(0), CLR_POL_ERR_NONE);
    assert_int_equal(clr_policy_errno_class(ENODATA), CLR_POL_ERR_MEDIA);
    assert_int_equal(clr_policy_errno_class(-EILSEQ), CLR_POL_ERR_MEDIA);
    assert_int_equal(clr_policy_errno_class(EREMOTEIO), CLR_POL_ERR_MEDIA);
    assert_int_equal(clr_policy_errno_class(-EIO), CLR_POL_ERR_PATH);
    assert_int_equal(clr_policy_errno_class(ENOLINK), CLR_POL_ERR_PATH);
    assert_int_equal(clr_policy_errno_class(ENODEV), CLR_POL_ERR_PATH);
    assert_int_equal(clr_policy_errno_class(ETIMEDOUT), CLR_POL_ERR_PATH);
    assert_int_equal(clr_policy_errno_class(-EBADE), CLR_POL_ERR_RESV);
    assert_int_equal(clr_policy_errno_class(ENOSPC), CLR_POL_ERR_PATH);
}

static void test_read_errors_decay(void **state)
{
    (void)state;
    assert_int_equal(clr_policy_read_errors_decay(20, 3599999), 20);
    assert_int_equal(clr_policy_read_errors_decay(20, 3600000), 10);
    assert_int_equal(clr_policy_read_errors_decay(21, 2 * 3600000), 5);
    assert_int_equal(clr_policy_read_errors_decay(UINT32_MAX, 32ull * 3600000), 0);
}

static void test_settings(void **state)
{
    struct clr_pol_settings s = defaults();
    const char *why = "unset";

    (void)state;
    assert_int_equal(s.path_failure_action, CLR_POL_PATH_FENCE);
    assert_int_equal(s.last_device_action, CLR_POL_LAST_FREEZE);
    assert_int_equal(s.max_read_errors, 20);
    assert_int_equal(clr_policy_settings_check(&s, &why), 0);
    assert_null(why);
    s.io_timeout = 0;
    assert_int_equal(clr_policy_settings_check(&s, &why), -EINVAL);
    assert_non_null(why);
    s = defaults();
    s.last_device_action = (enum clr_pol_last_action)7;
    assert_int_equal(clr_policy_settings_check(&s, &why), -EINVAL);
    assert_non_null(strstr(why, "last_device_action"));
    assert_string_equal(clr_policy_action_name(CLR_POL_FAIL_DISK), "fail-disk");
}

/* ---- random fact sets against the invariants --------------------------- */

static uint64_t rng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static unsigned rnd(uint64_t *x, unsigned n)
{
    return (unsigned)(rng(x) % n);
}

static uint64_t rnd_time(uint64_t *x)
{
    static const uint64_t t[] = { 0, 4999, 5000, 9999, 10000, 14999, 15000, 59999, 60000, 100000 };

    return t[rnd(x, sizeof(t) / sizeof(t[0]))];
}

static void random_facts(uint64_t *x, struct clr_pol_facts *f, struct clr_pol_settings *s)
{
    unsigned n = rnd(x, 10) < 8 ? 1 + rnd(x, 5) : 1 + rnd(x, CLR_POL_MAX_NODES);
    unsigned m = rnd(x, 10) < 8 ? 1 + rnd(x, 6) : 1 + rnd(x, CLR_POL_MAX_DEVS);

    base(f, n, m);
    clr_policy_settings_default(s);
    s->path_failure_action = (enum clr_pol_path_action)rnd(x, 3);
    s->last_device_action = (enum clr_pol_last_action)rnd(x, 3);
    s->fence_action = (enum clr_pol_fence_action)rnd(x, 2);
    s->freeze_timeout = rnd(x, 2) ? 30000 : 0;
    s->confirm_timeout = rnd(x, 4) ? 15000 : 5000;
    s->error_threshold = rnd(x, 4) ? 10 : 0;
    f->self = rnd(x, n);
    f->quorate = rnd(x, 10) != 0;
    f->decider = rnd(x, 8) != 0;
    f->quorum_nodes = rnd(x, 3) ? 0 : rnd(x, n + 1);
    f->redundancy = rnd(x, 4);
    f->frozen = rnd(x, 2);
    f->since_freeze_ms = rnd(x, 2) ? 30000 - 1 + rnd(x, 3) : rnd_time(x);
    for (unsigned i = 0; i < n; i++) {
        struct clr_pol_node *nd = &f->node[i];

        nd->online = rnd(x, 10) != 0;
        nd->active = rnd(x, 10) != 0;
        nd->fence = rnd(x, 8) ? CLR_POL_FENCE_NONE : (uint8_t)rnd(x, 4);
        nd->since_fence_ms = rnd_time(x);
    }
    if (rnd(x, 10) == 0) {
        /* row 4's picture */
        unsigned bad = rnd(x, n);

        for (unsigned d = 0; d < m; d++)
            f->node[bad].err[d] = CLR_POL_ERR_PATH;
        return;
    }
    for (unsigned d = 0; d < m; d++) {
        unsigned cls = rnd(x, 20);
        enum clr_pol_err e = cls < 5    ? CLR_POL_ERR_MEDIA
                             : cls < 15 ? CLR_POL_ERR_PATH
                             : cls < 19 ? CLR_POL_ERR_HUNG
                                        : CLR_POL_ERR_RESV;
        unsigned shape = rnd(x, 3); /* 0: some nodes fail, 1: all, 2: none */

        if (rnd(x, 10) < 6)
            continue;
        f->dev[d].since_report_ms = rnd_time(x);
        f->dev[d].media_on_write = rnd(x, 4) == 0;
        f->dev[d].read_errors = 18 + rnd(x, 5);
        for (unsigned i = 0; i < n; i++) {
            struct clr_pol_node *nd = &f->node[i];
            bool fails = shape == 1 || (shape == 0 && rnd(x, 2));

            nd->errors[d] = (uint16_t)rnd(x, 13);
            if (fails) {
                nd->err[d] = rnd(x, 4) ? (uint8_t)e : (uint8_t)rnd(x, 5);
                nd->probe[d] = rnd(x, 4) ? FAILED : (uint8_t)rnd(x, 4);
            } else {
                nd->err[d] = rnd(x, 10) ? CLR_POL_ERR_NONE : (uint8_t)rnd(x, 5);
                nd->probe[d] = rnd(x, 4) ? OK : (uint8_t)rnd(x, 4);
            }
        }
    }
}

static bool reports_resv(const struct clr_pol_facts *f, unsigned n)
{
    for (unsigned d = 0; d < f->n_devs; d++)
        if (f->node[n].err[d] == CLR_POL_ERR_RESV)
            return true;
    return false;
}

static bool is_live(const struct clr_pol_facts *f, unsigned n)
{
    const struct clr_pol_node *nd = &f->node[n];

    return nd->online && nd->active && nd->fence != CLR_POL_FENCE_DONE && !reports_resv(f, n);
}

/* some live node reads and writes member d (its probe passed, it reports
 * nothing) while another live node reports a path error or a hang on it */
static bool path_fault_with_good_node(const struct clr_pol_facts *f, unsigned d)
{
    bool good = false, path = false;

    for (unsigned n = 0; n < f->n_nodes; n++) {
        if (!is_live(f, n))
            continue;
        good |= f->node[n].probe[d] == OK && f->node[n].err[d] == CLR_POL_ERR_NONE;
        path |= f->node[n].err[d] == CLR_POL_ERR_PATH || f->node[n].err[d] == CLR_POL_ERR_HUNG ||
                f->node[n].probe[d] == FAILED;
    }
    return good && path;
}

static void check_invariants(const struct clr_pol_facts *f, const struct clr_pol_settings *s,
                             const struct clr_pol_decision *o)
{
    bool self_resv = reports_resv(f, f->self);
    uint32_t all_nodes = f->n_nodes == 32 ? UINT32_MAX : (1u << f->n_nodes) - 1;
    uint64_t all_devs = f->n_devs == 64 ? UINT64_MAX : (1ull << f->n_devs) - 1;
    bool fence_failed = false;

    for (unsigned n = 0; n < f->n_nodes; n++)
        fence_failed |= f->node[n].fence == CLR_POL_FENCE_FAILED;
    assert_true(o->row <= 10);
    assert_true(o->action <= CLR_POL_STOP);
    assert_int_equal(o->nodes & ~all_nodes, 0);
    assert_int_equal(o->devs & ~all_devs, 0);
    /* a fenced node stops; nobody else does */
    assert_true((o->action == CLR_POL_STOP) == self_resv);
    if (self_resv)
        return;
    /* a non-quorate decider decides nothing but freeze */
    if (!f->quorate) {
        assert_int_equal(o->action, CLR_POL_FREEZE);
        assert_int_equal(o->nodes, 0);
        return;
    }
    if (!f->decider) {
        assert_int_equal(o->action, CLR_POL_NONE);
        return;
    }
    /* fencing failed: frozen, no disk failed */
    if (fence_failed)
        assert_int_equal(o->action, CLR_POL_FREEZE);
    if (o->action == CLR_POL_FENCE) {
        assert_true(o->nodes != 0);
        assert_int_equal(o->fence_action, s->fence_action);
        if (o->row != 10) {
            /* node faults leave quorate survivors */
            unsigned need = f->quorum_nodes ? f->quorum_nodes : f->n_nodes / 2 + 1, left = 0;

            for (unsigned n = 0; n < f->n_nodes; n++)
                left +=
                    f->node[n].online && f->node[n].fence != CLR_POL_FENCE_DONE && !(o->nodes & (1u << n));
            assert_true(left >= need);
            assert_true(s->path_failure_action != CLR_POL_PATH_IGNORE);
        }
    }
    if (o->action == CLR_POL_FAIL_DISK) {
        assert_true(o->devs != 0);
        /* never more than the redundancy left */
        assert_true((unsigned)__builtin_popcountll(o->devs) <= f->redundancy);
        /* never a disk a node still reads and writes when another node's
         * path fails it, unless the operator chose md's way for that
         * (path_failure_action=fail-disk) */
        for (unsigned d = 0; d < f->n_devs; d++)
            if ((o->devs & (1ull << d)) && s->path_failure_action != CLR_POL_PATH_FAIL_DISK)
                assert_false(path_fault_with_good_node(f, d));
    }
    if (o->action == CLR_POL_REWRITE)
        assert_true(f->redundancy >= 1);
}

static void test_random_invariants(void **state)
{
    const char *env = getenv("CLR_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    uint64_t x = seed ? seed : 1;
    unsigned rows[11] = { 0 };
    unsigned iters = 30000;
    struct clr_pol_facts f;
    struct clr_pol_settings s;

    (void)state;
    printf("test_random_invariants: CLR_SEED=%llu\n", (unsigned long long)seed);
    for (unsigned i = 0; i < iters; i++) {
        struct clr_pol_decision a, b;

        random_facts(&x, &f, &s);
        clr_policy_decide(&f, &s, &a);
        check_invariants(&f, &s, &a);
        /* pure: the same facts, the same decision */
        memset(&b, 0x5a, sizeof(b));
        clr_policy_decide(&f, &s, &b);
        assert_memory_equal(&a, &b, offsetof(struct clr_pol_decision, evidence));
        assert_string_equal(a.evidence, b.evidence);
        rows[a.row]++;
    }
    /* the generator reaches every row, so the invariants were tried on each */
    for (unsigned r = 0; r <= 10; r++) {
        printf("  row %2u: %u\n", r, rows[r]);
        assert_true(rows[r] > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row1_media_read_rewrites),
        cmocka_unit_test(test_row1_media_beyond_max_read_errors_fails),
        cmocka_unit_test(test_row1_media_on_write_fails),
        cmocka_unit_test(test_row2_probe_fails_everywhere_fails_disk),
        cmocka_unit_test(test_row3_path_failure_subset_fences),
        cmocka_unit_test(test_row3_path_failure_actions),
        cmocka_unit_test(test_stale_failed_probe_decides_nothing),
        cmocka_unit_test(test_member_out_decides_nothing),
        cmocka_unit_test(test_row3_survivors_not_quorate_freezes),
        cmocka_unit_test(test_row4_one_node_all_members_fences),
        cmocka_unit_test(test_row5_several_disks_everywhere_freezes),
        cmocka_unit_test(test_row6_hung_one_node_fences_after_io_timeout),
        cmocka_unit_test(test_row7_ebade_stops),
        cmocka_unit_test(test_row8_not_quorate_freezes),
        cmocka_unit_test(test_row9_fence_failed_stays_frozen),
        cmocka_unit_test(test_row10_last_device_action),
        cmocka_unit_test(test_probe_timeout_boundary),
        cmocka_unit_test(test_confirm_timeout_bounds_probes),
        cmocka_unit_test(test_redundancy_boundary),
        cmocka_unit_test(test_error_threshold_boundary),
        cmocka_unit_test(test_only_live_nodes_count),
        cmocka_unit_test(test_bad_facts_freeze),
        cmocka_unit_test(test_evidence_truncated),
        cmocka_unit_test(test_errno_class),
        cmocka_unit_test(test_read_errors_decay),
        cmocka_unit_test(test_settings),
        cmocka_unit_test(test_random_invariants),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
