/* clraid array core: the RAID5/RAID6 data path and sync units (the
 * parity struct arr_ops) and the bounded stripe buffer pool.  Below:
 * state, super, bitmap, legs. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "array/array_internal.h"
#include "raid/parity.h"

/* ========================= parity: RAID5 / RAID6 ======================== */

void clr_arr_pool_init(struct clr_array *a)
{
    size_t chunk = (size_t)a->g.chunk_sectors * ARR_SECTOR;
    uint64_t n;

    clr_mutex_init(&a->sp_lock, CLR_RANK_SP, "a->sp_lock");
    pthread_cond_init(&a->sp_cond, NULL);
    /* blocks 0..ndata+1 of the stripe, then as many scratch blocks */
    a->sp_bytes = chunk * 2 * (a->g.data_disks + 2);
    n = a->sp_bytes ? ((uint64_t)a->stripe_cache_kib * 1024) / a->sp_bytes : 1;
    a->sp_max = n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
    a->sp_nfree = a->sp_total = 0;
}

void clr_arr_pool_destroy(struct clr_array *a)
{
    for (unsigned i = 0; i < a->sp_nfree; i++)
        clr_io_free(a->sp_free[i]);
    a->sp_nfree = a->sp_total = 0;
    clr_mutex_destroy(&a->sp_lock);
    pthread_cond_destroy(&a->sp_cond);
}

static uint8_t *pool_get(struct clr_array *a)
{
    uint8_t *b = NULL;

    clr_mutex_lock(&a->sp_lock);
    for (;;) {
        if (a->sp_nfree) {
            b = a->sp_free[--a->sp_nfree];
            break;
        }
        if (a->sp_total < a->sp_max) {
            if (clr_io_alloc((void **)&b, a->sp_bytes) == 0)
                a->sp_total++;
            break;
        }
        clr_cond_wait(&a->sp_cond, &a->sp_lock);
    }
    clr_mutex_unlock(&a->sp_lock);
    return b;
}

static void pool_put(struct clr_array *a, uint8_t *b)
{
    clr_mutex_lock(&a->sp_lock);
    a->sp_free[a->sp_nfree++] = b;
    pthread_cond_signal(&a->sp_cond);
    clr_mutex_unlock(&a->sp_lock);
}

/* One stripe's worth of working state. */
struct stripe_io {
    struct clr_raid_stripe st;
    unsigned nb; /* data blocks + P (+ Q) */
    uint8_t *blk[CLR_RAID_MAX_DISKS + 2];
    uint8_t *scr[CLR_RAID_MAX_DISKS + 2];
    uint64_t dsec; /* first device sector of the rows */
    size_t len;    /* bytes per block */
};

static uint32_t blk_disk(const struct stripe_io *s, unsigned i)
{
    return i < s->st.ndata ? s->st.data_disk[i] : i == s->st.ndata ? s->st.pd : s->st.qd;
}

static void stripe_setup(struct clr_array *a, struct stripe_io *s, uint8_t *pool, uint64_t stripe,
                         uint64_t r0, uint64_t r1)
{
    size_t chunk = (size_t)a->g.chunk_sectors * ARR_SECTOR;

    clr_raid_stripe_roles(&a->g, stripe, &s->st);
    s->nb = s->st.ndata + (s->st.qd == CLR_RAID_NO_DISK ? 1 : 2);
    for (unsigned i = 0; i < s->nb; i++) {
        s->blk[i] = pool + i * chunk;
        s->scr[i] = pool + (s->st.ndata + 2 + i) * chunk;
    }
    s->dsec = stripe * a->g.chunk_sectors + r0;
    s->len = (size_t)(r1 - r0) * ARR_SECTOR;
}

static int stripe_gen(struct stripe_io *s, uint8_t *p, uint8_t *q)
{
    if (s->nb == s->st.ndata + 1)
        return clr_parity_xor_gen(s->st.ndata, s->len, (void *const *)s->blk, p);
    return clr_parity_pq_gen(s->st.ndata, s->len, (void *const *)s->blk, s->st.qexp, p, q);
}

