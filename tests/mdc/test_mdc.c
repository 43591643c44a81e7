/*
 * Unit tests of the cluster protocol core (engine/cluster/mdc.c) with a
 * MOCK host: several nodes in one thread sharing the pure lock table,
 * in-memory bitmap slots, and a broadcast that calls the other nodes'
 * clr_mdc_receive() directly.  A lock request that would have to wait is
 * a test failure here (tests/sim runs the waiting cases).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/mdc.h"
#include "lock/lock.h"
#include "lock/lock_table.h"

#define NODES  4
#define CHUNK  128u          /* sectors per bitmap chunk */
#define SYNC   (CHUNK * 64u) /* 64 chunks */
#define BMB    8             /* bytes of bits per slot */
#define MAXRES 16

struct mock_cluster;

struct mock_node {
    struct mock_cluster *c;
    struct clr_mdc m;
    uint64_t owner;
    bool alive;
    char names[MAXRES][CLR_LOCK_NAME_MAX];
    uint64_t lkids[MAXRES];
    unsigned nres;
    uint8_t ours_merged[BMB]; /* what bitmap_merge added */
    unsigned merges, resync_wanted, drains, reloads, removes, readds;
    uint64_t drain_lo, drain_hi;
    bool has_disk;             /* NEWDISK: can we find it */
    struct clr_mdc_rx last_rx; /* message context of the last host call */
};

struct mock_cluster {
    struct clr_lt *lt;
    struct mock_node n[NODES];
    uint8_t slots[NODES][BMB]; /* on-disk bits per slot */
    uint64_t next_lkid;
    /* effect capture for the request in progress */
    uint64_t want_owner, want_lkid;
    int got; /* 0 none, 1 granted, -errno failed */
    uint8_t got_lvb[32];
    bool got_lvb_valid;
};

static void emit(void *arg, const struct clr_lt_effect *e)
{
    struct mock_cluster *c = arg;

    if (e->owner != c->want_owner || e->lkid != c->want_lkid)
        return;
    if (e->type == CLR_LT_GRANTED || e->type == CLR_LT_UNLOCKED) {
        c->got = 1;
        if (e->has_lvb) {
            memcpy(c->got_lvb, e->lvb, 32);
            c->got_lvb_valid = true;
        }
    } else if (e->type == CLR_LT_FAILED || e->type == CLR_LT_CANCELED) {
        c->got = e->status ? e->status : -EIO;
    }
}

static uint64_t *lkid_of(struct mock_node *n, const char *res, bool create, bool *fresh)
{
    for (unsigned i = 0; i < n->nres; i++)
        if (!strcmp(n->names[i], res)) {
            *fresh = false;
            return &n->lkids[i];
        }
    if (!create)
        return NULL;
    assert_true(n->nres < MAXRES);
    strcpy(n->names[n->nres], res);
    n->lkids[n->nres] = 0;
    *fresh = true;
    return &n->lkids[n->nres++];
}

static int h_lock(void *arg, const char *res, int mode, unsigned flags, uint8_t *lvb)
{
    struct mock_node *n = arg;
    struct mock_cluster *c = n->c;
    bool fresh;
    uint64_t *lk = lkid_of(n, res, true, &fresh);
    int r, gr = CLR_LOCK_IV, rq;
    enum clr_lt_queue q;

    if (*lk && clr_lt_lock_info(c->lt, n->owner, *lk, &gr, &rq, &q) != 0)
        *lk = 0;
    c->want_owner = n->owner;
    c->got = 0;
    c->got_lvb_valid = false;
    if (!*lk) {
        *lk = ++c->next_lkid;
        c->want_lkid = *lk;
        r = clr_lt_request(c->lt, n->owner, *lk, res, strlen(res), mode, flags, emit, c);
    } else {
        c->want_lkid = *lk;
        r = clr_lt_convert(c->lt, n->owner, *lk, mode, flags, lvb, emit, c);
    }
    if (r)
        return r;
    if (c->got == 0)
        fail_msg("mock: lock %s %s would wait", res, clr_lock_mode_name(mode));
    if (c->got < 0) {
        if (gr == CLR_LOCK_IV)
            *lk = 0;
        return c->got;
    }
    if (lvb && c->got_lvb_valid)
        memcpy(lvb, c->got_lvb, 32);
    return 0;
}

