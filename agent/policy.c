/*
 * clraid policy decision core (see policy.h): the table of issue 15, as a
 * table of rows tried in order; the first row that applies decides.
 *
 * Precedence, and why:
 *   7   this node reports EBADE: it has been fenced (SCSI-3 PR).  Stop I/O
 *       and leave, whatever else holds: its writes are refused anyway, and
 *       stopping needs neither quorum nor a decider.
 *   8   no quorum: decide nothing, freeze.  A minority may be the side
 *       that is cut off; it must neither fence nor fail a disk.
 *   0   not the decider: nothing (the DC, or the lowest id running the
 *       array, acts).
 *   9   fencing of some node failed or timed out: stay frozen, retry the
 *       fencing (after confirm_timeout); fail no disk meanwhile, since the
 *       node at fault may still be writing.
 *   0   fencing requested and not yet done: wait for it.
 *   4   one node errors (path) on all members, the others are fine: its
 *       HBA or fabric; fenced without waiting for probes.
 *   3   a member fails its probe on some nodes only: those nodes' paths.
 *   6   I/O hung on some nodes only, for io_timeout: fence them.
 *       Node faults (4, 3, 6) come before any disk is failed: a disk that
 *       other nodes read and write is not at fault, and failing it would
 *       cost redundancy for a cable.  Fencing needs quorate survivors;
 *       without them: freeze.
 *   0   probes (or a hang) still within their deadline: wait.  No disk is
 *       failed while another member's verdict is pending: a shared fault
 *       (row 5) may be unfolding.
 *   5   more members fail everywhere than the redundancy left (two or
 *       more): a shared fault (controller, enclosure); freeze and fail
 *       none (openzfs #16531: faulting siblings one by one loses the pool).
 *   10  the last copy fails (redundancy 0): last_device_action.
 *   2   a member fails on every node, within the redundancy: fail it.
 *   1   a media error: rewrite from a good copy (md's corrected read),
 *       fail the disk beyond max_read_errors or on a write.
 *   0   nothing to do, or the error did not come back (retry).
 *
 * A device's verdict: the "live" nodes are online, have the array active,
 * are not fenced and report no EBADE; only their reports and probes count.
 * A probe that has not succeeded by its deadline (the first report +
 * min(probe_timeout, confirm_timeout); io_timeout when a node reports a
 * hang) has failed.  A node whose probe passes but that reported
 * error_threshold errors in error_window has a bad path too, as long as
 * another node is clean (so the disk itself is never blamed on counts).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"

/* a member's verdict */
enum dev_kind {
    DK_CLEAN,
    DK_PENDING,
    DK_TRANSIENT,  /* reported, but every probe passed */
    DK_REWRITE,    /* media error on a read, redundancy left */
    DK_MEDIA_FAIL, /* media error beyond the corrected-read rule */
    DK_EVERYWHERE, /* fails on every live node */
    DK_NODES_PATH, /* fails on some live nodes only */
    DK_NODES_HUNG, /* ... and hung on some of them */
};

struct ana {
    const struct clr_pol_facts *f;
    const struct clr_pol_settings *s;
    uint32_t online; /* in the membership, not fenced */
    uint32_t live;
    uint8_t kind[CLR_POL_MAX_DEVS];
    uint32_t bad[CLR_POL_MAX_DEVS]; /* live nodes that fail the member */
    uint32_t ok[CLR_POL_MAX_DEVS];  /* live nodes that read and wrote it */
    uint64_t of_kind[DK_NODES_HUNG + 1];
    int row4_node; /* -1: none */
};

struct ev {
    char *p;
    size_t cap, len;
};