/* Reads the stripe rows from the in-sync members and rebuilds what is
 * missing (failed, rebuilding, or failing now). Data blocks always end up
 * valid; P/Q only if @need_parity. */
static int stripe_load(struct clr_array *a, struct arr_req *rq, struct stripe_io *s,
                       const struct arr_view *v0, bool need_parity)
{
    struct arr_view v = *v0;
    bool lost[CLR_RAID_MAX_DISKS + 2], have[CLR_RAID_MAX_DISKS + 2];
    unsigned maxlost = s->nb - s->st.ndata;

    for (unsigned i = 0; i < s->nb; i++) {
        uint32_t d = blk_disk(s, i);

        lost[i] = v.st[d] != ARR_M_IN_SYNC;
        have[i] = false;
    }
    for (int round = 0; round < 4; round++) {
        struct arr_leg legs[CLR_RAID_MAX_DISKS + 2];
        unsigned idx[CLR_RAID_MAX_DISKS + 2], nl = 0, dlost = 0;
        struct clr_io_wg wg;
        int rc;

        for (unsigned i = 0; i < s->st.ndata; i++)
            dlost += lost[i];
        clr_io_wg_init(&wg);
        for (unsigned i = 0; i < s->nb; i++) {
            bool want = i < s->st.ndata || need_parity || dlost;

            if (!want || lost[i] || have[i])
                continue;
            idx[nl] = i;
            clr_arr_leg_submit(&legs[nl++], &wg, v.m[blk_disk(s, i)], false, s->blk[i], s->len, s->dsec, 0);
        }
        clr_io_wg_wait(&wg);
        if (nl == 0)
            break;
        rc = clr_arr_legs_settle(a, rq, legs, nl, NULL);
        for (unsigned j = 0; j < nl; j++) {
            if (legs[j].res < 0)
                lost[idx[j]] = true;
            else
                have[idx[j]] = true;
        }
        if (rc == -EAGAIN)
            return -EAGAIN;
    }
    {
        unsigned dl = 0, pl = 0, nl = 0, lidx[CLR_RAID_MAX_DISKS + 2];

        for (unsigned i = 0; i < s->nb; i++) {
            if (!lost[i])
                continue;
            if (i < s->st.ndata)
                dl++;
            else
                pl++;
            lidx[nl++] = i;
        }
        if (dl == 0)
            return need_parity && pl ? stripe_gen(s, s->blk[s->st.ndata],
                                                  s->nb > s->st.ndata + 1 ? s->blk[s->st.ndata + 1] : NULL)
                                     : 0;
        if (dl + pl > maxlost)
            return clr_arr_is_frozen(a) ? -EAGAIN : -EIO;
        if (s->nb == s->st.ndata + 1)
            return clr_parity_raid5_recover(s->st.ndata, s->len, (void *const *)s->blk, lidx[0]);
        return clr_parity_raid6_recover(s->st.ndata, s->len, (void *const *)s->blk, s->st.qexp, nl, lidx);
    }
}

/* Writes blocks flagged in @wr to their live members. */
static int stripe_write(struct clr_array *a, struct arr_req *rq, struct stripe_io *s,
                        const struct arr_view *v, const bool *wr, uint8_t *const *src, unsigned ioflags,
                        bool *whole)
{
    struct arr_leg legs[CLR_RAID_MAX_DISKS + 2];
    struct clr_io_wg wg;
    unsigned nl = 0, bad = 0;
    int rc;

    clr_io_wg_init(&wg);
    for (unsigned i = 0; i < s->nb; i++) {
        uint32_t d = blk_disk(s, i);

        if (!wr[i])
            continue;
        if (!v->m[d] || !arr_writable(v->st[d])) {
            *whole = false;
            continue;
        }
        if (v->st[d] != ARR_M_IN_SYNC)
            *whole = false;
        clr_arr_leg_submit(&legs[nl++], &wg, v->m[d], true, src[i], s->len, s->dsec, ioflags);
    }
    clr_io_wg_wait(&wg);
    rc = clr_arr_legs_settle(a, rq, legs, nl, &bad);
    if (bad)
        *whole = false;
    return rc;
}

