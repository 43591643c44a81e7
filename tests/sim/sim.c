/*
 * clraid deterministic cluster simulator (doc/architecture.md §8).
 *
 * N nodes and M shared devices run the real protocol core
 * (engine/cluster/mdc.c) over the pure lock table (engine/lock/lock_table.c)
 * and a modelled RAID1 data path, on cooperative coroutines picked by a
 * seeded scheduler: the same seed replays the same run, byte for byte (the
 * trace digest says so).  Faults (node crash at any step, device failure,
 * one node's path loss, slow I/O) are drawn from the seed; an invariant
 * checker enforces the correctness contract:
 *
 *  (a) an acknowledged write is on every non-faulty leg at ack time;
 *  (b) every read (during the run and at the end, from every live node)
 *      returns the acknowledged value; a block whose write was in flight
 *      at a crash may read old or new, but once read, the same everywhere
 *      until rewritten;
 *  (c) a bitmap bit is in the writer's slot on every in-sync device
 *      before a data leg is issued, and cleared only with no leg in flight
 *      under it, while not degraded; another slot is cleared only after its
 *      bits are durable in ours;
 *  (d) no resync of a block overlaps a client leg write of that block;
 *  (e) a faulty device is never a read or resync source (and what a
 *      resync copies is a value the block may hold);
 *  (f) after quiescence all in-sync legs are identical;
 *  (g) the run quiesces within a step bound with nothing stuck; no slot
 *      is left untaken, no chunk left needing resync;
 *  (h) no survivor acknowledges a write it admitted after it saw a node
 *      crash (MEMBER_LOST) and before that crash was confirmed (fenced).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "cluster/mdc.h"
#include "cluster/rules.h"
#include "lock/lock_table.h"

#ifndef CLR_RULES_FAULTS
#error "tests/sim builds engine/cluster/rules.c and mdc.c with CLR_RULES_FAULTS"
#endif

#include "coro.h"

/* ------------------------------------------------------------------ */
/* geometry and limits                                                 */

#define MAXN        4
#define MAXD        5  /* + one spare for NEWDISK */
#define BLK_SECT    8u /* 4 KiB blocks */
#define CHUNK_BLKS  4u /* bitmap chunk: 16 KiB */
#define CHUNK_SECT  (BLK_SECT * CHUNK_BLKS)
#define NCHUNK      12u
#define NBLK        (NCHUNK * CHUNK_BLKS) /* 48 blocks */
#define WINDOW_SECT (2 * CHUNK_SECT)
#define CLIENTS     2 /* client coroutines per node */
#define MAXLOCKS    24
#define MAXALT      8

/* ------------------------------------------------------------------ */
/* options, counters                                                   */

/*
 * Injected bugs (--inject-bug).  Most break a rule the engine runs too:
 * they switch clr_rules_fault (engine/cluster/rules.h), which this
 * program's own build of engine/cluster/rules.c and mdc.c honours
 * (CLR_RULES_FAULTS, tests/sim/local.mk).  The others break the
 * simulator's own data path (the engine has its own, engine/array), to
 * show the checkers catch what they are for.
 */
enum bug {
    BUG_NONE = 0,
    /* sim-local: checker self-tests */
    BUG_BITMAP_AFTER_DATA, /* legs issued before the bit is on disk */
    BUG_ACK_BEFORE_FAIL,   /* failed leg not marked faulty before ack */
    BUG_CLEAR_PENDING,     /* sweep clears bits under pending writes */
    BUG_RESYNC_ANY_SOURCE, /* resync reads a random in-sync leg */
    BUG_READD_READ_EARLY,  /* a rebuilding device is read before in sync */
    /* shared: engine/cluster/mdc.c */
    BUG_BALANCE_RECOVERY, /* clr_mdc_read_first() says no */
    BUG_NO_DRAIN,         /* RESYNCING acked without drain() */
    BUG_NEWDISK_IGNORE,   /* the adder activates a NEWDISK some node lacks */
    BUG_LEAVE_NO_SYNC,    /* a leaver with NEEDED chunks says it is clean */
    /* shared: engine/cluster/rules.c */
    BUG_IGNORE_WINDOW,  /* admission ignores the remote resync window */
    BUG_IGNORE_HOLD,    /* admission ignores the write hold */
    BUG_READD_NO_WRITE, /* receivers of RE_ADD do not write the device */
    BUG_ORPHAN_NEVER,   /* a dead rebuilder's rebuild is never adopted */
    BUG_REBUILD_EARLY,  /* a rebuild declared done while others resync */
    BUG_SB_NO_FAULTY,   /* a reload ignores other nodes' faulty marks */
    BUG_START_MISSING,  /* a start ignores a member re-added meanwhile */
    BUG_NCOUNT
};
static const char *const bug_names[BUG_NCOUNT] = {
    "none",
    "bitmap-after-data",
    "ack-before-fail",
    "clear-pending",
    "resync-any-source",
    "readd-read-early",
    "balance-in-recovery",
    "no-drain",
    "newdisk-ignore-enoent",
    "leave-no-needs-sync",
    "ignore-window",
    "ignore-hold",
    "readd-no-write",
    "orphan-never",
    "rebuild-early",
    "sb-no-faulty",
    "start-missing",
};
static const enum clr_rules_fault bug_fault[BUG_NCOUNT] = {
    [BUG_BALANCE_RECOVERY] = CLR_RULES_FAULT_BALANCE_RECOVERY,
    [BUG_NO_DRAIN] = CLR_RULES_FAULT_NO_DRAIN,
    [BUG_NEWDISK_IGNORE] = CLR_RULES_FAULT_NEWDISK_IGNORE,
    [BUG_LEAVE_NO_SYNC] = CLR_RULES_FAULT_LEAVE_NO_SYNC,
    [BUG_IGNORE_WINDOW] = CLR_RULES_FAULT_IGNORE_WINDOW,
    [BUG_IGNORE_HOLD] = CLR_RULES_FAULT_IGNORE_HOLD,
    [BUG_READD_NO_WRITE] = CLR_RULES_FAULT_READD_NO_WRITE,
    [BUG_ORPHAN_NEVER] = CLR_RULES_FAULT_ORPHAN_NEVER,
    [BUG_REBUILD_EARLY] = CLR_RULES_FAULT_REBUILD_EARLY,
    [BUG_SB_NO_FAULTY] = CLR_RULES_FAULT_SB_NO_FAULTY,
    [BUG_START_MISSING] = CLR_RULES_FAULT_START_MISSING,
};

struct opts {
    unsigned nodes, devices;
    uint64_t steps;
    bool verbose;
    enum bug bug;
    bool drain_legs; /* drain waits for legs only (md's quiesce) */
    bool no_faults;
    bool trust_loaded;        /* loaded own bits count as on disk */
    bool no_start_sb;         /* no superblock update when a node starts */
    bool wa_join_announce;    /* workaround: clean join sends TAKEOVER too */
    bool wa_reload;           /* workaround: re-read the sb after a death */
    bool no_write_behind;     /* stop writing a device others failed at once */
    bool no_write_retry;      /* a write waits for its device failure to be
                * announced while in flight (deadlock-prone) */
    bool wa_lvb_zero;         /* workaround: an LVB not valid reads as 0 */
    bool wa_join_lvb;         /* workaround: hold j's messages while join
                * reads j's LVB */
    bool wa_join_vacated;     /* workaround: join reads a zero LVB for a slot
                * whose TAKEOVER by another node it processed */
    bool no_readd;            /* no heal / re-add of failed devices */
    bool no_newdisk;          /* no NEWDISK of a spare */
    bool no_leave;            /* no clean leave */
    bool resync_merged_early; /* a running resync takes merged chunks
                   * before want_resync() */
};

struct counters {
    uint64_t seeds, failures;
    uint64_t crashes, restarts, dev_failures, path_losses, slow_io;
    uint64_t takeovers, resync_chunks, msgs, writes_acked, reads_checked;
    uint64_t reopened, join_retries, steps, orphan_bits, write_retries;
    uint64_t leaves_clean, leaves_unclean, heals, readds, readd_rollbacks;
    uint64_t newdisks, newdisk_rollbacks, rebuilds_done, adoptions;
    uint64_t start_refusals;
    uint64_t late_starts;
    uint64_t holds, held_writes;
};

/* ------------------------------------------------------------------ */
/* the simulated world                                                 */

struct bc { /* one broadcast in flight */
    struct bc *next;
    int pending; /* receivers not finished */
    unsigned refused;
};

struct nlock { /* a node's lock object on one resource */
    char name[CLR_LOCK_NAME_MAX + 1];
    uint64_t lkid;
    int mode; /* granted, CLR_LOCK_IV: none in the table */
    bool busy;
    int status;
    bool has_lvb;
    uint8_t lvb[CLR_LOCK_LVB_LEN];
};

struct wr { /* a local client write in flight */
    bool used;
    uint64_t lo, hi; /* sectors */
    bool legs_done;
    bool issued; /* legs issued, to devmask */
    unsigned devmask;
    uint64_t seq; /* issue order */
};

struct node {
    int idx;
    bool live;   /* incarnation running (started, not crashed) */
    bool member; /* receives broadcasts */
    bool joined; /* clr_mdc_join() succeeded */
    bool ever_started;
    uint64_t inc; /* lock-table owner id of this incarnation */
    unsigned slot;
    struct clr_mdc mdc;
    bool mdc_init;
    bool in_sync[MAXD];          /* this node's view of the roles */
    int failing[MAXD];           /* 1: our metadata update for it in progress */
    bool write_behind[MAXD];     /* faulty, still written (errors ignored) */
    bool rebuild[MAXD];          /* re-added / new: written, never read */
    bool full_merged[MAXD];      /* NEWDISK: all chunks made NEEDED here */
    int readd_from[MAXD];        /* slot whose RE_ADD we follow, -1 */
    bool readd_seen[MAXD];       /* this incarnation processed an RE_ADD of it */
    uint64_t readd_events[MAXD]; /* superblock events at its RE_ADD (0:
                      * none): a FAULTY role no newer predates
                      * it (engine/cluster/rules.h) */
    bool known[MAXD];            /* a member in this node's view */
    bool sees_new;               /* NEWDISK: this node can see the spare */
    bool candidate;              /* NEWDISK: find_disk() found it */
    bool leaving;                /* clean stop in progress */
    bool admin;                  /* a re-add / NEWDISK / leave sequence runs */
    int clients_running;
    bool resyncing, recovering_now;
    uint64_t dead_slots; /* slots seen dead or left (rebuild adoption) */
    uint64_t wr_seq;
    uint64_t vacated;        /* slots taken over by another node since their
                 * owner last spoke (join-takeover-lvb) */
    uint64_t bm_epoch;       /* bumped when a device joins the bitmap's writes */
    struct co *meta_holder;  /* our admin sequence holding `metadata` */
    bool meta_dirty;         /* a failure written under it: announce */
    int meta_failing;        /* failures being written under it */
    unsigned meta_fail_mask; /* failing[] set under it, cleared once
                  * its METADATA_UPDATED went out */
    uint64_t meta_done;      /* admin METADATA_UPDATED rounds done */
    int lvb_reading;         /* join reads this slot's LVB (workaround), -1 */
    bool sending;            /* md's send-lock bit: one broadcast per node */
    /* bitmap model */
    int pending[NCHUNK];
    bool dirty[NCHUNK], ondisk[NCHUNK], needed[NCHUNK];
    bool held[NCHUNK];           /* merged, NEEDED, not resynced before want_resync */
    uint32_t needed_gen[NCHUNK]; /* bumped when a merge makes it NEEDED */
    uint64_t last_write[NCHUNK];
    int resync_chunk; /* local range lock held by the resync, -1 */
    bool want_resync;
    struct wr wr[CLIENTS * 2];
    struct nlock locks[MAXLOCKS];
    unsigned nlocks;
    uint64_t next_lkid;
    uint32_t seq;
    uint64_t recv_next, recv_serving;
    int chg;                 /* wait channel of this node */
    uint64_t crash_at_fence; /* pending fence of the previous incarnation */
    uint64_t crash_seen;     /* that incarnation's crash was seen (PREP,
                  * MEMBER_LOST delivered) */
    /* checker (h): S.evseq when this incarnation got MEMBER_LOST for a
     * slot, 0 once it got MEMBER_FAILED for it (the model, not the core) */
    uint64_t lost_seq[MAXN];
};

enum io_kind {
    IO_WRITE,
    IO_READ,
    IO_BM_OWN,
    IO_BM_CLEAR,
    IO_RS_READ,
    IO_RS_WRITE
};

struct io {
    struct io *next;
    struct io *anext, *aprev; /* every live io (freed at reset) */
    int node;
    uint64_t inc;
    int dev;
    enum io_kind kind;
    unsigned b0, nb;
    uint64_t val[CHUNK_BLKS * 2];
    unsigned slot; /* IO_BM_CLEAR */
    uint64_t due;
    bool done, ok, orphan;
    struct co *waiter;
};

struct dev {
    uint64_t data[NBLK];
    bool bm[MAXN][NCHUNK];
    bool dead; /* all I/O fails */
    uint64_t slow_until;
};

struct blkm { /* the checker's model of one block */
    uint64_t val;
    unsigned nalt; /* > 0: uncertain, val or alt[] */
    uint64_t alt[MAXALT];
    bool fixed_unacked; /* fixed by a read of unacknowledged data */
    /* workload (the filesystem's promise): one writer or readers */
    int writer;
    uint64_t winc, wval;
    int readers;
    uint8_t rd[MAXN];
};

struct fault {
    uint64_t at;
    enum {
        F_CRASH,
        F_DEV,
        F_PATH,
        F_SLOW_DEV,
        F_SLOW_NODE,
        F_RESTART,
        F_PREP,
        F_FENCE,
        F_HEAL,
        F_READD,
        F_NEWDISK,
        F_LEAVE,
        F_LEFT
    } type;
    int a, b;
    uint64_t inc, len;
    bool fired;
};

#define MAXFAULTS 512

struct sim {
    struct opts o;
    uint64_t seed, rng;
    uint64_t now, stop_at, bound;
    bool stopping;
    struct clr_lt *lt;
    struct node n[MAXN];
    struct dev d[MAXD];
    struct blkm blk[NBLK];
    struct {
        uint64_t events;
        bool faulty[MAXD];
        bool member[MAXD];
        bool rebuilding[MAXD]; /* written by all, read by none */
        int rebuilder[MAXD];   /* slot that finishes the rebuild */
        bool full[MAXD];       /* NEWDISK: every chunk to recover */
    } sb;
    int ndev;           /* o.devices + the spare */
    int spare;          /* the NEWDISK device index */
    bool spare_sb;      /* the spare carries a superblock */
    int readd_refuser;  /* node refusing the first RE_ADD, -1 */
    unsigned lacks_new; /* nodes that cannot see the spare */
    int safe_dev;       /* never faulted */
    unsigned faulted_devs;
    bool dev_faulted[MAXD];
    bool path_lost[MAXN][MAXD];
    uint64_t node_slow_until[MAXN];
    struct co **cos;
    size_t ncos, capcos;
    struct io *ios;     /* pending I/O */
    struct io *all_ios; /* every allocated io: a dead coroutine's are
                 * freed at reset */
    struct bc *bcs;
    struct fault f[MAXFAULTS];
    unsigned nf;
    uint64_t next_inc, next_val;
    uint64_t evseq; /* orders MEMBER_LOST deliveries and write
                 * admissions for checker (h) */
    int wl_chan;
    /* resync in progress per block (checker d): node+1, 0 none */
    int rs_active[NBLK];
    uint64_t digest;
    char failure[512];
    bool failed;
    struct counters c;
};

static struct sim S;

uint64_t sim_now(void)
{
    return S.now;
}

/* ------------------------------------------------------------------ */
/* PRNG (splitmix64), trace, failure                                   */

