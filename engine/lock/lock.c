/*
 * The lockspace core: lock objects, the callback queue behind the pollable
 * fd, the sync wrappers, and the backend table.  Backend independent.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/lockrank.h"
#include "lock/lock_internal.h"

enum clr_cb_type {
    CB_AST,
    CB_BAST,
    CB_EVENT
};

struct clr_cb {
    struct clr_cb *next;
    uint64_t seq;
    enum clr_cb_type type;
    struct clr_lock *lk;
    int mode;
    struct clr_ls_event ev;
};

/* How long a sync wrapper waits for the outcome of its own cancel. */
#define CLR_CANCEL_WAIT_MS 30000u

/* The cluster backends (cpg, dlm) are not in this table: a program that
 * runs clustered engines registers them (clr_lock_cluster_backends(),
 * lock_backends.c), so that one that does not, the CLI, links none of
 * corosync's and Pacemaker's libraries. */
#define MAX_BACKENDS 8
static const struct clr_lock_backend_ops *backends[MAX_BACKENDS] = {
    &clr_lock_backend_local,
};

/* The backends ./configure left out (configure.ac), and what builds them. */
static const struct {
    const char *name, *packages;
} not_built[] = {
#ifndef HAVE_LOCK_CPG
    { "cpg", "libcpg-dev libquorum-dev pacemaker-dev" },
#endif
#ifndef HAVE_LOCK_DLM
    { "dlm", "libdlm-dev libcpg-dev" },
#endif
    { NULL, NULL },
};
static struct clr_mutex backends_mu = CLR_MUTEX_INITIALIZER(CLR_RANK_LS_BACKENDS, "lock backends_mu");

int clr_lock_backend_register(const struct clr_lock_backend_ops *ops)
{
    int rc = -ENOSPC;

    clr_mutex_lock(&backends_mu);
    for (int i = 0; i < MAX_BACKENDS; i++) {
        if (backends[i] && strcmp(backends[i]->name, ops->name) == 0) {
            rc = -EEXIST;
            break;
        }
        if (!backends[i]) {
            backends[i] = ops;
            rc = 0;
            break;
        }
    }
    clr_mutex_unlock(&backends_mu);
    return rc;
}

static const struct clr_lock_backend_ops *backend_find(const char *name)
{
    const struct clr_lock_backend_ops *ops = NULL;

    clr_mutex_lock(&backends_mu);
    for (int i = 0; i < MAX_BACKENDS && backends[i]; i++)
        if (strcmp(backends[i]->name, name) == 0)
            ops = backends[i];
    clr_mutex_unlock(&backends_mu);
    return ops;
}

uint64_t clr_lock_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void cb_push(struct clr_ls *ls, struct clr_cb *cb)
{
    uint64_t one = 1;

    cb->next = NULL;
    cb->seq = ++ls->cb_seq;
    if (cb->type == CB_EVENT)
        ls->ev_seq = cb->seq;
    if (ls->cb_tail)
        ls->cb_tail->next = cb;
    else
        ls->cb_head = cb;
    ls->cb_tail = cb;
    if (write(ls->efd, &one, sizeof(one)) < 0) {
        /* the counter cannot overflow in practice; nothing to do */
    }
}

