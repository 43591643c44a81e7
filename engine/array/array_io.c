/* clraid array core: the data path. The public entry points align the
 * request, take the range lock and the bitmap, then dispatch to the
 * level's operations: mirror (RAID1/10) or parity (RAID5/6). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "array/array_internal.h"
#include "raid/parity.h"

#define ARR_MAX_REQ     (32u << 20)

static bool aligned_ptr(const void *p)
{
    return ((uintptr_t)p & (CLR_IO_ALIGN - 1)) == 0;
}

/* ---- request entry, freeze ---- */

static int req_enter(struct clr_array *a)
{
    int rc = 0;

    pthread_mutex_lock(&a->lock);
    while (a->quiesce && !a->stopping)
        pthread_cond_wait(&a->cond, &a->lock);
    if (a->frozen && !a->thaw_err && a->running && !a->stopping) {
        a->blocked++;
        while (a->frozen && !a->thaw_err && !a->stopping)
            pthread_cond_wait(&a->cond, &a->lock);
        a->blocked--;
    }
    if (!a->running || a->stopping)
        rc = -ESHUTDOWN;
    else if (a->frozen && a->thaw_err)
        rc = -EIO;
    else
        a->inflight++;
    pthread_mutex_unlock(&a->lock);
    atomic_store(&a->last_client_ns, clr_arr_now_ns());
    return rc;
}

static void req_exit(struct clr_array *a)
{
    pthread_mutex_lock(&a->lock);
    if (--a->inflight == 0)
        pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
}

static bool is_frozen(struct clr_array *a)
{
    bool f;

    pthread_mutex_lock(&a->lock);
    f = a->frozen;
    pthread_mutex_unlock(&a->lock);
    return f;
}

static bool writable(enum arr_mstate s)
{
    return s == ARR_M_IN_SYNC || s == ARR_M_REBUILDING;
}

/* Submits one leg; a refused submission completes the leg at once. */
static void leg_submit(struct arr_leg *l, struct clr_io_wg *wg, struct arr_member *m, bool write,
                       void *buf, size_t len, uint64_t dsec, unsigned ioflags)
{
    int s;

    *l = (struct arr_leg){ .wg = wg, .m = m };
    clr_io_wg_add(wg, 1);
    if (write && !buf)      /* mirrors: write zeroes without a data buffer */
        s = clr_io_zero(m->io, len, arr_dev_off(m, dsec), clr_arr_leg_done, l);
    else if (write)
        s = clr_io_write(m->io, buf, len, arr_dev_off(m, dsec), ioflags, clr_arr_leg_done, l);
    else
        s = clr_io_read(m->io, buf, len, arr_dev_off(m, dsec), clr_arr_leg_done, l);
    if (s < 0)
        clr_arr_leg_done(l, s);
}

/* Fails every member whose leg failed. -EAGAIN if one of them was the last
 * copy (the array is frozen); *bad counts failed legs. */
static int legs_settle(struct clr_array *a, struct arr_leg *legs, unsigned n, unsigned *bad)
{
    int rc = 0;

    for (unsigned i = 0; i < n; i++) {
        if (legs[i].res < 0 && legs[i].behind) {
            /* not acked before every node stopped reading it */
            if (clr_arr_behind_failed(a, legs[i].m) == -EAGAIN)
                rc = -EAGAIN;
            continue;
        }
        if (legs[i].res >= 0 || legs[i].behind)
            continue;
        if (bad)
            (*bad)++;
        if (clr_arr_member_failed(a, legs[i].m, legs[i].res) == -EAGAIN)
            rc = -EAGAIN;
    }
    return rc;
}

/* ======================= mirror: RAID1 / RAID10 ======================= */

/* Any bitmap chunk of the sync range [ls, ls+n) still needs resync. */
static bool region_needed(struct clr_array *a, uint64_t ls, uint64_t n)
{
    uint64_t first, last;
    bool needed = false;

    pthread_mutex_lock(&a->bm_lock);
    if (clr_bmc_chunks(&a->bmc, ls, n, &first, &last) == 0)
        for (uint64_t c = first; c <= last && !needed; c++)
            needed = clr_bmc_is_needed(&a->bmc, c);
    pthread_mutex_unlock(&a->bm_lock);
    return needed;
}

/* In-sync copies of @x in map order ("first" is the same on every node). */
static unsigned mirror_sources(const struct arr_view *v, const struct clr_raid_extent *x,
                               uint32_t *idx)
{
    unsigned n = 0;

    for (uint32_t c = 0; c < x->ncopies; c++)
        if (v->st[x->copy[c].disk] == ARR_M_IN_SYNC)
            idx[n++] = c;
    return n;
}