static uint64_t rnd(void)
{
    uint64_t z = (S.rng += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rndn(uint64_t n)
{
    return n ? rnd() % n : 0;
}

static bool chance(unsigned pct)
{
    return rndn(100) < pct;
}

static void digest_add(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        S.digest ^= (uint8_t)s[i];
        S.digest *= 0x100000001b3ull;
    }
}

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void trace(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int len;

    len = snprintf(buf, sizeof(buf), "%8" PRIu64 " ", S.now);
    va_start(ap, fmt);
    len += vsnprintf(buf + len, sizeof(buf) - (size_t)len, fmt, ap);
    va_end(ap);
    if (len >= (int)sizeof(buf))
        len = sizeof(buf) - 1;
    digest_add(buf, (size_t)len);
    if (S.o.verbose)
        printf("%s\n", buf);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;

    if (S.failed)
        return;
    S.failed = true;
    va_start(ap, fmt);
    vsnprintf(S.failure, sizeof(S.failure), fmt, ap);
    va_end(ap);
    trace("VIOLATION %s", S.failure);
}

/* ------------------------------------------------------------------ */
/* scheduler glue                                                      */

static void wake(const void *chan)
{
    for (size_t i = 0; i < S.ncos; i++)
        if (S.cos[i] && S.cos[i]->st == CO_WAITING && S.cos[i]->chan == chan)
            S.cos[i]->st = CO_RUNNABLE;
}

static void wake_node(struct node *n)
{
    wake(&n->chg);
}

static struct co *spawn(struct node *n, const char *name, void (*fn)(void *), void *arg)
{
    struct co *c = co_new(n ? n->idx : -1, n ? n->inc : 0, name, fn, arg);

    if (S.ncos == S.capcos) {
        S.capcos = S.capcos ? S.capcos * 2 : 64;
        S.cos = realloc(S.cos, S.capcos * sizeof(*S.cos));
        if (!S.cos)
            abort();
    }
    S.cos[S.ncos++] = c;
    return c;
}

static struct node *self(void)
{
    return co_cur && co_cur->node >= 0 ? &S.n[co_cur->node] : NULL;
}

static unsigned io_delay(int node, int dev)
{
    unsigned d = 1 + (unsigned)rndn(4);

    if (S.d[dev].slow_until > S.now || S.node_slow_until[node] > S.now)
        d *= 15;
    return d;
}

/* ------------------------------------------------------------------ */
/* checker helpers                                                     */

/* In sync according to the superblock: a member, neither faulty nor
 * being rebuilt. */
static bool sb_in_sync(int d)
{
    return S.sb.member[d] && !S.sb.faulty[d] && !S.sb.rebuilding[d];
}

static bool blk_allows(const struct blkm *b, uint64_t v)
{
    if (b->val == v)
        return true;
    for (unsigned i = 0; i < b->nalt; i++)
        if (b->alt[i] == v)
            return true;
    return false;
}

static void blk_add_alt(struct blkm *b, uint64_t v)
{
    if (blk_allows(b, v))
        return;
    if (b->nalt < MAXALT)
        b->alt[b->nalt++] = v;
    else
        b->alt[MAXALT - 1] = v;
}

/* A read of block @b by node @n returned @v. */
static void check_read(struct node *n, unsigned b, uint64_t v, int dev, const char *what)
{
    struct blkm *m = &S.blk[b];

    S.c.reads_checked++;
    if (m->nalt) {
        if (!blk_allows(m, v)) {
            fail("(b) node %d %s block %u from dev %d read %" PRIx64 ", not a value it may hold (old %" PRIx64
                 ")",
                 n->idx, what, b, dev, v, m->val);
            return;
        }
        trace("n%d %s block %u settles at %" PRIx64 " (dev %d)", n->idx, what, b, v, dev);
        m->val = v;
        m->nalt = 0;
        m->fixed_unacked = true;
        return;
    }
    if (v != m->val)
        fail("(b) node %d %s block %u from dev %d read %" PRIx64 ", expected %" PRIx64, n->idx, what, b, dev,
             v, m->val);
}

/* Does a client leg write of any node overlap blocks [b0, b0+nb)? */
static struct io *client_leg_overlap(unsigned b0, unsigned nb)
{
    for (struct io *io = S.ios; io; io = io->next)
        if (io->kind == IO_WRITE && io->b0 < b0 + nb && b0 < io->b0 + io->nb)
            return io;
    return NULL;
}

/* A device just became faulty in the superblock: a block whose
 * unacknowledged value was fixed by a read may now read differently
 * (double fault before resync; documented, counted). */
static void reopen_after_dev_failure(void)
{
    for (unsigned b = 0; b < NBLK; b++) {
        struct blkm *m = &S.blk[b];
        bool differ = false;

        if (!m->fixed_unacked || m->nalt)
            continue;
        for (int d = 0; d < S.ndev; d++)
            if (sb_in_sync(d) && S.d[d].data[b] != m->val)
                differ = true;
        if (!differ)
            continue;
        for (int d = 0; d < S.ndev; d++)
            if (sb_in_sync(d))
                blk_add_alt(m, S.d[d].data[b]);
        S.c.reopened++;
        trace("block %u unacked value reopened by device failure", b);
    }
}

/* ------------------------------------------------------------------ */
/* I/O                                                                 */

static void io_free(struct io *io)
{
    if (io->aprev)
        io->aprev->anext = io->anext;
    else
        S.all_ios = io->anext;
    if (io->anext)
        io->anext->aprev = io->aprev;
    free(io);
}

static struct io *io_submit(struct node *n, int dev, enum io_kind kind, unsigned b0, unsigned nb)
{
    struct io *io = calloc(1, sizeof(*io));

    if (!io)
        abort();
    io->anext = S.all_ios;
    if (S.all_ios)
        S.all_ios->aprev = io;
    S.all_ios = io;
    io->node = n->idx;
    io->inc = n->inc;
    io->dev = dev;
    io->kind = kind;
    io->b0 = b0;
    io->nb = nb;
    io->due = S.now + io_delay(n->idx, dev);
    io->waiter = co_cur;
    io->slot = n->slot;
    /* append: completion order for equal due times is submission order */
    struct io **pp = &S.ios;
    while (*pp)
        pp = &(*pp)->next;
    *pp = io;
    return io;
}

static void bm_image_check_clear(int dev, unsigned slot, unsigned c, int node)
{
    /* (c): a bit goes 1 -> 0 on disk: no client leg of the slot's owner
     * in flight under it */
    for (struct io *io = S.ios; io; io = io->next) {
        if (io->kind != IO_WRITE || io->node != node)
            continue;
        if (io->b0 / CHUNK_BLKS <= c && c <= (io->b0 + io->nb - 1) / CHUNK_BLKS)
            fail("(c) slot %u chunk %u cleared on dev %d while node %d"
                 " has a leg in flight there",
                 slot, c, dev, node);
    }
}

static void io_apply(struct io *io)
{
    struct dev *d = &S.d[io->dev];
    struct node *n = &S.n[io->node];
    bool alive = n->inc == io->inc;

    io->ok = !d->dead && !S.path_lost[io->node][io->dev];
    io->done = true;
    if (!io->ok) {
        trace("io n%d dev%d kind %d b%u+%u FAILED", io->node, io->dev, io->kind, io->b0, io->nb);
        return;
    }
    switch (io->kind) {
    case IO_WRITE:
    case IO_RS_WRITE:
        for (unsigned i = 0; i < io->nb; i++)
            d->data[io->b0 + i] = io->val[i];
        break;
    case IO_READ:
    case IO_RS_READ:
        for (unsigned i = 0; i < io->nb; i++)
            io->val[i] = d->data[io->b0 + i];
        break;
    case IO_BM_OWN:
        /* the slot image at completion time (see design notes) */
        for (unsigned c = 0; c < NCHUNK; c++) {
            bool v = alive ? n->dirty[c] : d->bm[io->slot][c];

            if (d->bm[io->slot][c] && !v)
                bm_image_check_clear(io->dev, io->slot, c, io->node);
            d->bm[io->slot][c] = v;
        }
        break;
    case IO_BM_CLEAR:
        for (unsigned c = 0; c < NCHUNK; c++)
            d->bm[io->slot][c] = false;
        break;
    }
}

/* Run every I/O due now, in order. */
static void io_complete_due(void)
{
    struct io **pp = &S.ios;

    while (*pp) {
        struct io *io = *pp;

        if (io->due > S.now) {
            pp = &io->next;
            continue;
        }
        *pp = io->next;
        io->next = NULL;
        io_apply(io);
        if (io->orphan)
            io_free(io);
        else if (io->waiter && io->waiter->st == CO_WAITING && io->waiter->chan == io)
            io->waiter->st = CO_RUNNABLE;
    }
}

static void io_wait(struct io *io)
{
    while (!io->done)
        co_wait(io, "io");
}

/* ------------------------------------------------------------------ */
/* lock service on the lock table                                      */

static void lt_emit(void *arg, const struct clr_lt_effect *e)
{
    (void)arg;
    for (int i = 0; i < MAXN; i++) {
        struct node *n = &S.n[i];

        if (!n->live || n->inc != e->owner)
            continue;
        for (unsigned k = 0; k < n->nlocks; k++) {
            struct nlock *l = &n->locks[k];

            if (l->lkid != e->lkid)
                continue;
            switch (e->type) {
            case CLR_LT_BAST:
                trace("n%d BAST %s %s", i, l->name, clr_lock_mode_name(e->mode));
                return;
            case CLR_LT_GRANTED:
                l->mode = e->mode;
                l->status = 0;
                l->has_lvb = e->has_lvb;
                if (e->has_lvb)
                    memcpy(l->lvb, e->lvb, sizeof(l->lvb));
                /* the host API has no VALNOTVALID: a dead PW
                 * holder's stale LVB reaches the core as is */
                if (e->has_lvb && S.o.wa_lvb_zero && (e->sb_flags & CLR_LOCK_SB_VALNOTVALID))
                    memset(l->lvb, 0, sizeof(l->lvb));
                break;
            case CLR_LT_FAILED:
            case CLR_LT_CANCELED:
                l->mode = e->mode;
                l->status = e->status;
                break;
            case CLR_LT_UNLOCKED:
                l->mode = CLR_LOCK_IV;
                l->status = 0;
                break;
            }
            trace("n%d lock %s -> %s (%d)", i, l->name, clr_lock_mode_name(l->mode), l->status);
            l->busy = false;
            wake(l);
            return;
        }
    }
}

static struct nlock *nlock_get(struct node *n, const char *res)
{
    for (unsigned k = 0; k < n->nlocks; k++)
        if (!strcmp(n->locks[k].name, res))
            return &n->locks[k];
    if (n->nlocks == MAXLOCKS) {
        fail("node %d: too many lock resources", n->idx);
        return &n->locks[0];
    }
    struct nlock *l = &n->locks[n->nlocks++];

    memset(l, 0, sizeof(*l));
    snprintf(l->name, sizeof(l->name), "%s", res);
    l->lkid = ++n->next_lkid;
    l->mode = CLR_LOCK_IV;
    return l;
}

static int sim_lock(struct node *n, const char *res, int mode, unsigned flags, uint8_t *lvb)
{
    struct nlock *l;

    co_yield ();
    l = nlock_get(n, res);
    trace("n%d lock %s %s%s%s", n->idx, res, clr_lock_mode_name(mode),
          flags & CLR_LOCK_F_NOQUEUE ? " NOQUEUE" : "", flags & CLR_LOCK_F_VALBLK ? " VALBLK" : "");
    l->busy = true;
    l->has_lvb = false;
    if ((S.o.wa_join_lvb || S.o.wa_join_vacated) && !n->joined && mode == CLR_LOCK_CR &&
        (flags & CLR_LOCK_F_VALBLK) && !strncmp(res, "bitmap", 6))
        n->lvb_reading = atoi(res + 6);
    if (l->mode == CLR_LOCK_IV)
        clr_lt_request(S.lt, n->inc, l->lkid, res, strlen(res), mode, flags, lt_emit, NULL);
    else
        clr_lt_convert(S.lt, n->inc, l->lkid, mode, flags, (flags & CLR_LOCK_F_VALBLK) ? lvb : NULL, lt_emit,
                       NULL);
    while (l->busy)
        co_wait(l, l->name);
    if (l->status == 0 && lvb && (flags & CLR_LOCK_F_VALBLK) && l->has_lvb)
        memcpy(lvb, l->lvb, CLR_LOCK_LVB_LEN);
    /* workaround: a joiner reading the LVB of a slot a survivor took
     * over (it holds the lock, so join thinks the owner lives): the LVB
     * is the departed owner's */
    if (S.o.wa_join_vacated && l->status == 0 && lvb && !n->joined && mode == CLR_LOCK_CR &&
        (flags & CLR_LOCK_F_VALBLK) && !strncmp(res, "bitmap", 6) && (n->vacated & (1ull << atoi(res + 6)))) {
        trace("n%d ignores the LVB of vacated %s", n->idx, res);
        memset(lvb, 0, CLR_LOCK_LVB_LEN);
    }
    return l->status;
}

static int h_lock(void *arg, const char *res, int mode, unsigned flags, uint8_t *lvb)
{
    return sim_lock(arg, res, mode, flags, lvb);
}

static int h_unlock(void *arg, const char *res)
{
    struct node *n = arg;
    struct nlock *l;

    co_yield ();
    l = nlock_get(n, res);
    trace("n%d unlock %s", n->idx, res);
    if (l->mode == CLR_LOCK_IV)
        return 0;
    l->busy = true;
    clr_lt_unlock(S.lt, n->inc, l->lkid, 0, NULL, lt_emit, NULL);
    while (l->busy)
        co_wait(l, l->name);
    /* join applies the LVB right after this returns, before it calls
     * the host again: messages of that slot may go on after that */
    if (n->lvb_reading >= 0 && !strncmp(res, "bitmap", 6) && atoi(res + 6) == n->lvb_reading) {
        n->lvb_reading = -1;
        wake_node(n);
    }
    return l->status;
}

/* ------------------------------------------------------------------ */
/* broadcast                                                           */

struct recv_arg {
    struct clr_bcast_msg raw;
    struct bc *bc;
    uint64_t ticket;
};

static void recv_co(void *arg)
{
    struct recv_arg *ra = arg;
    struct node *n = self();
    struct clr_mdc_msg m;
    int r;

    /* receiving starts with the join (its TAKEOVER needs the token) */
    clr_mdc_msg_decode(&ra->raw, &m);
    while (!n->mdc_init || n->recv_serving != ra->ticket ||
           (n->lvb_reading >= 0 && S.o.wa_join_lvb && n->lvb_reading == ra->raw.sender_slot - 1) ||
           (n->lvb_reading >= 0 && S.o.wa_join_vacated && ra->raw.type == CLR_MDC_TAKEOVER &&
            (int)m.slot == n->lvb_reading))
        co_wait(&n->chg, "receive turn");
    trace("n%d receive %s from slot %d lo %" PRIu64 " hi %" PRIu64, n->idx, clr_mdc_msg_name(ra->raw.type),
          m.sender, m.lo, m.hi);
    n->vacated &= ~(1ull << m.sender);
    if (ra->raw.type == CLR_MDC_TAKEOVER && m.slot != (unsigned)m.sender)
        n->vacated |= 1ull << m.slot;
    r = clr_mdc_receive(&n->mdc, &ra->raw);
    /* that slot rejoined: alive again (after its TAKEOVER's reload
     * dropped what its previous incarnation left) */
    if (ra->raw.type == CLR_MDC_TAKEOVER && m.slot == (unsigned)m.sender)
        n->dead_slots &= ~(1ull << m.slot);
    trace("n%d received %s: %d", n->idx, clr_mdc_msg_name(ra->raw.type), r);
    if (r < 0)
        ra->bc->refused++;
    ra->bc->pending--;
    co_cur->bc_done = true;
    wake(ra->bc);
    n->recv_serving++;
    wake_node(n);
    free(ra);
}

/* Frees a finished or killed coroutine: a receive killed before it ran to
 * the end (its node crashed or left) still owns its argument. */
static void sim_co_free(struct co *c)
{
    if (!c)
        return;
    if (c->fn == recv_co && c->st != CO_DONE)
        free(c->arg);
    co_free(c);
}

static int h_send(void *arg, const struct clr_mdc_msg *m, unsigned *refused)
{
    struct node *n = arg;
    struct clr_bcast_msg raw;
    struct bc *bc;
    int r;

    while (n->sending)
        co_wait(&n->chg, "local send lock");
    n->sending = true;
    r = sim_lock(n, "token", CLR_LOCK_EX, 0, NULL);
    if (r) {
        n->sending = false;
        wake_node(n);
        return r;
    }
    memset(&raw, 0, sizeof(raw));
    clr_mdc_msg_encode(m, &raw);
    raw.version = CLR_BCAST_VERSION;
    raw.sender_slot = (uint16_t)(n->slot + 1);
    raw.seq = ++n->seq;
    bc = calloc(1, sizeof(*bc));
    if (!bc)
        abort();
    bc->next = S.bcs;
    S.bcs = bc;
    S.c.msgs++;
    trace("n%d send %s lo %" PRIu64 " hi %" PRIu64 " slot %u", n->idx, clr_mdc_msg_name(m->type), m->lo,
          m->hi, m->slot);
    for (int j = 0; j < (int)S.o.nodes; j++) {
        struct node *o = &S.n[j];
        struct recv_arg *ra;
        struct co *c;

        if (o == n || !o->live || !o->member)
            continue;
        ra = calloc(1, sizeof(*ra));
        if (!ra)
            abort();
        ra->raw = raw;
        ra->bc = bc;
        ra->ticket = o->recv_next++;
        c = spawn(o, "recv", recv_co, ra);
        c->bc = bc;
        bc->pending++;
    }
    while (bc->pending > 0)
        co_wait(bc, "acks");
    if (refused)
        *refused = bc->refused;
    sim_lock(n, "token", CLR_LOCK_NL, 0, NULL);
    n->sending = false;
    wake_node(n);
    return 0;
}

/* ------------------------------------------------------------------ */
/* bitmap, superblock                                                  */

/* May this node read @d?  (--inject-bug=readd-read-early: a device still
 * being rebuilt too.) */
static bool readable(struct node *n, int d)
{
    return n->in_sync[d] || (S.o.bug == BUG_READD_READ_EARLY && n->rebuild[d]);
}

static int first_in_sync(struct node *n)
{
    for (int d = 0; d < S.ndev; d++)
        if (readable(n, d))
            return d;
    return -1;
}

static bool degraded(struct node *n)
{
    for (int d = 0; d < S.ndev; d++)
        if (n->known[d] && !n->in_sync[d])
            return true;
    return false;
}

static void fail_device(struct node *n, int dev, const char *why);

/* apply_sb() outside a received message */
static const struct clr_mdc_rx no_rx = { -1, -1 };

/* Write this node's slot to every in-sync device; durable on the good
 * ones on return.  @return whether some device failed (in @failed[]). */
static bool flush_own_failed(struct node *n, bool *failed)
{
    struct io *ios[MAXD] = { 0 };
    bool any = false;

    trace("n%d bitmap flush", n->idx);
    for (int d = 0; d < S.ndev; d++)
        if (n->in_sync[d] || n->rebuild[d])
            ios[d] = io_submit(n, d, IO_BM_OWN, 0, 0);
    for (int d = 0; d < S.ndev; d++) {
        if (!ios[d])
            continue;
        io_wait(ios[d]);
        if (!ios[d]->ok && n->in_sync[d])
            failed[d] = any = true;
        io_free(ios[d]);
    }
    return any;
}

/* Write this node's slot to every in-sync device; durable on return. */
static void flush_own(struct node *n)
{
    struct io *ios[MAXD] = { 0 };

    trace("n%d bitmap flush", n->idx);
    for (int d = 0; d < S.ndev; d++)
        if (n->in_sync[d] || n->rebuild[d])
            ios[d] = io_submit(n, d, IO_BM_OWN, 0, 0);
    for (int d = 0; d < S.ndev; d++) {
        if (!ios[d])
            continue;
        io_wait(ios[d]);
        bool ok = ios[d]->ok;

        io_free(ios[d]);
        if (!ok && n->in_sync[d])
            fail_device(n, d, "bitmap write");
    }
}

/*
 * The superblock as md keeps it, for the cluster rules (engine/cluster/
 * rules.h): device @d's role in the newest superblock is its index (RAID1
 * here: role = device), FAULTY, or SPARE (not a member).  The simulator
 * keeps one superblock for all devices (written atomically), so a
 * device's own superblock says the same, plus recovery (S.sb.rebuilding:
 * md's recovery offset not at the end; bitmap recovery unless full).
 * What md does not store, the rebuilder's slot, each node learns as the
 * engine does (rules: the sender of the METADATA_UPDATED that activated
 * it, of its RE_ADD); S.sb.rebuilder is only the model's record of who
 * drives it, used by rebuild_work() and the checker.
 */
static struct clr_rules_sbrole rules_sbrole(int d)
{
    struct clr_rules_sbrole r = { true, !S.sb.member[d]  ? CLR_RULES_ROLE_SPARE
                                        : S.sb.faulty[d] ? CLR_RULES_ROLE_FAULTY
                                                         : (uint16_t)d };

    return r;
}

/* Device @d's own superblock (the same one here). */
static struct clr_rules_own rules_own(int d)
{
    struct clr_rules_sbrole r = rules_sbrole(d);
    struct clr_rules_own o = { .readable = S.sb.member[d],
                               .present = true,
                               .role = r.role,
                               .recovering = S.sb.rebuilding[d],
                               .bitmap_recovery = !S.sb.full[d],
                               .events = S.sb.events };

    return o;
}

/* This node's view of device @d as the rules see a member: in sync,
 * rebuilding (written, not read; never driven locally in their sense:
 * the simulator's rebuilder finishes by writing the superblock),
 * faulty (known, neither), or a spare (not a member here). */
static struct clr_rules_member rules_member(struct node *n, int d)
{
    struct clr_rules_member m = { .role = d, .has_io = true, .rebuilder = n->readd_from[d] };

    if (n->in_sync[d]) {
        m.state = CLR_RULES_IN_SYNC;
    } else if (n->rebuild[d]) {
        m.state = CLR_RULES_REBUILDING;
        m.remote_rebuild = true;
        m.readd_events = n->readd_events[d];
    } else if (n->known[d]) {
        m.state = CLR_RULES_FAULTY;
    } else {
        m.state = CLR_RULES_SPARE;
        m.role = -1;
    }
    m.write_behind = n->write_behind[d];
    return m;
}

/* Device @d joins this node's writes (not its reads): our slot image must
 * reach it before the next legs. */
static void view_rebuilding(struct node *n, int d)
{
    n->rebuild[d] = true;
    n->bm_epoch++;
    for (unsigned c = 0; c < NCHUNK; c++)
        n->ondisk[c] = false;
    n->known[d] = true;
    n->write_behind[d] = false;
    trace("n%d sees dev%d rebuilding", n->idx, d);
}

static void view_in_sync(struct node *n, int d)
{
    n->in_sync[d] = true;
    n->rebuild[d] = false;
    n->write_behind[d] = false;
    n->known[d] = true;
    trace("n%d sees dev%d in sync", n->idx, d);
}

/* Device @d failed: not read any more.  Failed by another node (@remote):
 * our client writes keep going to it, errors ignored ("write-behind"):
 * some node may not have processed the same METADATA_UPDATED yet and
 * still read it (--no-write-behind shows the stale read).  The node that
 * fails a device holds its own acks until the announcement is done (see
 * client_write). */
static void view_faulty(struct node *n, int d, bool remote)
{
    if (n->in_sync[d]) {
        n->in_sync[d] = false;
        n->write_behind[d] = remote && !n->failing[d] && !S.o.no_write_behind;
        trace("n%d sees dev%d faulty%s", n->idx, d, n->write_behind[d] ? " (writes continue)" : "");
    }
    if (n->rebuild[d]) {
        n->rebuild[d] = false;
        n->readd_from[d] = -1;
        trace("n%d stops writing dev%d (faulty again)", n->idx, d);
    }
}

/*
 * A superblock reload (METADATA_UPDATED, a takeover, our own `metadata`):
 * the cluster rules decide what changes in this node's view, from the
 * same facts the engine reads (engine/array/array_cluster.c
 * reload_sb_ctx()); @rx: the message being processed, or none.
 */
static void apply_sb(struct node *n, const struct clr_mdc_rx *rx)
{
    struct clr_rules_ctx x = { .sender = rx->sender,
                               .type = rx->type,
                               .dead = n->dead_slots,
                               .raid_disks = (unsigned)S.ndev,
                               .sb_events = S.sb.events };
    struct clr_rules_member m[MAXD];
    struct clr_rules_sbrole sb[MAXD];
    struct clr_rules_own own[MAXD];
    struct clr_rules_change ch[MAXD];

    for (int d = 0; d < S.ndev; d++) {
        m[d] = rules_member(n, d);
        if (m[d].state == CLR_RULES_IN_SYNC || m[d].state == CLR_RULES_REBUILDING)
            clr_rules_role_set(&x, (unsigned)d, true);
        sb[d] = rules_sbrole(d);
        /* the engine reads the own superblock of spares and remote
         * rebuilds only */
        if (m[d].state == CLR_RULES_SPARE || m[d].state == CLR_RULES_REBUILDING)
            own[d] = rules_own(d);
        else
            memset(&own[d], 0, sizeof(own[d]));
    }
    clr_rules_reload(&x, m, sb, own, (unsigned)S.ndev, ch);
    for (int d = 0; d < S.ndev; d++) {
        if (ch[d].what & CLR_RULES_CH_FAULTY)
            view_faulty(n, d, true);
        if (ch[d].what & CLR_RULES_CH_ACTIVATE) {
            if (d == S.spare && !n->sees_new) {
                /* a starting node refuses to run (join_co) */
                if (n->joined)
                    fail("NEWDISK dev%d is a member, but n%d cannot"
                         " see it",
                         d, n->idx);
                continue;
            }
            /* NEWDISK activated */
            n->readd_from[d] = ch[d].rebuilder;
            view_rebuilding(n, d);
        }
        if (ch[d].what & CLR_RULES_CH_CHECKPOINT)
            n->readd_from[d] = ch[d].rebuilder;
        if (ch[d].what & CLR_RULES_CH_IN_SYNC)
            view_in_sync(n, d);
        /* the model's own bookkeeping: a NEWDISK rolled back */
        if (!S.sb.member[d] && n->known[d] && !n->in_sync[d] && !n->rebuild[d]) {
            n->known[d] = false;
            n->write_behind[d] = false;
            trace("n%d forgets dev%d", n->idx, d);
        }
        if (!S.sb.member[d] && n->candidate && d == S.spare) {
            n->candidate = false;
            trace("n%d drops the NEWDISK candidate dev%d", n->idx, d);
        }
    }
    wake_node(n);
}

static int good_dev(void)
{
    for (int d = 0; d < S.ndev; d++)
        if (sb_in_sync(d))
            return d;
    return 0;
}

/* A leg (or a bitmap/resync I/O) failed: fail the device cluster-wide
 * before going on (doc/architecture.md §3 (a), §3.2). */
static void fail_device(struct node *n, int dev, const char *why)
{
    int r;
    bool changed = false;

    /* An admin sequence of ours holds `metadata`: write the failure
     * under it; its METADATA_UPDATED announces it (the caller, unless
     * it is that sequence, waits for that). */
    if (n->meta_holder) {
        /* (the sequence itself does not wait for a coroutine of ours
         * that waits for `metadata` to announce the same failure) */
        if (co_cur != n->meta_holder)
            while (n->failing[dev])
                co_wait(&n->chg, "device failure being announced");
        if (!n->in_sync[dev])
            return;
        if (!n->meta_holder)
            goto own; /* released meanwhile */
        uint64_t gen = n->meta_done;
        bool flag = !n->failing[dev];

        if (flag) {
            n->failing[dev] = 1;
            n->meta_fail_mask |= 1u << dev;
        }
        n->meta_failing++;
        trace("n%d failing dev%d (%s) under the held metadata lock", n->idx, dev, why);
        co_sleep(1 + rndn(3));
        if (!S.sb.faulty[dev]) {
            S.sb.faulty[dev] = true;
            S.sb.events++;
            trace("sb: dev%d faulty, events %" PRIu64, dev, S.sb.events);
            reopen_after_dev_failure();
        }
        n->meta_dirty = true;
        n->meta_failing--;
        view_faulty(n, dev, false); /* our own change (no reload) */
        /* failing[dev] stays set (acks wait) until the sequence's
         * METADATA_UPDATED went out (admin_meta_end) */
        while (co_cur != n->meta_holder && n->meta_done == gen)
            co_wait(&n->chg, "device failure: admin's METADATA_UPDATED");
        wake_node(n);
        return;
    }
own:
    /* Another coroutine of ours is announcing it: the caller must not
     * go on (ack) before the cluster knows. */
    while (n->failing[dev])
        co_wait(&n->chg, "device failure being announced");
    if (!n->in_sync[dev])
        return;
    n->failing[dev] = 1;
    trace("n%d failing dev%d (%s)", n->idx, dev, why);
    r = clr_mdc_meta_begin(&n->mdc);
    if (r < 0)
        trace("n%d meta_begin: %d", n->idx, r);
    co_yield (); /* re-read the superblock */
    if (!S.sb.faulty[dev]) {
        unsigned ns = 0;

        for (int d = 0; d < S.ndev; d++)
            ns += sb_in_sync(d);
        if (ns <= 1 && sb_in_sync(dev)) {
            /* Never happens by construction (one device is never
             * faulted): the last device would freeze the array. */
            fail("last device dev%d would fail", dev);
        }
        co_sleep(1 + rndn(3)); /* superblock writes */
        if (!S.sb.faulty[dev]) {
            S.sb.faulty[dev] = true;
            S.sb.events++;
            changed = true;
            trace("sb: dev%d faulty, events %" PRIu64, dev, S.sb.events);
            reopen_after_dev_failure();
        }
    }
    apply_sb(n, &no_rx);
    if (r == 0) {
        r = clr_mdc_meta_end(&n->mdc, (uint32_t)good_dev(), changed);
        if (r < 0)
            trace("n%d meta_end: %d", n->idx, r);
    }
    n->failing[dev] = 0;
    wake_node(n);
}

static int h_bitmap_read(void *arg, unsigned slot, uint8_t *bits, size_t nbytes)
{
    struct node *n = arg;

    for (;;) {
        int d = first_in_sync(n);
        struct io *io;
        bool ok;

        if (d < 0)
            return -EIO;
        io = io_submit(n, d, IO_RS_READ, 0, 0);
        io->kind = IO_READ;
        io->nb = 0;
        io_wait(io);
        ok = io->ok;
        io_free(io);
        if (!ok) {
            fail_device(n, d, "bitmap read");
            continue;
        }
        if (S.sb.faulty[d] && n->in_sync[d])
            trace("n%d bitmap read from dev%d not yet known faulty", n->idx, d);
        memset(bits, 0, nbytes);
        for (unsigned c = 0; c < NCHUNK && c / 8 < nbytes; c++)
            if (S.d[d].bm[slot][c])
                bits[c / 8] |= (uint8_t)(1u << (c % 8));
        trace("n%d bitmap_read slot %u from dev%d: %02x%02x", n->idx, slot, d, bits[0],
              nbytes > 1 ? bits[1] : 0);
        return 0;
    }
}

static int h_bitmap_clear(void *arg, unsigned slot)
{
    struct node *n = arg;
    struct io *ios[MAXD] = { 0 };

    /* (c): the slot's bits must already be durable in ours.  A bit on
     * only some devices is a flush the dead owner never finished, so no
     * leg was issued under it: only bits on every device count. */
    for (unsigned c = 0; c < NCHUNK; c++) {
        bool all = true;

        for (int d = 0; d < S.ndev; d++)
            if (n->in_sync[d] && sb_in_sync(d) && !S.d[d].bm[slot][c])
                all = false;
        if (all && n->needed[c]) { /* (not NEEDED: resynced already) */
            for (int e = 0; e < S.ndev; e++)
                if (n->in_sync[e] && sb_in_sync(e) && !S.d[e].bm[n->slot][c])
                    fail("(c) n%d clears slot %u chunk %u before"
                         " it is durable in its slot %u on dev%d",
                         n->idx, slot, c, n->slot, e);
        }
    }
    trace("n%d bitmap_clear slot %u", n->idx, slot);
    for (int d = 0; d < S.ndev; d++)
        if (n->in_sync[d] || n->rebuild[d]) {
            ios[d] = io_submit(n, d, IO_BM_CLEAR, 0, 0);
            ios[d]->slot = slot;
        }
    for (int d = 0; d < S.ndev; d++) {
        if (!ios[d])
            continue;
        io_wait(ios[d]);
        bool ok = ios[d]->ok;

        io_free(ios[d]);
        if (!ok)
            fail_device(n, d, "bitmap clear");
    }
    return 0;
}

static int h_bitmap_merge(void *arg, const uint8_t *bits, size_t nbytes)
{
    struct node *n = arg;
    unsigned cnt = 0;

    for (unsigned c = 0; c < NCHUNK && c / 8 < nbytes; c++) {
        if (!(bits[c / 8] & (1u << (c % 8))))
            continue;
        n->dirty[c] = true;
        n->needed[c] = true;
        n->held[c] = !S.o.resync_merged_early;
        n->needed_gen[c]++;
        n->ondisk[c] = false;
        cnt++;
    }
    trace("n%d bitmap_merge %u chunks", n->idx, cnt);
    co_yield ();
    flush_own(n);
    for (unsigned c = 0; c < NCHUNK && c / 8 < nbytes; c++)
        if (bits[c / 8] & (1u << (c % 8)))
            n->ondisk[c] = true;
    return 0;
}

static void h_want_resync(void *arg)
{
    struct node *n = arg;

    n->want_resync = true;
    memset(n->held, 0, sizeof(n->held));
    wake_node(n);
}

static bool local_write_overlaps(struct node *n, uint64_t lo, uint64_t hi)
{
    for (unsigned i = 0; i < CLIENTS * 2; i++) {
        struct wr *w = &n->wr[i];

        if (!w->used || w->hi <= lo || hi <= w->lo)
            continue;
        if (S.o.drain_legs && w->legs_done)
            continue;
        return true;
    }
    return false;
}

static int h_drain(void *arg, uint64_t lo, uint64_t hi)
{
    struct node *n = arg;

    trace("n%d drain [%" PRIu64 ", %" PRIu64 ")", n->idx, lo, hi);
    co_yield ();
    while (local_write_overlaps(n, lo, hi))
        co_wait(&n->chg, "drain");
    trace("n%d drained", n->idx);
    return 0;
}

static int h_reload_sb(void *arg, uint32_t dev, const struct clr_mdc_rx *rx)
{
    struct node *n = arg;

    co_yield ();
    trace("n%d reload_sb dev%u", n->idx, dev);
    apply_sb(n, rx);
    return 0;
}

static int h_find_disk(void *arg, const uint8_t uuid[16], uint32_t dev, const struct clr_mdc_rx *rx)
{
    (void)rx;
    struct node *n = arg;

    (void)uuid;
    co_yield ();
    if ((int)dev != S.spare || !S.spare_sb || !n->sees_new) {
        trace("n%d find_disk dev%u: not here", n->idx, dev);
        return -ENOENT;
    }
    n->candidate = true;
    trace("n%d find_disk dev%u: found", n->idx, dev);
    return 0;
}

static int h_remote_remove(void *arg, uint32_t dev, const struct clr_mdc_rx *rx)
{
    (void)rx;
    co_yield ();
    return 0;
}

/* Local writes in flight whose legs skipped @dev. */
static bool writes_without(struct node *n, int dev, uint64_t upto)
{
    for (unsigned i = 0; i < CLIENTS * 2; i++) {
        struct wr *w = &n->wr[i];

        if (w->used && w->issued && w->seq <= upto && !(w->devmask & (1u << dev)))
            return true;
    }
    return false;
}

/* Start writing @dev (it is not read until in sync); returns once every
 * local write issued without it has finished. */
static void start_writing(struct node *n, int dev)
{
    n->rebuild[dev] = true;
    n->known[dev] = true;
    n->write_behind[dev] = false;
    uint64_t upto = n->wr_seq;
    struct io *io;

    trace("n%d writes dev%d (rebuilding)", n->idx, dev);
    /* our slot's bits go there too (md writes the bitmap to every
     * member that is not faulty) */
    io = io_submit(n, dev, IO_BM_OWN, 0, 0);
    io_wait(io);
    io_free(io);
    while (writes_without(n, dev, upto))
        co_wait(&n->chg, "re-add: draining writes without the device");
}

static int h_remote_readd(void *arg, uint32_t dev, const struct clr_mdc_rx *rx)
{
    struct node *n = arg;

    co_yield ();
    if ((int)dev >= S.ndev)
        return -EINVAL;
    if (S.readd_refuser == n->idx && S.sb.member[dev] && !n->in_sync[dev]) {
        S.readd_refuser = -1; /* once */
        trace("n%d refuses RE_ADD dev%u (cannot open it)", n->idx, dev);
        return -EIO;
    }
    /* the rules decide (engine/cluster/rules.c), as in the engine; the
     * device's role is its index, nobody else holds it */
    struct clr_rules_ctx x = {
        .sender = rx->sender, .type = rx->type, .raid_disks = (unsigned)S.ndev, .sb_events = S.sb.events
    };
    struct clr_rules_member m = rules_member(n, (int)dev);
    struct clr_rules_own own = rules_own((int)dev);
    struct clr_rules_readd d;
    int r = clr_rules_remote_readd(&x, &m, &own, true, &d);

    if (r)
        return r;
    n->readd_seen[dev] = true;
    if (d.state != CLR_RULES_REBUILDING) {
        trace("n%d follows RE_ADD dev%u without writing it", n->idx, dev);
        return 0;
    }
    n->readd_from[dev] = d.rebuilder;
    n->readd_events[dev] = d.readd_events;
    start_writing(n, (int)dev);
    return 0;
}

static int h_pause(void *arg, unsigned ms)
{
    co_cur->why = "mdc pause (polling)";
    co_sleep(1 + ms / 10 + rndn(3));
    return 0;
}

static void h_changed(void *arg)
{
    wake_node(arg);
}

static void h_log(void *arg, int prio, const char *msg)
{
    struct node *n = arg;

    trace("n%d mdc: %s", n->idx, msg);
}

static void needed_extent(struct node *n, uint64_t *lo, uint64_t *hi);

static int h_needed_extent(void *arg, uint64_t *lo, uint64_t *hi)
{
    needed_extent(arg, lo, hi);
    return 0;
}

static const struct clr_mdc_host host_ops = {
    .lock = h_lock,
    .unlock = h_unlock,
    .send = h_send,
    .bitmap_read = h_bitmap_read,
    .bitmap_clear = h_bitmap_clear,
    .bitmap_merge = h_bitmap_merge,
    .want_resync = h_want_resync,
    .needed_extent = h_needed_extent,
    .pause = h_pause,
    .drain = h_drain,
    .reload_sb = h_reload_sb,
    .find_disk = h_find_disk,
    .remote_remove = h_remote_remove,
    .remote_readd = h_remote_readd,
    .changed = h_changed,
    .log = h_log,
};

/* ------------------------------------------------------------------ */
/* the data path: client writes and reads                              */

static unsigned chunk_of(unsigned b)
{
    return b / CHUNK_BLKS;
}

static bool wl_write_free(unsigned b0, unsigned nb)
{
    for (unsigned b = b0; b < b0 + nb; b++)
        if (S.blk[b].writer >= 0 || S.blk[b].readers)
            return false;
    return true;
}

static struct wr *wr_register(struct node *n, uint64_t lo, uint64_t hi)
{
    for (unsigned i = 0; i < CLIENTS * 2; i++)
        if (!n->wr[i].used) {
            n->wr[i] = (struct wr){ .used = true, .lo = lo, .hi = hi };
            return &n->wr[i];
        }
    abort();
}

static void wr_unregister(struct node *n, struct wr *w)
{
    w->used = false;
    wake_node(n);
}

static bool resync_overlaps(struct node *n, unsigned b0, unsigned nb)
{
    return n->resync_chunk >= 0 && chunk_of(b0) <= (unsigned)n->resync_chunk &&
           (unsigned)n->resync_chunk <= chunk_of(b0 + nb - 1);
}

/*
 * One client write.  A device failure met on the way (bitmap flush or a
 * leg) takes the write out of the in-flight set, gets the failure
 * announced cluster-wide, and retries the whole write on the remaining
 * legs (it was never acknowledged).  Parking the write while it waits for
 * the announcement keeps drain() from waiting on it: a resync's window
 * broadcast holds the token the announcement needs (a deadlock otherwise:
 * --no-write-retry shows it).  The retry re-checks the window, so a
 * resync that copied over the range meanwhile is overwritten again.
 */
static void client_write(struct node *n, unsigned b0, unsigned nb)
{
    uint64_t lo = (uint64_t)b0 * BLK_SECT, hi = (uint64_t)(b0 + nb) * BLK_SECT;
    uint64_t v = ((uint64_t)(n->idx + 1) << 56) | ++S.next_val;
    unsigned c0 = chunk_of(b0), c1 = chunk_of(b0 + nb - 1);
    uint64_t admitted = 0;
    bool held = false;
    struct wr *w;

    for (unsigned b = b0; b < b0 + nb; b++) {
        S.blk[b].writer = n->idx;
        S.blk[b].winc = n->inc;
        S.blk[b].wval = v;
    }
    trace("n%d write b%u+%u val %" PRIx64, n->idx, b0, nb, v);
again:
    for (;;) {
        w = wr_register(n, lo, hi);
        if (resync_overlaps(n, b0, nb)) {
            wr_unregister(n, w);
            co_wait(&n->chg, "local resync range");
            continue;
        }
        /* the rules decide (engine/cluster/rules.c), as in the engine */
        enum clr_rules_admit adm = clr_mdc_admit(&n->mdc, lo, hi);

        if (adm == CLR_RULES_WAIT_WINDOW) {
            wr_unregister(n, w);
            trace("n%d write b%u blocked by window", n->idx, b0);
            co_wait(&n->chg, "write blocked (window)");
            continue;
        }
        /* a node lost with its node is not fenced yet: hold */
        if (adm == CLR_RULES_WAIT_HOLD) {
            wr_unregister(n, w);
            if (!held)
                S.c.held_writes++;
            held = true;
            trace("n%d write b%u held: a lost node is not fenced", n->idx, b0);
            co_wait(&n->chg, "write held (lost node not fenced)");
            continue;
        }
        break;
    }
    admitted = ++S.evseq;
    bool needflush = false, failed[MAXD] = { 0 }, anyfail = false;
    struct io *legs[MAXD] = { 0 };

    for (unsigned c = c0; c <= c1; c++) {
        n->pending[c]++;
        if (!n->dirty[c]) {
            n->dirty[c] = true;
            n->ondisk[c] = false;
        }
        if (!n->ondisk[c])
            needflush = true;
    }
    uint64_t ep = n->bm_epoch;

    if (needflush && S.o.bug != BUG_BITMAP_AFTER_DATA && S.o.no_write_retry) {
        flush_own(n); /* announces failures while in flight */
        for (unsigned c = c0; c <= c1 && ep == n->bm_epoch; c++)
            n->ondisk[c] = true;
    } else if (needflush && S.o.bug != BUG_BITMAP_AFTER_DATA) {
        anyfail = flush_own_failed(n, failed);
        if (!anyfail && ep != n->bm_epoch) {
            /* a device joined meanwhile: flush again */
            anyfail = flush_own_failed(n, failed);
        }
        if (!anyfail)
            for (unsigned c = c0; c <= c1; c++)
                n->ondisk[c] = true;
    }
    if (!anyfail) {
        /* issue the legs */
        w->devmask = 0;
        for (int d = 0; d < S.ndev; d++) {
            if (!n->in_sync[d] && !n->write_behind[d] && !n->rebuild[d])
                continue;
            if (d == S.spare && !n->sees_new)
                fail("n%d writes the new dev%d it cannot see", n->idx, d);
            for (unsigned c = c0; c <= c1; c++)
                if (n->in_sync[d] && !S.d[d].bm[n->slot][c])
                    fail("(c) n%d leg to dev%d b%u+%u issued before bit of"
                         " chunk %u is on disk in slot %u",
                         n->idx, d, b0, nb, c, n->slot);
            for (unsigned b = b0; b < b0 + nb; b++)
                if (S.rs_active[b])
                    fail("(d) n%d client leg b%u while node %d resyncs it", n->idx, b, S.rs_active[b] - 1);
            legs[d] = io_submit(n, d, IO_WRITE, b0, nb);
            trace("n%d leg dev%d b%u+%u due %" PRIu64, n->idx, d, b0, nb, legs[d]->due);
            for (unsigned i = 0; i < nb; i++)
                legs[d]->val[i] = v;
            w->devmask |= 1u << d;
        }
        w->issued = true;
        w->seq = ++n->wr_seq;
        if (needflush && S.o.bug == BUG_BITMAP_AFTER_DATA) {
            flush_own(n);
            for (unsigned c = c0; c <= c1; c++)
                n->ondisk[c] = true;
        }
        for (int d = 0; d < S.ndev; d++) {
            if (!legs[d])
                continue;
            io_wait(legs[d]);
            if (!legs[d]->ok && n->in_sync[d])
                failed[d] = anyfail = true;
            io_free(legs[d]);
        }
    }
    w->legs_done = true;
    if (anyfail) {
        if (S.o.bug == BUG_ACK_BEFORE_FAIL) {
            for (int d = 0; d < S.ndev; d++)
                if (failed[d])
                    n->in_sync[d] = false;
        } else {
            if (!S.o.no_write_retry) {
                for (unsigned c = c0; c <= c1; c++) {
                    n->pending[c]--;
                    n->last_write[c] = S.now;
                }
                wr_unregister(n, w);
            }
            for (int d = 0; d < S.ndev; d++)
                if (failed[d])
                    fail_device(n, d, "write");
            if (!S.o.no_write_retry) {
                S.c.write_retries++;
                trace("n%d write b%u+%u retried", n->idx, b0, nb);
                goto again;
            }
        }
    }
    /* A failure of ours still being announced: the legs skipped that
     * device, and a node that has not heard yet may read it.  Park and
     * retry once it is announced. */
    for (int d = 0; d < S.ndev; d++) {
        if (!n->failing[d] || S.o.no_write_retry)
            continue;
        for (unsigned c = c0; c <= c1; c++) {
            n->pending[c]--;
            n->last_write[c] = S.now;
        }
        wr_unregister(n, w);
        while (n->failing[d])
            co_wait(&n->chg, "device failure being announced");
        trace("n%d write b%u+%u retried after announcement", n->idx, b0, nb);
        goto again;
    }
    /* ack: (a), on a device being rebuilt too if the legs went there */
    for (int d = 0; d < S.ndev; d++) {
        if (!sb_in_sync(d) && !(S.sb.rebuilding[d] && !S.sb.faulty[d] && (w->devmask & (1u << d))))
            continue;
        for (unsigned b = b0; b < b0 + nb; b++)
            if (S.d[d].data[b] != v)
                fail("(a) n%d acked b%u val %" PRIx64 " but dev%d has %" PRIx64, n->idx, b, v, d,
                     S.d[d].data[b]);
    }
    /* (h): admitted (its last admission, retries included) after a
     * crash was seen here, and that crash is not confirmed yet */
    for (unsigned s = 0; s < MAXN; s++)
        if (n->lost_seq[s] && n->lost_seq[s] < admitted)
            fail("(h) n%d acked b%u+%u admitted after slot %u was lost and"
                 " before it was fenced",
                 n->idx, b0, nb, s);
    S.c.writes_acked++;
    trace("n%d ack b%u+%u", n->idx, b0, nb);
    for (unsigned b = b0; b < b0 + nb; b++) {
        struct blkm *m = &S.blk[b];

        m->val = v;
        m->nalt = 0;
        m->fixed_unacked = false;
        m->writer = -1;
    }
    wake(&S.wl_chan);
    for (unsigned c = c0; c <= c1; c++) {
        n->pending[c]--;
        n->last_write[c] = S.now;
    }
    wr_unregister(n, w);
}

/* Which device serves a read of [b0, b0+nb)?  @first: forced. */
static bool read_must_be_first(struct node *n, unsigned b0, unsigned nb)
{
    uint64_t lo = (uint64_t)b0 * BLK_SECT, hi = (uint64_t)(b0 + nb) * BLK_SECT;

    for (unsigned c = chunk_of(b0); c <= chunk_of(b0 + nb - 1); c++)
        if (n->needed[c])
            return true;
    return clr_mdc_read_first(&n->mdc, lo, hi);
}

static void client_read(struct node *n, unsigned b0, unsigned nb)
{
    for (;;) {
        bool first = read_must_be_first(n, b0, nb);
        int d = first_in_sync(n);
        struct io *io;
        bool ok;

        if (!first) {
            int cand[MAXD], k = 0;

            for (int e = 0; e < S.ndev; e++)
                if (readable(n, e))
                    cand[k++] = e;
            d = cand[rndn((uint64_t)k)];
        }
        if (S.sb.faulty[d] && !n->in_sync[d])
            fail("(e) n%d reads from faulty dev%d", n->idx, d);
        if (d == S.spare && !n->sees_new)
            fail("(e) n%d reads the new dev%d it cannot see", n->idx, d);
        io = io_submit(n, d, IO_READ, b0, nb);
        io_wait(io);
        ok = io->ok;
        if (!ok) {
            io_free(io);
            fail_device(n, d, "read");
            continue;
        }
        trace("n%d read b%u+%u from dev%d%s", n->idx, b0, nb, d, first ? " (first)" : "");
        for (unsigned i = 0; i < nb; i++)
            check_read(n, b0 + i, io->val[i], d, "read");
        io_free(io);
        return;
    }
}

static void client_co(void *arg)
{
    struct node *n = self();

    (void)arg;
    n->clients_running++;
    while (!S.stopping && !n->leaving) {
        unsigned nb = 1 + (unsigned)rndn(3);
        unsigned b0 = (unsigned)rndn(NBLK - nb + 1);

        if (chance(60)) {
            while (!wl_write_free(b0, nb))
                co_wait(&S.wl_chan, "fs write lock");
            client_write(n, b0, nb);
        } else {
            bool free_ = false;

            while (!free_) {
                free_ = true;
                for (unsigned b = b0; b < b0 + nb; b++)
                    if (S.blk[b].writer >= 0)
                        free_ = false;
                if (!free_)
                    co_wait(&S.wl_chan, "fs read lock");
            }
            for (unsigned b = b0; b < b0 + nb; b++) {
                S.blk[b].readers++;
                S.blk[b].rd[n->idx]++;
            }
            client_read(n, b0, nb);
            for (unsigned b = b0; b < b0 + nb; b++) {
                S.blk[b].readers--;
                S.blk[b].rd[n->idx]--;
            }
            wake(&S.wl_chan);
        }
        co_sleep(rndn(6));
    }
    n->clients_running--;
    wake_node(n);
}

/* Lazy clearing of bits (md's daemon_sleep). */
static void sweep_co(void *arg)
{
    struct node *n = self();

    (void)arg;
    while (!S.stopping) {
        bool any = false;

        co_sleep(10 + rndn(30));
        if (S.stopping)
            break;
        if (degraded(n))
            continue;
        for (unsigned c = 0; c < NCHUNK; c++) {
            bool busy = n->pending[c] > 0;

            if (S.o.bug == BUG_CLEAR_PENDING)
                busy = false;
            if (!n->dirty[c] || busy || n->needed[c] || n->resync_chunk == (int)c ||
                S.now - n->last_write[c] < 20)
                continue;
            n->dirty[c] = false;
            n->ondisk[c] = false;
            any = true;
        }
        if (any) {
            trace("n%d sweep clears bits", n->idx);
            flush_own(n);
        }
    }
}

/* ------------------------------------------------------------------ */
/* resync and recovery                                                 */

/* Next NEEDED chunk the resync may take: chunks merged from another
 * slot wait for want_resync() (see h_bitmap_merge). */
static int next_resyncable(struct node *n)
{
    for (unsigned c = 0; c < NCHUNK; c++)
        if (n->needed[c] && !n->held[c])
            return (int)c;
    return -1;
}

static int next_needed(struct node *n)
{
    for (unsigned c = 0; c < NCHUNK; c++)
        if (n->needed[c])
            return (int)c;
    return -1;
}

static void resync_chunk(struct node *n, unsigned c)
{
    unsigned b0 = c * CHUNK_BLKS;
    uint64_t lo = (uint64_t)c * CHUNK_SECT, hi = lo + CHUNK_SECT;
    uint32_t gen = n->needed_gen[c];

    n->resync_chunk = (int)c;
    while (local_write_overlaps(n, lo, hi))
        co_wait(&n->chg, "resync local range");
    for (;;) {
        int src = first_in_sync(n);
        struct io *rd, *wr[MAXD] = { 0 };
        bool ok;
        struct io *ov;

        if (S.o.bug == BUG_RESYNC_ANY_SOURCE) {
            int cand[MAXD], k = 0;

            for (int e = 0; e < S.ndev; e++)
                if (n->in_sync[e])
                    cand[k++] = e;
            src = cand[rndn((uint64_t)k)];
        }
        if (src < 0)
            break;
        if ((ov = client_leg_overlap(b0, CHUNK_BLKS)))
            fail("(d) n%d resync chunk %u starts while n%d has a leg"
                 " b%u+%u in flight",
                 n->idx, c, ov->node, ov->b0, ov->nb);
        for (unsigned b = b0; b < b0 + CHUNK_BLKS; b++)
            S.rs_active[b] = n->idx + 1;
        rd = io_submit(n, src, IO_RS_READ, b0, CHUNK_BLKS);
        io_wait(rd);
        ok = rd->ok;
        if (!ok) {
            io_free(rd);
            for (unsigned b = b0; b < b0 + CHUNK_BLKS; b++)
                S.rs_active[b] = 0;
            fail_device(n, src, "resync read");
            continue;
        }
        if (src == S.spare && !n->sees_new)
            fail("(e) n%d resyncs from the new dev%d it cannot see", n->idx, src);
        if (!readable(n, src) && S.o.bug != BUG_RESYNC_ANY_SOURCE) {
            /* it failed while we read it: what we read may miss a
             * write the failing node then retried elsewhere */
            io_free(rd);
            for (unsigned b = b0; b < b0 + CHUNK_BLKS; b++)
                S.rs_active[b] = 0;
            trace("n%d resync source dev%d failed meanwhile: again", n->idx, src);
            continue;
        }
        for (unsigned i = 0; i < CHUNK_BLKS; i++)
            if (!blk_allows(&S.blk[b0 + i], rd->val[i]) && S.blk[b0 + i].writer < 0)
                fail("(e) n%d resync copies b%u val %" PRIx64 " from dev%d:"
                     " not a value it may hold (%" PRIx64 ")",
                     n->idx, b0 + i, rd->val[i], src, S.blk[b0 + i].val);
        for (int d = 0; d < S.ndev; d++) {
            if (d == src || (!n->in_sync[d] && !n->rebuild[d]))
                continue;
            wr[d] = io_submit(n, d, IO_RS_WRITE, b0, CHUNK_BLKS);
            memcpy(wr[d]->val, rd->val, sizeof(rd->val));
        }
        io_free(rd);
        for (int d = 0; d < S.ndev; d++) {
            if (!wr[d])
                continue;
            io_wait(wr[d]);
            ok = wr[d]->ok;
            io_free(wr[d]);
            if (!ok)
                fail_device(n, d, "resync write");
        }
        if ((ov = client_leg_overlap(b0, CHUNK_BLKS)))
            fail("(d) n%d resync chunk %u ends while n%d has a leg"
                 " b%u+%u in flight",
                 n->idx, c, ov->node, ov->b0, ov->nb);
        for (unsigned b = b0; b < b0 + CHUNK_BLKS; b++)
            S.rs_active[b] = 0;
        break;
    }
    S.c.resync_chunks++;
    /* merged again while we copied (a takeover): copy it again */
    if (gen == n->needed_gen[c])
        n->needed[c] = false;
    n->resync_chunk = -1;
    trace("n%d resynced chunk %u", n->idx, c);
    wake_node(n);
}

/* [lo, hi) of the NEEDED chunks (0, 0: none) */
static void needed_extent(struct node *n, uint64_t *lo, uint64_t *hi)
{
    int first = -1, last = -1;

    for (unsigned k = 0; k < NCHUNK; k++)
        if (n->needed[k]) {
            if (first < 0)
                first = (int)k;
            last = (int)k;
        }
    *lo = first < 0 ? 0 : (uint64_t)first * CHUNK_SECT;
    *hi = first < 0 ? 0 : (uint64_t)(last + 1) * CHUNK_SECT;
}

/* ------------------------------------------------------------------ */
/* rebuild of a re-added or new device                                 */

static void sb_write_delay(void)
{
    co_sleep(1 + rndn(3));
}

/* `metadata` for an admin sequence (a device failure met meanwhile is
 * written under it, see fail_device). */
static int admin_meta_begin(struct node *n)
{
    int r = clr_mdc_meta_begin(&n->mdc);

    if (r < 0) {
        trace("n%d meta_begin: %d", n->idx, r);
        return r;
    }
    n->meta_holder = co_cur;
    n->meta_dirty = false;
    co_yield (); /* re-read the superblock */
    apply_sb(n, &no_rx);
    return 0;
}

static void admin_meta_end(struct node *n, bool send)
{
    int r;

    while (n->meta_failing)
        co_wait(&n->chg, "admin: a device failure being written");
    send = send || n->meta_dirty;
    n->meta_holder = NULL; /* failures from now on take `metadata` */
    n->meta_dirty = false;
    r = clr_mdc_meta_end(&n->mdc, (uint32_t)good_dev(), send);
    if (r < 0)
        trace("n%d meta_end: %d", n->idx, r);
    n->meta_done++;
    for (int d = 0; d < MAXD; d++)
        if (n->meta_fail_mask & (1u << d))
            n->failing[d] = 0;
    n->meta_fail_mask = 0;
    wake_node(n);
}

/* NEWDISK: every chunk needs recovery (durable in our slot). */
static void merge_all(struct node *n, int dev)
{
    uint8_t bits[(NCHUNK + 7) / 8];

    memset(bits, 0xff, sizeof(bits));
    trace("n%d full recovery of dev%d", n->idx, dev);
    h_bitmap_merge(n, bits, sizeof(bits));
    n->full_merged[dev] = true;
    h_want_resync(n);
}

/* Whole resync space: does any node still have dirty chunks we know of,
 * a takeover or a window going on? */
static bool cluster_quiet(struct node *n)
{
    return !clr_mdc_recovery_pending(&n->mdc) && !clr_mdc_read_first(&n->mdc, 0, (uint64_t)NBLK * BLK_SECT);
}

/*
 * A rebuild is finished by the node in its superblock's rebuilder slot,
 * once that node has no chunk NEEDED and knows of no other node's dirty
 * extent, takeover or window (everything any node still has to resync
 * would be copied from the first in-sync device onto it, but the device
 * must not be read before).  A rebuilder that died or left is replaced
 * by a survivor (after the takeover of its slot: its bits are then the
 * taker's, announced in TAKEOVER).  Called from the idle resync thread.
 * @return whether it did something.
 */
static bool rebuild_work(struct node *n)
{
    for (int d = 0; d < S.ndev; d++) {
        int rb = S.sb.rebuilder[d];
        bool mine, orphan;
        int r;

        if (!S.sb.member[d] || !S.sb.rebuilding[d] || S.sb.faulty[d] || n->leaving || !n->joined)
            continue;
        /* who finishes it: the rules (engine/cluster/rules.c) */
        struct clr_rules_ctx x = { .sender = -1, .type = -1, .dead = n->dead_slots };
        enum clr_rules_owner own = clr_rules_rebuild_owner(&x, rb, n->slot);

        mine = own == CLR_RULES_OWNER_MINE;
        orphan = own == CLR_RULES_OWNER_ORPHAN;
        if (!mine && !orphan)
            continue;
        if (mine && S.sb.full[d] && !n->full_merged[d]) {
            merge_all(n, d); /* our previous incarnation's add */
            return true;
        }
        if (!clr_rules_rebuild_done(mine && (next_needed(n) >= 0 || n->want_resync), !cluster_quiet(n))) {
            struct clr_mdc_stats st;

            clr_mdc_stats(&n->mdc, &st);
            char ext[160] = "";
            size_t el = 0;

            for (unsigned j = 0; j < S.o.nodes && el < sizeof(ext) - 40; j++)
                if (n->mdc.dirty_hi[j]) /* diagnostics only */
                    el += (size_t)snprintf(ext + el, sizeof(ext) - el, " slot%u [%" PRIu64 ",%" PRIu64 ")", j,
                                           n->mdc.dirty_lo[j], n->mdc.dirty_hi[j]);
            trace("n%d rebuild of dev%d waits: pending %" PRIx64 " recovering %d"
                  " window %d needed %d%s",
                  n->idx, d, st.pending, st.recovering, st.win_from, next_needed(n), ext);
            continue;
        }
        r = admin_meta_begin(n);
        if (r < 0)
            return false;
        if (!S.sb.member[d] || !S.sb.rebuilding[d] || S.sb.faulty[d] || S.sb.rebuilder[d] != rb) {
            admin_meta_end(n, false);
            return true;
        }
        if (orphan) {
            sb_write_delay();
            S.sb.rebuilder[d] = (int)n->slot;
            S.sb.events++;
            S.c.adoptions++;
            trace("sb: n%d resumes the rebuild of dev%d (slot %d gone)", n->idx, d, rb);
            if (!n->rebuild[d])
                start_writing(n, d);
            admin_meta_end(n, true);
            if (S.sb.full[d])
                merge_all(n, d);
            return true;
        }
        if (!clr_rules_rebuild_done(next_needed(n) >= 0 || n->want_resync, !cluster_quiet(n))) {
            admin_meta_end(n, false);
            return true;
        }
        sb_write_delay();
        S.sb.rebuilding[d] = false;
        S.sb.full[d] = false;
        S.sb.events++;
        S.c.rebuilds_done++;
        trace("sb: dev%d in sync (rebuilt by n%d), events %" PRIu64, d, n->idx, S.sb.events);
        view_in_sync(n, d); /* our own change (no reload) */
        admin_meta_end(n, true);
        return true;
    }
    return false;
}

static void resync_co(void *arg)
{
    struct node *n = self();

    (void)arg;
    for (;;) {
        int c;
        uint64_t dlo, dhi;
        int r;

        while (n->leaving || (!n->want_resync && next_resyncable(n) < 0)) {
            if (rebuild_work(n))
                continue;
            co_wait_idle(&n->chg, "resync: idle");
        }
        n->want_resync = false;
        if ((c = next_resyncable(n)) < 0)
            continue;
        n->resyncing = true;
        needed_extent(n, &dlo, &dhi);
        trace("n%d resync_begin [%" PRIu64 ", %" PRIu64 ")", n->idx, dlo, dhi);
        r = clr_mdc_resync_begin(&n->mdc, dlo, dhi);
        if (r < 0) {
            trace("n%d resync_begin: %d", n->idx, r);
            co_sleep(20);
            continue;
        }
        while ((c = next_resyncable(n)) >= 0 && !n->leaving) {
            uint64_t lo = (uint64_t)c * CHUNK_SECT, hi = lo + CHUNK_SECT;

            needed_extent(n, &dlo, &dhi);
            r = clr_mdc_resync_window(&n->mdc, lo, hi, dhi, dlo);
            if (r < 0) {
                trace("n%d resync_window: %d", n->idx, r);
                break;
            }
            resync_chunk(n, (unsigned)c);
        }
        needed_extent(n, &dlo, &dhi);
        trace("n%d resync_end [%" PRIu64 ", %" PRIu64 ")", n->idx, dlo, dhi);
        r = clr_mdc_resync_end(&n->mdc, dlo, dhi);
        trace("n%d resync_end: %d", n->idx, r);
        n->resyncing = false;
        wake_node(n);
    }
}

static void recovery_co(void *arg)
{
    struct node *n = self();

    (void)arg;
    for (;;) {
        int r;

        while (!clr_mdc_recovery_pending(&n->mdc) || n->leaving)
            co_wait_idle(&n->chg, "recovery: idle");
        n->recovering_now = true;
        if (S.o.wa_reload) {
            /* the dead node may have written a role change it never
             * announced (died between sb write and METADATA_UPDATED) */
            co_yield ();
            apply_sb(n, &no_rx);
        }
        struct clr_mdc_stats st0, st1;

        clr_mdc_stats(&n->mdc, &st0);
        trace("n%d recover", n->idx);
        r = clr_mdc_recover(&n->mdc);
        clr_mdc_stats(&n->mdc, &st1);
        S.c.takeovers += st1.recovered_slots - st0.recovered_slots;
        trace("n%d recover: %d", n->idx, r);
        n->recovering_now = false;
        wake_node(n);
        if (r < 0)
            co_sleep(10);
    }
}

/* ------------------------------------------------------------------ */
/* administration: re-add, NEWDISK, clean leave                        */

static struct fault *add_fault(uint64_t at, int type, int a, int b, uint64_t len);

/*
 * Re-add of a failed device that kept its data (engine: clr_arr_cl_readd
 * under metadata): RE_ADD (every node writes it from now on, after its
 * writes issued without it drained), every slot's bits merged into ours
 * as NEEDED, the role written back as rebuilding, METADATA_UPDATED; the
 * bitmap-guided recovery is then our resync (resync lock, windows) and
 * rebuild_work() marks it in sync.  A refusal or failure rolls back.
 */
static void readd_co(void *arg)
{
    struct node *n = self();
    int dev = (int)(intptr_t)arg;
    int r;

    n->admin = true;
    trace("n%d re-add dev%d", n->idx, dev);
    r = admin_meta_begin(n);
    if (r < 0)
        goto out;
    if (!S.sb.member[dev] || !S.sb.faulty[dev]) {
        trace("n%d re-add dev%d: not faulty", n->idx, dev);
        admin_meta_end(n, false);
        goto out;
    }
    n->readd_from[dev] = (int)n->slot;
    n->readd_events[dev] = S.sb.events;
    start_writing(n, dev);
    r = clr_mdc_send_readd(&n->mdc, (uint32_t)dev);
    if (r == 0) {
        /* our own bits: the chunks we wrote while it was out */
        for (unsigned c = 0; c < NCHUNK; c++)
            if (n->dirty[c]) {
                n->needed[c] = true;
                n->needed_gen[c]++; /* a copy running now missed it */
            }
        r = clr_mdc_gather_bitmaps(&n->mdc);
    }
    if (r < 0) {
        S.c.readd_rollbacks++;
        trace("n%d re-add dev%d failed (%d): rolled back", n->idx, dev, r);
        n->rebuild[dev] = false;
        n->readd_from[dev] = -1;
        /* Faulty again, written (as the engine does): newer than
         * every receiver's readd_events, so they stop writing it */
        sb_write_delay();
        S.sb.events++;
        trace("sb: dev%d faulty again, events %" PRIu64, dev, S.sb.events);
        admin_meta_end(n, true);
        if (!S.stopping)
            add_fault(S.now + 50 + rndn(200), F_READD, dev, 0, 0);
        goto out;
    }
    sb_write_delay();
    S.sb.faulty[dev] = false;
    S.sb.rebuilding[dev] = true;
    S.sb.rebuilder[dev] = (int)n->slot;
    S.sb.events++;
    S.c.readds++;
    trace("sb: dev%d rebuilding by n%d, events %" PRIu64, dev, n->idx, S.sb.events);
    apply_sb(n, &no_rx);
    admin_meta_end(n, true);
    h_want_resync(n);
out:
    n->admin = false;
    wake_node(n);
}

/*
 * NEWDISK (doc/architecture.md §4.9): the adder writes the spare's superblock, NEWDISK under
 * metadata; 0: the role goes in as rebuilding (full recovery), -ENOENT:
 * the spare's superblock is erased; METADATA_UPDATED either way.
 */
static void newdisk_co(void *arg)
{
    struct node *n = self();
    int dev = S.spare;
    uint8_t uuid[16] = { 0xc1, 0x4a, (uint8_t)dev };
    int r;

    (void)arg;
    n->admin = true;
    trace("n%d NEWDISK dev%d: writing its superblock", n->idx, dev);
    sb_write_delay();
    S.spare_sb = true;
    r = admin_meta_begin(n);
    if (r < 0)
        goto out;
    if (S.sb.member[dev]) {
        admin_meta_end(n, false);
        goto out;
    }
    r = clr_mdc_newdisk(&n->mdc, uuid, (uint32_t)dev);
    trace("n%d newdisk dev%d: %d", n->idx, dev, r);
    if (r < 0) {
        S.c.newdisk_rollbacks++;
        sb_write_delay();
        S.spare_sb = false;
        trace("n%d NEWDISK dev%d rolled back: superblock erased", n->idx, dev);
        admin_meta_end(n, true);
        goto out;
    }
    sb_write_delay();
    S.sb.member[dev] = true;
    S.sb.faulty[dev] = false;
    S.sb.rebuilding[dev] = true;
    S.sb.full[dev] = true;
    S.sb.rebuilder[dev] = (int)n->slot;
    S.sb.events++;
    S.c.newdisks++;
    trace("sb: new dev%d rebuilding by n%d, events %" PRIu64, dev, n->idx, S.sb.events);
    start_writing(n, dev);
    admin_meta_end(n, true);
    /* every node writes it now: recover every chunk */
    merge_all(n, dev);
out:
    n->admin = false;
    wake_node(n);
}

/* Clean stop: threads stopped, then clr_mdc_leave(NEEDED chunks left?). */
static void leave_co(void *arg)
{
    struct node *n = self();
    bool unclean;
    int r;

    (void)arg;
    n->leaving = true;
    trace("n%d stopping cleanly", n->idx);
    wake_node(n);
    wake(&S.wl_chan);
    while (n->clients_running || n->resyncing || n->recovering_now || n->admin)
        co_wait(&n->chg, "leave: stopping the node's threads");
    unclean = next_needed(n) >= 0;
    if (unclean)
        S.c.leaves_unclean++;
    else
        S.c.leaves_clean++;
    trace("n%d leave (%s)", n->idx, unclean ? "NEEDED chunks: BITMAP_NEEDS_SYNC" : "clean");
    r = clr_mdc_leave(&n->mdc, unclean);
    trace("n%d leave: %d", n->idx, r);
    n->member = false;
    add_fault(S.now, F_LEFT, n->idx, 0, 0)->inc = n->inc;
}

/* ------------------------------------------------------------------ */
/* node lifecycle                                                      */

static void node_fresh(struct node *n)
{
    int idx = n->idx;
    unsigned slot = n->slot;

    memset(n, 0, sizeof(*n));
    n->idx = idx;
    n->slot = slot;
    n->resync_chunk = -1;
    n->lvb_reading = -1;
    for (int d = 0; d < MAXD; d++)
        n->readd_from[d] = -1;
    n->inc = ++S.next_inc;
    if (S.spare >= 0 && S.sb.member[S.spare])
        n->sees_new = true; /* a restart after the add: it is visible */
    else
        n->sees_new = S.spare >= 0 && !(S.lacks_new & (1u << idx));
    for (int d = 0; d < S.ndev; d++) {
        n->known[d] = S.sb.member[d];
        n->in_sync[d] = sb_in_sync(d);
        n->rebuild[d] = S.sb.member[d] && S.sb.rebuilding[d] && !S.sb.faulty[d];
    }
}

static void node_start_workers(struct node *n)
{
    char name[32];

    for (int i = 0; i < CLIENTS; i++) {
        snprintf(name, sizeof(name), "n%d client%d", n->idx, i);
        spawn(n, name, client_co, NULL);
    }
    snprintf(name, sizeof(name), "n%d sweep", n->idx);
    spawn(n, name, sweep_co, NULL);
    snprintf(name, sizeof(name), "n%d resync", n->idx);
    spawn(n, name, resync_co, NULL);
    snprintf(name, sizeof(name), "n%d recovery", n->idx);
    spawn(n, name, recovery_co, NULL);
}

static void kill_node_coroutines(struct node *n, uint64_t inc)
{
    for (size_t i = 0; i < S.ncos; i++) {
        struct co *c = S.cos[i];

        if (!c || c->node != n->idx || c->inc != inc)
            continue;
        if (c->bc && !c->bc_done) {
            c->bc->pending--;
            wake(c->bc);
        }
        sim_co_free(c);
        S.cos[i] = NULL;
    }
}

/* Resolve the I/O of a dead incarnation: each lands now or never. */
static void drop_node_io(struct node *n)
{
    struct io **pp = &S.ios;

    while (*pp) {
        struct io *io = *pp;

        if (io->node != n->idx || io->inc != n->inc) {
            pp = &io->next;
            continue;
        }
        *pp = io->next;
        if ((io->kind == IO_WRITE || io->kind == IO_BM_OWN || io->kind == IO_RS_WRITE ||
             io->kind == IO_BM_CLEAR) &&
            chance(50)) {
            trace("dead n%d io dev%d kind %d lands", n->idx, io->dev, io->kind);
            io_apply(io);
        }
        io_free(io);
    }
}

/* At start, under `metadata`: the first device the superblock gives a
 * role that this node does not run (engine/cluster/rules.c), or -1. */
static int start_missing(struct node *n)
{
    struct clr_rules_ctx x = { .sender = -1, .type = -1, .raid_disks = (unsigned)S.ndev };
    struct clr_rules_member m[MAXD];
    struct clr_rules_sbrole sb[MAXD];

    for (int d = 0; d < S.ndev; d++) {
        m[d] = rules_member(n, d);
        sb[d] = rules_sbrole(d);
    }
    return clr_rules_start_missing(&x, m, sb, (unsigned)S.ndev);
}

static void join_co(void *arg);
static void deliver_lost(struct node *o, unsigned slot);

static void node_teardown(struct node *n, bool crash)
{
    uint64_t inc = n->inc;

    n->live = false;
    n->member = false;
    n->joined = false;
    if (crash) {
        /* the filesystem's writes in flight: old or new */
        for (unsigned b = 0; b < NBLK; b++) {
            struct blkm *m = &S.blk[b];

            if (m->writer == n->idx && m->winc == inc)
                blk_add_alt(m, m->wval);
        }
    }
    drop_node_io(n);
    kill_node_coroutines(n, inc);
    for (unsigned b = 0; b < NBLK; b++)
        if (S.blk[b].writer == n->idx && S.blk[b].winc == inc && !crash)
            S.blk[b].writer = -1;
    for (unsigned b = 0; b < NBLK; b++)
        if (S.rs_active[b] == n->idx + 1)
            S.rs_active[b] = 0;
    /* readers of a dead node: its client coroutines are gone */
    for (unsigned b = 0; b < NBLK; b++) {
        S.blk[b].readers -= S.blk[b].rd[n->idx];
        S.blk[b].rd[n->idx] = 0;
    }
    wake(&S.wl_chan);
}

static void node_start(struct node *n)
{
    char name[32];

    node_fresh(n);
    n->live = true;
    n->member = true;
    n->ever_started = true;
    snprintf(name, sizeof(name), "n%d join", n->idx);
    spawn(n, name, join_co, NULL);
}

/* Single-node crash recovery: our own slot's bits become NEEDED. */
static void load_own_bits(struct node *n)
{
    for (;;) {
        int d = first_in_sync(n);
        struct io *io;
        bool ok;

        if (d < 0)
            return;
        io = io_submit(n, d, IO_READ, 0, 0);
        io_wait(io);
        ok = io->ok;
        io_free(io);
        if (!ok) {
            fail_device(n, d, "bitmap read at start");
            continue;
        }
        /* Not "on disk" for the data path: until join holds our slot's
         * lock, a survivor may still be taking our previous
         * incarnation's bits over and clear them (--trust-loaded-bits
         * shows what happens otherwise). */
        for (unsigned c = 0; c < NCHUNK; c++)
            if (S.d[d].bm[n->slot][c]) {
                n->dirty[c] = n->needed[c] = true;
                n->ondisk[c] = S.o.trust_loaded;
                trace("n%d own slot chunk %u dirty at start", n->idx, c);
            }
        return;
    }
}

static void join_co(void *arg)
{
    struct node *n = self();
    struct clr_mdc_config cfg = {
        .slot = n->slot,
        .nodes = S.o.nodes,
        .sync_sectors = (uint64_t)NBLK * BLK_SECT,
        .chunk_sectors = CHUNK_SECT,
        .window_sectors = WINDOW_SECT,
    };
    struct clr_mdc_host h = host_ops;
    int r;

    (void)arg;
    h.arg = n;
    r = clr_mdc_init(&n->mdc, &cfg, &h);
    if (r < 0) {
        fail("n%d clr_mdc_init: %d", n->idx, r);
        return;
    }
    n->mdc_init = true;
    /* a joiner finds unconfirmed members in the lockspace state: they
     * are lost for it too (lock_repl.c load_state) */
    for (unsigned j = 0; j < S.o.nodes; j++)
        if (S.n[j].crash_at_fence && S.n[j].crash_seen == S.n[j].crash_at_fence)
            deliver_lost(n, S.n[j].slot);
    wake_node(n); /* receiving starts now */
    load_own_bits(n);
    trace("n%d join (inc %" PRIu64 ")", n->idx, n->inc);
    r = clr_mdc_join(&n->mdc);
    trace("n%d join: %d", n->idx, r);
    if (r < 0) {
        /* slot still owned (a takeover holds it): leave cleanly and
         * come back later as a new member */
        S.c.join_retries++;
        n->member = false;
        add_fault(S.now + 30 + rndn(50), F_RESTART, n->idx, 0, 0);
        clr_lt_remove_owner(S.lt, n->inc, false, lt_emit, NULL);
        n->live = false;
        clr_mdc_destroy(&n->mdc);
        n->mdc_init = false;
        /* our pending receives are cancelled by the teardown */
        for (size_t i = 0; i < S.ncos; i++) {
            struct co *c = S.cos[i];

            if (c && c != co_cur && c->node == n->idx && c->inc == n->inc && c->bc && !c->bc_done) {
                c->bc->pending--;
                c->bc_done = true;
                wake(c->bc);
                c->st = CO_DEAD;
            }
        }
        return;
    }
    if (S.o.wa_join_announce) {
        /* A survivor may have our previous incarnation's slot queued
         * for takeover; clr_mdc_join() announces TAKEOVER(own slot)
         * only when something is dirty, so announce it here too. */
        struct clr_mdc_msg m = { .type = CLR_MDC_TAKEOVER, .slot = n->slot };

        h_send(n, &m, NULL);
    }
    /* md's do_md_run: the array goes active with a superblock write
     * through the clustered path (METADATA_UPDATED), which also tells
     * the others about a role change a dead writer never announced. */
    if (!S.o.no_start_sb) {
        r = clr_mdc_meta_begin(&n->mdc);
        co_yield ();
        apply_sb(n, &no_rx);
        if (r == 0 && start_missing(n) >= 0) {
            /* a member re-added elsewhere while we started (its
             * RE_ADD before our join): the engine's cl_start_check()
             * refuses and its caller assembles again */
            int d = start_missing(n);

            trace("n%d does not run dev%d, which has a role: starting again", n->idx, d);
            S.c.late_starts++;
            clr_mdc_meta_end(&n->mdc, (uint32_t)good_dev(), false);
            clr_mdc_leave(&n->mdc, next_needed(n) >= 0);
            n->member = false;
            n->leaving = true;
            add_fault(S.now, F_LEFT, n->idx, 0, 0)->inc = n->inc;
            add_fault(S.now + 20 + rndn(100), F_RESTART, n->idx, 0, 0);
            return;
        }
        if (r == 0)
            clr_mdc_meta_end(&n->mdc, (uint32_t)good_dev(), true);
        if (S.sb.member[S.spare] && !n->sees_new) {
            /* A NEWDISK that completed while we started (after its
             * broadcast, before our no-new-dev CR): we cannot see a
             * member.  Do not run; the admin makes it visible. */
            trace("n%d cannot see member dev%d: not starting", n->idx, S.spare);
            S.c.start_refusals++;
            S.lacks_new &= ~(1u << n->idx);
            clr_mdc_leave(&n->mdc, next_needed(n) >= 0);
            n->member = false;
            n->leaving = true;
            add_fault(S.now, F_LEFT, n->idx, 0, 0)->inc = n->inc;
            return;
        }
    }
    n->joined = true;
    wake_node(n);
    node_start_workers(n);
}

static unsigned live_joined(void)
{
    unsigned k = 0;

    for (unsigned i = 0; i < S.o.nodes; i++)
        k += S.n[i].live && S.n[i].joined && !S.n[i].leaving;
    return k;
}

static struct fault *add_fault(uint64_t at, int type, int a, int b, uint64_t len)
{
    static struct fault dummy;

    if (S.nf == MAXFAULTS) {
        fail("fault table full");
        return &dummy;
    }
    S.f[S.nf] = (struct fault){ .at = at, .type = type, .a = a, .b = b, .len = len };
    return &S.f[S.nf++];
}

static void do_crash(struct node *n)
{
    uint64_t inc = n->inc;
    uint64_t fence = S.now + 5 + rndn(80);

    S.c.crashes++;
    trace("CRASH n%d (inc %" PRIu64 ", slot %u), fence at %" PRIu64, n->idx, inc, n->slot, fence);
    node_teardown(n, true);
    if (n->mdc_init) {
        clr_mdc_destroy(&n->mdc);
        n->mdc_init = false;
    }
    add_fault(S.now + rndn(fence - S.now), F_PREP, n->idx, 0, 0)->inc = inc;
    add_fault(fence, F_FENCE, n->idx, 0, 0)->inc = inc;
    n->crash_at_fence = inc;
    if (!S.stopping && chance(60))
        add_fault(fence + 20 + rndn(300), F_RESTART, n->idx, 0, 0);
}

/* MEMBER_LOST for @slot to live node @o (model and core). */
static void deliver_lost(struct node *o, unsigned slot)
{
    if (slot == o->slot)
        return;
    clr_mdc_on_member_lost(&o->mdc, slot);
    o->lost_seq[slot] = ++S.evseq;
}

/* A crash seen and not yet fenced, other than @except's. */
static bool lost_unconfirmed(int except)
{
    for (unsigned j = 0; j < S.o.nodes; j++)
        if ((int)j != except && S.n[j].crash_at_fence && S.n[j].crash_seen == S.n[j].crash_at_fence)
            return true;
    return false;
}

static void do_fence(struct fault *f)
{
    int removed;
    bool done = !lost_unconfirmed(f->a);

    trace("FENCE n%d inc %" PRIu64 " confirmed dead", f->a, f->inc);
    for (unsigned i = 0; i < S.o.nodes; i++) {
        struct node *o = &S.n[i];

        if (o->live && o->mdc_init && o->inc != f->inc) {
            clr_mdc_on_member_failed(&o->mdc, S.n[f->a].slot);
            o->lost_seq[S.n[f->a].slot] = 0;
            o->dead_slots |= 1ull << S.n[f->a].slot;
        }
    }
    removed = clr_lt_remove_owner(S.lt, f->inc, true, lt_emit, NULL);
    trace("lock table: %d locks of inc %" PRIu64 " removed", removed, f->inc);
    for (unsigned i = 0; i < S.o.nodes; i++) {
        struct node *o = &S.n[i];

        /* DONE only once no seen crash is unconfirmed (lock_repl.c
         * check_done: no member FAILED) */
        if (o->live && o->mdc_init && o->inc != f->inc) {
            if (done)
                clr_mdc_on_done(&o->mdc);
            wake_node(o);
        }
    }
    /* the dead node's filesystem locks are recovered now */
    for (unsigned b = 0; b < NBLK; b++)
        if (S.blk[b].winc == f->inc && S.blk[b].writer >= 0)
            S.blk[b].writer = -1;
    if (S.n[f->a].crash_at_fence == f->inc)
        S.n[f->a].crash_at_fence = 0;
    wake(&S.wl_chan);
}

static void fire_fault(struct fault *f)
{
    struct node *n = f->a >= 0 && f->a < MAXN ? &S.n[f->a] : NULL;

    f->fired = true;
    switch (f->type) {
    case F_CRASH:
        if (S.stopping || !n->live || !n->mdc_init)
            return;
        if (live_joined() - (n->joined && !n->leaving ? 1 : 0) < 1)
            return; /* keep one joined node alive */
        do_crash(n);
        break;
    case F_PREP:
        /* the membership sees the node go (NODEDOWN): PREP, then
         * MEMBER_LOST, as lock_repl.c; confirmed by F_FENCE */
        trace("PREP, MEMBER_LOST (n%d died, slot %u)", f->a, S.n[f->a].slot);
        if (S.n[f->a].crash_at_fence == f->inc) {
            S.n[f->a].crash_seen = f->inc;
            S.c.holds++;
        }
        for (unsigned i = 0; i < S.o.nodes; i++)
            if (S.n[i].live && S.n[i].mdc_init) {
                clr_mdc_on_prep(&S.n[i].mdc);
                if (S.n[f->a].crash_seen == f->inc)
                    deliver_lost(&S.n[i], S.n[f->a].slot);
                wake_node(&S.n[i]);
            }
        break;
    case F_FENCE:
        do_fence(f);
        break;
    case F_RESTART:
        if (n->live || n->crash_at_fence)
            return;
        S.c.restarts++;
        trace("RESTART n%d slot %u", n->idx, n->slot);
        node_start(n);
        break;
    case F_DEV:
        if (S.d[f->a].dead)
            return;
        S.c.dev_failures++;
        trace("DEVICE FAILURE dev%d", f->a);
        S.d[f->a].dead = true;
        break;
    case F_PATH:
        S.c.path_losses++;
        trace("PATH LOSS n%d -> dev%d", f->a, f->b);
        S.path_lost[f->a][f->b] = true;
        break;
    case F_SLOW_DEV:
        S.c.slow_io++;
        trace("SLOW dev%d for %" PRIu64, f->a, f->len);
        S.d[f->a].slow_until = S.now + f->len;
        break;
    case F_SLOW_NODE:
        S.c.slow_io++;
        trace("SLOW n%d for %" PRIu64, f->a, f->len);
        S.node_slow_until[f->a] = S.now + f->len;
        break;
    case F_HEAL:
        /* path back, or the device replaced keeping its data */
        S.c.heals++;
        trace("HEAL dev%d", f->a);
        S.d[f->a].dead = false;
        for (int i = 0; i < MAXN; i++)
            S.path_lost[i][f->a] = false;
        add_fault(S.now + 10 + rndn(200), F_READD, f->a, 0, 0);
        break;
    case F_READD:
    case F_NEWDISK:
    case F_LEAVE: {
        int cand[MAXN], k = 0, other = 0;

        if (S.stopping)
            return;
        for (unsigned i = 0; i < S.o.nodes; i++) {
            struct node *o = &S.n[i];

            if (!o->live || !o->joined || o->leaving)
                continue;
            other++;
            if (o->admin || (f->type == F_NEWDISK && !o->sees_new) || (f->type == F_LEAVE && (int)i != f->a))
                continue;
            cand[k++] = (int)i;
        }
        if (!k || (f->type == F_LEAVE && other < 2)) {
            if (f->type != F_LEAVE)
                add_fault(S.now + 50, f->type, f->a, f->b, 0);
            return;
        }
        n = &S.n[cand[rndn((uint64_t)k)]];
        if (f->type == F_READD)
            spawn(n, "re-add", readd_co, (void *)(intptr_t)f->a);
        else if (f->type == F_NEWDISK)
            spawn(n, "newdisk", newdisk_co, NULL);
        else
            spawn(n, "leave", leave_co, NULL);
        break;
    }
    case F_LEFT:
        if (!n->live || n->inc != f->inc)
            return;
        trace("LEFT n%d (inc %" PRIu64 ", slot %u)", n->idx, n->inc, n->slot);
        node_teardown(n, false);
        clr_lt_remove_owner(S.lt, f->inc, false, lt_emit, NULL);
        if (n->mdc_init) {
            clr_mdc_destroy(&n->mdc);
            n->mdc_init = false;
        }
        for (unsigned i = 0; i < S.o.nodes; i++)
            if (S.n[i].live && S.n[i].mdc_init) {
                S.n[i].dead_slots |= 1ull << n->slot;
                wake_node(&S.n[i]);
            }
        if (!S.stopping && chance(60))
            add_fault(S.now + 20 + rndn(300), F_RESTART, n->idx, 0, 0);
        break;
    }
}

static int pick_faultable_dev(void)
{
    int d;

    if (S.faulted_devs + 1 >= S.o.devices)
        return -1;
    do
        d = (int)rndn(S.o.devices);
    while (d == S.safe_dev);
    if (!S.dev_faulted[d]) {
        S.dev_faulted[d] = true;
        S.faulted_devs++;
    }
    return d;
}

static void plan_faults(void)
{
    uint64_t K = S.o.steps;
    unsigned ncrash = S.o.nodes > 1 ? (unsigned)rndn(3) : 0;
    int d;

    if (S.o.no_faults)
        return;
    S.safe_dev = (int)rndn(S.o.devices);
    uint64_t first_crash = 0, first_heal = 0;

    for (unsigned i = 0; i < ncrash; i++) {
        uint64_t t = 1 + rndn(K);

        add_fault(t, F_CRASH, (int)rndn(S.o.nodes), 0, 0);
        if (!first_crash || t < first_crash)
            first_crash = t;
    }
    uint64_t last[MAXD] = { 0 };

    if (chance(35) && (d = pick_faultable_dev()) >= 0) {
        last[d] = 1 + rndn(K);
        add_fault(last[d], F_DEV, d, 0, 0);
    }
    if (chance(35) && (d = pick_faultable_dev()) >= 0) {
        uint64_t t = 1 + rndn(K);

        add_fault(t, F_PATH, (int)rndn(S.o.nodes), d, 0);
        if (t > last[d])
            last[d] = t;
    }
    /* the path comes back, or the device is replaced keeping its data;
     * then some node re-adds it */
    for (d = 0; d < (int)S.o.devices; d++)
        if (last[d] && !S.o.no_readd && chance(60)) {
            uint64_t t = last[d] + 50 + rndn(K / 2);

            add_fault(t, F_HEAL, d, 0, 0);
            first_heal = t;
        }
    if (!S.o.no_readd && S.o.nodes > 1 && chance(15))
        S.readd_refuser = (int)rndn(S.o.nodes);
    if (!S.o.no_newdisk && chance(30)) {
        add_fault(1 + rndn(K), F_NEWDISK, 0, 0, 0);
        if (S.o.nodes > 1 && chance(40))
            S.lacks_new = 1u << rndn(S.o.nodes);
    }
    if (!S.o.no_leave && S.o.nodes > 1 && chance(30)) {
        /* often while a takeover's resync or a rebuild runs: a leaver
         * with NEEDED chunks */
        uint64_t t = 1 + rndn(K);
        unsigned w = (unsigned)rndn(3);

        if (w == 1 && first_crash)
            t = first_crash + 70 + rndn(150);
        else if (w == 2 && first_heal)
            t = first_heal + 100 + rndn(300);
        add_fault(t, F_LEAVE, (int)rndn(S.o.nodes), 0, 0);
    }
    if (chance(30))
        add_fault(1 + rndn(K), F_SLOW_DEV, (int)rndn(S.o.devices), 0, 50 + rndn(300));
    if (chance(20))
        add_fault(1 + rndn(K), F_SLOW_NODE, (int)rndn(S.o.nodes), 0, 50 + rndn(300));
}

/* ------------------------------------------------------------------ */
/* the run                                                             */

static uint64_t next_event_time(void)
{
    uint64_t t = UINT64_MAX;

    for (struct io *io = S.ios; io; io = io->next)
        if (io->due < t)
            t = io->due;
    for (size_t i = 0; i < S.ncos; i++)
        if (S.cos[i] && S.cos[i]->st == CO_SLEEPING && S.cos[i]->wake_at < t)
            t = S.cos[i]->wake_at;
    for (unsigned i = 0; i < S.nf; i++)
        if (!S.f[i].fired && S.f[i].at < t)
            t = S.f[i].at;
    if (!S.stopping && S.stop_at < t)
        t = S.stop_at;
    return t;
}

static void compact_cos(void)
{
    size_t k = 0;

    for (size_t i = 0; i < S.ncos; i++) {
        struct co *c = S.cos[i];

        if (!c)
            continue;
        if (c->st == CO_DONE || c->st == CO_DEAD) {
            sim_co_free(c);
            continue;
        }
        S.cos[k++] = c;
    }
    S.ncos = k;
}

static void report_stuck(void)
{
    char buf[400];
    size_t len = 0;

    buf[0] = 0;
    for (size_t i = 0; i < S.ncos; i++) {
        struct co *c = S.cos[i];

        if (!c || (c->st != CO_WAITING && c->st != CO_SLEEPING) || c->idle)
            continue;
        if (c->st == CO_SLEEPING && (!c->why || strcmp(c->why, "mdc pause (polling)")))
            continue;
        trace("STUCK %s: %s", c->name, c->why ? c->why : "?");
        if (len < sizeof(buf) - 60)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s: %s", len ? "; " : "", c->name,
                                    c->why ? c->why : "?");
    }
    fail("(g) liveness: not quiescent after %" PRIu64 " steps: %s", S.now, buf);
}

