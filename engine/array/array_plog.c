/* clraid array core: the partial-parity log of a clustered RAID5/6 (part
 * of the cluster host, with array_zone.c; doc/cluster.md, "Clustered
 * RAID5/6").
 *
 * Before a node writes the data and parity of a partial stripe it makes
 * an entry durable in its own log area (format/plog.h) on the members
 * that hold the stripe's parity: the stripe, the data chunks it changes,
 * the rows, and the partial parity of the chunks it leaves alone (P, and
 * Q for RAID6).  After a crash, parity := partial parity + the changed
 * chunks as they are on disk, whichever of old or new each holds: parity
 * is right again without reading the unchanged chunks, so a member lost
 * at the same time as the node does not take them along (the write hole).
 * A full-stripe write logs an entry with no partial parity (all zero).
 *
 * Per member role: up to CLR_PLOG_MAX_ENTRIES entries and the partial
 * parity area in 4 KiB units.  An entry goes FILL (units allocated, its
 * partial parity being written FUA) -> READY -> NAMED (a header naming it
 * is durable: the write may be issued) -> DONE (data and parity written)
 * -> FREE (a later header without it is durable: its units may be reused,
 * never earlier, or a crash would replay a name over reused units).
 * Headers are written group-commit: one writer per role at a time takes
 * every READY and NAMED entry, in the order they were logged (a replay
 * applies them in that order: the later entry of a stripe wins).
 *
 * Retirement: before a zone lock leaves the node, no durable header may
 * name a stripe of the zone (engine/cluster/zone.c, CLR_ZONE_RETIRE): the
 * release thread counts the named entries (clr_arr_plog_named) and has
 * fresh headers written without the DONE ones (clr_arr_plog_retire).  A
 * clean stop empties the log the same way.
 *
 * Replay (clr_arr_plog_replay) of a dead slot runs under that slot's
 * bitmap lock (the recovery lock, one recoverer at a time), before the
 * slot counts as recovered (zones the dead node held are granted suspect
 * and wait until then); at join a node replays its own slot under its own
 * bitmap lock before any I/O.  Every step is idempotent: parity is a
 * function of the log and of data the replay does not change; the log is
 * emptied last (a header with a higher generation and no entries).
 *
 * pl->mu (rank CLR_RANK_PLOG) guards every field; no I/O under it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "array/array_internal.h"
#include "cluster/zone.h"
#include "format/plog.h"
#include "raid/parity.h"

#define PL_UNIT      4096u
#define PL_AREA_OFF  ((uint64_t)CLR_PLOG_COPIES * CLR_PLOG_HDR_BYTES)
#define PL_UNITS     ((CLR_PLOG_SLOT_BYTES - (unsigned)PL_AREA_OFF) / PL_UNIT)
#define PL_ZERO      1u /* entry flag: no partial parity stored (all zero) */
#define PL_MAX_ROLES CLR_RAID_MAX_DISKS

enum pl_state {
    PL_FREE,
    PL_FILL,
    PL_READY,
    PL_NAMED,
    PL_DONE
};

struct pl_ent {
    uint8_t state;
    uint64_t seq;  /* logging order */
    uint64_t incl; /* header generation that names it (0: none yet) */
    uint64_t excl; /* header generation written without it, once DONE */
    uint64_t stripe, changed;
    uint32_t first, sectors; /* rows */
    uint32_t unit0, units;   /* partial parity area */
    uint32_t flags;
};

struct pl_role {
    struct pl_ent ent[CLR_PLOG_MAX_ENTRIES];
    uint8_t used[PL_UNITS];
    uint64_t gens[CLR_PLOG_COPIES]; /* generation in each copy (0: none) */
    bool valid[CLR_PLOG_COPIES];
    bool writing;
    unsigned live; /* entries not FREE */
    /* the one header writer's scratch (writing) */
    struct clr_plog_hdr hdr;
    uint8_t *hbuf; /* CLR_PLOG_HDR_BYTES, aligned */
};