static bool stripe_all_in_sync(const struct stripe_io *s, const struct arr_view *v)
{
    for (unsigned i = 0; i < s->nb; i++)
        if (v->st[blk_disk(s, i)] != ARR_M_IN_SYNC)
            return false;
    return true;
}

/* The partial parity of a write changing data chunks [kb, ke] of the
 * stripe's rows (doc/cluster.md, "Clustered RAID5/6"): the parity of the
 * chunks it leaves alone, P (and Q).  Read-modify-write has the old data
 * of the changed chunks and the old parity: pp = old parity - their part;
 * reconstruct-write has every unchanged chunk: pp = their parity.  p and
 * q stay NULL when every chunk changes (zero partial parity).  Written
 * into the scratch blocks of P and Q, which nothing else uses on a write,
 * with a scratch block of an unchanged chunk as the zero block. */
struct stripe_pp {
    uint64_t changed;
    uint8_t *p, *q;
};

static void pp_compute(struct stripe_io *s, uint64_t kb, uint64_t ke, bool rmw, struct stripe_pp *pp)
{
    void *vb[CLR_RAID_MAX_DISKS];
    uint8_t *zero;
    unsigned nd = s->st.ndata;

    pp->changed = 0;
    for (uint64_t c = kb; c <= ke; c++)
        pp->changed |= 1ull << c;
    pp->p = pp->q = NULL;
    if (ke - kb + 1 == nd)
        return;
    zero = s->scr[kb > 0 ? 0 : ke + 1];
    memset(zero, 0, s->len);
    for (unsigned i = 0; i < nd; i++) {
        bool ch = (pp->changed >> i) & 1;

        vb[i] = rmw ? (ch ? s->blk[i] : zero) : (ch ? zero : s->blk[i]);
    }
    pp->p = s->scr[nd];
    pp->q = s->nb > nd + 1 ? s->scr[nd + 1] : NULL;
    if (pp->q)
        clr_parity_pq_gen(nd, s->len, vb, s->st.qexp, pp->p, pp->q);
    else
        clr_parity_xor_gen(nd, s->len, vb, pp->p);
    if (rmw) {
        uint64_t *d = (uint64_t *)(void *)pp->p;
        const uint64_t *o = (const uint64_t *)(const void *)s->blk[nd];

        for (size_t i = 0; i < s->len / 8; i++)
            d[i] ^= o[i];
        if (pp->q) {
            d = (uint64_t *)(void *)pp->q;
            o = (const uint64_t *)(const void *)s->blk[nd + 1];
            for (size_t i = 0; i < s->len / 8; i++)
                d[i] ^= o[i];
        }
    }
}

