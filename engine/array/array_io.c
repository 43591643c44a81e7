/* clraid array core: the data path. The public entry points align the
 * request, take the range lock and the bitmap, then dispatch to the
 * level's operations: mirror (RAID1/10) or parity (RAID5/6). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "array/array_internal.h"
#include "raid/parity.h"

#define ARR_MAX_REQ (32u << 20)

/* ---- request entry, freeze ---- */

static int req_enter(struct clr_array *a)
{
    int rc = 0;

    clr_mutex_lock(&a->lock);
    while (a->quiesce && !a->stopping)
        clr_cond_wait(&a->cond, &a->lock);
    if (a->frozen && !a->thaw_err && a->running && !a->stopping) {
        a->blocked++;
        while (a->frozen && !a->thaw_err && !a->stopping)
            clr_cond_wait(&a->cond, &a->lock);
        a->blocked--;
    }
    if (!a->running || a->stopping)
        rc = -ESHUTDOWN;
    else if (a->frozen && a->thaw_err)
        rc = -EIO;
    else
        a->inflight++;
    clr_mutex_unlock(&a->lock);
    atomic_store(&a->last_client_ns, clr_arr_now_ns());
    return rc;
}

static void req_exit(struct clr_array *a)
{
    clr_mutex_lock(&a->lock);
    /* the only waiters for the count are a quiesce (detach_removed) and a
     * stop, both flagged under this lock before they wait; a broadcast
     * for every request woke the threads that share a->cond */
    if (--a->inflight == 0 && (a->quiesce || a->stopping))
        pthread_cond_broadcast(&a->cond);
    clr_mutex_unlock(&a->lock);
}

/* ============================ public entry points ======================== */