static int mirror_read(struct clr_array *a, uint8_t *buf, uint64_t ls, uint64_t n, bool locked)
{
    static __thread struct clr_raid_extent x;
    struct arr_view v;
    uint32_t src[CLR_RAID_MAX_DISKS];

    clr_arr_view(a, &v);
    while (n) {
        uint64_t k = clr_raid_chunk_piece(&a->g, ls, n);
        unsigned ns, start;
        int rc = -EIO;

        clr_raid_map(&a->g, ls, &x);
        if (k > x.run)
            k = x.run;
        ns = mirror_sources(&v, &x, src);
        if (ns == 0)
            return is_frozen(a) ? -EAGAIN : -EIO;
        /* Hashed round robin: a plain counter aliases with RAID10's
         * alternating copy sets and would starve one leg. */
        start = region_needed(a, ls, k) || clr_arr_cl_read_first(a, ls, ls + k) ? 0
                : (unsigned)(((atomic_fetch_add(&a->rr, 1) * 0x9e3779b97f4a7c15ull) >> 40) % ns);
        for (unsigned t = 0; t < ns; t++) {
            const struct clr_raid_loc *l = &x.copy[src[(start + t) % ns]];
            struct arr_member *m = v.m[l->disk];

            rc = clr_io_pread(m->io, buf, k * ARR_SECTOR, arr_dev_off(m, l->sector));
            if (rc == 0)
                break;
            if (clr_arr_member_failed(a, m, rc) == -EAGAIN)
                return -EAGAIN;
            v.st[l->disk] = ARR_M_FAULTY;
        }
        if (rc)
            return -EIO;
        buf += k * ARR_SECTOR;
        ls += k;
        n -= k;
    }
    return 0;
}

static int mirror_write(struct clr_array *a, const uint8_t *buf, uint64_t ls, uint64_t n,
                        unsigned ioflags, bool *whole)
{
    static __thread struct clr_raid_extent x;
    struct arr_view v;
    struct arr_leg *legs;
    struct clr_io_wg wg;
    unsigned nl = 0, cap, bad = 0;
    int rc;

    clr_arr_view(a, &v);
    cap = (unsigned)((n / (a->g.chunk_sectors ? a->g.chunk_sectors : n) + 2) * a->g.raid_disks * 2);
    legs = calloc(cap, sizeof *legs);
    if (!legs)
        return -ENOMEM;
    *whole = true;
    clr_io_wg_init(&wg);
    while (n) {
        uint64_t k = clr_raid_chunk_piece(&a->g, ls, n);

        clr_raid_map(&a->g, ls, &x);
        if (k > x.run)
            k = x.run;
        for (uint32_t c = 0; c < x.ncopies && nl < cap; c++) {
            struct arr_member *m = v.m[x.copy[c].disk], *wb = v.wb[x.copy[c].disk];

            /* failed by another node: kept current, best effort, until it
             * is removed or re-added (a node that has not processed the
             * same update yet may still read it) */
            if (wb && nl < cap) {
                leg_submit(&legs[nl], &wg, wb, true, (void *)buf, k * ARR_SECTOR, x.copy[c].sector,
                           ioflags);
                legs[nl++].behind = true;
            }
            if (!m || !writable(v.st[x.copy[c].disk])) {
                *whole = false;
                continue;
            }
            if (nl >= cap)
                break;
            if (v.st[x.copy[c].disk] != ARR_M_IN_SYNC)
                *whole = false;
            leg_submit(&legs[nl++], &wg, m, true, (void *)buf, k * ARR_SECTOR, x.copy[c].sector,
                       ioflags);
        }
        if (buf)
            buf += k * ARR_SECTOR;
        ls += k;
        n -= k;
    }
    clr_io_wg_wait(&wg);
    rc = legs_settle(a, legs, nl, &bad);
    if (bad)
        *whole = false;
    free(legs);
    return rc;
}

static void mirror_sync_range(const struct clr_array *a, uint64_t ls, uint64_t n,
                              uint64_t *ss, uint64_t *sn)
{
    *ss = ls;
    *sn = n;
}

static unsigned count_mismatch(const uint8_t *x, const uint8_t *y, uint64_t sectors)
{
    unsigned c = 0;

    for (uint64_t s = 0; s < sectors; s++)
        c += memcmp(x + s * ARR_SECTOR, y + s * ARR_SECTOR, ARR_SECTOR) != 0;
    return c;
}

/* Resync/check/repair one unit of logical sectors: the first in-sync copy
 * is the source; resync writes it to every other live copy (re-added
 * members included); check compares; repair writes where they differ. */
