/* clraid: the io_uring context, its ring thread, submission and completion. */
#include <config.h>

#include <errno.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/lockrank.h"
#include "io/io_internal.h"

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#endif
#endif
#ifndef VALGRIND_MAKE_MEM_DEFINED
#define VALGRIND_MAKE_MEM_DEFINED(addr, len) ((void)(addr), (void)(len))
#endif

/* user_data tags: requests are malloc'ed, so the low bits are free. */
#define UD_WAKE  ((uint64_t)0) /* a NOP that only wakes the ring thread */
#define UD_DELAY ((uint64_t)1) /* a delay timer ran out */
#define UD_FAULT ((uint64_t)2) /* a NOP carrying an injected error */
#define UD_TAGS  ((uint64_t)3)

/* EINTR/EAGAIN resubmissions before giving up with that error. */
#define MAX_RETRIES 1000
/* Largest read or write: the callback's result is an int. */
#define MAX_RW_LEN (1u << 30)

static void default_log(void *opaque, int prio, const char *msg)
{
    (void)opaque;
    (void)prio;
    fprintf(stderr, "clraid: io: %s\n", msg);
}

void clr_io_log(struct clr_io_ctx *ctx, int prio, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ctx->log(ctx->log_opaque, prio, msg);
}

bool clr_io_on_ring_thread(const struct clr_io_ctx *ctx)
{
    return pthread_equal(pthread_self(), ctx->thread);
}

static void fifo_init(struct clr_io_req_fifo *q)
{
    q->head = NULL;
    q->tailp = &q->head;
}

static void fifo_push(struct clr_io_req_fifo *q, struct clr_io_req *r)
{
    r->next = NULL;
    *q->tailp = r;
    q->tailp = &r->next;
}

static struct clr_io_req *fifo_pop(struct clr_io_req_fifo *q)
{
    struct clr_io_req *r = q->head;

    if (r) {
        q->head = r->next;
        if (!q->head)
            q->tailp = &q->head;
    }
    return r;
}

/* Put @front (non-empty) ahead of everything in @q. */
static void fifo_prepend(struct clr_io_req_fifo *q, struct clr_io_req_fifo *front)
{
    *front->tailp = q->head;
    if (q->head)
        front->tailp = q->tailp;
    *q = *front;
}

/* ---------------------------------------------------------------------
 * Submission side: everything here runs with ctx->sq_lock held.
 *
 * The rule that keeps requests from being stranded: a producer that finds
 * sq_lock taken leaves its request on ctx->queue and returns, so whoever
 * holds sq_lock, for whatever reason, must look at the queue after letting
 * go. Release it only through sq_unlock() or ring_pump().
 * --------------------------------------------------------------------- */

static void ring_pump(struct clr_io_ctx *ctx, bool wait);

static void sq_unlock(struct clr_io_ctx *ctx)
{
    clr_mutex_unlock(&ctx->sq_lock);
    /* Pairs with the fence in req_submit(): see ring_pump(). */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&ctx->queue) != NULL)
        ring_pump(ctx, false);
}

static void submit_locked(struct clr_io_ctx *ctx)
{
    while (io_uring_sq_ready(&ctx->ring) > 0) {
        int ret = io_uring_submit(&ctx->ring);

        if (ret > 0 || ret == -EINTR)
            continue;
        if (ret == 0 || ret == -EAGAIN || ret == -EBUSY) {
            /* Kernel wants CQEs reaped first: the ring thread retries. */
            atomic_store(&ctx->backlogged, true);
            return;
        }
        clr_io_log(ctx, CLR_IO_LOG_ERR, "io_uring_submit: %s", strerror(-ret));
        abort(); /* the ring is broken; nothing sane to do */
    }
}

static struct io_uring_sqe *get_sqe(struct clr_io_ctx *ctx)
{
    struct io_uring_sqe *sqe;

    while (!(sqe = io_uring_get_sqe(&ctx->ring))) {
        /* SQ full: hand what we have to the kernel and try again. */
        int ret = io_uring_submit(&ctx->ring);

        if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
            clr_io_log(ctx, CLR_IO_LOG_ERR, "io_uring_submit: %s", strerror(-ret));
            abort();
        }
    }
    atomic_fetch_add(&ctx->kinflight, 1);
    return sqe;
}

