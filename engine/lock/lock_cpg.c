/*
 * The `cpg` backend: the replicated lockspace (lock_repl.c) over corosync
 * CPG agreed order, quorum from the corosync quorum API, death
 * confirmation from Pacemaker's fencer.  This file is only glue: threads,
 * fds and retries; every decision is in lock_repl.c.
 *
 * Threads: one backend thread polls the CPG and quorum fds and runs every
 * CPG callback; a fence thread asks the fencer about failed members.  The
 * replica is driven under ls->mu; multicasts never happen under ls->mu
 * (corosync flow control may make them wait).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <corosync/cpg.h>
#include <corosync/quorum.h>
#include <crm/stonith-ng.h>

#include "common/lockrank.h"
#include "lock/lock_internal.h"
#include "lock/lock_repl.h"

#define CPG_GROUP_PREFIX  "clraid:"
#define CPG_SEND_RETRY_MS 10000
#define CPG_LEAVE_WAIT_MS 3000
#define FENCE_MAX_WATCH   64
#define SEEN_MAX          128

struct outmsg {
    struct outmsg *next;
    size_t len;
    uint8_t buf[];
};

struct fence_watch {
    uint64_t inc;
    uint32_t nodeid;
    time_t t0;    /* wall clock when we first saw it failed */
    time_t since; /* when we first saw its process in the group (0: unknown) */
    uint64_t start_ms;
    uint64_t last_confirm_ms;
    bool reported;
};

struct cpg_be {
    struct clr_ls *ls;
    struct clr_repl *repl;
    cpg_handle_t cpg;
    bool cpg_ok;
    quorum_handle_t q;
    bool q_ok;
    bool quorate;
    struct cpg_name group;
    uint32_t nodeid, pid;
    int wake_fd;
    pthread_t thread, fence_thread;
    bool thread_running, fence_running;
    bool stop;          /* under ls->mu */
    bool leave_pending; /* stale: leave the group from the thread */
    bool need_join;     /* join once quorate */
    bool left_seen;     /* our own clean leave was delivered */
    bool frozen;        /* stale: refuse requests until synced again */
    struct clr_mutex send_mu;
    pthread_cond_t fence_cond;          /* with ls->mu: wakes the fence thread */
    struct outmsg *out_head, *out_tail; /* under ls->mu */
    struct fence_watch watch[FENCE_MAX_WATCH];
    size_t nwatch;
    /* when we first saw each group member's process (under ls->mu): a
     * fencing of its node after that ended it (fence_round) */
    struct {
        uint32_t nodeid, pid;
        time_t since;
    } seen[SEEN_MAX];
    size_t nseen;
};

static struct cpg_be *be_of(struct clr_ls *ls)
{
    return ls->be;
}

static void wake(struct cpg_be *be)
{
    uint64_t one = 1;

    if (write(be->wake_fd, &one, sizeof(one)) < 0) {
        /* counter full: the thread is awake anyway */
    }
}

/* Multicast in agreed order, retrying while corosync is busy. */
static int be_send(struct cpg_be *be, const uint8_t *buf, size_t len)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
    uint64_t deadline = clr_lock_now_ms() + CPG_SEND_RETRY_MS;
    cs_error_t err;
    int rc = 0;

    clr_mutex_lock(&be->send_mu);
    if (!be->cpg_ok) {
        clr_mutex_unlock(&be->send_mu);
        return -ENOLCK;
    }
    for (;;) {
        err = cpg_mcast_joined(be->cpg, CPG_TYPE_AGREED, &iov, 1);
        if (err == CS_OK)
            break;
        if (err != CS_ERR_TRY_AGAIN || clr_lock_now_ms() > deadline) {
            rc = err == CS_ERR_TRY_AGAIN ? -EAGAIN : -ENOTCONN;
            break;
        }
        usleep(200);
    }
    clr_mutex_unlock(&be->send_mu);
    return rc;
}

