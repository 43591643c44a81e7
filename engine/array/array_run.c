/* clraid array core, top layer: start (open members, threads, the
 * cluster join), the clean stop and the test crash. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "array/array_internal.h"

static void close_members(struct clr_array *a)
{
    for (unsigned i = 0; i < a->nmem; i++) {
        clr_io_close(a->mem[i]->io);
        a->mem[i]->io = NULL;
    }
    clr_io_ctx_destroy(a->ctx);
    a->ctx = NULL;
    clr_arr_pool_destroy(a);
    clr_arr_rb_destroy(a);
    clr_io_free(a->sb_buf);
    clr_io_free(a->bm_buf);
    a->sb_buf = a->bm_buf = NULL;
}

/* run: buffers, and every live member opened for I/O (the array's
 * logical block is the largest of theirs) */
static int open_members(struct clr_array *a, struct clr_err *e)
{
    int rc;

    clr_arr_pool_init(a);
    clr_arr_rb_init(a);
    if (clr_io_alloc((void **)&a->sb_buf, (size_t)ARR_MAX_MEMBERS * CLR_MD_SB_AREA_BYTES) ||
        clr_io_alloc((void **)&a->bm_buf, a->bm_write_bytes)) {
        close_members(a);
        return clr_err_set(e, -ENOMEM, "out of memory");
    }
    a->lbs = ARR_SECTOR;
    atomic_store(&a->mem_align, 1);
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];
        struct clr_io_dev_info info;
        unsigned fl = (a->flags & CLR_ARRAY_BUFFERED) ? CLR_IO_OPEN_BUFFERED : 0;

        if (m->state == ARR_M_FAULTY || m->state == ARR_M_REMOVED)
            continue;
        /* shared devices: every node (maybe several on one host) opens them */
        if (!a->cluster)
            fl |= CLR_IO_OPEN_EXCL;
        rc = clr_io_open(a->ctx, m->path, fl, &m->io);
        if (rc) {
            clr_err_set(e, rc, "%s: cannot open for I/O: %s", m->path, strerror(-rc));
            close_members(a);
            return rc;
        }
        clr_io_dev_info(m->io, &info);
        if (info.logical_block > a->lbs)
            a->lbs = info.logical_block;
        clr_arr_mem_align_note(a, m->io);
    }
    return 0;
}

/* run, cluster: several nodes share the superblocks (no clean/active
 * flip); our slot's bits (and those of free slots) carry the crash state */
static int join_cluster(struct clr_array *a, struct clr_err *e)
{
    bool alone;
    int rc = clr_arr_cl_start(a, e);

    if (rc)
        return rc;
    alone = arr_cl_alone(a);
    clr_mutex_lock(&a->lock);
    a->resync_pending |= clr_bmc_dirty_chunks(&a->bmc) > 0;
    /* the only node: a spare takes a vacant role (else its owner does) */
    for (uint32_t r = 0; r < a->g.raid_disks && alone; r++)
        if (!a->role_mem[r])
            clr_arr_take_spare_locked(a, (int)r);
    clr_arr_recompute_locked(a);
    clr_mutex_unlock(&a->lock);
    clr_arr_bm_set_degraded(a);
    return 0;
}

/* run, single node: marked active before any write can happen */
static int mark_active(struct clr_array *a, struct clr_err *e)
{
    int rc = clr_arr_sb_update(a, 0, false);

    return rc ? clr_err_set(e, rc, "cannot write the superblocks: %s", strerror(-rc)) : 0;
}

int clr_array_run(struct clr_array *a, struct clr_err *e)
{
    /* Page-cache members (buffered, tmpfs) are served inline, in the
     * requesting thread: a memory copy costs less than the three thread
     * hand-offs of the ring.  Every completion callback of the array
     * (clr_arr_leg_done, clr_io_wg_done) only signals the submitter's
     * wait group, so no lock is held across a submit that it takes. */
    struct clr_io_ctx_opts o = { .queue_depth = 512, .inline_buffered = true };
    int rc;

    if (!a->stopped)
        return clr_err_set(e, -EALREADY, "'%s' is already running", a->name);
    rc = clr_io_ctx_create(&o, &a->ctx);
    if (rc)
        return clr_err_set(e, rc, "cannot set up io_uring: %s", strerror(-rc));
    rc = open_members(a, e);
    if (rc)
        return rc;
    clr_mutex_lock(&a->lock);
    a->stopped = false;
    a->stopping = false;
    a->running = true;
    a->frozen = a->thaw_err = false;
    a->crashed = false;
    /* a spare assembled with a degraded array takes a vacant role now
     * (cluster: once we know we are alone, below) */
    for (uint32_t r = 0; r < a->g.raid_disks && !a->cluster; r++)
        if (!a->role_mem[r])
            clr_arr_take_spare_locked(a, (int)r);
    clr_arr_recompute_locked(a);
    a->resync_pending = clr_bmc_dirty_chunks(&a->bmc) > 0;
    a->state_gen++;
    clr_mutex_unlock(&a->lock);
    clr_arr_bm_set_degraded(a);
    rc = a->cluster ? join_cluster(a, e) : mark_active(a, e);
    if (rc)
        goto fail;
    if (pthread_create(&a->bm_thread, NULL, clr_arr_bm_daemon, a) != 0) {
        rc = clr_err_set(e, -EAGAIN, "cannot start the bitmap thread");
        goto fail;
    }
    a->bm_thread_on = true;
    if (a->flags & CLR_ARRAY_BITMAP_ALL_DIRTY) {
        /* Every chunk dirty on disk before the first write (no resync is
         * due for them: resync_pending was decided above). */
        rc = clr_arr_bm_start_write(a, NULL, 0, a->sync_sectors);
        if (rc) {
            clr_err_set(e, rc, "cannot write the bitmap: %s", strerror(-rc));
            goto fail;
        }
        clr_arr_bm_end_write(a, 0, a->sync_sectors, true);
    }
    if (pthread_create(&a->sync_thread, NULL, clr_arr_sync_main, a) != 0) {
        rc = clr_err_set(e, -EAGAIN, "cannot start the sync thread");
        goto fail;
    }
    a->sync_thread_on = true;
    clr_arr_log(a, LOG_INFO, "started %s, %u devices, %" PRIu64 " dirty bitmap chunks", a->g.pers->name,
                a->g.raid_disks, clr_bmc_dirty_chunks(&a->bmc));
    return 0;
fail:
    clr_array_stop(a);
    return rc;
}

