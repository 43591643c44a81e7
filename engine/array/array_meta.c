/* clraid array core: run/stop, superblock updates, member failure and
 * freeze, the write-intent bitmap (batched flushes, lazy clearing) and the
 * range lock. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "array/array_internal.h"

void clr_arr_log(struct clr_array *a, int prio, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (a->log)
        a->log(a->log_opaque, prio, msg);
    else if (prio <= LOG_WARNING)
        fprintf(stderr, "clraid: %s: %s\n", a->name, msg);
}

uint64_t clr_arr_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t clr_arr_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void clr_arr_leg_done(void *arg, int res)
{
    struct arr_leg *l = arg;

    l->res = res < 0 ? res : 0;
    clr_io_wg_done(l->wg, res < 0 ? res : 0);
}

void clr_arr_view(struct clr_array *a, struct arr_view *v)
{
    pthread_mutex_lock(&a->lock);
    for (uint32_t r = 0; r < a->g.raid_disks; r++) {
        v->m[r] = a->role_mem[r];
        v->st[r] = v->m[r] ? v->m[r]->state : ARR_M_REMOVED;
        v->wb[r] = NULL;
    }
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];

        if (m->write_behind && m->state == ARR_M_FAULTY && m->io && m->role >= 0 &&
            (uint32_t)m->role < a->g.raid_disks && v->m[m->role] != m)
            v->wb[m->role] = m;
    }
    pthread_mutex_unlock(&a->lock);
}

/* ---- client writes in flight (a remote re-add drains them) ---- */

unsigned clr_arr_wr_enter(struct clr_array *a)
{
    unsigned e;

    pthread_mutex_lock(&a->lock);
    e = (unsigned)(a->wr_epoch & 1);
    a->wr_inflight[e]++;
    pthread_mutex_unlock(&a->lock);
    return e;
}

void clr_arr_wr_exit(struct clr_array *a, unsigned e)
{
    pthread_mutex_lock(&a->lock);
    if (--a->wr_inflight[e] == 0)
        pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
}

/* New writes count in the next epoch: the ones in flight now drain
 * however steady the stream is. One drain at a time (the receive thread). */
void clr_arr_wr_drain(struct clr_array *a)
{
    unsigned e;

    pthread_mutex_lock(&a->lock);
    while (a->wr_draining)
        pthread_cond_wait(&a->cond, &a->lock);
    a->wr_draining = true;
    e = (unsigned)(a->wr_epoch++ & 1);
    while (a->wr_inflight[e])
        pthread_cond_wait(&a->cond, &a->lock);
    a->wr_draining = false;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
}

/* ---- range lock ---- */

void clr_arr_rl_init(struct arr_rlock *rl)
{
    pthread_mutex_init(&rl->mu, NULL);
    pthread_cond_init(&rl->cv, NULL);
    rl->held = NULL;
}

void clr_arr_rl_destroy(struct arr_rlock *rl)
{
    pthread_mutex_destroy(&rl->mu);
    pthread_cond_destroy(&rl->cv);
}

static bool rl_overlaps(const struct arr_rlock *rl, uint64_t s, uint64_t e)
{
    for (const struct arr_range *r = rl->held; r; r = r->next)
        if (r->start < e && s < r->end)
            return true;
    return false;
}

void clr_arr_rl_lock(struct arr_rlock *rl, struct arr_range *r, uint64_t start, uint64_t n)
{
    pthread_mutex_lock(&rl->mu);
    while (rl_overlaps(rl, start, start + n))
        pthread_cond_wait(&rl->cv, &rl->mu);
    r->start = start;
    r->end = start + n;
    r->next = rl->held;
    rl->held = r;
    pthread_mutex_unlock(&rl->mu);
}

void clr_arr_rl_unlock(struct arr_rlock *rl, struct arr_range *r)
{
    pthread_mutex_lock(&rl->mu);
    for (struct arr_range **pp = &rl->held; *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    }
    pthread_cond_broadcast(&rl->cv);
    pthread_mutex_unlock(&rl->mu);
}

