/*
 * sim56: deterministic simulation of clustered RAID5/6 (tests/sim/README56).
 *
 * N nodes write and read one parity array over shared members through the
 * real zone rules (engine/cluster/zone.c, built here with CLR_ZONE_FAULTS)
 * and the real lock table (engine/lock/lock_table.c), on one thread,
 * stepped by a splitmix64 scheduler seeded by the seed.  Nodes crash,
 * members fail, log header writes tear, lock messages to a node are
 * reordered across locks; a survivor replays a dead node's log.  The
 * checker holds the invariants of doc/cluster.md ("Clustered RAID5/6"):
 *
 *   EXCL    a chunk write is issued only under EX of its zone, and no two
 *           nodes have writes in flight in one zone
 *   FREEZE  nobody but the recoverer writes a zone that a dead,
 *           unreplayed slot's durable log names
 *   LOG     a node's durable log names only zones it holds EX (checked
 *           when a header lands and when it gives EX up)
 *   READ    every read returns the last acknowledged value, or a value of
 *           a write in flight; after a writer's crash, old or new, the
 *           same for every later read (fixed by the first)
 *   PARITY  at the end every stripe's P (and Q) match its data
 *   RECON   at the end every data chunk reconstructs to its value with
 *           any member (RAID6: any two) lost
 *   LIVE    the end state is reached: no operation stuck, no slot left
 *           unrecovered
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/zone.h"
#include "lock/lock_table.h"

#define MAXN     4  /* nodes */
#define MAXM     6  /* members */
#define MAXS     12 /* stripes */
#define MAXZ     MAXS
#define NCOPIES  2 /* log header copies per slot */
#define MAXOPS   4 /* client operations per node at once */
#define MAXIO    512
#define MAXEV    256
#define REC_LKID 1000 /* lock ids of the recovery locks: REC_LKID + slot */

typedef uint32_t val_t; /* four GF(2^8) bytes per chunk */

/* ---------------------------------------------------------------- rng */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static unsigned below(unsigned n)
{
    return n ? (unsigned)(rnd() % n) : 0;
}

static bool chance(unsigned pct)
{
    return below(100) < pct;
}

/* ---------------------------------------------------------------- GF(2^8) */

static uint8_t gf_exp[512], gf_log[256];

static void gf_init(void)
{
    unsigned x = 1;

    for (int i = 0; i < 255; i++) {
        gf_exp[i] = (uint8_t)x;
        gf_log[x] = (uint8_t)i;
        x <<= 1;
        if (x & 0x100)
            x ^= 0x11d;
    }
    for (int i = 255; i < 512; i++)
        gf_exp[i] = gf_exp[i - 255];
}

static uint8_t gmul(uint8_t a, uint8_t b)
{
    return a && b ? gf_exp[gf_log[a] + gf_log[b]] : 0;
}

static uint8_t gdiv(uint8_t a, uint8_t b)
{
    return a ? gf_exp[gf_log[a] + 255 - gf_log[b]] : 0;
}

/* g^i * v, bytewise */
static val_t gscale(unsigned i, val_t v)
{
    val_t r = 0;

    for (int b = 0; b < 4; b++)
        r |= (val_t)gmul(gf_exp[i % 255], (uint8_t)(v >> (8 * b))) << (8 * b);
    return r;
}

static val_t gdivv(val_t v, uint8_t c)
{
    val_t r = 0;

    for (int b = 0; b < 4; b++)
        r |= (val_t)gdiv((uint8_t)(v >> (8 * b)), c) << (8 * b);
    return r;
}

static val_t gmulv(val_t v, uint8_t c)
{
    val_t r = 0;

    for (int b = 0; b < 4; b++)
        r |= (val_t)gmul((uint8_t)(v >> (8 * b)), c) << (8 * b);
    return r;
}

/* ---------------------------------------------------------------- model */

struct cfg {
    int level, nodes, ndata, nmem, stripes, spz, steps, maxfail;
    bool verbose, no_crash, no_fail, disjoint;
};

struct entry {
    int stripe;
    unsigned mask; /* changed data chunks */
    val_t pp, pq;
    bool complete; /* in memory: the write is done */
};

struct loghdr {
    uint64_t gen;
    bool valid; /* checksum right */
    int n;
    struct entry e[MAXS];
};

enum ev_type {
    EV_LT,
    EV_FAILED,
    EV_RECOVERED
};

struct event {
    enum ev_type type;
    struct clr_lt_effect lt;
    int slot;
};

enum op_type {
    OP_NONE,
    OP_WRITE,
    OP_READ,
    OP_CHECK,
    OP_RECOVER
};

struct op {
    enum op_type type;
    int state;
    int stripe, chunk;
    unsigned mask;
    val_t newv[MAXM];
    uint64_t need_gen; /* header generation that makes our entry durable */
    int ios;           /* chunk writes outstanding */
    bool granted;      /* recovery: the slot's recovery lock is ours */
    /* recovery */
    int slot;
    struct loghdr hdr;
    int next;
};

struct node {
    bool up;
    uint64_t inc;
    int slot;
    struct clr_zone_cache z[MAXZ];
    uint64_t seq[MAXZ];
    uint64_t unrecovered;
    struct loghdr mem;    /* the log as this node keeps it */
    uint64_t gen;         /* last generation issued */
    uint64_t durable_gen; /* last generation on disk */
    bool log_io;          /* a header write in flight */
    bool log_dirty;       /* mem changed since the last header issued */
    bool stripe_busy[MAXS];
    struct op ops[MAXOPS + 1]; /* [MAXOPS]: recovery */
    struct event ev[MAXEV];
    int nev;
    int restarts;
};

enum io_kind {
    IO_CHUNK,
    IO_LOG
};

struct io {
    bool used;
    enum io_kind kind;
    int node;
    uint64_t inc;
    int dev, stripe;
    val_t v;
    int copy;
    struct loghdr hdr;
    int due;
    int op; /* index into the node's ops, -1 none */
};

/* the oracle, per data chunk */
struct oracle {
    val_t acked;
    val_t maybe[8]; /* values of writes in flight (live) or of crashed writers */
    bool crashed[8];
    int nmaybe;
};

static struct {
    struct cfg c;
    uint64_t seed;
    int step;
    struct clr_lt *lt;
    struct node n[MAXN];
    bool failed[MAXM];
    int nfailed;
    val_t disk[MAXM][MAXS];
    struct loghdr log[MAXN][NCOPIES]; /* per slot, on the array */
    struct io io[MAXIO];
    struct oracle or [MAXS][MAXM];
    uint64_t unrec_global; /* confirmed dead slots not yet replayed */
    int fence_at[MAXN];    /* step the fence of a slot fires, 0 none */
    uint64_t next_inc;
    const char *fail;
    /* counts */
    unsigned writes, reads, dreads, checks, crashes, fences, replays, entries_replayed, lost, torn, failures,
        bast, retires, lock_req, restarts;
    unsigned late_writes, late_lock_req; /* after the first tenth of the steps */
} S;