static int mirror_sync_unit(struct clr_array *a, enum arr_action act, uint64_t ss, uint64_t sn,
                            uint64_t *mismatch)
{
    static __thread struct clr_raid_extent x;
    uint8_t *src = NULL, *cmp = NULL;
    struct arr_view v;
    int rc = 0;

    if (ss + sn > a->g.array_sectors)
        sn = ss < a->g.array_sectors ? a->g.array_sectors - ss : 0;
    if (clr_io_alloc((void **)&src, sn * ARR_SECTOR) || clr_io_alloc((void **)&cmp, sn * ARR_SECTOR)) {
        rc = -ENOMEM;
        goto out;
    }
    clr_arr_view(a, &v);
    while (sn && rc == 0) {
        uint64_t k = clr_raid_chunk_piece(&a->g, ss, sn);
        uint32_t s = CLR_RAID_NO_DISK;

        clr_raid_map(&a->g, ss, &x);
        if (k > x.run)
            k = x.run;
        for (uint32_t c = 0; c < x.ncopies; c++) {
            struct arr_member *m = v.m[x.copy[c].disk];

            if (v.st[x.copy[c].disk] != ARR_M_IN_SYNC)
                continue;
            rc = clr_io_pread(m->io, src, k * ARR_SECTOR, arr_dev_off(m, x.copy[c].sector));
            if (rc == 0) {
                s = c;
                break;
            }
            rc = clr_arr_member_failed(a, m, rc);
            if (rc)
                goto out;
            v.st[x.copy[c].disk] = ARR_M_FAULTY;
        }
        if (s == CLR_RAID_NO_DISK) {
            rc = -EIO;
            break;
        }
        for (uint32_t c = 0; c < x.ncopies; c++) {
            uint32_t d = x.copy[c].disk;
            struct arr_member *m = v.m[d];
            bool wr = act == ARR_SYNC_RESYNC;

            if (c == s || !m || !writable(v.st[d]))
                continue;
            if (act != ARR_SYNC_RESYNC) {
                unsigned mm;

                if (v.st[d] != ARR_M_IN_SYNC)
                    continue;
                rc = clr_io_pread(m->io, cmp, k * ARR_SECTOR, arr_dev_off(m, x.copy[c].sector));
                if (rc) {
                    rc = clr_arr_member_failed(a, m, rc);
                    if (rc)
                        goto out;
                    continue;
                }
                mm = count_mismatch(src, cmp, k);
                *mismatch += mm;
                wr = act == ARR_SYNC_REPAIR && mm;
            }
            if (wr) {
                int w = clr_io_pwrite(m->io, src, k * ARR_SECTOR, arr_dev_off(m, x.copy[c].sector), 0);

                if (w && (rc = clr_arr_member_failed(a, m, w)) != 0)
                    goto out;
            }
        }
        ss += k;
        sn -= k;
    }
out:
    clr_io_free(src);
    clr_io_free(cmp);
    return rc;
}

/* Rebuilds @m's device sectors from [ds, ds+n): unmap to the logical
 * sector, copy from the first in-sync copy under the range lock. */
static int64_t mirror_recover_unit(struct clr_array *a, struct arr_member *m, uint64_t ds,
                                   uint64_t n)
{
    static __thread struct clr_raid_extent x;
    struct clr_raid_phys p = { .role = CLR_RAID_ROLE_UNUSED };
    struct arr_range r;
    struct arr_view v;
    uint8_t *buf = NULL;
    uint64_t k;
    int rc = -EIO;

    clr_raid_unmap(&a->g, (uint32_t)m->role, ds, &p);
    if (p.role != CLR_RAID_ROLE_DATA)
        return a->g.chunk_sectors ? (int64_t)(a->g.chunk_sectors - ds % a->g.chunk_sectors) : (int64_t)n;
    clr_raid_map(&a->g, p.lsector, &x);
    k = n < x.run ? n : x.run;
    if (a->g.chunk_sectors && k > a->g.chunk_sectors - ds % a->g.chunk_sectors)
        k = a->g.chunk_sectors - ds % a->g.chunk_sectors;
    /* cluster: the rebuilt range inside our published window first (other
     * nodes write to this member too and must not race the copy) */
    rc = clr_arr_cl_resync_window(a, p.lsector, p.lsector + k, a->sync_sectors);
    if (rc)
        return rc;
    rc = -EIO;
    if (clr_io_alloc((void **)&buf, k * ARR_SECTOR))
        return -ENOMEM;
    clr_arr_defer_begin(a);
    clr_arr_rl_lock(&a->rl, &r, p.lsector, k);
    clr_arr_view(a, &v);
    for (uint32_t c = 0; c < x.ncopies; c++) {
        struct arr_member *s = v.m[x.copy[c].disk];

        if (v.st[x.copy[c].disk] != ARR_M_IN_SYNC || s == m)
            continue;
        rc = clr_io_pread(s->io, buf, k * ARR_SECTOR, arr_dev_off(s, x.copy[c].sector));
        if (rc == 0)
            break;
        if ((rc = clr_arr_member_failed(a, s, rc)) != 0)
            goto out;
        rc = -EIO;
    }
    if (rc == 0) {
        rc = clr_io_pwrite(m->io, buf, k * ARR_SECTOR, arr_dev_off(m, ds), 0);
        if (rc) {
            clr_arr_member_failed(a, m, rc);
            rc = -EIO;
        }
    }
out:
    clr_arr_rl_unlock(&a->rl, &r);
    {
        int drc = clr_arr_defer_end(a);

        if (rc == 0 && drc)
            rc = drc;
    }
    clr_io_free(buf);
    return rc ? rc : (int64_t)k;
}