static int h_unlock(void *arg, const char *res)
{
    struct mock_node *n = arg;
    struct mock_cluster *c = n->c;
    bool fresh;
    uint64_t *lk = lkid_of(n, res, false, &fresh);
    int gr, rq;
    enum clr_lt_queue q;

    if (!lk || !*lk || clr_lt_lock_info(c->lt, n->owner, *lk, &gr, &rq, &q))
        return 0;
    c->want_owner = n->owner;
    c->want_lkid = *lk;
    clr_lt_unlock(c->lt, n->owner, *lk, 0, NULL, emit, c);
    *lk = 0;
    return 0;
}

static int h_send(void *arg, const struct clr_mdc_msg *m, unsigned *refused)
{
    struct mock_node *n = arg;
    struct clr_bcast_msg raw;

    clr_mdc_msg_encode(m, &raw);
    raw.version = CLR_BCAST_VERSION;
    raw.sender_slot = (uint16_t)(n->m.c.slot + 1);
    *refused = 0;
    for (int i = 0; i < NODES; i++) {
        struct mock_node *o = &n->c->n[i];

        if (o == n || !o->alive)
            continue;
        if (clr_mdc_receive(&o->m, &raw))
            (*refused)++;
    }
    return 0;
}

static int h_bitmap_read(void *arg, unsigned slot, uint8_t *bits, size_t nbytes)
{
    struct mock_node *n = arg;

    assert_int_equal(nbytes, BMB);
    memcpy(bits, n->c->slots[slot], BMB);
    return 0;
}

static int h_bitmap_clear(void *arg, unsigned slot)
{
    struct mock_node *n = arg;

    memset(n->c->slots[slot], 0, BMB);
    return 0;
}

static int h_bitmap_merge(void *arg, const uint8_t *bits, size_t nbytes)
{
    struct mock_node *n = arg;

    for (size_t i = 0; i < nbytes; i++) {
        n->ours_merged[i] |= bits[i];
        n->c->slots[n->m.c.slot][i] |= bits[i]; /* durable in our slot */
    }
    n->merges++;
    return 0;
}

static void h_want_resync(void *arg)
{
    ((struct mock_node *)arg)->resync_wanted++;
}

static int h_pause(void *arg, unsigned ms)
{
    (void)arg;
    (void)ms;
    return -ESHUTDOWN; /* the mock never waits */
}

static int h_drain(void *arg, uint64_t lo, uint64_t hi)
{
    struct mock_node *n = arg;

    n->drains++;
    n->drain_lo = lo;
    n->drain_hi = hi;
    /* The window must already hold new writes when drain is called. */
    assert_true(clr_mdc_write_blocked(&n->m, lo, hi));
    return 0;
}

static int h_reload(void *arg, uint32_t dev, const struct clr_mdc_rx *rx)
{
    (void)dev;
    ((struct mock_node *)arg)->reloads++;
    ((struct mock_node *)arg)->last_rx = *rx;
    return 0;
}

static int h_find(void *arg, const uint8_t uuid[16], uint32_t dev, const struct clr_mdc_rx *rx)
{
    (void)uuid;
    (void)dev;
    ((struct mock_node *)arg)->last_rx = *rx;
    return ((struct mock_node *)arg)->has_disk ? 0 : -ENOENT;
}

static int h_remove(void *arg, uint32_t dev, const struct clr_mdc_rx *rx)
{
    (void)dev;
    ((struct mock_node *)arg)->removes++;
    ((struct mock_node *)arg)->last_rx = *rx;
    return 0;
}

static int h_readd(void *arg, uint32_t dev, const struct clr_mdc_rx *rx)
{
    (void)dev;
    ((struct mock_node *)arg)->readds++;
    ((struct mock_node *)arg)->last_rx = *rx;
    return 0;
}