int clr_ls_open(const struct clr_ls_config *cfg, struct clr_ls **out)
{
    const char *bname = cfg->backend ? cfg->backend : "local";
    const struct clr_lock_backend_ops *ops = backend_find(bname);
    struct clr_ls *ls;
    int rc;

    *out = NULL;
    for (int i = 0; !ops && not_built[i].name; i++) {
        if (strcmp(not_built[i].name, bname) == 0) {
            fprintf(stderr,
                    "clraid lock: error: this clraid was built without the %s lock backend: "
                    "install %s and rebuild\n",
                    bname, not_built[i].packages);
            return -ENOPKG;
        }
    }
    if (!ops && (strcmp(bname, "cpg") == 0 || strcmp(bname, "dlm") == 0)) {
        fprintf(stderr,
                "clraid lock: error: this program did not register the %s lock backend "
                "(clr_lock_cluster_backends)\n",
                bname);
        return -ENOPKG;
    }
    if (!ops)
        return -ENOENT;
    if (!cfg->name || !cfg->name[0] || strlen(cfg->name) > CLR_LS_NAME_MAX)
        return -EINVAL;
    ls = calloc(1, sizeof(*ls));
    if (!ls)
        return -ENOMEM;
    ls->cfg = *cfg;
    if (!ls->cfg.join_timeout_ms)
        ls->cfg.join_timeout_ms = 10000;
    if (!ls->cfg.fence_timeout_ms)
        ls->cfg.fence_timeout_ms = 60000;
    if (!ls->cfg.fence_poll_ms)
        ls->cfg.fence_poll_ms = 1000;
    ls->cfg.name = ls->name;
    ls->ops = ops;
    strcpy(ls->name, cfg->name);
    ls->event = cfg->event;
    ls->event_arg = cfg->event_arg;
    ls->next_lkid = 1;
    clr_mutex_init(&ls->mu, CLR_RANK_LS, "ls->mu");
    {
        pthread_condattr_t ca;

        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&ls->cond, &ca);
        pthread_condattr_destroy(&ca);
    }
    ls->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ls->efd < 0) {
        rc = -errno;
        goto fail;
    }
    rc = ops->open(ls, &ls->cfg);
    if (rc)
        goto fail;
    *out = ls;
    return 0;
fail:
    if (ls->efd >= 0)
        close(ls->efd);
    clr_mutex_destroy(&ls->mu);
    pthread_cond_destroy(&ls->cond);
    free(ls);
    return rc;
}

void clr_ls_close(struct clr_ls *ls)
{
    struct clr_cb *cb;

    if (!ls)
        return;
    clr_mutex_lock(&ls->mu);
    ls->stopping = true;
    clr_mutex_unlock(&ls->mu);
    if (ls->dispatch_running)
        pthread_join(ls->dispatch_thread, NULL);
    ls->ops->close(ls);
    for (int b = 0; b < CLR_LS_LOCK_BUCKETS; b++) {
        while (ls->locks[b]) {
            struct clr_lock *lk = ls->locks[b];

            ls->locks[b] = lk->hnext;
            free(lk->be);
            free(lk);
        }
    }
    while ((cb = ls->cb_head)) {
        ls->cb_head = cb->next;
        free(cb);
    }
    close(ls->efd);
    clr_mutex_destroy(&ls->mu);
    pthread_cond_destroy(&ls->cond);
    free(ls);
}

int clr_ls_fd(struct clr_ls *ls)
{
    return ls->efd;
}

