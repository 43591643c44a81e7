/* clraid array core: this slot's write-intent bitmap: bits set and on
 * disk before a data leg goes out (batched flush generations), lazy
 * clearing by the sweep daemon.  Below: array_state.c, array_super.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "array/array_internal.h"

/* ---- bitmap ---- */

struct bm_fail {
    struct arr_member *m;
    int err;
};

/* Writes this slot's region (sb + bits) to every live member with FUA.
 * Called with bm_lock held and bm_flushing set; drops bm_lock meanwhile.
 * Called with bm_lock held and bm_flushing set; drops bm_lock meanwhile.
 * A member whose write failed is marked Faulty here (no I/O) and left in
 * @fails: the superblock update and its broadcast happen after the flush
 * (a flusher must never wait for the cluster: a local write waits on it
 * under its range lock, and a remote drain waits on that write).
 * @return 0 if an in-sync member took the bits, else -EIO. */
static int bm_write_locked(struct clr_array *a, struct bm_fail *fails, unsigned *nf)
{
    struct arr_member *tgt[ARR_MAX_MEMBERS];
    struct arr_leg legs[ARR_MAX_MEMBERS];
    bool insync[ARR_MAX_MEMBERS];
    struct clr_bitmap_sb b = a->bsb;
    struct clr_io_wg wg;
    unsigned n = 0, ok = 0;

    *nf = 0;
    if (a->crashed)
        return 0;
    memset(a->bm_buf, 0, a->bm_write_bytes);
    clr_bmc_render(&a->bmc, 0, a->bmc.nchunks, a->bm_buf + CLR_BITMAP_SB_BYTES);
    clr_mutex_unlock(&a->bm_lock);

    clr_mutex_lock(&a->lock);
    b.events = a->sb.events;
    /* As md (md-bitmap.c, bitmap_endwrite): on a non-degraded array bits
     * may be cleared from this event on.  Kernel md re-adds a member older
     * than events_cleared with a full recovery, not from the bitmap.  (Set
     * at the flush before the writes complete: never below md's value.) */
    if (!a->degraded && b.events_cleared < b.events)
        b.events_cleared = b.events;
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];

        if ((m->state == ARR_M_IN_SYNC || m->state == ARR_M_REBUILDING) && m->io) {
            insync[n] = m->state == ARR_M_IN_SYNC;
            tgt[n++] = m;
        }
    }
    clr_mutex_unlock(&a->lock);
    clr_bitmap_sb_encode(&b, a->bm_buf, CLR_BITMAP_SB_BYTES);
    clr_io_wg_init(&wg);
    for (unsigned i = 0; i < n; i++) {
        legs[i] = (struct arr_leg){ .wg = &wg, .m = tgt[i] };
        clr_io_wg_add(&wg, 1);
        int s = clr_io_write(tgt[i]->io, a->bm_buf, a->bm_write_bytes, a->bm_off, CLR_IO_FUA,
                             clr_arr_leg_done, &legs[i]);
        if (s < 0)
            clr_arr_leg_done(&legs[i], s);
    }
    clr_io_wg_wait(&wg);
    atomic_fetch_add(&a->n_bm_flushes, 1);
    for (unsigned i = 0; i < n; i++) {
        if (legs[i].res >= 0) {
            ok += insync[i];
            continue;
        }
        clr_mutex_lock(&a->lock);
        bool was = tgt[i]->state == ARR_M_FAULTY;

        if (clr_arr_policy_applies_locked(a, tgt[i], clr_arr_now_ms())) {
            /* the policy daemon decides: clr_arr_member_failed() below
             * holds the flushing writer until it has */
        } else if (!clr_arr_mark_faulty_locked(a, tgt[i])) {
            if (!a->frozen)
                clr_arr_log(a, LOG_CRIT, "%s: bitmap write failed (%s) on the last copy: array frozen",
                            tgt[i]->path, strerror(-legs[i].res));
            a->frozen = true;
        } else if (!was) {
            clr_arr_log(a, LOG_ERR, "%s: bitmap write failed (%s): member marked faulty, array runs degraded",
                        tgt[i]->path, strerror(-legs[i].res));
        }
        clr_mutex_unlock(&a->lock);
        fails[(*nf)++] = (struct bm_fail){ tgt[i], legs[i].res };
    }
    clr_mutex_lock(&a->bm_lock);
    if (ok && b.events_cleared > a->bsb.events_cleared)
        a->bsb.events_cleared = b.events_cleared;
    return ok ? 0 : -EIO;
}

/* Waits until generation @gen of the in-memory bitmap is on disk; the
 * first waiter writes, later ones ride on its flush or the next one.
 * Caller holds bm_lock (dropped meanwhile). @return 0 if a flush covering
 * @gen reached an in-sync member, else -EIO. */
