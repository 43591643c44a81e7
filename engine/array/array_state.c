/* clraid array core, lowest layer: logging and clocks, the role view a
 * request takes, client-write epochs and drains, the range lock, and the
 * member-state transitions made under a->lock (degraded, faulty, spares).
 * Calls nothing else of engine/array (doc/architecture.md §5). */
#include <assert.h>
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

void clr_arr_view(struct clr_array *a, struct arr_view *v)
{
    uint64_t now = 0;

    clr_mutex_lock(&a->lock);
    for (uint32_t r = 0; r < a->g.raid_disks; r++) {
        struct arr_member *m = a->role_mem[r];

        v->m[r] = m;
        v->st[r] = m ? m->state : ARR_M_REMOVED;
        v->wb[r] = NULL;
        v->suspect[r] = false;
        if (m && (m->held || m->suspect_ms)) {
            if (!now)
                now = clr_arr_now_ms();
            v->suspect[r] = m->held || now < m->suspect_ms + a->policy_confirm_ms;
        }
    }
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];

        if (m->write_behind && m->state == ARR_M_FAULTY && m->io && m->role >= 0 &&
            (uint32_t)m->role < a->g.raid_disks && v->m[m->role] != m)
            v->wb[m->role] = m;
    }
    clr_mutex_unlock(&a->lock);
}

/* ---- client writes in flight (a remote re-add drains them) ---- */

unsigned clr_arr_wr_enter(struct clr_array *a)
{
    unsigned e;

    clr_mutex_lock(&a->lock);
    e = (unsigned)(a->wr_epoch & 1);
    a->wr_inflight[e]++;
    clr_mutex_unlock(&a->lock);
    return e;
}

void clr_arr_wr_exit(struct clr_array *a, unsigned e)
{
    clr_mutex_lock(&a->lock);
    /* only a drain waits for the count (it set wr_draining under this
     * lock first): a broadcast on every write woke the bitmap and sync
     * threads, which share a->cond, twice per request */
    if (--a->wr_inflight[e] == 0 && a->wr_draining)
        pthread_cond_broadcast(&a->cond);
    clr_mutex_unlock(&a->lock);
}

/* New writes count in the next epoch: the ones in flight now drain
 * however steady the stream is. One drain at a time (the receive thread). */
void clr_arr_wr_drain(struct clr_array *a)
{
    unsigned e;

    clr_mutex_lock(&a->lock);
    while (a->wr_draining)
        clr_cond_wait(&a->cond, &a->lock);
    a->wr_draining = true;
    e = (unsigned)(a->wr_epoch++ & 1);
    while (a->wr_inflight[e])
        clr_cond_wait(&a->cond, &a->lock);
    a->wr_draining = false;
    pthread_cond_broadcast(&a->cond);
    clr_mutex_unlock(&a->lock);
}

/* ---- range lock ---- */

void clr_arr_rl_init(struct arr_rlock *rl)
{
    clr_mutex_init(&rl->mu, CLR_RANK_RL, "rl->mu");
    pthread_cond_init(&rl->cv, NULL);
    rl->held = NULL;
}

void clr_arr_rl_destroy(struct arr_rlock *rl)
{
    clr_mutex_destroy(&rl->mu);
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
    /* a sleeping wait that orders like a lock (engine/common/lockrank.h) */
    CLR_RANK_ACQUIRE(CLR_RANK_RANGE, "range lock");
    clr_mutex_lock(&rl->mu);
    while (rl_overlaps(rl, start, start + n))
        clr_cond_wait(&rl->cv, &rl->mu);
    r->start = start;
    r->end = start + n;
    r->next = rl->held;
    rl->held = r;
    clr_mutex_unlock(&rl->mu);
}

void clr_arr_rl_unlock(struct arr_rlock *rl, struct arr_range *r)
{
    clr_mutex_lock(&rl->mu);
    for (struct arr_range **pp = &rl->held; *pp; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    }
    pthread_cond_broadcast(&rl->cv);
    clr_mutex_unlock(&rl->mu);
    CLR_RANK_RELEASE(CLR_RANK_RANGE, "range lock");
}

/* ---- member states ---- */

bool clr_arr_enough_without(struct clr_array *a, int role)
{
    bool failed[CLR_RAID_MAX_DISKS];

    for (uint32_t r = 0; r < a->g.raid_disks; r++)
        failed[r] = !a->role_mem[r] || a->role_mem[r]->state != ARR_M_IN_SYNC || (int)r == role;
    return a->g.pers->enough(&a->g, failed);
}