int clr_ls_dispatch(struct clr_ls *ls)
{
    uint64_t cnt;
    int n = 0;

    if (read(ls->efd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
        return -errno;
    for (;;) {
        struct clr_cb *cb;

        clr_mutex_lock(&ls->mu);
        cb = ls->cb_head;
        if (cb) {
            ls->cb_head = cb->next;
            if (!cb->next)
                ls->cb_tail = NULL;
        }
        clr_mutex_unlock(&ls->mu);
        if (!cb)
            break;
        switch (cb->type) {
        case CB_AST:
            cb->lk->ast(cb->lk, cb->lk->arg);
            break;
        case CB_BAST:
            cb->lk->bast(cb->lk, cb->mode, cb->lk->arg);
            break;
        case CB_EVENT:
            ls->event(ls, &cb->ev, ls->event_arg);
            break;
        }
        clr_mutex_lock(&ls->mu);
        ls->dispatched_seq = cb->seq;
        pthread_cond_broadcast(&ls->cond);
        clr_mutex_unlock(&ls->mu);
        free(cb);
        n++;
    }
    return n;
}

static void *dispatch_main(void *arg)
{
    struct clr_ls *ls = arg;
    struct pollfd pfd = { .fd = ls->efd, .events = POLLIN };

    for (;;) {
        bool stop;

        clr_mutex_lock(&ls->mu);
        stop = ls->stopping;
        clr_mutex_unlock(&ls->mu);
        if (stop)
            break;
        if (poll(&pfd, 1, 50) > 0)
            clr_ls_dispatch(ls);
    }
    clr_ls_dispatch(ls);
    return NULL;
}

int clr_ls_start_dispatch_thread(struct clr_ls *ls)
{
    int rc;

    if (ls->dispatch_running)
        return -EBUSY;
    rc = -pthread_create(&ls->dispatch_thread, NULL, dispatch_main, ls);
    if (!rc)
        ls->dispatch_running = true;
    return rc;
}

int clr_ls_our_slot(const struct clr_ls *ls)
{
    struct clr_ls *l = (struct clr_ls *)ls; /* the mutex is not state */
    int v;

    clr_mutex_lock(&l->mu);
    v = l->our_slot;
    clr_mutex_unlock(&l->mu);
    return v;
}

int clr_ls_member_count(struct clr_ls *ls)
{
    return ls->ops->member_count ? ls->ops->member_count(ls) : 0;
}

uint64_t clr_ls_member_id(const struct clr_ls *ls)
{
    struct clr_ls *l = (struct clr_ls *)ls;
    uint64_t v;

    clr_mutex_lock(&l->mu);
    v = l->member_id;
    clr_mutex_unlock(&l->mu);
    return v;
}

const char *clr_ls_backend_name(const struct clr_ls *ls)
{
    return ls->ops->name;
}

int clr_ls_confirm_dead(struct clr_ls *ls, uint64_t member)
{
    if (!ls->ops->confirm_dead)
        return -EOPNOTSUPP;
    return ls->ops->confirm_dead(ls, member);
}

uint64_t clr_ls_debug_digest(struct clr_ls *ls)
{
    return ls->ops->digest ? ls->ops->digest(ls) : 0;
}

struct clr_lock *clr_ls_find_lock_locked(struct clr_ls *ls, uint64_t lkid)
{
    for (struct clr_lock *lk = ls->locks[lkid % CLR_LS_LOCK_BUCKETS]; lk; lk = lk->hnext)
        if (lk->lkid == lkid)
            return lk;
    return NULL;
}

void clr_ls_complete_locked(struct clr_ls *ls, struct clr_lock *lk, int status, int mode, unsigned sb_flags,
                            const uint8_t *lvb)
{
    bool was_sync = lk->sync_op;

    lk->status = status;
    lk->grmode = mode;
    if (status == 0 && lk->op == CLR_OP_REQUEST)
        lk->sb_flags = sb_flags;
    if (lvb)
        memcpy(lk->lvb, lvb, CLR_LOCK_LVB_LEN);
    lk->op = CLR_OP_NONE;
    lk->sync_op = false;
    lk->cancel_sent = false;
    lk->rqmode = CLR_LOCK_IV;
    lk->barrier = ls->ev_seq;
    lk->done_seq++;
    pthread_cond_broadcast(&ls->cond);
    if (!was_sync && lk->ast) {
        struct clr_cb *cb = calloc(1, sizeof(*cb));

        if (cb) {
            cb->type = CB_AST;
            cb->lk = lk;
            cb_push(ls, cb);
        }
    }
}

void clr_ls_bast_locked(struct clr_ls *ls, struct clr_lock *lk, int mode)
{
    struct clr_cb *cb;

    lk->bast_count++;
    if (lk->bast_hook)
        lk->bast_hook(lk, mode, lk->arg);
    if (!lk->bast)
        return;
    cb = calloc(1, sizeof(*cb));
    if (!cb)
        return;
    cb->type = CB_BAST;
    cb->lk = lk;
    cb->mode = mode;
    cb_push(ls, cb);
}

void clr_ls_event_locked(struct clr_ls *ls, const struct clr_ls_event *ev)
{
    struct clr_cb *cb;

    if (!ls->event)
        return;
    cb = calloc(1, sizeof(*cb));
    if (!cb)
        return;
    cb->type = CB_EVENT;
    cb->ev = *ev;
    cb->ev.our_slot = ls->our_slot;
    cb_push(ls, cb);
}

void clr_ls_effect_locked(struct clr_ls *ls, const struct clr_lt_effect *e)
{
    struct clr_lock *lk = clr_ls_find_lock_locked(ls, e->lkid);

    if (!lk)
        return;
    switch (e->type) {
    case CLR_LT_GRANTED:
        clr_ls_complete_locked(ls, lk, 0, e->mode, e->sb_flags, e->has_lvb ? e->lvb : NULL);
        break;
    case CLR_LT_FAILED:
    case CLR_LT_CANCELED:
        if (lk->op != CLR_OP_NONE)
            clr_ls_complete_locked(ls, lk, e->status, e->mode, 0, NULL);
        break;
    case CLR_LT_UNLOCKED:
        clr_ls_complete_locked(ls, lk, 0, CLR_LOCK_IV, 0, NULL);
        break;
    case CLR_LT_BAST:
        clr_ls_bast_locked(ls, lk, e->mode);
        break;
    }
}

void clr_ls_fail_all_locked(struct clr_ls *ls, int status)
{
    for (int b = 0; b < CLR_LS_LOCK_BUCKETS; b++) {
        for (struct clr_lock *lk = ls->locks[b]; lk; lk = lk->hnext) {
            if (lk->op == CLR_OP_NONE && lk->grmode == CLR_LOCK_IV)
                continue;
            if (lk->op == CLR_OP_NONE)
                lk->op = CLR_OP_REQUEST; /* so the owner hears of it */
            clr_ls_complete_locked(ls, lk, status, CLR_LOCK_IV, 0, NULL);
        }
    }
}

struct clr_lock *clr_lock_create(struct clr_ls *ls, const char *name, clr_lock_ast_fn ast,
                                 clr_lock_bast_fn bast, void *arg)
{
    size_t len = strlen(name);
    struct clr_lock *lk;
    unsigned b;

    if (len == 0 || len > CLR_LOCK_NAME_MAX) {
        errno = EINVAL;
        return NULL;
    }
    lk = calloc(1, sizeof(*lk));
    if (!lk)
        return NULL;
    lk->ls = ls;
    memcpy(lk->name, name, len);
    lk->namelen = len;
    lk->grmode = CLR_LOCK_IV;
    lk->rqmode = CLR_LOCK_IV;
    lk->ast = ast;
    lk->bast = bast;
    lk->arg = arg;
    clr_mutex_lock(&ls->mu);
    lk->lkid = ls->next_lkid++;
    b = (unsigned)(lk->lkid % CLR_LS_LOCK_BUCKETS);
    lk->hnext = ls->locks[b];
    ls->locks[b] = lk;
    ls->nlocks++;
    clr_mutex_unlock(&ls->mu);
    return lk;
}

int clr_lock_destroy(struct clr_lock *lk)
{
    struct clr_ls *ls = lk->ls;
    struct clr_lock **pp;
    struct clr_cb **cp;

    clr_mutex_lock(&ls->mu);
    if (lk->op != CLR_OP_NONE || lk->grmode != CLR_LOCK_IV) {
        clr_mutex_unlock(&ls->mu);
        return -EBUSY;
    }
    for (pp = &ls->locks[lk->lkid % CLR_LS_LOCK_BUCKETS]; *pp; pp = &(*pp)->hnext) {
        if (*pp == lk) {
            *pp = lk->hnext;
            break;
        }
    }
    ls->nlocks--;
    /* drop callbacks still queued for it */
    ls->cb_tail = NULL;
    for (cp = &ls->cb_head; *cp;) {
        if ((*cp)->lk == lk) {
            struct clr_cb *dead = *cp;

            *cp = dead->next;
            free(dead);
        } else {
            ls->cb_tail = *cp;
            cp = &(*cp)->next;
        }
    }
    clr_mutex_unlock(&ls->mu);
    free(lk->be);
    free(lk);
    return 0;
}

static int start_op(struct clr_lock *lk, enum clr_lock_op op, int mode, bool sync, uint64_t *seq)
{
    struct clr_ls *ls = lk->ls;

    clr_mutex_lock(&ls->mu);
    if (lk->op != CLR_OP_NONE) {
        clr_mutex_unlock(&ls->mu);
        return -EBUSY;
    }
    if (op == CLR_OP_UNLOCK && lk->grmode == CLR_LOCK_IV) {
        clr_mutex_unlock(&ls->mu);
        return -ENOENT;
    }
    lk->op = op;
    lk->rqmode = mode;
    lk->sync_op = sync;
    lk->cancel_sent = false;
    if (seq)
        *seq = lk->done_seq;
    clr_mutex_unlock(&ls->mu);
    return 0;
}

static void abort_op(struct clr_lock *lk)
{
    clr_mutex_lock(&lk->ls->mu);
    lk->op = CLR_OP_NONE;
    lk->sync_op = false;
    lk->rqmode = CLR_LOCK_IV;
    clr_mutex_unlock(&lk->ls->mu);
}

static int do_request(struct clr_lock *lk, int mode, unsigned flags, bool sync, uint64_t *seq)
{
    int rc;

    if (mode < CLR_LOCK_NL || mode > CLR_LOCK_EX || (flags & ~(CLR_LOCK_F_NOQUEUE | CLR_LOCK_F_VALBLK)))
        return -EINVAL;
    rc = start_op(lk, CLR_OP_REQUEST, mode, sync, seq);
    if (rc)
        return rc;
    rc = lk->ls->ops->request(lk->ls, lk, mode, flags);
    if (rc)
        abort_op(lk);
    return rc;
}

int clr_lock_request(struct clr_lock *lk, int mode, unsigned flags)
{
    return do_request(lk, mode, flags, false, NULL);
}

static int do_unlock(struct clr_lock *lk, unsigned flags, bool sync, uint64_t *seq)
{
    int rc = start_op(lk, CLR_OP_UNLOCK, CLR_LOCK_IV, sync, seq);

    if (rc)
        return rc;
    rc = lk->ls->ops->unlock(lk->ls, lk, flags);
    if (rc)
        abort_op(lk);
    return rc;
}

int clr_lock_unlock(struct clr_lock *lk, unsigned flags)
{
    return do_unlock(lk, flags, false, NULL);
}

int clr_lock_cancel(struct clr_lock *lk)
{
    struct clr_ls *ls = lk->ls;

    clr_mutex_lock(&ls->mu);
    if (lk->op != CLR_OP_REQUEST || lk->cancel_sent) {
        clr_mutex_unlock(&ls->mu);
        return lk->op == CLR_OP_REQUEST ? 0 : -ENOENT;
    }
    lk->cancel_sent = true;
    clr_mutex_unlock(&ls->mu);
    return ls->ops->cancel(ls, lk);
}

static void deadline_ts(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Wait until @lk completes after @seq; false on timeout (0 = forever).
 * *status gets the completion status. */
static bool wait_done(struct clr_lock *lk, uint64_t seq, unsigned timeout_ms, int *status)
{
    struct clr_ls *ls = lk->ls;
    struct timespec ts;
    bool done;

    deadline_ts(&ts, timeout_ms);
    clr_mutex_lock(&ls->mu);
    while (lk->done_seq == seq) {
        if (timeout_ms == 0)
            clr_cond_wait(&ls->cond, &ls->mu);
        else if (clr_cond_timedwait(&ls->cond, &ls->mu, &ts) == ETIMEDOUT)
            break;
    }
    done = lk->done_seq != seq;
    *status = lk->status;
    /* A membership event queued before this completion (e.g. the death
     * of the holder we waited for) reaches the engine first, as with the
     * DLM, where recovery callbacks precede the grants they cause. */
    while (done && ls->dispatched_seq < lk->barrier) {
        if (timeout_ms == 0)
            clr_cond_wait(&ls->cond, &ls->mu);
        else if (clr_cond_timedwait(&ls->cond, &ls->mu, &ts) == ETIMEDOUT)
            break;
    }
    clr_mutex_unlock(&ls->mu);
    return done;
}

int clr_lock_sync(struct clr_lock *lk, int mode, unsigned flags, unsigned timeout_ms)
{
    uint64_t seq;
    int rc = do_request(lk, mode, flags, true, &seq);

    if (rc)
        return rc;
    if (!wait_done(lk, seq, timeout_ms, &rc)) {
        clr_lock_cancel(lk);
        if (!wait_done(lk, seq, CLR_CANCEL_WAIT_MS, &rc)) {
            /* The cluster is not answering.  Nobody waits for this
             * request any more: its late completion (maybe a grant)
             * goes to the ast, if the lock has one. */
            bool pending;

            clr_mutex_lock(&lk->ls->mu);
            pending = lk->done_seq == seq;
            if (pending)
                lk->sync_op = false;
            rc = lk->status;
            clr_mutex_unlock(&lk->ls->mu);
            if (pending)
                return -ETIMEDOUT;
            /* completed just now (no ast for it): as below */
            return rc == 0 ? 0 : -ETIMEDOUT;
        }
        if (rc == 0)
            return 0; /* the grant won the race with the cancel */
        return -ETIMEDOUT;
    }
    return rc;
}

int clr_lock_wait(struct clr_lock *lk, unsigned timeout_ms)
{
    struct clr_ls *ls = lk->ls;
    uint64_t seq;
    int st;

    clr_mutex_lock(&ls->mu);
    st = lk->status;
    seq = lk->done_seq;
    if (lk->op == CLR_OP_NONE) {
        clr_mutex_unlock(&ls->mu);
        return st;
    }
    clr_mutex_unlock(&ls->mu);
    if (!wait_done(lk, seq, timeout_ms, &st))
        return -ETIMEDOUT;
    return st;
}

int clr_unlock_sync(struct clr_lock *lk, unsigned flags, unsigned timeout_ms)
{
    uint64_t seq;
    int rc = do_unlock(lk, flags, true, &seq);

    if (rc)
        return rc;
    if (!wait_done(lk, seq, timeout_ms, &rc))
        return -ETIMEDOUT;
    return rc;
}

/* The accessors lock: completions update these from backend threads. */
int clr_lock_mode(const struct clr_lock *lk)
{
    int v;

    clr_mutex_lock(&lk->ls->mu);
    v = lk->grmode;
    clr_mutex_unlock(&lk->ls->mu);
    return v;
}

int clr_lock_status(const struct clr_lock *lk)
{
    int v;

    clr_mutex_lock(&lk->ls->mu);
    v = lk->status;
    clr_mutex_unlock(&lk->ls->mu);
    return v;
}

unsigned clr_lock_sb_flags(const struct clr_lock *lk)
{
    unsigned v;

    clr_mutex_lock(&lk->ls->mu);
    v = lk->sb_flags;
    clr_mutex_unlock(&lk->ls->mu);
    return v;
}

unsigned clr_lock_bast_count(const struct clr_lock *lk)
{
    unsigned v;

    clr_mutex_lock(&lk->ls->mu);
    v = lk->bast_count;
    clr_mutex_unlock(&lk->ls->mu);
    return v;
}

uint8_t *clr_lock_lvb(struct clr_lock *lk)
{
    return lk->lvb;
}

const char *clr_lock_name(const struct clr_lock *lk)
{
    return lk->name;
}

struct clr_ls *clr_lock_ls(const struct clr_lock *lk)
{
    return lk->ls;
}