static void init_node(struct mock_cluster *c, int i, unsigned slot)
{
    struct mock_node *n = &c->n[i];
    struct clr_mdc_host h = {
        .arg = n,
        .lock = h_lock,
        .unlock = h_unlock,
        .send = h_send,
        .bitmap_read = h_bitmap_read,
        .bitmap_clear = h_bitmap_clear,
        .bitmap_merge = h_bitmap_merge,
        .want_resync = h_want_resync,
        .pause = h_pause,
        .drain = h_drain,
        .reload_sb = h_reload,
        .find_disk = h_find,
        .remote_remove = h_remove,
        .remote_readd = h_readd,
    };
    struct clr_mdc_config cfg = { .slot = slot,
                                  .nodes = NODES,
                                  .sync_sectors = SYNC,
                                  .chunk_sectors = CHUNK,
                                  .window_sectors = 4 * CHUNK };

    if (n->c) /* a node started again: its old state goes first */
        clr_mdc_destroy(&n->m);
    memset(n, 0, sizeof(*n));
    n->c = c;
    n->owner = 100 + (uint64_t)i * 10 + slot;
    n->has_disk = true;
    assert_int_equal(clr_mdc_init(&n->m, &cfg, &h), 0);
    n->alive = true;
}

static struct mock_cluster *new_cluster(void)
{
    struct mock_cluster *c = calloc(1, sizeof(*c));

    assert_non_null(c);
    c->lt = clr_lt_new();
    assert_non_null(c->lt);
    return c;
}

static void free_cluster(struct mock_cluster *c)
{
    for (int i = 0; i < NODES; i++)
        if (c->n[i].c)
            clr_mdc_destroy(&c->n[i].m);
    clr_lt_free(c->lt);
    free(c);
}

/* A node dies: its locks go (confirmed dead), survivors get the events. */
static void crash(struct mock_cluster *c, int i)
{
    c->n[i].alive = false;
    clr_lt_remove_owner(c->lt, c->n[i].owner, true, emit, c);
    for (int j = 0; j < NODES; j++)
        if (c->n[j].alive) {
            clr_mdc_on_prep(&c->n[j].m);
            clr_mdc_on_member_failed(&c->n[j].m, c->n[i].m.c.slot);
        }
}

static void done_all(struct mock_cluster *c)
{
    for (int j = 0; j < NODES; j++)
        if (c->n[j].alive)
            clr_mdc_on_done(&c->n[j].m);
}

static void test_codec(void **state)
{
    struct clr_mdc_msg in = { .type = CLR_MDC_RESYNCING,
                              .lo = 1ull << 40,
                              .hi = (1ull << 40) + 7,
                              .dirty_lo = 5 },
                       out;
    struct clr_bcast_msg raw;
    struct clr_mdc_lvb v = { 1, 2, 3, UINT64_MAX }, w;
    uint8_t lvb[32];
    char res[16];

    (void)state;
    clr_mdc_msg_encode(&in, &raw);
    raw.sender_slot = 3;
    assert_int_equal(clr_mdc_msg_decode(&raw, &out), 0);
    assert_int_equal(out.sender, 2);
    assert_int_equal(out.type, CLR_MDC_RESYNCING);
    assert_true(out.lo == in.lo && out.hi == in.hi && out.dirty_lo == 5);

    in = (struct clr_mdc_msg){ .type = CLR_MDC_NEWDISK, .dev_number = 9 };
    memset(in.uuid, 0xab, 16);
    clr_mdc_msg_encode(&in, &raw);
    raw.sender_slot = 1;
    assert_int_equal(clr_mdc_msg_decode(&raw, &out), 0);
    assert_int_equal(out.dev_number, 9);
    assert_memory_equal(out.uuid, in.uuid, 16);

    in = (struct clr_mdc_msg){ .type = CLR_MDC_TAKEOVER, .lo = 10, .hi = 20, .slot = 3 };
    clr_mdc_msg_encode(&in, &raw);
    raw.sender_slot = 1;
    assert_int_equal(clr_mdc_msg_decode(&raw, &out), 0);
    assert_true(out.lo == 10 && out.hi == 20 && out.slot == 3);

    raw.type = 77;
    assert_int_equal(clr_mdc_msg_decode(&raw, &out), -EPROTO);
    raw.sender_slot = 0;
    assert_int_equal(clr_mdc_msg_decode(&raw, &out), -EBADMSG);
    assert_string_equal(clr_mdc_msg_name(CLR_MDC_TAKEOVER), "TAKEOVER");
    assert_string_equal(clr_mdc_msg_name(42), "?");

    clr_mdc_lvb_encode(&v, lvb);
    clr_mdc_lvb_decode(&w, lvb);
    assert_memory_equal(&v, &w, sizeof(v));
    clr_mdc_bitmap_res(3, res, sizeof(res));
    assert_string_equal(res, "bitmap0003");
}

