/* clraid array core: the cluster host. Every md-cluster protocol sequence
 * runs in the protocol core (cluster/mdc.h); this file gives it the real
 * lock service (one clr_lock per resource name), the broadcast channel,
 * bitmap slot I/O, superblock reloads and the data path's drains, and runs
 * the lockspace's dispatch thread and the takeover (recovery) thread.
 * The core of engine/array reaches it only through the table it registers
 * at start (struct arr_cluster_ops, doc/architecture.md §5).
 *
 * Lock order (engine/common/lockrank.h): nothing of the array is held
 * while calling into the protocol core; `metadata` is taken before
 * meta_lock (clr_arr_sb_update). The core calls changed() with its mutex
 * held: that only takes cl->mu. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>

#include <blkid/blkid.h>

#include "array/array_internal.h"
#include "cluster/mdc.h"
#include "cluster/rules.h"
#include "lock/bcast.h"
#include "lock/lock.h"
#include "lock/lock_internal.h"

#define CL_JOIN_TIMEOUT_MS  10000
#define CL_BCAST_TIMEOUT_MS 30000
#define CL_SLICE_MS         200   /* bounded lock waits, then re-check stop */
#define CL_LOCK_LIMIT_MS    30000 /* a protocol lock that never comes */
#define CL_RESYNC_LIMIT_MS  1000  /* `resync`: back to the sync loop */
#define CL_MAX_CANDIDATES   8
#define CL_JOIN_BUSY_TRIES  50 /* join: our old slot still being taken over */
#define CL_JOIN_BUSY_MS     200

struct cl_lockent {
    struct cl_lockent *next;
    struct arr_cluster *cl;
    struct clr_mutex mu; /* one operation at a time per resource */
    struct clr_lock *lk;
    /* a request whose cancel timed out may still be granted: the core
     * believes @believed (CLR_LOCK_IV: nothing); a stray grant above it
     * is converted back to NL (under tmu) */
    struct clr_mutex tmu;
    bool stray, missed;
    int believed;
};

struct cl_candidate {
    int adder; /* slot that sent NEWDISK (-1: unknown) */
    uint32_t dev_number;
    uint8_t uuid[16];
    char *path;
    struct clr_io_dev *io;
};

struct arr_cluster {
    struct clr_array *a;
    struct clr_ls *ls;
    struct clr_bcast *bc;
    struct clr_mdc mdc;
    bool mdc_ready;
    bool joined;         /* clr_mdc_join() succeeded */
    struct clr_mutex mu; /* gen, stop, candidates, lock list */
    pthread_cond_t cond;
    uint64_t gen; /* bumped by changed() and events */
    bool stop;
    struct cl_lockent *locks;
    struct cl_candidate cand[CL_MAX_CANDIDATES];
    unsigned ncand;
    pthread_t rec_thread;
    bool rec_on;
    atomic_uint_fast64_t lock_ops;
    struct arr_zones *zones; /* RAID5/6: the stripe-zone locks (array_zone.c) */
    bool frozen_by_cluster;
    /* the thread that holds `metadata` (meta_begin .. meta_end) (mu) */
    bool meta_owned;
    pthread_t meta_owner;
    int members; /* live members at the last event (mu) */
    char backend[16];
    uint64_t dead_pending;   /* slots that died: NEWDISK candidates
                                     * to settle (mu) */
    uint64_t orphan_pending; /* slots whose rebuilds nobody drives
                                     * any more: died, left unclean, or
                                     * came back as a new incarnation (mu) */
    /* status timestamps, wall-clock ms (mu) */
    int64_t recovery_started_ms, read_balancing_restored_ms, takeover_at_ms;
    /* the last write hold (a member lost with its node, until fenced):
     * wall-clock ms of its start and end (0: still held / never) (mu) */
    int64_t hold_start_ms, hold_end_ms;
};

/* `metadata` is held by the calling thread (its superblock writes need
 * no second begin).  Only the holder sets or clears the owner, so the
 * answer for the calling thread cannot change under it. */
static bool cl_meta_held(struct clr_array *a)
{
    struct arr_cluster *cl = a->cl;
    bool mine;

    if (!cl)
        return false;
    clr_mutex_lock(&cl->mu);
    mine = cl->meta_owned && pthread_equal(cl->meta_owner, pthread_self());
    clr_mutex_unlock(&cl->mu);
    return mine;
}

static void cl_meta_owner(struct arr_cluster *cl, bool held)
{
    clr_mutex_lock(&cl->mu);
    cl->meta_owned = held;
    cl->meta_owner = pthread_self();
    clr_mutex_unlock(&cl->mu);
}

static int cl_meta_begin(struct clr_array *a);
static uint64_t cl_gen(struct clr_array *a);
static void cl_wait(struct clr_array *a, uint64_t gen, unsigned ms);
static int cl_meta_end(struct clr_array *a, bool send);
static const struct arr_cluster_ops cl_ops;

static bool cl_stopping(struct arr_cluster *cl)
{
    bool s;

    clr_mutex_lock(&cl->mu);
    s = cl->stop;
    clr_mutex_unlock(&cl->mu);
    return s;
}

static void cl_wake(struct arr_cluster *cl)
{
    clr_mutex_lock(&cl->mu);
    cl->gen++;
    pthread_cond_broadcast(&cl->cond);
    clr_mutex_unlock(&cl->mu);
    /* zone admissions waiting for a recovery re-check (after cl->mu: the
     * zone cache ranks above it but never calls back into it) */
    clr_arr_zones_kick(cl->zones);
}

static void deadline(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

/* ---- host: locks ---- */

/* A request whose cancel timed out may still be granted later, leaving
 * a lock the core does not know it holds (a stray `resync` EX would stop
 * every resync cluster-wide). While le->stray, a grant above what the core
 * believes it holds is converted back (NL if it believes nothing). mu and
 * tmu held; never waits more than a millisecond. */
static void stray_fix_locked(struct cl_lockent *le)
{
    int want = le->believed == CLR_LOCK_IV ? CLR_LOCK_NL : le->believed, g;

    if (!le->stray || clr_lock_wait(le->lk, 1) == -ETIMEDOUT)
        return; /* nothing stray, or the late answer is still to come */
    g = clr_lock_mode(le->lk);
    if (g != CLR_LOCK_IV && g > want) {
        if (clr_lock_request(le->lk, want, 0) == 0)
            clr_arr_log(le->cl->a, LOG_WARNING,
                        "cluster: %s granted %s after its request timed out: converting back to %s",
                        clr_lock_name(le->lk), clr_lock_mode_name(g), clr_lock_mode_name(want));
        return; /* its completion comes back to cl_ast */
    }
    le->stray = false;
}

/* Releases le->mu; a late completion that cl_ast could not handle
 * meanwhile (mu was held) is handled here. */
static void le_unlock(struct cl_lockent *le)
{
    for (;;) {
        bool again;

        clr_mutex_lock(&le->tmu);
        stray_fix_locked(le);
        le->missed = false;
        clr_mutex_unlock(&le->tmu);
        clr_mutex_unlock(&le->mu);
        clr_mutex_lock(&le->tmu);
        again = le->missed && le->stray;
        clr_mutex_unlock(&le->tmu);
        if (!again || clr_mutex_trylock(&le->mu) != 0)
            return;
    }
}

/* Completion callback (dispatch thread: must not block). */
static void cl_ast(struct clr_lock *lk, void *arg)
{
    struct cl_lockent *le = arg;

    (void)lk;
    clr_mutex_lock(&le->tmu);
    if (le->stray) {
        if (clr_mutex_trylock(&le->mu) != 0) {
            le->missed = true; /* the holder of mu handles it */
        } else {
            stray_fix_locked(le);
            clr_mutex_unlock(&le->mu);
        }
    }
    clr_mutex_unlock(&le->tmu);
}

static struct cl_lockent *lock_get(struct arr_cluster *cl, const char *res)
{
    struct cl_lockent *le;

    clr_mutex_lock(&cl->mu);
    for (le = cl->locks; le; le = le->next)
        if (strcmp(clr_lock_name(le->lk), res) == 0)
            break;
    if (!le) {
        le = calloc(1, sizeof *le);
        if (le) {
            le->cl = cl;
            le->believed = CLR_LOCK_IV;
            le->lk = clr_lock_create(cl->ls, res, cl_ast, NULL, le);
            if (!le->lk) {
                free(le);
                le = NULL;
            } else {
                clr_mutex_init(&le->mu, CLR_RANK_CL_LOCKENT, "le->mu");
                clr_mutex_init(&le->tmu, CLR_RANK_CL_LOCKENT_T, "le->tmu");
                le->next = cl->locks;
                cl->locks = le;
            }
        }
    }
    clr_mutex_unlock(&cl->mu);
    return le;
}

static int h_lock(void *arg, const char *res, int mode, unsigned flags, uint8_t *lvb)
{
    struct arr_cluster *cl = arg;
    struct cl_lockent *le = lock_get(cl, res);
    unsigned limit = strcmp(res, "resync") == 0 ? CL_RESYNC_LIMIT_MS : CL_LOCK_LIMIT_MS;
    uint64_t start = clr_lock_now_ms();
    bool stray, pend = false;
    int rc;

    if (!le)
        return -ENOMEM;
    atomic_fetch_add(&cl->lock_ops, 1);
    clr_mutex_lock(&le->mu);
    clr_mutex_lock(&le->tmu);
    stray = le->stray;
    clr_mutex_unlock(&le->tmu);
    if (stray) {
        /* a late answer (or its conversion back) may still be pending;
         * once done, this request converts from whatever is held */
        if (clr_lock_wait(le->lk, CL_SLICE_MS) == -ETIMEDOUT) {
            le_unlock(le);
            return -ETIMEDOUT;
        }
        clr_mutex_lock(&le->tmu);
        le->stray = false;
        clr_mutex_unlock(&le->tmu);
    }
    for (;;) {
        if (pend) {
            /* the cancel of the last try did not complete: its answer
             * first (never a second request over a pending one) */
            int w = clr_lock_wait(le->lk, CL_SLICE_MS);

            if (w != -ETIMEDOUT) {
                pend = false;
                if (w == 0 && clr_lock_mode(le->lk) == mode) {
                    rc = 0; /* granted after all */
                    break;
                }
                continue;
            }
            rc = -ETIMEDOUT;
        } else {
            if ((flags & CLR_LOCK_F_VALBLK) && lvb)
                memcpy(clr_lock_lvb(le->lk), lvb, CLR_LOCK_LVB_LEN);
            rc = clr_lock_sync(le->lk, mode, flags, (flags & CLR_LOCK_F_NOQUEUE) ? 0 : CL_SLICE_MS);
            if (rc != -ETIMEDOUT)
                break;
            pend = clr_lock_wait(le->lk, 1) == -ETIMEDOUT;
        }
        if (cl_stopping(cl)) {
            rc = -ESHUTDOWN;
            break;
        }
        if (clr_lock_now_ms() - start >= limit)
            break;
    }
    if (rc == 0 && (flags & CLR_LOCK_F_VALBLK) && lvb)
        memcpy(lvb, clr_lock_lvb(le->lk), CLR_LOCK_LVB_LEN);
    clr_mutex_lock(&le->tmu);
    if (rc == 0)
        le->believed = mode;
    else if (rc == -ETIMEDOUT || rc == -ESHUTDOWN)
        le->stray = true; /* a grant may still come, or came already */
    clr_mutex_unlock(&le->tmu);
    le_unlock(le);
    return rc;
}

static int h_unlock(void *arg, const char *res)
{
    struct arr_cluster *cl = arg;
    struct cl_lockent *le = lock_get(cl, res);
    bool stray;
    int rc = 0;

    if (!le)
        return -ENOMEM;
    atomic_fetch_add(&cl->lock_ops, 1);
    clr_mutex_lock(&le->mu);
    clr_mutex_lock(&le->tmu);
    stray = le->stray;
    clr_mutex_unlock(&le->tmu);
    if (stray)
        clr_lock_wait(le->lk, CL_LOCK_LIMIT_MS); /* the late answer first */
    clr_mutex_lock(&le->tmu);
    le->stray = false;
    le->believed = CLR_LOCK_IV;
    clr_mutex_unlock(&le->tmu);
    if (clr_lock_mode(le->lk) != CLR_LOCK_IV)
        rc = clr_unlock_sync(le->lk, 0, CL_LOCK_LIMIT_MS);
    le_unlock(le);
    return rc;
}

/* ---- host: broadcast ---- */

static int h_send(void *arg, const struct clr_mdc_msg *m, unsigned *refused)
{
    struct arr_cluster *cl = arg;
    struct clr_bcast_msg raw;
    struct clr_bcast_result res;
    int rc;

    memset(&raw, 0, sizeof raw);
    clr_mdc_msg_encode(m, &raw);
    memset(&res, 0, sizeof res);
    rc = clr_bcast_send(cl->bc, &raw, &res);
    if (refused)
        *refused = res.refused;
    return rc;
}

static int bcast_recv(void *arg, const struct clr_bcast_msg *m)
{
    struct arr_cluster *cl = arg;
    struct clr_mdc_msg d;
    int rc;

    if (clr_mdc_msg_decode(m, &d) != 0) {
        d.sender = -1;
    } else {
        if (d.type == CLR_MDC_TAKEOVER && d.sender >= 0 && d.slot == (uint32_t)d.sender && d.slot < 64) {
            /* that slot is alive again: none of its NEWDISKs is orphaned;
             * but a new incarnation drives no rebuild of the old one (it
             * loads every rebuilding member as driven elsewhere) */
            clr_mutex_lock(&cl->mu);
            cl->dead_pending &= ~(1ull << d.slot);
            cl->orphan_pending |= 1ull << d.slot;
            clr_mutex_unlock(&cl->mu);
        }
    }
    rc = clr_mdc_receive(&cl->mdc, m);
    if (d.sender >= 0 && d.type == CLR_MDC_BITMAP_NEEDS_SYNC && d.sender < 64) {
        /* the sender leaves unclean (dirty chunks, or a rebuild it drove):
         * once its slot is taken over (queued by the core just now), what
         * it was rebuilding resumes here (resume_orphans) */
        clr_mutex_lock(&cl->mu);
        cl->orphan_pending |= 1ull << d.sender;
        pthread_cond_broadcast(&cl->cond);
        clr_mutex_unlock(&cl->mu);
    }
    return rc;
}

/* ---- host: bitmap slots ---- */

static uint64_t slot_region_bytes(const struct clr_array *a)
{
    return a->bm_write_bytes;
}

/* First in-sync member with an open handle (the "good" member). */
static struct arr_member *good_member(struct clr_array *a)
{
    struct arr_member *g = NULL;

    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem && !g; i++)
        if (a->mem[i]->state == ARR_M_IN_SYNC && a->mem[i]->io)
            g = a->mem[i];
    clr_mutex_unlock(&a->lock);
    return g;
}