/* Run the callback and forget the request. */
uint64_t clr_io_coarse_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clr_io_dev_stall_ms(struct clr_io_dev *dev)
{
    uint64_t p, now;

    if (atomic_load(&dev->inflight) <= 0)
        return 0;
    p = atomic_load(&dev->progress_ns);
    now = clr_io_coarse_ns();
    return now > p ? (now - p) / 1000000u : 0;
}

void clr_io_req_deliver(struct clr_io_ctx *ctx, struct clr_io_req *r, int res)
{
    struct clr_io_dev *dev = r->dev;

    atomic_store(&dev->progress_ns, clr_io_coarse_ns());

    if (r->bounce) {
        if (r->op == CLR_IO_OP_READ && res >= 0) {
            const uint8_t *src = r->bounce;

            for (int i = 0; i < r->uiovcnt; i++) {
                memcpy(r->uiov[i].iov_base, src, r->uiov[i].iov_len);
                src += r->uiov[i].iov_len;
            }
        }
        clr_io_free(r->bounce);
    }
    r->cb(r->arg, res);
    if (!r->on_stack)
        free(r);
    /*
     * After this decrement clr_io_close() may free @dev, so look only at
     * ctx from here. The Dekker pair (inflight here, closers there) is
     * seq_cst so one side always sees the other.
     */
    if (atomic_fetch_sub(&dev->inflight, 1) == 1 && atomic_load(&ctx->closers)) {
        clr_mutex_lock(&ctx->lock);
        pthread_cond_broadcast(&ctx->cond);
        clr_mutex_unlock(&ctx->lock);
    }
    if (atomic_fetch_sub(&ctx->pending, 1) == 1 && atomic_load(&ctx->stopping)) {
        clr_mutex_lock(&ctx->lock);
        pthread_cond_broadcast(&ctx->cond);
        clr_mutex_unlock(&ctx->lock);
    }
}

/*
 * Ring thread: the request is done with @res. Deliver it, or first hold
 * it for the injected delay.
 */
static void req_finish(struct clr_io_ctx *ctx, struct clr_io_req *r, int res)
{
    unsigned ms;

    if (!r->delayed && (ms = clr_io_fault_delay_ms(r->dev)) != 0) {
        struct io_uring_sqe *sqe;

        r->delayed = true;
        r->res = res;
        r->ts.tv_sec = ms / 1000;
        r->ts.tv_nsec = (long long)(ms % 1000) * 1000000;
        clr_mutex_lock(&ctx->sq_lock);
        sqe = get_sqe(ctx);
        io_uring_prep_timeout(sqe, &r->ts, 0, 0);
        io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)r | UD_DELAY);
        submit_locked(ctx);
        sq_unlock(ctx);
        return;
    }
    clr_io_req_deliver(ctx, r, res);
}