/* ---- member states ---- */

bool clr_arr_enough_without(struct clr_array *a, int role)
{
    bool failed[CLR_RAID_MAX_DISKS];

    for (uint32_t r = 0; r < a->g.raid_disks; r++)
        failed[r] = !a->role_mem[r] || a->role_mem[r]->state != ARR_M_IN_SYNC || (int)r == role;
    return a->g.pers->enough(&a->g, failed);
}

/* Degraded = some role without an in-sync member. Caller holds lock. */
void clr_arr_recompute_locked(struct clr_array *a)
{
    bool d = false;

    for (uint32_t r = 0; r < a->g.raid_disks; r++)
        d |= !a->role_mem[r] || a->role_mem[r]->state != ARR_M_IN_SYNC;
    a->degraded = d;
}

void clr_arr_bm_set_degraded(struct clr_array *a)
{
    bool d;

    pthread_mutex_lock(&a->lock);
    d = a->degraded;
    pthread_mutex_unlock(&a->lock);
    pthread_mutex_lock(&a->bm_lock);
    clr_bmc_set_degraded(&a->bmc, d);
    pthread_mutex_unlock(&a->bm_lock);
}

void clr_arr_sync_kick_locked(struct clr_array *a)
{
    pthread_cond_broadcast(&a->cond);
}

/* A hot spare takes the role a failed member left. Caller holds lock. */
static void take_spare_locked(struct clr_array *a, int role)
{
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *s = a->mem[i];

        if (s->state != ARR_M_SPARE || !s->io)
            continue;
        s->state = ARR_M_REBUILDING;
        s->role = role;
        s->recovery_offset = 0;
        s->bitmap_recovery = false;
        a->role_mem[role] = s;
        clr_arr_log(a, LOG_NOTICE, "%s: hot spare takes role %d, rebuilding", s->path, role);
        clr_arr_sync_kick_locked(a);
        return;
    }
}

void clr_arr_take_spare_locked(struct clr_array *a, int role)
{
    take_spare_locked(a, role);
}

/* Another node marked @m faulty: follow without writing anything and
 * without starting a recovery here (the node that saw the error does). */
bool clr_arr_mark_faulty_remote_locked(struct clr_array *a, struct arr_member *m)
{
    int role = m->role;

    if (m->state == ARR_M_FAULTY || m->state == ARR_M_REMOVED)
        return false;
    /* write-behind: a node that has not processed the same update yet may
     * still read it; our writes keep it current for them */
    m->write_behind = m->state == ARR_M_IN_SYNC && m->io;
    m->state = ARR_M_FAULTY;
    m->remote_rebuild = false;
    m->bits_gathered = false;
    m->faulty_gen = a->state_gen;   /* already on disk: nothing to write */
    if (role >= 0 && a->role_mem[role] == m)
        a->role_mem[role] = NULL;
    clr_arr_recompute_locked(a);
    return true;
}

/* Superblock updates for failures seen inside a range-locked section
 * (client write, sync unit) wait until the section ends (cluster mode):
 * a remote resync's drain must never wait for our broadcast. */
static __thread bool tl_nowait;    /* see clr_arr_nowait() */
static __thread struct clr_array *tl_defer;
static __thread uint64_t tl_defer_gen;
/* write-behind legs that failed inside the section (their members) */
#define DEFER_BEHIND_MAX 8
static __thread struct arr_member *tl_behind[DEFER_BEHIND_MAX];
static __thread unsigned tl_nbehind;
static __thread bool tl_behind_any;

void clr_arr_defer_begin(struct clr_array *a)
{
    if (a->cl && !tl_defer) {
        tl_defer = a;
        tl_defer_gen = 0;
        tl_nbehind = 0;
        tl_behind_any = false;
    }
}

static int announce_failure(struct clr_array *a, uint64_t gen);
static int behind_barrier(struct clr_array *a, struct arr_member *const *ms, unsigned n);