const struct arr_ops clr_arr_mirror_ops = {
    .read = mirror_read,
    .write = mirror_write,
    .sync_range = mirror_sync_range,
    .sync_unit = mirror_sync_unit,
    .recover_unit = mirror_recover_unit,
};

/* ========================= parity: RAID5 / RAID6 ======================== */

void clr_arr_pool_init(struct clr_array *a)
{
    size_t chunk = (size_t)a->g.chunk_sectors * ARR_SECTOR;
    uint64_t n;

    pthread_mutex_init(&a->sp_lock, NULL);
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
    pthread_mutex_destroy(&a->sp_lock);
    pthread_cond_destroy(&a->sp_cond);
}

static uint8_t *pool_get(struct clr_array *a)
{
    uint8_t *b = NULL;

    pthread_mutex_lock(&a->sp_lock);
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
        pthread_cond_wait(&a->sp_cond, &a->sp_lock);
    }
    pthread_mutex_unlock(&a->sp_lock);
    return b;
}

static void pool_put(struct clr_array *a, uint8_t *b)
{
    pthread_mutex_lock(&a->sp_lock);
    a->sp_free[a->sp_nfree++] = b;
    pthread_cond_signal(&a->sp_cond);
    pthread_mutex_unlock(&a->sp_lock);
}

/* One stripe's worth of working state. */
struct stripe_io {
    struct clr_raid_stripe st;
    unsigned nb;                    /* data blocks + P (+ Q) */
    uint8_t *blk[CLR_RAID_MAX_DISKS + 2];
    uint8_t *scr[CLR_RAID_MAX_DISKS + 2];
    uint64_t dsec;                  /* first device sector of the rows */
    size_t len;                     /* bytes per block */
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
static int stripe_load(struct clr_array *a, struct stripe_io *s, const struct arr_view *v0,
                       bool need_parity)
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
            leg_submit(&legs[nl++], &wg, v.m[blk_disk(s, i)], false, s->blk[i], s->len, s->dsec, 0);
        }
        clr_io_wg_wait(&wg);
        if (nl == 0)
            break;
        rc = legs_settle(a, legs, nl, NULL);
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
            return is_frozen(a) ? -EAGAIN : -EIO;
        if (s->nb == s->st.ndata + 1)
            return clr_parity_raid5_recover(s->st.ndata, s->len, (void *const *)s->blk, lidx[0]);
        return clr_parity_raid6_recover(s->st.ndata, s->len, (void *const *)s->blk, s->st.qexp,
                                        nl, lidx);
    }
}

/* Writes blocks flagged in @wr to their live members. */
static int stripe_write(struct clr_array *a, struct stripe_io *s, const struct arr_view *v,
                        const bool *wr, uint8_t *const *src, unsigned ioflags, bool *whole)
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
        if (!v->m[d] || !writable(v->st[d])) {
            *whole = false;
            continue;
        }
        if (v->st[d] != ARR_M_IN_SYNC)
            *whole = false;
        leg_submit(&legs[nl++], &wg, v->m[d], true, src[i], s->len, s->dsec, ioflags);
    }
    clr_io_wg_wait(&wg);
    rc = legs_settle(a, legs, nl, &bad);
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

