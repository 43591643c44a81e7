/* clraid array core: the stripe-zone locks of a clustered RAID5/6 (part of
 * the cluster host, with array_cluster.c, which opens and closes them).
 *
 * Each zone (clr_zone_geom: whole stripes) has a lock "z<n>" in the
 * array's lockspace.  A write, resync, repair or rebuild of a stripe is
 * admitted under EX of its zone, a degraded read or a check under PR (or
 * EX); a fault-free read takes none.  Locks stay cached after use and go
 * only when another node asks (a blocking callback) and the minimum hold
 * is over, once the operations in flight on the zone have drained.  Every
 * decision is engine/cluster/zone.c's (doc/cluster.md, "Clustered
 * RAID5/6"); this file gathers the facts and carries the decisions out.
 *
 * Threads: admissions run on the request and sync threads (they wait on
 * zs->cv), grants and blocking callbacks arrive on the lockspace's
 * dispatch thread, and one release thread per array gives locks up.
 * zs->mu (rank CLR_RANK_ZONE) guards every entry; the lock service is
 * called under it (its locks rank above), the cluster core never is (the
 * unrecovered mask is read before zs->mu is taken).
 *
 * The partial-parity log (array_plog.c): a zone whose lock is to go is
 * retired first, once drained: while a durable header of ours names one
 * of its stripes (logged), the release thread has fresh headers written
 * without the completed entries, outside zs->mu. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "array/array_internal.h"
#include "cluster/zone.h"
#include "lock/lock.h"

#define ZONE_BUCKETS   4096
#define ZONE_SLICE_MS  200   /* bounded waits: re-check stop and recovery */
#define ZONE_IDLE_MS   30000 /* an unused cached zone may go after this... */
#define ZONE_CACHE_MAX 1024  /* ...once more than this many are cached */

struct arr_zone {
    struct arr_zone *next; /* hash chain */
    struct arr_zones *zs;
    uint64_t zone;
    struct clr_zone_cache z;
    struct clr_lock *lk;
    unsigned refs;           /* threads between enter and exit (waiting or admitted) */
    bool unlocking;          /* the pending lock operation is an unlock */
    bool wrote;              /* written since the grant: seq + 1 in the LVB */
    int err;                 /* last failed request (-errno), 0: none */
    uint64_t last_used;      /* ms */
    uint64_t asked_at;       /* ms: request sent (hand-off latency) */
    struct clr_zone_lvb lvb; /* as granted */
};

struct arr_zones {
    struct clr_array *a;
    struct clr_ls *ls;
    struct clr_zone_geom geom;
    unsigned min_hold_ms;
    int slot;
    uint64_t (*unrecovered)(void *arg);
    void *arg;