int clr_arr_defer_end(struct clr_array *a)
{
    uint64_t gen;

    if (tl_defer != a)
        return 0;
    tl_defer = NULL;
    gen = tl_defer_gen;
    tl_defer_gen = 0;
    if (a->cl) {
        /* a member this node failed is left out of our writes at once:
         * no write is acked before the others stop reading it either */
        uint64_t lf = atomic_load(&a->local_fail_gen);

        if (lf > gen && lf > atomic_load(&a->sb_announced_gen))
            gen = lf;
    }
    if (tl_behind_any) {
        int rc = gen ? announce_failure(a, gen) : 0;

        tl_behind_any = false;
        if (rc == 0)
            rc = behind_barrier(a, tl_behind, tl_nbehind);
        tl_nbehind = 0;
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
        int rc = clr_arr_cl_meta_begin(a);

        if (rc == 0) {
            clr_arr_cl_meta_end(a, false);
            pthread_mutex_lock(&a->lock);
            for (unsigned i = 0; i < n; i++)
                ms[i]->write_behind = false;
            pthread_mutex_unlock(&a->lock);
            return 0;
        }
        if (a->crashed)
            return 0;
        pthread_mutex_lock(&a->lock);
        if (!a->frozen && !a->stopping)
            clr_arr_log(a, LOG_CRIT, "a write-behind leg failed and the cluster metadata lock cannot be taken (%s): array frozen; 'clraid thaw %s --error' fails the blocked I/O",
                        strerror(-rc), a->name);
        a->frozen = true;
        pthread_mutex_unlock(&a->lock);
        if (tl_nowait)
            return rc;
        rc = clr_arr_wait_thaw(a);
        if (rc)
            return rc;
    }
}

int clr_arr_behind_failed(struct clr_array *a, struct arr_member *m)
{
    if (!a->cl)
        return 0;
    if (tl_defer == a) {
        tl_behind_any = true;
        for (unsigned i = 0; i < tl_nbehind; i++)
            if (tl_behind[i] == m)
                return 0;
        if (tl_nbehind < DEFER_BEHIND_MAX)
            tl_behind[tl_nbehind++] = m;
        return 0;
    }
    return behind_barrier(a, &m, 1) ? -EAGAIN : 0;
}

/* Marks @m Faulty under lock; false if that would leave too little redundancy. */
static bool mark_faulty_locked(struct clr_array *a, struct arr_member *m)
{
    int role = m->role;

    if (m->state == ARR_M_FAULTY || m->state == ARR_M_REMOVED) {
        m->write_behind = false;    /* we saw it fail ourselves: stop */
        return true;
    }
    if (m->state == ARR_M_IN_SYNC && !clr_arr_enough_without(a, role))
        return false;
    m->write_behind = false;
    m->bits_gathered = false;
    m->state = ARR_M_FAULTY;
    m->faulty_gen = ++a->state_gen;
    atomic_store(&a->local_fail_gen, m->faulty_gen);
    if (role >= 0 && a->role_mem[role] == m)
        a->role_mem[role] = NULL;
    clr_arr_recompute_locked(a);
    if (role >= 0)
        take_spare_locked(a, role);
    return true;
}

int clr_arr_member_failed(struct clr_array *a, struct arr_member *m, int err)
{
    bool was, ok;
    uint64_t gen;

    pthread_mutex_lock(&a->lock);
    was = m->state == ARR_M_FAULTY;
    ok = mark_faulty_locked(a, m);
    if (!ok) {
        if (!a->frozen)
            clr_arr_log(a, LOG_CRIT, "%s: I/O error (%s) on the last copy: array frozen; 'clraid thaw %s --error' fails the blocked I/O",
                        m->path, strerror(-err), a->name);
        a->frozen = true;
        pthread_mutex_unlock(&a->lock);
        return -EAGAIN;
    }
    if (!was && m->state == ARR_M_FAULTY)
        clr_arr_log(a, LOG_ERR, "%s: I/O error (%s): member marked faulty, array runs degraded",
                    m->path, strerror(-err));
    gen = m->faulty_gen;
    pthread_mutex_unlock(&a->lock);
    clr_arr_bm_set_degraded(a);
    /* The failure is on disk before the caller acknowledges anything. */
    if (tl_defer == a) {
        if (gen > tl_defer_gen)
            tl_defer_gen = gen;
        return 0;
    }
    return announce_failure(a, gen) ? -EAGAIN : 0;
}