static void flush_outbox(struct cpg_be *be)
{
    for (;;) {
        struct outmsg *o;

        clr_mutex_lock(&be->ls->mu);
        o = be->out_head;
        if (o) {
            be->out_head = o->next;
            if (!o->next)
                be->out_tail = NULL;
        }
        clr_mutex_unlock(&be->ls->mu);
        if (!o)
            return;
        be_send(be, o->buf, o->len);
        free(o);
    }
}

/* ---- replica outputs (called under ls->mu) ---- */

static void repl_send(void *arg, const uint8_t *buf, size_t len)
{
    struct cpg_be *be = arg;
    struct outmsg *o = malloc(sizeof(*o) + len);

    if (!o)
        return;
    o->next = NULL;
    o->len = len;
    memcpy(o->buf, buf, len);
    if (be->out_tail)
        be->out_tail->next = o;
    else
        be->out_head = o;
    be->out_tail = o;
    wake(be);
}

static void repl_effect(void *arg, const struct clr_lt_effect *e)
{
    struct cpg_be *be = arg;

    clr_ls_effect_locked(be->ls, e);
}

static void repl_event(void *arg, const struct clr_ls_event *ev)
{
    struct cpg_be *be = arg;

    be->ls->our_slot = clr_repl_my_slot(be->repl);
    clr_ls_event_locked(be->ls, ev);
}

static void repl_synced(void *arg)
{
    struct cpg_be *be = arg;

    be->ls->member_id = clr_repl_my_inc(be->repl);
    be->ls->our_slot = clr_repl_my_slot(be->repl);
    be->frozen = false;
    pthread_cond_broadcast(&be->ls->cond);
}

/* Drop all our locks and tell the engine to freeze (ls->mu held). */
static void go_stale_locked(struct cpg_be *be)
{
    struct clr_ls_event ev = { .type = CLR_LS_EV_FREEZE };

    if (be->frozen)
        return;
    be->frozen = true;
    clr_ls_fail_all_locked(be->ls, -ENOLCK);
    clr_ls_event_locked(be->ls, &ev);
    be->leave_pending = true;
    be->need_join = true;
    wake(be);
}

static void repl_stale(void *arg)
{
    go_stale_locked(arg);
}

static const struct clr_repl_ops repl_ops = {
    .send = repl_send,
    .effect = repl_effect,
    .event = repl_event,
    .synced = repl_synced,
    .stale = repl_stale,
};

/* ---- corosync callbacks (backend thread) ---- */

static struct cpg_be *be_from_handle(cpg_handle_t h)
{
    void *ctx = NULL;

    cpg_context_get(h, &ctx);
    return ctx;
}

static void cpg_deliver(cpg_handle_t h, const struct cpg_name *group, uint32_t nodeid, uint32_t pid,
                        void *msg, size_t len)
{
    struct cpg_be *be = be_from_handle(h);

    (void)group;
    clr_mutex_lock(&be->ls->mu);
    clr_repl_deliver(be->repl, nodeid, pid, msg, len);
    clr_mutex_unlock(&be->ls->mu);
}

static void to_addrs(const struct cpg_address *in, size_t n, struct clr_repl_addr *out)
{
    for (size_t i = 0; i < n; i++) {
        out[i].nodeid = in[i].nodeid;
        out[i].pid = in[i].pid;
        out[i].reason = in[i].reason;
    }
}

/* seen_note_locked: remember when we first saw (nodeid, pid) in the group.
 * A full table forgets the oldest entry of a process no longer in @members
 * (its fencing, if any, is then judged from when we saw it fail). */
static void seen_note_locked(struct cpg_be *be, uint32_t nodeid, uint32_t pid,
                             const struct cpg_address *members, size_t nm)
{
    size_t i, victim = SEEN_MAX;

    for (i = 0; i < be->nseen; i++)
        if (be->seen[i].nodeid == nodeid && be->seen[i].pid == pid)
            return;
    if (be->nseen == SEEN_MAX) {
        for (i = 0; i < be->nseen; i++) {
            bool member = false;

            for (size_t j = 0; j < nm; j++)
                member |= members[j].nodeid == be->seen[i].nodeid && members[j].pid == be->seen[i].pid;
            if (!member && (victim == SEEN_MAX || be->seen[i].since < be->seen[victim].since))
                victim = i;
        }
        if (victim == SEEN_MAX)
            return;
        be->seen[victim] = be->seen[--be->nseen];
    }
    be->seen[be->nseen].nodeid = nodeid;
    be->seen[be->nseen].pid = pid;
    be->seen[be->nseen].since = time(NULL);
    be->nseen++;
}