struct arr_plog {
    struct clr_array *a;
    struct clr_plog_layout lay;
    uint64_t slot_off; /* our slot's area on every member */
    unsigned nroles;
    struct clr_mutex mu;
    pthread_cond_t cv;
    uint64_t gen, seq;
    struct pl_role role[PL_MAX_ROLES];
    /* counters (mu) */
    uint64_t entries, headers, waits, retires, replayed, replay_left, replays;
};

/* ---- small helpers ---- */

static void xor_into(uint8_t *dst, const uint8_t *src, size_t len)
{
    uint64_t *d = (uint64_t *)(void *)dst;
    const uint64_t *s = (const uint64_t *)(const void *)src;

    for (size_t i = 0; i < len / 8; i++)
        d[i] ^= s[i];
}

static uint64_t area_of(const struct arr_plog *pl, unsigned slot)
{
    return pl->lay.start + (uint64_t)slot * pl->lay.slot_bytes;
}

/* Units for @ent (FREE or not yet placed): first fit.  mu held. */
static bool units_alloc(struct pl_role *r, uint32_t n, uint32_t *at)
{
    uint32_t run = 0;

    if (n == 0) {
        *at = 0;
        return true;
    }
    for (uint32_t u = 0; u < PL_UNITS; u++) {
        run = r->used[u] ? 0 : run + 1;
        if (run == n) {
            *at = u + 1 - n;
            memset(r->used + *at, 1, n);
            return true;
        }
    }
    return false;
}

static int ent_alloc(struct pl_role *r)
{
    for (int i = 0; i < (int)CLR_PLOG_MAX_ENTRIES; i++)
        if (r->ent[i].state == PL_FREE)
            return i;
    return -1;
}

static bool role_has_done(const struct pl_role *r)
{
    for (unsigned i = 0; i < CLR_PLOG_MAX_ENTRIES; i++)
        if (r->ent[i].state == PL_DONE && !r->ent[i].excl)
            return true;
    return false;
}

static struct arr_member *role_member(struct clr_array *a, unsigned role)
{
    struct arr_view v;

    clr_arr_view(a, &v);
    return v.m[role] && arr_writable(v.st[role]) ? v.m[role] : NULL;
}

/* ---- headers ---- */

static int cmp_seq(const void *x, const void *y)
{
    const struct pl_ent *const *a = x, *const *b = y;

    return (*a)->seq < (*b)->seq ? -1 : (*a)->seq > (*b)->seq;
}

/* Writes one header on @role naming every READY and NAMED entry; the DONE
 * ones go.  Called with mu held and r->writing taken by the caller; drops
 * mu for the I/O. */
