/* clraid array core: superblock updates and the announcement of member
 * failures (written on every member, and in a cluster METADATA_UPDATED
 * delivered everywhere, before anything that depends on them is acked);
 * deferral inside range-locked sections, the write-behind barrier and the
 * freeze/thaw wait.  Below: array_state.c. */
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

void clr_arr_req_begin(struct clr_array *a, struct arr_req *rq)
{
    rq->deferring = a->cl != NULL;
    rq->defer_gen = 0;
    rq->behind_any = false;
    rq->nbehind = 0;
}

/* A step that must come before an ack failed (@rc): the array freezes
 * (said once) and the thread waits for a thaw, unless it must not wait (a
 * management call or the start: it fails instead).  @return 0 once thawed
 * without error (the caller tries again), else the error to return. */
static int freeze_and_wait(struct clr_array *a, int rc, const char *what)
{
    clr_mutex_lock(&a->lock);
    if (!a->frozen && !a->stopping)
        clr_arr_log(a, LOG_CRIT, "%s (%s): array frozen; 'clraid thaw %s --error' fails the blocked I/O",
                    what, strerror(-rc), a->name);
    a->frozen = true;
    clr_mutex_unlock(&a->lock);
    if (clr_arr_nowait(a))
        return rc;
    return clr_arr_wait_thaw(a);
}

static int announce_failure(struct clr_array *a, uint64_t gen);
static int behind_barrier(struct clr_array *a, struct arr_member *const *ms, unsigned n);

int clr_arr_req_end(struct clr_array *a, struct arr_req *rq)
{
    uint64_t gen;

    if (!rq->deferring)
        return 0;
    rq->deferring = false;
    gen = rq->defer_gen;
    rq->defer_gen = 0;
    if (a->cl) {
        /* a member this node failed is left out of our writes at once:
         * no write is acked before the others stop reading it either */
        uint64_t lf = atomic_load(&a->local_fail_gen);

        if (lf > gen && lf > atomic_load(&a->sb_announced_gen))
            gen = lf;
    }
    if (rq->behind_any) {
        int rc = gen ? announce_failure(a, gen) : 0;

        rq->behind_any = false;
        if (rc == 0)
            rc = behind_barrier(a, rq->behind, rq->nbehind);
        rq->nbehind = 0;
        return rc;
    }
    return gen ? announce_failure(a, gen) : 0;
}

/* A write-behind leg failed (a member another node failed, that we keep
 * current for the nodes which have not processed that failure yet).
 * Its announcer holds `metadata` until every node processed the update:
 * once we got and released it, nobody reads the member any more, so the
 * write may be acked without the leg, and we stop writing it. */
static int behind_barrier(struct clr_array *a, struct arr_member *const *ms, unsigned n)
{
    for (;;) {
        int rc = arr_cl_meta_begin(a);

        if (rc == 0) {
            arr_cl_meta_end(a, false);
            clr_mutex_lock(&a->lock);
            for (unsigned i = 0; i < n; i++)
                ms[i]->write_behind = false;
            clr_mutex_unlock(&a->lock);
            return 0;
        }
        if (a->crashed)
            return 0;
        rc =
            freeze_and_wait(a, rc, "a write-behind leg failed and the cluster metadata lock cannot be taken");
        if (rc)
            return rc;
    }
}

int clr_arr_behind_failed(struct clr_array *a, struct arr_req *rq, struct arr_member *m)
{
    if (!a->cl)
        return 0;
    if (rq && rq->deferring) {
        rq->behind_any = true;
        for (unsigned i = 0; i < rq->nbehind; i++)
            if (rq->behind[i] == m)
                return 0;
        /* every member fits: a member is listed once */
        rq->behind[rq->nbehind++] = m;
        return 0;
    }
    return behind_barrier(a, &m, 1) ? -EAGAIN : 0;
}

/* Counts I/O error @err (negative) on @m by its class; a->lock held. */
static void note_io_error_locked(struct arr_member *m, int err, bool write)
{
    switch (clr_policy_errno_class(err)) {
    case CLR_POL_ERR_MEDIA:
        m->io_errors[ARR_IOERR_MEDIA]++;
        if (write)
            m->media_write_errors++;
        break;
    case CLR_POL_ERR_RESV:
        m->io_errors[ARR_IOERR_RESV]++;
        break;
    default:
        m->io_errors[ARR_IOERR_PATH]++;
        break;
    }
    m->last_errno = -err;
    m->last_error_ms = clr_arr_wall_ms();
}

