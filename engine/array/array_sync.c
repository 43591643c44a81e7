/* clraid array core: the sync thread. One action at a time: resync of
 * NEEDED bitmap chunks (initial, after a crash, re-add), recovery onto a
 * rebuilding member, check and repair. Every unit takes the range lock the
 * client writes take, so sync and client writes never race (doc/architecture.md §3 (d)). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "array/array_internal.h"

#define SYNC_UNIT_SECTORS 2048u         /* 1 MiB per mirror unit */
#define CKPT_NS           2000000000ull /* recovery checkpoint period */

static const char *const action_names[] = {
    [ARR_SYNC_IDLE] = "idle",   [ARR_SYNC_RESYNC] = "resync", [ARR_SYNC_RECOVER] = "recover",
    [ARR_SYNC_CHECK] = "check", [ARR_SYNC_REPAIR] = "repair",
};

const char *clr_arr_action_name(enum arr_action act)
{
    return action_names[act];
}

static bool should_stop(struct clr_array *a)
{
    bool s;

    clr_mutex_lock(&a->lock);
    s = a->stopping || a->sync_abort;
    clr_mutex_unlock(&a->lock);
    return s;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

    nanosleep(&ts, NULL);
}

/* md's speed limits: never above max; above min only while no client I/O
 * competes. Also publishes progress. */
static void progress(struct clr_array *a, uint64_t pos, uint64_t done)
{
    uint64_t now = clr_arr_now_ns(), el, kib = done / 2;
    uint32_t smin, smax;

    clr_mutex_lock(&a->lock);
    a->sync_pos = pos;
    a->sync_done_sectors = done;
    el = now - a->sync_start_ns;
    smin = a->speed_min_kib;
    smax = a->speed_max_kib;
    clr_mutex_unlock(&a->lock);
    if (el == 0)
        return;
    if (kib * 1000000000ull / el > smax) {
        uint64_t want = kib * 1000000000ull / smax;

        if (want > el)
            sleep_ns(want - el < 1000000000ull ? want - el : 1000000000ull);
    } else if (kib * 1000000000ull / el > smin && now - atomic_load(&a->last_client_ns) < 100000000ull) {
        sleep_ns(2000000);
    }
}

static void begin(struct clr_array *a, enum arr_action act, uint64_t pos, uint64_t total)
{
    clr_mutex_lock(&a->lock);
    a->action = act;
    a->sync_total = total;
    a->sync_pos = pos;
    a->sync_done_sectors = 0;
    a->sync_start_ns = clr_arr_now_ns();
    if (act == ARR_SYNC_RESYNC || act == ARR_SYNC_RECOVER) {
        a->sync_started_ms = clr_arr_wall_ms();
        a->sync_ended_ms = 0;
    }
    clr_mutex_unlock(&a->lock);
}

/* Does a unit of [pos, pos+u) sync sectors under the range lock. */
static int unit(struct clr_array *a, enum arr_action act, uint64_t pos, uint64_t u, uint64_t *mm)
{
    struct arr_req rq;
    struct arr_range r;
    int rc;

    clr_arr_req_begin(a, &rq);
    clr_arr_rl_lock(&a->rl, &r, pos, u);
    rc = a->ops->sync_unit(a, &rq, act, pos, u, mm);
    clr_arr_rl_unlock(&a->rl, &r);
    {
        int drc = clr_arr_req_end(a, &rq);

        if (rc == 0 && drc)
            rc = drc;
    }
    return rc;
}

/* Cluster: take `resync` (one resyncer cluster-wide), abortable. */
static int cl_begin(struct clr_array *a, uint64_t lo, uint64_t hi)
{
    int rc;

    if (!a->cl)
        return 0;
    rc = arr_cl_resync_begin(a, lo, hi);
    if (rc && rc != -ECANCELED && rc != -ESHUTDOWN)
        clr_arr_log(a, LOG_ERR, "cluster: cannot become the resyncing node: %s", strerror(-rc));
    return rc;
}

static uint64_t unit_sectors(const struct clr_array *a)
{
    if (a->g.pers->has_parity)
        return a->g.chunk_sectors *
               (SYNC_UNIT_SECTORS / a->g.chunk_sectors ? SYNC_UNIT_SECTORS / a->g.chunk_sectors : 1);
    return SYNC_UNIT_SECTORS;
}