static int bm_flush_to_locked(struct clr_array *a, struct arr_req *rq, uint64_t gen)
{
    while (a->bm_done_gen < gen) {
        struct bm_fail fails[ARR_MAX_MEMBERS];
        unsigned nf;

        if (a->bm_flushing) {
            clr_cond_wait(&a->bm_cond, &a->bm_lock);
            continue;
        }
        uint64_t g = a->bm_want_gen;

        a->bm_flushing = true;
        if (bm_write_locked(a, fails, &nf) == 0)
            a->bm_ok_gen = g;
        a->bm_flushing = false;
        a->bm_done_gen = g;
        pthread_cond_broadcast(&a->bm_cond);
        if (nf) {
            /* recorded and announced outside the flush */
            clr_mutex_unlock(&a->bm_lock);
            clr_arr_bm_set_degraded(a);
            for (unsigned i = 0; i < nf; i++)
                clr_arr_note_io_error(a, fails[i].m, fails[i].err, true);
            for (unsigned i = 0; i < nf; i++)
                clr_arr_member_failed_counted(a, rq, fails[i].m, fails[i].err);
            clr_mutex_lock(&a->bm_lock);
        }
    }
    return a->bm_ok_gen >= gen ? 0 : -EIO;
}

/* The probe (doc/architecture.md §3.3) touches only this node's own slot:
 * no other node writes it while this one lives, and holding the flusher
 * role keeps our own flusher off it, so the bytes written back are the
 * bytes on the disk.  A probe of a hung member holds the flusher role as
 * long as it hangs; so would a flush to it, if it is in use. */
int clr_arr_bm_probe(struct clr_array *a, struct arr_member *m)
{
    void *buf = NULL;
    int rc;

    if (clr_io_alloc(&buf, CLR_IO_ALIGN) != 0)
        return -ENOMEM;
    clr_mutex_lock(&a->bm_lock);
    while (a->bm_flushing)
        clr_cond_wait(&a->bm_cond, &a->bm_lock);
    a->bm_flushing = true;
    clr_mutex_unlock(&a->bm_lock);
    rc = clr_io_pread(m->io, buf, CLR_IO_ALIGN, a->bm_off);
    if (rc >= 0)
        rc = clr_io_pwrite(m->io, buf, CLR_IO_ALIGN, a->bm_off, CLR_IO_FUA);
    clr_mutex_lock(&a->bm_lock);
    a->bm_flushing = false;
    pthread_cond_broadcast(&a->bm_cond);
    clr_mutex_unlock(&a->bm_lock);
    free(buf);
    return rc < 0 ? rc : 0;
}

int clr_arr_bm_start_write(struct clr_array *a, struct arr_req *rq, uint64_t ss, uint64_t sn)
{
    int rc;

    if (ss + sn > a->sync_sectors)
        sn = a->sync_sectors - ss;
    clr_mutex_lock(&a->bm_lock);
    /* a chunk's write counter is full: wait for a write to end there,
     * as md waits on overflow_wait */
    while ((rc = clr_bmc_start_write(&a->bmc, ss, sn, NULL, NULL)) == -EBUSY)
        clr_cond_wait(&a->bm_cond, &a->bm_lock);
    if (rc < 0) {
        clr_mutex_unlock(&a->bm_lock);
        return rc;
    }
    /* Bits this write needs are on disk once the flush that carries the
     * latest clean -> dirty change is done, whether we made the change or
     * a concurrent writer did (its flush may still be in progress).  In
     * steady state that flush is long done: no wait, no I/O. */
    if (rc > 0 || (a->bm_ok_gen < a->bm_set_gen && a->bm_done_gen >= a->bm_set_gen))
        a->bm_set_gen = ++a->bm_want_gen; /* new bits, or the last try failed */
    if (bm_flush_to_locked(a, rq, a->bm_set_gen) != 0) {
        /* no in-sync member holds the bit: the data must not go out (the
         * caller waits for a thaw, as for a write to the last device) */
        clr_bmc_end_write(&a->bmc, ss, sn, false);
        clr_mutex_unlock(&a->bm_lock);
        return -EAGAIN;
    }
    clr_mutex_unlock(&a->bm_lock);
    return 0;
}

void clr_arr_bm_end_write(struct clr_array *a, uint64_t ss, uint64_t sn, bool ok)
{
    if (ss + sn > a->sync_sectors)
        sn = a->sync_sectors - ss;
    clr_mutex_lock(&a->bm_lock);
    clr_bmc_end_write(&a->bmc, ss, sn, ok);
    pthread_cond_broadcast(&a->bm_cond); /* counters: see start_write */
    clr_mutex_unlock(&a->bm_lock);
}