/* ---- the policy daemon's hold (doc/architecture.md §3.3) ----
 *
 * With a policy daemon attached (its lease fresh) to a clustered array, an
 * I/O error on a member that is not the last copy does not fail it at
 * once.  A failed read makes it suspect (reads try other copies first)
 * and is read elsewhere.  A failed write waits, unacknowledged, for the
 * decision: the decider fails the disk cluster-wide (the member turns
 * faulty here through METADATA_UPDATED, and the write completes without
 * it, as md's would), or fences this node (the write never completes), or
 * wait.  Nothing is acknowledged that the member lacks while another node
 * may still read it.  With no decision within confirm_timeout, while the
 * daemon does not renew the hold, the member fails here as md fails it. */

bool clr_arr_policy_applies_locked(struct clr_array *a, struct arr_member *m, uint64_t now)
{
    return a->cl && now < a->policy_until_ms && m->state == ARR_M_IN_SYNC && m->role >= 0 &&
           clr_arr_enough_without(a, m->role);
}

int clr_arr_read_failed(struct clr_array *a, struct arr_req *rq, struct arr_member *m, int err, bool *kept)
{
    uint64_t now = clr_arr_now_ms();

    *kept = false;
    clr_mutex_lock(&a->lock);
    if (!clr_arr_policy_applies_locked(a, m, now)) {
        clr_mutex_unlock(&a->lock);
        return clr_arr_member_failed(a, rq, m, err);
    }
    *kept = true;
    note_io_error_locked(m, err, false);
    if (!m->suspect_ms || now >= m->suspect_ms + a->policy_confirm_ms)
        clr_arr_log(a, LOG_WARNING, "%s: read error (%s): read from another copy; the policy daemon decides",
                    m->path, strerror(-err));
    m->suspect_ms = now;
    clr_mutex_unlock(&a->lock);
    return 0;
}

/* Row 1, md's corrected read: the sectors go back onto @m from a good
 * copy.  The rewrite is a resync of the bitmap chunks over them, so that
 * it runs as every resync does in a cluster: under `resync`, inside a
 * window every node drained its writes from first.  No other node's write
 * can land between the good copy's read and the rewrite.  The pass reads
 * a copy that is not suspect, writes it to the others and reads the
 * rewritten one back (mirror_sync_unit).  Nothing here is needed for the
 * data to be right: the good copy already served the read. */
void clr_arr_rewrite_later(struct clr_array *a, struct arr_member *m, uint64_t ls, uint64_t n)
{
    uint64_t cs = a->bmc.chunk_sectors, s, e;
    bool queued;

    if (!cs || !n || ls >= a->sync_sectors)
        return;
    s = ls / cs * cs;
    e = (ls + n + cs - 1) / cs * cs;
    if (e > a->sync_sectors)
        e = a->sync_sectors;
    clr_mutex_lock(&a->bm_lock);
    queued = clr_bmc_is_needed(&a->bmc, s / cs) && clr_bmc_is_needed(&a->bmc, (e - 1) / cs);
    clr_bmc_mark_needed(&a->bmc, s, e - s);
    clr_mutex_unlock(&a->bm_lock);
    clr_mutex_lock(&a->lock);
    a->policy_rewrites++;
    if (!queued)
        clr_arr_log(a, LOG_WARNING,
                    "%s: media error on a read of sectors %" PRIu64 "+%" PRIu64
                    ", served by another copy: they are rewritten from it (resync of bitmap chunk %" PRIu64
                    "%s)",
                    m->path, ls, n, s / cs, e - s > cs ? " on" : "");
    a->resync_pending = true;
    clr_arr_sync_kick_locked(a);
    clr_mutex_unlock(&a->lock);
}

void clr_arr_rewrite_done(struct clr_array *a, struct arr_member *m, int err)
{
    clr_mutex_lock(&a->lock);
    if (err) {
        note_io_error_locked(m, err, true);
        clr_arr_log(a, LOG_ERR, "%s: rewritten from a good copy, but the read back failed (%s)", m->path,
                    strerror(-err));
    } else {
        m->rewrites++;
        clr_arr_log(a, LOG_NOTICE, "%s: rewritten from a good copy and read back (%u corrected)", m->path,
                    m->rewrites);
    }
    clr_mutex_unlock(&a->lock);
}

