/* clraid array core: the RAID1/RAID10 data path and sync units (the
 * mirror struct arr_ops).  Below: state, super, bitmap, legs. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "array/array_internal.h"
#include "../../agent/policy.h"

/* In-sync copies of @x in map order ("first" is the same on every node);
 * copies under a policy decision (suspect here) after the others, *clean
 * counts those before them. */
static unsigned mirror_sources(const struct arr_view *v, const struct clr_raid_extent *x, uint32_t *idx,
                               unsigned *clean)
{
    unsigned n = 0, sus = 0;

    for (uint32_t c = 0; c < x->ncopies; c++)
        if (v->st[x->copy[c].disk] == ARR_M_IN_SYNC) {
            if (v->suspect[x->copy[c].disk])
                sus++;
            else
                idx[n++] = c;
        }
    *clean = n;
    for (uint32_t c = 0; sus && c < x->ncopies; c++)
        if (v->st[x->copy[c].disk] == ARR_M_IN_SYNC && v->suspect[x->copy[c].disk]) {
            idx[n++] = c;
            sus--;
        }
    return n;
}

static int mirror_read(struct clr_array *a, struct arr_req *rq, uint8_t *buf, uint64_t ls, uint64_t n,
                       bool locked)
{
    struct clr_raid_extent x; /* 2 KiB: on the stack, per request */
    struct arr_view v;
    uint32_t src[CLR_RAID_MAX_DISKS];

    clr_arr_view(a, &v);
    while (n) {
        uint64_t k = clr_raid_chunk_piece(&a->g, ls, n);
        unsigned ns, nc, start;
        struct arr_member *bad_copy = NULL;
        int rc = -EIO;

        clr_raid_map(&a->g, ls, &x);
        if (k > x.run)
            k = x.run;
        ns = mirror_sources(&v, &x, src, &nc);
        if (ns == 0)
            return clr_arr_is_frozen(a) ? -EAGAIN : -EIO;
        if (nc == 0)
            nc = ns;
        /* Hashed round robin: a plain counter aliases with RAID10's
         * alternating copy sets and would starve one leg. */
        start = clr_arr_bm_region_needed(a, ls, k) || arr_cl_read_first(a, ls, ls + k)
                    ? 0
                    : (unsigned)(((atomic_fetch_add(&a->rr, 1) * 0x9e3779b97f4a7c15ull) >> 40) % nc);
        for (unsigned t = 0; t < ns; t++) {
            const struct clr_raid_loc *l = &x.copy[src[t < nc ? (start + t) % nc : t]];
            struct arr_member *m = v.m[l->disk];
            bool kept;

            rc = clr_io_pread(m->io, buf, k * ARR_SECTOR, arr_dev_off(m, l->sector));
            if (rc == 0)
                break;
            if (clr_arr_read_failed(a, rq, m, rc, &kept) == -EAGAIN)
                return -EAGAIN;
            if (kept && clr_policy_errno_class(rc) == CLR_POL_ERR_MEDIA)
                bad_copy = m;
            v.st[l->disk] = ARR_M_FAULTY;
        }
        if (rc)
            return -EIO;
        if (bad_copy) {
            clr_arr_rewrite_later(a, bad_copy, ls, k);
            bad_copy = NULL;
        }
        buf += k * ARR_SECTOR;
        ls += k;
        n -= k;
    }
    return 0;
}

static int mirror_write(struct clr_array *a, struct arr_req *rq, const uint8_t *buf, uint64_t ls, uint64_t n,
                        unsigned ioflags, bool *whole)
{
    struct clr_raid_extent x; /* 2 KiB: on the stack, per request */
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
                clr_arr_leg_submit(&legs[nl], &wg, wb, true, (void *)buf, k * ARR_SECTOR, x.copy[c].sector,
                                   ioflags);
                legs[nl++].behind = true;
            }
            if (!m || !arr_writable(v.st[x.copy[c].disk])) {
                *whole = false;
                continue;
            }
            if (nl >= cap)
                break;
            if (v.st[x.copy[c].disk] != ARR_M_IN_SYNC)
                *whole = false;
            clr_arr_leg_submit(&legs[nl++], &wg, m, true, (void *)buf, k * ARR_SECTOR, x.copy[c].sector,
                               ioflags);
        }
        if (buf)
            buf += k * ARR_SECTOR;
        ls += k;
        n -= k;
    }
    clr_io_wg_wait(&wg);
    rc = clr_arr_legs_settle(a, rq, legs, nl, &bad);
    if (bad)
        *whole = false;
    free(legs);
    return rc;
}