static void trace(const char *fmt, ...)
{
    va_list ap;

    if (!S.c.verbose)
        return;
    printf("%5d ", S.step);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static void violation(const char *fmt, ...)
{
    static char buf[512];
    va_list ap;

    if (S.fail)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    S.fail = buf;
    trace("VIOLATION %s", buf);
}

/* layout: P rotates from the last member down; Q follows P; data after */
static int pdev(int s)
{
    return S.c.nmem - 1 - s % S.c.nmem;
}

static int qdev(int s)
{
    return S.c.level == 6 ? (pdev(s) + 1) % S.c.nmem : -1;
}

static int ddev(int s, int i)
{
    return (pdev(s) + (S.c.level == 6 ? 2 : 1) + i) % S.c.nmem;
}

static int zone_of(int s)
{
    return s / S.c.spz;
}

static int nzones(void)
{
    return (S.c.stripes + S.c.spz - 1) / S.c.spz;
}

static struct clr_zone_ctx ctx_of(struct node *n)
{
    struct clr_zone_ctx x = { .now = (uint64_t)S.step, .min_hold = 6, .unrecovered = n->unrecovered };

    return x;
}

static val_t pof(const val_t *d)
{
    val_t p = 0;

    for (int i = 0; i < S.c.ndata; i++)
        p ^= d[i];
    return p;
}

static val_t qof(const val_t *d)
{
    val_t q = 0;

    for (int i = 0; i < S.c.ndata; i++)
        q ^= gscale((unsigned)i, d[i]);
    return q;
}

/*
 * Fill the data chunks of stripe @s named in @unknown (bit i: chunk i) from
 * the others in @d and the parity on disk (P if @p_ok, Q if @q_ok).
 * @return false if it cannot (more unknown than parity).
 */
static bool solve(int s, val_t *d, unsigned unknown, bool p_ok, bool q_ok)
{
    int miss[MAXM], nm = 0;

    for (int i = 0; i < S.c.ndata; i++)
        if (unknown >> i & 1)
            miss[nm++] = i;
    if (nm == 0)
        return true;
    if (nm == 1 && p_ok) {
        val_t p = S.disk[pdev(s)][s];

        for (int i = 0; i < S.c.ndata; i++)
            if (i != miss[0])
                p ^= d[i];
        d[miss[0]] = p;
        return true;
    }
    if (nm == 1 && q_ok) {
        val_t q = S.disk[qdev(s)][s];

        for (int i = 0; i < S.c.ndata; i++)
            if (i != miss[0])
                q ^= gscale((unsigned)i, d[i]);
        d[miss[0]] = gdivv(q, gf_exp[miss[0]]);
        return true;
    }
    if (nm == 2 && p_ok && q_ok) {
        int a = miss[0], b = miss[1];
        val_t pxy = S.disk[pdev(s)][s], qxy = S.disk[qdev(s)][s];

        for (int i = 0; i < S.c.ndata; i++) {
            if (i == a || i == b)
                continue;
            pxy ^= d[i];
            qxy ^= gscale((unsigned)i, d[i]);
        }
        /* d_b = (qxy + g^a pxy) / (g^a + g^b); d_a = pxy + d_b */
        d[b] = gdivv(qxy ^ gmulv(pxy, gf_exp[a]), gf_exp[a] ^ gf_exp[b]);
        d[a] = pxy ^ d[b];
        return true;
    }
    return false;
}

/*
 * Reconstruct the data of stripe @s with members @gone (bit mask) unusable,
 * from disk.  @return false if it cannot (more missing than parity).
 */
static bool stripe_data(int s, unsigned gone, val_t *d)
{
    unsigned unknown = 0;

    for (int i = 0; i < S.c.ndata; i++) {
        if (gone >> ddev(s, i) & 1) {
            unknown |= 1u << i;
            d[i] = 0;
        } else {
            d[i] = S.disk[ddev(s, i)][s];
        }
    }
    return solve(s, d, unknown, !(gone >> pdev(s) & 1), S.c.level == 6 && !(gone >> qdev(s) & 1));
}

static unsigned gone_mask(void)
{
    unsigned g = 0;

    for (int m = 0; m < S.c.nmem; m++)
        if (S.failed[m])
            g |= 1u << m;
    return g;
}

/* ---------------------------------------------------------------- oracle */

static void or_add(int s, int i, val_t v)
{
    struct oracle *o = &S.or [s][i];

    if (o->nmaybe < 8) {
        o->maybe[o->nmaybe] = v;
        o->crashed[o->nmaybe++] = false;
    }
}

static void or_drop(struct oracle *o, int k)
{
    o->maybe[k] = o->maybe[--o->nmaybe];
    o->crashed[k] = o->crashed[o->nmaybe];
}

static void or_ack(int s, int i, val_t v)
{
    struct oracle *o = &S.or [s][i];

    o->acked = v;
    for (int k = 0; k < o->nmaybe; k++)
        if (o->maybe[k] == v && !o->crashed[k]) {
            or_drop(o, k);
            break;
        }
}

/* a writer died: its values may or may not be there */
static void or_crash(int s, int i, val_t v)
{
    struct oracle *o = &S.or [s][i];

    for (int k = 0; k < o->nmaybe; k++)
        if (o->maybe[k] == v && !o->crashed[k]) {
            o->crashed[k] = true;
            return;
        }
}

/* a read returned @v: allowed?  A read fixes what a dead writer left. */
static void or_read(int s, int i, val_t v, const char *how, int node)
{
    struct oracle *o = &S.or [s][i];
    bool ok = v == o->acked;

    for (int k = 0; k < o->nmaybe && !ok; k++)
        ok = o->maybe[k] == v;
    if (!ok) {
        violation("READ: node %d %s stripe %d chunk %d = %08x, acknowledged %08x (%d in flight)", node, how,
                  s, i, v, o->acked, o->nmaybe);
        return;
    }
    bool fixes = false;

    for (int k = 0; k < o->nmaybe; k++)
        fixes |= o->crashed[k];
    if (!fixes)
        return;
    bool live_match = false;

    for (int k = 0; k < o->nmaybe; k++)
        live_match |= !o->crashed[k] && o->maybe[k] == v;
    if (live_match)
        return;
    o->acked = v;
    for (int k = o->nmaybe - 1; k >= 0; k--)
        if (o->crashed[k])
            or_drop(o, k);
}

/* ---------------------------------------------------------------- locks */

static struct node *node_of_inc(uint64_t inc)
{
    for (int i = 0; i < S.c.nodes; i++)
        if (S.n[i].up && S.n[i].inc == inc)
            return &S.n[i];
    return NULL;
}

static void push_ev(struct node *n, const struct event *e)
{
    if (n->nev >= MAXEV) {
        violation("event queue of node %d overflowed", n->slot);
        return;
    }
    n->ev[n->nev++] = *e;
}

static void lt_emit(void *arg, const struct clr_lt_effect *e)
{
    struct node *n = node_of_inc(e->owner);
    struct event ev = { .type = EV_LT, .lt = *e };

    (void)arg;
    if (n)
        push_ev(n, &ev);
}

static void zname(int z, char *buf, size_t len)
{
    snprintf(buf, len, CLR_ZONE_NAME_FMT, (unsigned long long)z);
}

static int lt_mode(struct node *n, int z)
{
    int gr, rq;
    enum clr_lt_queue q;

    if (clr_lt_lock_info(S.lt, n->inc, (uint64_t)z + 1, &gr, &rq, &q) < 0)
        return CLR_ZONE_IV;
    return gr;
}

/* the zones a slot's durable (on-disk, picked) log names */
static const struct loghdr *durable_log(int slot)
{
    uint64_t gen[NCOPIES];
    bool valid[NCOPIES];

    for (int c = 0; c < NCOPIES; c++) {
        gen[c] = S.log[slot][c].gen;
        valid[c] = S.log[slot][c].valid;
    }
    int k = clr_zone_log_pick(gen, valid, NCOPIES);

    return k < 0 ? NULL : &S.log[slot][k];
}

static bool log_names_zone(const struct loghdr *h, int z)
{
    if (!h)
        return false;
    for (int i = 0; i < h->n; i++)
        if (h->e[i].stripe >= 0 && h->e[i].stripe < S.c.stripes && zone_of(h->e[i].stripe) == z)
            return true;
    return false;
}

static void check_log_held(struct node *n)
{
    const struct loghdr *h = durable_log(n->slot);

    for (int z = 0; z < nzones() && h; z++)
        if (log_names_zone(h, z) && lt_mode(n, z) != CLR_ZONE_EX)
            violation("LOG: node %d's durable log names zone %d, which it does not hold EX", n->slot, z);
}

/* ---------------------------------------------------------------- I/O */

static struct io *io_new(struct node *n, enum io_kind k, int opi)
{
    for (int i = 0; i < MAXIO; i++) {
        if (!S.io[i].used) {
            struct io *io = &S.io[i];

            memset(io, 0, sizeof(*io));
            io->used = true;
            io->kind = k;
            io->node = n->slot;
            io->inc = n->inc;
            io->op = opi;
            io->due = S.step + 1 + (int)below(chance(10) ? 12 : 4);
            return io;
        }
    }
    violation("out of I/O slots");
    return NULL;
}

static void log_issue(struct node *n);

static void io_land(struct io *io, bool torn)
{
    if (io->kind == IO_CHUNK) {
        if (!S.failed[io->dev])
            S.disk[io->dev][io->stripe] = io->v;
    } else {
        S.log[io->node][io->copy] = io->hdr;
        if (torn) {
            S.torn++;
            S.log[io->node][io->copy].valid = false;
            /* what a torn header holds is noise */
            S.log[io->node][io->copy].n = 1;
            S.log[io->node][io->copy].e[0].stripe = (int)below((unsigned)S.c.stripes);
            S.log[io->node][io->copy].e[0].mask = 1u + below((1u << S.c.ndata) - 1);
            S.log[io->node][io->copy].e[0].pp = (val_t)rnd();
            S.log[io->node][io->copy].e[0].pq = (val_t)rnd();
        }
    }
}

/* completion seen by the issuing node (alive, same incarnation) */
static void io_done(struct io *io)
{
    struct node *n = &S.n[io->node];

    if (!n->up || n->inc != io->inc)
        return;
    if (io->kind == IO_LOG) {
        n->durable_gen = io->hdr.gen;
        n->log_io = false;
        /* logged counts what the disk names */
        for (int z = 0; z < nzones(); z++) {
            n->z[z].logged = 0;
            for (int i = 0; i < io->hdr.n; i++)
                if (zone_of(io->hdr.e[i].stripe) == z)
                    n->z[z].logged++;
        }
        check_log_held(n);
        if (n->log_dirty)
            log_issue(n);
        return;
    }
    if (io->op >= 0 && n->ops[io->op].type != OP_NONE)
        n->ops[io->op].ios--;
}

static void land_due(void)
{
    int idx[MAXIO], k = 0;

    for (int i = 0; i < MAXIO; i++)
        if (S.io[i].used && S.io[i].due <= S.step)
            idx[k++] = i;
    for (int i = k - 1; i > 0; i--) {
        int j = (int)below((unsigned)i + 1), t = idx[i];

        idx[i] = idx[j];
        idx[j] = t;
    }
    for (int i = 0; i < k; i++) {
        struct io *io = &S.io[idx[i]];

        io_land(io, false);
        io->used = false;
        io_done(io);
    }
}

/* write the node's current log as a new header (one at a time) */
static void log_issue(struct node *n)
{
    if (n->log_io) {
        n->log_dirty = true;
        return;
    }
    if (!clr_zone_join_may_write(n->unrecovered, n->slot)) {
        n->log_dirty = true;
        return;
    }
    struct io *io = io_new(n, IO_LOG, -1);
    uint64_t gen[NCOPIES];
    bool valid[NCOPIES];

    if (!io)
        return;
    for (int c = 0; c < NCOPIES; c++) {
        gen[c] = S.log[n->slot][c].gen;
        valid[c] = S.log[n->slot][c].valid;
    }
    io->copy = (int)clr_zone_log_next_copy(gen, valid, NCOPIES);
    io->hdr = n->mem;
    /* newer than every copy, whoever wrote it (a recoverer, a torn try) */
    for (int c = 0; c < NCOPIES; c++)
        if (gen[c] > n->gen)
            n->gen = gen[c];
    io->hdr.gen = ++n->gen;
    io->hdr.valid = true;
    n->log_io = true;
    n->log_dirty = false;
}

/* drop entries that may go (complete ones; all of zone @z when z >= 0) */
static bool log_trim(struct node *n, int z)
{
    bool changed = false;

    for (int i = n->mem.n - 1; i >= 0; i--) {
        struct entry *e = &n->mem.e[i];

        if (z >= 0 && zone_of(e->stripe) != z)
            continue;
        if (!clr_zone_log_may_retire(e->complete))
            continue;
        n->mem.e[i] = n->mem.e[--n->mem.n];
        changed = true;
    }
    return changed;
}

/* ---------------------------------------------------------------- nodes */

static void check_excl(struct node *n, int s)
{
    int z = zone_of(s);

    if (lt_mode(n, z) != CLR_ZONE_EX)
        violation("EXCL: node %d writes stripe %d without EX on zone %d", n->slot, s, z);
    for (int i = 0; i < MAXIO; i++) {
        struct io *io = &S.io[i];

        if (io->used && io->kind == IO_CHUNK && io->node != n->slot && zone_of(io->stripe) == z)
            violation("EXCL: node %d writes zone %d while node %d has writes in flight there", n->slot, z,
                      io->node);
    }
    for (int q = 0; q < MAXN; q++) {
        if (!(S.unrec_global >> q & 1))
            continue;
        if (log_names_zone(durable_log(q), z))
            violation("FREEZE: node %d writes zone %d, named by dead slot %d's unreplayed log", n->slot, z,
                      q);
    }
}

static void chunk_write(struct node *n, int opi, int dev, int s, val_t v)
{
    struct io *io;

    if (S.failed[dev])
        return;
    io = io_new(n, IO_CHUNK, opi);
    if (!io)
        return;
    io->dev = dev;
    io->stripe = s;
    io->v = v;
    if (opi >= 0)
        n->ops[opi].ios++;
}

static bool zone_admit(struct node *n, int z, enum clr_zone_op kind)
{
    struct clr_zone_ctx x = ctx_of(n);
    struct clr_zone_cache *c = &n->z[z];
    char name[64];

    if (kind == CLR_ZONE_OP_WRITE && !clr_zone_join_may_write(n->unrecovered, n->slot))
        return false;
    switch (clr_zone_admit(c, &x, kind)) {
    case CLR_ZONE_ADMIT:
        if (clr_zone_need(kind) != CLR_ZONE_IV)
            c->inflight++;
        return true;
    case CLR_ZONE_REQUEST: {
        int mode = clr_zone_request_mode(c, kind);

        zname(z, name, sizeof(name));
        c->requesting = true;
        S.lock_req++;
        S.late_lock_req += S.step > S.c.steps / 10;
        trace("node %d requests %s on zone %d", n->slot, mode == CLR_ZONE_EX ? "EX" : "PR", z);
        clr_lt_request(S.lt, n->inc, (uint64_t)z + 1, name, strlen(name), mode, CLR_LOCK_F_VALBLK, lt_emit,
                       NULL);
        return false;
    }
    case CLR_ZONE_DROP:
        trace("node %d drops PR on zone %d to ask for EX", n->slot, z);
        c->mode = CLR_ZONE_IV;
        clr_lt_unlock(S.lt, n->inc, (uint64_t)z + 1, 0, NULL, lt_emit, NULL);
        return false;
    case CLR_ZONE_WAIT:
        return false;
    }
    return false;
}

static void zone_done(struct node *n, int z, enum clr_zone_op kind)
{
    if (clr_zone_need(kind) != CLR_ZONE_IV && n->z[z].inflight)
        n->z[z].inflight--;
}

static void op_write(struct node *n, int opi)
{
    struct op *o = &n->ops[opi];
    int s = o->stripe, z = zone_of(s);

    switch (o->state) {
    case 0: /* admission */
        if (!zone_admit(n, z, CLR_ZONE_OP_WRITE))
            return;
        o->state = 1;
        /* fallthrough */
    case 1: { /* stripe lock, read, log */
        if (n->stripe_busy[s])
            return;
        n->stripe_busy[s] = true;
        val_t d[MAXM];

        if (!stripe_data(s, gone_mask(), d)) {
            violation("stripe %d unreadable with %d members failed", s, S.nfailed);
            return;
        }
        struct entry e = { .stripe = s, .mask = o->mask };
        bool all = S.nfailed == 0;

        for (int i = 0; i < S.c.ndata; i++) {
            if (o->mask >> i & 1) {
                o->newv[i] = (val_t)rnd();
                or_add(s, i, o->newv[i]);
            }
        }
        if (all) {
            /* read-modify-write, as md's PPL: pp = old P + old changed */
            e.pp = S.disk[pdev(s)][s];
            e.pq = S.c.level == 6 ? S.disk[qdev(s)][s] : 0;
            for (int i = 0; i < S.c.ndata; i++)
                if (o->mask >> i & 1) {
                    e.pp ^= d[i];
                    e.pq ^= gscale((unsigned)i, d[i]);
                }
        } else {
            /* reconstruct-write: partial parity of the unchanged chunks */
            for (int i = 0; i < S.c.ndata; i++)
                if (!(o->mask >> i & 1)) {
                    e.pp ^= d[i];
                    e.pq ^= gscale((unsigned)i, d[i]);
                }
        }
        for (int i = 0; i < n->mem.n; i++)
            if (n->mem.e[i].stripe == s)
                n->mem.e[i] = n->mem.e[--n->mem.n];
        n->mem.e[n->mem.n++] = e;
        log_issue(n);
        o->need_gen = n->log_io && !n->log_dirty ? n->gen : n->gen + 1;
        o->state = 2;
        return;
    }
    case 2: { /* data and parity once the entry is durable */
        if (!clr_zone_may_issue(n->durable_gen >= o->need_gen))
            return;
        val_t d[MAXM];

        check_excl(n, s);
        if (S.nfailed == 0) {
            val_t p = S.disk[pdev(s)][s], q = S.c.level == 6 ? S.disk[qdev(s)][s] : 0;

            for (int i = 0; i < S.c.ndata; i++) {
                if (!(o->mask >> i & 1))
                    continue;
                val_t old = S.disk[ddev(s, i)][s];

                p ^= old ^ o->newv[i];
                q ^= gscale((unsigned)i, old ^ o->newv[i]);
                chunk_write(n, opi, ddev(s, i), s, o->newv[i]);
            }
            chunk_write(n, opi, pdev(s), s, p);
            if (S.c.level == 6)
                chunk_write(n, opi, qdev(s), s, q);
        } else {
            if (!stripe_data(s, gone_mask(), d)) {
                violation("stripe %d unreadable with %d members failed", s, S.nfailed);
                return;
            }
            for (int i = 0; i < S.c.ndata; i++)
                if (o->mask >> i & 1) {
                    d[i] = o->newv[i];
                    chunk_write(n, opi, ddev(s, i), s, d[i]);
                }
            chunk_write(n, opi, pdev(s), s, pof(d));
            if (S.c.level == 6)
                chunk_write(n, opi, qdev(s), s, qof(d));
        }
        o->state = 3;
        return;
    }
    case 3: /* acknowledge */
        if (o->ios > 0)
            return;
        for (int i = 0; i < S.c.ndata; i++)
            if (o->mask >> i & 1)
                or_ack(s, i, o->newv[i]);
        for (int i = 0; i < n->mem.n; i++)
            if (n->mem.e[i].stripe == s)
                n->mem.e[i].complete = true;
        n->stripe_busy[s] = false;
        zone_done(n, z, CLR_ZONE_OP_WRITE);
        S.writes++;
        S.late_writes += S.step > S.c.steps / 10;
        o->type = OP_NONE;
        return;
    }
}

static void op_read(struct node *n, int opi)
{
    struct op *o = &n->ops[opi];
    int s = o->stripe, i = o->chunk, z = zone_of(s);

    if (o->state == 0) {
        if (!S.failed[ddev(s, i)]) {
            /* fault-free: straight from the member, no lock */
            or_read(s, i, S.disk[ddev(s, i)][s], "reads", n->slot);
            S.reads++;
            o->type = OP_NONE;
            return;
        }
        if (!zone_admit(n, z, CLR_ZONE_OP_READ_DEGRADED))
            return;
        o->state = 1;
        return; /* the reconstruct reads take a step */
    }
    if (n->stripe_busy[s])
        return;
    val_t d[MAXM];

    if (stripe_data(s, gone_mask(), d))
        or_read(s, i, d[i], "reconstructs", n->slot);
    zone_done(n, z, CLR_ZONE_OP_READ_DEGRADED);
    S.dreads++;
    o->type = OP_NONE;
}

/* A check (scrub) of one stripe, as the engine's sync unit does it: PR of
 * the zone (or our EX), the node's stripe lock, read every member.  With
 * all of the stripe's members present, P (and Q) must agree with the
 * data: no node writes the zone while we hold it, and a zone a dead node
 * wrote is not used before its log is replayed (CHECK). */
static void op_check(struct node *n, int opi)
{
    struct op *o = &n->ops[opi];
    int s = o->stripe, z = zone_of(s);
    bool all = true;
    val_t d[MAXM];

    if (o->state == 0) {
        if (!zone_admit(n, z, CLR_ZONE_OP_CHECK))
            return;
        o->state = 1;
        return; /* the stripe reads take a step */
    }
    if (n->stripe_busy[s])
        return;
    for (int i = 0; i < S.c.ndata; i++) {
        all &= !S.failed[ddev(s, i)];
        d[i] = S.disk[ddev(s, i)][s];
    }
    all &= !S.failed[pdev(s)] && (S.c.level == 5 || !S.failed[qdev(s)]);
    if (all && (S.disk[pdev(s)][s] != pof(d) || (S.c.level == 6 && S.disk[qdev(s)][s] != qof(d))))
        violation("CHECK: node %d's check of stripe %d (zone %d, mode %d) finds parity that does not match "
                  "its data",
                  n->slot, s, z, n->z[z].mode);
    zone_done(n, z, CLR_ZONE_OP_CHECK);
    S.checks++;
    o->type = OP_NONE;
}

/* replay one entry of a dead slot's log */
static void replay_entry(const struct entry *e)
{
    int s = e->stripe;
    unsigned changed = 0, missing = 0;
    bool p_ok, q_ok;

    if (s < 0 || s >= S.c.stripes)
        return;
    p_ok = !S.failed[pdev(s)];
    q_ok = S.c.level == 6 && !S.failed[qdev(s)];
    for (int i = 0; i < S.c.ndata; i++) {
        if (!(e->mask >> i & 1))
            continue;
        changed++;
        if (S.failed[ddev(s, i)])
            missing++;
    }
    S.entries_replayed++;
    for (int i = 0; i < S.c.nodes; i++)
        if (S.n[i].up && S.n[i].z[zone_of(s)].inflight)
            violation("FREEZE: a replay of stripe %d while node %d has operations in its zone", s, i);
    for (int i = 0; i < MAXIO; i++)
        if (S.io[i].used && S.io[i].kind == IO_CHUNK && zone_of(S.io[i].stripe) == zone_of(s))
            violation("FREEZE: a replay of stripe %d while node %d writes its zone", s, S.io[i].node);
    switch (clr_zone_replay_plan(S.c.level, changed, missing, p_ok, q_ok)) {
    case CLR_ZONE_REPLAY_PARITY: {
        val_t p = e->pp, q = e->pq;

        for (int i = 0; i < S.c.ndata; i++)
            if (e->mask >> i & 1) {
                p ^= S.disk[ddev(s, i)][s];
                q ^= gscale((unsigned)i, S.disk[ddev(s, i)][s]);
            }
        if (p_ok)
            S.disk[pdev(s)][s] = p;
        if (q_ok && clr_zone_replay_q(S.c.level))
            S.disk[qdev(s)][s] = q;
        break;
    }
    case CLR_ZONE_REPLAY_REBUILD:
    case CLR_ZONE_REPLAY_REBUILD_LOST: {
        val_t d[MAXM], pp = e->pp;
        unsigned cm = 0, um = 0;

        for (int i = 0; i < S.c.ndata; i++) {
            bool gone = S.failed[ddev(s, i)];

            d[i] = gone ? 0 : S.disk[ddev(s, i)][s];
            if (gone && (e->mask >> i & 1))
                cm |= 1u << i;
            else if (gone)
                um |= 1u << i;
            else if (!(e->mask >> i & 1))
                pp ^= d[i];
        }
        /* an unchanged chunk that is gone: the partial parity has it */
        if (um) {
            if (__builtin_popcount(um) != 1) {
                violation("replay of stripe %d: %d unchanged chunks gone", s, __builtin_popcount(um));
                return;
            }
            d[__builtin_ctz(um)] = pp;
        }
        if (!solve(s, d, cm, p_ok, q_ok)) {
            violation("replay of stripe %d: changed chunks %#x gone, cannot solve", s, cm);
            return;
        }
        if (p_ok)
            S.disk[pdev(s)][s] = pof(d);
        if (q_ok)
            S.disk[qdev(s)][s] = qof(d);
        if (clr_zone_replay_plan(S.c.level, changed, missing, p_ok, q_ok) == CLR_ZONE_REPLAY_REBUILD_LOST) {
            /* more faults at once than the entry covers: the changed
             * chunks that are gone may read as neither value; counted,
             * and the oracle takes what they read as now */
            S.lost++;
            for (int i = 0; i < S.c.ndata; i++)
                if (cm >> i & 1) {
                    S.or [s][i].acked = d[i];
                    S.or [s][i].nmaybe = 0;
                }
        }
        break;
    }
    case CLR_ZONE_REPLAY_NONE:
        break;
    }
}

static void op_recover(struct node *n, int opi)
{
    struct op *o = &n->ops[opi];

    switch (o->state) {
    case 0: { /* the slot's recovery lock: one recoverer at a time */
        char name[64];

        snprintf(name, sizeof(name), CLR_ZONE_REC_NAME_FMT, o->slot);
        o->state = 10;
        clr_lt_request(S.lt, n->inc, REC_LKID + (uint64_t)o->slot, name, strlen(name), CLR_ZONE_EX, 0,
                       lt_emit, NULL);
        return;
    }
    case 10: /* granted? still to do? */
        if (!o->granted)
            return;
        if (!clr_zone_recover_needed(n->unrecovered, o->slot)) {
            clr_lt_unlock(S.lt, n->inc, REC_LKID + (uint64_t)o->slot, 0, NULL, lt_emit, NULL);
            o->type = OP_NONE;
            return;
        }
        o->state = 11;
        /* fallthrough */
    case 11: { /* read the slot's log */
        const struct loghdr *h = durable_log(o->slot);

        o->hdr.n = 0;
        if (h)
            o->hdr = *h;
        o->next = 0;
        o->state = 1;
        trace("node %d recovers slot %d: %d entries", n->slot, o->slot, o->hdr.n);
        return;
    }
    case 1: /* apply, one entry a step */
        if (o->next < o->hdr.n) {
            replay_entry(&o->hdr.e[o->next++]);
            return;
        }
        o->state = 2;
        return;
    case 2: { /* retire: an empty header, newer than any copy */
        uint64_t gen[NCOPIES], top = 0;
        bool valid[NCOPIES];

        for (int c = 0; c < NCOPIES; c++) {
            gen[c] = S.log[o->slot][c].gen;
            valid[c] = S.log[o->slot][c].valid;
            if (gen[c] > top)
                top = gen[c];
        }
        struct io *io = io_new(n, IO_CHUNK, opi);

        if (!io)
            return;
        /* modelled as a log write landing when due: dev -1 */
        io->kind = IO_LOG;
        io->node = o->slot;
        io->op = -1;
        io->copy = (int)clr_zone_log_next_copy(gen, valid, NCOPIES);
        io->hdr.gen = top + 1;
        io->hdr.valid = true;
        io->hdr.n = 0;
        o->need_gen = top + 1;
        o->state = 3;
        return;
    }
    case 3: { /* durable? */
        const struct loghdr *h = durable_log(o->slot);

        if (!h || h->gen < o->need_gen || h->n)
            return;
        o->state = 4;
        return;
    }
    case 4: { /* announce */
        struct event ev = { .type = EV_RECOVERED, .slot = o->slot };

        for (int i = 0; i < S.c.nodes; i++)
            if (S.n[i].up)
                push_ev(&S.n[i], &ev);
        S.unrec_global &= ~(1ull << o->slot);
        S.replays++;
        trace("node %d: slot %d replayed", n->slot, o->slot);
        clr_lt_unlock(S.lt, n->inc, REC_LKID + (uint64_t)o->slot, 0, NULL, lt_emit, NULL);
        o->type = OP_NONE;
        return;
    }
    }
}

static void handle_event(struct node *n, const struct event *e)
{
    switch (e->type) {
    case EV_FAILED:
        n->unrecovered |= 1ull << e->slot;
        return;
    case EV_RECOVERED:
        n->unrecovered &= ~(1ull << e->slot);
        if (e->slot == n->slot && n->log_dirty)
            log_issue(n);
        return;
    case EV_LT:
        break;
    }
    const struct clr_lt_effect *l = &e->lt;
    int z = (int)l->lkid - 1;
    struct clr_zone_cache *c;

    if (l->lkid >= REC_LKID) {
        struct op *o = &n->ops[MAXOPS];

        if (l->type == CLR_LT_GRANTED && o->type == OP_RECOVER && o->slot == (int)(l->lkid - REC_LKID))
            o->granted = true;
        return;
    }
    if (z < 0 || z >= nzones())
        return;
    c = &n->z[z];
    switch (l->type) {
    case CLR_LT_GRANTED: {
        struct clr_zone_lvb lvb;
        struct clr_zone_ctx x = ctx_of(n);
        enum clr_zone_lvb_state st =
            clr_zone_lvb_decode(l->lvb, (l->sb_flags & CLR_LOCK_SB_VALNOTVALID) != 0, &lvb);

        clr_zone_granted(c, &x, l->mode, st);
        n->seq[z] = lvb.seq;
        trace("node %d granted %s on zone %d%s", n->slot, l->mode == CLR_ZONE_EX ? "EX" : "PR", z,
              st == CLR_ZONE_LVB_SUSPECT ? " (suspect)" : "");
        return;
    }
    case CLR_LT_BAST:
        if (c->mode != CLR_ZONE_IV) {
            c->blocked = true;
            S.bast++;
        }
        return;
    case CLR_LT_FAILED:
    case CLR_LT_CANCELED:
        c->requesting = false;
        return;
    case CLR_LT_UNLOCKED:
        return;
    }
}

/* give zones up that someone asked for */
static void zone_releases(struct node *n)
{
    struct clr_zone_ctx x = ctx_of(n);

    for (int z = 0; z < nzones(); z++) {
        struct clr_zone_cache *c = &n->z[z];

        switch (clr_zone_release_step(c, &x)) {
        case CLR_ZONE_KEEP:
        case CLR_ZONE_DRAIN:
            break;
        case CLR_ZONE_RETIRE:
            if (!c->releasing) {
                c->releasing = true;
                S.retires++;
                if (log_trim(n, z))
                    log_issue(n);
            }
            break;
        case CLR_ZONE_UNLOCK: {
            uint8_t buf[32];
            unsigned fl = 0;

            if (clr_zone_unlock_writes_lvb(c)) {
                struct clr_zone_lvb l = { .seq = n->seq[z] + 1, .writer = n->slot };

                clr_zone_lvb_encode(&l, buf);
                fl = CLR_LOCK_F_VALBLK;
            }
            if (c->mode == CLR_ZONE_EX) {
                /* LOG: nothing of the zone may stay in the durable log */
                if (log_names_zone(durable_log(n->slot), z))
                    violation("LOG: node %d gives up EX on zone %d with it in its durable log", n->slot, z);
            }
            trace("node %d releases zone %d", n->slot, z);
            clr_lt_unlock(S.lt, n->inc, (uint64_t)z + 1, fl, fl ? buf : NULL, lt_emit, NULL);
            c->mode = CLR_ZONE_IV;
            c->releasing = false;
            c->blocked = false;
            c->suspect = false;
            break;
        }
        }
    }
}

static void node_step(struct node *n)
{
    /* events, in order; lock effects on different locks may swap */
    int k = 0;

    if (n->nev > 1 && n->ev[0].type == EV_LT && n->ev[1].type == EV_LT &&
        n->ev[0].lt.lkid != n->ev[1].lt.lkid && chance(20))
        k = 1;
    for (int t = 0; t < 2 && n->nev > 0; t++) {
        struct event e = n->ev[k];

        memmove(&n->ev[k], &n->ev[k + 1], sizeof(struct event) * (size_t)(n->nev - k - 1));
        n->nev--;
        handle_event(n, &e);
        k = 0;
        if (!n->up)
            return;
    }
    /* recovery of dead slots this node is the one to replay */
    if (n->ops[MAXOPS].type == OP_NONE) {
        for (int q = 0; q < MAXN; q++) {
            if (!(n->unrecovered >> q & 1))
                continue;
            memset(&n->ops[MAXOPS], 0, sizeof(struct op));
            n->ops[MAXOPS].type = OP_RECOVER;
            n->ops[MAXOPS].slot = q;
            break;
        }
    }
    for (int i = 0; i <= MAXOPS && n->up; i++) {
        switch (n->ops[i].type) {
        case OP_WRITE:
            op_write(n, i);
            break;
        case OP_READ:
            op_read(n, i);
            break;
        case OP_CHECK:
            op_check(n, i);
            break;
        case OP_RECOVER:
            op_recover(n, i);
            break;
        case OP_NONE:
            break;
        }
    }
    /* now and then, the log drops entries of finished writes */
    if (chance(10) && log_trim(n, -1))
        log_issue(n);
    zone_releases(n);
}

static void start_op(struct node *n, bool quiet)
{
    if (quiet)
        return;
    for (int i = 0; i < MAXOPS; i++) {
        struct op *o = &n->ops[i];

        if (o->type != OP_NONE)
            continue;
        memset(o, 0, sizeof(*o));
        /* a small hot set makes nodes meet in zones */
        o->stripe = chance(50) ? (int)below(2) : (int)below((unsigned)S.c.stripes);
        if (S.c.disjoint) {
            /* each node in its own zones: zone % nodes == slot */
            int mine[MAXS], k = 0;

            for (int st = 0; st < S.c.stripes; st++)
                if (zone_of(st) % S.c.nodes == n->slot)
                    mine[k++] = st;
            if (!k)
                return;
            o->stripe = mine[below((unsigned)k)];
        }
        if (chance(60)) {
            o->type = OP_WRITE;
            o->mask = 1u + below((1u << S.c.ndata) - 1);
        } else if (chance(15)) {
            o->type = OP_CHECK;
        } else {
            o->type = OP_READ;
            o->chunk = (int)below((unsigned)S.c.ndata);
        }
        return;
    }
}

/* ---------------------------------------------------------------- faults */

static void crash(struct node *n)
{
    trace("node %d crashes", n->slot);
    S.crashes++;
    /* its I/O in flight lands, lands torn (a header), or not */
    for (int i = 0; i < MAXIO; i++) {
        struct io *io = &S.io[i];

        if (!io->used || io->inc != n->inc)
            continue;
        if (chance(50))
            io_land(io, io->kind == IO_LOG && chance(40));
        io->used = false;
    }
    /* its writes past the log step may or may not be there */
    for (int i = 0; i < MAXOPS; i++) {
        struct op *o = &n->ops[i];

        if (o->type == OP_WRITE && o->state >= 2)
            for (int c = 0; c < S.c.ndata; c++)
                if (o->mask >> c & 1)
                    or_crash(o->stripe, c, o->newv[c]);
    }
    n->up = false;
    S.fence_at[n->slot] = S.step + 3 + (int)below(20);
}

static void fence(int slot)
{
    struct node *n = &S.n[slot];
    struct event ev = { .type = EV_FAILED, .slot = slot };

    S.fence_at[slot] = 0;
    S.fences++;
    trace("slot %d fenced", slot);
    S.unrec_global |= 1ull << slot;
    /* membership first, then the grants the death allows */
    for (int i = 0; i < S.c.nodes; i++)
        if (S.n[i].up)
            push_ev(&S.n[i], &ev);
    clr_lt_remove_owner(S.lt, n->inc, true, lt_emit, NULL);
}

static void restart(struct node *n)
{
    uint64_t unrec = S.unrec_global;

    memset(n, 0, sizeof(*n));
    n->slot = (int)(n - S.n);
    n->up = true;
    n->inc = ++S.next_inc;
    n->unrecovered = unrec;
    for (int c = 0; c < NCOPIES; c++)
        if (S.log[n->slot][c].gen > n->gen)
            n->gen = S.log[n->slot][c].gen;
    for (int z = 0; z < MAXZ; z++)
        n->z[z].mode = n->z[z].want = CLR_ZONE_IV;
    S.restarts++;
    trace("node %d restarts", n->slot);
}

/* ---------------------------------------------------------------- run */

static bool busy(void)
{
    for (int i = 0; i < S.c.nodes; i++) {
        if (!S.n[i].up)
            continue;
        if (S.n[i].nev || S.n[i].log_io || S.n[i].log_dirty)
            return true;
        for (int k = 0; k <= MAXOPS; k++)
            if (S.n[i].ops[k].type != OP_NONE)
                return true;
    }
    for (int i = 0; i < MAXIO; i++)
        if (S.io[i].used)
            return true;
    for (int i = 0; i < MAXN; i++)
        if (S.fence_at[i])
            return true;
    return S.unrec_global != 0;
}

static void final_checks(void)
{
    unsigned gone = gone_mask();

    for (int s = 0; s < S.c.stripes && !S.fail; s++) {
        val_t d[MAXM];

        if (!stripe_data(s, gone, d)) {
            violation("RECON: stripe %d cannot be read", s);
            return;
        }
        bool all_data = true;

        for (int i = 0; i < S.c.ndata; i++)
            all_data &= !S.failed[ddev(s, i)];
        if (all_data && !S.failed[pdev(s)] && S.disk[pdev(s)][s] != pof(d))
            violation("PARITY: stripe %d P %08x, data gives %08x", s, S.disk[pdev(s)][s], pof(d));
        if (all_data && S.c.level == 6 && !S.failed[qdev(s)] && S.disk[qdev(s)][s] != qof(d))
            violation("PARITY: stripe %d Q %08x, data gives %08x", s, S.disk[qdev(s)][s], qof(d));
        for (int i = 0; i < S.c.ndata; i++)
            or_read(s, i, d[i], "at the end reads", -1);
        /* any further member (two for RAID6, less what already failed) */
        int left = (S.c.level == 6 ? 2 : 1) - S.nfailed;

        for (int a = 0; a < S.c.nmem && left >= 1; a++) {
            for (int b = a; b < S.c.nmem; b++) {
                unsigned g = gone | 1u << a | 1u << b;
                val_t r[MAXM];

                if (b != a && left < 2)
                    continue;
                if (g == gone)
                    continue;
                if (!stripe_data(s, g, r)) {
                    violation("RECON: stripe %d not reconstructible without members %d,%d", s, a, b);
                    return;
                }
                for (int i = 0; i < S.c.ndata; i++)
                    if (r[i] != d[i])
                        violation("RECON: stripe %d chunk %d without members %d,%d = %08x, not %08x", s, i, a,
                                  b, r[i], d[i]);
            }
        }
    }
}

static int run_seed(uint64_t seed)
{
    int crash_at[2] = { -1, -1 }, fail_at[2] = { -1, -1 }, ncrash, nfail;

    memset(&S.n, 0, sizeof(S.n));
    memset(S.failed, 0, sizeof(S.failed));
    memset(S.disk, 0, sizeof(S.disk));
    memset(S.log, 0, sizeof(S.log));
    memset(S.io, 0, sizeof(S.io));
    memset(S.or, 0, sizeof(S.or));
    memset(S.fence_at, 0, sizeof(S.fence_at));
    S.unrec_global = 0;
    S.nfailed = 0;
    S.fail = NULL;
    S.seed = seed;
    rng_state = seed * 0x2545f4914f6cdd1dull + 1;
    if (S.lt)
        clr_lt_free(S.lt);
    S.lt = clr_lt_new();
    for (int i = 0; i < S.c.nodes; i++) {
        S.n[i].slot = i;
        S.n[i].up = true;
        S.n[i].inc = ++S.next_inc;
        for (int z = 0; z < MAXZ; z++)
            S.n[i].z[z].mode = S.n[i].z[z].want = CLR_ZONE_IV;
    }
    ncrash = S.c.no_crash ? 0 : (int)below(3);
    nfail = S.c.no_fail ? 0 : (int)below((unsigned)S.c.maxfail + 1);
    for (int i = 0; i < ncrash; i++)
        crash_at[i] = 5 + (int)below((unsigned)S.c.steps);
    for (int i = 0; i < nfail; i++)
        fail_at[i] = 5 + (int)below((unsigned)S.c.steps);

    int end = S.c.steps + 20 * S.c.steps + 20000;

    for (S.step = 1; S.step < end && !S.fail; S.step++) {
        bool quiet = S.step > S.c.steps;

        land_due();
        for (int i = 0; i < MAXN; i++)
            if (S.fence_at[i] && S.fence_at[i] <= S.step)
                fence(i);
        for (int k = 0; k < 2; k++) {
            if (crash_at[k] != S.step)
                continue;
            int up = 0, v;

            for (int i = 0; i < S.c.nodes; i++)
                up += S.n[i].up;
            if (up < 2)
                continue;
            do
                v = (int)below((unsigned)S.c.nodes);
            while (!S.n[v].up);
            crash(&S.n[v]);
        }
        for (int k = 0; k < 2; k++) {
            if (fail_at[k] != S.step)
                continue;
            int m = (int)below((unsigned)S.c.nmem);

            if (!S.failed[m]) {
                S.failed[m] = true;
                S.nfailed++;
                S.failures++;
                trace("member %d fails", m);
            }
        }
        /* a dead node comes back once its fence fired, sometimes */
        for (int i = 0; i < S.c.nodes; i++)
            if (!S.n[i].up && !S.fence_at[i] && chance(3))
                restart(&S.n[i]);
        int order[MAXN];

        for (int i = 0; i < S.c.nodes; i++)
            order[i] = i;
        for (int i = S.c.nodes - 1; i > 0; i--) {
            int j = (int)below((unsigned)i + 1), t = order[i];

            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < S.c.nodes && !S.fail; i++) {
            struct node *n = &S.n[order[i]];

            if (!n->up)
                continue;
            if (chance(40))
                start_op(n, quiet);
            node_step(n);
        }
        if (quiet && !busy()) {
            bool down = false;

            for (int i = 0; i < S.c.nodes; i++)
                down |= !S.n[i].up;
            if (!down)
                break;
            /* bring the dead back so that every log is replayed */
            for (int i = 0; i < S.c.nodes; i++)
                if (!S.n[i].up && !S.fence_at[i])
                    restart(&S.n[i]);
        }
    }
    if (!S.fail && S.step >= end) {
        violation("LIVE: not quiescent after %d steps", end);
        for (int i = 0; i < S.c.nodes; i++) {
            struct node *n = &S.n[i];

            printf("  node %d up %d unrecovered %#" PRIx64 " events %d log_io %d dirty %d\n", i, n->up,
                   n->unrecovered, n->nev, n->log_io, n->log_dirty);
            for (int k = 0; k <= MAXOPS; k++)
                if (n->ops[k].type != OP_NONE)
                    printf("    op %d type %d state %d stripe %d ios %d\n", k, n->ops[k].type,
                           n->ops[k].state, n->ops[k].stripe, n->ops[k].ios);
            for (int z = 0; z < nzones(); z++)
                printf("    zone %d mode %d req %d rel %d sus %d blk %d infl %u logged %u\n", z, n->z[z].mode,
                       n->z[z].requesting, n->z[z].releasing, n->z[z].suspect, n->z[z].blocked,
                       n->z[z].inflight, n->z[z].logged);
        }
    }
    if (!S.fail)
        final_checks();
    if (S.fail) {
        printf("seed %" PRIu64 ": %s\n", seed, S.fail);
        return 1;
    }
    return 0;
}

static const struct {
    const char *name;
    enum clr_zone_fault f;
} bugs[] = {
    { "no-retire", CLR_ZONE_FAULT_NO_RETIRE },
    { "suspect-ok", CLR_ZONE_FAULT_SUSPECT_OK },
    { "degraded-no-lock", CLR_ZONE_FAULT_DEGRADED_NO_LOCK },
    { "undrained", CLR_ZONE_FAULT_UNDRAINED },
    { "torn-pick", CLR_ZONE_FAULT_TORN_PICK },
    { "retire-early", CLR_ZONE_FAULT_RETIRE_EARLY },
    { "replay-raid6-p", CLR_ZONE_FAULT_REPLAY_RAID6_P },
    { "early-join", CLR_ZONE_FAULT_EARLY_JOIN },
    { "no-ex-write", CLR_ZONE_FAULT_NO_EX_WRITE },
    { "data-before-log", CLR_ZONE_FAULT_DATA_BEFORE_LOG },
    { "recover-twice", CLR_ZONE_FAULT_RECOVER_TWICE },
    { "check-no-lock", CLR_ZONE_FAULT_CHECK_NO_LOCK },
};

static void usage(void)
{
    fprintf(stderr, "usage: sim56 --seeds A-B | --seed S [--level 5|6] [--nodes N] [--data D] [--stripes K]\n"
                    "             [--zone-stripes Z] [--steps T] [--no-crash] [--no-fail] [--disjoint] [-v]\n"
                    "             [--inject-bug NAME [--expect-fail]]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    uint64_t a = 1, b = 100;
    bool expect_fail = false;
    const char *bug = NULL;

    S.c = (struct cfg){ .level = 5, .nodes = 3, .ndata = 3, .stripes = 8, .spz = 2, .steps = 400 };
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(o, "-v")) {
            S.c.verbose = true;
        } else if (!strcmp(o, "--no-crash")) {
            S.c.no_crash = true;
        } else if (!strcmp(o, "--no-fail")) {
            S.c.no_fail = true;
        } else if (!strcmp(o, "--disjoint")) {
            S.c.disjoint = S.c.no_crash = S.c.no_fail = true;
        } else if (!strcmp(o, "--expect-fail")) {
            expect_fail = true;
        } else if (!v) {
            usage();
        } else if (!strcmp(o, "--seeds")) {
            if (sscanf(v, "%" SCNu64 "-%" SCNu64, &a, &b) != 2 || a > b)
                usage();
            i++;
        } else if (!strcmp(o, "--seed")) {
            a = b = strtoull(v, NULL, 10);
            i++;
        } else if (!strcmp(o, "--level")) {
            S.c.level = atoi(v), i++;
        } else if (!strcmp(o, "--nodes")) {
            S.c.nodes = atoi(v), i++;
        } else if (!strcmp(o, "--data")) {
            S.c.ndata = atoi(v), i++;
        } else if (!strcmp(o, "--stripes")) {
            S.c.stripes = atoi(v), i++;
        } else if (!strcmp(o, "--zone-stripes")) {
            S.c.spz = atoi(v), i++;
        } else if (!strcmp(o, "--steps")) {
            S.c.steps = atoi(v), i++;
        } else if (!strcmp(o, "--inject-bug")) {
            bug = v, i++;
        } else {
            usage();
        }
    }
    if ((S.c.level != 5 && S.c.level != 6) || S.c.nodes < 2 || S.c.nodes > MAXN || S.c.ndata < 2 ||
        S.c.stripes < 1 || S.c.stripes > MAXS || S.c.spz < 1 || S.c.steps < 10) {
        fprintf(stderr, "sim56: bad configuration (levels 5, 6; 2-%d nodes; 2+ data chunks; 1-%d stripes)\n",
                MAXN, MAXS);
        return 2;
    }
    S.c.nmem = S.c.ndata + (S.c.level == 6 ? 2 : 1);
    S.c.maxfail = S.c.level == 6 ? 2 : 1;
    if (S.c.nmem > MAXM) {
        fprintf(stderr, "sim56: at most %d members\n", MAXM);
        return 2;
    }
    if (bug) {
        bool found = false;

        for (size_t i = 0; i < sizeof(bugs) / sizeof(bugs[0]); i++)
            if (!strcmp(bug, bugs[i].name)) {
                clr_zone_fault = bugs[i].f;
                found = true;
            }
        if (!found) {
            fprintf(stderr, "sim56: unknown bug %s\n", bug);
            return 2;
        }
    }
    gf_init();
    unsigned failures = 0;

    for (uint64_t s = a; s <= b; s++) {
        failures += (unsigned)run_seed(s);
        if (failures && (expect_fail || a == b))
            break;
    }
    if (S.lt)
        clr_lt_free(S.lt);
    if (expect_fail) {
        if (failures) {
            printf("caught %s\n", bug ? bug : "(no bug)");
            return 0;
        }
        printf("NOT caught: %s over seeds %" PRIu64 "-%" PRIu64 "\n", bug ? bug : "(no bug)", a, b);
        return 1;
    }
    printf(
        "seeds %" PRIu64 "-%" PRIu64 ": %u failed; writes %u reads %u degraded %u checks %u, crashes %u "
        "fences %u replays %u (entries %u, lost %u), torn headers %u, member failures %u, lock requests %u, "
        "blocking callbacks %u, retires %u, restarts %u\n",
        a, b, failures, S.writes, S.reads, S.dreads, S.checks, S.crashes, S.fences, S.replays,
        S.entries_replayed, S.lost, S.torn, S.failures, S.lock_req, S.bast, S.retires, S.restarts);
    if (S.c.disjoint)
        printf("steady state (after the first tenth of the steps): %u lock requests for %u writes\n",
               S.late_lock_req, S.late_writes);
    return failures ? 1 : 0;
}