/* Every way of losing @k more of the in-sync roles (from @from on, on top
 * of @failed) leaves enough.  Caller holds lock. */
static bool survives_any(struct clr_array *a, bool *failed, uint32_t from, unsigned k)
{
    if (k == 0)
        return a->g.pers->enough(&a->g, failed);
    for (uint32_t r = from; r < a->g.raid_disks; r++) {
        bool ok;

        if (failed[r])
            continue;
        failed[r] = true;
        ok = survives_any(a, failed, r + 1, k - 1);
        failed[r] = false;
        if (!ok)
            return false;
    }
    return true;
}

unsigned clr_arr_redundancy_locked(struct clr_array *a)
{
    bool failed[CLR_RAID_MAX_DISKS] = { false };
    unsigned in_sync = 0, k;

    for (uint32_t r = 0; r < a->g.raid_disks; r++) {
        failed[r] = !a->role_mem[r] || a->role_mem[r]->state != ARR_M_IN_SYNC;
        in_sync += !failed[r];
    }
    if (!a->g.pers->enough(&a->g, failed))
        return 0;
    /* a mirror survives all but one copy: no need to try every set (the
     * status asks every second, under lock) */
    if (strcmp(a->g.pers->name, "raid1") == 0)
        return in_sync - 1;
    /* the others fail within three further losses, unless RAID10 keeps
     * four or more copies: then at least three */
    for (k = 1; k <= 3 && k < in_sync; k++)
        if (!survives_any(a, failed, 0, k))
            return k - 1;
    return k - 1;
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

    clr_mutex_lock(&a->lock);
    d = a->degraded;
    clr_mutex_unlock(&a->lock);
    clr_mutex_lock(&a->bm_lock);
    clr_bmc_set_degraded(&a->bmc, d);
    clr_mutex_unlock(&a->bm_lock);
}

void clr_arr_sync_kick_locked(struct clr_array *a)
{
    pthread_cond_broadcast(&a->cond);
}

/* A hot spare takes the role a failed member left. Caller holds lock. */
void clr_arr_take_spare_locked(struct clr_array *a, int role)
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
    m->faulty_gen = a->state_gen; /* already on disk: nothing to write */
    if (role >= 0 && a->role_mem[role] == m)
        a->role_mem[role] = NULL;
    clr_arr_recompute_locked(a);
    if (m->held)
        pthread_cond_broadcast(&a->cond); /* writes held for the decision */
    return true;
}