static void mirror_sync_range(const struct clr_array *a, uint64_t ls, uint64_t n, uint64_t *ss, uint64_t *sn)
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
static int mirror_sync_unit(struct clr_array *a, struct arr_req *rq, enum arr_action act, uint64_t ss,
                            uint64_t sn, uint64_t *mismatch)
{
    struct clr_raid_extent x; /* 2 KiB: on the stack, per request */
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
        /* copies whose read failed and that the policy keeps in sync
         * (row 1): written from the source (repair too), then read back,
         * as every suspect copy a resync writes */
        bool redo[CLR_RAID_MAX_DISKS] = { false };

        clr_raid_map(&a->g, ss, &x);
        if (k > x.run)
            k = x.run;
        /* the source: a copy that is not suspect first */
        for (int pass = 0; pass < 2 && s == CLR_RAID_NO_DISK; pass++)
            for (uint32_t c = 0; c < x.ncopies; c++) {
                uint32_t d = x.copy[c].disk;
                struct arr_member *m = v.m[d];
                bool kept;

                if (v.st[d] != ARR_M_IN_SYNC || redo[c] || v.suspect[d] != (pass == 1))
                    continue;
                rc = clr_io_pread(m->io, src, k * ARR_SECTOR, arr_dev_off(m, x.copy[c].sector));
                if (rc == 0) {
                    s = c;
                    break;
                }
                rc = clr_arr_read_failed(a, rq, m, rc, &kept);
                if (rc)
                    goto out;
                if (kept)
                    redo[c] = true;
                else
                    v.st[d] = ARR_M_FAULTY;
            }
        if (s == CLR_RAID_NO_DISK) {
            rc = -EIO;
            break;
        }
        for (uint32_t c = 0; c < x.ncopies; c++) {
            uint32_t d = x.copy[c].disk;
            struct arr_member *m = v.m[d];
            bool wr = act == ARR_SYNC_RESYNC;

            if (c == s || !m || !arr_writable(v.st[d]))
                continue;
            if (redo[c]) {
                wr = act != ARR_SYNC_CHECK;
            } else if (act != ARR_SYNC_RESYNC) {
                unsigned mm;

                if (v.st[d] != ARR_M_IN_SYNC)
                    continue;
                rc = clr_io_pread(m->io, cmp, k * ARR_SECTOR, arr_dev_off(m, x.copy[c].sector));
                if (rc) {
                    rc = clr_arr_member_failed(a, rq, m, rc);
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

                if (w) {
                    clr_arr_note_io_error(a, m, w, true);
                    if ((rc = clr_arr_member_failed_counted(a, rq, m, w)) != 0)
                        goto out;
                } else if (redo[c] || v.suspect[d]) {
                    /* md's corrected read: a copy that failed a read
                     * here must read back what was written */
                    w = clr_io_pread(m->io, cmp, k * ARR_SECTOR, arr_dev_off(m, x.copy[c].sector));
                    if (w == 0 && count_mismatch(src, cmp, k))
                        w = -EILSEQ;
                    clr_arr_rewrite_done(a, m, w);
                    if (w && (rc = clr_arr_member_failed_counted(a, rq, m, w)) != 0)
                        goto out;
                }
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
static int64_t mirror_recover_unit(struct clr_array *a, struct arr_member *m, uint64_t ds, uint64_t n)
{
    struct clr_raid_extent x; /* 2 KiB: on the stack, per request */
    struct clr_raid_phys p = { .role = CLR_RAID_ROLE_UNUSED };
    struct arr_req rq;
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
    rc = arr_cl_resync_window(a, p.lsector, p.lsector + k, a->sync_sectors);
    if (rc)
        return rc;
    rc = -EIO;
    if (clr_io_alloc((void **)&buf, k * ARR_SECTOR))
        return -ENOMEM;
    clr_arr_req_begin(a, &rq);
    clr_arr_rl_lock(&a->rl, &r, p.lsector, k);
    clr_arr_view(a, &v);
    for (uint32_t c = 0; c < x.ncopies; c++) {
        struct arr_member *s = v.m[x.copy[c].disk];

        if (v.st[x.copy[c].disk] != ARR_M_IN_SYNC || s == m)
            continue;
        rc = clr_io_pread(s->io, buf, k * ARR_SECTOR, arr_dev_off(s, x.copy[c].sector));
        if (rc == 0)
            break;
        if ((rc = clr_arr_member_failed(a, &rq, s, rc)) != 0)
            goto out;
        rc = -EIO;
    }
    if (rc == 0) {
        rc = clr_io_pwrite(m->io, buf, k * ARR_SECTOR, arr_dev_off(m, ds), 0);
        if (rc) {
            clr_arr_member_failed(a, &rq, m, rc);
            rc = -EIO;
        }
    }
out:
    clr_arr_rl_unlock(&a->rl, &r);
    {
        int drc = clr_arr_req_end(a, &rq);

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