/* Writes [ls, ls+k) that lies in one stripe; the range lock is held. */
static int parity_write_stripe(struct clr_array *a, struct arr_req *rq, const uint8_t *buf, uint64_t ls,
                               uint64_t k, unsigned ioflags, bool *whole)
{
    uint64_t cs = a->g.chunk_sectors, ndata = a->g.data_disks;
    uint64_t stripe = ls / cs / ndata, first = stripe * cs * ndata;
    uint64_t o = ls - first, kb = o / cs, ke = (o + k - 1) / cs;
    uint64_t r0 = ke > kb ? 0 : o % cs, r1 = ke > kb ? cs : (o + k - 1) % cs + 1;
    bool wr[CLR_RAID_MAX_DISKS + 2] = { false };
    struct arr_plog_tok tok = { 0 };
    struct stripe_pp pp = { 0 };
    struct stripe_io s;
    struct arr_view v;
    uint8_t *pool;
    bool full, rmw;
    int rc;

    pool = pool_get(a);
    if (!pool)
        return -ENOMEM;
    stripe_setup(a, &s, pool, stripe, r0, r1);
    clr_arr_view(a, &v);
    full = r0 == 0 && r1 == cs && k == cs * ndata;
    /* Read-modify-write costs (changed + parity) reads, reconstruct-write
     * reads the unchanged data; RMW needs every block trustworthy. */
    rmw = !full && stripe_all_in_sync(&s, &v) &&
          (ke - kb + 1) + (s.nb - s.st.ndata) <= ndata - (ke - kb + 1) &&
          !clr_arr_bm_region_needed(a, s.dsec - r0, cs);
    if (rmw) {
        struct arr_leg legs[CLR_RAID_MAX_DISKS + 2];
        struct clr_io_wg wg;
        unsigned nl = 0;

        clr_io_wg_init(&wg);
        for (uint64_t c = kb; c <= ke; c++)
            clr_arr_leg_submit(&legs[nl++], &wg, v.m[blk_disk(&s, (unsigned)c)], false, s.blk[c], s.len,
                               s.dsec, 0);
        for (unsigned i = s.st.ndata; i < s.nb; i++)
            clr_arr_leg_submit(&legs[nl++], &wg, v.m[blk_disk(&s, i)], false, s.blk[i], s.len, s.dsec, 0);
        clr_io_wg_wait(&wg);
        for (unsigned j = 0; j < nl; j++)
            if (legs[j].res < 0)
                rmw = false;
        rc = clr_arr_legs_settle(a, rq, legs, nl, NULL);
        if (rc)
            goto out;
        if (!rmw)
            clr_arr_view(a, &v); /* fall back to reconstruct-write */
    }
    if (!full && !rmw) {
        rc = stripe_load(a, rq, &s, &v, false);
        if (rc)
            goto out;
    }
    /* new data: into scr[] for RMW (old stays in blk[]), else into blk[].
     * A chunk whose rows the write covers whole is used from the client's
     * buffer where it is (no copy) if that is aligned for the members and
     * for the parity kernels: newd[c] points at it. */
    uint8_t *newd[CLR_RAID_MAX_DISKS + 2];

    for (uint64_t c = kb; c <= ke; c++) {
        uint64_t c0 = first + c * cs, a0 = ls > c0 ? ls : c0;
        uint64_t a1 = ls + k < c0 + cs ? ls + k : c0 + cs;
        const uint8_t *from = buf + (a0 - ls) * ARR_SECTOR;
        uint8_t *dst = rmw ? s.scr[c] : s.blk[c];

        wr[c] = true;
        if (a0 - c0 == r0 && a1 - c0 == r1 && arr_mem_aligned(a, from) &&
            (uintptr_t)from % (rmw ? CLR_PARITY_RMW_NEW_ALIGN : CLR_PARITY_ALIGN) == 0) {
            newd[c] = (uint8_t *)(uintptr_t)from; /* only read from, and written to members */
            continue;
        }
        if (rmw)
            memcpy(dst, s.blk[c], s.len);
        memcpy(dst + (a0 - c0 - r0) * ARR_SECTOR, from, (a1 - a0) * ARR_SECTOR);
        newd[c] = dst;
    }
    if (!rmw)
        for (uint64_t c = kb; c <= ke; c++)
            s.blk[c] = newd[c];
    if (a->plog)
        pp_compute(&s, kb, ke, rmw, &pp);
    if (rmw) {
        void *oldp[CLR_RAID_MAX_DISKS], *newp[CLR_RAID_MAX_DISKS];
        uint8_t qe[CLR_RAID_MAX_DISKS];
        unsigned nc = 0;

        for (uint64_t c = kb; c <= ke; c++, nc++) {
            oldp[nc] = s.blk[c];
            newp[nc] = newd[c];
            qe[nc] = s.st.qexp[c];
        }
        /* RAID5 has no Q: its stripe roles carry no meaningful qexp */
        rc = s.nb > s.st.ndata + 1
                 ? clr_parity_rmw(nc, s.len, oldp, newp, qe, s.blk[s.st.ndata], s.blk[s.st.ndata + 1])
                 : clr_parity_rmw(nc, s.len, oldp, newp, NULL, s.blk[s.st.ndata], NULL);
        for (uint64_t c = kb; c <= ke; c++)
            s.blk[c] = newd[c];
    } else {
        rc = stripe_gen(&s, s.blk[s.st.ndata], s.nb > s.st.ndata + 1 ? s.blk[s.st.ndata + 1] : NULL);
    }
    if (rc)
        goto out;
    for (unsigned i = s.st.ndata; i < s.nb; i++)
        wr[i] = true;
    if (a->plog) {
        /* clustered: the partial parity durable in our log first */
        rc =
            clr_arr_plog_log(a->plog, &s.st, pp.changed, (uint32_t)r0, (uint32_t)(r1 - r0), pp.p, pp.q, &tok);
        if (rc)
            goto out;
    }
    rc = stripe_write(a, rq, &s, &v, wr, s.blk, ioflags, whole);
    if (a->plog)
        clr_arr_plog_done(a->plog, &tok);
out:
    pool_put(a, pool);
    return rc;
}