static void scheduler(void)
{
    struct co **run = NULL;
    size_t caprun = 0;
    uint64_t iter = 0;

    for (;;) {
        size_t nrun = 0;

        if (S.failed)
            break;
        if (!S.stopping && S.now >= S.stop_at) {
            S.stopping = true;
            trace("STOP workload");
            for (unsigned i = 0; i < S.o.nodes; i++)
                wake_node(&S.n[i]);
            wake(&S.wl_chan);
        }
        for (unsigned i = 0; i < S.nf; i++)
            if (!S.f[i].fired && S.f[i].at <= S.now)
                fire_fault(&S.f[i]);
        io_complete_due();
        for (size_t i = 0; i < S.ncos; i++) {
            struct co *c = S.cos[i];

            if (c && c->st == CO_SLEEPING && c->wake_at <= S.now)
                c->st = CO_RUNNABLE;
        }
        if (++iter % 256 == 0)
            compact_cos();
        if (caprun < S.ncos) {
            caprun = S.ncos * 2;
            run = realloc(run, caprun * sizeof(*run));
            if (!run)
                abort();
        }
        for (size_t i = 0; i < S.ncos; i++)
            if (S.cos[i] && S.cos[i]->st == CO_RUNNABLE)
                run[nrun++] = S.cos[i];
        if (nrun == 0) {
            uint64_t t = next_event_time();

            if (t == UINT64_MAX) {
                if (S.stopping)
                    break; /* quiescent */
                t = S.stop_at;
            }
            S.now = t > S.now ? t : S.now + 1;
            if (S.now > S.bound) {
                report_stuck();
                break;
            }
            continue;
        }
        struct co *c = run[rndn(nrun)];

        co_run(c);
        S.now++;
        if (S.now > S.bound) {
            report_stuck();
            break;
        }
    }
    free(run);
    S.c.steps += S.now;
}