static void write_header_locked(struct arr_plog *pl, unsigned role)
{
    struct clr_array *a = pl->a;
    struct pl_role *r = &pl->role[role];
    struct pl_ent *list[CLR_PLOG_MAX_ENTRIES];
    struct clr_plog_hdr *h = &r->hdr;
    unsigned n = 0, copy;
    uint64_t gen = ++pl->gen;
    struct arr_member *m;
    int rc = 0;

    for (unsigned i = 0; i < CLR_PLOG_MAX_ENTRIES; i++) {
        struct pl_ent *e = &r->ent[i];

        if (e->state == PL_READY || e->state == PL_NAMED)
            list[n++] = e;
        else if (e->state == PL_DONE && !e->excl)
            e->excl = gen;
    }
    qsort(list, n, sizeof list[0], cmp_seq);
    copy = clr_zone_log_next_copy(r->gens, r->valid, CLR_PLOG_COPIES);
    memset(h, 0, sizeof *h);
    memcpy(h->set_uuid, a->sb.set_uuid, 16);
    h->slot = a->slot;
    h->gen = gen;
    h->nentries = n;
    for (unsigned i = 0; i < n; i++) {
        h->e[i].stripe = list[i]->stripe;
        h->e[i].changed = list[i]->changed;
        h->e[i].pp_offset = list[i]->unit0 * (PL_UNIT / ARR_SECTOR);
        h->e[i].pp_sectors = list[i]->sectors;
        h->e[i].first = list[i]->first;
        h->e[i].flags = list[i]->flags;
        list[i]->incl = gen;
    }
    clr_plog_hdr_encode(h, r->hbuf); /* n <= CLR_PLOG_MAX_ENTRIES: cannot fail */
    clr_mutex_unlock(&pl->mu);
    /* a parity member that is gone or fails here takes the log with it:
     * with no parity left there is nothing to replay (as if written) */
    m = role_member(a, role);
    if (m) {
        rc = clr_io_pwrite(m->io, r->hbuf, CLR_PLOG_HDR_BYTES,
                           pl->slot_off + (uint64_t)copy * CLR_PLOG_HDR_BYTES, CLR_IO_FUA);
        if (rc)
            clr_arr_member_failed(a, NULL, m, rc);
    }
    clr_mutex_lock(&pl->mu);
    if (rc == 0 && m) {
        r->gens[copy] = gen;
        r->valid[copy] = true;
    }
    pl->headers++;
    for (unsigned i = 0; i < CLR_PLOG_MAX_ENTRIES; i++) {
        struct pl_ent *e = &r->ent[i];

        if (e->state == PL_READY && e->incl == gen)
            e->state = PL_NAMED;
        else if (e->state == PL_DONE && e->excl == gen) {
            memset(r->used + e->unit0, 0, e->units);
            e->state = PL_FREE;
            r->live--;
        }
    }
    r->writing = false;
    pthread_cond_broadcast(&pl->cv);
}

/* ---- the write path ---- */

