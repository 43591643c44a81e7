/*
 * Unit tests of the replicated lockspace (lock_repl.c) on a simulated
 * CPG: a single agreed-order stream delivered to every member of the
 * sender's partition, configuration changes injected between messages
 * (virtual synchrony), scripted joins, deaths and partitions.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lock/lock_repl.h"

#define NN     5
#define MAXLOG 64

struct node {
    struct clr_repl *r;
    uint32_t nodeid, pid;
    bool in_group;
    int part;
    bool synced_cb, stale_cb;
    int nfx, nev;
    struct clr_lt_effect fx[MAXLOG];
    int fx_order[MAXLOG];
    struct clr_ls_event ev[MAXLOG];
    int ev_order[MAXLOG];
};

struct qmsg {
    struct qmsg *next;
    int from;
    int part;
    size_t len;
    uint8_t buf[];
};

static struct node nodes[NN];
static struct qmsg *qhead, *qtail;
static int order;

static void q_send(void *arg, const uint8_t *buf, size_t len)
{
    struct node *n = arg;
    struct qmsg *m = malloc(sizeof(*m) + len);

    m->next = NULL;
    m->from = (int)(n - nodes);
    m->part = n->part;
    m->len = len;
    memcpy(m->buf, buf, len);
    if (qtail)
        qtail->next = m;
    else
        qhead = m;
    qtail = m;
}

static void on_effect(void *arg, const struct clr_lt_effect *e)
{
    struct node *n = arg;

    assert_true(n->nfx < MAXLOG);
    n->fx_order[n->nfx] = ++order;
    n->fx[n->nfx++] = *e;
}

static void on_event(void *arg, const struct clr_ls_event *ev)
{
    struct node *n = arg;

    assert_true(n->nev < MAXLOG);
    n->ev_order[n->nev] = ++order;
    n->ev[n->nev++] = *ev;
}

static void on_synced(void *arg)
{
    ((struct node *)arg)->synced_cb = true;
}

static void on_stale(void *arg)
{
    ((struct node *)arg)->stale_cb = true;
}

static const struct clr_repl_ops ops = {
    .send = q_send,
    .effect = on_effect,
    .event = on_event,
    .synced = on_synced,
    .stale = on_stale,
};

/* Deliver everything queued, in order, to the sender's partition. */
static void pump(void)
{
    while (qhead) {
        struct qmsg *m = qhead;

        qhead = m->next;
        if (!qhead)
            qtail = NULL;
        for (int i = 0; i < NN; i++)
            if (nodes[i].in_group && nodes[i].part == m->part)
                clr_repl_deliver(nodes[i].r, nodes[m->from].nodeid, nodes[m->from].pid, m->buf, m->len);
        free(m);
    }
}