static void test_init_refuses(void **state)
{
    struct clr_mdc m;
    struct clr_mdc_host h = { 0 };
    struct clr_mdc_config cfg = { .slot = 4, .nodes = 4, .sync_sectors = 1, .chunk_sectors = 1 };

    (void)state;
    assert_int_equal(clr_mdc_init(&m, &cfg, &h), -EINVAL);
}

/* Join: a free slot's bits are merged (and stay); a busy slot's LVB gives
 * its window; our own dirty bits are announced to the others. */
static void test_join(void **state)
{
    struct mock_cluster *c = new_cluster();
    struct clr_mdc_stats st;

    (void)state;
    init_node(c, 0, 0);
    assert_int_equal(clr_mdc_join(&c->n[0].m), 0);
    assert_int_equal(c->n[0].merges, 0);
    assert_false(clr_mdc_read_first(&c->n[0].m, 0, SYNC));

    /* Slot 2 was left dirty by a node that is gone (chunk 5); slot 1 (the
     * joiner's own) has chunk 9 from its own crash. */
    c->slots[2][0] = 1u << 5;
    c->slots[1][1] = 1u << 1;
    init_node(c, 1, 1);
    assert_int_equal(clr_mdc_join(&c->n[1].m), 0);
    assert_int_equal(c->n[1].merges, 1);
    assert_int_equal(c->n[1].ours_merged[0], 1u << 5);
    assert_int_equal(c->slots[2][0], 1u << 5); /* join does not clear */
    assert_int_equal(c->n[1].resync_wanted, 1);
    /* node 0 heard TAKEOVER(slot 1, chunks 5..9): reads there go first */
    assert_true(clr_mdc_read_first(&c->n[0].m, 5 * CHUNK, 5 * CHUNK + 1));
    assert_true(clr_mdc_read_first(&c->n[0].m, 9 * CHUNK, 9 * CHUNK + 8));
    assert_false(clr_mdc_read_first(&c->n[0].m, 10 * CHUNK, 11 * CHUNK));
    assert_false(clr_mdc_read_first(&c->n[0].m, 0, 5 * CHUNK));

    /* node 1 resyncs: window published and broadcast, node 0 drains */
    assert_int_equal(clr_mdc_resync_begin(&c->n[1].m, 5 * CHUNK, 10 * CHUNK), 0);
    assert_int_equal(clr_mdc_resync_window(&c->n[1].m, 5 * CHUNK, 6 * CHUNK, SYNC, 5 * CHUNK), 0);
    assert_int_equal(c->n[0].drains, 1);
    assert_int_equal(c->n[0].drain_lo, 5 * CHUNK);
    assert_int_equal(c->n[0].drain_hi, 9 * CHUNK);
    assert_true(clr_mdc_write_blocked(&c->n[0].m, 8 * CHUNK, 8 * CHUNK + 1));
    assert_false(clr_mdc_write_blocked(&c->n[0].m, 9 * CHUNK, 9 * CHUNK + 1));
    /* inside the window: no new broadcast */
    assert_int_equal(clr_mdc_resync_window(&c->n[1].m, 6 * CHUNK, 9 * CHUNK, SYNC, 6 * CHUNK), 0);
    assert_int_equal(c->n[0].drains, 1);

    /* a third node joining now learns the window and extent from the LVB */
    init_node(c, 2, 3);
    assert_int_equal(clr_mdc_join(&c->n[2].m), 0);
    clr_mdc_stats(&c->n[2].m, &st);
    assert_int_equal(st.win_from, 1);
    assert_int_equal(st.win_lo, 5 * CHUNK);
    assert_true(clr_mdc_write_blocked(&c->n[2].m, 5 * CHUNK, 5 * CHUNK + 1));
    assert_true(clr_mdc_read_first(&c->n[2].m, 9 * CHUNK, 9 * CHUNK + 1));

    /* next window moves on; the extent's start follows */
    assert_int_equal(clr_mdc_resync_window(&c->n[1].m, 9 * CHUNK, 10 * CHUNK, 10 * CHUNK, 9 * CHUNK), 0);
    assert_false(clr_mdc_write_blocked(&c->n[0].m, 5 * CHUNK, 9 * CHUNK));
    /* chunk 5 is also NEEDED at node 2 (it merged free slot 2 at join) */
    assert_true(clr_mdc_read_first(&c->n[0].m, 5 * CHUNK, 5 * CHUNK + 1));
    assert_false(clr_mdc_read_first(&c->n[0].m, 6 * CHUNK, 9 * CHUNK));
    assert_true(clr_mdc_read_first(&c->n[0].m, 9 * CHUNK, 9 * CHUNK + 1));
    assert_int_equal(clr_mdc_resync_end(&c->n[1].m, 0, 0), 0);
    /* node 2 resyncs its chunk 5 */
    assert_int_equal(clr_mdc_resync_begin(&c->n[2].m, 5 * CHUNK, 6 * CHUNK), 0);
    assert_int_equal(clr_mdc_resync_window(&c->n[2].m, 5 * CHUNK, 6 * CHUNK, SYNC, 5 * CHUNK), 0);
    assert_true(clr_mdc_write_blocked(&c->n[1].m, 5 * CHUNK, 5 * CHUNK + 1));
    assert_int_equal(clr_mdc_resync_end(&c->n[2].m, 0, 0), 0);
    for (int i = 0; i < 3; i++) {
        assert_false(clr_mdc_write_blocked(&c->n[i].m, 0, SYNC));
        assert_false(clr_mdc_read_first(&c->n[i].m, 0, SYNC));
    }
    /* the resync lock is free again: another node can take it */
    assert_int_equal(clr_mdc_resync_begin(&c->n[0].m, 0, 0), 0);
    assert_int_equal(clr_mdc_resync_end(&c->n[0].m, 0, 0), 0);

    /* a second owner of slot 1 is refused */
    struct mock_node *dup = &c->n[3];

    init_node(c, 3, 1);
    assert_int_equal(clr_mdc_join(&dup->m), -EBUSY);
    dup->alive = false;
    free_cluster(c);
}