int clr_arr_plog_log(struct arr_plog *pl, const struct clr_raid_stripe *st, uint64_t changed, uint32_t first,
                     uint32_t sectors, const uint8_t *ppp, const uint8_t *ppq, struct arr_plog_tok *tok)
{
    struct clr_array *a = pl->a;
    unsigned roles[2], nr = 0;
    size_t len = (size_t)sectors * ARR_SECTOR, npar = st->qd == CLR_RAID_NO_DISK ? 1 : 2;
    uint32_t units = ppp ? (uint32_t)((len * npar + PL_UNIT - 1) / PL_UNIT) : 0;
    uint8_t *stage = NULL;
    int rc = 0;

    memset(tok, 0, sizeof *tok);
    roles[nr++] = st->pd;
    if (st->qd != CLR_RAID_NO_DISK)
        roles[nr++] = st->qd;
    if (units > PL_UNITS)
        return -EINVAL; /* the caller splits rows (CLR_ARR_PLOG_MAX_ROWS) */
    if (units) {
        rc = clr_io_alloc((void **)&stage, (size_t)units * PL_UNIT);
        if (rc)
            return rc;
        memset(stage, 0, (size_t)units * PL_UNIT);
        memcpy(stage, ppp, len);
        if (npar == 2)
            memcpy(stage + len, ppq, len);
    }
    /* place the entry on every parity role at once (no hold and wait) */
    clr_mutex_lock(&pl->mu);
    for (;;) {
        int idx[2] = { -1, -1 };
        uint32_t at[2] = { 0, 0 };
        bool ok = true;

        for (unsigned k = 0; k < nr && ok; k++) {
            struct pl_role *r = &pl->role[roles[k]];

            idx[k] = ent_alloc(r);
            ok = idx[k] >= 0 && units_alloc(r, units, &at[k]);
            if (!ok && idx[k] >= 0)
                idx[k] = -1;
        }
        if (ok) {
            uint64_t seq = ++pl->seq;

            for (unsigned k = 0; k < nr; k++) {
                struct pl_role *r = &pl->role[roles[k]];
                struct pl_ent *e = &r->ent[idx[k]];

                *e = (struct pl_ent){ .state = PL_FILL,
                                      .seq = seq,
                                      .stripe = st->stripe,
                                      .changed = changed,
                                      .first = first,
                                      .sectors = sectors,
                                      .unit0 = at[k],
                                      .units = units,
                                      .flags = units ? 0 : PL_ZERO };
                r->live++;
                tok->role[k] = roles[k];
                tok->idx[k] = idx[k];
            }
            tok->n = nr;
            pl->entries++;
            break;
        }
        /* undo a partial placement, then make room: headers drop DONE
         * entries (their units free once durable), or wait for writes */
        for (unsigned k = 0; k < nr; k++) {
            struct pl_role *r = &pl->role[roles[k]];

            if (idx[k] >= 0 && at[k] + units <= PL_UNITS && units)
                memset(r->used + at[k], 0, units);
        }
        pl->waits++;
        {
            bool wrote = false;

            for (unsigned k = 0; k < nr && !wrote; k++) {
                struct pl_role *r = &pl->role[roles[k]];

                if (!r->writing && role_has_done(r)) {
                    r->writing = true;
                    write_header_locked(pl, roles[k]);
                    wrote = true;
                }
            }
            if (!wrote)
                clr_cond_wait(&pl->cv, &pl->mu);
        }
    }
    clr_mutex_unlock(&pl->mu);

    /* the partial parity, durable before any header names it */
    for (unsigned k = 0; k < tok->n && units; k++) {
        struct pl_ent *e = &pl->role[tok->role[k]].ent[tok->idx[k]];
        struct arr_member *m = role_member(a, tok->role[k]);

        if (!m)
            continue;
        rc = clr_io_pwrite(m->io, stage, (size_t)units * PL_UNIT,
                           pl->slot_off + PL_AREA_OFF + (uint64_t)e->unit0 * PL_UNIT, CLR_IO_FUA);
        if (rc) {
            clr_arr_member_failed(a, NULL, m, rc);
            rc = 0; /* the member is out: its log is moot */
        }
    }
    clr_io_free(stage);

    /* group commit: a header naming it, durable, on each parity role */
    clr_mutex_lock(&pl->mu);
    for (unsigned k = 0; k < tok->n; k++)
        pl->role[tok->role[k]].ent[tok->idx[k]].state = PL_READY;
    for (unsigned k = 0; k < tok->n; k++) {
        struct pl_role *r = &pl->role[tok->role[k]];
        struct pl_ent *e = &r->ent[tok->idx[k]];

        while (!clr_zone_may_issue(e->state == PL_NAMED)) {
            if (!r->writing) {
                r->writing = true;
                write_header_locked(pl, tok->role[k]);
            } else {
                clr_cond_wait(&pl->cv, &pl->mu);
            }
        }
    }
    clr_mutex_unlock(&pl->mu);
    return 0;
}

void clr_arr_plog_done(struct arr_plog *pl, struct arr_plog_tok *tok)
{
    if (!pl || !tok->n)
        return;
    clr_mutex_lock(&pl->mu);
    for (unsigned k = 0; k < tok->n; k++) {
        struct pl_ent *e = &pl->role[tok->role[k]].ent[tok->idx[k]];

        /* every leg has completed: a failed one failed its member (or
         * froze the array: the write is retried under a new entry, the
         * bitmap keeps the chunk), so the write is complete on every
         * member it still goes to */
        if (clr_zone_log_may_retire(true)) {
            e->state = PL_DONE;
            e->excl = 0;
        }
    }
    pthread_cond_broadcast(&pl->cv);
    clr_mutex_unlock(&pl->mu);
    tok->n = 0;
}

/* ---- retirement ---- */

unsigned clr_arr_plog_named(struct arr_plog *pl, uint64_t s0, uint64_t n)
{
    unsigned c = 0;

    if (!pl)
        return 0;
    clr_mutex_lock(&pl->mu);
    for (unsigned r = 0; r < pl->nroles; r++)
        for (unsigned i = 0; i < CLR_PLOG_MAX_ENTRIES; i++) {
            const struct pl_ent *e = &pl->role[r].ent[i];

            if (e->state != PL_FREE && e->stripe >= s0 && e->stripe < s0 + n)
                c++;
        }
    clr_mutex_unlock(&pl->mu);
    return c;
}