/* Writes [ls, ls+k) that lies in one stripe; the range lock is held. */
static int parity_write_stripe(struct clr_array *a, const uint8_t *buf, uint64_t ls, uint64_t k,
                               unsigned ioflags, bool *whole)
{
    uint64_t cs = a->g.chunk_sectors, ndata = a->g.data_disks;
    uint64_t stripe = ls / cs / ndata, first = stripe * cs * ndata;
    uint64_t o = ls - first, kb = o / cs, ke = (o + k - 1) / cs;
    uint64_t r0 = ke > kb ? 0 : o % cs, r1 = ke > kb ? cs : (o + k - 1) % cs + 1;
    bool wr[CLR_RAID_MAX_DISKS + 2] = { false };
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
          !region_needed(a, s.dsec - r0, cs);
    if (rmw) {
        struct arr_leg legs[CLR_RAID_MAX_DISKS + 2];
        struct clr_io_wg wg;
        unsigned nl = 0;

        clr_io_wg_init(&wg);
        for (uint64_t c = kb; c <= ke; c++)
            leg_submit(&legs[nl++], &wg, v.m[blk_disk(&s, (unsigned)c)], false, s.blk[c], s.len, s.dsec, 0);
        for (unsigned i = s.st.ndata; i < s.nb; i++)
            leg_submit(&legs[nl++], &wg, v.m[blk_disk(&s, i)], false, s.blk[i], s.len, s.dsec, 0);
        clr_io_wg_wait(&wg);
        for (unsigned j = 0; j < nl; j++)
            if (legs[j].res < 0)
                rmw = false;
        rc = legs_settle(a, legs, nl, NULL);
        if (rc)
            goto out;
        if (!rmw)
            clr_arr_view(a, &v);        /* fall back to reconstruct-write */
    }
    if (!full && !rmw) {
        rc = stripe_load(a, &s, &v, false);
        if (rc)
            goto out;
    }
    /* new data: into scr[] for RMW (old stays in blk[]), else into blk[] */
    for (uint64_t c = kb; c <= ke; c++) {
        uint64_t c0 = first + c * cs, a0 = ls > c0 ? ls : c0;
        uint64_t a1 = ls + k < c0 + cs ? ls + k : c0 + cs;
        uint8_t *dst = rmw ? s.scr[c] : s.blk[c];

        if (rmw)
            memcpy(dst, s.blk[c], s.len);
        memcpy(dst + (a0 - c0 - r0) * ARR_SECTOR, buf + (a0 - ls) * ARR_SECTOR, (a1 - a0) * ARR_SECTOR);
        wr[c] = true;
    }
    if (rmw) {
        void *oldp[CLR_RAID_MAX_DISKS], *newp[CLR_RAID_MAX_DISKS];
        uint8_t qe[CLR_RAID_MAX_DISKS];
        unsigned nc = 0;

        for (uint64_t c = kb; c <= ke; c++, nc++) {
            oldp[nc] = s.blk[c];
            newp[nc] = s.scr[c];
            qe[nc] = s.st.qexp[c];
        }
        /* RAID5 has no Q: its stripe roles carry no meaningful qexp */
        rc = s.nb > s.st.ndata + 1
             ? clr_parity_rmw(nc, s.len, oldp, newp, qe, s.blk[s.st.ndata], s.blk[s.st.ndata + 1])
             : clr_parity_rmw(nc, s.len, oldp, newp, NULL, s.blk[s.st.ndata], NULL);
        for (uint64_t c = kb; c <= ke; c++)
            s.blk[c] = s.scr[c];
    } else {
        rc = stripe_gen(&s, s.blk[s.st.ndata], s.nb > s.st.ndata + 1 ? s.blk[s.st.ndata + 1] : NULL);
    }
    if (rc)
        goto out;
    for (unsigned i = s.st.ndata; i < s.nb; i++)
        wr[i] = true;
    rc = stripe_write(a, &s, &v, wr, s.blk, ioflags, whole);
out:
    pool_put(a, pool);
    return rc;
}

static int parity_write(struct clr_array *a, const uint8_t *buf, uint64_t ls, uint64_t n,
                        unsigned ioflags, bool *whole)
{
    *whole = true;
    while (n) {
        uint64_t k = clr_raid_stripe_piece(&a->g, ls, n);
        int rc = parity_write_stripe(a, buf, ls, k, ioflags, whole);

        if (rc)
            return rc;
        buf += k * ARR_SECTOR;
        ls += k;
        n -= k;
    }
    return 0;
}

static void parity_sync_range(const struct clr_array *a, uint64_t ls, uint64_t n,
                              uint64_t *ss, uint64_t *sn)
{
    uint64_t per = (uint64_t)a->g.chunk_sectors * a->g.data_disks;
    uint64_t s0 = ls / per, s1 = (ls + n - 1) / per;

    *ss = s0 * a->g.chunk_sectors;
    *sn = (s1 - s0 + 1) * a->g.chunk_sectors;
}

/* Reads a piece of one data chunk whose member is missing or failed, from
 * the rest of its stripe. */
static int parity_read_degraded(struct clr_array *a, uint8_t *buf, uint64_t ls, uint64_t k,
                                bool locked)
{
    uint64_t cs = a->g.chunk_sectors, ndata = a->g.data_disks;
    uint64_t stripe = ls / cs / ndata, o = ls - stripe * cs * ndata;
    uint64_t c = o / cs, r0 = o % cs;
    struct stripe_io s;
    struct arr_range r;
    struct arr_view v;
    uint8_t *pool;
    int rc;

    if (!locked)
        clr_arr_rl_lock(&a->rl, &r, stripe * cs, cs);
    pool = pool_get(a);
    if (!pool) {
        rc = -ENOMEM;
        goto out;
    }
    stripe_setup(a, &s, pool, stripe, r0, r0 + k);
    clr_arr_view(a, &v);
    rc = stripe_load(a, &s, &v, false);
    if (rc == 0)
        memcpy(buf, s.blk[c], k * ARR_SECTOR);
    pool_put(a, pool);
out:
    if (!locked)
        clr_arr_rl_unlock(&a->rl, &r);
    return rc;
}

static int parity_read(struct clr_array *a, uint8_t *buf, uint64_t ls, uint64_t n, bool locked)
{
    static __thread struct clr_raid_extent x;
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
            leg_submit(&legs[nl], &wg, v.m[d], false, buf, k * ARR_SECTOR, x.copy[0].sector, 0);
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
        if (legs[i].m && clr_arr_member_failed(a, legs[i].m, legs[i].res) == -EAGAIN) {
            rc = -EAGAIN;
            break;
        }
        rc = parity_read_degraded(a, bufv[i], lsv[i], kv[i], locked);
    }