/* Slot @slot's region (bitmap sb + bits) as the union over every in-sync
 * member: a dead node's bitmap write may have reached only some of them. */
static int read_region(struct clr_array *a, unsigned slot, uint8_t **out)
{
    struct arr_member *src[ARR_MAX_MEMBERS];
    uint64_t len = slot_region_bytes(a), off = clr_bitmap_slot_offset(&a->sb, &a->bsb, slot);
    uint8_t *buf = NULL, *tmp = NULL;
    unsigned n = 0, nok = 0;
    int rc, last = -ENODEV;

    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem; i++)
        if (a->mem[i]->state == ARR_M_IN_SYNC && a->mem[i]->io)
            src[n++] = a->mem[i];
    clr_mutex_unlock(&a->lock);
    if (!n)
        return -ENODEV;
    rc = clr_io_alloc((void **)&buf, len);
    if (rc == 0 && n > 1)
        rc = clr_io_alloc((void **)&tmp, len);
    if (rc) {
        clr_io_free(buf);
        return rc;
    }
    for (unsigned i = 0; i < n; i++) {
        uint8_t *dst = nok ? tmp : buf;
        int r = clr_io_pread(src[i]->io, dst, len, off);

        if (r) {
            last = r;
            clr_arr_log(a, LOG_WARNING, "%s: cannot read bitmap slot %u: %s", src[i]->path, slot,
                        strerror(-r));
            continue;
        }
        if (nok++)
            for (uint64_t b = CLR_BITMAP_SB_BYTES; b < len; b++)
                buf[b] |= tmp[b];
    }
    clr_io_free(tmp);
    if (!nok) {
        clr_io_free(buf);
        return last;
    }
    *out = buf;
    return 0;
}

static int h_bitmap_read(void *arg, unsigned slot, uint8_t *bits, size_t nbytes)
{
    struct arr_cluster *cl = arg;
    uint8_t *buf;
    int rc = read_region(cl->a, slot, &buf);

    if (rc)
        return rc;
    if (nbytes > slot_region_bytes(cl->a) - CLR_BITMAP_SB_BYTES)
        nbytes = slot_region_bytes(cl->a) - CLR_BITMAP_SB_BYTES;
    memcpy(bits, buf + CLR_BITMAP_SB_BYTES, nbytes);
    clr_io_free(buf);
    return 0;
}

static int h_bitmap_clear(void *arg, unsigned slot)
{
    struct arr_cluster *cl = arg;
    struct clr_array *a = cl->a;
    struct arr_member *tgt[ARR_MAX_MEMBERS];
    unsigned n = 0;
    uint8_t *buf;
    int rc = read_region(a, slot, &buf);

    if (rc)
        return rc;
    memset(buf + CLR_BITMAP_SB_BYTES, 0, slot_region_bytes(a) - CLR_BITMAP_SB_BYTES);
    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];

        if ((m->state == ARR_M_IN_SYNC || m->state == ARR_M_REBUILDING) && m->io)
            tgt[n++] = m;
    }
    clr_mutex_unlock(&a->lock);
    for (unsigned i = 0; i < n && rc == 0; i++) {
        int w = clr_io_pwrite(tgt[i]->io, buf, slot_region_bytes(a),
                              clr_bitmap_slot_offset(&a->sb, &a->bsb, slot), CLR_IO_FUA);

        if (w)
            rc = clr_arr_member_failed(a, NULL, tgt[i], w) ? w : 0;
    }
    clr_io_free(buf);
    clr_mutex_lock(&cl->mu);
    cl->takeover_at_ms = clr_arr_wall_ms();
    clr_mutex_unlock(&cl->mu);
    return rc;
}

static int h_bitmap_merge(void *arg, const uint8_t *bits, size_t nbytes)
{
    struct arr_cluster *cl = arg;
    struct clr_array *a = cl->a;
    uint64_t cs = a->bmc.chunk_sectors, any = 0;

    clr_mutex_lock(&a->bm_lock);
    for (uint64_t k = 0; k < a->bmc.nchunks && k / 8 < nbytes; k++) {
        if (!clr_bitmap_test(bits, k))
            continue;
        uint64_t s = k * cs, n = s + cs <= a->sync_sectors ? cs : a->sync_sectors - s;

        clr_bmc_mark_needed(&a->bmc, s, n);
        any++;
    }
    clr_mutex_unlock(&a->bm_lock);
    if (any) {
        /* our slot, durable on every in-sync member; if none took the bits
         * the core must not clear the slot they came from */
        int rc = clr_arr_bm_flush(a);

        if (rc)
            clr_arr_log(a, LOG_ERR, "cluster: merged bits reached no in-sync member: %s", strerror(-rc));
        return rc;
    }
    return 0;
}

static int h_log_replay(void *arg, unsigned slot)
{
    struct arr_cluster *cl = arg;
    uint64_t n;

    return cl->a->plog ? clr_arr_plog_replay(cl->a->plog, slot, &n) : 0;
}

static void h_want_resync(void *arg)
{
    struct arr_cluster *cl = arg;
    struct clr_array *a = cl->a;

    clr_mutex_lock(&a->lock);
    a->resync_pending = true;
    clr_arr_sync_kick_locked(a);
    clr_mutex_unlock(&a->lock);
}

static int h_pause(void *arg, unsigned ms)
{
    struct arr_cluster *cl = arg;
    struct timespec ts;
    uint64_t g;
    int rc = 0;

    deadline(&ts, ms);
    clr_mutex_lock(&cl->mu);
    g = cl->gen;
    while (!cl->stop && cl->gen == g && rc == 0)
        rc = clr_cond_timedwait(&cl->cond, &cl->mu, &ts);
    rc = cl->stop ? -ESHUTDOWN : 0;
    clr_mutex_unlock(&cl->mu);
    return rc;
}

static int h_drain(void *arg, uint64_t lo, uint64_t hi)
{
    struct arr_cluster *cl = arg;
    struct arr_range r;

    if (hi <= lo)
        return 0;
    clr_arr_rl_lock(&cl->a->rl, &r, lo, hi - lo);
    clr_arr_rl_unlock(&cl->a->rl, &r);
    return 0;
}

/* ---- host: superblocks ---- */

static bool member_recovering(const struct clr_md_sb *sb)
{
    return (sb->feature_map & CLR_MD_FEAT_RECOVERY_OFFSET) && sb->recovery_offset != CLR_MD_MAX_SECTOR;
}

/* The cluster rules' (cluster/rules.h) view of member @m (a->lock held). */
static struct clr_rules_member rules_member(const struct arr_member *m)
{
    static const enum clr_rules_mstate st[] = {
        [ARR_M_IN_SYNC] = CLR_RULES_IN_SYNC, [ARR_M_REBUILDING] = CLR_RULES_REBUILDING,
        [ARR_M_SPARE] = CLR_RULES_SPARE,     [ARR_M_FAULTY] = CLR_RULES_FAULTY,
        [ARR_M_REMOVED] = CLR_RULES_REMOVED,
    };
    struct clr_rules_member r = {
        .state = st[m->state],
        .role = m->role,
        .has_io = m->io != NULL,
        .remote_rebuild = m->remote_rebuild,
        .rebuilder = m->rebuilder,
        .write_behind = m->write_behind,
        .readd_events = m->readd_events,
        .recovery_offset = m->recovery_offset,
        .bitmap_recovery = m->bitmap_recovery,
    };