/* Takeover: one survivor merges, clears and announces; the others drop the
 * slot from their queue and read first in the announced extent. */
static void test_takeover(void **state)
{
    struct mock_cluster *c = new_cluster();
    struct clr_mdc_stats st;

    (void)state;
    for (int i = 0; i < 3; i++) {
        init_node(c, i, (unsigned)i);
        assert_int_equal(clr_mdc_join(&c->n[i].m), 0);
    }
    /* node 2 wrote chunks 3 and 40, then died */
    c->slots[2][0] = 1u << 3;
    c->slots[2][5] = 1u << 0;
    crash(c, 2);
    for (int i = 0; i < 2; i++) {
        assert_true(clr_mdc_recovery_pending(&c->n[i].m));
        assert_true(clr_mdc_read_first(&c->n[i].m, 60 * CHUNK, 61 * CHUNK));
    }
    done_all(c);
    /* still queued: reads stay on the first device */
    assert_true(clr_mdc_read_first(&c->n[0].m, 60 * CHUNK, 61 * CHUNK));

    assert_int_equal(clr_mdc_recover(&c->n[1].m), 0);
    clr_mdc_stats(&c->n[1].m, &st);
    assert_int_equal(st.recovered_slots, 1);
    assert_int_equal(st.last_taken_slot, 2);
    assert_int_equal(st.last_taken_chunks, 2);
    assert_int_equal(c->slots[2][0] | c->slots[2][5], 0); /* cleared */
    assert_int_equal(c->slots[1][0], 1u << 3);            /* ours now */
    assert_int_equal(c->slots[1][5], 1u << 0);
    assert_true(c->n[1].resync_wanted >= 1);
    /* the taker reloaded for no message; node 0 for its TAKEOVER */
    assert_int_equal(c->n[1].last_rx.sender, -1);
    assert_int_equal(c->n[1].last_rx.type, -1);
    assert_int_equal(c->n[0].last_rx.sender, 1);
    assert_int_equal(c->n[0].last_rx.type, CLR_MDC_TAKEOVER);

    /* node 0 heard TAKEOVER: nothing queued, balancing outside [3, 41) */
    assert_false(clr_mdc_recovery_pending(&c->n[0].m));
    assert_int_equal(clr_mdc_recover(&c->n[0].m), 0);
    clr_mdc_stats(&c->n[0].m, &st);
    assert_int_equal(st.recovered_slots, 0);
    assert_false(clr_mdc_read_first(&c->n[0].m, 60 * CHUNK, 61 * CHUNK));
    assert_false(clr_mdc_read_first(&c->n[0].m, 0, 3 * CHUNK));
    assert_true(clr_mdc_read_first(&c->n[0].m, 3 * CHUNK, 3 * CHUNK + 1));
    assert_true(clr_mdc_read_first(&c->n[0].m, 40 * CHUNK, 40 * CHUNK + 1));

    /* a dead owner whose lock is not yet released: recover keeps it queued */
    c->n[0].alive = false; /* no events, lock stays held: "not confirmed" */
    clr_mdc_on_member_failed(&c->n[1].m, 0);
    assert_int_equal(clr_mdc_recover(&c->n[1].m), -ESHUTDOWN);
    assert_true(clr_mdc_recovery_pending(&c->n[1].m));
    free_cluster(c);
}