/* A failure (state generation @gen) is written to the superblocks and, in
 * a cluster, METADATA_UPDATED delivered to every node before anything that
 * depends on it is acknowledged. If that cannot be done (metadata lock,
 * superblock write or broadcast failed or was refused), the array freezes
 * (§6: like a lost last copy, no error reaches the client; the policy
 * module fences this node, or the operator thaws it with --error, which
 * fails the request with EIO); a thaw without error retries. */
bool clr_arr_nowait(bool on)
{
    bool was = tl_nowait;

    tl_nowait = on;
    return was;
}

static int announce_failure(struct clr_array *a, uint64_t gen)
{
    for (;;) {
        int rc = clr_arr_sb_update(a, gen, false);

        if (rc == 0 || a->crashed)
            return 0;
        pthread_mutex_lock(&a->lock);
        if (!a->frozen && !a->stopping)
            clr_arr_log(a, LOG_CRIT, "a member failure could not be recorded%s (%s): array frozen; 'clraid thaw %s --error' fails the blocked I/O",
                        a->cl ? " and announced to the cluster" : "", strerror(-rc), a->name);
        a->frozen = true;
        pthread_mutex_unlock(&a->lock);
        /* management calls (they hold mgmt_lock, which a thaw by re-add
         * and the stop need) fail instead of waiting */
        if (tl_nowait)
            return rc;
        rc = clr_arr_wait_thaw(a);
        if (rc)
            return rc;
    }
}