    return r;
}

/* The rules' facts of device @dn's own superblock @own (@ok: it was read). */
static struct clr_rules_own rules_own(const struct clr_md_sb *own, bool ok, uint32_t dn)
{
    struct clr_rules_own r = { .readable = ok };

    if (!ok)
        return r;
    r.present = dn < own->max_dev;
    r.role = r.present ? own->dev_roles[dn] : CLR_RULES_ROLE_SPARE;
    r.recovering = member_recovering(own);
    r.bitmap_recovery = (own->feature_map & CLR_MD_FEAT_RECOVERY_BITMAP) != 0;
    r.recovery_offset = own->recovery_offset;
    r.events = own->events;
    return r;
}

/* The newest superblock @sb's entry for device @dn. */
static struct clr_rules_sbrole rules_sbrole(const struct clr_md_sb *sb, uint32_t dn)
{
    struct clr_rules_sbrole r = { dn < sb->max_dev, dn < sb->max_dev ? sb->dev_roles[dn] : 0 };

    return r;
}

/* The roles some member holds (a->lock held). */
static void rules_roles_locked(const struct clr_array *a, struct clr_rules_ctx *x,
                               const struct arr_member *but)
{
    x->raid_disks = a->g.raid_disks;
    for (unsigned r = 0; r < a->g.raid_disks && r < CLR_RAID_MAX_DISKS; r++)
        clr_rules_role_set(x, r, a->role_mem[r] && a->role_mem[r] != but);
}

static int read_sb_io(struct clr_io_dev *io, const uint8_t *set_uuid, struct clr_md_sb *sb)
{
    struct clr_err de;
    uint8_t *buf;
    int rc = clr_io_alloc((void **)&buf, CLR_MD_SB_AREA_BYTES);

    if (rc)
        return rc;
    rc = clr_io_pread(io, buf, CLR_MD_SB_AREA_BYTES, CLR_MD_V12_SB_SECTOR * ARR_SECTOR);
    if (rc == 0)
        rc = clr_md_sb_decode(buf, CLR_MD_SB_AREA_BYTES, 0, sb, &de);
    if (rc == 0 && set_uuid && memcmp(sb->set_uuid, set_uuid, 16) != 0)
        rc = -EINVAL;
    clr_io_free(buf);
    return rc;
}

static void drop_candidate_locked(struct arr_cluster *cl, unsigned i)
{
    clr_io_close(cl->cand[i].io);
    free(cl->cand[i].path);
    cl->cand[i] = cl->cand[--cl->ncand];
}

/* Candidates from NEWDISK: kept as a member if the superblocks now carry
 * them, dropped if the adder rolled back. */
static void settle_candidates(struct arr_cluster *cl, const struct clr_md_sb *ref,
                              const struct clr_rules_ctx *x)
{
    struct clr_array *a = cl->a;

    clr_mutex_lock(&cl->mu);
    for (unsigned i = 0; i < cl->ncand;) {
        struct cl_candidate *c = &cl->cand[i];
        struct clr_md_sb sb;
        struct arr_member *m;

        /* a live adder's NEWDISK may still be in flight: its METADATA_UPDATED
         * (commit or roll back) settles it */
        if (clr_rules_candidate_waits(x, c->adder)) {
            i++;
            continue;
        }
        struct clr_rules_candidate f = { .sb_readable = read_sb_io(c->io, a->sb.set_uuid, &sb) == 0 };

        if (f.sb_readable) {
            f.uuid_match = memcmp(sb.device_uuid, c->uuid, 16) == 0;
            f.dev_match = sb.dev_number == c->dev_number;
        }
        f.sb = rules_sbrole(ref, c->dev_number);
        bool ok = clr_rules_candidate_taken(&f);

        if (!ok || !(m = calloc(1, sizeof *m))) {
            clr_arr_log(a, LOG_INFO, "%s: new device %u not taken (the adder rolled back)", c->path,
                        c->dev_number);
            drop_candidate_locked(cl, i);
            continue;
        }
        m->path = c->path;
        m->sb = sb;
        m->dev_number = c->dev_number;
        m->role = -1;
        m->state = ARR_M_SPARE;
        m->io = c->io;
        clr_mutex_lock(&a->lock);
        if (a->nmem < ARR_MAX_MEMBERS) {
            a->mem[a->nmem++] = m;
            clr_arr_log(a, LOG_NOTICE, "%s: added as device %u by another node", m->path, m->dev_number);
        } else {
            clr_io_close(m->io);
            free(m->path);
            free(m);
        }
        clr_mutex_unlock(&a->lock);
        cl->cand[i] = cl->cand[--cl->ncand];
    }
    clr_mutex_unlock(&cl->mu);
}

/* Re-reads the superblock of @dev_number (or a good member) and applies
 * what other nodes changed: faulty roles (marked here without writing and
 * without a local recovery), spares activated elsewhere (written, not read,
 * until a later update shows them in sync), events. */
static int reload_sb_dead(struct clr_array *a, uint32_t dev_number, uint64_t dead);

/* The newest superblock over every in-sync member (a dead writer may have
 * reached only some of them). */
static int read_newest_sb(struct clr_array *a, struct clr_md_sb *sb)
{
    struct arr_member *in[ARR_MAX_MEMBERS];
    unsigned nin = 0, nok = 0;
    int last = -ENODEV;

    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem; i++)
        if (a->mem[i]->state == ARR_M_IN_SYNC && a->mem[i]->io)
            in[nin++] = a->mem[i];
    clr_mutex_unlock(&a->lock);
    for (unsigned i = 0; i < nin; i++) {
        struct clr_md_sb x;
        int r = read_sb_io(in[i]->io, a->sb.set_uuid, &x);

        if (r) {
            last = r;
            clr_arr_log(a, LOG_WARNING, "%s: cannot re-read the superblock: %s", in[i]->path, strerror(-r));
            continue;
        }
        if (nok++ == 0 || x.events > sb->events)
            *sb = x;
    }
    if (!nok) {
        clr_arr_log(a, LOG_ERR, "cannot re-read the superblock from any in-sync member: %s", strerror(-last));
        return last;
    }
    return 0;
}

/* Member @dn (role @role here) is in sync on disk: its own superblock,
 * as new as the newest, carries the role and no recovery.  (A spare's
 * superblock from before its activation is neither.) */
static bool recovered_elsewhere(const struct clr_md_sb *own, const struct clr_md_sb *sb, uint32_t dn,
                                int role)
{
    struct clr_rules_own o = rules_own(own, true, dn);
    struct clr_rules_sbrole r = rules_sbrole(sb, dn);

    return clr_rules_recovered_elsewhere(&o, &r, sb->events, role);
}

static int cl_rebuild_check(struct clr_array *a, struct arr_member *m, uint64_t *off)
{
    struct clr_md_sb own, sb;
    struct clr_io_dev *io;
    int role;
    uint32_t dn;

    if (!a->cl)
        return 0;
    clr_mutex_lock(&a->lock);
    io = m->io;
    role = m->role;
    dn = m->dev_number;
    clr_mutex_unlock(&a->lock);
    if (!io || role < 0 || read_sb_io(io, a->sb.set_uuid, &own) != 0 || read_newest_sb(a, &sb) != 0)
        return 0;
    if (recovered_elsewhere(&own, &sb, dn, role))
        return 1;
    if (member_recovering(&own) && !(own.feature_map & CLR_MD_FEAT_RECOVERY_BITMAP) &&
        own.recovery_offset > *off)
        *off = own.recovery_offset;
    return 0;
}

static int reload_sb(struct clr_array *a, uint32_t dev_number)
{
    return reload_sb_dead(a, dev_number, 0);
}

static int reload_sb_ctx(struct clr_array *a, uint32_t dev_number, const struct clr_rules_ctx *x);

/* @dead: slots that died; their NEWDISK candidates are settled too. */
static int reload_sb_dead(struct clr_array *a, uint32_t dev_number, uint64_t dead)
{
    struct clr_rules_ctx x = { .sender = -1, .type = -1, .dead = dead };

    return reload_sb_ctx(a, dev_number, &x);
}

/* @x: the message being processed (sender, type) or none, the slots that
 * died (their NEWDISK candidates are settled too), settle_all; the rules
 * (cluster/rules.h) decide, this applies. */
static int reload_sb_ctx(struct clr_array *a, uint32_t dev_number, const struct clr_rules_ctx *xin)
{
    struct arr_cluster *cl = a->cl;
    struct arr_member *src = NULL, *chk[ARR_MAX_MEMBERS];
    struct clr_md_sb sb, *own;
    bool have[ARR_MAX_MEMBERS] = { false }, changed = false;
    unsigned nchk = 0, n;
    struct clr_rules_ctx x = *xin;
    struct clr_rules_member *rm;
    struct clr_rules_sbrole *rs;
    struct clr_rules_own *ro;
    struct clr_rules_change *rc_;
    void *buf;
    int rc;

    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];

        if (dev_number != CLR_MDC_ANY_DEV && m->io && m->dev_number == dev_number &&
            m->state != ARR_M_FAULTY && m->state != ARR_M_REMOVED)
            src = m;
    }
    clr_mutex_unlock(&a->lock);
    rc = src ? read_sb_io(src->io, a->sb.set_uuid, &sb) : -ENODEV;
    if (rc) {
        /* CLR_MDC_ANY_DEV (after a death, a join, our own meta_begin), or
         * the named member is unreadable here: every in-sync member's,
         * the newest wins (a dead writer may have reached only some) */
        if (src)
            clr_arr_log(a, LOG_WARNING, "%s: cannot re-read the superblock (%s): using another member's",
                        src->path, strerror(-rc));
        rc = read_newest_sb(a, &sb);
        if (rc)
            return rc;
    }
    /* new devices announced by NEWDISK first: they may have a role now */
    if (cl)
        settle_candidates(cl, &sb, &x);
    own = calloc(ARR_MAX_MEMBERS, sizeof *own);
    buf = calloc(ARR_MAX_MEMBERS, sizeof *rm + sizeof *rs + sizeof *ro + sizeof *rc_);
    if (!own || !buf) {
        free(own);
        free(buf);
        return -ENOMEM;
    }
    rm = buf;
    rc_ = (struct clr_rules_change *)(rm + ARR_MAX_MEMBERS);
    ro = (struct clr_rules_own *)(rc_ + ARR_MAX_MEMBERS);
    rs = (struct clr_rules_sbrole *)(ro + ARR_MAX_MEMBERS);
    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];

        if (m->io && (m->state == ARR_M_SPARE || (m->state == ARR_M_REBUILDING && m->remote_rebuild)))
            chk[nchk++] = m;
    }
    clr_mutex_unlock(&a->lock);
    for (unsigned i = 0; i < nchk; i++)
        have[i] = read_sb_io(chk[i]->io, a->sb.set_uuid, &own[i]) == 0;
    clr_mutex_lock(&a->lock);
    if (sb.events > a->sb.events)
        a->sb.events = sb.events;
    /* the facts, then the decisions */
    n = a->nmem;
    x.sb_events = sb.events;
    rules_roles_locked(a, &x, NULL);
    for (unsigned i = 0; i < n; i++) {
        struct arr_member *m = a->mem[i];

        rm[i] = rules_member(m);
        rs[i] = rules_sbrole(&sb, m->dev_number);
        ro[i] = rules_own(NULL, false, 0);
        for (unsigned j = 0; j < nchk; j++)
            if (chk[j] == m)
                ro[i] = rules_own(&own[j], have[j], m->dev_number);
    }
    changed = clr_rules_reload(&x, rm, rs, ro, n, rc_);
    for (unsigned i = 0; i < n; i++) {
        struct arr_member *m = a->mem[i];
        const struct clr_rules_change *d = &rc_[i];

        if (d->what & CLR_RULES_CH_FAULTY) {
            clr_arr_log(a, LOG_ERR, "%s: %s", m->path, d->why);
            clr_arr_mark_faulty_remote_locked(a, m);
        }
        if (d->what & CLR_RULES_CH_ACTIVATE) {
            m->role = d->role;
            m->state = ARR_M_REBUILDING;
            m->remote_rebuild = true;
            m->rebuilder = d->rebuilder;
            m->bitmap_recovery = false;
            a->role_mem[d->role] = m;
            clr_arr_log(a, LOG_NOTICE, "%s: takes role %d on another node, rebuilding there", m->path,
                        d->role);
        }
        if (d->what & CLR_RULES_CH_CHECKPOINT) {
            /* its checkpoint moved: only its rebuilder moves it (every
             * other node writes back at most what it saw announced) */
            m->recovery_offset = d->recovery_offset;
            m->rebuilder = d->rebuilder;
        }
        if (d->what & CLR_RULES_CH_IN_SYNC) {
            m->state = ARR_M_IN_SYNC;
            m->remote_rebuild = false;
            m->bitmap_recovery = false;
            clr_arr_log(a, LOG_NOTICE, "%s: %s", m->path, d->why);
            /* a copy is back (re-added on another node): blocked I/O is
             * retried, as on the node that re-added it (readd_preflight) */
            if (a->frozen) {
                a->frozen = a->thaw_err = false;
                pthread_cond_broadcast(&a->cond);
                clr_arr_log(a, LOG_NOTICE, "%s: a copy is back, array thawed", m->path);
            }
        }
    }
    if (changed) {
        clr_arr_recompute_locked(a);
        /* whole again: our NEEDED chunks (writes while degraded) can go */
        if (!a->degraded)
            a->resync_pending = true;
        clr_arr_sync_kick_locked(a);
    }
    clr_mutex_unlock(&a->lock);
    free(own);
    free(buf);
    if (changed)
        clr_arr_bm_set_degraded(a);
    return 0;
}