void clr_array_stop_requested(struct clr_array *a)
{
    clr_mutex_lock(&a->lock);
    a->stop_requested = true;
    pthread_cond_broadcast(&a->cond);
    clr_mutex_unlock(&a->lock);
}

static int array_stop(struct clr_array *a);

int clr_array_stop(struct clr_array *a)
{
    int rc;

    if (!a)
        return 0;
    /* no management call may run against a half-stopped array */
    clr_mutex_lock(&a->mgmt_lock);
    rc = array_stop(a);
    clr_mutex_unlock(&a->mgmt_lock);
    return rc;
}

/* Stopping (a->lock held, released on return): wait for the requests in
 * flight, then for the sync and bitmap threads. */
static void drain_and_join_locked(struct clr_array *a)
{
    while (a->inflight)
        clr_cond_wait(&a->cond, &a->lock);
    clr_mutex_unlock(&a->lock);
    if (a->sync_thread_on)
        pthread_join(a->sync_thread, NULL);
    if (a->bm_thread_on)
        pthread_join(a->bm_thread, NULL);
    a->sync_thread_on = a->bm_thread_on = false;
}

static int array_crash(struct clr_array *a, bool lost, uint64_t *member)
{
    if (member)
        *member = 0;
    clr_mutex_lock(&a->mgmt_lock);
    clr_mutex_lock(&a->lock);
    if (a->stopped) {
        clr_mutex_unlock(&a->lock);
        clr_mutex_unlock(&a->mgmt_lock);
        return 0;
    }
    a->crashed = true;
    a->stopping = true;
    a->sync_abort = true;
    pthread_cond_broadcast(&a->cond);
    clr_mutex_unlock(&a->lock);
    arr_cl_kick(a); /* writes waiting for a window or hold see it */
    /* the lockspace dies first: the others see MEMBER_FAILED (or, lost,
     * MEMBER_LOST until they confirm it dead) */
    arr_cl_crash(a, lost, member);
    clr_mutex_lock(&a->lock);
    drain_and_join_locked(a);
    arr_cl_crash_finish(a);
    clr_mutex_lock(&a->lock);
    a->running = false;
    a->stopped = true;
    clr_mutex_unlock(&a->lock);
    close_members(a);
    clr_arr_log(a, LOG_WARNING, "crashed (test): nothing written");
    clr_mutex_unlock(&a->mgmt_lock);
    return 0;
}

int clr_array_crash(struct clr_array *a)
{
    return array_crash(a, false, NULL);
}

int clr_array_crash_lost(struct clr_array *a, uint64_t *member)
{
    return array_crash(a, true, member);
}

static int array_stop(struct clr_array *a)
{
    bool dirty_left;
    int rc = 0;

    clr_mutex_lock(&a->lock);
    if (a->stopped) {
        clr_mutex_unlock(&a->lock);
        return 0;
    }
    a->stopping = true;
    a->sync_abort = true;
    pthread_cond_broadcast(&a->cond);
    clr_mutex_unlock(&a->lock);
    arr_cl_kick(a); /* writes waiting for a window or hold see it */
    clr_mutex_lock(&a->lock);
    drain_and_join_locked(a);
    clr_arr_flush_all(a);
    /* Everything is on every leg now: idle clean chunks may go. */
    dirty_left = clr_arr_bm_final_flush(a);
    clr_mutex_lock(&a->lock);
    a->state_gen++;
    clr_mutex_unlock(&a->lock);
    if (a->cluster) {
        uint64_t lo, hi;
        bool driving = false;

        /* NEEDED chunks left: another node takes our slot over; a rebuild
         * driven here is left to the others the same way (they resume
         * what a node that left unclean was rebuilding) */
        clr_mutex_lock(&a->lock);
        for (unsigned i = 0; i < a->nmem; i++)
            driving |= a->mem[i]->state == ARR_M_REBUILDING && !a->mem[i]->remote_rebuild;
        clr_mutex_unlock(&a->lock);
        arr_cl_leave(a, clr_arr_needed_extent(a, &lo, &hi) || driving);
    } else {
        rc = clr_arr_sb_update(a, 0, !dirty_left && !a->degraded);
    }
    clr_mutex_lock(&a->lock);
    a->running = false;
    a->stopped = true;
    clr_mutex_unlock(&a->lock);
    close_members(a);
    clr_arr_log(a, LOG_INFO, "stopped%s", dirty_left ? " (dirty bitmap chunks kept)" : " clean");
    return rc;
}