/* Under sq_lock: prepare the SQE for the next step of @r. */
static void req_issue(struct clr_io_ctx *ctx, struct clr_io_req *r)
{
    struct clr_io_dev *dev = r->dev;
    struct io_uring_sqe *sqe = get_sqe(ctx);

    if (!r->issued) {
        int err = clr_io_fault_check(dev, r);

        r->issued = true;
        if (err) {
            /*
             * The error travels through the ring as a NOP so that
             * the callback runs on the ring thread, like any other.
             */
            r->res = err;
            io_uring_prep_nop(sqe);
            io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)r | UD_FAULT);
            atomic_store_explicit(&r->handoff, 1, memory_order_release);
            return;
        }
    }

    switch (r->op) {
    case CLR_IO_OP_READ:
    case CLR_IO_OP_WRITE: {
        const struct iovec *iov = &r->iov[r->iovidx];
        unsigned n = (unsigned)(r->iovcnt - r->iovidx);
        unsigned len = (unsigned)iov->iov_len;
        unsigned cap = clr_io_fault_short_max(dev);
        bool wr = r->op == CLR_IO_OP_WRITE;
        uint64_t off = r->off + r->done;

        if (cap) {
            /* Injected short transfer: one segment, at most cap bytes. */
            n = 1;
            if (len > cap) {
                len = cap;
                clr_io_fault_count_short(dev);
            } else if (r->iovcnt - r->iovidx > 1) {
                clr_io_fault_count_short(dev);
            }
        }
        /* Single buffer: READ/WRITE spare the kernel an iovec import. */
        if (n == 1 && wr)
            io_uring_prep_write(sqe, dev->fd, iov->iov_base, len, off);
        else if (n == 1)
            io_uring_prep_read(sqe, dev->fd, iov->iov_base, len, off);
        else if (wr)
            io_uring_prep_writev(sqe, dev->fd, iov, n, off);
        else
            io_uring_prep_readv(sqe, dev->fd, iov, n, off);
        sqe->rw_flags = r->rw_flags;
        break;
    }
    case CLR_IO_OP_FSYNC:
        io_uring_prep_fsync(sqe, dev->fd, IORING_FSYNC_DATASYNC);
        break;
    case CLR_IO_OP_DISCARD:
        r->mode = atomic_load(&dev->discard_nohide);
        io_uring_prep_fallocate(sqe, dev->fd,
                                FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE |
                                    (r->mode ? FALLOC_FL_NO_HIDE_STALE : 0),
                                (off_t)r->off, (off_t)r->len);
        break;
    case CLR_IO_OP_ZERO:
        if (!r->zero_write) {
            r->mode = (uint8_t)atomic_load(&dev->zero_mode);
            r->zero_write = r->mode == CLR_IO_ZERO_WRITE;
        }
        if (r->zero_write) {
            uint64_t left = r->len - r->done;
            unsigned chunk = left < CLR_IO_ZERO_BUF ? (unsigned)left : CLR_IO_ZERO_BUF;

            io_uring_prep_write(sqe, dev->fd, ctx->zero_buf, chunk, r->off + r->done);
        } else if (r->mode == CLR_IO_ZERO_RANGE) {
            io_uring_prep_fallocate(sqe, dev->fd,
                                    FALLOC_FL_ZERO_RANGE | (dev->info.is_blockdev ? 0 : FALLOC_FL_KEEP_SIZE),
                                    (off_t)r->off, (off_t)r->len);
        } else {
            io_uring_prep_fallocate(sqe, dev->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)r->off,
                                    (off_t)r->len);
        }
        break;
    }
    io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)r);
    atomic_store_explicit(&r->handoff, 1, memory_order_release);
}

/* Account @res bytes of progress; tell valgrind what the kernel filled. */
void clr_io_req_advance(struct clr_io_req *r, unsigned res)
{
    r->done += res;
    while (res > 0 && r->iovidx < r->iovcnt) {
        struct iovec *v = &r->iov[r->iovidx];
        size_t n = res < v->iov_len ? res : v->iov_len;

        if (r->op == CLR_IO_OP_READ)
            VALGRIND_MAKE_MEM_DEFINED(v->iov_base, n);
        v->iov_base = (char *)v->iov_base + n;
        v->iov_len -= n;
        res -= (unsigned)n;
        if (v->iov_len == 0)
            r->iovidx++;
    }
}

/*
 * @r's way of zeroing is not supported: pick the next one, for @r and for
 * later requests. Decided from the mode @r used, not the device's current
 * one, since concurrent requests may have downgraded it already.
 */
bool clr_io_zero_downgrade(struct clr_io_ctx *ctx, struct clr_io_req *r)
{
    struct clr_io_dev *dev = r->dev;
    int next;

    if (r->zero_write)
        return false;
    if (r->mode == CLR_IO_ZERO_RANGE && !dev->info.is_blockdev) {
        next = CLR_IO_ZERO_PUNCH;
    } else {
        next = CLR_IO_ZERO_WRITE;
        r->zero_write = true;
    }
    /* Only ever move down; log the move to writing once. */
    for (int cur = atomic_load(&dev->zero_mode); cur < next;) {
        if (atomic_compare_exchange_weak(&dev->zero_mode, &cur, next)) {
            if (next == CLR_IO_ZERO_WRITE)
                clr_io_log(ctx, CLR_IO_LOG_INFO, "%s: no zeroing offload, zeroes will be written", dev->path);
            break;
        }
    }
    return true;
}