static int parity_write(struct clr_array *a, struct arr_req *rq, const uint8_t *buf, uint64_t ls, uint64_t n,
                        unsigned ioflags, bool *whole)
{
    *whole = true;
    while (n) {
        uint64_t k = clr_raid_stripe_piece(&a->g, ls, n);
        int rc;

        /* logged (clustered): a partial stripe goes a chunk and at most
         * CLR_ARR_PLOG_MAX_ROWS rows at a time, so that its partial parity
         * fits the log area; a full stripe needs none */
        if (a->plog && k != (uint64_t)a->g.chunk_sectors * a->g.data_disks) {
            k = clr_raid_chunk_piece(&a->g, ls, k);
            if (k > CLR_ARR_PLOG_MAX_ROWS)
                k = CLR_ARR_PLOG_MAX_ROWS;
        }
        rc = parity_write_stripe(a, rq, buf, ls, k, ioflags, whole);

        if (rc)
            return rc;
        buf += k * ARR_SECTOR;
        ls += k;
        n -= k;
    }
    return 0;
}

static void parity_sync_range(const struct clr_array *a, uint64_t ls, uint64_t n, uint64_t *ss, uint64_t *sn)
{
    uint64_t per = (uint64_t)a->g.chunk_sectors * a->g.data_disks;
    uint64_t s0 = ls / per, s1 = (ls + n - 1) / per;

    *ss = s0 * a->g.chunk_sectors;
    *sn = (s1 - s0 + 1) * a->g.chunk_sectors;
}

/* Reads a piece of one data chunk whose member is missing or failed, from
 * the rest of its stripe. */
static int parity_read_degraded(struct clr_array *a, struct arr_req *rq, uint8_t *buf, uint64_t ls,
                                uint64_t k, bool locked)
{
    uint64_t cs = a->g.chunk_sectors, ndata = a->g.data_disks;
    uint64_t stripe = ls / cs / ndata, o = ls - stripe * cs * ndata;
    uint64_t c = o / cs, r0 = o % cs;
    struct arr_zone *ztok = NULL;
    struct stripe_io s;
    struct arr_range r;
    struct arr_view v;
    uint8_t *pool;
    int rc;

    if (!locked) {
        clr_arr_rl_lock(&a->rl, &r, stripe * cs, cs);
        /* cluster: PR of the zone, so that no node rewrites the stripe
         * while we reconstruct from it (a write holds EX: @locked) */
        rc = arr_cl_zone_enter(a, ARR_ZONE_READ_DEGRADED, stripe, &ztok);
        if (rc) {
            clr_arr_rl_unlock(&a->rl, &r);
            return rc;
        }
    }
    pool = pool_get(a);
    if (!pool) {
        rc = -ENOMEM;
        goto out;
    }
    stripe_setup(a, &s, pool, stripe, r0, r0 + k);
    clr_arr_view(a, &v);
    rc = stripe_load(a, rq, &s, &v, false);
    if (rc == 0)
        memcpy(buf, s.blk[c], k * ARR_SECTOR);
    pool_put(a, pool);
out:
    if (!locked) {
        arr_cl_zone_exit(a, ztok);
        clr_arr_rl_unlock(&a->rl, &r);
    }
    return rc;
}