out:
    free(legs);
    free(lsv);
    free(kv);
    free(bufv);
    return rc;
}

/* Resync/check/repair whole stripes [ss, ss+sn) (sync = device sectors). */
static int parity_sync_unit(struct clr_array *a, enum arr_action act, uint64_t ss, uint64_t sn,
                            uint64_t *mismatch)
{
    uint64_t cs = a->g.chunk_sectors;
    int rc = 0;

    for (uint64_t st = ss / cs; st * cs < ss + sn && st * cs < a->g.used_dev_sectors && rc == 0; st++) {
        bool wr[CLR_RAID_MAX_DISKS + 2] = { false }, whole = true;
        uint8_t *src[CLR_RAID_MAX_DISKS + 2];
        struct stripe_io s;
        struct arr_view v;
        uint8_t *pool = pool_get(a);
        bool miss = false;

        if (!pool)
            return -ENOMEM;
        stripe_setup(a, &s, pool, st, 0, cs);
        clr_arr_view(a, &v);
        for (unsigned i = 0; i < s.nb; i++)
            miss |= v.st[blk_disk(&s, i)] != ARR_M_IN_SYNC;
        rc = stripe_load(a, &s, &v, act != ARR_SYNC_RESYNC || miss);
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
            rc = stripe_write(a, &s, &v, wr, src, 0, &whole);
next:
        pool_put(a, pool);
    }
    return rc;
}