/* A CQE for request @r. Either requeue @r on @again or finish it. */
static void req_complete(struct clr_io_ctx *ctx, struct clr_io_req *r, int res, struct clr_io_req_fifo *again)
{
    if ((res == -EINTR || res == -EAGAIN) && r->retries < MAX_RETRIES) {
        r->retries++;
        fifo_push(again, r);
        return;
    }
    switch (r->op) {
    case CLR_IO_OP_READ:
    case CLR_IO_OP_WRITE:
        if (res < 0)
            break;
        if (res == 0) {
            /* End of device (read) or no progress (write). */
            res = -EIO;
            break;
        }
        clr_io_req_advance(r, (unsigned)res);
        if (r->done < r->len) {
            fifo_push(again, r);
            return;
        }
        res = (int)r->len;
        break;
    case CLR_IO_OP_FSYNC:
        break;
    case CLR_IO_OP_DISCARD:
        /* Kernels without NO_HIDE_STALE: the zeroing discard instead. */
        if (res == -EOPNOTSUPP && r->mode) {
            atomic_store(&r->dev->discard_nohide, false);
            fifo_push(again, r);
            return;
        }
        if (res == -EOPNOTSUPP && atomic_exchange(&r->dev->can_discard, false))
            clr_io_log(ctx, CLR_IO_LOG_INFO, "%s: discard not supported", r->dev->path);
        break;
    case CLR_IO_OP_ZERO:
        if (res == -EOPNOTSUPP && clr_io_zero_downgrade(ctx, r)) {
            fifo_push(again, r);
            return;
        }
        if (r->zero_write && res > 0) {
            r->done += (unsigned)res;
            if (r->done < r->len) {
                fifo_push(again, r);
                return;
            }
            res = 0;
        } else if (r->zero_write && res == 0) {
            res = -EIO;
        }
        break;
    }
    req_finish(ctx, r, res);
}

static void handle_cqe(struct clr_io_ctx *ctx, uint64_t ud, int res, struct clr_io_req_fifo *again)
{
    struct clr_io_req *r = (struct clr_io_req *)(uintptr_t)(ud & ~UD_TAGS);

    atomic_fetch_sub(&ctx->kinflight, 1);
    if (!r)
        return; /* UD_WAKE */
    (void)atomic_load_explicit(&r->handoff, memory_order_acquire);
    switch (ud & UD_TAGS) {
    case UD_DELAY:
        clr_io_req_deliver(ctx, r, r->res);
        break;
    case UD_FAULT:
        req_finish(ctx, r, r->res);
        break;
    default:
        req_complete(ctx, r, res, again);
        break;
    }
}

/* Under sq_lock: move everything producers pushed onto the backlog. */
static void take_queue(struct clr_io_ctx *ctx)
{
    struct clr_io_req *r = atomic_exchange(&ctx->queue, NULL);
    struct clr_io_req *rev = NULL;

    /* The stack is newest-first; reverse it to keep submission order. */
    while (r) {
        struct clr_io_req *next = r->next;

        r->next = rev;
        rev = r;
        r = next;
    }
    while (rev) {
        struct clr_io_req *next = rev->next;

        fifo_push(&ctx->backlog, rev);
        rev = next;
    }
}

/*
 * Issue what is queued, from any thread. With @wait false, give up if
 * another thread holds sq_lock: it looks at the queue again after it lets
 * go, so nothing pushed before this call is left behind. The SC fences
 * (here after unlocking, in req_submit() between push and trylock) make
 * that hold beyond x86: if our trylock saw the lock held, the holder's
 * look at the queue after its unlock sees our push.
 */
static void ring_pump(struct clr_io_ctx *ctx, bool wait)
{
    do {
        if (wait)
            clr_mutex_lock(&ctx->sq_lock);
        else if (clr_mutex_trylock(&ctx->sq_lock) != 0)
            return;
        wait = false;

        take_queue(ctx);
        for (;;) {
            while (ctx->backlog.head && atomic_load(&ctx->kinflight) < ctx->cap)
                req_issue(ctx, fifo_pop(&ctx->backlog));
            if (!ctx->backlog.head) {
                atomic_store(&ctx->backlogged, false);
                break;
            }
            /*
             * Full. Flag it, then look again: the ring thread
             * lowers kinflight before it reads the flag, so one of
             * us sees the other and the backlog cannot stall.
             */
            atomic_store(&ctx->backlogged, true);
            if (atomic_load(&ctx->kinflight) >= ctx->cap)
                break;
        }
        submit_locked(ctx);
        clr_mutex_unlock(&ctx->sq_lock);
        atomic_thread_fence(memory_order_seq_cst);
    } while (atomic_load(&ctx->queue) != NULL);
}