static int h_reload_sb(void *arg, uint32_t dev_number, const struct clr_mdc_rx *rx)
{
    struct arr_cluster *cl = arg;
    /* a METADATA_UPDATED settles every NEWDISK candidate: its sender's
     * NEWDISK committed or rolled back, and no other is in flight */
    struct clr_rules_ctx x = { .sender = rx->sender,
                               .type = rx->type,
                               .settle_all = rx->type == CLR_MDC_METADATA_UPDATED };

    return reload_sb_ctx(cl->a, dev_number, &x);
}

/* NEWDISK: look for the device uuid in the directories of our members. */
static int h_find_disk(void *arg, const uint8_t uuid[16], uint32_t dev_number, const struct clr_mdc_rx *rx)
{
    struct arr_cluster *cl = arg;
    struct clr_array *a = cl->a;
    char want[37], dirs[ARR_MAX_MEMBERS][256];
    unsigned ndirs = 0;
    int rc = -ENOENT;

    clr_uuid_format_dashed(uuid, want);
    /* one NEWDISK at a time cluster-wide (its adder holds `metadata`):
     * candidates of an earlier one are stale (its adder died) */
    clr_mutex_lock(&cl->mu);
    while (cl->ncand) {
        clr_arr_log(a, LOG_INFO, "%s: candidate for device %u dropped (a newer NEWDISK)", cl->cand[0].path,
                    cl->cand[0].dev_number);
        drop_candidate_locked(cl, 0);
    }
    clr_mutex_unlock(&cl->mu);
    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem; i++) {
        char tmp[256];
        bool dup = false;

        snprintf(tmp, sizeof tmp, "%s", a->mem[i]->path);
        const char *d = dirname(tmp);

        for (unsigned j = 0; j < ndirs && !dup; j++)
            dup = strcmp(dirs[j], d) == 0;
        if (!dup && ndirs < ARR_MAX_MEMBERS)
            snprintf(dirs[ndirs++], sizeof dirs[0], "%s", d);
    }
    clr_mutex_unlock(&a->lock);
    for (unsigned i = 0; i < ndirs && rc == -ENOENT; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *de;

        if (!d)
            continue;
        while (rc == -ENOENT && (de = readdir(d)) != NULL) {
            char path[512];
            const char *val = NULL;
            struct stat st;
            blkid_probe pr;

            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "%s/%s", dirs[i], de->d_name);
            if (stat(path, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
                continue;
            pr = blkid_new_probe_from_filename(path);
            if (!pr)
                continue;
            blkid_probe_enable_superblocks(pr, 1);
            blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_UUID | BLKID_SUBLKS_TYPE);
            if (blkid_do_safeprobe(pr) == 0 && blkid_probe_lookup_value(pr, "UUID_SUB", &val, NULL) == 0 &&
                val && strcmp(val, want) == 0) {
                struct clr_io_dev *io = NULL;
                unsigned fl = (a->flags & CLR_ARRAY_BUFFERED) ? CLR_IO_OPEN_BUFFERED : 0;

                if (clr_io_open(a->ctx, path, fl, &io) == 0) {
                    clr_arr_mem_align_note(a, io);
                    clr_mutex_lock(&cl->mu);
                    if (cl->ncand < CL_MAX_CANDIDATES) {
                        struct cl_candidate *c = &cl->cand[cl->ncand++];

                        c->adder = rx->sender;
                        c->dev_number = dev_number;
                        memcpy(c->uuid, uuid, 16);
                        c->path = realpath(path, NULL);
                        if (!c->path)
                            c->path = strdup(path);
                        c->io = io;
                        io = NULL;
                        rc = 0;
                    }
                    clr_mutex_unlock(&cl->mu);
                    clr_io_close(io);
                }
            }
            blkid_free_probe(pr);
        }
        closedir(d);
    }
    clr_arr_log(a, rc ? LOG_WARNING : LOG_INFO, "new device %u (UUID_SUB %s) %s", dev_number, want,
                rc ? "not found on this node" : "found");
    return rc;
}

static struct arr_member *by_dev_locked(struct clr_array *a, uint32_t dn)
{
    struct arr_member *best = NULL;

    for (unsigned i = 0; i < a->nmem; i++)
        if (a->mem[i]->dev_number == dn && (!best || best->state == ARR_M_REMOVED))
            best = a->mem[i];
    return best;
}

static int h_remote_remove(void *arg, uint32_t dev_number, const struct clr_mdc_rx *rx)
{
    (void)rx;
    struct arr_cluster *cl = arg;
    struct clr_array *a = cl->a;
    struct arr_member *m;

    clr_mutex_lock(&a->lock);
    m = by_dev_locked(a, dev_number);
    if (m && (m->state == ARR_M_FAULTY || m->state == ARR_M_SPARE)) {
        m->state = ARR_M_REMOVED;
        m->role = -1;
        m->write_behind = false;
        clr_arr_log(a, LOG_NOTICE, "%s: removed by another node", m->path);
    }
    clr_mutex_unlock(&a->lock);
    return 0;
}

static int h_remote_readd(void *arg, uint32_t dev_number, const struct clr_mdc_rx *rx)
{
    struct arr_cluster *cl = arg;
    struct clr_array *a = cl->a;
    struct arr_member *m;
    struct clr_io_dev *io = NULL;
    struct clr_md_sb sb = { .dev_number = UINT32_MAX };
    char *path = NULL;
    int rc = 0, role;

    bool nomem = false;

    clr_mutex_lock(&a->lock);
    m = by_dev_locked(a, dev_number);
    if (m && !m->io) {
        path = strdup(m->path);
        nomem = !path;
    }
    clr_mutex_unlock(&a->lock);
    if (!m)
        return -ENOENT;
    if (nomem)
        return -ENOMEM; /* refused: never a member without a handle */
    if (path) {
        rc = clr_io_open(a->ctx, path, (a->flags & CLR_ARRAY_BUFFERED) ? CLR_IO_OPEN_BUFFERED : 0, &io);
        free(path);
        if (rc)
            return rc;
        clr_arr_mem_align_note(a, io);
    }
    if (io || m->io) {
        if (read_sb_io(io ? io : m->io, a->sb.set_uuid, &sb) != 0)
            sb.dev_number = UINT32_MAX;
    }
    clr_mutex_lock(&a->lock);
    {
        struct clr_rules_ctx x = { .sender = rx->sender, .type = rx->type, .sb_events = a->sb.events };
        struct clr_rules_member rm = rules_member(m);
        struct clr_rules_own ro = rules_own(&sb, sb.dev_number != UINT32_MAX, dev_number);
        struct clr_rules_readd d = { .state = CLR_RULES_FAULTY };

        rules_roles_locked(a, &x, m);
        rc = clr_rules_remote_readd(&x, &rm, &ro, sb.dev_number == dev_number, &d);
        role = d.role;
        if (!rc && d.state == CLR_RULES_REBUILDING) {
            m->state = ARR_M_REBUILDING;
            m->rebuilder = d.rebuilder;
            m->readd_events = d.readd_events;
        }
    }
    if (rc == 0 && m->state == ARR_M_REBUILDING) {
        if (io) {
            m->io = io;
            io = NULL;
        }
        m->role = role;
        m->write_behind = false;
        m->remote_rebuild = true;
        m->bitmap_recovery = true;
        m->bits_gathered = false;
        a->role_mem[role] = m;
        clr_arr_recompute_locked(a);
        clr_arr_log(a, LOG_NOTICE, "%s: re-added by another node: written from now on", m->path);
    }
    clr_mutex_unlock(&a->lock);
    clr_io_close(io);
    if (rc)
        return rc;
    /* writes issued without it drain before the re-adder gathers bitmaps:
     * the ones in flight now, however steady the stream (a whole-array
     * range lock would wait for a gap) */
    clr_arr_wr_drain(a);
    return 0;
}

static void h_changed(void *arg)
{
    cl_wake(arg);
}

static void h_log(void *arg, int prio, const char *msg)
{
    struct arr_cluster *cl = arg;

    clr_arr_log(cl->a, prio, "%s", msg);
}

/* ---- lockspace events and the takeover thread ---- */

static uint64_t cl_lost(struct arr_cluster *cl)
{
    struct clr_mdc_stats st;

    clr_mdc_stats(&cl->mdc, &st);
    return st.lost;
}

/* A membership event that arrived at wall-clock @t changed the core's
 * lost slots from @was to @now: stamp the start or end of the write hold
 * for status, and say so.  The end is @t, taken before the core saw the
 * event, so no write released by it completes before the end stamp.  The
 * start is taken now, after the core applied the hold, so a write that
 * completes after it was already admitted (at most one per client that
 * has one write in flight): an event can take a millisecond or more to
 * apply, and writes admitted meanwhile completed after @t. */