/* End-of-run checks: (b) from every live node, (f), (g). */
static void final_checks(void)
{
    for (size_t i = 0; i < S.ncos; i++) {
        struct co *c = S.cos[i];

        if (c && c->st == CO_WAITING && !c->idle) {
            report_stuck();
            return;
        }
    }
    for (unsigned i = 0; i < S.o.nodes; i++) {
        struct node *n = &S.n[i];
        struct clr_mdc_stats st;

        if (!n->live || !n->joined)
            continue;
        if (next_needed(n) >= 0)
            fail("(g) n%d left chunk %d needing resync", n->idx, next_needed(n));
        clr_mdc_stats(&n->mdc, &st);
        if (st.pending)
            fail("(g) n%d left slots %" PRIx64 " waiting for takeover", n->idx, st.pending);
        for (int d = 0; d < S.ndev; d++)
            if (S.sb.member[d] && S.sb.rebuilding[d] && !S.sb.faulty[d])
                fail("(g) dev%d still rebuilding (rebuilder slot %d)", d, S.sb.rebuilder[d]);
    }
    /* (g) once quiet, read balancing is back everywhere: no node keeps
     * a window or dirty extent nobody will ever end (the core's fields
     * are read here for the message only) */
    bool quiet = true;

    for (unsigned i = 0; i < S.o.nodes; i++)
        if (S.n[i].live && S.n[i].joined && next_needed(&S.n[i]) >= 0)
            quiet = false;
    for (unsigned i = 0; i < S.o.nodes && quiet && !S.failed; i++) {
        struct node *n = &S.n[i];

        if (!n->live || !n->joined || !clr_mdc_read_first(&n->mdc, 0, (uint64_t)NBLK * BLK_SECT))
            continue;
        for (unsigned s = 0; s < S.o.nodes; s++)
            if (n->mdc.dirty_hi[s] || n->mdc.win_from == (int)s)
                fail("(g) n%d keeps slot %u's dirty extent [%" PRIu64 ", %" PRIu64
                     ") / window (from %d) though nothing is NEEDED anywhere:"
                     " reads stay on the first device",
                     n->idx, s, n->mdc.dirty_lo[s], n->mdc.dirty_hi[s], n->mdc.win_from);
        if (!S.failed)
            fail("(g) n%d reads first-device only at the end", n->idx);
    }
    /* (f) all in-sync legs identical */
    for (unsigned b = 0; b < NBLK && !S.failed; b++) {
        int d0 = good_dev();

        for (int d = 0; d < S.ndev; d++)
            if (sb_in_sync(d) && S.d[d].data[b] != S.d[d0].data[b])
                fail("(f) block %u differs: dev%d %" PRIx64 " dev%d %" PRIx64, b, d0, S.d[d0].data[b], d,
                     S.d[d].data[b]);
    }
    /* (b) every block from every live node, through every choice its
     * read path could make */
    for (unsigned i = 0; i < S.o.nodes && !S.failed; i++) {
        struct node *n = &S.n[i];

        if (!n->live || !n->joined)
            continue;
        for (unsigned b = 0; b < NBLK; b++) {
            bool first = read_must_be_first(n, b, 1);

            for (int d = 0; d < S.ndev; d++) {
                if (!n->in_sync[d])
                    continue;
                if (!sb_in_sync(d))
                    fail("(e) n%d still reads dev%d, not in sync in the"
                         " superblock",
                         n->idx, d);
                check_read(n, b, S.d[d].data[b], d, "final read");
                if (first)
                    break;
            }
        }
    }
    /* Orphan bits: a slot without a live owner should have been taken
     * over.  A bit left on only some devices is a flush its dead owner
     * never finished (no leg was issued under it; takeover reads one
     * device, as md does; that device may fail later): counted only.
     * A missed bit that covered legs shows up as (f) / (b). */
    for (unsigned s = 0; s < S.o.nodes && !S.failed; s++) {
        bool owned = S.n[s].live && S.n[s].joined;

        if (owned)
            continue;
        for (unsigned c = 0; c < NCHUNK; c++) {
            unsigned on = 0;

            for (int d = 0; d < S.ndev; d++)
                if (sb_in_sync(d))
                    on += S.d[d].bm[s][c];
            if (on)
                S.c.orphan_bits++;
        }
    }
}