static void *ring_thread(void *opaque)
{
    struct clr_io_ctx *ctx = opaque;
    struct io_uring_cqe *cqes[64];

    while (!atomic_load(&ctx->exit) || atomic_load(&ctx->pending) > 0) {
        struct clr_io_req_fifo again;

        /*
         * Sleep in read(2) on the ring's eventfd rather than in
         * io_uring_enter(GETEVENTS): valgrind does not know the
         * latter blocks and would stop every other thread with it.
         * The eventfd counts every CQE posted after the read, so
         * none is missed; a stale count only makes a spare lap.
         */
        if (io_uring_cq_ready(&ctx->ring) == 0) {
            uint64_t n;

            if (read(ctx->efd, &n, sizeof(n)) < 0 && errno != EINTR && errno != EAGAIN) {
                clr_io_log(ctx, CLR_IO_LOG_ERR, "read(eventfd): %s", strerror(errno));
                abort();
            }
        }

        fifo_init(&again);
        for (;;) {
            unsigned n = io_uring_peek_batch_cqe(&ctx->ring, cqes, 64);
            uint64_t ud[64];
            int res[64];

            if (n == 0)
                break;
            /* Copy out and free the CQ slots before running callbacks. */
            for (unsigned i = 0; i < n; i++) {
                ud[i] = io_uring_cqe_get_data64(cqes[i]);
                res[i] = cqes[i]->res;
            }
            io_uring_cq_advance(&ctx->ring, n);
            for (unsigned i = 0; i < n; i++)
                handle_cqe(ctx, ud[i], res[i], &again);
        }

        if (again.head) {
            /* Resubmissions go ahead of new work: they are older. */
            clr_mutex_lock(&ctx->sq_lock);
            fifo_prepend(&ctx->backlog, &again);
            clr_mutex_unlock(&ctx->sq_lock);
            ring_pump(ctx, true);
        } else if (atomic_load(&ctx->backlogged)) {
            ring_pump(ctx, true);
        }
    }
    return NULL;
}

/* Wake the ring thread with a NOP, e.g. to make it notice ctx->exit. */
static void ring_wake(struct clr_io_ctx *ctx)
{
    struct io_uring_sqe *sqe;

    clr_mutex_lock(&ctx->sq_lock);
    sqe = get_sqe(ctx);
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, UD_WAKE);
    submit_locked(ctx);
    sq_unlock(ctx);
}

/* ---------------------------------------------------------------------
 * Context
 * --------------------------------------------------------------------- */

int clr_io_ctx_create(const struct clr_io_ctx_opts *opts, struct clr_io_ctx **ctxp)
{
    struct clr_io_ctx_opts o = { 0 };
    struct clr_io_ctx *ctx;
    int ret;

    *ctxp = NULL;
    if (opts)
        o = *opts;
    if (o.queue_depth == 0)
        o.queue_depth = 256;
    if (o.queue_depth > 4096)
        return -EINVAL;

    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return -ENOMEM;
    ctx->log = o.log ? o.log : default_log;
    ctx->inline_buffered = o.inline_buffered;
    ctx->log_opaque = o.log_opaque;
    atomic_init(&ctx->queue, NULL);
    atomic_init(&ctx->backlogged, false);
    atomic_init(&ctx->kinflight, 0);
    fifo_init(&ctx->backlog);
    clr_mutex_init(&ctx->sq_lock, CLR_RANK_IO_SQ, "io sq_lock");
    atomic_init(&ctx->stopping, false);
    atomic_init(&ctx->exit, false);
    atomic_init(&ctx->pending, 0);
    atomic_init(&ctx->closers, 0);
    clr_mutex_init(&ctx->lock, CLR_RANK_IO, "io ctx->lock");
    pthread_cond_init(&ctx->cond, NULL);

    ret = clr_io_alloc(&ctx->zero_buf, CLR_IO_ZERO_BUF);
    if (ret < 0)
        goto err_free;
    memset(ctx->zero_buf, 0, CLR_IO_ZERO_BUF);

    ctx->efd = eventfd(0, EFD_CLOEXEC);
    if (ctx->efd < 0) {
        ret = -errno;
        goto err_free;
    }
    ret = io_uring_queue_init(o.queue_depth, &ctx->ring, 0);
    if (ret < 0) {
        clr_io_log(ctx, CLR_IO_LOG_ERR, "io_uring_queue_init: %s", strerror(-ret));
        goto err_efd;
    }
    ret = io_uring_register_eventfd(&ctx->ring, ctx->efd);
    if (ret < 0)
        goto err_ring;
    /* Leave CQ room for wake-ups and timers; NODROP covers the rest. */
    ctx->cap = ctx->ring.cq.ring_entries - 2;

    ret = -pthread_create(&ctx->thread, NULL, ring_thread, ctx);
    if (ret < 0)
        goto err_ring;
    *ctxp = ctx;
    return 0;

err_ring:
    io_uring_queue_exit(&ctx->ring);
err_efd:
    close(ctx->efd);
err_free:
    clr_io_free(ctx->zero_buf);
    pthread_cond_destroy(&ctx->cond);
    clr_mutex_destroy(&ctx->lock);
    clr_mutex_destroy(&ctx->sq_lock);
    free(ctx);
    return ret;
}