/* Waits (a->lock held, dropped while waiting) until @m is no longer in
 * sync (failed by the decision, here or by another node), the array stops,
 * or confirm_timeout passed without a renewed hold.  -EAGAIN: stopping. */
static int policy_hold_locked(struct clr_array *a, struct arr_member *m, int err)
{
    uint64_t now = clr_arr_now_ms(), deadline = now + a->policy_confirm_ms;
    /* a reservation conflict (row 7): this node has been fenced, not the
     * disk; its writes wait, with no timeout, for the daemon to stop the
     * engine, and never fail the member */
    bool resv = clr_policy_errno_class(err) == CLR_POL_ERR_RESV, timed_out = false;

    m->suspect_ms = now;
    if (m->held++ == 0) {
        m->held_since_ms = now;
        a->policy_holds++;
        if (resv)
            clr_arr_log(
                a, LOG_CRIT,
                "%s: write refused (%s): this node has been fenced; writes wait for the engine to stop",
                m->path, strerror(-err));
        else
            clr_arr_log(
                a, LOG_WARNING,
                "%s: write error (%s): writes to it wait up to %u ms for the policy daemon's decision",
                m->path, strerror(-err), a->policy_confirm_ms);
    }
    while (m->state == ARR_M_IN_SYNC && !a->stopping && !a->stop_requested && !a->crashed) {
        uint64_t until = deadline > a->policy_hold_until_ms ? deadline : a->policy_hold_until_ms;
        struct timespec ts;

        now = clr_arr_now_ms();
        if (resv && until <= now + 1000)
            until = now + 1000;
        if (now >= until) {
            timed_out = true;
            break;
        }
        /* wake at least every second: the daemon's hold is renewed
         * without a signal; a->cond waits on CLOCK_REALTIME */
        if (until > now + 1000)
            until = now + 1000;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)((until - now) / 1000);
        ts.tv_nsec += (long)((until - now) % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        clr_cond_timedwait(&a->cond, &a->lock, &ts);
    }
    if (--m->held == 0)
        m->held_since_ms = 0;
    if (timed_out && m->state == ARR_M_IN_SYNC) {
        a->policy_timeouts++;
        clr_arr_log(a, LOG_ERR, "%s: no policy decision within %u ms: failing it, as md does", m->path,
                    a->policy_confirm_ms);
    }
    return (a->stopping || a->stop_requested) && m->state == ARR_M_IN_SYNC ? -EAGAIN : 0;
}

void clr_arr_note_io_error(struct clr_array *a, struct arr_member *m, int err, bool write)
{
    clr_mutex_lock(&a->lock);
    note_io_error_locked(m, err, write);
    clr_mutex_unlock(&a->lock);
}

int clr_arr_member_failed(struct clr_array *a, struct arr_req *rq, struct arr_member *m, int err)
{
    if (err)
        clr_arr_note_io_error(a, m, err, false);
    return clr_arr_member_failed_counted(a, rq, m, err);
}

int clr_arr_member_failed_counted(struct clr_array *a, struct arr_req *rq, struct arr_member *m, int err)
{
    bool was, ok;
    uint64_t gen;
    char why[96];

    if (err)
        snprintf(why, sizeof why, "I/O error (%s)", strerror(-err));
    else
        snprintf(why, sizeof why, "failed on request");
    clr_mutex_lock(&a->lock);
    if (err && clr_arr_policy_applies_locked(a, m, clr_arr_now_ms()) && policy_hold_locked(a, m, err)) {
        clr_mutex_unlock(&a->lock);
        return -EAGAIN;
    }
    was = m->state == ARR_M_FAULTY;
    ok = clr_arr_mark_faulty_locked(a, m);
    if (!ok) {
        if (!a->frozen)
            clr_arr_log(
                a, LOG_CRIT,
                "%s: %s on the last copy: array frozen; 'clraid thaw %s --error' fails the blocked I/O",
                m->path, why, a->name);
        a->frozen = true;
        clr_mutex_unlock(&a->lock);
        return -EAGAIN;
    }
    if (!was && m->state == ARR_M_FAULTY)
        clr_arr_log(a, LOG_ERR, "%s: %s: member marked faulty, array runs degraded", m->path, why);
    gen = m->faulty_gen;
    clr_mutex_unlock(&a->lock);
    clr_arr_bm_set_degraded(a);
    /* The failure is on disk before the caller acknowledges anything. */
    if (rq && rq->deferring) {
        if (gen > rq->defer_gen)
            rq->defer_gen = gen;
        return 0;
    }
    return announce_failure(a, gen) ? -EAGAIN : 0;
}