int clr_arr_plog_retire(struct arr_plog *pl)
{
    if (!pl)
        return 0;
    /* The caller's entries are all DONE already (its zone is drained, or
     * every write is): one header per role written from now on drops
     * them.  Entries that finish meanwhile are not waited for, so that
     * steady writes elsewhere cannot keep this loop going. */
    clr_mutex_lock(&pl->mu);
    for (unsigned r = 0; r < pl->nroles; r++) {
        struct pl_role *ro = &pl->role[r];
        bool any = false;

        while (ro->writing)
            clr_cond_wait(&pl->cv, &pl->mu);
        for (unsigned i = 0; i < CLR_PLOG_MAX_ENTRIES && !any; i++)
            any = ro->ent[i].state == PL_DONE;
        if (any) {
            ro->writing = true;
            write_header_locked(pl, r);
        }
    }
    pl->retires++;
    clr_mutex_unlock(&pl->mu);
    return 0;
}

/* ---- a member rebuilt ---- */

int clr_arr_plog_wipe(struct arr_plog *pl, struct arr_member *m)
{
    struct clr_array *a;
    uint8_t *zero = NULL;
    int rc;

    if (!pl)
        return 0;
    a = pl->a;
    /* Headers written before the member failed (ours or another node's)
     * would be taken as the newest once it is in sync again, until that
     * node next writes a header there.  Writes meanwhile are no loss:
     * while it rebuilds its logs are not read, and a header written over
     * a wiped copy is newer than anything the wipe removed. */
    rc = clr_io_alloc((void **)&zero, PL_AREA_OFF);
    if (rc)
        return rc;
    memset(zero, 0, PL_AREA_OFF);
    for (unsigned s = 0; s < pl->lay.slots && rc == 0; s++)
        rc = clr_io_pwrite(m->io, zero, PL_AREA_OFF, area_of(pl, s), s + 1 == pl->lay.slots ? CLR_IO_FUA : 0);
    clr_io_free(zero);
    if (rc)
        clr_arr_log(a, LOG_ERR, "%s: cannot clear its partial-parity logs before the rebuild: %s", m->path,
                    strerror(-rc));
    return rc;
}

/* ---- replay ---- */

struct rp_hdr {
    bool ok;
    struct clr_plog_hdr h;
    uint64_t gen[CLR_PLOG_COPIES];
    bool valid[CLR_PLOG_COPIES];
};

/* The newest valid header of @slot on @m; h.nentries 0 if none. */
static int read_hdr(struct arr_plog *pl, struct arr_member *m, unsigned slot, struct rp_hdr *out,
                    uint64_t *maxgen)
{
    struct clr_array *a = pl->a;
    uint8_t *buf = NULL;
    struct clr_plog_hdr *h = calloc(CLR_PLOG_COPIES, sizeof *h);
    uint64_t *gen = out->gen;
    bool *valid = out->valid;
    int rc, pick;

    out->ok = false;
    memset(out->gen, 0, sizeof out->gen);
    memset(out->valid, 0, sizeof out->valid);
    if (!h)
        return -ENOMEM;
    rc = clr_io_alloc((void **)&buf, PL_AREA_OFF);
    if (rc == 0)
        rc = clr_io_pread(m->io, buf, PL_AREA_OFF, area_of(pl, slot));
    if (rc == 0) {
        for (unsigned c = 0; c < CLR_PLOG_COPIES; c++) {
            struct clr_err e = { "" };

            valid[c] = clr_plog_hdr_decode(buf + (size_t)c * CLR_PLOG_HDR_BYTES, a->sb.set_uuid, slot, &h[c],
                                           &e) == 0;
            gen[c] = valid[c] ? h[c].gen : 0;
            if (valid[c] && gen[c] > *maxgen)
                *maxgen = gen[c];
        }
        pick = clr_zone_log_pick(gen, valid, CLR_PLOG_COPIES);
        if (pick >= 0) {
            out->h = h[pick];
            out->ok = true;
        }
    }
    clr_io_free(buf);
    free(h);
    return rc;
}