void clr_io_ctx_destroy(struct clr_io_ctx *ctx)
{
    if (!ctx)
        return;
    atomic_store(&ctx->stopping, true);
    clr_mutex_lock(&ctx->lock);
    while (atomic_load(&ctx->pending) > 0)
        clr_cond_wait(&ctx->cond, &ctx->lock);
    clr_mutex_unlock(&ctx->lock);

    atomic_store(&ctx->exit, true);
    ring_wake(ctx);
    pthread_join(ctx->thread, NULL);

    while (ctx->devs) {
        struct clr_io_dev *dev = ctx->devs;

        clr_io_close(dev);
    }
    io_uring_queue_exit(&ctx->ring);
    close(ctx->efd);
    clr_io_free(ctx->zero_buf);
    pthread_cond_destroy(&ctx->cond);
    clr_mutex_destroy(&ctx->lock);
    clr_mutex_destroy(&ctx->sq_lock);
    free(ctx);
}

void clr_io_ctx_add_dev(struct clr_io_ctx *ctx, struct clr_io_dev *dev)
{
    clr_mutex_lock(&ctx->lock);
    dev->next = ctx->devs;
    ctx->devs = dev;
    clr_mutex_unlock(&ctx->lock);
}

/* Wait until @dev has nothing in flight and unlink it from @ctx. */
void clr_io_ctx_drain_dev(struct clr_io_ctx *ctx, struct clr_io_dev *dev)
{
    struct clr_io_dev **pp;

    atomic_fetch_add(&ctx->closers, 1);
    clr_mutex_lock(&ctx->lock);
    while (atomic_load(&dev->inflight) > 0)
        clr_cond_wait(&ctx->cond, &ctx->lock);
    for (pp = &ctx->devs; *pp; pp = &(*pp)->next) {
        if (*pp == dev) {
            *pp = dev->next;
            break;
        }
    }
    clr_mutex_unlock(&ctx->lock);
    atomic_fetch_sub(&ctx->closers, 1);
}

/* ---------------------------------------------------------------------
 * Submission (any thread)
 * --------------------------------------------------------------------- */

static bool aligned(const struct clr_io_dev *dev, uint64_t v)
{
    return (v & (dev->info.logical_block - 1)) == 0;
}

static int check_range(const struct clr_io_dev *dev, uint64_t len, uint64_t off)
{
    if (len == 0 || !aligned(dev, len) || !aligned(dev, off))
        return -EINVAL;
    if (off > dev->info.size || len > dev->info.size - off)
        return -EINVAL;
    return 0;
}

static struct clr_io_req *req_new(struct clr_io_dev *dev, enum clr_io_op op, int iovcnt, clr_io_cb cb,
                                  void *arg)
{
    struct clr_io_req *r = malloc(sizeof(*r) + (size_t)iovcnt * sizeof(struct iovec));

    if (!r)
        return NULL;
    memset(r, 0, sizeof(*r));
    atomic_init(&r->handoff, 0);
    r->dev = dev;
    r->op = (uint8_t)op;
    r->cb = cb;
    r->arg = arg;
    r->iovcnt = iovcnt;
    return r;
}