static void ev_add(struct ev *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void ev_add(struct ev *e, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (e->len + 1 >= e->cap)
        return;
    va_start(ap, fmt);
    n = vsnprintf(e->p + e->len, e->cap - e->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        e->len = e->len + (size_t)n < e->cap ? e->len + (size_t)n : e->cap - 1;
}

static void ev_node(struct ev *e, const struct clr_pol_facts *f, unsigned n)
{
    if (f->node_names && f->node_names[n])
        ev_add(e, "%s", f->node_names[n]);
    else
        ev_add(e, "node %u", (unsigned)f->node[n].id);
}

static void ev_nodes(struct ev *e, const struct clr_pol_facts *f, uint32_t mask)
{
    const char *sep = "";

    for (unsigned n = 0; n < f->n_nodes; n++) {
        if (!(mask & (1u << n)))
            continue;
        ev_add(e, "%s", sep);
        ev_node(e, f, n);
        sep = ", ";
    }
}

static void ev_dev(struct ev *e, const struct clr_pol_facts *f, unsigned d)
{
    if (f->dev_names && f->dev_names[d])
        ev_add(e, "%s", f->dev_names[d]);
    else
        ev_add(e, "disk%u", d);
}

static void ev_devs(struct ev *e, const struct clr_pol_facts *f, uint64_t mask)
{
    const char *sep = "";

    for (unsigned d = 0; d < f->n_devs; d++) {
        if (!(mask & (1ull << d)))
            continue;
        ev_add(e, "%s", sep);
        ev_dev(e, f, d);
        sep = ", ";
    }
}

static int first_dev(uint64_t mask)
{
    return mask ? __builtin_ctzll(mask) : -1;
}

static unsigned popcount64(uint64_t m)
{
    return (unsigned)__builtin_popcountll(m);
}

static void decided(struct clr_pol_decision *o, enum clr_pol_action act, unsigned row, uint64_t devs,
                    uint32_t nodes)
{
    o->action = act;
    o->row = row;
    o->devs = devs;
    o->nodes = nodes;
}

static struct ev ev_of(struct clr_pol_decision *o)
{
    struct ev e = { o->evidence, sizeof(o->evidence), 0 };

    o->evidence[0] = '\0';
    return e;
}

/* ---- the per-member verdict ---------------------------------------- */

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static void judge_dev(struct ana *a, unsigned d)
{
    const struct clr_pol_facts *f = a->f;
    const struct clr_pol_settings *s = a->s;
    uint32_t reporters = 0, media = 0, hung = 0, probe_failed = 0, unfinished = 0, bad, ok;
    uint64_t deadline;

    for (unsigned n = 0; n < f->n_nodes; n++) {
        const struct clr_pol_node *nd = &f->node[n];
        uint32_t bit = 1u << n;

        if (!(a->live & bit))
            continue;
        if (nd->err[d] != CLR_POL_ERR_NONE)
            reporters |= bit;
        if (nd->err[d] == CLR_POL_ERR_MEDIA)
            media |= bit;
        if (nd->err[d] == CLR_POL_ERR_HUNG)
            hung |= bit;
        if (nd->probe[d] == CLR_POL_PROBE_FAILED)
            probe_failed |= bit;
        else if (nd->probe[d] != CLR_POL_PROBE_OK)
            unfinished |= bit;
    }
    a->kind[d] = DK_CLEAN;
    if (f->dev[d].out)
        return;
    /* probes answer reports: with none left (the member failed
     * cluster-wide, or the errors left the window), a failed probe that
     * a daemon has not withdrawn yet is no evidence of anything */
    if (!reporters)
        return;
    if (reporters == media && !probe_failed) {
        /* the disk's content: md's corrected-read rule, no probe */
        a->bad[d] = media;
        if (f->redundancy == 0 || f->dev[d].media_on_write || f->dev[d].read_errors > s->max_read_errors)
            a->kind[d] = DK_MEDIA_FAIL;
        else
            a->kind[d] = DK_REWRITE;
        return;
    }
    deadline = min64(s->probe_timeout, s->confirm_timeout);
    if (hung && s->io_timeout > deadline)
        deadline = s->io_timeout;
    if (f->dev[d].since_report_ms < deadline && (hung || unfinished)) {
        a->kind[d] = DK_PENDING;
        return;
    }
    bad = hung | probe_failed | unfinished;
    ok = a->live & ~bad;
    if (s->error_threshold) {
        uint32_t flaky = 0;

        for (unsigned n = 0; n < f->n_nodes; n++)
            if ((ok & (1u << n)) && f->node[n].errors[d] >= s->error_threshold)
                flaky |= 1u << n;
        if (ok & ~flaky) {
            bad |= flaky;
            ok &= ~flaky;
        }
    }
    a->bad[d] = bad;
    a->ok[d] = ok;
    if (!bad)
        a->kind[d] = DK_TRANSIENT;
    else if (!ok)
        a->kind[d] = DK_EVERYWHERE;
    else
        a->kind[d] = bad & hung ? DK_NODES_HUNG : DK_NODES_PATH;
}

/* row 4: exactly one live node reports a path error on every member in
 * use, no other live node reports (but media errors) or failed a probe on
 * any */
static int judge_row4(const struct ana *a)
{
    const struct clr_pol_facts *f = a->f;
    unsigned used = 0;
    int node = -1;

    for (unsigned d = 0; d < f->n_devs; d++)
        used += !f->dev[d].out;
    if (used < 2)
        return -1;
    for (unsigned n = 0; n < f->n_nodes; n++) {
        const struct clr_pol_node *nd = &f->node[n];
        unsigned path = 0, other = 0;

        if (!(a->live & (1u << n)))
            continue;
        for (unsigned d = 0; d < f->n_devs; d++) {
            if (f->dev[d].out)
                continue;
            if (nd->err[d] == CLR_POL_ERR_PATH)
                path++;
            /* a media error is the disk's content, not a path: it does
             * not make another node's HBA suspect */
            else if ((nd->err[d] != CLR_POL_ERR_NONE && nd->err[d] != CLR_POL_ERR_MEDIA) ||
                     nd->probe[d] == CLR_POL_PROBE_FAILED)
                other++;
        }
        if (path == used && node < 0)
            node = (int)n;
        else if (path || other)
            return -1;
    }
    if (node < 0 || !(a->live & ~(1u << node)))
        return -1;
    return node;
}

static void analyse(struct ana *a, const struct clr_pol_facts *f, const struct clr_pol_settings *s)
{
    memset(a, 0, sizeof(*a));
    a->f = f;
    a->s = s;
    for (unsigned n = 0; n < f->n_nodes; n++) {
        const struct clr_pol_node *nd = &f->node[n];
        bool resv = false;

        for (unsigned d = 0; d < f->n_devs; d++)
            resv |= nd->err[d] == CLR_POL_ERR_RESV;
        if (!nd->online || nd->fence == CLR_POL_FENCE_DONE)
            continue;
        a->online |= 1u << n;
        if (nd->active && !resv)
            a->live |= 1u << n;
    }
    for (unsigned d = 0; d < f->n_devs; d++) {
        judge_dev(a, d);
        a->of_kind[a->kind[d]] |= 1ull << d;
    }
    a->row4_node = judge_row4(a);
}

/* survivors of fencing `nodes` keep quorum */
static bool survivors_quorate(const struct ana *a, uint32_t nodes)
{
    unsigned need = a->f->quorum_nodes ? a->f->quorum_nodes : a->f->n_nodes / 2 + 1;

    return (unsigned)__builtin_popcount(a->online & ~nodes) >= need;
}

/* ---- the rows ------------------------------------------------------- */

static bool row7_reservation_conflict(const struct ana *a, struct clr_pol_decision *o)
{
    const struct clr_pol_facts *f = a->f;
    struct ev e;
    int d = -1;

    for (unsigned i = 0; i < f->n_devs && d < 0; i++)
        if (f->node[f->self].err[i] == CLR_POL_ERR_RESV)
            d = (int)i;
    if (d < 0)
        return false;
    decided(o, CLR_POL_STOP, 7, 1ull << d, 1u << f->self);
    e = ev_of(o);
    ev_add(&e, "stop: reservation conflict (EBADE) on ");
    ev_dev(&e, f, (unsigned)d);
    ev_add(&e, ": ");
    ev_node(&e, f, f->self);
    ev_add(&e, " has been fenced");
    return true;
}

static bool row8_not_quorate(const struct ana *a, struct clr_pol_decision *o)
{
    struct ev e;

    if (a->f->quorate)
        return false;
    decided(o, CLR_POL_FREEZE, 8, 0, 0);
    e = ev_of(o);
    ev_add(&e, "freeze: ");
    ev_node(&e, a->f, a->f->self);
    ev_add(&e, " has no quorum; deciding nothing");
    return true;
}

static bool row0_not_decider(const struct ana *a, struct clr_pol_decision *o)
{
    struct ev e;

    if (a->f->decider)
        return false;
    decided(o, CLR_POL_NONE, 0, 0, 0);
    e = ev_of(o);
    ev_add(&e, "none: not the decider");
    return true;
}

static bool row9_fencing_failed(const struct ana *a, struct clr_pol_decision *o)
{
    const struct clr_pol_facts *f = a->f;
    uint32_t failed = 0, retry = 0;
    struct ev e;

    for (unsigned n = 0; n < f->n_nodes; n++) {
        if (f->node[n].fence != CLR_POL_FENCE_FAILED)
            continue;
        failed |= 1u << n;
        if (f->node[n].since_fence_ms >= a->s->confirm_timeout)
            retry |= 1u << n;
    }
    if (!failed)
        return false;
    decided(o, CLR_POL_FREEZE, 9, 0, retry);
    e = ev_of(o);
    ev_add(&e, "freeze: fencing ");
    ev_nodes(&e, f, failed);
    ev_add(&e, " failed or timed out; no disk failed; ");
    if (retry) {
        ev_add(&e, "retrying ");
        ev_nodes(&e, f, retry);
    } else {
        ev_add(&e, "retry after confirm_timeout");
    }
    return true;
}

static bool row0_fencing_pending(const struct ana *a, struct clr_pol_decision *o)
{
    const struct clr_pol_facts *f = a->f;
    uint32_t pending = 0;
    struct ev e;

    for (unsigned n = 0; n < f->n_nodes; n++)
        if (f->node[n].fence == CLR_POL_FENCE_REQUESTED)
            pending |= 1u << n;
    if (!pending)
        return false;
    decided(o, CLR_POL_NONE, 0, 0, 0);
    e = ev_of(o);
    ev_add(&e, "wait: fencing of ");
    ev_nodes(&e, f, pending);
    ev_add(&e, " requested");
    return true;
}

/* rows 3, 4 and 6: `nodes` cannot reach `devs` that others reach */
static void node_fault(const struct ana *a, struct clr_pol_decision *o, unsigned row, uint32_t nodes,
                       uint64_t devs, const char *what)
{
    const struct clr_pol_facts *f = a->f;
    enum clr_pol_path_action pa = a->s->path_failure_action;
    int d = first_dev(devs);
    struct ev e;

    /* fail-disk fails the disk cluster-wide, as md does, for a path
     * failure (row 3) the redundancy covers.  A hung I/O cannot be failed
     * back to its client (row 6), a node that lost every member (row 4)
     * or more disks than the redundancy left would take the array down:
     * those nodes are fenced instead. */
    if (pa == CLR_POL_PATH_FAIL_DISK && (row != 3 || popcount64(devs) > f->redundancy))
        pa = CLR_POL_PATH_FENCE;
    e = ev_of(o);
    if (pa == CLR_POL_PATH_IGNORE) {
        decided(o, CLR_POL_NONE, row, devs, 0);
        ev_add(&e, "none (path_failure_action=ignore): ");
    } else if (pa == CLR_POL_PATH_FAIL_DISK) {
        decided(o, CLR_POL_FAIL_DISK, row, devs, 0);
        ev_add(&e, "fail ");
        ev_devs(&e, f, devs);
        ev_add(&e, " cluster-wide (path_failure_action=fail-disk): ");
    } else if (!survivors_quorate(a, nodes)) {
        decided(o, CLR_POL_FREEZE, row, devs, 0);
        ev_add(&e, "freeze (survivors of fencing ");
        ev_nodes(&e, f, nodes);
        ev_add(&e, " would not be quorate): ");
    } else {
        decided(o, CLR_POL_FENCE, row, 0, nodes);
        o->fence_action = a->s->fence_action;
        ev_add(&e, "fence ");
        ev_nodes(&e, f, nodes);
        ev_add(&e, ": ");
    }
    if (row == 4) {
        ev_add(&e, "%s on all %u members; ", what, f->n_devs);
        ev_nodes(&e, f, a->live & ~nodes);
        ev_add(&e, " report none");
        return;
    }
    ev_dev(&e, f, (unsigned)d);
    ev_add(&e, " %s on ", what);
    ev_nodes(&e, f, a->bad[d]);
    ev_add(&e, " only; ");
    ev_nodes(&e, f, a->ok[d]);
    ev_add(&e, " read and wrote it");
    if (popcount64(devs) > 1)
        ev_add(&e, " (and %u more members)", popcount64(devs) - 1);
}

static bool row4_node_errors_everywhere(const struct ana *a, struct clr_pol_decision *o)
{
    if (a->row4_node < 0)
        return false;
    node_fault(a, o, 4, 1u << a->row4_node, 0, "path errors");
    return true;
}

static uint32_t bad_of(const struct ana *a, uint64_t devs)
{
    uint32_t nodes = 0;

    for (unsigned d = 0; d < a->f->n_devs; d++)
        if (devs & (1ull << d))
            nodes |= a->bad[d];
    return nodes;
}

static bool row3_path_failure_subset(const struct ana *a, struct clr_pol_decision *o)
{
    uint64_t devs = a->of_kind[DK_NODES_PATH];

    if (!devs)
        return false;
    node_fault(a, o, 3, bad_of(a, devs), devs, "failed");
    return true;
}

static bool row6_hung_subset(const struct ana *a, struct clr_pol_decision *o)
{
    uint64_t devs = a->of_kind[DK_NODES_HUNG];

    if (!devs)
        return false;
    node_fault(a, o, 6, bad_of(a, devs), devs, "hung or failed");
    return true;
}

static bool row0_pending(const struct ana *a, struct clr_pol_decision *o)
{
    uint64_t devs = a->of_kind[DK_PENDING];
    struct ev e;

    if (!devs)
        return false;
    decided(o, CLR_POL_NONE, 0, devs, 0);
    e = ev_of(o);
    ev_add(&e, "wait: ");
    ev_devs(&e, a->f, devs);
    ev_add(&e, ": probes or a hang within their deadline");
    return true;
}

static uint64_t failing(const struct ana *a)
{
    return a->of_kind[DK_EVERYWHERE] | a->of_kind[DK_MEDIA_FAIL];
}

static bool row5_shared_fault(const struct ana *a, struct clr_pol_decision *o)
{
    uint64_t devs = failing(a);
    unsigned k = popcount64(devs);
    struct ev e;

    if (k < 2 || k <= a->f->redundancy)
        return false;
    decided(o, CLR_POL_FREEZE, 5, devs, 0);
    e = ev_of(o);
    ev_add(&e, "freeze: %u members fail on every node (", k);
    ev_devs(&e, a->f, devs);
    ev_add(&e, "), redundancy %u: a shared fault, none failed", a->f->redundancy);
    return true;
}

static bool row10_last_device(const struct ana *a, struct clr_pol_decision *o)
{
    const struct clr_pol_facts *f = a->f;
    const struct clr_pol_settings *s = a->s;
    uint64_t devs = failing(a);
    uint32_t nodes = bad_of(a, devs);
    struct ev e;

    if (!devs || popcount64(devs) <= f->redundancy)
        return false;
    e = ev_of(o);
    switch (s->last_device_action) {
    case CLR_POL_LAST_ERROR:
        decided(o, CLR_POL_ERROR, 10, devs, 0);
        ev_add(&e, "error (last_device_action=error): ");
        break;
    case CLR_POL_LAST_FENCE:
        decided(o, CLR_POL_FENCE, 10, devs, nodes);
        o->fence_action = s->fence_action;
        ev_add(&e, "fence ");
        ev_nodes(&e, f, nodes);
        ev_add(&e, " (last_device_action=fence): ");
        break;
    default:
        if (f->frozen && s->freeze_timeout && f->since_freeze_ms >= s->freeze_timeout) {
            decided(o, CLR_POL_ERROR, 10, devs, 0);
            ev_add(&e,
                   "error: frozen for %llu ms >= freeze_timeout: ", (unsigned long long)f->since_freeze_ms);
        } else {
            decided(o, CLR_POL_FREEZE, 10, devs, 0);
            ev_add(&e, "freeze (last_device_action=freeze): ");
        }
        break;
    }
    ev_devs(&e, f, devs);
    ev_add(&e, " was the last copy and fails on ");
    ev_nodes(&e, f, nodes);
    return true;
}

static bool row2_fails_everywhere(const struct ana *a, struct clr_pol_decision *o)
{
    uint64_t devs = a->of_kind[DK_EVERYWHERE];
    struct ev e;

    if (!devs)
        return false;
    devs |= a->of_kind[DK_MEDIA_FAIL];
    decided(o, CLR_POL_FAIL_DISK, 2, devs, 0);
    e = ev_of(o);
    ev_add(&e, "fail ");
    ev_devs(&e, a->f, devs);
    ev_add(&e, ": fails on every node (");
    ev_nodes(&e, a->f, bad_of(a, devs));
    ev_add(&e, "), redundancy %u", a->f->redundancy);
    return true;
}

static bool row1_media(const struct ana *a, struct clr_pol_decision *o)
{
    const struct clr_pol_facts *f = a->f;
    uint64_t fail = a->of_kind[DK_MEDIA_FAIL], rewrite = a->of_kind[DK_REWRITE];
    int d;
    struct ev e;

    if (!fail && !rewrite)
        return false;
    e = ev_of(o);
    if (fail) {
        d = first_dev(fail);
        decided(o, CLR_POL_FAIL_DISK, 1, fail, 0);
        ev_add(&e, "fail ");
        ev_devs(&e, f, fail);
        ev_add(&e, ": media error");
        if (f->dev[d].media_on_write)
            ev_add(&e, " on a write");
        else
            ev_add(&e, ", %u corrected reads > max_read_errors %u", (unsigned)f->dev[d].read_errors,
                   (unsigned)a->s->max_read_errors);
        ev_add(&e, "; redundancy %u", f->redundancy);
        return true;
    }
    d = first_dev(rewrite);
    decided(o, CLR_POL_REWRITE, 1, rewrite, 0);
    ev_add(&e, "rewrite ");
    ev_devs(&e, f, rewrite);
    ev_add(&e, " from a good copy: media error on a read reported by ");
    ev_nodes(&e, f, a->bad[d]);
    ev_add(&e, " (%u corrected reads)", (unsigned)f->dev[d].read_errors);
    return true;
}

static bool row0_nothing(const struct ana *a, struct clr_pol_decision *o)
{
    uint64_t devs = a->of_kind[DK_TRANSIENT];
    struct ev e;

    decided(o, CLR_POL_NONE, 0, devs, 0);
    e = ev_of(o);
    if (devs) {
        ev_add(&e, "retry: ");
        ev_devs(&e, a->f, devs);
        ev_add(&e, ": every probe passed");
    } else {
        ev_add(&e, "none: no errors");
    }
    return true;
}

static const struct pol_row {
    bool (*decide)(const struct ana *a, struct clr_pol_decision *o);
} pol_rows[] = {
    { row7_reservation_conflict },
    { row8_not_quorate },
    { row0_not_decider },
    { row9_fencing_failed },
    { row0_fencing_pending },
    { row4_node_errors_everywhere },
    { row3_path_failure_subset },
    { row6_hung_subset },
    { row0_pending },
    { row5_shared_fault },
    { row10_last_device },
    { row2_fails_everywhere },
    { row1_media },
    { row0_nothing },
};

enum clr_pol_action clr_policy_decide(const struct clr_pol_facts *f, const struct clr_pol_settings *s,
                                      struct clr_pol_decision *out)
{
    struct ana a;

    memset(out, 0, sizeof(*out));
    if (f->n_nodes == 0 || f->n_nodes > CLR_POL_MAX_NODES || f->n_devs > CLR_POL_MAX_DEVS ||
        f->self >= f->n_nodes) {
        struct ev e = ev_of(out);

        decided(out, CLR_POL_FREEZE, 0, 0, 0);
        ev_add(&e, "freeze: facts out of range (%u nodes, %u members, self %u)", f->n_nodes, f->n_devs,
               f->self);
        return out->action;
    }
    analyse(&a, f, s);
    for (size_t i = 0; i < sizeof(pol_rows) / sizeof(pol_rows[0]); i++)
        if (pol_rows[i].decide(&a, out))
            break;
    return out->action;
}

/* ---- helpers ---------------------------------------------------------- */

void clr_policy_settings_default(struct clr_pol_settings *s)
{
    *s = (struct clr_pol_settings){
        .path_failure_action = CLR_POL_PATH_FENCE,
        .last_device_action = CLR_POL_LAST_FREEZE,
        .fence_action = CLR_POL_FENCE_REBOOT,
        .freeze_timeout = 0,
        .confirm_timeout = 15000,
        .probe_timeout = 10000,
        .io_timeout = 60000,
        .error_threshold = 10,
        .error_window = 600000,
        .max_read_errors = 20,
    };
}

int clr_policy_settings_check(const struct clr_pol_settings *s, const char **why)
{
    const char *w = NULL;

    if ((unsigned)s->path_failure_action > CLR_POL_PATH_IGNORE)
        w = "path_failure_action must be fence, fail-disk or ignore";
    else if ((unsigned)s->last_device_action > CLR_POL_LAST_FENCE)
        w = "last_device_action must be freeze, error or fence";
    else if ((unsigned)s->fence_action > CLR_POL_FENCE_OFF)
        w = "fence_action must be reboot or off";
    else if (!s->probe_timeout || !s->confirm_timeout || !s->io_timeout)
        w = "probe_timeout, confirm_timeout and io_timeout must be above 0";
    else if (s->error_threshold && !s->error_window)
        w = "error_window must be above 0 when error_threshold is set";
    if (why)
        *why = w;
    return w ? -EINVAL : 0;
}

enum clr_pol_err clr_policy_errno_class(int err)
{
    if (err < 0)
        err = -err;
    switch (err) {
    case 0:
        return CLR_POL_ERR_NONE;
    case ENODATA:
    case EILSEQ:
    case EREMOTEIO:
        return CLR_POL_ERR_MEDIA;
    case EBADE:
        return CLR_POL_ERR_RESV;
    default:
        /* EIO, ENOLINK, ENODEV, ETIMEDOUT and anything unknown: the
         * probe tells the path from the disk */
        return CLR_POL_ERR_PATH;
    }
}

uint32_t clr_policy_read_errors_decay(uint32_t count, uint64_t since_ms)
{
    uint64_t hours = since_ms / 3600000;

    return hours >= 32 ? 0 : count >> hours;
}

const char *clr_policy_action_name(enum clr_pol_action a)
{
    static const char *const names[] = {
        [CLR_POL_NONE] = "none",   [CLR_POL_REWRITE] = "rewrite", [CLR_POL_FAIL_DISK] = "fail-disk",
        [CLR_POL_FENCE] = "fence", [CLR_POL_FREEZE] = "freeze",   [CLR_POL_ERROR] = "error",
        [CLR_POL_STOP] = "stop",
    };

    return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}