/* The sync range [s, e) as whole units of the level (stripes for parity). */
static void align_range(const struct clr_array *a, uint64_t *s, uint64_t *e)
{
    uint64_t lim = a->g.pers->has_parity ? a->g.used_dev_sectors : a->g.array_sectors;

    if (a->g.pers->has_parity) {
        *s -= *s % a->g.chunk_sectors;
        *e = (*e + a->g.chunk_sectors - 1) / a->g.chunk_sectors * a->g.chunk_sectors;
    }
    if (*e > lim)
        *e = lim;
    if (*s > *e)
        *s = *e;
}

/* Some role has no member that is in sync or being re-added from the
 * bitmap: NEEDED bits must then stay for a later re-add. Caller holds lock. */
static bool sync_degraded_locked(struct clr_array *a)
{
    for (uint32_t r = 0; r < a->g.raid_disks; r++) {
        struct arr_member *m = a->role_mem[r];

        if (!m || !(m->state == ARR_M_IN_SYNC || (m->state == ARR_M_REBUILDING && m->bitmap_recovery)))
            return true;
    }
    return false;
}

/* Re-added members this node drives, whose pass may mark them in sync
 * (cluster: once every slot's bits were gathered into ours). */
static unsigned resync_targets(struct clr_array *a, struct arr_member **tgt)
{
    unsigned nt = 0;

    clr_mutex_lock(&a->lock);
    for (uint32_t r = 0; r < a->g.raid_disks; r++) {
        struct arr_member *m = a->role_mem[r];

        if (m && m->state == ARR_M_REBUILDING && m->bitmap_recovery && !m->remote_rebuild &&
            (!a->cl || m->bits_gathered))
            tgt[nt++] = m;
    }
    clr_mutex_unlock(&a->lock);
    return nt;
}

static uint64_t needed_chunks(struct clr_array *a)
{
    uint64_t n = 0;

    clr_mutex_lock(&a->bm_lock);
    for (uint64_t k = 0; k < a->bmc.nchunks; k++)
        n += clr_bmc_is_needed(&a->bmc, k);
    clr_mutex_unlock(&a->bm_lock);
    return n;
}

/* One NEEDED bitmap chunk @k, unit by unit inside our resync window (up
 * to @xhi); its bit goes once every leg has it. */
static int resync_chunk(struct clr_array *a, uint64_t k, uint64_t xhi, uint64_t done, uint64_t *mm)
{
    uint64_t bc = a->bsb.chunksize / ARR_SECTOR, us = unit_sectors(a);
    uint64_t s0 = k * bc, e0 = s0 + bc < a->sync_sectors ? s0 + bc : a->sync_sectors;
    uint64_t s = s0, e = e0;
    bool degraded;
    int rc = 0;

    align_range(a, &s, &e);
    for (uint64_t pos = s; pos < e && rc == 0; pos += us) {
        rc = arr_cl_resync_window(a, pos, pos + (e - pos < us ? e - pos : us), xhi > e ? xhi : e);
        if (rc == 0)
            rc = unit(a, ARR_SYNC_RESYNC, pos, e - pos < us ? e - pos : us, mm);
        progress(a, done * bc + (pos - s), done * bc + (pos - s));
    }
    if (rc)
        return rc;
    clr_mutex_lock(&a->lock);
    degraded = sync_degraded_locked(a); /* a member may have failed meanwhile */
    clr_mutex_unlock(&a->lock);
    if (!degraded) {
        clr_mutex_lock(&a->bm_lock);
        clr_bmc_sync_done(&a->bmc, s0, e0 - s0);
        clr_mutex_unlock(&a->bm_lock);
    }
    clr_mutex_lock(&a->lock);
    a->last_resync_bytes += (e0 - s0) * ARR_SECTOR;
    clr_mutex_unlock(&a->lock);
    return 0;
}

/* The pass covered every bit a re-added member missed: it is in sync. */
static void readd_targets_in_sync(struct clr_array *a, struct arr_member **tgt, unsigned nt)
{
    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < nt; i++) {
        if (tgt[i]->state != ARR_M_REBUILDING || tgt[i]->remote_rebuild || (a->cl && !tgt[i]->bits_gathered))
            continue;
        tgt[i]->state = ARR_M_IN_SYNC;
        tgt[i]->bitmap_recovery = false;
        tgt[i]->bits_gathered = false;
        tgt[i]->recovery_offset = 0;
        clr_arr_log(a, LOG_NOTICE, "%s: re-added, in sync", tgt[i]->path);
    }
    clr_arr_recompute_locked(a);
    a->state_gen++;
    clr_mutex_unlock(&a->lock);
    clr_arr_bm_set_degraded(a);
    clr_arr_sb_update(a, 0, false);
    /* writes during the pass left NEEDED bits (the member was not yet in
     * sync): one more pass, now whole, lets them clear */
    if (needed_chunks(a)) {
        clr_mutex_lock(&a->lock);
        if (!a->degraded)
            a->resync_pending = true;
        clr_mutex_unlock(&a->lock);
    }
}