/* Account for @r and hand it to the ring thread; frees it on refusal. */
static int req_submit(struct clr_io_req *r)
{
    struct clr_io_dev *dev = r->dev;
    struct clr_io_ctx *ctx = dev->ctx;
    struct clr_io_req *head;

    /*
     * Count first, then look at stopping; destroy does the reverse. So
     * either we see stopping and back out, or destroy sees us and waits.
     */
    atomic_fetch_add(&ctx->pending, 1);
    if (atomic_load(&ctx->stopping) && !clr_io_on_ring_thread(ctx)) {
        if (atomic_fetch_sub(&ctx->pending, 1) == 1) {
            clr_mutex_lock(&ctx->lock);
            pthread_cond_broadcast(&ctx->cond);
            clr_mutex_unlock(&ctx->lock);
        }
        clr_io_free(r->bounce);
        if (!r->on_stack)
            free(r);
        return -ESHUTDOWN;
    }
    /* idle until now: the stall clock starts here (a device with a
     * request in flight is never idle, so a hung one is never reset) */
    if (atomic_load(&dev->inflight) == 0)
        atomic_store(&dev->progress_ns, clr_io_coarse_ns());
    atomic_fetch_add(&dev->inflight, 1);

    if (dev->info.inline_io) {
        clr_io_req_deliver(ctx, r, clr_io_inline_run(ctx, r));
        return 0;
    }

    head = atomic_load_explicit(&ctx->queue, memory_order_relaxed);
    do {
        r->next = head;
    } while (!atomic_compare_exchange_weak(&ctx->queue, &head, r));
    /* Submit ourselves, unless another thread is already at it. */
    atomic_thread_fence(memory_order_seq_cst);
    ring_pump(ctx, false);
    return 0;
}

/* @r's transfer goes through an aligned copy of its @len bytes (see
 * struct clr_io_req); a write's data is copied in now. */
static int req_bounce(struct clr_io_req *r, const struct iovec *iov, int iovcnt, uint64_t len)
{
    uint8_t *dst;

    if (clr_io_alloc(&r->bounce, (size_t)len))
        return -ENOMEM;
    r->uiov = r->iov + 1;
    r->uiovcnt = iovcnt;
    memcpy(r->uiov, iov, (size_t)iovcnt * sizeof(*iov));
    dst = r->bounce;
    if (r->op == CLR_IO_OP_WRITE) {
        for (int i = 0; i < iovcnt; i++) {
            memcpy(dst, iov[i].iov_base, iov[i].iov_len);
            dst += iov[i].iov_len;
        }
    }
    r->iov[0] = (struct iovec){ .iov_base = r->bounce, .iov_len = (size_t)len };
    r->iovcnt = 1;
    return 0;
}

/* Segments an inline read or write may carry with its request on the
 * stack; more go through req_new(). */
#define INLINE_STACK_IOVS 4