static int parity_read(struct clr_array *a, struct arr_req *rq, uint8_t *buf, uint64_t ls, uint64_t n,
                       bool locked)
{
    struct clr_raid_extent x; /* 2 KiB: on the stack, per request */
    struct arr_leg *legs;
    struct arr_view v;
    struct clr_io_wg wg;
    unsigned cap = (unsigned)(n / a->g.chunk_sectors + 2), nl = 0;
    uint64_t *lsv, *kv;
    uint8_t **bufv;
    int rc = 0;

    legs = calloc(cap, sizeof *legs);
    lsv = calloc(cap, sizeof *lsv);
    kv = calloc(cap, sizeof *kv);
    bufv = calloc(cap, sizeof *bufv);
    if (!legs || !lsv || !kv || !bufv) {
        rc = -ENOMEM;
        goto out;
    }
    clr_arr_view(a, &v);
    clr_io_wg_init(&wg);
    while (n) {
        uint64_t k = clr_raid_chunk_piece(&a->g, ls, n);
        uint32_t d;

        clr_raid_map(&a->g, ls, &x);
        d = x.copy[0].disk;
        lsv[nl] = ls;
        kv[nl] = k;
        bufv[nl] = buf;
        if (v.st[d] == ARR_M_IN_SYNC) {
            clr_arr_leg_submit(&legs[nl], &wg, v.m[d], false, buf, k * ARR_SECTOR, x.copy[0].sector, 0);
        } else {
            legs[nl].res = -ENODEV;
            legs[nl].m = NULL;
        }
        nl++;
        buf += k * ARR_SECTOR;
        ls += k;
        n -= k;
    }
    clr_io_wg_wait(&wg);
    for (unsigned i = 0; i < nl && rc == 0; i++) {
        if (legs[i].res >= 0)
            continue;
        if (legs[i].m && clr_arr_member_failed(a, rq, legs[i].m, legs[i].res) == -EAGAIN) {
            rc = -EAGAIN;
            break;
        }
        rc = parity_read_degraded(a, rq, bufv[i], lsv[i], kv[i], locked);
    }
out:
    free(legs);
    free(lsv);
    free(kv);
    free(bufv);
    return rc;
}