/* Applies one entry read from @src's log (CLR_ZONE_REPLAY_PARITY); the
 * other plans are left to the bitmap's resync.  1: applied, 0: left. */
static int replay_entry(struct arr_plog *pl, struct arr_member *src, unsigned slot,
                        const struct clr_plog_entry *en, const struct arr_view *v)
{
    struct clr_array *a = pl->a;
    struct clr_raid_stripe st;
    size_t len = (size_t)en->pp_sectors * ARR_SECTOR;
    unsigned changed = 0, missing = 0, npar;
    void *blk[CLR_RAID_MAX_DISKS];
    uint8_t *mem = NULL, *pp, *p, *q, *zero;
    uint64_t dsec;
    bool p_ok, q_ok;
    int rc;

    clr_raid_stripe_roles(&a->g, en->stripe, &st);
    npar = st.qd == CLR_RAID_NO_DISK ? 1 : 2;
    if (en->stripe * a->g.chunk_sectors >= a->g.used_dev_sectors || en->pp_sectors == 0 ||
        en->first + en->pp_sectors > a->g.chunk_sectors)
        return -EBADMSG;
    for (unsigned i = 0; i < st.ndata; i++) {
        if (!((en->changed >> i) & 1))
            continue;
        changed++;
        missing += v->st[st.data_disk[i]] != ARR_M_IN_SYNC;
    }
    p_ok = v->m[st.pd] && arr_writable(v->st[st.pd]);
    q_ok = npar == 2 && v->m[st.qd] && arr_writable(v->st[st.qd]);
    if (clr_zone_replay_plan(a->g.level, changed, missing, p_ok, q_ok) != CLR_ZONE_REPLAY_PARITY)
        return 0;
    /* pp (P then Q), P, Q, one zero block, then the changed chunks */
    rc = clr_io_alloc((void **)&mem, len * (2 * npar + 1 + changed));
    if (rc)
        return rc;
    pp = mem;
    p = mem + len * npar;
    q = p + len;
    zero = mem + len * 2 * npar;
    memset(zero, 0, len);
    if (en->flags & PL_ZERO)
        memset(pp, 0, len * npar);
    else
        rc = clr_io_pread(src->io, pp, len * npar,
                          area_of(pl, slot) + PL_AREA_OFF + (uint64_t)en->pp_offset * ARR_SECTOR);
    dsec = en->stripe * a->g.chunk_sectors + en->first;
    {
        unsigned c = 0;

        for (unsigned i = 0; i < st.ndata && rc == 0; i++) {
            if (!((en->changed >> i) & 1)) {
                blk[i] = zero;
                continue;
            }
            blk[i] = zero + len * (1 + c++);
            rc = clr_io_pread(v->m[st.data_disk[i]]->io, blk[i], len,
                              arr_dev_off(v->m[st.data_disk[i]], dsec));
        }
    }
    if (rc == 0)
        rc = npar == 1 ? clr_parity_xor_gen(st.ndata, len, blk, p)
                       : clr_parity_pq_gen(st.ndata, len, blk, st.qexp, p, q);
    if (rc == 0) {
        xor_into(p, pp, len);
        if (npar == 2)
            xor_into(q, pp + len, len);
        if (p_ok)
            rc = clr_io_pwrite(v->m[st.pd]->io, p, len, arr_dev_off(v->m[st.pd], dsec), CLR_IO_FUA);
        if (rc == 0 && q_ok && clr_zone_replay_q(a->g.level))
            rc = clr_io_pwrite(v->m[st.qd]->io, q, len, arr_dev_off(v->m[st.qd], dsec), CLR_IO_FUA);
    }
    clr_io_free(mem);
    return rc ? rc : 1;
}