static time_t seen_since_locked(struct cpg_be *be, uint32_t nodeid, uint32_t pid)
{
    for (size_t i = 0; i < be->nseen; i++)
        if (be->seen[i].nodeid == nodeid && be->seen[i].pid == pid)
            return be->seen[i].since;
    return 0;
}

static void cpg_confchg(cpg_handle_t h, const struct cpg_name *group, const struct cpg_address *members,
                        size_t nm, const struct cpg_address *left, size_t nl,
                        const struct cpg_address *joined, size_t nj)
{
    struct cpg_be *be = be_from_handle(h);
    struct clr_repl_addr *a = calloc(nm + nl + nj + 1, sizeof(*a));

    (void)group;
    if (!a)
        return;
    to_addrs(members, nm, a);
    to_addrs(left, nl, a + nm);
    to_addrs(joined, nj, a + nm + nl);
    clr_mutex_lock(&be->ls->mu);
    for (size_t i = 0; i < nl; i++)
        if (left[i].nodeid == be->nodeid && left[i].pid == be->pid)
            be->left_seen = true;
    for (size_t i = 0; i < nm; i++)
        seen_note_locked(be, members[i].nodeid, members[i].pid, members, nm);
    clr_repl_confchg(be->repl, a, nm, a + nm, nl, a + nm + nl, nj);
    pthread_cond_broadcast(&be->ls->cond);
    clr_mutex_unlock(&be->ls->mu);
    free(a);
}

static void quorum_notify(quorum_handle_t h, uint32_t quorate, uint64_t seq, uint32_t n, uint32_t *view)
{
    void *ctx = NULL;
    struct cpg_be *be;

    (void)seq;
    (void)n;
    (void)view;
    quorum_context_get(h, (const void **)&ctx);
    be = ctx;
    clr_mutex_lock(&be->ls->mu);
    if (be->quorate && !quorate && be->cpg_ok)
        go_stale_locked(be); /* the other side may now take our locks */
    be->quorate = quorate != 0;
    clr_mutex_unlock(&be->ls->mu);
}

static cpg_model_v1_data_t cpg_model = {
    .model = CPG_MODEL_V1,
    .cpg_deliver_fn = cpg_deliver,
    .cpg_confchg_fn = cpg_confchg,
    .cpg_totem_confchg_fn = NULL,
    .flags = 0,
};

static quorum_callbacks_t quorum_cbs = { .quorum_notify_fn = quorum_notify };

/* ---- join / leave ---- */

static int do_join(struct cpg_be *be)
{
    cs_error_t err;
    uint64_t deadline = clr_lock_now_ms() + 5000;

    if (!be->cpg_ok) {
        err = cpg_model_initialize(&be->cpg, CPG_MODEL_V1, (cpg_model_data_t *)&cpg_model, be);
        if (err != CS_OK)
            return -ENOTCONN;
        cpg_context_set(be->cpg, be);
        clr_mutex_lock(&be->send_mu);
        be->cpg_ok = true;
        clr_mutex_unlock(&be->send_mu);
    }
    while ((err = cpg_join(be->cpg, &be->group)) == CS_ERR_TRY_AGAIN && clr_lock_now_ms() < deadline)
        usleep(1000);
    return err == CS_OK ? 0 : -ENOTCONN;
}

static void do_finalize(struct cpg_be *be)
{
    if (!be->cpg_ok)
        return;
    clr_mutex_lock(&be->send_mu);
    be->cpg_ok = false;
    clr_mutex_unlock(&be->send_mu);
    cpg_finalize(be->cpg);
}