/* A failure (state generation @gen) is written to the superblocks and, in
 * a cluster, METADATA_UPDATED delivered to every node before anything that
 * depends on it is acknowledged. If that cannot be done (metadata lock,
 * superblock write or broadcast failed or was refused), the array freezes
 * (doc/architecture.md §3.2: like a lost last copy, no error reaches the
 * client; the policy module fences this node, or the operator thaws it
 * with --error, which fails the request with EIO); a thaw without error
 * retries. */
static int announce_failure(struct clr_array *a, uint64_t gen)
{
    for (;;) {
        int rc = clr_arr_sb_update(a, gen, false);

        if (rc == 0 || a->crashed)
            return 0;
        rc = freeze_and_wait(a, rc,
                             a->cl ? "a member failure could not be recorded and announced to the cluster"
                                   : "a member failure could not be recorded");
        if (rc)
            return rc;
    }
}

int clr_arr_wait_thaw(struct clr_array *a)
{
    int rc;

    clr_mutex_lock(&a->lock);
    a->blocked++;
    while (a->frozen && !a->thaw_err && !a->stopping && !a->stop_requested)
        clr_cond_wait(&a->cond, &a->lock);
    a->blocked--;
    rc = (a->frozen && a->thaw_err) || a->stopping || a->stop_requested ? -EIO : 0;
    clr_mutex_unlock(&a->lock);
    return rc;
}

/* ---- superblocks ---- */

static void fill_member_sb(const struct clr_array *a, const struct arr_member *m, bool clean,
                           struct clr_md_sb *sb)
{
    *sb = a->sb;
    sb->dev_number = m->dev_number;
    memcpy(sb->device_uuid, m->sb.device_uuid, 16);
    sb->data_offset = m->sb.data_offset;
    sb->data_size = m->sb.data_size;
    sb->super_offset = m->sb.super_offset;
    sb->devflags = m->sb.devflags;
    sb->bblog_shift = m->sb.bblog_shift;
    sb->bblog_size = m->sb.bblog_size;
    sb->bblog_offset = m->sb.bblog_offset;
    sb->feature_map &= ~(CLR_MD_FEAT_RECOVERY_OFFSET | CLR_MD_FEAT_RECOVERY_BITMAP);
    sb->recovery_offset = 0;
    if (m->state == ARR_M_REBUILDING) {
        sb->feature_map |= CLR_MD_FEAT_RECOVERY_OFFSET;
        if (m->bitmap_recovery)
            sb->feature_map |= CLR_MD_FEAT_RECOVERY_BITMAP;
        sb->recovery_offset = m->recovery_offset;
    }
    sb->resync_offset = clean ? CLR_MD_MAX_SECTOR : 0;
}

/* One round (meta_lock held): bump events, rebuild the role table from
 * the member states, encode every live member's superblock into sb_buf.
 * @return how many, in @tgt; *snap: the state generation they carry. */
static unsigned sb_encode_round(struct clr_array *a, bool clean, struct arr_member **tgt, uint64_t *snap)
{
    unsigned n = 0;

    clr_mutex_lock(&a->lock);
    *snap = a->state_gen;
    a->sb.events++;
    a->sb.utime = (uint64_t)time(NULL);
    for (uint32_t i = 0; i < a->sb.max_dev; i++)
        a->sb.dev_roles[i] = CLR_MD_ROLE_SPARE;
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];

        if (m->dev_number >= a->sb.max_dev)
            continue;
        if (m->state == ARR_M_FAULTY)
            a->sb.dev_roles[m->dev_number] = CLR_MD_ROLE_FAULTY;
        else if (arr_writable(m->state) && m->role >= 0)
            a->sb.dev_roles[m->dev_number] = (uint16_t)m->role;
    }
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];
        struct clr_md_sb sb;

        if (m->state == ARR_M_FAULTY || m->state == ARR_M_REMOVED || !m->io)
            continue;
        fill_member_sb(a, m, clean, &sb);
        m->sb.events = sb.events;
        clr_md_sb_encode(&sb, a->sb_buf + (size_t)n * CLR_MD_SB_AREA_BYTES, CLR_MD_SB_AREA_BYTES);
        tgt[n++] = m;
    }
    clr_mutex_unlock(&a->lock);
    return n;
}