/* Resync/check/repair whole stripes [ss, ss+sn) (sync = device sectors). */
static int parity_sync_unit(struct clr_array *a, struct arr_req *rq, enum arr_action act, uint64_t ss,
                            uint64_t sn, uint64_t *mismatch)
{
    uint64_t cs = a->g.chunk_sectors;
    int rc = 0;

    for (uint64_t st = ss / cs; st * cs < ss + sn && st * cs < a->g.used_dev_sectors && rc == 0; st++) {
        bool wr[CLR_RAID_MAX_DISKS + 2] = { false }, whole = true;
        uint8_t *src[CLR_RAID_MAX_DISKS + 2];
        struct stripe_io s;
        struct arr_view v;
        struct arr_zone *ztok;
        uint8_t *pool;
        bool miss = false;

        /* cluster: a check reads under PR, resync and repair write under EX */
        rc = arr_cl_zone_enter(a, act == ARR_SYNC_CHECK ? ARR_ZONE_CHECK : ARR_ZONE_RESYNC, st, &ztok);
        if (rc)
            return rc;
        pool = pool_get(a);
        if (!pool) {
            arr_cl_zone_exit(a, ztok);
            return -ENOMEM;
        }
        stripe_setup(a, &s, pool, st, 0, cs);
        clr_arr_view(a, &v);
        for (unsigned i = 0; i < s.nb; i++)
            miss |= v.st[blk_disk(&s, i)] != ARR_M_IN_SYNC;
        rc = stripe_load(a, rq, &s, &v, act != ARR_SYNC_RESYNC || miss);
        if (rc)
            goto next;
        for (unsigned i = 0; i < s.nb; i++)
            src[i] = s.blk[i];
        if (act == ARR_SYNC_RESYNC) {
            /* Fresh parity from data; rebuilding (re-added) members get
             * their reconstructed blocks. */
            rc = stripe_gen(&s, s.blk[s.st.ndata], s.nb > s.st.ndata + 1 ? s.blk[s.st.ndata + 1] : NULL);
            for (unsigned i = 0; i < s.nb; i++)
                wr[i] = i >= s.st.ndata || v.st[blk_disk(&s, i)] == ARR_M_REBUILDING;
        } else if (!miss) {
            uint8_t *p = s.scr[0], *q = s.nb > s.st.ndata + 1 ? s.scr[1] : NULL;

            rc = stripe_gen(&s, p, q);
            for (uint64_t sec = 0; sec < cs && rc == 0; sec++) {
                size_t off = sec * ARR_SECTOR;
                bool bad = memcmp(p + off, s.blk[s.st.ndata] + off, ARR_SECTOR) != 0 ||
                           (q && memcmp(q + off, s.blk[s.st.ndata + 1] + off, ARR_SECTOR) != 0);

                if (bad) {
                    ++*mismatch;
                    if (act == ARR_SYNC_REPAIR) {
                        wr[s.st.ndata] = true;
                        if (q)
                            wr[s.st.ndata + 1] = true;
                    }
                }
            }
            src[s.st.ndata] = p;
            if (q)
                src[s.st.ndata + 1] = q;
        }
        if (rc == 0)
            rc = stripe_write(a, rq, &s, &v, wr, src, 0, &whole);
    next:
        pool_put(a, pool);
        arr_cl_zone_exit(a, ztok);
    }
    return rc;
}

/* Rebuilds one stripe row of @m. */
static int64_t parity_recover_unit(struct clr_array *a, struct arr_member *m, uint64_t ds, uint64_t n)
{
    uint64_t cs = a->g.chunk_sectors, st = ds / cs;
    bool wr[CLR_RAID_MAX_DISKS + 2] = { false }, whole = true;
    struct arr_zone *ztok;
    struct stripe_io s;
    struct arr_range r;
    struct arr_view v;
    uint8_t *pool;
    int rc, b;

    if (ds % cs)
        return (int64_t)(cs - ds % cs);
    clr_arr_rl_lock(&a->rl, &r, st * cs, cs);
    rc = arr_cl_zone_enter(a, ARR_ZONE_RESYNC, st, &ztok); /* cluster: EX, it writes */
    if (rc) {
        clr_arr_rl_unlock(&a->rl, &r);
        return rc;
    }
    pool = pool_get(a);
    if (!pool) {
        arr_cl_zone_exit(a, ztok);
        clr_arr_rl_unlock(&a->rl, &r);
        return -ENOMEM;
    }
    stripe_setup(a, &s, pool, st, 0, cs);
    clr_arr_view(a, &v);
    b = clr_raid_stripe_block(&s.st, (uint32_t)m->role);
    rc = stripe_load(a, NULL, &s, &v, b >= (int)s.st.ndata);
    if (rc == 0 && b >= 0) {
        wr[b] = true;
        rc = stripe_write(a, NULL, &s, &v, wr, s.blk, 0, &whole);
    }
    pool_put(a, pool);
    arr_cl_zone_exit(a, ztok);
    clr_arr_rl_unlock(&a->rl, &r);
    return rc ? rc : (int64_t)cs;
}

const struct arr_ops clr_arr_parity_ops = {
    .read = parity_read,
    .write = parity_write,
    .sync_range = parity_sync_range,
    .sync_unit = parity_sync_unit,
    .recover_unit = parity_recover_unit,
};