/* ---- backend thread ---- */

static void *cpg_thread(void *arg)
{
    struct cpg_be *be = arg;
    struct clr_ls *ls = be->ls;

    for (;;) {
        struct pollfd pfd[3];
        int n = 0, cfd = -1, qfd = -1, ci = -1, qi = -1;
        bool stop, leave, join;

        clr_mutex_lock(&ls->mu);
        stop = be->stop;
        leave = be->leave_pending;
        be->leave_pending = false;
        join = be->need_join && be->quorate && !leave;
        if (join)
            be->need_join = false;
        clr_mutex_unlock(&ls->mu);
        if (stop)
            break;
        if (leave) {
            /* stale: forget all, come back as a new member */
            if (be->cpg_ok)
                cpg_leave(be->cpg, &be->group);
            do_finalize(be);
            clr_mutex_lock(&ls->mu);
            clr_repl_reset(be->repl);
            clr_mutex_unlock(&ls->mu);
            continue;
        }
        if (join && do_join(be) != 0) {
            clr_mutex_lock(&ls->mu);
            be->need_join = true;
            clr_mutex_unlock(&ls->mu);
        }
        flush_outbox(be);

        pfd[n].fd = be->wake_fd;
        pfd[n++].events = POLLIN;
        if (be->cpg_ok && cpg_fd_get(be->cpg, &cfd) == CS_OK) {
            ci = n;
            pfd[n].fd = cfd;
            pfd[n++].events = POLLIN;
        }
        if (be->q_ok && quorum_fd_get(be->q, &qfd) == CS_OK) {
            qi = n;
            pfd[n].fd = qfd;
            pfd[n++].events = POLLIN;
        }
        if (poll(pfd, (nfds_t)n, 200) <= 0)
            continue;
        if (pfd[0].revents) {
            uint64_t v;

            if (read(be->wake_fd, &v, sizeof(v)) < 0) {
                /* EAGAIN: nothing to clear */
            }
        }
        if (ci >= 0 && pfd[ci].revents) {
            cs_error_t err = cpg_dispatch(be->cpg, CS_DISPATCH_ALL);

            if (err != CS_OK && err != CS_ERR_TRY_AGAIN) {
                /* corosync is gone: nothing we hold is safe */
                clr_mutex_lock(&ls->mu);
                go_stale_locked(be);
                clr_mutex_unlock(&ls->mu);
            }
        }
        if (qi >= 0 && pfd[qi].revents && quorum_dispatch(be->q, CS_DISPATCH_ALL) != CS_OK) {
            quorum_finalize(be->q);
            be->q_ok = false;
            clr_mutex_lock(&ls->mu);
            be->quorate = false;
            go_stale_locked(be);
            clr_mutex_unlock(&ls->mu);
        }
        flush_outbox(be);
    }
    return NULL;
}

/* ---- fence thread: confirm failed members through the fencer ---- */

static struct fence_watch *watch_find(struct cpg_be *be, uint64_t inc)
{
    for (size_t i = 0; i < be->nwatch; i++)
        if (be->watch[i].inc == inc)
            return &be->watch[i];
    return NULL;
}