/* Writes the round FUA to every target.  A member whose write failed is
 * marked faulty (*again: the round is repeated without it); if that is
 * the last copy the array freezes and the error is returned. */
static int sb_write_round(struct clr_array *a, struct arr_member **tgt, unsigned n, bool *again)
{
    struct arr_leg legs[ARR_MAX_MEMBERS];
    struct clr_io_wg wg;
    int rc = 0;

    *again = false;
    clr_io_wg_init(&wg);
    for (unsigned i = 0; i < n; i++) {
        legs[i] = (struct arr_leg){ .wg = &wg, .m = tgt[i] };
        clr_io_wg_add(&wg, 1);
        int s = clr_io_write(tgt[i]->io, a->sb_buf + (size_t)i * CLR_MD_SB_AREA_BYTES, CLR_MD_SB_AREA_BYTES,
                             CLR_MD_V12_SB_SECTOR * ARR_SECTOR, CLR_IO_FUA, clr_arr_leg_done, &legs[i]);
        if (s < 0)
            clr_arr_leg_done(&legs[i], s);
    }
    clr_io_wg_wait(&wg);
    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < n; i++) {
        if (legs[i].res >= 0)
            continue;
        if (clr_arr_mark_faulty_locked(a, tgt[i])) {
            clr_arr_log(a, LOG_ERR, "%s: superblock write failed (%s): member marked faulty", tgt[i]->path,
                        strerror(-legs[i].res));
            *again = true;
        } else {
            a->frozen = true;
            rc = legs[i].res;
        }
    }
    clr_mutex_unlock(&a->lock);
    return rc;
}

/* Cluster: an update outside our `metadata` takes it first (before
 * meta_lock: a holder of it may need meta_lock) and reloads the
 * superblock (events only grow).  *taken: we took it; 1: nothing to do
 * (@gen is announced already). */
static int sb_meta_begin(struct clr_array *a, uint64_t gen, bool *taken)
{
    bool done;
    int rc;

    *taken = false;
    if (!a->cl || arr_cl_meta_held(a))
        return 0;
    clr_mutex_lock(&a->meta_lock);
    done = gen && a->sb_announced_gen >= gen;
    clr_mutex_unlock(&a->meta_lock);
    if (done)
        return 1;
    rc = arr_cl_meta_begin(a);
    if (rc) {
        clr_arr_log(a, LOG_ERR, "cluster: cannot take the metadata lock: %s", strerror(-rc));
        return rc;
    }
    *taken = true;
    return 0;
}

/* Brings every live superblock to at least state generation @gen (0: any
 * new update): bump events, write all non-faulty members FUA. A member
 * whose write fails is failed and the update repeated without it. */
int clr_arr_sb_update(struct clr_array *a, uint64_t gen, bool clean)
{
    struct arr_member *tgt[ARR_MAX_MEMBERS];
    bool cl_meta, wrote = false;
    int rc;

    if (a->crashed)
        return 0;
    rc = sb_meta_begin(a, gen, &cl_meta);
    if (rc)
        return rc > 0 ? 0 : rc;
    clr_mutex_lock(&a->meta_lock);
    /* announced, not only written: a failure another thread wrote may
     * still be on its way to the other nodes (wait for that) */
    if (!gen || a->sb_announced_gen < gen) {
        if (a->cluster)
            clean = a->sb.resync_offset == CLR_MD_MAX_SECTOR; /* the bitmaps carry crash state */
        for (int tries = 0; tries < 8; tries++) {
            uint64_t snap;
            unsigned n = sb_encode_round(a, clean, tgt, &snap);
            bool again;

            int r = sb_write_round(a, tgt, n, &again);

            if (r)
                rc = r; /* frozen: kept through later rounds */
            a->sb_done_gen = snap;
            if (!a->cl && rc == 0 && snap > a->sb_announced_gen)
                a->sb_announced_gen = snap; /* cluster: once METADATA_UPDATED is delivered */
            if (!again)
                break;
            clr_arr_bm_set_degraded(a);
        }
        wrote = true;
    }
    clr_mutex_unlock(&a->meta_lock);
    if (cl_meta) {
        int mrc = arr_cl_meta_end(a, wrote);

        if (rc == 0)
            rc = mrc;
    }
    return rc;
}