static int setup(void **state)
{
    (void)state;
    memset(nodes, 0, sizeof(nodes));
    for (int i = 0; i < NN; i++) {
        nodes[i].nodeid = (uint32_t)(i < 3 ? 1 : i); /* 0-2 share a node */
        nodes[i].pid = (uint32_t)(100 + i);
        nodes[i].r = clr_repl_new(nodes[i].nodeid, nodes[i].pid, &ops, &nodes[i]);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    pump();
    for (int i = 0; i < NN; i++)
        clr_repl_free(nodes[i].r);
    return 0;
}

static size_t view_of(int part, struct clr_repl_addr *out)
{
    size_t n = 0;

    for (int i = 0; i < NN; i++)
        if (nodes[i].in_group && nodes[i].part == part)
            out[n++] = (struct clr_repl_addr){ nodes[i].nodeid, nodes[i].pid, 0 };
    return n;
}

/* A configuration change in partition @part: @who joined or left. */
static void confchg(int part, const int *who, int nwho, bool join, uint32_t reason)
{
    struct clr_repl_addr mem[NN], chg[NN];
    size_t nm;

    pump();
    for (int k = 0; k < nwho; k++) {
        chg[k] = (struct clr_repl_addr){ nodes[who[k]].nodeid, nodes[who[k]].pid, reason };
        nodes[who[k]].in_group = join;
        nodes[who[k]].part = part;
    }
    nm = view_of(part, mem);
    for (int i = 0; i < NN; i++)
        if (nodes[i].in_group && nodes[i].part == part)
            clr_repl_confchg(nodes[i].r, mem, nm, join ? NULL : chg, join ? 0 : (size_t)nwho,
                             join ? chg : NULL, join ? (size_t)nwho : 0);
    pump();
}

static void join1(int i)
{
    confchg(0, &i, 1, true, CLR_REPL_JOIN);
}

static void leave1(int i, uint32_t reason)
{
    confchg(nodes[i].part, &i, 1, false, reason);
}

static void op(int i, uint8_t type, uint64_t lkid, const char *name, int mode, unsigned flags,
               const char *lvb)
{
    struct clr_repl_msg m = { .type = type, .lkid = lkid, .mode = mode, .flags = flags };
    uint8_t buf[256];
    long len;

    if (name) {
        m.name = name;
        m.namelen = strlen(name);
    }
    if (lvb) {
        m.has_lvb = true;
        memcpy(m.lvb, lvb, strlen(lvb) + 1);
    }
    len = clr_repl_msg_encode(&m, buf, sizeof(buf));
    assert_true(len > 0);
    q_send(&nodes[i], buf, (size_t)len);
    pump();
}

static const struct clr_lt_effect *last_fx(int i, enum clr_lt_effect_type t)
{
    for (int k = nodes[i].nfx - 1; k >= 0; k--)
        if (nodes[i].fx[k].type == t)
            return &nodes[i].fx[k];
    return NULL;
}

static int find_ev(int i, enum clr_ls_event_type t)
{
    for (int k = 0; k < nodes[i].nev; k++)
        if (nodes[i].ev[k].type == t)
            return k;
    return -1;
}

static void assert_same_state(int a, int b)
{
    assert_true(clr_repl_synced(nodes[a].r));
    assert_true(clr_repl_synced(nodes[b].r));
    assert_int_equal(clr_repl_digest(nodes[a].r), clr_repl_digest(nodes[b].r));
}

static void test_msg_codec(void **state)
{
    struct clr_repl_msg m = { .type = CLR_REPL_MSG_REQUEST,
                              .lkid = 7,
                              .mode = 5,
                              .flags = 3,
                              .arg = 9,
                              .target_nodeid = 4,
                              .target_pid = 8,
                              .has_lvb = true,
                              .name = "abc",
                              .namelen = 3 },
                        d;
    uint8_t buf[128];
    long n;

    (void)state;
    m.lvb[31] = 0xee;
    n = clr_repl_msg_encode(&m, buf, sizeof(buf));
    assert_int_equal(n, CLR_REPL_MSG_HDR + 3);
    assert_int_equal(clr_repl_msg_encode(&m, buf, 10), -ENOSPC);
    assert_int_equal(clr_repl_msg_decode(&d, buf, (size_t)n), 0);
    assert_int_equal(d.type, m.type);
    assert_int_equal(d.lkid, 7);
    assert_int_equal(d.mode, 5);
    assert_int_equal(d.flags, 3);
    assert_int_equal(d.arg, 9);
    assert_int_equal(d.target_nodeid, 4);
    assert_int_equal(d.target_pid, 8);
    assert_true(d.has_lvb);
    assert_int_equal(d.lvb[31], 0xee);
    assert_int_equal(d.namelen, 3);
    assert_memory_equal(d.name, "abc", 3);
    assert_int_equal(clr_repl_msg_decode(&d, buf, CLR_REPL_MSG_HDR + 2), -EBADMSG);
    assert_int_equal(clr_repl_msg_decode(&d, buf, 20), -EBADMSG);
    buf[0] = 2;
    assert_int_equal(clr_repl_msg_decode(&d, buf, (size_t)n), -EBADMSG);
    buf[0] = 1;
    buf[1] = 99;
    assert_int_equal(clr_repl_msg_decode(&d, buf, (size_t)n), -EBADMSG);
}

static void test_bootstrap_and_joins(void **state)
{
    (void)state;
    join1(0);
    assert_true(clr_repl_synced(nodes[0].r));
    assert_true(nodes[0].synced_cb);
    assert_int_equal(clr_repl_my_slot(nodes[0].r), 1);
    assert_int_equal(clr_repl_my_inc(nodes[0].r), 1);
    op(0, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_EX, CLR_LOCK_F_VALBLK, NULL);
    assert_non_null(last_fx(0, CLR_LT_GRANTED));
    join1(1);
    assert_same_state(0, 1);
    assert_int_equal(clr_repl_my_slot(nodes[1].r), 2);
    assert_true(find_ev(1, CLR_LS_EV_DONE) >= 0);
    assert_true(find_ev(0, CLR_LS_EV_PREP) >= 0);
    /* the joiner's request queues behind the replicated EX */
    op(1, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_PR, CLR_LOCK_F_VALBLK, NULL);
    assert_null(last_fx(1, CLR_LT_GRANTED));
    assert_int_equal(last_fx(0, CLR_LT_BAST)->mode, CLR_LOCK_PR);
    op(0, CLR_REPL_MSG_CONVERT, 1, NULL, CLR_LOCK_NL, CLR_LOCK_F_VALBLK, "v1");
    assert_non_null(last_fx(1, CLR_LT_GRANTED));
    assert_string_equal((const char *)last_fx(1, CLR_LT_GRANTED)->lvb, "v1");
    assert_same_state(0, 1);
}

static void test_simultaneous_start(void **state)
{
    int both[2] = { 0, 3 };

    (void)state;
    confchg(0, both, 2, true, CLR_REPL_JOIN);
    assert_same_state(0, 3);
    assert_int_equal(clr_repl_my_slot(nodes[0].r) + clr_repl_my_slot(nodes[3].r), 3);
}

/* Traffic between the join and the state transfer is replayed. */
static void test_join_under_traffic(void **state)
{
    struct clr_repl_addr mem[NN];
    struct clr_repl_addr j = { 0 };
    size_t nm;

    (void)state;
    join1(0);
    join1(1);
    op(0, CLR_REPL_MSG_REQUEST, 1, "a", CLR_LOCK_EX, 0, NULL);
    /* node 2 joins; node 0 and 1 send before the NEED_STATE is handled */
    nodes[2].in_group = true;
    j = (struct clr_repl_addr){ nodes[2].nodeid, nodes[2].pid, CLR_REPL_JOIN };
    nm = view_of(0, mem);
    for (int i = 0; i < 3; i++)
        clr_repl_confchg(nodes[i].r, mem, nm, NULL, 0, &j, 1);
    /* queue: node 2's NEED_STATE; add traffic after it */
    {
        struct clr_repl_msg m = {
            .type = CLR_REPL_MSG_REQUEST, .lkid = 2, .mode = CLR_LOCK_PR, .name = "a", .namelen = 1
        };
        uint8_t buf[128];
        long len = clr_repl_msg_encode(&m, buf, sizeof(buf));

        q_send(&nodes[1], buf, (size_t)len);
        m.type = CLR_REPL_MSG_CONVERT;
        m.lkid = 1;
        m.mode = CLR_LOCK_NL;
        m.namelen = 0;
        len = clr_repl_msg_encode(&m, buf, sizeof(buf));
        q_send(&nodes[0], buf, (size_t)len);
    }
    pump();
    assert_same_state(0, 2);
    assert_same_state(1, 2);
    /* a second joiner while the first is fresh */
    join1(3);
    assert_same_state(0, 3);
    assert_int_equal(clr_repl_my_slot(nodes[3].r), 4);
}

static void test_procdown_releases_and_invalidates(void **state)
{
    const struct clr_lt_effect *g;
    int ev;

    (void)state;
    join1(0);
    join1(1);
    op(0, CLR_REPL_MSG_REQUEST, 1, "bitmap0000", CLR_LOCK_EX, CLR_LOCK_F_VALBLK, NULL);
    op(1, CLR_REPL_MSG_REQUEST, 1, "bitmap0000", CLR_LOCK_EX, CLR_LOCK_F_VALBLK, NULL);
    assert_null(last_fx(1, CLR_LT_GRANTED));
    nodes[1].nev = 0;
    leave1(0, CLR_REPL_PROCDOWN);
    g = last_fx(1, CLR_LT_GRANTED);
    assert_non_null(g);
    assert_true(g->sb_flags & CLR_LOCK_SB_VALNOTVALID);
    ev = find_ev(1, CLR_LS_EV_MEMBER_FAILED);
    assert_true(ev >= 0);
    assert_int_equal(nodes[1].ev[ev].slot, 1);
    assert_int_equal(nodes[1].ev[ev].member, 1);
    /* the event reached the engine before the grant */
    assert_true(nodes[1].ev_order[ev] < nodes[1].fx_order[nodes[1].nfx - 1]);
    assert_true(find_ev(1, CLR_LS_EV_DONE) > ev);
    /* a process gone from a live node is confirmed at once: never lost */
    assert_int_equal(find_ev(1, CLR_LS_EV_MEMBER_LOST), -1);
}

static void test_leave_releases_cleanly(void **state)
{
    const struct clr_lt_effect *g;

    (void)state;
    join1(0);
    join1(1);
    op(0, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_EX, CLR_LOCK_F_VALBLK, NULL);
    op(1, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_EX, CLR_LOCK_F_VALBLK, NULL);
    leave1(0, CLR_REPL_LEAVE);
    g = last_fx(1, CLR_LT_GRANTED);
    assert_non_null(g);
    assert_false(g->sb_flags & CLR_LOCK_SB_VALNOTVALID);
    assert_int_equal(find_ev(1, CLR_LS_EV_MEMBER_FAILED), -1);
    assert_int_equal(find_ev(1, CLR_LS_EV_MEMBER_LOST), -1);
}

static void test_nodedown_holds_until_confirmed(void **state)
{
    struct clr_repl_member mem[NN];
    size_t n;
    struct clr_repl_msg m = { .type = CLR_REPL_MSG_CONFIRM_DEAD };
    uint8_t buf[CLR_REPL_MSG_HDR];

    (void)state;
    join1(3); /* node 3 lives on corosync node 3 */
    join1(0);
    op(3, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_EX, 0, NULL);
    op(0, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_EX, 0, NULL);
    leave1(3, CLR_REPL_NODEDOWN);
    assert_null(last_fx(0, CLR_LT_GRANTED));
    assert_int_equal(find_ev(0, CLR_LS_EV_MEMBER_FAILED), -1);
    n = clr_repl_members(nodes[0].r, mem, NN);
    assert_int_equal(n, 2);
    assert_int_equal(mem[0].state, CLR_REPL_M_FAILED);
    /* a joiner meanwhile keeps the failed member's slot reserved */
    join1(1);
    assert_int_equal(clr_repl_my_slot(nodes[1].r), 3);
    assert_same_state(0, 1);
    /* the fencer confirms (any member may say so, once is enough) */
    m.arg = mem[0].inc;
    clr_repl_msg_encode(&m, buf, sizeof(buf));
    q_send(&nodes[1], buf, sizeof(buf));
    q_send(&nodes[0], buf, sizeof(buf));
    pump();
    assert_non_null(last_fx(0, CLR_LT_GRANTED));
    assert_true(find_ev(0, CLR_LS_EV_MEMBER_FAILED) >= 0);
    assert_int_equal(nodes[0].ev[find_ev(0, CLR_LS_EV_MEMBER_FAILED)].slot, 1);
    assert_same_state(0, 1);
    assert_int_equal(clr_repl_members(nodes[0].r, mem, NN), 2);
}

/* The same process coming back with a fresh JOIN has dropped its locks. */
static void test_rejoin_confirms_old_incarnation(void **state)
{
    (void)state;
    join1(0);
    join1(3);
    op(3, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_EX, 0, NULL);
    op(0, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_EX, 0, NULL);
    leave1(3, CLR_REPL_NODEDOWN);
    assert_null(last_fx(0, CLR_LT_GRANTED));
    assert_true(find_ev(0, CLR_LS_EV_MEMBER_LOST) >= 0);
    assert_int_equal(find_ev(0, CLR_LS_EV_MEMBER_FAILED), -1);
    clr_repl_reset(nodes[3].r);
    join1(3);
    /* the same process back afresh: the lost incarnation is confirmed */
    assert_true(find_ev(0, CLR_LS_EV_MEMBER_FAILED) > find_ev(0, CLR_LS_EV_MEMBER_LOST));
    assert_int_equal(nodes[0].ev[find_ev(0, CLR_LS_EV_MEMBER_FAILED)].member,
                     nodes[0].ev[find_ev(0, CLR_LS_EV_MEMBER_LOST)].member);
    assert_non_null(last_fx(0, CLR_LT_GRANTED));
    assert_true(last_fx(0, CLR_LT_GRANTED)->sb_flags & CLR_LOCK_SB_VALNOTVALID);
    assert_same_state(0, 3);
    assert_int_equal(clr_repl_my_inc(nodes[3].r), 3);
}

/* Partition {0,3} | {4}; on the merge the side with the higher lowest
 * member id goes stale and does not keep its locks. */
static void test_partition_merge(void **state)
{
    struct clr_repl_addr mem[NN], up[NN];
    size_t nm;
    int four = 4;

    (void)state;
    join1(0);
    join1(3);
    join1(4);
    op(4, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_EX, 0, NULL);
    op(0, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_PR, 0, NULL);
    /* the cut: each side sees the other go NODEDOWN */
    nodes[4].part = 1;
    {
        struct clr_repl_addr gone[2] = { { nodes[0].nodeid, nodes[0].pid, CLR_REPL_NODEDOWN },
                                         { nodes[3].nodeid, nodes[3].pid, CLR_REPL_NODEDOWN } };
        struct clr_repl_addr g4 = { nodes[4].nodeid, nodes[4].pid, CLR_REPL_NODEDOWN };

        nm = view_of(1, mem);
        clr_repl_confchg(nodes[4].r, mem, nm, gone, 2, NULL, 0);
        nm = view_of(0, mem);
        clr_repl_confchg(nodes[0].r, mem, nm, &g4, 1, NULL, 0);
        clr_repl_confchg(nodes[3].r, mem, nm, &g4, 1, NULL, 0);
    }
    /* the majority still may not take 4's EX: not confirmed dead */
    assert_null(last_fx(0, CLR_LT_GRANTED));
    /* heal: NODEUP on both sides */
    nodes[4].part = 0;
    nm = view_of(0, mem);
    up[0] = (struct clr_repl_addr){ nodes[4].nodeid, nodes[4].pid, CLR_REPL_NODEUP };
    clr_repl_confchg(nodes[0].r, mem, nm, NULL, 0, up, 1);
    clr_repl_confchg(nodes[3].r, mem, nm, NULL, 0, up, 1);
    up[0] = (struct clr_repl_addr){ nodes[0].nodeid, nodes[0].pid, CLR_REPL_NODEUP };
    up[1] = (struct clr_repl_addr){ nodes[3].nodeid, nodes[3].pid, CLR_REPL_NODEUP };
    clr_repl_confchg(nodes[4].r, mem, nm, NULL, 0, up, 2);
    assert_true(nodes[4].stale_cb);
    assert_false(nodes[0].stale_cb);
    assert_false(clr_repl_synced(nodes[4].r));
    /* the stale side leaves and comes back fresh: its old EX is released */
    leave1(4, CLR_REPL_LEAVE);
    assert_null(last_fx(0, CLR_LT_GRANTED));
    clr_repl_reset(nodes[4].r);
    confchg(0, &four, 1, true, CLR_REPL_JOIN);
    assert_non_null(last_fx(0, CLR_LT_GRANTED));
    assert_same_state(0, 4);
    assert_same_state(3, 4);
}

static int find_ev_after(int i, enum clr_ls_event_type t, int from)
{
    for (int k = from; k < nodes[i].nev; k++)
        if (nodes[i].ev[k].type == t)
            return k;
    return -1;
}

static void confirm(int via, uint64_t inc)
{
    struct clr_repl_msg m = { .type = CLR_REPL_MSG_CONFIRM_DEAD, .arg = inc };
    uint8_t buf[CLR_REPL_MSG_HDR];

    clr_repl_msg_encode(&m, buf, sizeof(buf));
    q_send(&nodes[via], buf, sizeof(buf));
    pump();
}

/* A member lost with its node: MEMBER_LOST at once (after PREP), then
 * nothing until the fencer confirms: MEMBER_FAILED for the same member,
 * then DONE.  A joiner meanwhile hears of the lost member too. */
static void test_nodedown_lost_then_failed(void **state)
{
    int prep, lost, failed, done;
    const struct clr_ls_event *ev;

    (void)state;
    join1(3); /* slot 1, on corosync node 3 */
    join1(0);
    nodes[0].nev = 0;
    leave1(3, CLR_REPL_NODEDOWN);
    prep = find_ev(0, CLR_LS_EV_PREP);
    lost = find_ev(0, CLR_LS_EV_MEMBER_LOST);
    assert_true(prep >= 0);
    assert_true(lost > prep);
    ev = &nodes[0].ev[lost];
    assert_int_equal(ev->slot, 1);
    assert_int_equal(ev->member, 1);
    assert_int_equal(ev->nodeid, nodes[3].nodeid);
    assert_int_equal(ev->pid, nodes[3].pid);
    assert_int_equal(find_ev(0, CLR_LS_EV_MEMBER_FAILED), -1);
    assert_int_equal(find_ev(0, CLR_LS_EV_DONE), -1);
    /* a joiner during the window: lost for it too, no DONE yet */
    join1(1);
    lost = find_ev(1, CLR_LS_EV_MEMBER_LOST);
    assert_true(lost >= 0);
    assert_int_equal(nodes[1].ev[lost].slot, 1);
    assert_int_equal(nodes[1].ev[lost].member, 1);
    assert_int_equal(find_ev(1, CLR_LS_EV_DONE), -1);
    assert_int_equal(find_ev(0, CLR_LS_EV_DONE), -1);
    /* the fencer confirms */
    confirm(0, 1);
    for (int i = 0; i < 2; i++) {
        int n = i ? 1 : 0;

        failed = find_ev(n, CLR_LS_EV_MEMBER_FAILED);
        done = find_ev(n, CLR_LS_EV_DONE);
        assert_true(failed > find_ev(n, CLR_LS_EV_MEMBER_LOST));
        assert_int_equal(nodes[n].ev[failed].slot, 1);
        assert_int_equal(nodes[n].ev[failed].member, 1);
        assert_true(done > failed);
        /* exactly one LOST and one FAILED */
        assert_int_equal(find_ev_after(n, CLR_LS_EV_MEMBER_LOST, find_ev(n, CLR_LS_EV_MEMBER_LOST) + 1), -1);
        assert_int_equal(find_ev_after(n, CLR_LS_EV_MEMBER_FAILED, failed + 1), -1);
    }
    assert_same_state(0, 1);
}

/* DONE comes only once no lost member is left unconfirmed. */
static void test_done_waits_for_every_lost(void **state)
{
    struct clr_repl_member mem[NN];
    int f1;

    (void)state;
    join1(0);
    join1(3);
    join1(4);
    nodes[0].nev = 0;
    {
        int two[2] = { 3, 4 };

        confchg(0, two, 2, false, CLR_REPL_NODEDOWN);
    }
    assert_true(find_ev(0, CLR_LS_EV_MEMBER_LOST) >= 0);
    assert_true(find_ev_after(0, CLR_LS_EV_MEMBER_LOST, find_ev(0, CLR_LS_EV_MEMBER_LOST) + 1) >= 0);
    assert_int_equal(clr_repl_members(nodes[0].r, mem, NN), 3);
    assert_int_equal(mem[1].state, CLR_REPL_M_FAILED);
    assert_int_equal(mem[2].state, CLR_REPL_M_FAILED);
    confirm(0, mem[1].inc);
    f1 = find_ev(0, CLR_LS_EV_MEMBER_FAILED);
    assert_true(f1 >= 0);
    assert_int_equal(find_ev(0, CLR_LS_EV_DONE), -1);
    confirm(0, mem[2].inc);
    assert_true(find_ev_after(0, CLR_LS_EV_MEMBER_FAILED, f1 + 1) > f1);
    assert_true(find_ev(0, CLR_LS_EV_DONE) > find_ev_after(0, CLR_LS_EV_MEMBER_FAILED, f1 + 1));
}

static void test_garbage_ignored(void **state)
{
    uint8_t junk[100];

    (void)state;
    join1(0);
    memset(junk, 0xff, sizeof(junk));
    q_send(&nodes[0], junk, sizeof(junk));
    q_send(&nodes[0], junk, 3);
    pump();
    /* an op from a process that is not a member is ignored */
    nodes[1].in_group = true;
    op(1, CLR_REPL_MSG_REQUEST, 1, "r", CLR_LOCK_EX, 0, NULL);
    nodes[1].in_group = false;
    assert_int_equal(clr_lt_owner_locks(clr_repl_table(nodes[0].r), 2), 0);
    assert_true(clr_repl_synced(nodes[0].r));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_msg_codec),
        cmocka_unit_test_setup_teardown(test_bootstrap_and_joins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_simultaneous_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_join_under_traffic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_procdown_releases_and_invalidates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leave_releases_cleanly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nodedown_holds_until_confirmed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejoin_confirms_old_incarnation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partition_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nodedown_lost_then_failed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_done_waits_for_every_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_ignored, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