static int submit_rw(struct clr_io_dev *dev, enum clr_io_op op, const struct iovec *iov, int iovcnt,
                     uint64_t off, unsigned flags, clr_io_cb cb, void *arg)
{
    struct clr_io_req *r;
    uint64_t len = 0;
    bool unaligned = false;

    if (!cb || iovcnt < 1 || iovcnt > IOV_MAX || (flags & ~(unsigned)CLR_IO_FUA))
        return -EINVAL;
    if (op == CLR_IO_OP_WRITE && dev->info.read_only)
        return -EBADF;
    for (int i = 0; i < iovcnt; i++) {
        if (!aligned(dev, iov[i].iov_len))
            return -EINVAL;
        unaligned |= ((uintptr_t)iov[i].iov_base & (dev->info.mem_align - 1)) != 0;
        len += iov[i].iov_len;
    }
    if (len > MAX_RW_LEN || check_range(dev, len, off) < 0)
        return -EINVAL;

    if (dev->info.inline_io && !unaligned && iovcnt <= INLINE_STACK_IOVS) {
        /* Served on this thread before we return: the request can live
         * on our stack, no allocation per member I/O. */
        _Alignas(struct clr_io_req) unsigned char
            st[sizeof(struct clr_io_req) + INLINE_STACK_IOVS * sizeof(struct iovec)];

        r = (struct clr_io_req *)st;
        memset(r, 0, sizeof(*r));
        atomic_init(&r->handoff, 0);
        r->dev = dev;
        r->op = (uint8_t)op;
        r->cb = cb;
        r->arg = arg;
        r->on_stack = true;
        r->off = off;
        r->len = len;
        r->rw_flags = (flags & CLR_IO_FUA) ? RWF_DSYNC : 0;
        for (int i = 0; i < iovcnt; i++)
            if (iov[i].iov_len) /* zero-length segments would stall the short-I/O bookkeeping */
                r->iov[r->iovcnt++] = iov[i];
        return req_submit(r);
    }

    r = req_new(dev, op, unaligned ? iovcnt + 1 : iovcnt, cb, arg);
    if (!r)
        return -ENOMEM;
    r->off = off;
    r->len = len;
    r->rw_flags = (flags & CLR_IO_FUA) ? RWF_DSYNC : 0;
    if (unaligned) {
        /* rare: the array core bounces unaligned client buffers itself
         * (array_io.c); this covers a member that needs alignment
         * joining while a request that did not bounce is in flight */
        if (req_bounce(r, iov, iovcnt, len)) {
            free(r);
            return -ENOMEM;
        }
        return req_submit(r);
    }
    /* Zero-length segments would stall the short-I/O bookkeeping. */
    r->iovcnt = 0;
    for (int i = 0; i < iovcnt; i++)
        if (iov[i].iov_len)
            r->iov[r->iovcnt++] = iov[i];
    return req_submit(r);
}

int clr_io_read(struct clr_io_dev *dev, void *buf, size_t len, uint64_t off, clr_io_cb cb, void *arg)
{
    struct iovec iov = { .iov_base = buf, .iov_len = len };

    return submit_rw(dev, CLR_IO_OP_READ, &iov, 1, off, 0, cb, arg);
}

int clr_io_write(struct clr_io_dev *dev, const void *buf, size_t len, uint64_t off, unsigned flags,
                 clr_io_cb cb, void *arg)
{
    struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

    return submit_rw(dev, CLR_IO_OP_WRITE, &iov, 1, off, flags, cb, arg);
}

int clr_io_readv(struct clr_io_dev *dev, const struct iovec *iov, int iovcnt, uint64_t off, clr_io_cb cb,
                 void *arg)
{
    return submit_rw(dev, CLR_IO_OP_READ, iov, iovcnt, off, 0, cb, arg);
}

int clr_io_writev(struct clr_io_dev *dev, const struct iovec *iov, int iovcnt, uint64_t off, unsigned flags,
                  clr_io_cb cb, void *arg)
{
    return submit_rw(dev, CLR_IO_OP_WRITE, iov, iovcnt, off, flags, cb, arg);
}

int clr_io_flush(struct clr_io_dev *dev, clr_io_cb cb, void *arg)
{
    struct clr_io_req *r;

    if (!cb)
        return -EINVAL;
    r = req_new(dev, CLR_IO_OP_FSYNC, 0, cb, arg);
    if (!r)
        return -ENOMEM;
    return req_submit(r);
}

static int submit_space(struct clr_io_dev *dev, enum clr_io_op op, uint64_t len, uint64_t off, clr_io_cb cb,
                        void *arg)
{
    struct clr_io_req *r;

    if (!cb || check_range(dev, len, off) < 0)
        return -EINVAL;
    if (dev->info.read_only)
        return -EBADF;
    r = req_new(dev, op, 0, cb, arg);
    if (!r)
        return -ENOMEM;
    r->off = off;
    r->len = len;
    return req_submit(r);
}

int clr_io_discard(struct clr_io_dev *dev, uint64_t len, uint64_t off, clr_io_cb cb, void *arg)
{
    return submit_space(dev, CLR_IO_OP_DISCARD, len, off, cb, arg);
}

int clr_io_zero(struct clr_io_dev *dev, uint64_t len, uint64_t off, clr_io_cb cb, void *arg)
{
    return submit_space(dev, CLR_IO_OP_ZERO, len, off, cb, arg);
}