static int checked_read(struct clr_array *a, struct arr_req *rq, uint8_t *buf, uint64_t ls, uint64_t n,
                        bool locked)
{
    for (;;) {
        int rc = a->ops->read(a, rq, buf, ls, n, locked);

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
    if (count > ARR_MAX_REQ) { /* bounded buffers and lock ranges */
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
    if (s == offset && e == offset + count && arr_mem_aligned(a, buf)) {
        rc = checked_read(a, NULL, buf, s / ARR_SECTOR, (e - s) / ARR_SECTOR, false);
    } else if ((rc = clr_arr_rb_get(a, e - s, &b)) == 0) {
        rc = checked_read(a, NULL, b, s / ARR_SECTOR, (e - s) / ARR_SECTOR, false);
        if (rc == 0)
            memcpy(buf, b + (offset - s), count);
        clr_arr_rb_put(a, b, e - s);
    }
    req_exit(a);
    return rc;
}

static bool stopping(struct clr_array *a)
{
    bool stop;

    clr_mutex_lock(&a->lock);
    stop = a->stopping;
    clr_mutex_unlock(&a->lock);
    return stop;
}

/* Takes the range [ss, ss+sn) for a client write.  Cluster: the write is
 * in flight from then on (a remote drain waits for it); one that falls
 * into a remote resync window or a write hold backs off until the window
 * moves or the hold lifts.  The wait has no time limit: every change of
 * the window or the hold bumps the cluster generation (cluster/mdc.c calls
 * changed() under its mutex after the change), and a stop sets
 * a->stopping before it bumps it.  With the generation read first, a
 * change or a stop after that read ends the wait, and one before it is
 * seen by the checks that follow the read.
 * @return 0 with the range held, -ESHUTDOWN (not held) when stopping. */
static int admit(struct clr_array *a, struct arr_range *r, uint64_t ss, uint64_t sn)
{
    clr_arr_rl_lock(&a->rl, r, ss, sn);
    while (a->cl) {
        uint64_t g = arr_cl_gen(a);

        if (!arr_cl_write_blocked(a, ss, ss + sn))
            break;
        clr_arr_rl_unlock(&a->rl, r);
        if (stopping(a))
            return -ESHUTDOWN;
        atomic_fetch_add(&a->adm_waiting, 1);
        arr_cl_wait(a, g, 0);
        atomic_fetch_sub(&a->adm_waiting, 1);
        if (stopping(a))
            return -ESHUTDOWN;
        clr_arr_rl_lock(&a->rl, r, ss, sn);
    }
    return 0;
}

/* The stripe a RAID5/6 write's zone lock is taken for: its first (sync
 * sectors are stripe rows there).  Mirrors have no zones (nor chunks). */
static uint64_t zone_stripe(const struct clr_array *a, uint64_t ss)
{
    return a->zone_stripes ? ss / a->g.chunk_sectors : 0;
}

/* Frozen: wait for the thaw without holding the range, or another node's
 * RESYNCING over it would hang in our drain (and with it every broadcast
 * in the cluster); then take the range again.  @return 0 with the range
 * held, else an error with it released. */
static int thaw_and_readmit(struct clr_array *a, struct arr_range *r, uint64_t ss, uint64_t sn,
                            struct arr_zone **ztok)
{
    int rc;

    /* the zone too: another node may need it to get to the thaw */
    arr_cl_zone_exit(a, *ztok);
    *ztok = NULL;
    clr_arr_rl_unlock(&a->rl, r);
    rc = clr_arr_wait_thaw(a);
    if (rc == 0 && admit(a, r, ss, sn))
        rc = -ESHUTDOWN;
    if (rc == 0 && (rc = arr_cl_zone_enter(a, ARR_ZONE_WRITE, zone_stripe(a, ss), ztok)) != 0)
        clr_arr_rl_unlock(&a->rl, r);
    return rc;
}

/* A write not aligned to whole logical blocks: the first and last blocks
 * are read under the range lock and @buf copied over them into *out. */
static int merge_edges(struct clr_array *a, struct arr_req *rq, const void *buf, uint64_t count,
                       uint64_t offset, uint64_t s, uint64_t e, uint8_t **out)
{
    uint64_t ls = s / ARR_SECTOR, bs = a->lbs / ARR_SECTOR;
    uint8_t *b;
    int rc = clr_arr_rb_get(a, e - s, &b);

    if (rc)
        return rc;
    *out = b;
    if (s != offset)
        rc = checked_read(a, rq, b, ls, bs, true);
    if (rc == 0 && e != offset + count && (e - a->lbs != s || s == offset))
        rc = checked_read(a, rq, b + (e - s - a->lbs), (e - a->lbs) / ARR_SECTOR, bs, true);
    if (rc == 0)
        memcpy(b + (offset - s), buf, count);
    return rc;
}

/* The bit of every chunk the write touches is on disk before a leg goes
 * out.  If no in-sync member took it, the data must not go out either:
 * the array is frozen and the write waits for a thaw, as for a write to
 * the last device.  @return 0 with the range held, else not held. */
static int bitmap_before_data(struct clr_array *a, struct arr_req *rq, struct arr_range *r, uint64_t ss,
                              uint64_t sn, struct arr_zone **ztok)
{
    int rc;

    while ((rc = clr_arr_bm_start_write(a, rq, ss, sn)) == -EAGAIN) {
        clr_mutex_lock(&a->lock);
        if (!a->frozen && !a->stopping)
            clr_arr_log(
                a, LOG_CRIT,
                "no in-sync member took the write-intent bitmap: array frozen; 'clraid thaw %s --error' fails the blocked I/O",
                a->name);
        a->frozen = true;
        clr_mutex_unlock(&a->lock);
        rc = thaw_and_readmit(a, r, ss, sn, ztok);
        if (rc)
            return rc;
    }
    if (rc) {
        arr_cl_zone_exit(a, *ztok);
        *ztok = NULL;
        clr_arr_rl_unlock(&a->rl, r);
    }
    return rc;
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
    struct arr_req req, *rq = &req;
    struct arr_zone *ztok = NULL;
    struct arr_range r;
    bool whole = false, held = true;
    int rc = 0, drc;

    if (a->zone_stripes) {
        /* clustered RAID5/6: one zone lock per piece, never two at once */
        uint64_t zl = (uint64_t)a->zone_stripes * a->g.chunk_sectors * a->g.data_disks * ARR_SECTOR;
        uint64_t cut = (offset / zl + 1) * zl;

        if (offset + count > cut) {
            rc = locked_write(a, buf, cut - offset, offset, ioflags);
            return rc ? rc
                      : locked_write(a, buf ? (const uint8_t *)buf + (cut - offset) : NULL,
                                     offset + count - cut, cut, ioflags);
        }
    }
    a->ops->sync_range(a, ls, n, &ss, &sn);
    clr_arr_req_begin(a, rq);
    if (admit(a, &r, ss, sn)) {
        clr_arr_req_end(a, rq); /* nothing failed yet: nothing deferred */
        return -ESHUTDOWN;
    }
    /* after the range and the cluster's window: a write never holds its
     * zone while it waits for a remote resync (doc/architecture.md §7) */
    rc = arr_cl_zone_enter(a, ARR_ZONE_WRITE, zone_stripe(a, ss), &ztok);
    if (rc) {
        clr_arr_rl_unlock(&a->rl, &r);
        clr_arr_req_end(a, rq);
        return rc;
    }
    if (buf && (s != offset || e != offset + count || !arr_mem_aligned(a, buf))) {
        rc = merge_edges(a, rq, buf, count, offset, s, e, &b);
        src = b;
    }
    if (rc == 0) {
        rc = bitmap_before_data(a, rq, &r, ss, sn, &ztok);
        held = rc == 0;
    }
    while (rc == 0) {
        /* counted while issuing legs: a remote re-add drains us */
        unsigned ep = clr_arr_wr_enter(a);

        rc = a->ops->write(a, rq, src, ls, n, ioflags, &whole);
        clr_arr_wr_exit(a, ep);
        if (rc != -EAGAIN) {
            clr_arr_bm_end_write(a, ss, sn, rc == 0 && whole);
            break;
        }
        /* frozen: our bitmap count stays while we wait */
        rc = thaw_and_readmit(a, &r, ss, sn, &ztok);
        if (rc) {
            held = false;
            clr_arr_bm_end_write(a, ss, sn, false);
        }
    }
    if (held) {
        arr_cl_zone_exit(a, ztok);
        clr_arr_rl_unlock(&a->rl, &r);
    }
    /* a leg that failed is faulty on disk (and the cluster told) first;
     * if that cannot be done the array froze and the write is not acked */
    drc = clr_arr_req_end(a, rq);
    if (rc == 0 && drc)
        rc = drc < 0 ? drc : -EIO;
    clr_arr_rb_put(a, b, e - s);
    return rc;
}

int clr_array_pwrite(struct clr_array *a, const void *buf, uint32_t count, uint64_t offset, unsigned flags)
{
    int rc;

    if ((rc = range_ok(a, count, offset)) != 0 || count == 0)
        return rc;
    if (count > ARR_MAX_REQ) {
        for (uint64_t done = 0; done < count && rc == 0; done += ARR_MAX_REQ)
            rc = clr_array_pwrite(a, (const uint8_t *)buf + done,
                                  count - done < ARR_MAX_REQ ? count - done : ARR_MAX_REQ, offset + done,
                                  flags);
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

    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem; i++)
        if (arr_writable(a->mem[i]->state) && a->mem[i]->io)
            tgt[n++] = a->mem[i];
    clr_mutex_unlock(&a->lock);
    clr_io_wg_init(&wg);
    for (unsigned i = 0; i < n; i++) {
        legs[i] = (struct arr_leg){ .wg = &wg, .m = tgt[i] };
        clr_io_wg_add(&wg, 1);
        int s = clr_io_flush(tgt[i]->io, clr_arr_leg_done, &legs[i]);

        if (s < 0)
            clr_arr_leg_done(&legs[i], s);
    }
    clr_io_wg_wait(&wg);
    return clr_arr_legs_settle(a, NULL, legs, n, NULL);
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