static void hold_note(struct arr_cluster *cl, const struct clr_ls_event *ev, int64_t t, uint64_t was,
                      uint64_t now)
{
    struct clr_array *a = cl->a;
    int64_t held = 0;

    clr_mutex_lock(&cl->mu);
    if (!was && now) {
        cl->hold_start_ms = clr_arr_wall_ms();
        cl->hold_end_ms = 0;
    } else if (was && !now) {
        cl->hold_end_ms = t;
        held = t - cl->hold_start_ms;
    }
    clr_mutex_unlock(&cl->mu);
    if (now & ~was) {
        clr_arr_log(a, LOG_WARNING, "cluster: node %u lost (slot %d, pid %u), writes held until it is fenced",
                    ev->nodeid, ev->slot - 1, ev->pid);
    } else if (now) {
        clr_arr_log(a, LOG_NOTICE,
                    "cluster: node %u fenced (confirmed); writes still held for %d other lost member(s)",
                    ev->nodeid, __builtin_popcountll(now));
    } else if (ev->type == CLR_LS_EV_MEMBER_FAILED) {
        clr_arr_log(a, LOG_NOTICE, "cluster: node %u fenced (confirmed): writes resume after %" PRId64 " ms",
                    ev->nodeid, held);
    } else {
        clr_arr_log(a, LOG_NOTICE,
                    "cluster: lost member(s) confirmed gone: writes resume after %" PRId64 " ms", held);
    }
}

static void cl_event(struct clr_ls *ls, const struct clr_ls_event *ev, void *arg)
{
    struct arr_cluster *cl = arg;
    struct clr_array *a = cl->a;
    int64_t t = clr_arr_wall_ms();
    uint64_t lost;

    if (!cl->mdc_ready)
        return;
    /* events come one at a time from the dispatch thread: no other caller
     * changes the core's lost slots between here and hold_note() */
    lost = cl_lost(cl);
    if (ev->type == CLR_LS_EV_DONE || ev->type == CLR_LS_EV_MEMBER_FAILED) {
        int n = clr_ls_member_count(ls);

        clr_mutex_lock(&cl->mu);
        cl->members = n;
        clr_mutex_unlock(&cl->mu);
    }
    if (ev->type == CLR_LS_EV_PREP || ev->type == CLR_LS_EV_MEMBER_FAILED) {
        clr_mutex_lock(&cl->mu);
        cl->recovery_started_ms = clr_arr_wall_ms();
        if (ev->type == CLR_LS_EV_MEMBER_FAILED && ev->slot >= 1 && ev->slot <= 64) {
            cl->dead_pending |= 1ull << (ev->slot - 1);
            cl->orphan_pending |= 1ull << (ev->slot - 1);
        }
        clr_mutex_unlock(&cl->mu);
    }
    switch (ev->type) {
    case CLR_LS_EV_PREP:
        clr_mdc_on_prep(&cl->mdc);
        break;
    case CLR_LS_EV_MEMBER_FAILED:
        if (ev->slot >= 1) {
            clr_arr_log(a, LOG_WARNING, "cluster: member in slot %d failed: taking its bitmap over",
                        ev->slot - 1);
            clr_mdc_on_member_failed(&cl->mdc, (unsigned)(ev->slot - 1));
        } else {
            clr_arr_log(a, LOG_WARNING,
                        "cluster: a member failed but the lock service gave no slot (node %u pid %u)",
                        ev->nodeid, ev->pid);
        }
        cl_wake(cl);
        break;
    case CLR_LS_EV_DONE:
        clr_mdc_on_done(&cl->mdc);
        cl_wake(cl);
        break;
    case CLR_LS_EV_FREEZE:
        clr_mutex_lock(&a->lock);
        a->frozen = true;
        cl->frozen_by_cluster = true;
        clr_mutex_unlock(&a->lock);
        /* a write hold stays: writes past req_enter do not see the
         * freeze, so ending the hold here would let them reach the
         * disks on a node that lost quorum (the freeze is final: the
         * engine restarts) */
        clr_arr_log(
            a, LOG_CRIT,
            "cluster: quorum lost or partition: I/O frozen; restart the engine once the cluster is whole");
        break;
    case CLR_LS_EV_MEMBER_LOST:
        /* its node left the membership: it may be alive behind a
         * partition and still writing; new writes wait for the fencer
         * (admit), MEMBER_FAILED follows the confirmation */
        if (ev->slot >= 1)
            clr_mdc_on_member_lost(&cl->mdc, (unsigned)(ev->slot - 1));
        else
            clr_arr_log(a, LOG_WARNING,
                        "cluster: a member was lost but the lock service gave no slot (node %u pid %u)",
                        ev->nodeid, ev->pid);
        cl_wake(cl);
        break;
    case CLR_LS_EV_FENCE_TIMEOUT:
        clr_arr_log(
            a, LOG_WARNING,
            "cluster: a failed member (node %u pid %u) is still not confirmed dead: its bitmap%s wait for the fencer",
            ev->nodeid, ev->pid, cl_lost(cl) ? " and new writes" : "");
        break;
    }
    {
        uint64_t now = cl_lost(cl);

        if (now != lost)
            hold_note(cl, ev, t, lost, now);
    }
}

/* Members that slots in @dead were rebuilding (or, @alone, every member
 * rebuilt elsewhere: nobody else is left): nobody drives them any more.
 * The rebuild resumes here (from the checkpoint in the member's own
 * superblock; a re-add's gathered bits died with its node: a full
 * recovery). A member whose rebuilder we do not know (we started during
 * it) waits for its superblock to show it in sync, or for us to be alone.
 * Several survivors may resume: they take turns on `resync` and the later
 * ones find it done (run_recover re-checks before writing anything). */
static void resume_orphans(struct arr_cluster *cl, uint64_t dead, bool alone)
{
    struct clr_array *a = cl->a;
    struct arr_member *orph[ARR_MAX_MEMBERS];
    unsigned n = 0;

    struct clr_rules_ctx x = { .sender = -1, .type = -1, .dead = dead, .alone = alone };

    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];
        struct clr_rules_member rm = rules_member(m);

        if (clr_rules_orphaned(&x, &rm))
            orph[n++] = m;
    }
    clr_mutex_unlock(&a->lock);
    if (!n)
        return;
    for (unsigned i = 0; i < n; i++) {
        struct arr_member *m = orph[i];
        struct clr_md_sb own;
        bool have = read_sb_io(m->io, a->sb.set_uuid, &own) == 0;
        struct clr_rules_own ro = rules_own(&own, have, m->dev_number);
        uint64_t off = clr_rules_resume_offset(&ro);

        clr_mutex_lock(&a->lock);
        if (m->state == ARR_M_REBUILDING && m->remote_rebuild) {
            m->remote_rebuild = false;
            m->rebuilder = -1;
            m->bitmap_recovery = false;
            m->bits_gathered = false;
            m->recovery_offset = off;
            clr_arr_log(a, LOG_NOTICE, "%s: %s: recovery resumes here from sector %" PRIu64, m->path,
                        alone ? "no other node is left to rebuild it" : "the node rebuilding it is gone",
                        off);
            clr_arr_sync_kick_locked(a);
        }
        clr_mutex_unlock(&a->lock);
    }
}

/* Status: read balancing is back once no takeover is queued and the
 * membership change is over. */
static void note_balancing(struct arr_cluster *cl)
{
    struct clr_mdc_stats st;

    clr_mdc_stats(&cl->mdc, &st);
    clr_mutex_lock(&cl->mu);
    if (!st.recovering && !st.pending && cl->recovery_started_ms &&
        cl->read_balancing_restored_ms < cl->recovery_started_ms)
        cl->read_balancing_restored_ms = clr_arr_wall_ms();
    clr_mutex_unlock(&cl->mu);
}

static void *rec_main(void *arg)
{
    struct arr_cluster *cl = arg;
    unsigned backoff = 100;

    clr_mutex_lock(&cl->mu);
    while (!cl->stop) {
        uint64_t g = cl->gen, dead, orphans;
        bool pend, alone;
        int rc = 0;

        clr_mutex_unlock(&cl->mu);
        note_balancing(cl);
        pend = clr_mdc_recovery_pending(&cl->mdc);
        if (pend)
            rc = clr_mdc_recover(&cl->mdc);
        note_balancing(cl);
        /* the masks first, then the queue (not under cl->mu: changed()
         * nests the other way): a slot is marked only after the core
         * queued its takeover, so a mark seen here is never ahead of it */
        clr_mutex_lock(&cl->mu);
        dead = cl->dead_pending;
        orphans = cl->orphan_pending;
        alone = cl->members == 1;
        clr_mutex_unlock(&cl->mu);
        pend = clr_mdc_recovery_pending(&cl->mdc);
        if (rc || pend)
            dead = orphans = 0;
        clr_mutex_lock(&cl->mu);
        cl->dead_pending &= ~dead;
        cl->orphan_pending &= ~orphans;
        if ((dead || orphans || alone) && !cl->stop) {
            /* the slots that went are taken over: what they left half done */
            clr_mutex_unlock(&cl->mu);
            if (dead)
                reload_sb_dead(cl->a, CLR_MDC_ANY_DEV, dead);
            else if (orphans)
                reload_sb(cl->a, CLR_MDC_ANY_DEV);
            resume_orphans(cl, orphans, alone && !pend && rc == 0);
            clr_mutex_lock(&cl->mu);
        }
        if (cl->stop)
            break;
        if (rc && rc != -ESHUTDOWN) {
            struct timespec ts;

            clr_mutex_unlock(&cl->mu);
            clr_arr_log(cl->a, LOG_ERR, "cluster: bitmap takeover failed (%s): retrying in %u ms",
                        strerror(-rc), backoff);
            clr_mutex_lock(&cl->mu);
            deadline(&ts, backoff);
            clr_cond_timedwait(&cl->cond, &cl->mu, &ts);
            backoff = backoff < 5000 ? backoff * 2 : 5000;
            continue;
        }
        backoff = 100;
        if (cl->gen == g) {
            struct timespec ts;

            deadline(&ts, 1000);
            clr_cond_timedwait(&cl->cond, &cl->mu, &ts);
        }
    }
    clr_mutex_unlock(&cl->mu);
    return NULL;
}

/* ---- start / stop ---- */

/* Our lockspace name.  The dlm backend's is "clraid-<uuid>", not the
 * plain dashed UUID that kernel md-cluster names its lockspace with
 * ("%pU" of the array UUID, doc/cluster.md): a kernel lockspace
 * has 64-byte LVBs, a user-space one 32, and the DLM refuses to recover a
 * lockspace whose members disagree, so the two never share one.  The cpg
 * backend keeps the UUID (its groups are named apart already). */
static void cl_lsname(const struct clr_array *a, char out[48])
{
    char u[37];

    clr_uuid_format_dashed(a->sb.set_uuid, u);
    snprintf(out, 48, "%s%s", strcmp(a->lock_backend, "dlm") == 0 ? "clraid-" : "", u);
}