static void fence_round(struct cpg_be *be)
{
    struct clr_repl_member mem[FENCE_MAX_WATCH];
    struct clr_ls *ls = be->ls;
    size_t n, i, k;
    uint64_t now = clr_lock_now_ms();

    clr_mutex_lock(&ls->mu);
    n = clr_repl_members(be->repl, mem, FENCE_MAX_WATCH);
    if (n > FENCE_MAX_WATCH)
        n = FENCE_MAX_WATCH;
    clr_mutex_unlock(&ls->mu);
    /* forget confirmed ones, start watching new ones */
    for (i = 0, k = 0; i < be->nwatch; i++) {
        bool still = false;

        for (size_t j = 0; j < n; j++)
            still |= mem[j].inc == be->watch[i].inc && mem[j].state == CLR_REPL_M_FAILED;
        if (still)
            be->watch[k++] = be->watch[i];
    }
    be->nwatch = k;
    for (i = 0; i < n; i++) {
        time_t since;

        if (mem[i].state != CLR_REPL_M_FAILED || watch_find(be, mem[i].inc) || be->nwatch >= FENCE_MAX_WATCH)
            continue;
        clr_mutex_lock(&ls->mu);
        since = seen_since_locked(be, mem[i].nodeid, mem[i].pid);
        clr_mutex_unlock(&ls->mu);
        be->watch[be->nwatch++] = (struct fence_watch){
            .inc = mem[i].inc,
            .nodeid = mem[i].nodeid,
            .t0 = time(NULL),
            .since = since,
            .start_ms = now,
        };
    }
    for (i = 0; i < be->nwatch; i++) {
        struct fence_watch *w = &be->watch[i];
        time_t t;

        if (w->last_confirm_ms && now - w->last_confirm_ms < 2000)
            continue;
        /* A fencing of that node after we first saw this process in the
         * group ended it: the process ran before the fencing, and a node
         * comes back from a fencing only with new processes.  (After we
         * saw it go is not required: a fast fence agent finishes before
         * corosync's token timeout shows the node gone, and such a
         * fencing is the only one there will be.)  2 s of slack: clocks
         * of two nodes, whole seconds. */
        t = stonith_api_time(w->nodeid, NULL, false);
        if (t > 0 && (t + 2 >= w->t0 || (w->since && t + 2 >= w->since))) {
            uint8_t buf[CLR_REPL_MSG_HDR];
            struct clr_repl_msg m = { .type = CLR_REPL_MSG_CONFIRM_DEAD, .arg = w->inc };

            clr_repl_msg_encode(&m, buf, sizeof(buf));
            be_send(be, buf, sizeof(buf));
            w->last_confirm_ms = now;
        } else if (!w->reported && now - w->start_ms >= ls->cfg.fence_timeout_ms) {
            struct clr_ls_event ev = { .type = CLR_LS_EV_FENCE_TIMEOUT,
                                       .member = w->inc,
                                       .nodeid = w->nodeid };

            w->reported = true;
            clr_mutex_lock(&ls->mu);
            clr_ls_event_locked(ls, &ev);
            clr_mutex_unlock(&ls->mu);
        }
    }
}