/* Rebuilds one stripe row of @m. */
static int64_t parity_recover_unit(struct clr_array *a, struct arr_member *m, uint64_t ds,
                                   uint64_t n)
{
    uint64_t cs = a->g.chunk_sectors, st = ds / cs;
    bool wr[CLR_RAID_MAX_DISKS + 2] = { false }, whole = true;
    struct stripe_io s;
    struct arr_range r;
    struct arr_view v;
    uint8_t *pool;
    int rc, b;

    if (ds % cs)
        return (int64_t)(cs - ds % cs);
    clr_arr_rl_lock(&a->rl, &r, st * cs, cs);
    pool = pool_get(a);
    if (!pool) {
        clr_arr_rl_unlock(&a->rl, &r);
        return -ENOMEM;
    }
    stripe_setup(a, &s, pool, st, 0, cs);
    clr_arr_view(a, &v);
    b = clr_raid_stripe_block(&s.st, (uint32_t)m->role);
    rc = stripe_load(a, &s, &v, b >= (int)s.st.ndata);
    if (rc == 0 && b >= 0) {
        wr[b] = true;
        rc = stripe_write(a, &s, &v, wr, s.blk, 0, &whole);
    }
    pool_put(a, pool);
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

/* ============================ public entry points ======================== */

static int checked_read(struct clr_array *a, uint8_t *buf, uint64_t ls, uint64_t n, bool locked)
{
    for (;;) {
        int rc = a->ops->read(a, buf, ls, n, locked);

        if (rc != -EAGAIN)
            return rc;
        rc = clr_arr_wait_thaw(a);
        if (rc)
            return rc;
    }
}

static int range_ok(const struct clr_array *a, uint64_t count, uint64_t offset)
{
    if (offset > a->size_bytes || count > a->size_bytes - offset)
        return -EINVAL;
    return 0;
}

int clr_array_pread(struct clr_array *a, void *buf, uint32_t count, uint64_t offset)
{
    uint64_t s, e;
    uint8_t *b;
    int rc;

    if ((rc = range_ok(a, count, offset)) != 0 || count == 0)
        return rc;
    if (count > ARR_MAX_REQ) {     /* bounded buffers and lock ranges */
        for (uint64_t done = 0; done < count && rc == 0; done += ARR_MAX_REQ)
            rc = clr_array_pread(a, (uint8_t *)buf + done,
                                 count - done < ARR_MAX_REQ ? count - done : ARR_MAX_REQ, offset + done);
        return rc;
    }
    if ((rc = req_enter(a)) != 0)
        return rc;
    atomic_fetch_add(&a->n_reads, 1);
    s = offset & ~(uint64_t)(a->lbs - 1);
    e = (offset + count + a->lbs - 1) & ~(uint64_t)(a->lbs - 1);
    if (s == offset && e == offset + count && aligned_ptr(buf)) {
        rc = checked_read(a, buf, s / ARR_SECTOR, (e - s) / ARR_SECTOR, false);
    } else if ((rc = clr_io_alloc((void **)&b, e - s)) == 0) {
        rc = checked_read(a, b, s / ARR_SECTOR, (e - s) / ARR_SECTOR, false);
        if (rc == 0)
            memcpy(buf, b + (offset - s), count);
        clr_io_free(b);
    }
    req_exit(a);
    return rc;
}

/* Takes the range [ss, ss+sn) for a client write.  Cluster: the write is
 * in flight from then on (a remote drain waits for it); one that falls
 * into a remote resync window backs off until the window moves.
 * @return 0 with the range held, -ESHUTDOWN (not held) when stopping. */
static int admit(struct clr_array *a, struct arr_range *r, uint64_t ss, uint64_t sn)
{
    clr_arr_rl_lock(&a->rl, r, ss, sn);
    while (a->cl) {
        uint64_t g = clr_arr_cl_gen(a);
        bool stop;

        if (!clr_arr_cl_write_blocked(a, ss, ss + sn))
            break;
        clr_arr_rl_unlock(&a->rl, r);
        clr_arr_cl_wait(a, g, 100);
        pthread_mutex_lock(&a->lock);
        stop = a->stopping;
        pthread_mutex_unlock(&a->lock);
        if (stop)
            return -ESHUTDOWN;
        clr_arr_rl_lock(&a->rl, r, ss, sn);
    }
    return 0;
}

/* The write under the range lock and the bitmap, retried across a freeze. */
static int locked_write(struct clr_array *a, const void *buf, uint64_t count, uint64_t offset,
                        unsigned ioflags)
{
    uint64_t s = offset & ~(uint64_t)(a->lbs - 1);
    uint64_t e = (offset + count + a->lbs - 1) & ~(uint64_t)(a->lbs - 1);
    uint64_t ls = s / ARR_SECTOR, n = (e - s) / ARR_SECTOR, ss, sn;
    const uint8_t *src = buf;
    uint8_t *b = NULL;
    struct arr_range r;
    bool whole = false;
    int rc;

    a->ops->sync_range(a, ls, n, &ss, &sn);
    clr_arr_defer_begin(a);
    if (admit(a, &r, ss, sn)) {
        clr_arr_defer_end(a);   /* nothing failed yet: nothing deferred */
        return -ESHUTDOWN;
    }
    if (buf && (s != offset || e != offset + count || !aligned_ptr(buf))) {
        rc = clr_io_alloc((void **)&b, e - s);
        if (rc)
            goto out;
        /* partial first/last blocks: read-modify-write under the lock */
        if (s != offset)
            rc = checked_read(a, b, ls, a->lbs / ARR_SECTOR, true);
        if (rc == 0 && e != offset + count && (e - a->lbs != s || s == offset))
            rc = checked_read(a, b + (e - s - a->lbs), (e - a->lbs) / ARR_SECTOR,
                              a->lbs / ARR_SECTOR, true);
        if (rc)
            goto out;
        memcpy(b + (offset - s), buf, count);
        src = b;
    }
    while ((rc = clr_arr_bm_start_write(a, ss, sn)) == -EAGAIN) {
        /* the bit reached no member: frozen, wait as a data write would */
        struct timespec pause = { 0, 10000000 };

        clr_arr_rl_unlock(&a->rl, &r);
        rc = clr_arr_wait_thaw(a);
        if (rc == 0)
            nanosleep(&pause, NULL);    /* never a hot loop on a dead bitmap */
        if (rc == 0 && admit(a, &r, ss, sn))
            rc = -ESHUTDOWN;
        if (rc) {
            clr_arr_defer_end(a);
            clr_io_free(b);
            return rc;
        }
    }
    if (rc)
        goto out;
    for (;;) {
        /* counted while issuing legs: a remote re-add drains us */
        unsigned ep = clr_arr_wr_enter(a);

        rc = a->ops->write(a, src, ls, n, ioflags, &whole);
        clr_arr_wr_exit(a, ep);
        if (rc != -EAGAIN)
            break;
        /* Frozen: wait for the thaw without holding the range, or another
         * node's RESYNCING over it would hang in our drain (and with it
         * every broadcast in the cluster).  Our bitmap count stays. */
        clr_arr_rl_unlock(&a->rl, &r);
        rc = clr_arr_wait_thaw(a);
        if (rc == 0 && admit(a, &r, ss, sn))
            rc = -ESHUTDOWN;
        if (rc) {
            clr_arr_bm_end_write(a, ss, sn, false);
            clr_arr_defer_end(a);
            clr_io_free(b);
            return rc;
        }
    }
    clr_arr_bm_end_write(a, ss, sn, rc == 0 && whole);
out:
    clr_arr_rl_unlock(&a->rl, &r);
    /* a leg that failed is faulty on disk (and the cluster told) first;
     * if that cannot be done the array froze and the write is not acked */
    {
        int drc = clr_arr_defer_end(a);

        if (rc == 0 && drc)
            rc = drc < 0 ? drc : -EIO;
    }
    clr_io_free(b);
    return rc;
}

int clr_array_pwrite(struct clr_array *a, const void *buf, uint32_t count, uint64_t offset,
                     unsigned flags)
{
    int rc;

    if ((rc = range_ok(a, count, offset)) != 0 || count == 0)
        return rc;
    if (count > ARR_MAX_REQ) {
        for (uint64_t done = 0; done < count && rc == 0; done += ARR_MAX_REQ)
            rc = clr_array_pwrite(a, (const uint8_t *)buf + done,
                                  count - done < ARR_MAX_REQ ? count - done : ARR_MAX_REQ,
                                  offset + done, flags);
        return rc;
    }
    if ((rc = req_enter(a)) != 0)
        return rc;
    atomic_fetch_add(&a->n_writes, 1);
    rc = locked_write(a, buf, count, offset, (flags & CLR_ARRAY_FUA) ? CLR_IO_FUA : 0);
    req_exit(a);
    return rc;
}

int clr_arr_flush_all(struct clr_array *a)
{
    struct arr_member *tgt[ARR_MAX_MEMBERS];
    struct arr_leg legs[ARR_MAX_MEMBERS];
    struct clr_io_wg wg;
    unsigned n = 0;

    pthread_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem; i++)
        if (writable(a->mem[i]->state) && a->mem[i]->io)
            tgt[n++] = a->mem[i];
    pthread_mutex_unlock(&a->lock);
    clr_io_wg_init(&wg);
    for (unsigned i = 0; i < n; i++) {
        legs[i] = (struct arr_leg){ .wg = &wg, .m = tgt[i] };
        clr_io_wg_add(&wg, 1);
        int s = clr_io_flush(tgt[i]->io, clr_arr_leg_done, &legs[i]);

        if (s < 0)
            clr_arr_leg_done(&legs[i], s);
    }
    clr_io_wg_wait(&wg);
    return legs_settle(a, legs, n, NULL);
}