    struct clr_mutex mu;
    pthread_cond_t cv;     /* grants, releases, drains, kicks */
    pthread_cond_t rel_cv; /* the release thread */
    struct arr_zone *tab[ZONE_BUCKETS];
    unsigned cached; /* entries */
    bool stop;
    pthread_t thr;
    bool thr_on;
    /* counters (mu) */
    uint64_t requests, unlocks, basts, grants, suspect_grants, waits, evicted, retires;
    uint64_t wait_ms_max, grant_ms_sum, grant_ms_max;
};

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void deadline_in(struct timespec *ts, uint64_t ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

static struct clr_zone_ctx ctx_of(const struct arr_zones *zs, uint64_t unrecovered)
{
    return (struct clr_zone_ctx){ .now = now_ms(), .min_hold = zs->min_hold_ms, .unrecovered = unrecovered };
}

static uint64_t unrecovered_now(struct arr_zones *zs)
{
    return zs->unrecovered ? zs->unrecovered(zs->arg) : 0;
}

/* ---- lock service callbacks (dispatch thread) ---- */

static void z_ast(struct clr_lock *lk, void *arg)
{
    struct arr_zone *e = arg;
    struct arr_zones *zs = e->zs;
    int st = clr_lock_status(lk);

    clr_mutex_lock(&zs->mu);
    if (e->unlocking) {
        e->unlocking = false;
        e->z.releasing = false;
        e->z.blocked = false;
        e->wrote = false;
        e->z.mode = clr_lock_mode(lk) == CLR_LOCK_IV ? CLR_ZONE_IV : clr_lock_mode(lk);
    } else if (e->z.requesting) {
        if (st == 0) {
            struct clr_zone_ctx x = ctx_of(zs, 0);
            bool vnv = (clr_lock_sb_flags(lk) & CLR_LOCK_SB_VALNOTVALID) != 0;
            enum clr_zone_lvb_state ls = clr_zone_lvb_decode(clr_lock_lvb(lk), vnv, &e->lvb);
            uint64_t took = x.now - e->asked_at;

            clr_zone_granted(&e->z, &x, clr_lock_mode(lk), ls);
            e->err = 0;
            zs->grants++;
            zs->grant_ms_sum += took;
            if (took > zs->grant_ms_max)
                zs->grant_ms_max = took;
            if (ls == CLR_ZONE_LVB_SUSPECT)
                zs->suspect_grants++;
            /* a blocking request queued while ours waited: it is already
             * counted on the lock; clr_zone_granted cleared the flag */
        } else {
            e->z.requesting = false;
            e->err = st;
        }
    }
    pthread_cond_broadcast(&zs->cv);
    pthread_cond_signal(&zs->rel_cv);
    clr_mutex_unlock(&zs->mu);
}

static void z_bast(struct clr_lock *lk, int mode, void *arg)
{
    struct arr_zone *e = arg;
    struct arr_zones *zs = e->zs;

    (void)lk;
    (void)mode;
    clr_mutex_lock(&zs->mu);
    if (e->z.mode != CLR_ZONE_IV) {
        e->z.blocked = true;
        zs->basts++;
        pthread_cond_signal(&zs->rel_cv);
    }
    clr_mutex_unlock(&zs->mu);
}

/* ---- entries ---- */

static struct arr_zone *zone_get_locked(struct arr_zones *zs, uint64_t zone)
{
    unsigned b = (unsigned)((zone * 0x9e3779b97f4a7c15ull) >> 52) % ZONE_BUCKETS;
    struct arr_zone *e;
    char name[CLR_LOCK_NAME_MAX];

    for (e = zs->tab[b]; e; e = e->next)
        if (e->zone == zone)
            return e;
    e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    snprintf(name, sizeof name, CLR_ZONE_NAME_FMT, (unsigned long long)zone);
    e->lk = clr_lock_create(zs->ls, name, z_ast, z_bast, e);
    if (!e->lk) {
        free(e);
        return NULL;
    }
    e->zs = zs;
    e->zone = zone;
    e->z.mode = CLR_ZONE_IV;
    e->z.want = CLR_ZONE_IV;
    e->next = zs->tab[b];
    zs->tab[b] = e;
    zs->cached++;
    return e;
}

/* Sends the unlock of @e (its LVB written if the rules say so).  mu held. */
static void send_unlock_locked(struct arr_zones *zs, struct arr_zone *e)
{
    unsigned fl = 0;
    int rc;

    if (clr_zone_unlock_writes_lvb(&e->z)) {
        struct clr_zone_lvb l = e->lvb;

        if (e->wrote) {
            l.seq++;
            l.writer = zs->slot;
        }
        clr_zone_lvb_encode(&l, clr_lock_lvb(e->lk));
        fl = CLR_LOCK_F_VALBLK;
    }
    e->z.releasing = true;
    e->unlocking = true;
    rc = clr_lock_unlock(e->lk, fl);
    if (rc) {
        e->z.releasing = false;
        e->unlocking = false;
        e->err = rc;
        return;
    }
    zs->unlocks++;
}

int clr_arr_zone_enter(struct arr_zones *zs, enum arr_zone_op op, uint64_t stripe, struct arr_zone **tok)
{
    static const enum clr_zone_op map[] = {
        [ARR_ZONE_READ_DEGRADED] = CLR_ZONE_OP_READ_DEGRADED,
        [ARR_ZONE_CHECK] = CLR_ZONE_OP_CHECK,
        [ARR_ZONE_WRITE] = CLR_ZONE_OP_WRITE,
        [ARR_ZONE_RESYNC] = CLR_ZONE_OP_RESYNC,
    };
    enum clr_zone_op zop = map[op];
    uint64_t t0 = 0, zone = clr_zone_of(&zs->geom, stripe);
    struct arr_zone *e = NULL;
    int rc = 0;

    *tok = NULL;
    if (clr_zone_need(zop) == CLR_ZONE_IV)
        return 0;
    for (;;) {
        uint64_t unrec = unrecovered_now(zs); /* before mu: the core's lock ranks lower */
        struct clr_zone_ctx x = ctx_of(zs, unrec);
        struct timespec ts;

        clr_mutex_lock(&zs->mu);
        if (!*tok) {
            e = zone_get_locked(zs, zone);
            if (!e) {
                clr_mutex_unlock(&zs->mu);
                return -ENOMEM;
            }
            e->refs++;
            *tok = e;
        }
        e = *tok;
        if (zs->stop) {
            rc = -ESHUTDOWN;
            break;
        }
        switch (clr_zone_admit(&e->z, &x, zop)) {
        case CLR_ZONE_ADMIT:
            e->z.inflight++;
            e->last_used = x.now;
            if (zop == CLR_ZONE_OP_WRITE || zop == CLR_ZONE_OP_RESYNC)
                e->wrote = true;
            if (t0) {
                uint64_t w = now_ms() - t0;

                zs->waits++;
                if (w > zs->wait_ms_max)
                    zs->wait_ms_max = w;
            }
            clr_mutex_unlock(&zs->mu);
            return 0;
        case CLR_ZONE_REQUEST: {
            int mode = clr_zone_request_mode(&e->z, zop);

            if (e->err && e->err != -EAGAIN && e->err != -ECANCELED) {
                /* the last request failed (the lockspace lost our locks):
                 * the caller fails the request; the next one tries again */
                rc = e->err;
                e->err = 0;
                goto out;
            }
            e->z.requesting = true;
            e->asked_at = x.now;
            rc = clr_lock_request(e->lk, mode, CLR_LOCK_F_VALBLK);
            if (rc) {
                e->z.requesting = false;
                goto out;
            }
            zs->requests++;
            break;
        }
        case CLR_ZONE_DROP:
            /* PR held, EX wanted, nothing in flight: unlock, then ask EX */
            send_unlock_locked(zs, e);
            if (e->err) {
                rc = e->err;
                e->err = 0;
                goto out;
            }
            break;
        case CLR_ZONE_WAIT:
            break;
        }
        if (!t0) {
            t0 = now_ms();
        } else {
            bool stopping;

            clr_mutex_lock(&zs->a->lock);
            stopping = zs->a->stopping;
            clr_mutex_unlock(&zs->a->lock);
            if (stopping) {
                rc = -ESHUTDOWN;
                goto out;
            }
        }
        /* a blocked zone whose hold is over drains: let the releaser see it */
        if (e->z.blocked)
            pthread_cond_signal(&zs->rel_cv);
        deadline_in(&ts, ZONE_SLICE_MS);
        clr_cond_timedwait(&zs->cv, &zs->mu, &ts);
        clr_mutex_unlock(&zs->mu);
    }
out:
    e = *tok;
    e->refs--;
    *tok = NULL;
    clr_mutex_unlock(&zs->mu);
    return rc;
}

void clr_arr_zone_exit(struct arr_zones *zs, struct arr_zone *e)
{
    if (!e)
        return;
    clr_mutex_lock(&zs->mu);
    e->z.inflight--;
    e->refs--;
    e->last_used = now_ms();
    if (e->z.inflight == 0) {
        pthread_cond_broadcast(&zs->cv); /* a DROP waits for the drain */
        if (e->z.blocked)
            pthread_cond_signal(&zs->rel_cv);
    }
    clr_mutex_unlock(&zs->mu);
}

/* ---- the release thread ---- */

/* Frees an entry nobody uses and that holds no lock.  mu held. */
static void evict_locked(struct arr_zones *zs, struct arr_zone **pp)
{
    struct arr_zone *e = *pp;

    *pp = e->next;
    clr_lock_destroy(e->lk);
    free(e);
    zs->cached--;
    zs->evicted++;
}

static void *release_main(void *arg)
{
    struct arr_zones *zs = arg;

    clr_mutex_lock(&zs->mu);
    while (!zs->stop) {
        enum clr_zone_release step;
        uint64_t unrec, next;
        struct clr_zone_ctx x;
        struct timespec ts;
        bool crowded, retire = false;

        clr_mutex_unlock(&zs->mu);
        unrec = unrecovered_now(zs);
        clr_mutex_lock(&zs->mu);
        x = ctx_of(zs, unrec);
        next = x.now + 1000;
        crowded = zs->cached > ZONE_CACHE_MAX;
        for (unsigned b = 0; b < ZONE_BUCKETS; b++) {
            for (struct arr_zone **pp = &zs->tab[b]; *pp;) {
                struct arr_zone *e = *pp;
                bool idle = e->refs == 0 && e->z.inflight == 0 && !e->z.requesting && !e->unlocking;

                if (idle && e->z.mode == CLR_ZONE_IV && crowded) {
                    evict_locked(zs, pp);
                    continue;
                }
                pp = &e->next;
                /* too many cached: an unused zone goes as if asked */
                if (idle && crowded && e->z.mode != CLR_ZONE_IV && x.now - e->last_used >= ZONE_IDLE_MS)
                    e->z.blocked = true;
                step = clr_zone_release_step(&e->z, &x);
                if ((step == CLR_ZONE_UNLOCK || step == CLR_ZONE_RETIRE) && zs->a->plog) {
                    /* does a durable header of ours still name the zone? */
                    e->z.logged = clr_arr_plog_named(zs->a->plog, e->zone * zs->geom.stripes_per_zone,
                                                     zs->geom.stripes_per_zone);
                    step = clr_zone_release_step(&e->z, &x);
                }
                switch (step) {
                case CLR_ZONE_KEEP:
                    if (e->z.blocked && e->z.mode != CLR_ZONE_IV && !e->z.requesting &&
                        e->z.granted_at + zs->min_hold_ms < next)
                        next = e->z.granted_at + zs->min_hold_ms;
                    break;
                case CLR_ZONE_DRAIN:
                    break; /* the last exit signals us */
                case CLR_ZONE_RETIRE:
                    retire = true; /* after the scan, without mu */
                    break;
                case CLR_ZONE_UNLOCK:
                    if (!e->unlocking)
                        send_unlock_locked(zs, e);
                    break;
                }
            }
        }
        if (retire) {
            /* headers without the completed entries, then look again */
            clr_mutex_unlock(&zs->mu);
            clr_arr_plog_retire(zs->a->plog);
            clr_mutex_lock(&zs->mu);
            zs->retires++;
            continue;
        }
        if (next <= x.now)
            next = x.now + 1;
        deadline_in(&ts, next - x.now);
        clr_cond_timedwait(&zs->rel_cv, &zs->mu, &ts);
    }
    clr_mutex_unlock(&zs->mu);
    return NULL;
}

/* ---- life cycle ---- */

int clr_arr_zones_open(struct clr_array *a, const struct arr_zone_cfg *cfg, struct arr_zones **out)
{
    struct arr_zones *zs = calloc(1, sizeof *zs);

    *out = NULL;
    if (!zs)
        return -ENOMEM;
    zs->a = a;
    zs->ls = cfg->ls;
    zs->geom.stripes = cfg->stripes;
    zs->geom.stripes_per_zone = cfg->stripes_per_zone ? cfg->stripes_per_zone : 1;
    zs->min_hold_ms = cfg->min_hold_ms;
    zs->slot = cfg->slot;
    zs->unrecovered = cfg->unrecovered;
    zs->arg = cfg->arg;
    clr_mutex_init(&zs->mu, CLR_RANK_ZONE, "zs->mu");
    pthread_cond_init(&zs->cv, NULL);
    pthread_cond_init(&zs->rel_cv, NULL);
    if (pthread_create(&zs->thr, NULL, release_main, zs) != 0) {
        clr_mutex_destroy(&zs->mu);
        pthread_cond_destroy(&zs->cv);
        pthread_cond_destroy(&zs->rel_cv);
        free(zs);
        return -EAGAIN;
    }
    zs->thr_on = true;
    *out = zs;
    return 0;
}

void clr_arr_zones_kick(struct arr_zones *zs)
{
    if (!zs)
        return;
    clr_mutex_lock(&zs->mu);
    pthread_cond_broadcast(&zs->cv);
    pthread_cond_signal(&zs->rel_cv);
    clr_mutex_unlock(&zs->mu);
}

void clr_arr_zones_stop(struct arr_zones *zs)
{
    if (!zs)
        return;
    clr_mutex_lock(&zs->mu);
    zs->stop = true;
    pthread_cond_broadcast(&zs->cv);
    pthread_cond_signal(&zs->rel_cv);
    clr_mutex_unlock(&zs->mu);
    if (zs->thr_on)
        pthread_join(zs->thr, NULL);
    zs->thr_on = false;
}

/* After the lockspace is closed (clr_ls_close freed the lock objects).  */
void clr_arr_zones_free(struct arr_zones *zs)
{
    if (!zs)
        return;
    clr_arr_zones_stop(zs);
    for (unsigned b = 0; b < ZONE_BUCKETS; b++)
        for (struct arr_zone *e = zs->tab[b], *nx; e; e = nx) {
            nx = e->next;
            free(e);
        }
    clr_mutex_destroy(&zs->mu);
    pthread_cond_destroy(&zs->cv);
    pthread_cond_destroy(&zs->rel_cv);
    free(zs);
}

void clr_arr_zones_status(struct arr_zones *zs, json_object *c, uint64_t *lock_ops)
{
    json_object *z = json_object_new_object();
    unsigned ex = 0, pr = 0;

    clr_mutex_lock(&zs->mu);
    for (unsigned b = 0; b < ZONE_BUCKETS; b++)
        for (struct arr_zone *e = zs->tab[b]; e; e = e->next) {
            ex += e->z.mode == CLR_ZONE_EX;
            pr += e->z.mode == CLR_ZONE_PR;
        }
    json_object_object_add(z, "stripes_per_zone", json_object_new_int64(zs->geom.stripes_per_zone));
    json_object_object_add(z, "zones", json_object_new_int64((int64_t)clr_zone_count(&zs->geom)));
    json_object_object_add(z, "min_hold_ms", json_object_new_int64(zs->min_hold_ms));
    json_object_object_add(z, "held_ex", json_object_new_int64(ex));
    json_object_object_add(z, "held_pr", json_object_new_int64(pr));
    json_object_object_add(z, "requests", json_object_new_int64((int64_t)zs->requests));
    json_object_object_add(z, "grants", json_object_new_int64((int64_t)zs->grants));
    json_object_object_add(z, "suspect_grants", json_object_new_int64((int64_t)zs->suspect_grants));
    json_object_object_add(z, "blocking_callbacks", json_object_new_int64((int64_t)zs->basts));
    json_object_object_add(z, "releases", json_object_new_int64((int64_t)zs->unlocks));
    json_object_object_add(z, "waits", json_object_new_int64((int64_t)zs->waits));
    json_object_object_add(z, "wait_ms_max", json_object_new_int64((int64_t)zs->wait_ms_max));
    json_object_object_add(z, "grant_ms_mean",
                           json_object_new_int64(zs->grants ? (int64_t)(zs->grant_ms_sum / zs->grants) : 0));
    json_object_object_add(z, "grant_ms_total", json_object_new_int64((int64_t)zs->grant_ms_sum));
    json_object_object_add(z, "grant_ms_max", json_object_new_int64((int64_t)zs->grant_ms_max));
    json_object_object_add(z, "retire_rounds", json_object_new_int64((int64_t)zs->retires));
    if (zs->a->plog)
        clr_arr_plog_status(zs->a->plog, z);
    else
        json_object_object_add(z, "parity_log",
                               json_object_new_string("none (array without the parity feature)"));
    *lock_ops = zs->requests + zs->unlocks;
    clr_mutex_unlock(&zs->mu);
    json_object_object_add(c, "zones", z);
}