static void *fence_thread(void *arg)
{
    struct cpg_be *be = arg;
    struct clr_ls *ls = be->ls;

    for (;;) {
        struct timespec ts;
        bool stop;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += ls->cfg.fence_poll_ms / 1000;
        ts.tv_nsec += (long)(ls->cfg.fence_poll_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        clr_mutex_lock(&ls->mu);
        if (!be->stop)
            clr_cond_timedwait(&be->fence_cond, &ls->mu, &ts);
        stop = be->stop;
        clr_mutex_unlock(&ls->mu);
        if (stop)
            break;
        fence_round(be);
    }
    return NULL;
}

/* ---- backend ops ---- */

static void be_free(struct cpg_be *be)
{
    struct clr_ls *ls = be->ls;

    clr_mutex_lock(&ls->mu);
    be->stop = true;
    pthread_cond_broadcast(&ls->cond);
    pthread_cond_broadcast(&be->fence_cond);
    clr_mutex_unlock(&ls->mu);
    wake(be);
    if (be->thread_running)
        pthread_join(be->thread, NULL);
    if (be->fence_running)
        pthread_join(be->fence_thread, NULL);
    do_finalize(be);
    if (be->q_ok)
        quorum_finalize(be->q);
    while (be->out_head) {
        struct outmsg *o = be->out_head;

        be->out_head = o->next;
        free(o);
    }
    clr_repl_free(be->repl);
    close(be->wake_fd);
    clr_mutex_destroy(&be->send_mu);
    pthread_cond_destroy(&be->fence_cond);
    free(be);
    ls->be = NULL;
}

static int cpg_open(struct clr_ls *ls, const struct clr_ls_config *cfg)
{
    struct cpg_be *be = calloc(1, sizeof(*be));
    uint32_t qtype = 0;
    unsigned int local = 0;
    int quorate = 0, rc;
    struct timespec ts;

    if (!be)
        return -ENOMEM;
    if (strlen(CPG_GROUP_PREFIX) + strlen(cfg->name) >= CPG_MAX_NAME_LENGTH) {
        free(be);
        return -ENAMETOOLONG;
    }
    be->ls = ls;
    ls->be = be;
    clr_mutex_init(&be->send_mu, CLR_RANK_CPG_SEND, "cpg send_mu");
    {
        pthread_condattr_t ca;

        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&be->fence_cond, &ca);
        pthread_condattr_destroy(&ca);
    }
    be->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    be->group.length = (uint32_t)(strlen(CPG_GROUP_PREFIX) + strlen(cfg->name));
    memcpy(be->group.value, CPG_GROUP_PREFIX, strlen(CPG_GROUP_PREFIX));
    memcpy(be->group.value + strlen(CPG_GROUP_PREFIX), cfg->name, strlen(cfg->name));
    be->pid = (uint32_t)getpid();

    if (cpg_model_initialize(&be->cpg, CPG_MODEL_V1, (cpg_model_data_t *)&cpg_model, be) != CS_OK) {
        rc = -ENOTCONN;
        goto fail;
    }
    cpg_context_set(be->cpg, be);
    be->cpg_ok = true;
    if (cpg_local_get(be->cpg, &local) != CS_OK) {
        rc = -ENOTCONN;
        goto fail;
    }
    be->nodeid = local;
    if (quorum_initialize(&be->q, &quorum_cbs, &qtype) != CS_OK) {
        rc = -ENOTCONN;
        goto fail;
    }
    be->q_ok = true;
    quorum_context_set(be->q, be);
    quorum_getquorate(be->q, &quorate);
    be->quorate = quorate != 0;
    quorum_trackstart(be->q, CS_TRACK_CHANGES);
    be->repl = clr_repl_new(be->nodeid, be->pid, &repl_ops, be);
    if (!be->repl) {
        rc = -ENOMEM;
        goto fail;
    }
    be->need_join = true;
    if (pthread_create(&be->thread, NULL, cpg_thread, be) != 0) {
        rc = -EAGAIN;
        goto fail;
    }
    be->thread_running = true;
    if (pthread_create(&be->fence_thread, NULL, fence_thread, be) == 0)
        be->fence_running = true;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += cfg->join_timeout_ms / 1000;
    ts.tv_nsec += (long)(cfg->join_timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    clr_mutex_lock(&ls->mu);
    while (!clr_repl_synced(be->repl))
        if (clr_cond_timedwait(&ls->cond, &ls->mu, &ts) == ETIMEDOUT)
            break;
    rc = clr_repl_synced(be->repl) ? 0 : -ETIMEDOUT;
    clr_mutex_unlock(&ls->mu);
    if (rc)
        goto fail;
    return 0;
fail:
    be_free(be);
    return rc;
}

static void cpg_close(struct clr_ls *ls)
{
    struct cpg_be *be = be_of(ls);
    struct timespec ts;

    if (!be)
        return;
    /* A clean leave: the others release our locks without invalidating
     * LVBs.  Wait (bounded) until our leave is delivered, so every
     * message we sent before it has been applied everywhere. */
    clr_mutex_lock(&be->send_mu);
    if (be->cpg_ok)
        cpg_leave(be->cpg, &be->group);
    clr_mutex_unlock(&be->send_mu);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += CPG_LEAVE_WAIT_MS / 1000;
    clr_mutex_lock(&ls->mu);
    while (!be->left_seen && be->cpg_ok)
        if (clr_cond_timedwait(&ls->cond, &ls->mu, &ts) == ETIMEDOUT)
            break;
    clr_mutex_unlock(&ls->mu);
    be_free(be);
}

static int send_op(struct clr_ls *ls, struct clr_lock *lk, uint8_t type, int mode, unsigned flags)
{
    struct cpg_be *be = be_of(ls);
    struct clr_repl_msg m = { .type = type };
    uint8_t buf[CLR_REPL_MSG_HDR + CLR_LOCK_NAME_MAX];
    bool ok;
    long len;

    clr_mutex_lock(&ls->mu);
    ok = be && !be->frozen && clr_repl_synced(be->repl);
    clr_mutex_unlock(&ls->mu);
    if (!ok)
        return -ENOLCK; /* frozen, or rejoining after a partition */
    m.mode = mode;
    m.flags = flags;
    m.lkid = lk->lkid;
    if (type == CLR_REPL_MSG_REQUEST) {
        m.name = lk->name;
        m.namelen = lk->namelen;
    }
    if (flags & CLR_LOCK_F_VALBLK) {
        m.has_lvb = true;
        memcpy(m.lvb, lk->lvb, CLR_LOCK_LVB_LEN);
    }
    len = clr_repl_msg_encode(&m, buf, sizeof(buf));
    if (len < 0)
        return (int)len;
    return be_send(be, buf, (size_t)len);
}

static int cpg_request(struct clr_ls *ls, struct clr_lock *lk, int mode, unsigned flags)
{
    return send_op(ls, lk, lk->grmode == CLR_LOCK_IV ? CLR_REPL_MSG_REQUEST : CLR_REPL_MSG_CONVERT, mode,
                   flags);
}

static int cpg_unlock(struct clr_ls *ls, struct clr_lock *lk, unsigned flags)
{
    return send_op(ls, lk, CLR_REPL_MSG_UNLOCK, CLR_LOCK_IV, flags);
}

static int cpg_cancel(struct clr_ls *ls, struct clr_lock *lk)
{
    return send_op(ls, lk, CLR_REPL_MSG_CANCEL, CLR_LOCK_IV, 0);
}

static int cpg_confirm_dead(struct clr_ls *ls, uint64_t member)
{
    struct cpg_be *be = be_of(ls);
    struct clr_repl_member mem[FENCE_MAX_WATCH];
    struct clr_repl_msg m = { .type = CLR_REPL_MSG_CONFIRM_DEAD, .arg = member };
    uint8_t buf[CLR_REPL_MSG_HDR];
    bool found = false;
    size_t n;

    clr_mutex_lock(&ls->mu);
    n = clr_repl_members(be->repl, mem, FENCE_MAX_WATCH);
    clr_mutex_unlock(&ls->mu);
    for (size_t i = 0; i < n && i < FENCE_MAX_WATCH; i++)
        found |= mem[i].inc == member && mem[i].state == CLR_REPL_M_FAILED;
    if (!found)
        return -ENOENT;
    clr_repl_msg_encode(&m, buf, sizeof(buf));
    return be_send(be, buf, sizeof(buf));
}

static uint64_t cpg_digest(struct clr_ls *ls)
{
    uint64_t d;

    clr_mutex_lock(&ls->mu);
    d = clr_repl_digest(be_of(ls)->repl);
    clr_mutex_unlock(&ls->mu);
    return d;
}

static int cpg_member_count(struct clr_ls *ls)
{
    struct cpg_be *be = be_of(ls);
    struct clr_repl_member mem[FENCE_MAX_WATCH];
    size_t n;
    int live = 0;

    clr_mutex_lock(&ls->mu);
    n = clr_repl_members(be->repl, mem, FENCE_MAX_WATCH);
    clr_mutex_unlock(&ls->mu);
    for (size_t i = 0; i < n && i < FENCE_MAX_WATCH; i++)
        live += mem[i].state == CLR_REPL_M_LIVE;
    return live;
}

const struct clr_lock_backend_ops clr_lock_backend_cpg = {
    .name = "cpg",
    .open = cpg_open,
    .close = cpg_close,
    .request = cpg_request,
    .unlock = cpg_unlock,
    .cancel = cpg_cancel,
    .confirm_dead = cpg_confirm_dead,
    .digest = cpg_digest,
    .member_count = cpg_member_count,
};