/* A node lost with its whole node holds new writes on the survivors
 * until its death is confirmed; a process death never does. */
static void test_write_hold(void **state)
{
    struct mock_cluster *c = new_cluster();
    struct clr_mdc_stats st;

    (void)state;
    for (int i = 0; i < 3; i++) {
        init_node(c, i, (unsigned)i);
        assert_int_equal(clr_mdc_join(&c->n[i].m), 0);
    }
    assert_false(clr_mdc_writes_held(&c->n[0].m));
    /* node 2 and node 3 (slot 3, not started) are cut off: PREP, LOST */
    c->n[2].alive = false;
    for (int j = 0; j < 2; j++) {
        clr_mdc_on_prep(&c->n[j].m);
        clr_mdc_on_member_lost(&c->n[j].m, 2);
        clr_mdc_on_member_lost(&c->n[j].m, 3);
        assert_true(clr_mdc_writes_held(&c->n[j].m));
        /* the hold is for writes only: no takeover queued, the window
         * query is unchanged (a host checks both) */
        assert_false(clr_mdc_recovery_pending(&c->n[j].m));
        assert_false(clr_mdc_write_blocked(&c->n[j].m, 0, SYNC));
    }
    /* our own slot and out-of-range slots are never lost */
    clr_mdc_on_member_lost(&c->n[2].m, 2);
    assert_false(clr_mdc_writes_held(&c->n[2].m));
    clr_mdc_on_member_lost(&c->n[2].m, CLR_MDC_MAX_SLOTS);
    assert_false(clr_mdc_writes_held(&c->n[2].m));
    /* one of two confirmed: still held */
    clr_mdc_on_member_failed(&c->n[0].m, 3);
    assert_true(clr_mdc_writes_held(&c->n[0].m));
    clr_mdc_stats(&c->n[0].m, &st);
    assert_int_equal(st.lost, 1u << 2);
    assert_int_equal(st.holds, 1);
    /* the fencer confirms node 2: its locks go, writes resume */
    clr_lt_remove_owner(c->lt, c->n[2].owner, true, emit, c);
    clr_mdc_on_member_failed(&c->n[0].m, 2);
    assert_false(clr_mdc_writes_held(&c->n[0].m));
    assert_true(clr_mdc_recovery_pending(&c->n[0].m));
    clr_mdc_stats(&c->n[0].m, &st);
    assert_int_equal(st.lost, 0);
    /* DONE lifts whatever is left (the lock service sends it only when
     * no lost member is unconfirmed) */
    assert_true(clr_mdc_writes_held(&c->n[1].m));
    clr_mdc_on_done(&c->n[1].m);
    assert_false(clr_mdc_writes_held(&c->n[1].m));
    /* held again by a later loss: counted */
    clr_mdc_on_member_lost(&c->n[1].m, 2);
    assert_true(clr_mdc_writes_held(&c->n[1].m));
    clr_mdc_on_member_failed(&c->n[1].m, 2);
    assert_false(clr_mdc_writes_held(&c->n[1].m));
    clr_mdc_stats(&c->n[1].m, &st);
    assert_int_equal(st.holds, 2);
    /* a process death (MEMBER_FAILED without LOST) never holds */
    c->n[1].alive = false;
    clr_lt_remove_owner(c->lt, c->n[1].owner, true, emit, c);
    clr_mdc_on_prep(&c->n[0].m);
    clr_mdc_on_member_failed(&c->n[0].m, 1);
    assert_false(clr_mdc_writes_held(&c->n[0].m));
    assert_int_equal(clr_mdc_recover(&c->n[0].m), 0);
    clr_mdc_on_done(&c->n[0].m);
    assert_false(clr_mdc_writes_held(&c->n[0].m));
    free_cluster(c);
}