int clr_arr_wait_thaw(struct clr_array *a)
{
    int rc;

    pthread_mutex_lock(&a->lock);
    a->blocked++;
    while (a->frozen && !a->thaw_err && !a->stopping)
        pthread_cond_wait(&a->cond, &a->lock);
    a->blocked--;
    rc = (a->frozen && a->thaw_err) || a->stopping ? -EIO : 0;
    pthread_mutex_unlock(&a->lock);
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

/* Brings every live superblock to at least state generation @gen (0: any
 * new update): bump events, write all non-faulty members FUA. A member
 * whose write fails is failed and the update repeated without it. */
int clr_arr_sb_update(struct clr_array *a, uint64_t gen, bool clean)
{
    struct arr_member *tgt[ARR_MAX_MEMBERS];
    struct arr_leg legs[ARR_MAX_MEMBERS];
    unsigned n;
    int rc = 0;

    bool cl_meta = false, wrote = false;

    if (a->crashed)
        return 0;
    if (a->cl && !clr_arr_cl_meta_held()) {
        /* cluster: under `metadata` (taken before meta_lock: a holder of
         * it may need meta_lock), reloaded from disk (events only grow) */
        pthread_mutex_lock(&a->meta_lock);
        bool done = gen && a->sb_announced_gen >= gen;
        pthread_mutex_unlock(&a->meta_lock);
        if (done)
            return 0;
        rc = clr_arr_cl_meta_begin(a);
        if (rc) {
            clr_arr_log(a, LOG_ERR, "cluster: cannot take the metadata lock: %s", strerror(-rc));
            return rc;
        }
        cl_meta = true;
    }
    pthread_mutex_lock(&a->meta_lock);
    /* announced, not only written: a failure another thread wrote may
     * still be on its way to the other nodes (wait for that) */
    if (gen && a->sb_announced_gen >= gen)
        goto out;
    if (a->cluster)
        clean = a->sb.resync_offset == CLR_MD_MAX_SECTOR;  /* the bitmaps carry crash state */
    for (int tries = 0; tries < 8; tries++) {
        struct clr_io_wg wg;
        uint64_t snap;
        bool again = false;

        pthread_mutex_lock(&a->lock);
        snap = a->state_gen;
        a->sb.events++;
        a->sb.utime = (uint64_t)time(NULL);
        for (uint32_t i = 0; i < a->sb.max_dev; i++)
            a->sb.dev_roles[i] = CLR_MD_ROLE_SPARE;
        n = 0;
        for (unsigned i = 0; i < a->nmem; i++) {
            struct arr_member *m = a->mem[i];

            if (m->dev_number < a->sb.max_dev) {
                if (m->state == ARR_M_FAULTY)
                    a->sb.dev_roles[m->dev_number] = CLR_MD_ROLE_FAULTY;
                else if ((m->state == ARR_M_IN_SYNC || m->state == ARR_M_REBUILDING) && m->role >= 0)
                    a->sb.dev_roles[m->dev_number] = (uint16_t)m->role;
            }
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
        pthread_mutex_unlock(&a->lock);
        clr_io_wg_init(&wg);
        for (unsigned i = 0; i < n; i++) {
            legs[i] = (struct arr_leg){ .wg = &wg, .m = tgt[i] };
            clr_io_wg_add(&wg, 1);
            int s = clr_io_write(tgt[i]->io, a->sb_buf + (size_t)i * CLR_MD_SB_AREA_BYTES,
                                 CLR_MD_SB_AREA_BYTES, CLR_MD_V12_SB_SECTOR * ARR_SECTOR,
                                 CLR_IO_FUA, clr_arr_leg_done, &legs[i]);
            if (s < 0)
                clr_arr_leg_done(&legs[i], s);
        }
        clr_io_wg_wait(&wg);
        pthread_mutex_lock(&a->lock);
        for (unsigned i = 0; i < n; i++) {
            if (legs[i].res < 0) {
                if (mark_faulty_locked(a, tgt[i])) {
                    clr_arr_log(a, LOG_ERR, "%s: superblock write failed (%s): member marked faulty",
                                tgt[i]->path, strerror(-legs[i].res));
                    again = true;
                } else {
                    a->frozen = true;
                    rc = legs[i].res;
                }
            }
        }
        pthread_mutex_unlock(&a->lock);
        a->sb_done_gen = snap;
        if (!a->cl && rc == 0 && snap > a->sb_announced_gen)
            a->sb_announced_gen = snap;     /* cluster: once METADATA_UPDATED is delivered */
        if (!again)
            break;
        clr_arr_bm_set_degraded(a);
    }
    wrote = true;
out:
    pthread_mutex_unlock(&a->meta_lock);
    if (cl_meta) {
        int mrc = clr_arr_cl_meta_end(a, wrote);

        if (rc == 0)
            rc = mrc;
    }
    return rc;
}

/* ---- bitmap ---- */

struct bm_fail {
    struct arr_member *m;
    int err;
};

/* Writes this slot's region (sb + bits) to every live member with FUA.
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
    pthread_mutex_unlock(&a->bm_lock);

    pthread_mutex_lock(&a->lock);
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
    pthread_mutex_unlock(&a->lock);
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
        pthread_mutex_lock(&a->lock);
        bool was = tgt[i]->state == ARR_M_FAULTY;

        if (!mark_faulty_locked(a, tgt[i])) {
            if (!a->frozen)
                clr_arr_log(a, LOG_CRIT, "%s: bitmap write failed (%s) on the last copy: array frozen",
                            tgt[i]->path, strerror(-legs[i].res));
            a->frozen = true;
        } else if (!was) {
            clr_arr_log(a, LOG_ERR, "%s: bitmap write failed (%s): member marked faulty, array runs degraded",
                        tgt[i]->path, strerror(-legs[i].res));
        }
        pthread_mutex_unlock(&a->lock);
        fails[(*nf)++] = (struct bm_fail){ tgt[i], legs[i].res };
    }
    pthread_mutex_lock(&a->bm_lock);
    if (ok && b.events_cleared > a->bsb.events_cleared)
        a->bsb.events_cleared = b.events_cleared;
    return ok ? 0 : -EIO;
}

/* Waits until generation @gen of the in-memory bitmap is on disk; the
 * first waiter writes, later ones ride on its flush or the next one.
 * Caller holds bm_lock (dropped meanwhile). @return 0 if a flush covering
 * @gen reached an in-sync member, else -EIO. */
static int bm_flush_to_locked(struct clr_array *a, uint64_t gen)
{
    while (a->bm_done_gen < gen) {
        struct bm_fail fails[ARR_MAX_MEMBERS];
        unsigned nf;

        if (a->bm_flushing) {
            pthread_cond_wait(&a->bm_cond, &a->bm_lock);
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
            pthread_mutex_unlock(&a->bm_lock);
            clr_arr_bm_set_degraded(a);
            for (unsigned i = 0; i < nf; i++)
                clr_arr_member_failed(a, fails[i].m, fails[i].err);
            pthread_mutex_lock(&a->bm_lock);
        }
    }
    return a->bm_ok_gen >= gen ? 0 : -EIO;
}

int clr_arr_bm_start_write(struct clr_array *a, uint64_t ss, uint64_t sn)
{
    int rc;

    if (ss + sn > a->sync_sectors)
        sn = a->sync_sectors - ss;
    pthread_mutex_lock(&a->bm_lock);
    while ((rc = clr_bmc_start_write(&a->bmc, ss, sn, NULL, NULL)) == -EBUSY) {
        pthread_mutex_unlock(&a->bm_lock);
        struct timespec ts = { 0, 1000000 };
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&a->bm_lock);
    }
    if (rc < 0) {
        pthread_mutex_unlock(&a->bm_lock);
        return rc;
    }
    /* Bits this write needs are on disk once the flush that carries the
     * latest clean -> dirty change is done, whether we made the change or
     * a concurrent writer did (its flush may still be in progress).  In
     * steady state that flush is long done: no wait, no I/O. */
    if (rc > 0 || (a->bm_ok_gen < a->bm_set_gen && a->bm_done_gen >= a->bm_set_gen))
        a->bm_set_gen = ++a->bm_want_gen;   /* new bits, or the last try failed */
    if (bm_flush_to_locked(a, a->bm_set_gen) != 0) {
        /* no in-sync member holds the bit: the data must not go out (the
         * caller waits for a thaw, as for a write to the last device) */
        clr_bmc_end_write(&a->bmc, ss, sn, false);
        pthread_mutex_unlock(&a->bm_lock);
        return -EAGAIN;
    }
    pthread_mutex_unlock(&a->bm_lock);
    return 0;
}

void clr_arr_bm_end_write(struct clr_array *a, uint64_t ss, uint64_t sn, bool ok)
{
    if (ss + sn > a->sync_sectors)
        sn = a->sync_sectors - ss;
    pthread_mutex_lock(&a->bm_lock);
    clr_bmc_end_write(&a->bmc, ss, sn, ok);
    pthread_mutex_unlock(&a->bm_lock);
}

int clr_arr_bm_flush(struct clr_array *a)
{
    int rc;

    pthread_mutex_lock(&a->bm_lock);
    rc = bm_flush_to_locked(a, ++a->bm_want_gen);
    pthread_mutex_unlock(&a->bm_lock);
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

static void *bm_daemon(void *arg)
{
    struct clr_array *a = arg;
    struct timespec next;

    clock_gettime(CLOCK_REALTIME, &next);
    pthread_mutex_lock(&a->lock);
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
            pthread_cond_timedwait(&a->cond, &a->lock, &next);
        }
        if (a->stopping)
            break;
        pthread_mutex_unlock(&a->lock);
        pthread_mutex_lock(&a->bm_lock);
        if (bm_sweep_locked(a))
            bm_flush_to_locked(a, ++a->bm_want_gen);
        pthread_mutex_unlock(&a->bm_lock);
        pthread_mutex_lock(&a->lock);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* ---- run / stop ---- */

static void close_members(struct clr_array *a)
{
    for (unsigned i = 0; i < a->nmem; i++) {
        clr_io_close(a->mem[i]->io);
        a->mem[i]->io = NULL;
    }
    clr_io_ctx_destroy(a->ctx);
    a->ctx = NULL;
    clr_arr_pool_destroy(a);
    clr_io_free(a->sb_buf);
    clr_io_free(a->bm_buf);
    a->sb_buf = a->bm_buf = NULL;
}

int clr_array_run(struct clr_array *a, struct clr_err *e)
{
    struct clr_io_ctx_opts o = { .queue_depth = 512 };
    int rc;

    if (!a->stopped)
        return clr_err_set(e, -EALREADY, "'%s' is already running", a->name);
    rc = clr_io_ctx_create(&o, &a->ctx);
    if (rc)
        return clr_err_set(e, rc, "cannot set up io_uring: %s", strerror(-rc));
    clr_arr_pool_init(a);
    if (clr_io_alloc((void **)&a->sb_buf, (size_t)ARR_MAX_MEMBERS * CLR_MD_SB_AREA_BYTES) ||
        clr_io_alloc((void **)&a->bm_buf, a->bm_write_bytes)) {
        close_members(a);
        return clr_err_set(e, -ENOMEM, "out of memory");
    }
    a->lbs = ARR_SECTOR;
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
    }
    pthread_mutex_lock(&a->lock);
    a->stopped = false;
    a->stopping = false;
    a->running = true;
    a->frozen = a->thaw_err = false;
    a->crashed = false;
    /* a spare assembled with a degraded array takes a vacant role now
     * (cluster: once we know we are alone, below) */
    for (uint32_t r = 0; r < a->g.raid_disks && !a->cluster; r++)
        if (!a->role_mem[r])
            take_spare_locked(a, (int)r);
    clr_arr_recompute_locked(a);
    a->resync_pending = clr_bmc_dirty_chunks(&a->bmc) > 0;
    a->state_gen++;
    pthread_mutex_unlock(&a->lock);
    clr_arr_bm_set_degraded(a);
    if (a->cluster) {
        /* Several nodes share the superblocks: no clean/active flip; our
         * slot's bits (and those of free slots) carry the crash state. */
        bool alone;

        rc = clr_arr_cl_start(a, e);
        if (rc)
            goto fail;
        alone = clr_arr_cl_alone(a);
        pthread_mutex_lock(&a->lock);
        a->resync_pending |= clr_bmc_dirty_chunks(&a->bmc) > 0;
        /* the only node: a spare takes a vacant role (else its owner does) */
        for (uint32_t r = 0; r < a->g.raid_disks && alone; r++)
            if (!a->role_mem[r])
                take_spare_locked(a, (int)r);
        clr_arr_recompute_locked(a);
        pthread_mutex_unlock(&a->lock);
        clr_arr_bm_set_degraded(a);
    } else {
        /* Mark active before any write can happen. */
        rc = clr_arr_sb_update(a, 0, false);
        if (rc) {
            clr_err_set(e, rc, "cannot write the superblocks: %s", strerror(-rc));
            goto fail;
        }
    }
    if (pthread_create(&a->bm_thread, NULL, bm_daemon, a) != 0) {
        rc = clr_err_set(e, -EAGAIN, "cannot start the bitmap thread");
        goto fail;
    }
    a->bm_thread_on = true;
    if (a->flags & CLR_ARRAY_BITMAP_ALL_DIRTY) {
        /* Every chunk dirty on disk before the first write (no resync is
         * due for them: resync_pending was decided above). */
        rc = clr_arr_bm_start_write(a, 0, a->sync_sectors);
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
    clr_arr_log(a, LOG_INFO, "started %s, %u devices, %" PRIu64 " dirty bitmap chunks",
                a->g.pers->name, a->g.raid_disks, clr_bmc_dirty_chunks(&a->bmc));
    return 0;
fail:
    clr_array_stop(a);
    return rc;
}

static int array_stop(struct clr_array *a);

int clr_array_stop(struct clr_array *a)
{
    int rc;

    if (!a)
        return 0;
    /* no management call may run against a half-stopped array */
    pthread_mutex_lock(&a->mgmt_lock);
    rc = array_stop(a);
    pthread_mutex_unlock(&a->mgmt_lock);
    return rc;
}


/* Stopping (a->lock held, released on return): wait for the requests in
 * flight, then for the sync and bitmap threads. */
static void drain_and_join_locked(struct clr_array *a)
{
    while (a->inflight)
        pthread_cond_wait(&a->cond, &a->lock);
    pthread_mutex_unlock(&a->lock);
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
    pthread_mutex_lock(&a->mgmt_lock);
    pthread_mutex_lock(&a->lock);
    if (a->stopped) {
        pthread_mutex_unlock(&a->lock);
        pthread_mutex_unlock(&a->mgmt_lock);
        return 0;
    }
    a->crashed = true;
    a->stopping = true;
    a->sync_abort = true;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
    /* the lockspace dies first: the others see MEMBER_FAILED (or, lost,
     * MEMBER_LOST until they confirm it dead) */
    clr_arr_cl_crash(a, lost, member);
    pthread_mutex_lock(&a->lock);
    drain_and_join_locked(a);
    clr_arr_cl_crash_finish(a);
    pthread_mutex_lock(&a->lock);
    a->running = false;
    a->stopped = true;
    pthread_mutex_unlock(&a->lock);
    close_members(a);
    clr_arr_log(a, LOG_WARNING, "crashed (test): nothing written");
    pthread_mutex_unlock(&a->mgmt_lock);
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

    pthread_mutex_lock(&a->lock);
    if (a->stopped) {
        pthread_mutex_unlock(&a->lock);
        return 0;
    }
    a->stopping = true;
    a->sync_abort = true;
    pthread_cond_broadcast(&a->cond);
    drain_and_join_locked(a);
    clr_arr_flush_all(a);
    /* Everything is on every leg now: idle clean chunks may go. */
    pthread_mutex_lock(&a->bm_lock);
    for (unsigned i = 0; i <= CLR_BMC_DEFAULT_IDLE_SWEEPS; i++)
        bm_sweep_locked(a);
    bm_flush_to_locked(a, ++a->bm_want_gen);
    dirty_left = clr_bmc_dirty_chunks(&a->bmc) > 0;
    pthread_mutex_unlock(&a->bm_lock);
    pthread_mutex_lock(&a->lock);
    a->state_gen++;
    pthread_mutex_unlock(&a->lock);
    if (a->cluster) {
        uint64_t lo, hi;
        bool driving = false;

        /* NEEDED chunks left: another node takes our slot over; a rebuild
         * driven here is left to the others the same way (they resume
         * what a node that left unclean was rebuilding) */
        pthread_mutex_lock(&a->lock);
        for (unsigned i = 0; i < a->nmem; i++)
            driving |= a->mem[i]->state == ARR_M_REBUILDING && !a->mem[i]->remote_rebuild;
        pthread_mutex_unlock(&a->lock);
        clr_arr_cl_leave(a, clr_arr_needed_extent(a, &lo, &hi) || driving);
    } else {
        rc = clr_arr_sb_update(a, 0, !dirty_left && !a->degraded);
    }
    pthread_mutex_lock(&a->lock);
    a->running = false;
    a->stopped = true;
    pthread_mutex_unlock(&a->lock);
    close_members(a);
    clr_arr_log(a, LOG_INFO, "stopped%s", dirty_left ? " (dirty bitmap chunks kept)" : " clean");
    return rc;
}