static void sim_reset(const struct opts *o, uint64_t seed)
{
    struct counters c = S.c;

    for (size_t i = 0; i < S.ncos; i++)
        sim_co_free(S.cos[i]);
    free(S.cos);
    while (S.all_ios)
        io_free(S.all_ios);
    S.ios = NULL;
    while (S.bcs) {
        struct bc *bc = S.bcs;

        S.bcs = bc->next;
        free(bc);
    }
    for (unsigned i = 0; i < MAXN; i++)
        if (S.n[i].mdc_init)
            clr_mdc_destroy(&S.n[i].mdc);
    if (S.lt)
        clr_lt_free(S.lt);
    memset(&S, 0, sizeof(S));
    S.c = c;
    S.o = *o;
    S.seed = seed;
    S.rng = seed * 0x2545f4914f6cdd1dull + 1;
    S.digest = 0xcbf29ce484222325ull;
    S.lt = clr_lt_new();
    S.stop_at = o->steps;
    S.bound = o->steps * 20 + 20000;
    S.ndev = (int)o->devices + 1;
    S.spare = (int)o->devices;
    S.readd_refuser = -1;
    for (int d = 0; d < S.ndev; d++) {
        S.sb.member[d] = d != S.spare;
        S.sb.rebuilder[d] = -1;
    }
    for (unsigned b = 0; b < NBLK; b++)
        S.blk[b].writer = -1;
    for (unsigned i = 0; i < MAXN; i++) {
        S.n[i].idx = (int)i;
        S.n[i].slot = i;
    }
}