int clr_arr_plog_replay(struct arr_plog *pl, unsigned slot, uint64_t *applied)
{
    struct clr_array *a = pl->a;
    struct rp_hdr *hd = calloc(PL_MAX_ROLES, sizeof *hd);
    struct arr_view v;
    uint64_t maxgen = 0, done = 0, left = 0;
    int rc = 0;

    *applied = 0;
    if (!hd)
        return -ENOMEM;
    clr_arr_view(a, &v);
    /* logs on in-sync members only: a rebuilding one's area is stale */
    for (unsigned r = 0; r < pl->nroles; r++) {
        if (v.m[r] && v.st[r] == ARR_M_REBUILDING) {
            struct rp_hdr *t = calloc(1, sizeof *t);

            /* its generations only: ours must pass them too */
            if (t)
                read_hdr(pl, v.m[r], slot, t, &maxgen);
            free(t);
            continue;
        }
        if (!v.m[r] || v.st[r] != ARR_M_IN_SYNC)
            continue;
        rc = read_hdr(pl, v.m[r], slot, &hd[r], &maxgen);
        if (rc) {
            clr_arr_log(a, LOG_ERR, "%s: cannot read the partial-parity log of slot %u: %s", v.m[r]->path,
                        slot, strerror(-rc));
            goto out;
        }
    }
    for (unsigned r = 0; r < pl->nroles; r++) {
        if (!hd[r].ok)
            continue;
        for (uint32_t i = 0; i < hd[r].h.nentries; i++) {
            const struct clr_plog_entry *en = &hd[r].h.e[i];
            struct clr_raid_stripe st;
            int x;

            /* each entry once, in its log's order: from the P member's
             * log, or the Q member's if P's is not there */
            clr_raid_stripe_roles(&a->g, en->stripe, &st);
            if (!(r == st.pd || (r == st.qd && !hd[st.pd].ok)))
                continue;
            x = replay_entry(pl, v.m[r], slot, en, &v);
            if (x < 0) {
                rc = x;
                clr_arr_log(a, LOG_ERR, "cluster: replaying slot %u's log entry for stripe %" PRIu64 ": %s",
                            slot, en->stripe, strerror(-x));
                goto out;
            }
            if (x)
                done++;
            else
                left++;
        }
    }
    /* emptied last: a newer header with no entries, over the older copy */
    for (unsigned r = 0; r < pl->nroles; r++) {
        struct clr_plog_hdr *h;
        uint8_t *buf = NULL;
        unsigned copy;

        if (!hd[r].ok || hd[r].h.nentries == 0)
            continue;
        h = calloc(1, sizeof *h);
        if (!h || clr_io_alloc((void **)&buf, CLR_PLOG_HDR_BYTES)) {
            free(h);
            rc = -ENOMEM;
            goto out;
        }
        memcpy(h->set_uuid, a->sb.set_uuid, 16);
        h->slot = slot;
        h->gen = maxgen + 1;
        /* over the copy not holding the header just replayed */
        copy = clr_zone_log_next_copy(hd[r].gen, hd[r].valid, CLR_PLOG_COPIES);
        rc = clr_plog_hdr_encode(h, buf);
        if (rc == 0)
            rc = clr_io_pwrite(v.m[r]->io, buf, CLR_PLOG_HDR_BYTES,
                               area_of(pl, slot) + (uint64_t)copy * CLR_PLOG_HDR_BYTES, CLR_IO_FUA);
        clr_io_free(buf);
        free(h);
        if (rc) {
            clr_arr_log(a, LOG_ERR, "%s: cannot empty slot %u's partial-parity log: %s", v.m[r]->path, slot,
                        strerror(-rc));
            goto out;
        }
        hd[r].gen[copy] = maxgen + 1;
        hd[r].valid[copy] = true;
    }
    if (slot == a->slot) {
        /* our own slot, at join: continue above every generation seen,
         * and never over the newest copy of a role */
        clr_mutex_lock(&pl->mu);
        if (pl->gen <= maxgen + 1)
            pl->gen = maxgen + 1;
        for (unsigned r = 0; r < pl->nroles; r++) {
            memcpy(pl->role[r].gens, hd[r].gen, sizeof hd[r].gen);
            memcpy(pl->role[r].valid, hd[r].valid, sizeof hd[r].valid);
        }
        clr_mutex_unlock(&pl->mu);
    }
    *applied = done;
    clr_mutex_lock(&pl->mu);
    pl->replays++;
    pl->replayed += done;
    pl->replay_left += left;
    clr_mutex_unlock(&pl->mu);
    if (done || left)
        clr_arr_log(a, LOG_NOTICE,
                    "cluster: replayed slot %u's partial-parity log: %" PRIu64
                    " stripe(s) made consistent, %" PRIu64
                    " left to the resync (a changed chunk's member is gone)",
                    slot, done, left);
out:
    free(hd);
    return rc;
}

