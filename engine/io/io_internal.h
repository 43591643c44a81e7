/* clraid: member-device I/O engine, internals shared by engine/io only. */
#ifndef CLRAID_IO_IO_INTERNAL_H
#define CLRAID_IO_IO_INTERNAL_H

#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>

#include "common/lockrank.h"
#include "io/io.h"

/* Range faults armed on one device. */
struct clr_io_fault_range {
    unsigned ops;
    uint64_t off;
    uint64_t end; /* exclusive; UINT64_MAX for "whole device" */
    int err;      /* positive errno */
};

struct clr_io_fault {
    /* Fast path: false unless something is armed; read relaxed per request. */
    atomic_bool armed;
    struct clr_mutex lock; /* guards everything below except the counters */
    int vanish_err;        /* 0 = present */
    unsigned delay_ms;
    unsigned short_max; /* 0 = off */
    unsigned nranges;
    struct clr_io_fault_range ranges[CLR_IO_FAULT_MAX_RANGES];
    atomic_uint_least64_t read_errors;
    atomic_uint_least64_t write_errors;
    atomic_uint_least64_t vanished;
    atomic_uint_least64_t delayed;
    atomic_uint_least64_t short_ios;
};

/* How clr_io_zero() is done on this device; only ever moves down the list. */
enum clr_io_zero_mode {
    CLR_IO_ZERO_RANGE, /* fallocate(ZERO_RANGE) */
    CLR_IO_ZERO_PUNCH, /* fallocate(PUNCH_HOLE|KEEP_SIZE): files only */
    CLR_IO_ZERO_WRITE, /* write zeroes from ctx->zero_buf */
};

struct clr_io_dev {
    struct clr_io_ctx *ctx;
    struct clr_io_dev *next; /* ctx->devs, under ctx->lock */
    char *path;
    int fd;
    struct clr_io_dev_info info; /* fixed after open, except as below */
    atomic_bool can_discard;     /* cleared on the first EOPNOTSUPP */
    atomic_int zero_mode;        /* enum clr_io_zero_mode */
    atomic_bool discard_nohide;  /* block devices: try NO_HIDE_STALE first */
    atomic_long inflight;        /* accepted requests not yet called back */
    /* coarse monotonic ns of the last completion, or of the submission
     * that found nothing in flight: with requests in flight, how long the
     * device has made no progress (clr_io_dev_stall_ms) */
    atomic_uint_least64_t progress_ns;
    struct clr_io_fault fault;
};

enum clr_io_op {
    CLR_IO_OP_READ,
    CLR_IO_OP_WRITE,
    CLR_IO_OP_FSYNC,
    CLR_IO_OP_DISCARD,
    CLR_IO_OP_ZERO,
};

uint64_t clr_io_coarse_ns(void);

/* One accepted request, from submission to callback. */
struct clr_io_req {
    struct clr_io_req *next; /* MPSC stack, then the ring thread's lists */
    struct clr_io_dev *dev;
    clr_io_cb cb;
    void *arg;
    uint8_t op;
    bool issued;      /* faults are checked on first issue only */
    bool delayed;     /* a delay timer is (or was) running */
    bool zero_write;  /* ZERO emulated by writes */
    uint8_t mode;     /* ZERO: zero_mode used; DISCARD: 1 if NO_HIDE_STALE */
    bool on_stack;    /* an inline read or write's request: not freed */
    uint16_t retries; /* EINTR/EAGAIN resubmissions */
    int rw_flags;     /* RWF_DSYNC for FUA */
    int res;          /* result held while a delay runs */
    /*
     * Released by the thread that fills the SQE, acquired by the ring
     * thread on its CQE. The kernel already orders the two; this makes
     * the hand-over visible to ThreadSanitizer, and costs a plain store.
     */
    atomic_int handoff;
    uint64_t off;  /* start of the request */
    uint64_t len;  /* total bytes */
    uint64_t done; /* bytes completed so far */
    int iovcnt;
    int iovidx; /* first iovec not fully transferred */
    /* A buffer not aligned for an O_DIRECT member goes through an aligned
     * copy: bounce (of len bytes) in iov[0]; the caller's iovecs after
     * it, at uiov, for a read to be copied back to on completion. */
    void *bounce;
    struct iovec *uiov;
    int uiovcnt;
    struct __kernel_timespec ts; /* delay timer */
    struct iovec iov[];          /* our copy; advanced on short I/O */
};

/* FIFO of requests waiting for the kernel. */
struct clr_io_req_fifo {
    struct clr_io_req *head;
    struct clr_io_req **tailp;
};

struct clr_io_ctx {
    struct io_uring ring;
    unsigned cap; /* max requests in the kernel */
    /*
     * Submission side, shared by every submitting thread: whoever holds
     * sq_lock fills SQEs and calls io_uring_submit(). Producers that find
     * it held only push to queue; the holder picks their requests up
     * before it lets go (flat combining).
     */
    struct clr_mutex sq_lock;
    struct clr_io_req_fifo backlog;     /* under sq_lock: over cap, or resubmitted */
    atomic_bool backlogged;             /* backlog non-empty: ring thread must pump */
    atomic_uint kinflight;              /* SQEs given to the kernel, CQEs not yet seen */
    _Atomic(struct clr_io_req *) queue; /* MPSC stack, newest first */
    /* Completion side: only the ring thread reads the CQ. */
    pthread_t thread;
    int efd;               /* registered eventfd: CQEs were posted */
    atomic_bool stopping;  /* destroy called: refuse outside submissions */
    atomic_bool exit;      /* ring thread should leave once drained */
    atomic_long pending;   /* accepted requests not yet called back */
    atomic_int closers;    /* threads waiting in clr_io_close() */
    struct clr_mutex lock; /* devs list, and waits for drains */
    pthread_cond_t cond;
    struct clr_io_dev *devs;
    void *zero_buf;       /* CLR_IO_ZERO_BUF bytes of zeroes */
    bool inline_buffered; /* opts.inline_buffered */
    clr_io_log_fn log;
    void *log_opaque;
};

#define CLR_IO_ZERO_BUF (256u * 1024u)

void clr_io_log(struct clr_io_ctx *ctx, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* io_ring.c: true on the context's ring thread (inside a callback). */
bool clr_io_on_ring_thread(const struct clr_io_ctx *ctx);

/* io_ring.c: shared with io_inline.c */
void clr_io_req_deliver(struct clr_io_ctx *ctx, struct clr_io_req *r, int res);
void clr_io_req_advance(struct clr_io_req *r, unsigned res);
bool clr_io_zero_downgrade(struct clr_io_ctx *ctx, struct clr_io_req *r);

/* io_inline.c: perform @r in the calling thread; return its result. */
int clr_io_inline_run(struct clr_io_ctx *ctx, struct clr_io_req *r);

/* io_fault.c */
void clr_io_fault_init(struct clr_io_fault *f);
void clr_io_fault_fini(struct clr_io_fault *f);
int clr_io_fault_check(struct clr_io_dev *dev, const struct clr_io_req *req);
unsigned clr_io_fault_delay_ms(struct clr_io_dev *dev);
unsigned clr_io_fault_short_max(struct clr_io_dev *dev);
void clr_io_fault_count_short(struct clr_io_dev *dev);

/* io_ring.c: register/unregister a device in its context. */
void clr_io_ctx_add_dev(struct clr_io_ctx *ctx, struct clr_io_dev *dev);
void clr_io_ctx_drain_dev(struct clr_io_ctx *ctx, struct clr_io_dev *dev);

#endif /* CLRAID_IO_IO_INTERNAL_H */