int clr_arr_cl_check_config(const struct clr_array *a, struct clr_err *e)
{
    char u[37];

    if (!a->cluster)
        return 0;
    /* A kernel md-cluster node runs this array: its dlm_controld is in
     * the CPG group "dlm:ls:<uuid>" (doc/cluster.md, "No live mixing with
     * kernel md-cluster").  Checked before anything is written. */
    clr_uuid_format_dashed(a->sb.set_uuid, u);
    if (strcmp(a->lock_backend, "local") != 0 && clr_lock_kernel_lockspace_live(u) > 0)
        return clr_err_set(
            e, -EBUSY,
            "'%s': a kernel md-cluster node has this array assembled (DLM lockspace %s is live in the cluster); clraid cannot share a live array with kernel md-cluster (32- vs 64-byte LVBs): stop it there (mdadm --stop) first",
            a->name, u);
    /* RAID10 far and offset layouts run clustered too: md-cluster refuses
     * them because md resyncs them in device order, which a window over
     * array sectors does not follow; the engine resyncs every mirror layout
     * in array (logical) sectors, the space of its windows and bitmaps
     * (doc/cluster.md).  On disk a kernel node still refuses to run them
     * clustered (raid10_run: "only near layout is supported by clustered
     * raid10"). */
    return 0;
}

/* Our slot's bitmap (sb + bits) from the in-sync members: the union of
 * their bits becomes DIRTY+NEEDED (a crash of this slot's last owner). */
static int load_our_slot(struct clr_array *a, struct clr_err *e)
{
    struct arr_member *src[ARR_MAX_MEMBERS];
    size_t nbytes = (clr_bitmap_bits(a->bsb.sync_size, a->bsb.chunksize) + 7) / 8;
    uint8_t *buf = NULL, *u = calloc(1, nbytes + 1);
    struct clr_bitmap_sb bsb;
    struct clr_err de;
    bool have_sb = false;
    unsigned n = 0;
    int rc = 0;

    if (!u || clr_io_alloc((void **)&buf, a->bm_write_bytes)) {
        free(u);
        return clr_err_set(e, -ENOMEM, "out of memory");
    }
    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem; i++)
        if (a->mem[i]->state == ARR_M_IN_SYNC && a->mem[i]->io)
            src[n++] = a->mem[i];
    clr_mutex_unlock(&a->lock);
    for (unsigned i = 0; i < n; i++) {
        rc = clr_io_pread(src[i]->io, buf, a->bm_write_bytes, a->bm_off);
        if (rc) {
            clr_err_set(e, rc, "%s: cannot read bitmap slot %u: %s", src[i]->path, a->slot, strerror(-rc));
            goto out;
        }
        if (!have_sb && clr_bitmap_sb_decode(buf, CLR_BITMAP_SB_BYTES, a->sb.set_uuid, &bsb, &de) == 0) {
            have_sb = true;
            a->bsb = bsb;
        }
        for (size_t b = 0; b < nbytes; b++)
            u[b] |= buf[CLR_BITMAP_SB_BYTES + b];
    }
    clr_bmc_free(&a->bmc);
    rc = clr_bmc_init(&a->bmc, a->sync_sectors, a->bsb.chunksize / ARR_SECTOR, 0);
    if (rc) {
        clr_err_set(e, rc, "cannot set up bitmap counters: %s", strerror(-rc));
        goto out;
    }
    clr_bmc_load(&a->bmc, u, nbytes);
out:
    clr_io_free(buf);
    free(u);
    return rc;
}

/* The extent of our NEEDED chunks now: what the core announces. */
static int h_needed_extent(void *arg, uint64_t *lo, uint64_t *hi)
{
    struct arr_cluster *cl = arg;

    if (!clr_arr_needed_extent(cl->a, lo, hi))
        *lo = *hi = 0;
    return 0;
}

static const struct clr_mdc_host host_ops = {
    .lock = h_lock,
    .unlock = h_unlock,
    .send = h_send,
    .bitmap_read = h_bitmap_read,
    .bitmap_clear = h_bitmap_clear,
    .log_replay = h_log_replay,
    .bitmap_merge = h_bitmap_merge,
    .want_resync = h_want_resync,
    .needed_extent = h_needed_extent,
    .pause = h_pause,
    .drain = h_drain,
    .reload_sb = h_reload_sb,
    .find_disk = h_find_disk,
    .remote_remove = h_remote_remove,
    .remote_readd = h_remote_readd,
    .changed = h_changed,
    .log = h_log,
};

static void cl_free(struct clr_array *a)
{
    struct arr_cluster *cl = a->cl;

    if (!cl)
        return;
    if (cl->mdc_ready)
        clr_mdc_destroy(&cl->mdc);
    for (struct cl_lockent *le = cl->locks, *nx; le; le = nx) {
        nx = le->next;
        clr_mutex_destroy(&le->mu);
        clr_mutex_destroy(&le->tmu);
        free(le);
    }
    while (cl->ncand)
        drop_candidate_locked(cl, 0);
    clr_arr_plog_free(a->plog);
    a->plog = NULL;
    clr_mutex_destroy(&cl->mu);
    pthread_cond_destroy(&cl->cond);
    free(cl);
    a->cl = NULL;
    a->clops = NULL;
}

/* Releases our lock objects (before the lockspace closes). */
static void cl_close(struct clr_array *a, bool killed)
{
    struct arr_cluster *cl = a->cl;

    if (cl->bc)
        clr_bcast_close(cl->bc);
    cl->bc = NULL;
    for (struct cl_lockent *le = cl->locks; le; le = le->next) {
        clr_mutex_lock(&le->tmu);
        le->stray = false; /* closing: nothing to convert back */
        clr_mutex_unlock(&le->tmu);
        if (!killed && clr_lock_mode(le->lk) != CLR_LOCK_IV)
            clr_unlock_sync(le->lk, 0, 2000);
        clr_lock_destroy(le->lk);
        le->lk = NULL;
    }
    clr_arr_zones_stop(cl->zones);
    if (cl->ls)
        clr_ls_close(cl->ls);
    cl->ls = NULL;
    clr_arr_zones_free(cl->zones); /* the lockspace freed their locks */
    cl->zones = NULL;
    cl->a->zone_stripes = 0;
}

/* start: our slot in the lockspace, and our slot's bits loaded */
static int cl_open_lockspace(struct clr_array *a, struct arr_cluster *cl, const char *lsname,
                             struct clr_err *e)
{
    struct clr_ls_config lc = { 0 };
    unsigned nodes = clr_bitmap_slots(&a->bsb);
    int rc, slot;

    lc.backend = a->lock_backend;
    lc.name = lsname;
    lc.event = cl_event;
    lc.event_arg = cl;
    lc.join_timeout_ms = CL_JOIN_TIMEOUT_MS;
    rc = clr_ls_open(&lc, &cl->ls);
    if (rc)
        return clr_err_set(
            e, rc, "cannot join lockspace %s (%s): %s%s", lsname, a->lock_backend, strerror(-rc),
            rc == -ENOTCONN ? ": start the cluster stack (corosync/dlm) first"
            : rc == -ENOENT && strcmp(a->lock_backend, "dlm") == 0
                ? ": the kernel DLM is not ready (dlm_controld not running or not yet joined; see dmesg)"
                : "");
    slot = clr_ls_our_slot(cl->ls) - 1;
    if (slot < 0 || (unsigned)slot >= nodes || slot >= CLR_MDC_MAX_SLOTS)
        return clr_err_set(
            e, -ERANGE,
            "array was created for %u nodes; this is member %d: recreate with --nodes or stop a node", nodes,
            slot + 1);
    a->slot = (uint32_t)slot;
    a->bm_off = clr_bitmap_slot_offset(&a->sb, &a->bsb, a->slot);
    return load_our_slot(a, e);
}

/* start: the protocol core, the lockspace's dispatch thread and the
 * broadcast channel */
static int cl_open_protocol(struct clr_array *a, struct arr_cluster *cl, struct clr_err *e)
{
    struct clr_mdc_config mc = { 0 };
    struct clr_mdc_host h = host_ops;
    uint64_t win = 65536;
    int rc;

    if (a->g.level == CLR_RAID_LEVEL10) {
        uint64_t w =
            (uint64_t)(a->g.raid_disks + a->g.near_copies - 1) / a->g.near_copies * a->g.chunk_sectors;

        if (w > win)
            win = w;
    }
    mc.slot = a->slot;
    mc.nodes = clr_bitmap_slots(&a->bsb);
    mc.sync_sectors = a->sync_sectors;
    mc.chunk_sectors = a->bsb.chunksize / ARR_SECTOR;
    mc.window_sectors = win;
    h.arg = cl;
    rc = clr_mdc_init(&cl->mdc, &mc, &h);
    if (rc)
        return clr_err_set(e, rc, "cannot set up the cluster protocol: %s", strerror(-rc));
    cl->mdc_ready = true;
    rc = clr_ls_start_dispatch_thread(cl->ls);
    if (rc)
        return clr_err_set(e, rc, "cannot start the lockspace thread: %s", strerror(-rc));
    rc = clr_bcast_open(cl->ls, bcast_recv, cl, CL_BCAST_TIMEOUT_MS, &cl->bc);
    if (rc)
        return clr_err_set(e, rc, "cannot join the cluster broadcast channel: %s", strerror(-rc));
    return 0;
}

/* start: the join (doc/architecture.md §4.3), retried while a survivor
 * still takes our previous incarnation's slot over (it holds the slot
 * lock: -EBUSY); waits for a cluster event between tries, at most
 * CL_JOIN_BUSY_TRIES of CL_JOIN_BUSY_MS */
static int cl_join_retrying(struct arr_cluster *cl)
{
    int rc;

    for (int tries = 0;; tries++) {
        uint64_t g = cl_gen(cl->a);

        rc = clr_mdc_join(&cl->mdc);
        if (rc != -EBUSY || tries >= CL_JOIN_BUSY_TRIES)
            return rc;
        cl_wait(cl->a, g, CL_JOIN_BUSY_MS);
    }
}

/* start, under `metadata` after the join: every member the newest
 * superblock gives a role runs here (clr_rules_start_missing).  Else -ESTALE:
 * the caller assembles again (the member is rebuilding or in sync now). */
static int cl_start_check(struct clr_array *a, struct clr_err *e)
{
    struct clr_rules_ctx x = { .sender = -1, .type = -1 };
    struct clr_rules_member *rm;
    struct clr_rules_sbrole *rs;
    struct clr_md_sb sb;
    int rc = read_newest_sb(a, &sb), miss;
    unsigned n;

    if (rc)
        return clr_err_set(e, rc, "cannot re-read the superblocks after joining: %s", strerror(-rc));
    n = sb.max_dev;
    rm = calloc(n ? n : 1, sizeof *rm);
    rs = calloc(n ? n : 1, sizeof *rs);
    if (!rm || !rs) {
        free(rm);
        free(rs);
        return clr_err_set(e, -ENOMEM, "out of memory");
    }
    for (unsigned i = 0; i < n; i++) {
        rs[i] = rules_sbrole(&sb, i);
        rm[i] = (struct clr_rules_member){ .state = CLR_RULES_REMOVED, .role = -1, .rebuilder = -1 };
    }
    clr_mutex_lock(&a->lock);
    x.raid_disks = a->g.raid_disks;
    for (unsigned j = 0; j < a->nmem; j++)
        if (a->mem[j]->dev_number < n)
            rm[a->mem[j]->dev_number] = rules_member(a->mem[j]);
    clr_mutex_unlock(&a->lock);
    miss = clr_rules_start_missing(&x, rm, rs, n);
    rc = 0;
    if (miss >= 0)
        rc = clr_err_set(
            e, -ESTALE,
            "device %d holds role %u in the array, but this node does not run it (another node re-added it while this node started, or its path was not given): not started; start again with every member",
            miss, rs[miss].role);
    free(rm);
    free(rs);
    return rc;
}