/* ---- life cycle and status ---- */

int clr_arr_plog_open(struct clr_array *a, struct arr_plog **out, struct clr_err *e)
{
    struct arr_plog *pl;
    int rc;

    *out = NULL;
    pl = calloc(1, sizeof *pl);
    if (!pl)
        return clr_err_set(e, -ENOMEM, "out of memory");
    rc = clr_plog_layout(&a->sb, &a->bsb, &pl->lay, e);
    if (rc) {
        free(pl);
        return rc;
    }
    pl->a = a;
    pl->slot_off = area_of(pl, a->slot);
    pl->nroles = a->g.raid_disks < PL_MAX_ROLES ? a->g.raid_disks : PL_MAX_ROLES;
    for (unsigned r = 0; r < pl->nroles; r++)
        if (clr_io_alloc((void **)&pl->role[r].hbuf, CLR_PLOG_HDR_BYTES)) {
            while (r--)
                clr_io_free(pl->role[r].hbuf);
            free(pl);
            return clr_err_set(e, -ENOMEM, "out of memory");
        }
    clr_mutex_init(&pl->mu, CLR_RANK_PLOG, "pl->mu");
    pthread_cond_init(&pl->cv, NULL);
    *out = pl;
    return 0;
}

void clr_arr_plog_free(struct arr_plog *pl)
{
    if (!pl)
        return;
    for (unsigned r = 0; r < pl->nroles; r++)
        clr_io_free(pl->role[r].hbuf);
    clr_mutex_destroy(&pl->mu);
    pthread_cond_destroy(&pl->cv);
    free(pl);
}

void clr_arr_plog_status(struct arr_plog *pl, json_object *z)
{
    json_object *o = json_object_new_object();
    unsigned live = 0;

    clr_mutex_lock(&pl->mu);
    for (unsigned r = 0; r < pl->nroles; r++)
        live += pl->role[r].live;
    json_object_object_add(o, "area_bytes_per_slot", json_object_new_int64(CLR_PLOG_SLOT_BYTES));
    json_object_object_add(o, "entries_logged", json_object_new_int64((int64_t)pl->entries));
    json_object_object_add(o, "entries_live", json_object_new_int64(live));
    json_object_object_add(o, "headers_written", json_object_new_int64((int64_t)pl->headers));
    json_object_object_add(o, "space_waits", json_object_new_int64((int64_t)pl->waits));
    json_object_object_add(o, "retirements", json_object_new_int64((int64_t)pl->retires));
    json_object_object_add(o, "replays", json_object_new_int64((int64_t)pl->replays));
    json_object_object_add(o, "replayed_entries", json_object_new_int64((int64_t)pl->replayed));
    json_object_object_add(o, "replay_left_to_resync", json_object_new_int64((int64_t)pl->replay_left));
    clr_mutex_unlock(&pl->mu);
    json_object_object_add(z, "parity_log", o);
}