static void set_resync_pending(struct clr_array *a)
{
    clr_mutex_lock(&a->lock);
    a->resync_pending = true;
    clr_mutex_unlock(&a->lock);
}

static int run_resync(struct clr_array *a)
{
    struct arr_member *tgt[ARR_MAX_MEMBERS];
    uint64_t bc = a->bsb.chunksize / ARR_SECTOR, total, done = 0, mm = 0, xlo = 0, xhi = 0;
    bool aborted = false, cl_on = false;
    unsigned nt;
    int rc = 0;

    clr_mutex_lock(&a->lock);
    a->resync_pending = false;
    clr_mutex_unlock(&a->lock);
    nt = resync_targets(a, tgt);
    /* cluster: a re-add target is in sync only after a pass that held
     * `resync` (so no other node's pass or rebuild of it is running) over
     * every slot's gathered bits, even when nothing is NEEDED */
    if (a->cl && (clr_arr_needed_extent(a, &xlo, &xhi) || nt)) {
        /* one resyncer cluster-wide; then see what is still NEEDED */
        rc = cl_begin(a, xlo, xhi);
        if (rc) {
            set_resync_pending(a);
            return rc == -ECANCELED || rc == -ESHUTDOWN ? 0 : rc;
        }
        cl_on = true;
        clr_arr_needed_extent(a, &xlo, &xhi);
    } else if (a->cl && nt == 0) {
        return 0;
    }
    total = needed_chunks(a);
    begin(a, ARR_SYNC_RESYNC, 0, total * bc);
    clr_arr_log(a, LOG_INFO, "resync of %" PRIu64 " dirty bitmap chunks%s", total, nt ? " (re-add)" : "");
    for (uint64_t k = 0; k < a->bmc.nchunks && rc == 0; k++) {
        bool needed;

        if (should_stop(a)) {
            aborted = true;
            break;
        }
        clr_mutex_lock(&a->bm_lock);
        needed = clr_bmc_is_needed(&a->bmc, k);
        clr_mutex_unlock(&a->bm_lock);
        if (!needed)
            continue;
        rc = resync_chunk(a, k, xhi, done, &mm);
        if (rc == 0)
            done++;
    }
    if (rc || aborted)
        set_resync_pending(a);
    if (rc == 0 && !aborted && nt && (cl_on || !a->cl))
        readd_targets_in_sync(a, tgt, nt);
    if (cl_on)
        arr_cl_resync_end(a);
    clr_arr_log(a, LOG_INFO, "resync %s: %" PRIu64 " chunks",
                rc        ? "failed"
                : aborted ? "interrupted"
                          : "done",
                done);
    return rc;
}

/* Cluster, holding `resync`: a rebuild resumed after its node died may
 * have been finished by another survivor while we waited, or got further
 * (its checkpoint on disk).  @return 1: in sync already; 0: go on (every
 * node was told we rebuild it); <0: error. */
static int recover_cluster_check(struct clr_array *a, struct arr_member *m)
{
    uint64_t off, gen;

    clr_mutex_lock(&a->lock);
    off = m->recovery_offset;
    clr_mutex_unlock(&a->lock);
    if (arr_cl_rebuild_check(a, m, &off) > 0) {
        clr_mutex_lock(&a->lock);
        if (m->state == ARR_M_REBUILDING) {
            m->state = ARR_M_IN_SYNC;
            m->recovery_offset = 0;
            clr_arr_recompute_locked(a);
            clr_arr_log(a, LOG_NOTICE, "%s: in sync (recovered by another node)", m->path);
            if (a->frozen) {
                a->frozen = a->thaw_err = false;
                pthread_cond_broadcast(&a->cond);
                clr_arr_log(a, LOG_NOTICE, "%s: a copy is back, array thawed", m->path);
            }
        }
        a->state_gen++;
        clr_mutex_unlock(&a->lock);
        clr_arr_bm_set_degraded(a);
        return 1;
    }
    clr_mutex_lock(&a->lock);
    if (off > m->recovery_offset)
        m->recovery_offset = off;
    gen = ++a->state_gen;
    clr_mutex_unlock(&a->lock);
    /* every node writes to the member before any of it is copied: the
     * superblock update tells them (METADATA_UPDATED); written only now,
     * so a survivor resuming an orphan that another one finished
     * meanwhile sees it in sync above, not recovering */
    return clr_arr_sb_update(a, gen, false);
}