/* Marks @m Faulty under lock; false if that would leave too little redundancy. */
bool clr_arr_mark_faulty_locked(struct clr_array *a, struct arr_member *m)
{
    int role = m->role;

    if (m->state == ARR_M_FAULTY || m->state == ARR_M_REMOVED) {
        m->write_behind = false; /* we saw it fail ourselves: stop */
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
        clr_arr_take_spare_locked(a, role);
    if (m->held)
        pthread_cond_broadcast(&a->cond); /* writes held for the decision */
    return true;
}

bool clr_arr_is_frozen(struct clr_array *a)
{
    bool f;

    clr_mutex_lock(&a->lock);
    f = a->frozen;
    clr_mutex_unlock(&a->lock);
    return f;
}

/* The "cluster" object of the status of an array that runs no cluster
 * protocol (single node, or before the join). */
void clr_arr_status_no_cluster(struct clr_array *a, json_object *o)
{
    json_object *c = json_object_new_object();

    json_object_object_add(c, "backend", json_object_new_string(a->lock_backend ? a->lock_backend : "local"));
    json_object_object_add(c, "slot", json_object_new_int64(a->slot));
    json_object_object_add(c, "members", json_object_new_int(a->cluster ? 0 : 1));
    json_object_object_add(c, "recovered_slots", json_object_new_int(0));
    json_object_object_add(c, "recovering", json_object_new_boolean(false));
    json_object_object_add(c, "read_balancing", json_object_new_boolean(true));
    json_object_object_add(c, "remote_window", NULL);
    json_object_object_add(c, "last_takeover", NULL);
    json_object_object_add(c, "recovery_started_ms", NULL);
    json_object_object_add(c, "read_balancing_restored_ms", NULL);
    json_object_object_add(c, "writes_held", json_object_new_boolean(false));
    json_object_object_add(c, "unconfirmed", json_object_new_int(0));
    json_object_object_add(c, "writes_waiting", json_object_new_int(0));
    json_object_object_add(c, "write_hold", NULL);
    json_object_object_add(c, "messages_sent", json_object_new_int(0));
    json_object_object_add(c, "messages_received", json_object_new_int(0));
    json_object_object_add(o, "cluster", c);
}

/* ---- request buffers ---- */

void clr_arr_rb_init(struct clr_array *a)
{
    clr_mutex_init(&a->rb_lock, CLR_RANK_RB, "a->rb_lock");
    memset(a->rb_n, 0, sizeof(a->rb_n));
    a->rb_kept = 0;
}

void clr_arr_rb_destroy(struct clr_array *a)
{
    for (unsigned c = 0; c < ARR_RB_CLASSES; c++) {
        for (unsigned i = 0; i < a->rb_n[c]; i++)
            clr_io_free(a->rb_free[c][i]);
        a->rb_n[c] = 0;
    }
    a->rb_kept = 0;
    clr_mutex_destroy(&a->rb_lock);
}

/* The size class of @len: the smallest c with 4 KiB << c >= @len, or
 * ARR_RB_CLASSES if none. */
static unsigned rb_class(size_t len)
{
    unsigned c = 0;

    while (c < ARR_RB_CLASSES && ((size_t)CLR_IO_ALIGN << c) < len)
        c++;
    return c;
}

int clr_arr_rb_get(struct clr_array *a, size_t len, uint8_t **bufp)
{
    unsigned c = rb_class(len);

    if (c >= ARR_RB_CLASSES)
        return clr_io_alloc((void **)bufp, len);
    clr_mutex_lock(&a->rb_lock);
    if (a->rb_n[c]) {
        *bufp = a->rb_free[c][--a->rb_n[c]];
        a->rb_kept -= (size_t)CLR_IO_ALIGN << c;
        clr_mutex_unlock(&a->rb_lock);
        return 0;
    }
    clr_mutex_unlock(&a->rb_lock);
    return clr_io_alloc((void **)bufp, (size_t)CLR_IO_ALIGN << c);
}

void clr_arr_rb_put(struct clr_array *a, uint8_t *buf, size_t len)
{
    unsigned c = rb_class(len);
    size_t sz = (size_t)CLR_IO_ALIGN << c;

    if (!buf)
        return;
    if (c < ARR_RB_CLASSES) {
        clr_mutex_lock(&a->rb_lock);
        if (a->rb_n[c] < ARR_RB_PER_CLASS && a->rb_kept + sz <= ARR_RB_KEEP_BYTES) {
            a->rb_free[c][a->rb_n[c]++] = buf;
            a->rb_kept += sz;
            buf = NULL;
        }
        clr_mutex_unlock(&a->rb_lock);
    }
    clr_io_free(buf);
}

void clr_arr_mem_align_note(struct clr_array *a, struct clr_io_dev *io)
{
    struct clr_io_dev_info info;
    unsigned cur = atomic_load(&a->mem_align);

    clr_io_dev_info(io, &info);
    while (info.mem_align > cur && !atomic_compare_exchange_weak(&a->mem_align, &cur, info.mem_align))
        ;
}

/* Completion of one leg (engine/io callback): its result, then its group. */
void clr_arr_leg_done(void *arg, int res)
{
    struct arr_leg *l = arg;

    l->res = res < 0 ? res : 0;
    clr_io_wg_done(l->wg, res < 0 ? res : 0);
}

void clr_arr_nowait_enter(struct clr_array *a)
{
    clr_mutex_lock(&a->lock);
    /* a management call and a start at most: more is a bug */
    assert(a->nnowait < ARR_NOWAIT_MAX);
    a->nowait_thr[a->nnowait++] = pthread_self();
    clr_mutex_unlock(&a->lock);
}

void clr_arr_nowait_exit(struct clr_array *a)
{
    pthread_t self = pthread_self();

    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nnowait; i++) {
        if (pthread_equal(a->nowait_thr[i], self)) {
            a->nowait_thr[i] = a->nowait_thr[--a->nnowait];
            break;
        }
    }
    clr_mutex_unlock(&a->lock);
}

bool clr_arr_nowait(struct clr_array *a)
{
    pthread_t self = pthread_self();
    bool found = false;

    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nnowait && !found; i++)
        found = pthread_equal(a->nowait_thr[i], self);
    clr_mutex_unlock(&a->lock);
    return found;
}