/* One seed: 0 pass, 1 violation. */
static int run_seed(const struct opts *o, uint64_t seed, uint64_t *digest)
{
    sim_reset(o, seed);
    S.c.seeds++;
    trace("seed %" PRIu64 " nodes %u devices %u steps %" PRIu64 " bug %s", seed, o->nodes, o->devices,
          o->steps, bug_names[o->bug]);
    plan_faults();
    for (unsigned i = 0; i < o->nodes; i++)
        node_start(&S.n[i]);
    scheduler();
    if (!S.failed)
        final_checks();
    trace("end: %s digest", S.failed ? "FAIL" : "ok");
    *digest = S.digest;
    return S.failed ? 1 : 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: sim [--seeds A-B | --seed S] [--nodes N] [--devices M]\n"
                    "           [--steps K] [--inject-bug NAME] [--drain-legs]\n"
                    "           [--trust-loaded-bits] [--no-start-sb] [--no-faults]\n"
                    "           [--no-write-retry] [--no-write-behind]\n"
                    "           [--no-readd] [--no-newdisk] [--no-leave]\n"
                    "           [--resync-merged-early]\n"
                    "           [--workaround join-announce|reload-after-death|\n"
                    "                         join-lvb-order|lvb-invalid-zero|\n"
                    "                         join-takeover-lvb|all]\n"
                    "           [--replay-check] [--expect-fail] [-v]\n"
                    "bugs:");
    for (int i = 1; i < BUG_NCOUNT; i++)
        fprintf(stderr, " %s", bug_names[i]);
    fprintf(stderr, "\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct opts o = { .nodes = 3, .devices = 2, .steps = 3000 };
    uint64_t a = 1, b = 100;
    bool replay_check = false, expect_fail = false;
    char optstr[256] = "";
    size_t ol = 0;
    struct timespec t0, t1;

    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

#define ADDOPT(...) ol += (size_t)snprintf(optstr + ol, sizeof(optstr) - ol, __VA_ARGS__)
        if (!strcmp(s, "--seeds") && v) {
            if (sscanf(v, "%" SCNu64 "-%" SCNu64, &a, &b) != 2)
                usage();
            i++;
        } else if (!strcmp(s, "--seed") && v) {
            a = b = strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(s, "--nodes") && v) {
            o.nodes = (unsigned)atoi(v);
            i++;
        } else if (!strcmp(s, "--devices") && v) {
            o.devices = (unsigned)atoi(v);
            i++;
        } else if (!strcmp(s, "--steps") && v) {
            o.steps = strtoull(v, NULL, 0);
            i++;
        } else if (!strncmp(s, "--inject-bug=", 13) || (!strcmp(s, "--inject-bug") && v)) {
            const char *name = s[12] == '=' ? s + 13 : v;
            int k;

            if (s[12] != '=')
                i++;
            for (k = 1; k < BUG_NCOUNT; k++)
                if (!strcmp(name, bug_names[k]))
                    break;
            if (k == BUG_NCOUNT)
                usage();
            o.bug = (enum bug)k;
            clr_rules_fault = bug_fault[k];
        } else if (!strcmp(s, "--drain-legs")) {
            o.drain_legs = true;
        } else if (!strcmp(s, "--workaround") && v) {
            if (!strcmp(v, "join-announce"))
                o.wa_join_announce = true;
            else if (!strcmp(v, "reload-after-death"))
                o.wa_reload = true;
            else if (!strcmp(v, "join-lvb-order"))
                o.wa_join_lvb = true;
            else if (!strcmp(v, "lvb-invalid-zero"))
                o.wa_lvb_zero = true;
            else if (!strcmp(v, "join-takeover-lvb"))
                o.wa_join_vacated = true;
            else if (!strcmp(v, "all"))
                o.wa_join_announce = o.wa_reload = o.wa_join_lvb = o.wa_lvb_zero = o.wa_join_vacated = true;
            else
                usage();
            i++;
        } else if (!strcmp(s, "--no-write-behind")) {
            o.no_write_behind = true;
        } else if (!strcmp(s, "--no-write-retry")) {
            o.no_write_retry = true;
        } else if (!strcmp(s, "--no-start-sb")) {
            o.no_start_sb = true;
        } else if (!strcmp(s, "--trust-loaded-bits")) {
            o.trust_loaded = true;
        } else if (!strcmp(s, "--no-readd")) {
            o.no_readd = true;
        } else if (!strcmp(s, "--no-newdisk")) {
            o.no_newdisk = true;
        } else if (!strcmp(s, "--resync-merged-early")) {
            o.resync_merged_early = true;
        } else if (!strcmp(s, "--no-leave")) {
            o.no_leave = true;
        } else if (!strcmp(s, "--no-faults")) {
            o.no_faults = true;
        } else if (!strcmp(s, "--replay-check")) {
            replay_check = true;
        } else if (!strcmp(s, "--expect-fail")) {
            expect_fail = true;
        } else if (!strcmp(s, "-v")) {
            o.verbose = true;
        } else {
            usage();
        }
    }
    if (o.nodes < 1 || o.nodes > MAXN || o.devices < 2 || o.devices > MAXD || a > b || o.steps < 10)
        usage();
    ADDOPT(" --nodes %u --devices %u --steps %" PRIu64, o.nodes, o.devices, o.steps);
    if (o.bug)
        ADDOPT(" --inject-bug=%s", bug_names[o.bug]);
    if (o.drain_legs)
        ADDOPT(" --drain-legs");
    if (o.no_faults)
        ADDOPT(" --no-faults");
    if (o.no_readd)
        ADDOPT(" --no-readd");
    if (o.no_newdisk)
        ADDOPT(" --no-newdisk");
    if (o.no_leave)
        ADDOPT(" --no-leave");
    if (o.resync_merged_early)
        ADDOPT(" --resync-merged-early");
    if (o.no_start_sb)
        ADDOPT(" --no-start-sb");
    if (o.no_write_retry)
        ADDOPT(" --no-write-retry");
    if (o.no_write_behind)
        ADDOPT(" --no-write-behind");
    if (o.wa_join_announce && o.wa_reload && o.wa_join_lvb && o.wa_lvb_zero && o.wa_join_vacated) {
        ADDOPT(" --workaround all");
    } else {
        if (o.wa_join_announce)
            ADDOPT(" --workaround join-announce");
        if (o.wa_reload)
            ADDOPT(" --workaround reload-after-death");
        if (o.wa_join_lvb)
            ADDOPT(" --workaround join-lvb-order");
        if (o.wa_lvb_zero)
            ADDOPT(" --workaround lvb-invalid-zero");
        if (o.wa_join_vacated)
            ADDOPT(" --workaround join-takeover-lvb");
    }
    if (o.trust_loaded)
        ADDOPT(" --trust-loaded-bits");

    clock_gettime(CLOCK_MONOTONIC, &t0); /* reporting only */
    for (uint64_t s = a; s <= b; s++) {
        uint64_t dg, dg2;
        int r = run_seed(&o, s, &dg);

        if (r == 0 && replay_check) {
            struct counters keep = S.c;

            run_seed(&o, s, &dg2);
            S.c = keep;
            if (dg != dg2) {
                fprintf(stderr,
                        "seed %" PRIu64 ": not deterministic"
                        " (%016" PRIx64 " vs %016" PRIx64 ")\n",
                        s, dg, dg2);
                printf("replay: tests/sim/sim --seed %" PRIu64 "%s -v\n", s, optstr);
                return 1;
            }
        }
        if (o.verbose || a == b)
            printf("seed %" PRIu64 ": %s, digest %016" PRIx64 "\n", s, r ? "FAIL" : "ok", dg);
        if (r) {
            S.c.failures++;
            if (expect_fail) {
                printf("injected bug %s caught by seed %" PRIu64 ": %s\n", bug_names[o.bug], s, S.failure);
                return 0;
            }
            fprintf(stderr, "seed %" PRIu64 ": %s\n", s, S.failure);
            printf("replay: tests/sim/sim --seed %" PRIu64 "%s -v\n", s, optstr);
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (expect_fail) {
        printf("injected bug %s NOT caught in seeds %" PRIu64 "-%" PRIu64 "\n", bug_names[o.bug], a, b);
        return 1;
    }
    printf(
        "%" PRIu64 " seeds, %" PRIu64 " failures; crashes %" PRIu64 ", restarts %" PRIu64
        ", device failures %" PRIu64 ", path losses %" PRIu64 ", slow-io %" PRIu64 ", takeovers %" PRIu64
        ", resync chunks %" PRIu64 ", messages %" PRIu64 ", writes acked %" PRIu64 ", reads checked %" PRIu64
        ", reopened %" PRIu64 ", partial-flush orphan bits %" PRIu64 ", join retries %" PRIu64
        ", write retries %" PRIu64 ", write holds %" PRIu64 " (writes held %" PRIu64 ")"
        "; leaves clean %" PRIu64 " / with NEEDED %" PRIu64 ", heals %" PRIu64 ", re-adds %" PRIu64
        " (rolled back %" PRIu64 "), newdisks %" PRIu64 " (rolled back %" PRIu64 "), rebuilds done %" PRIu64
        " (resumed by a survivor %" PRIu64 "), starts refused (member unseen) %" PRIu64
        ", starts redone after a re-add %" PRIu64 ", steps %" PRIu64 " (%.1f s)\n",
        S.c.seeds, S.c.failures, S.c.crashes, S.c.restarts, S.c.dev_failures, S.c.path_losses, S.c.slow_io,
        S.c.takeovers, S.c.resync_chunks, S.c.msgs, S.c.writes_acked, S.c.reads_checked, S.c.reopened,
        S.c.orphan_bits, S.c.join_retries, S.c.write_retries, S.c.holds, S.c.held_writes, S.c.leaves_clean,
        S.c.leaves_unclean, S.c.heals, S.c.readds, S.c.readd_rollbacks, S.c.newdisks, S.c.newdisk_rollbacks,
        S.c.rebuilds_done, S.c.adoptions, S.c.start_refusals, S.c.late_starts, S.c.steps,
        (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}