/* The copy itself, from @ds, with a checkpoint every CKPT_NS.  *aborted:
 * stopped by a stop or an abort; returns the error or 0, *ds the end. */
static int recover_copy(struct clr_array *a, struct arr_member *m, uint64_t *ds, uint64_t start,
                        bool *aborted)
{
    uint64_t end = a->g.used_dev_sectors, last_ckpt = clr_arr_now_ns();
    uint64_t us = a->g.chunk_sectors ? a->g.chunk_sectors : SYNC_UNIT_SECTORS;

    while (*ds < end) {
        int64_t k;
        bool gone;

        clr_mutex_lock(&a->lock);
        gone = m->state != ARR_M_REBUILDING;
        *aborted = a->stopping || a->sync_abort;
        clr_mutex_unlock(&a->lock);
        if (gone)
            return -EIO;
        if (*aborted)
            return 0;
        k = a->ops->recover_unit(a, m, *ds, end - *ds < us ? end - *ds : us);
        if (k < 0)
            return (int)k;
        *ds += (uint64_t)k;
        progress(a, *ds, *ds - start);
        if (clr_arr_now_ns() - last_ckpt > CKPT_NS) {
            uint64_t gen;

            clr_mutex_lock(&a->lock);
            m->recovery_offset = *ds;
            gen = ++a->state_gen;
            clr_mutex_unlock(&a->lock);
            clr_arr_sb_update(a, gen, false);
            last_ckpt = clr_arr_now_ns();
        }
    }
    return 0;
}

static int run_recover(struct clr_array *a, struct arr_member *m)
{
    uint64_t ds, start;
    bool aborted = false;
    int rc;

    clr_mutex_lock(&a->lock);
    if (a->cl && m->bitmap_recovery) {
        /* a re-add whose bits were not gathered here: a full recovery */
        m->bitmap_recovery = false;
        m->bits_gathered = false;
        m->recovery_offset = 0;
    }
    clr_mutex_unlock(&a->lock);
    rc = cl_begin(a, 0, a->sync_sectors);
    if (rc)
        return rc == -ECANCELED || rc == -ESHUTDOWN ? 0 : rc;
    if (a->cl && (rc = recover_cluster_check(a, m)) != 0) {
        arr_cl_resync_end(a);
        return rc > 0 ? 0 : rc;
    }
    /* its partial-parity logs predate its failure: none may be read once
     * it is back in sync (the replay ignores it while it rebuilds) */
    rc = clr_arr_plog_wipe(a->plog, m);
    if (rc) {
        arr_cl_resync_end(a);
        return rc;
    }
    clr_mutex_lock(&a->lock);
    start = ds = m->recovery_offset;
    clr_mutex_unlock(&a->lock);
    begin(a, ARR_SYNC_RECOVER, start, a->g.used_dev_sectors);
    clr_arr_log(a, LOG_INFO, "%s: recovery of role %d from sector %" PRIu64, m->path, m->role, ds);
    rc = recover_copy(a, m, &ds, start, &aborted);
    arr_cl_resync_end(a);
    clr_mutex_lock(&a->lock);
    a->last_resync_bytes = (ds - start) * ARR_SECTOR;
    if (rc == 0 && !aborted && m->state == ARR_M_REBUILDING) {
        m->state = ARR_M_IN_SYNC;
        m->recovery_offset = 0;
        clr_arr_recompute_locked(a);
        clr_arr_log(a, LOG_NOTICE, "%s: recovery done, role %d in sync", m->path, m->role);
    } else if (m->state == ARR_M_REBUILDING) {
        m->recovery_offset = ds; /* checkpoint kept for the next start */
    }
    a->state_gen++;
    clr_mutex_unlock(&a->lock);
    clr_arr_bm_set_degraded(a);
    clr_arr_sb_update(a, 0, false);
    /* Chunks written while degraded still need a pass over the in-sync legs. */
    clr_mutex_lock(&a->lock);
    if (rc == 0 && !aborted && !a->degraded)
        a->resync_pending = true;
    clr_mutex_unlock(&a->lock);
    return rc;
}