int clr_arr_bm_flush(struct clr_array *a)
{
    int rc;

    clr_mutex_lock(&a->bm_lock);
    rc = bm_flush_to_locked(a, NULL, ++a->bm_want_gen);
    clr_mutex_unlock(&a->bm_lock);
    return rc;
}

/* Clears idle bits in memory; true if any went clean. Caller holds bm_lock. */
static bool bm_sweep_locked(struct clr_array *a)
{
    uint64_t cleared[256];
    bool any = false;
    size_t n;

    /* All-dirty mode keeps its bits until the clean stop. */
    if ((a->flags & CLR_ARRAY_BITMAP_ALL_DIRTY) && !a->stopping)
        return false;
    do {
        n = clr_bmc_sweep(&a->bmc, cleared, 256);
        any |= n > 0;
    } while (n == 256);
    return any;
}

void *clr_arr_bm_daemon(void *arg)
{
    struct clr_array *a = arg;
    struct timespec next;

    clock_gettime(CLOCK_REALTIME, &next);
    clr_mutex_lock(&a->lock);
    while (!a->stopping) {
        struct timespec now;

        /* a->cond is shared: sweep only when the period is really over */
        next.tv_sec += a->bitmap_sleep_ms / 1000;
        next.tv_nsec += (long)(a->bitmap_sleep_ms % 1000) * 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000;
        }
        for (;;) {
            clock_gettime(CLOCK_REALTIME, &now);
            if (a->stopping || now.tv_sec > next.tv_sec ||
                (now.tv_sec == next.tv_sec && now.tv_nsec >= next.tv_nsec))
                break;
            clr_cond_timedwait(&a->cond, &a->lock, &next);
        }
        if (a->stopping)
            break;
        /* A frozen array clears no bits: a node frozen for lost quorum
         * may be about to be taken over, and its dirty bits are what the
         * survivors must find.  Sweeping resumes on a thaw. */
        if (a->frozen)
            continue;
        clr_mutex_unlock(&a->lock);
        clr_mutex_lock(&a->bm_lock);
        if (bm_sweep_locked(a))
            bm_flush_to_locked(a, NULL, ++a->bm_want_gen);
        clr_mutex_unlock(&a->bm_lock);
        clr_mutex_lock(&a->lock);
    }
    clr_mutex_unlock(&a->lock);
    return NULL;
}

/* ---- run / stop ---- */

/* The clean stop: every leg is written, so idle chunks go clean at once;
 * the result is flushed.  @return whether dirty chunks are left. */
bool clr_arr_bm_final_flush(struct clr_array *a)
{
    bool dirty_left;

    clr_mutex_lock(&a->bm_lock);
    for (unsigned i = 0; i <= CLR_BMC_DEFAULT_IDLE_SWEEPS; i++)
        bm_sweep_locked(a);
    bm_flush_to_locked(a, NULL, ++a->bm_want_gen);
    dirty_left = clr_bmc_dirty_chunks(&a->bmc) > 0;
    clr_mutex_unlock(&a->bm_lock);
    return dirty_left;
}

/* Any bitmap chunk of the sync range [ls, ls+n) still needs resync. */
bool clr_arr_bm_region_needed(struct clr_array *a, uint64_t ls, uint64_t n)
{
    uint64_t first, last;
    bool needed = false;

    clr_mutex_lock(&a->bm_lock);
    if (clr_bmc_chunks(&a->bmc, ls, n, &first, &last) == 0)
        for (uint64_t c = first; c <= last && !needed; c++)
            needed = clr_bmc_is_needed(&a->bmc, c);
    clr_mutex_unlock(&a->bm_lock);
    return needed;
}

/* The sync-sector extent of our NEEDED chunks (what a resync window must
 * cover); false when there is none. */
bool clr_arr_needed_extent(struct clr_array *a, uint64_t *lo, uint64_t *hi)
{
    uint64_t cs = a->bmc.chunk_sectors, first = UINT64_MAX, last = 0;

    clr_mutex_lock(&a->bm_lock);
    for (uint64_t k = 0; k < a->bmc.nchunks; k++) {
        if (!clr_bmc_is_needed(&a->bmc, k))
            continue;
        if (first == UINT64_MAX)
            first = k;
        last = k;
    }
    clr_mutex_unlock(&a->bm_lock);
    if (first == UINT64_MAX) {
        *lo = *hi = 0;
        return false;
    }
    *lo = first * cs;
    *hi = (last + 1) * cs < a->sync_sectors ? (last + 1) * cs : a->sync_sectors;
    return true;
}