int clr_array_flush(struct clr_array *a)
{
    int rc;

    if ((rc = req_enter(a)) != 0)
        return rc;
    for (;;) {
        rc = clr_arr_flush_all(a);
        if (rc != -EAGAIN)
            break;
        rc = clr_arr_wait_thaw(a);
        if (rc)
            break;
    }
    req_exit(a);
    return rc;
}

int clr_array_trim(struct clr_array *a, uint32_t count, uint64_t offset, unsigned flags)
{
    uint64_t s, e;
    int rc;

    if ((rc = range_ok(a, count, offset)) != 0 || count == 0)
        return rc;
    /* A bare discard on each leg could leave copies reading differently
     * (and parity wrong), so mirrors pass the aligned middle down as a
     * deallocating zero on every leg, which keeps the copies identical;
     * parity levels treat trim as advisory and keep the data. */
    if (a->g.pers->has_parity)
        return 0;
    s = (offset + a->lbs - 1) & ~(uint64_t)(a->lbs - 1);
    e = (offset + count) & ~(uint64_t)(a->lbs - 1);
    if (e <= s)
        return 0;
    if ((rc = req_enter(a)) != 0)
        return rc;
    for (uint64_t p = s; p < e && rc == 0; p += ARR_MAX_REQ)
        rc = locked_write(a, NULL, e - p < ARR_MAX_REQ ? e - p : ARR_MAX_REQ, p, 0);
    atomic_fetch_add(&a->n_writes, 1);
    req_exit(a);
    if (rc == 0 && (flags & CLR_ARRAY_FUA))
        rc = clr_array_flush(a);
    return rc;
}

/* Writes zeroes from a buffer over [offset, offset+count). */
static int zero_by_writes(struct clr_array *a, uint64_t count, uint64_t offset, unsigned ioflags)
{
    const uint64_t step = 1u << 20;
    uint8_t *z;
    int rc;

    if (count == 0)
        return 0;
    rc = clr_io_alloc((void **)&z, step);
    if (rc)
        return rc;
    memset(z, 0, step);
    for (uint64_t done = 0; done < count && rc == 0;) {
        uint64_t k = count - done < step ? count - done : step;

        rc = locked_write(a, z, k, offset + done, ioflags);
        done += k;
    }
    clr_io_free(z);
    return rc;
}

int clr_array_zero(struct clr_array *a, uint32_t count, uint64_t offset, unsigned flags)
{
    unsigned ioflags = (flags & CLR_ARRAY_FUA) ? CLR_IO_FUA : 0;
    uint64_t s, e;
    int rc;

    if ((rc = range_ok(a, count, offset)) != 0 || count == 0)
        return rc;
    if ((rc = req_enter(a)) != 0)
        return rc;
    s = (offset + a->lbs - 1) & ~(uint64_t)(a->lbs - 1);
    e = (offset + count) & ~(uint64_t)(a->lbs - 1);
    if (a->g.pers->has_parity || ioflags || e <= s) {
        /* parity must be computed; FUA needs a data write */
        rc = zero_by_writes(a, count, offset, ioflags);
    } else {
        /* mirrors: every leg zeroes the aligned middle itself */
        rc = zero_by_writes(a, s - offset, offset, 0);
        for (uint64_t p = s; p < e && rc == 0; p += ARR_MAX_REQ)
            rc = locked_write(a, NULL, e - p < ARR_MAX_REQ ? e - p : ARR_MAX_REQ, p, 0);
        if (rc == 0)
            rc = zero_by_writes(a, offset + count - e, e, 0);
    }
    atomic_fetch_add(&a->n_writes, 1);
    req_exit(a);
    return rc;
}