static int run_check(struct clr_array *a, enum arr_action act)
{
    uint64_t lim = a->g.pers->has_parity ? a->g.used_dev_sectors : a->g.array_sectors;
    uint64_t us = unit_sectors(a), mm = 0, pos;
    int rc = 0;

    if (a->cl) {
        uint64_t lo, hi;

        clr_arr_needed_extent(a, &lo, &hi);
        rc = cl_begin(a, lo, hi);
        if (rc)
            return rc == -ECANCELED || rc == -ESHUTDOWN ? 0 : rc;
    }
    begin(a, act, 0, lim);
    for (pos = 0; pos < lim && rc == 0; pos += us) {
        if (should_stop(a))
            break;
        /* repair writes: same window protocol as a resync */
        rc = arr_cl_resync_window(a, pos, pos + (lim - pos < us ? lim - pos : us), lim);
        if (rc == 0)
            rc = unit(a, act, pos, lim - pos < us ? lim - pos : us, &mm);
        progress(a, pos, pos);
    }
    arr_cl_resync_end(a);
    clr_mutex_lock(&a->lock);
    a->last_check_mismatches = mm;
    clr_mutex_unlock(&a->lock);
    clr_arr_log(a, LOG_INFO, "%s %s: %" PRIu64 " mismatched sectors", clr_arr_action_name(act),
                pos >= lim ? "done" : "interrupted", mm);
    return rc;
}

/* What is due next; caller holds lock. */
static enum arr_action due_locked(struct clr_array *a, struct arr_member **tgt)
{
    enum arr_action r = a->requested;

    if (a->sync_hold)
        return ARR_SYNC_IDLE;
    if (r != ARR_SYNC_IDLE) {
        a->requested = ARR_SYNC_IDLE;
        return r;
    }
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];

        /* cluster: a re-add is resynced from the bitmap only by the node
         * that gathered every slot's bits; anything else is recovered */
        if (m->state == ARR_M_REBUILDING && !m->remote_rebuild && m->io &&
            (!m->bitmap_recovery || (a->cl && !m->bits_gathered))) {
            *tgt = m;
            return ARR_SYNC_RECOVER;
        }
    }
    for (unsigned i = 0; i < a->nmem; i++)
        if (a->mem[i]->state == ARR_M_REBUILDING && a->mem[i]->bitmap_recovery && !a->mem[i]->remote_rebuild)
            return ARR_SYNC_RESYNC;
    return a->resync_pending ? ARR_SYNC_RESYNC : ARR_SYNC_IDLE;
}

void *clr_arr_sync_main(void *arg)
{
    struct clr_array *a = arg;

    clr_mutex_lock(&a->lock);
    for (;;) {
        struct arr_member *tgt = NULL;
        enum arr_action act = ARR_SYNC_IDLE;
        int rc = 0;

        while (!a->stopping && (a->frozen || (act = due_locked(a, &tgt)) == ARR_SYNC_IDLE))
            clr_cond_wait(&a->cond, &a->lock);
        if (a->stopping)
            break;
        a->sync_abort = false;
        a->action = act; /* busy from now on, for waiters */
        if (act == ARR_SYNC_RESYNC || act == ARR_SYNC_RECOVER)
            a->last_resync_bytes = 0;
        clr_mutex_unlock(&a->lock);
        switch (act) {
        case ARR_SYNC_RESYNC:
            rc = run_resync(a);
            break;
        case ARR_SYNC_RECOVER:
            rc = run_recover(a, tgt);
            break;
        default:
            rc = run_check(a, act);
            break;
        }
        clr_mutex_lock(&a->lock);
        if ((act == ARR_SYNC_RESYNC || act == ARR_SYNC_RECOVER) && a->sync_started_ms && !a->sync_ended_ms)
            a->sync_ended_ms = clr_arr_wall_ms();
        a->action = ARR_SYNC_IDLE;
        a->sync_passes++;
        pthread_cond_broadcast(&a->cond);
        if (rc && !a->stopping) {
            /* do not spin on a persistent error */
            struct timespec ts;

            clr_arr_log(a, LOG_ERR, "%s stopped: %s", clr_arr_action_name(act), strerror(-rc));
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            clr_cond_timedwait(&a->cond, &a->lock, &ts);
        }
    }
    clr_mutex_unlock(&a->lock);
    return NULL;
}