/* A node leaving unclean asks the others to take its slot over. */
static void test_leave_unclean(void **state)
{
    struct mock_cluster *c = new_cluster();

    (void)state;
    for (int i = 0; i < 2; i++) {
        init_node(c, i, (unsigned)i);
        assert_int_equal(clr_mdc_join(&c->n[i].m), 0);
    }
    c->slots[1][2] = 0x10;
    assert_int_equal(clr_mdc_leave(&c->n[1].m, true), 0);
    c->n[1].alive = false;
    assert_true(clr_mdc_recovery_pending(&c->n[0].m));
    assert_int_equal(clr_mdc_recover(&c->n[0].m), 0);
    assert_int_equal(c->slots[0][2], 0x10);
    assert_int_equal(c->slots[1][2], 0);
    free_cluster(c);
}

/* Metadata update, NEWDISK agreement (and its refusal), remove, re-add. */
static void test_metadata_newdisk(void **state)
{
    struct mock_cluster *c = new_cluster();
    uint8_t uuid[16] = { 1, 2, 3 };

    (void)state;
    for (int i = 0; i < 3; i++) {
        init_node(c, i, (unsigned)i);
        assert_int_equal(clr_mdc_join(&c->n[i].m), 0);
    }
    /* joins made the earlier nodes reload the superblock (node 0 twice) */
    assert_int_equal(c->n[0].reloads, 2);
    assert_int_equal(c->n[1].reloads, 1);
    assert_int_equal(c->n[2].reloads, 0);
    for (int i = 0; i < 3; i++)
        c->n[i].reloads = 0;
    assert_int_equal(clr_mdc_meta_begin(&c->n[0].m), 0);
    assert_int_equal(clr_mdc_meta_end(&c->n[0].m, 1, true), 0);
    assert_int_equal(c->n[1].reloads, 1);
    assert_int_equal(c->n[2].reloads, 1);
    /* the host learns which message it runs for, and from whom */
    assert_int_equal(c->n[2].last_rx.sender, 0);
    assert_int_equal(c->n[2].last_rx.type, CLR_MDC_METADATA_UPDATED);
    /* metadata is free again for another node */
    assert_int_equal(clr_mdc_meta_begin(&c->n[1].m), 0);
    assert_int_equal(clr_mdc_meta_end(&c->n[1].m, 0, false), 0);
    assert_int_equal(c->n[0].reloads, 0);

    /* everyone finds the new disk */
    assert_int_equal(clr_mdc_meta_begin(&c->n[0].m), 0);
    assert_int_equal(clr_mdc_newdisk(&c->n[0].m, uuid, 5), 0);
    assert_int_equal(c->n[1].last_rx.sender, 0);
    assert_int_equal(c->n[1].last_rx.type, CLR_MDC_NEWDISK);
    assert_int_equal(clr_mdc_meta_end(&c->n[0].m, 1, true), 0);
    /* node 2 lacks the next one: the add is refused */
    c->n[2].has_disk = false;
    assert_int_equal(clr_mdc_meta_begin(&c->n[0].m), 0);
    assert_int_equal(clr_mdc_newdisk(&c->n[0].m, uuid, 6), -ENOENT);
    assert_int_equal(clr_mdc_meta_end(&c->n[0].m, 1, true), 0);
    /* an adder that dies after NEWDISK leaves finders at NL: a later
     * NEWDISK that one of them cannot find must still be refused */
    assert_int_equal(clr_mdc_meta_begin(&c->n[0].m), 0);
    c->n[2].has_disk = true;
    assert_int_equal(clr_mdc_newdisk(&c->n[0].m, uuid, 7), 0); /* all at NL now */
    c->n[0].alive = false;                                     /* dies before METADATA_UPDATED */
    clr_lt_remove_owner(c->lt, c->n[0].owner, true, emit, c);
    clr_mdc_on_member_failed(&c->n[1].m, 0);
    clr_mdc_on_member_failed(&c->n[2].m, 0);
    c->n[2].has_disk = false;
    assert_int_equal(clr_mdc_meta_begin(&c->n[1].m), 0);
    assert_int_equal(clr_mdc_newdisk(&c->n[1].m, uuid, 7), -ENOENT);
    assert_int_equal(clr_mdc_meta_end(&c->n[1].m, 0, true), 0);
    c->n[0].alive = true; /* node 0 comes back in slot 0 */
    init_node(c, 0, 0);
    c->n[0].owner += 1000;
    assert_int_equal(clr_mdc_join(&c->n[0].m), 0);
    /* and after the METADATA_UPDATED everyone is back at CR: a new add
     * where all find it works again */
    c->n[2].has_disk = true;
    assert_int_equal(clr_mdc_meta_begin(&c->n[0].m), 0);
    assert_int_equal(clr_mdc_newdisk(&c->n[0].m, uuid, 6), 0);
    assert_int_equal(clr_mdc_meta_end(&c->n[0].m, 1, true), 0);

    assert_int_equal(clr_mdc_send_remove(&c->n[1].m, 4), 0);
    assert_int_equal(c->n[0].removes + c->n[2].removes, 2);
    assert_int_equal(clr_mdc_send_readd(&c->n[1].m, 4), 0);
    assert_int_equal(c->n[0].readds + c->n[2].readds, 2);
    assert_int_equal(c->n[2].last_rx.sender, 1);
    assert_int_equal(c->n[2].last_rx.type, CLR_MDC_RE_ADD);
    c->slots[0][0] = 0x81;
    c->slots[2][7] = 0x02;
    assert_int_equal(clr_mdc_gather_bitmaps(&c->n[1].m), 0);
    assert_int_equal(c->n[1].ours_merged[0], 0x81);
    assert_int_equal(c->n[1].ours_merged[7], 0x02);
    assert_int_equal(c->slots[0][0], 0x81); /* gathering does not clear */
    free_cluster(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec),
        cmocka_unit_test(test_init_refuses),
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_takeover),
        cmocka_unit_test(test_write_hold),
        cmocka_unit_test(test_leave_unclean),
        cmocka_unit_test(test_metadata_newdisk),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