/* start: join, then write our bits back.  A member failing meanwhile must
 * not wait for a thaw nobody can give (we are inside run): the start
 * fails instead.  On failure we have left again. */
static int cl_join(struct clr_array *a, struct arr_cluster *cl, struct clr_err *e)
{
    uint64_t lo, hi;
    int rc;

    clr_arr_nowait_enter(a);
    rc = cl_join_retrying(cl);
    if (rc) {
        clr_arr_nowait_exit(a);
        return clr_err_set(e, rc, "cannot join the cluster as slot %u: %s%s", a->slot, strerror(-rc),
                           rc == -EBUSY ? " (slot already owned: another engine of this array runs here?)"
                                        : "");
    }
    cl->joined = true;
    /* Our bits loaded before join are not on disk any more if a survivor
     * took our previous incarnation over while join waited for the slot
     * lock (it cleared the slot): write them back before any client write
     * counts on them. */
    rc = clr_arr_bm_flush(a);
    clr_arr_nowait_exit(a);
    if (rc == 0) {
        clr_mutex_lock(&a->lock);
        if (a->frozen)
            rc = clr_err_set(
                e, -EIO,
                "a member failed while joining the cluster and the failure could not be recorded and announced: not started");
        clr_mutex_unlock(&a->lock);
    } else {
        clr_err_set(e, rc, "cannot write bitmap slot %u after joining: %s", a->slot, strerror(-rc));
    }
    if (rc == 0) {
        /* md's do_md_run: going active is a superblock update through the
         * clustered path: re-read under `metadata`, METADATA_UPDATED (the
         * others re-read too: a role change a dead writer never announced) */
        rc = cl_meta_begin(a);
        if (rc == 0 && (rc = cl_start_check(a, e)) != 0)
            cl_meta_end(a, false);
        else if (rc == 0 && (rc = cl_meta_end(a, true)) != 0)
            clr_err_set(e, rc, "cannot announce this node's start to the cluster: %s", strerror(-rc));
        else if (rc)
            clr_err_set(e, rc, "cannot take the cluster metadata lock to announce this node's start: %s",
                        strerror(-rc));
    }
    if (rc) {
        clr_mdc_leave(&cl->mdc, clr_arr_needed_extent(a, &lo, &hi));
        cl->joined = false;
    }
    return rc;
}

/* The zone cache's view of recovery: slots lost and not yet fenced, or
 * dead with their bitmap not yet taken over here.  A zone granted with a
 * suspect LVB (its EX holder died) waits until this is 0.  Called without
 * array locks (clr_mdc_stats takes the core's mutex). */
static uint64_t cl_unrecovered(void *arg)
{
    struct arr_cluster *cl = arg;
    struct clr_mdc_stats st;

    clr_mdc_stats(&cl->mdc, &st);
    return st.lost | st.pending | (st.recovering ? 1ull << 63 : 0);
}

/* Data bytes a zone lock covers, about: whole stripes (doc/cluster.md). */
#define CL_ZONE_TARGET_SECTORS (4u << 11) /* 4 MiB */

/* start, RAID5/6: the stripe-zone locks, before any I/O can need them */
static int cl_open_zones(struct clr_array *a, struct arr_cluster *cl, struct clr_err *e)
{
    uint64_t per = (uint64_t)a->g.chunk_sectors * a->g.data_disks;
    struct arr_zone_cfg zc = { 0 };
    int rc;

    if (!a->g.pers->has_parity)
        return 0;
    zc.ls = cl->ls;
    zc.stripes = a->g.used_dev_sectors / a->g.chunk_sectors;
    zc.stripes_per_zone = per >= CL_ZONE_TARGET_SECTORS ? 1 : (uint32_t)(CL_ZONE_TARGET_SECTORS / per);
    zc.min_hold_ms = 20;
    zc.slot = (int)a->slot;
    zc.unrecovered = cl_unrecovered;
    zc.arg = cl;
    if (a->sb.feature_map & CLR_MD_FEAT_CLRAID_PARITY) {
        rc = clr_arr_plog_open(a, &a->plog, e);
        if (rc)
            return rc;
    }
    rc = clr_arr_zones_open(a, &zc, &cl->zones);
    if (rc)
        return clr_err_set(e, rc, "cannot set up the stripe-zone locks: %s", strerror(-rc));
    a->zone_stripes = zc.stripes_per_zone;
    return 0;
}

int clr_arr_cl_start(struct clr_array *a, struct clr_err *e)
{
    struct arr_cluster *cl;
    char lsname[48];
    int rc;

    cl_free(a); /* a previous run's */
    cl = calloc(1, sizeof *cl);
    if (!cl)
        return clr_err_set(e, -ENOMEM, "out of memory");
    cl->a = a;
    snprintf(cl->backend, sizeof cl->backend, "%s", a->lock_backend);
    clr_mutex_init(&cl->mu, CLR_RANK_CL, "cl->mu");
    pthread_cond_init(&cl->cond, NULL);
    a->cl = cl;
    a->clops = &cl_ops;
    cl_lsname(a, lsname);
    rc = cl_open_lockspace(a, cl, lsname, e);
    if (rc == 0)
        rc = cl_open_protocol(a, cl, e);
    if (rc == 0)
        rc = cl_open_zones(a, cl, e);
    if (rc == 0)
        rc = cl_join(a, cl, e);
    if (rc == 0 && pthread_create(&cl->rec_thread, NULL, rec_main, cl) != 0) {
        rc = clr_err_set(e, -EAGAIN, "cannot start the cluster recovery thread");
        clr_mdc_leave(&cl->mdc, false);
        cl->joined = false;
    }
    if (rc) {
        clr_mutex_lock(&cl->mu);
        cl->stop = true;
        clr_mutex_unlock(&cl->mu);
        cl_close(a, false);
        return rc;
    }
    cl->rec_on = true;
    clr_mutex_lock(&cl->mu);
    cl->members = clr_ls_member_count(cl->ls);
    clr_mutex_unlock(&cl->mu);
    clr_arr_log(a, LOG_INFO, "joined cluster lockspace %s (%s) as slot %u of %u, %d members", lsname,
                a->lock_backend, a->slot, clr_bitmap_slots(&a->bsb), cl->members);
    return 0;
}

static bool cl_alone(struct clr_array *a)
{
    bool alone;

    if (!a->cl)
        return true;
    clr_mutex_lock(&a->cl->mu);
    alone = a->cl->members == 1;
    clr_mutex_unlock(&a->cl->mu);
    return alone;
}

/* Tells the cluster threads to stop (they notice at their next wait). */
static void cl_signal_stop(struct arr_cluster *cl)
{
    clr_mutex_lock(&cl->mu);
    cl->stop = true;
    pthread_cond_broadcast(&cl->cond);
    clr_mutex_unlock(&cl->mu);
}

static void cl_stop_threads(struct clr_array *a)
{
    struct arr_cluster *cl = a->cl;

    if (!cl)
        return;
    cl_signal_stop(cl);
    if (cl->rec_on)
        pthread_join(cl->rec_thread, NULL);
    cl->rec_on = false;
}

static void cl_leave(struct clr_array *a, bool unclean)
{
    struct arr_cluster *cl = a->cl;
    int rc;

    if (!cl || !cl->joined)
        return;
    cl_stop_threads(a);
    /* the writes are drained: no log is handed over, even with dirty
     * chunks left (unclean), since the zones go with our locks unmarked
     * and a replay after another node wrote them would undo its writes */
    if (a->plog && clr_arr_plog_retire(a->plog))
        clr_arr_log(a, LOG_WARNING, "cluster: leaving: the partial-parity log was not emptied");
    rc = clr_mdc_leave(&cl->mdc, unclean);
    if (rc)
        clr_arr_log(a, LOG_WARNING, "cluster: leaving: %s", strerror(-rc));
    cl->joined = false;
    cl_close(a, false);
    clr_arr_log(a, LOG_INFO, "left the cluster%s", unclean ? " (dirty chunks handed to the others)" : "");
}

static void cl_crash(struct clr_array *a, bool lost, uint64_t *member)
{
    struct arr_cluster *cl = a->cl;

    if (!cl)
        return;
    cl_signal_stop(cl);
    if (!cl->ls)
        return;
    if (member)
        *member = clr_ls_member_id(cl->ls);
    if (lost)
        clr_lock_local_lose(cl->ls);
    else
        clr_lock_local_kill(cl->ls);
}

int clr_array_confirm_dead(struct clr_array *a, uint64_t member)
{
    int rc = -EINVAL;
    bool up;

    clr_mutex_lock(&a->mgmt_lock);
    clr_mutex_lock(&a->lock);
    up = a->running && !a->stopping;
    clr_mutex_unlock(&a->lock);
    if (up && a->cl && a->cl->ls)
        rc = clr_ls_confirm_dead(a->cl->ls, member);
    clr_mutex_unlock(&a->mgmt_lock);
    return rc;
}

static void cl_crash_finish(struct clr_array *a)
{
    struct arr_cluster *cl = a->cl;

    if (!cl || !cl->joined)
        return;
    cl_stop_threads(a);
    cl->joined = false;
    cl_close(a, true);
}

/* ---- data path ---- */

static uint64_t cl_gen(struct clr_array *a)
{
    uint64_t g;

    if (!a->cl)
        return 0;
    clr_mutex_lock(&a->cl->mu);
    g = a->cl->gen;
    clr_mutex_unlock(&a->cl->mu);
    return g;
}

static void cl_wait(struct clr_array *a, uint64_t gen, unsigned ms)
{
    struct arr_cluster *cl = a->cl;
    struct timespec ts;
    int rc = 0;

    if (!cl)
        return;
    deadline(&ts, ms);
    clr_mutex_lock(&cl->mu);
    while (cl->gen == gen && !cl->stop && rc == 0) {
        if (ms)
            rc = clr_cond_timedwait(&cl->cond, &cl->mu, &ts);
        else
            clr_cond_wait(&cl->cond, &cl->mu);
    }
    clr_mutex_unlock(&cl->mu);
}

static void cl_kick(struct clr_array *a)
{
    if (a->cl)
        cl_wake(a->cl);
}

static bool cl_write_blocked(struct clr_array *a, uint64_t lo, uint64_t hi)
{
    /* a lost node not yet fenced holds every new write; a remote resync
     * window holds the ones inside it (the rules decide, cluster/rules.h) */
    return a->cl && clr_mdc_admit(&a->cl->mdc, lo, hi) != CLR_RULES_ADMIT;
}

static bool cl_read_first(struct clr_array *a, uint64_t lo, uint64_t hi)
{
    return a->cl && clr_mdc_read_first(&a->cl->mdc, lo, hi);
}

/* ---- superblocks ---- */

static int cl_meta_begin(struct clr_array *a)
{
    int rc;

    if (!a->cl || cl_meta_held(a))
        return 0;
    rc = clr_mdc_meta_begin(&a->cl->mdc);
    if (rc)
        return rc;
    cl_meta_owner(a->cl, true);
    {
        /* no NEWDISK of another node is in flight now: settle them all */
        struct clr_rules_ctx x = { .sender = -1, .type = -1, .settle_all = true };

        reload_sb_ctx(a, CLR_MDC_ANY_DEV, &x);
    }
    return 0;
}

/* Broadcasts METADATA_UPDATED (if @send) and releases `metadata`. What
 * this thread wrote meanwhile counts as announced only if every node
 * processed the message: a send error, or a node refusing it (its reload
 * failed), is an error. */
static int cl_meta_end(struct clr_array *a, bool send)
{
    struct arr_member *g;
    uint64_t written;
    int rc;

    if (!a->cl || !cl_meta_held(a))
        return 0;
    g = good_member(a);
    if (send && !g) {
        clr_arr_log(a, LOG_ERR, "cluster: no in-sync member left to name in METADATA_UPDATED");
        send = false;
    }
    clr_mutex_lock(&a->meta_lock);
    written = a->sb_done_gen;
    clr_mutex_unlock(&a->meta_lock);
    cl_meta_owner(a->cl, false);
    /* the core turns a refusal into -EREMOTEIO (engine/cluster/mdc.c) */
    rc = clr_mdc_meta_end(&a->cl->mdc, g ? g->dev_number : 0, send);
    if (rc == -EREMOTEIO && send)
        clr_arr_log(a, LOG_ERR,
                    "cluster: METADATA_UPDATED refused: some node could not re-read the superblock");
    if (rc && !send) {
        clr_arr_log(a, LOG_ERR, "cluster: releasing the metadata lock: %s", strerror(-rc));
        rc = 0; /* nothing to announce: not the caller's failure */
    } else if (rc) {
        clr_arr_log(a, LOG_ERR, "cluster: METADATA_UPDATED not delivered: %s", strerror(-rc));
    } else if (send) {
        clr_mutex_lock(&a->meta_lock);
        if (written > a->sb_announced_gen)
            a->sb_announced_gen = written;
        clr_mutex_unlock(&a->meta_lock);
    }
    return rc;
}

/* ---- sync ---- */

static int cl_resync_begin(struct clr_array *a, uint64_t lo, uint64_t hi)
{
    int rc;

    if (!a->cl)
        return 0;
    for (;;) {
        bool stop;

        rc = clr_mdc_resync_begin(&a->cl->mdc, lo, hi);
        if (rc != -ETIMEDOUT && rc != -EAGAIN && rc != -EBUSY)
            return rc;
        clr_mutex_lock(&a->lock);
        stop = a->stopping || a->sync_abort;
        clr_mutex_unlock(&a->lock);
        if (stop)
            return -ECANCELED;
    }
}

static int cl_resync_window(struct clr_array *a, uint64_t lo, uint64_t hi, uint64_t end)
{
    uint64_t dlo, dhi;

    if (!a->cl)
        return 0;
    if (!clr_arr_needed_extent(a, &dlo, &dhi))
        dlo = a->sync_sectors;
    return clr_mdc_resync_window(&a->cl->mdc, lo, hi, end, dlo);
}

static void cl_resync_end(struct clr_array *a)
{
    uint64_t lo, hi;
    int rc;

    if (!a->cl)
        return;
    clr_arr_needed_extent(a, &lo, &hi);
    rc = clr_mdc_resync_end(&a->cl->mdc, lo, hi);
    if (rc)
        clr_arr_log(a, LOG_WARNING, "cluster: ending the resync: %s", strerror(-rc));
}

/* ---- management ---- */

static int cl_send_remove(struct clr_array *a, uint32_t dev_number)
{
    return a->cl ? clr_mdc_send_remove(&a->cl->mdc, dev_number) : 0;
}

static int cl_readd(struct clr_array *a, uint32_t dev_number)
{
    int rc;

    if (!a->cl)
        return 0;
    rc = clr_mdc_send_readd(&a->cl->mdc, dev_number);
    if (rc == -EREMOTEIO)
        clr_arr_log(a, LOG_ERR, "cluster: RE_ADD of device %u refused by some node", dev_number);
    if (rc == 0)
        rc = clr_mdc_gather_bitmaps(&a->cl->mdc);
    return rc;
}

static int cl_newdisk(struct clr_array *a, const uint8_t uuid[16], uint32_t dev_number)
{
    return a->cl ? clr_mdc_newdisk(&a->cl->mdc, uuid, dev_number) : 0;
}

/* ---- status ---- */

static void cl_status(struct clr_array *a, json_object *o, uint64_t *lock_ops, uint64_t *messages)
{
    json_object *c = json_object_new_object(), *x;
    struct clr_mdc_stats st;
    struct arr_cluster *cl = a->cl;

    *lock_ops = *messages = 0;
    if (!cl || !cl->mdc_ready) {
        json_object_put(c);
        clr_arr_status_no_cluster(a, o);
        return;
    }
    int64_t started, restored, taken, hold0, hold1;

    clr_mdc_stats(&cl->mdc, &st);
    clr_mutex_lock(&cl->mu);
    json_object_object_add(c, "backend", json_object_new_string(cl->backend));
    json_object_object_add(c, "slot", json_object_new_int64(st.slot));
    json_object_object_add(c, "members", json_object_new_int(cl->stop ? 0 : cl->members));
    started = cl->recovery_started_ms;
    restored = cl->read_balancing_restored_ms;
    taken = cl->takeover_at_ms;
    hold0 = cl->hold_start_ms;
    hold1 = cl->hold_end_ms;
    clr_mutex_unlock(&cl->mu);
    /* members lost with their node and not yet fenced: new writes wait;
     * write_hold: wall-clock ms of the last hold's start and end (null:
     * still held), so a test can tell that no write completed inside it */
    json_object_object_add(c, "writes_held", json_object_new_boolean(st.lost != 0));
    json_object_object_add(c, "unconfirmed", json_object_new_int(__builtin_popcountll(st.lost)));
    /* client writes waiting now for a hold to lift or a window to move */
    json_object_object_add(c, "writes_waiting", json_object_new_int64((int64_t)atomic_load(&a->adm_waiting)));
    if (hold0) {
        x = json_object_new_object();
        json_object_object_add(x, "start_ms", json_object_new_int64(hold0));
        json_object_object_add(x, "end_ms", hold1 && !st.lost ? json_object_new_int64(hold1) : NULL);
        json_object_object_add(x, "holds", json_object_new_int64((int64_t)st.holds));
        json_object_object_add(c, "write_hold", x);
    } else {
        json_object_object_add(c, "write_hold", NULL);
    }
    /* wall-clock ms since the epoch: the last PREP/MEMBER_FAILED, and when
     * read balancing came back after it (null: not yet) */
    json_object_object_add(c, "recovery_started_ms", started ? json_object_new_int64(started) : NULL);
    json_object_object_add(c, "read_balancing_restored_ms",
                           started && restored >= started && !(st.recovering || st.pending)
                               ? json_object_new_int64(restored)
                               : NULL);
    json_object_object_add(c, "recovered_slots", json_object_new_int64((int64_t)st.recovered_slots));
    json_object_object_add(c, "recovering", json_object_new_boolean(st.recovering || st.pending));
    json_object_object_add(c, "read_balancing", json_object_new_boolean(!(st.recovering || st.pending)));
    if (st.win_from >= 0 && st.win_hi > st.win_lo) {
        x = json_object_new_object();
        json_object_object_add(x, "from", json_object_new_int(st.win_from));
        json_object_object_add(x, "lo_bytes", json_object_new_int64((int64_t)(st.win_lo * ARR_SECTOR)));
        json_object_object_add(x, "hi_bytes", json_object_new_int64((int64_t)(st.win_hi * ARR_SECTOR)));
        json_object_object_add(c, "remote_window", x);
    } else {
        json_object_object_add(c, "remote_window", NULL);
    }
    if (st.last_taken_slot >= 0) {
        x = json_object_new_object();
        json_object_object_add(x, "slot", json_object_new_int(st.last_taken_slot));
        json_object_object_add(x, "dirty_chunks", json_object_new_int64((int64_t)st.last_taken_chunks));
        json_object_object_add(x, "bytes",
                               json_object_new_int64((int64_t)(st.last_taken_chunks * a->bsb.chunksize)));
        json_object_object_add(x, "at_ms", taken ? json_object_new_int64(taken) : NULL);
        json_object_object_add(c, "last_takeover", x);
    } else {
        json_object_object_add(c, "last_takeover", NULL);
    }
    json_object_object_add(c, "messages_sent", json_object_new_int64((int64_t)st.msgs_sent));
    json_object_object_add(c, "messages_received", json_object_new_int64((int64_t)st.msgs_received));
    *lock_ops = atomic_load(&cl->lock_ops);
    if (cl->zones) {
        uint64_t zops = 0;

        clr_arr_zones_status(cl->zones, c, &zops);
        *lock_ops += zops;
    }
    json_object_object_add(o, "cluster", c);
    *messages = st.msgs_sent + st.msgs_received;
}

/* ---- RAID5/6 zones ---- */

static int cl_zone_enter(struct clr_array *a, enum arr_zone_op op, uint64_t stripe, struct arr_zone **tok)
{
    struct arr_cluster *cl = a->cl;

    *tok = NULL;
    return cl && cl->zones ? clr_arr_zone_enter(cl->zones, op, stripe, tok) : 0;
}

static void cl_zone_exit(struct clr_array *a, struct arr_zone *tok)
{
    if (a->cl && a->cl->zones)
        clr_arr_zone_exit(a->cl->zones, tok);
}

/* ---- the table the core calls (array_internal.h) ---- */

static const struct arr_cluster_ops cl_ops = {
    .gen = cl_gen,
    .wait = cl_wait,
    .kick = cl_kick,
    .write_blocked = cl_write_blocked,
    .read_first = cl_read_first,
    .meta_begin = cl_meta_begin,
    .meta_end = cl_meta_end,
    .meta_held = cl_meta_held,
    .resync_begin = cl_resync_begin,
    .resync_window = cl_resync_window,
    .resync_end = cl_resync_end,
    .rebuild_check = cl_rebuild_check,
    .send_remove = cl_send_remove,
    .readd = cl_readd,
    .newdisk = cl_newdisk,
    .status = cl_status,
    .zone_enter = cl_zone_enter,
    .zone_exit = cl_zone_exit,
    .alone = cl_alone,
    .leave = cl_leave,
    .crash = cl_crash,
    .crash_finish = cl_crash_finish,
    .free = cl_free,
};
