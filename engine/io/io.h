/* clraid: member-device I/O engine (io_uring).
 *
 * This is the only layer that touches member devices. The array core
 * (engine/raid) and the metadata code call it; it knows nothing of RAID.
 *
 * Threading model
 * ---------------
 * One context (struct clr_io_ctx) owns one io_uring and one thread, the
 * "ring thread", the only reader of the completion queue. The intended use
 * is one context per array.
 *
 *   nbdkit worker ─┐ push (one CAS)            ┌─► io_uring SQ ─► kernel
 *   nbdkit worker ─┼─► MPSC stack ─► sq_lock ──┘    (one submit per batch)
 *   nbdkit worker ─┘    holder drains it all            │
 *                                                       ▼
 *          callbacks ◄─ ring thread ◄─ CQ (reaped in batches of 64)
 *
 * - Submitting (clr_io_read() etc.) is safe from any number of threads at
 *   once. The request is pushed on a lock-free stack; then the submitting
 *   thread tries sq_lock. If it gets it, it drains the stack (its own
 *   request and any others'), fills SQEs and calls io_uring_submit()
 *   itself. If another thread holds it, it just returns: the holder looks
 *   at the stack again after unlocking, so concurrent requests are batched
 *   into one io_uring_enter() and no submitter ever waits on the lock.
 *   Submitting inline avoids waking another thread for every request: on
 *   this VM a thread wake-up costs about 8 us, more than the I/O itself.
 * - Every completion callback runs on the ring thread, exactly once per
 *   accepted request, injected errors included (they travel through the
 *   ring as NOPs). Callbacks run one at a time, must be short and must not
 *   block; they may submit new requests (chains such as "bitmap write,
 *   then data write"). They must not call the synchronous wrappers (those
 *   return -EDEADLK there). Exception, opt-in: clr_io_ctx_opts.inline_buffered.
 * - At most about 2 x queue_depth requests are in the kernel; the rest wait
 *   in a FIFO and are issued as completions make room.
 * Why not a ring per submitting thread: nbdkit's worker threads are many
 * and transient from our point of view, each ring would need its own
 * reaper or the workers would have to reap, and RAID fans one client
 * request out to several members anyway. One ring per array batches that
 * fan-out naturally and keeps the kernel-side state small. Arrays that need
 * more parallelism can be given several contexts (e.g. one per member).
 * What it costs: at queue depth 1 a request pays two thread wake-ups
 * (kernel to ring thread, ring thread to the waiting worker), three on
 * tmpfs, whose writes io_uring hands to its own worker threads; see
 * tests/io/bench_io for the figures.
 *
 * How the engine calls it: an nbdkit worker maps a client request onto
 * members, submits one request per member with clr_io_wg_done() as the
 * callback, and sleeps in clr_io_wg_wait(); or it submits with its own
 * callback and lets the ring thread carry the request on.
 *
 * Return convention: 0 or -errno. A submit function that returns 0 has
 * accepted the request, and its callback will be called exactly once. A
 * submit function that returns an error has not, and will not call it.
 *
 * Alignment: offsets and lengths of reads, writes, discards and zeroes must
 * be multiples of the device's logical block size, in both direct and
 * buffered mode, so that code tested on a buffered file behaves the same
 * on a real O_DIRECT disk. Buffers must be aligned to the device's
 * mem_align (clr_io_dev_info()): the logical block size for O_DIRECT
 * members, 1 for members served through the page cache (buffered, or on
 * tmpfs/ramfs), where the kernel copies from any address and a bounce
 * buffer would only cost a copy. clr_io_alloc() gives CLR_IO_ALIGN-aligned
 * buffers, which satisfy every block size we accept.
 *
 * Durability
 * ----------
 * - clr_io_flush() is fdatasync() of the member (IORING_OP_FSYNC with
 *   IORING_FSYNC_DATASYNC): it makes every write that completed before it
 *   was submitted durable.
 * - CLR_IO_FUA on a write is honoured with RWF_DSYNC on that write: on a
 *   block device opened O_DIRECT the kernel sends REQ_FUA (or a write
 *   followed by a cache flush where the disk has no FUA); on a file it is
 *   the write plus fdatasync of the range. The completion comes only once
 *   the data is durable.
 *
 * Faults injected for tests (clr_io_fault_*) are described further down.
 */
#ifndef CLRAID_IO_IO_H
#define CLRAID_IO_IO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "common/lockrank.h"

/** Alignment of buffers from clr_io_alloc(); the largest block size we accept. */
#define CLR_IO_ALIGN 4096u

struct clr_io_ctx;
struct clr_io_dev;

/**
 * Completion callback.
 * @arg: the caller's argument, as given at submission.
 * @res: bytes transferred (always the full length) for reads and writes,
 *       0 for flush, discard and zero; or -errno.
 */
typedef void (*clr_io_cb)(void *arg, int res);

/** Log priorities, syslog numbering. */
enum {
    CLR_IO_LOG_ERR = 3,
    CLR_IO_LOG_WARNING = 4,
    CLR_IO_LOG_NOTICE = 5,
    CLR_IO_LOG_INFO = 6,
};

/** Log sink: one line, no trailing newline. May be called from any thread. */
typedef void (*clr_io_log_fn)(void *opaque, int prio, const char *msg);

/** Options for clr_io_ctx_create(); zero-initialise, then set what you need. */
struct clr_io_ctx_opts {
    /**
     * io_uring SQ size, 1..4096; 0 = 256. The CQ is twice that, and up
     * to CQ size - 2 requests are given to the kernel at once.
     */
    unsigned queue_depth;
    /**
     * Serve page-cache members inline: for a member that runs buffered,
     * or lives on tmpfs/ramfs (where O_DIRECT is a memory copy anyway),
     * the submit call does the transfer itself with preadv2()/pwritev2()
     * and calls the callback in the calling thread before it returns.
     * A memory copy done in place costs a microsecond; handing it to the
     * ring (where tmpfs writes go to io_uring's worker threads) costs
     * three thread wake-ups. Off by default because it changes where and
     * how concurrently callbacks run: with it on, callbacks of inline
     * members run on the submitting threads, several at once, and a
     * caller must not hold, across a submit call, a lock that its
     * callback takes. Injected delays then sleep in the submitting thread.
     */
    bool inline_buffered;
    /** Log sink; NULL = one line on stderr prefixed "clraid: io: ". */
    clr_io_log_fn log;
    void *log_opaque;
};

/**
 * Create an I/O context: an io_uring and its ring thread.
 * @opts: may be NULL for defaults.
 * @ctxp: receives the context.
 * Return: 0 or -errno (-ENOMEM, or an io_uring_queue_init() error).
 */
int clr_io_ctx_create(const struct clr_io_ctx_opts *opts, struct clr_io_ctx **ctxp);

/**
 * Drain and destroy a context.
 *
 * New submissions from other threads fail with -ESHUTDOWN from the moment
 * this is called; submissions from completion callbacks are still accepted
 * so that chains in progress can finish. Returns once every accepted
 * request has completed and its callback has returned, then stops the ring
 * thread. Devices still open are closed. Must not be called from a
 * callback. NULL is ignored.
 */
void clr_io_ctx_destroy(struct clr_io_ctx *ctx);

/** Flags for clr_io_open(). */
enum {
    /** Open read-only. */
    CLR_IO_OPEN_RDONLY = 1u << 0,
    /** Block devices: O_EXCL, so a mounted or claimed device is refused (-EBUSY). */
    CLR_IO_OPEN_EXCL = 1u << 1,
    /** Do not try O_DIRECT at all: buffered I/O. */
    CLR_IO_OPEN_BUFFERED = 1u << 2,
    /** Tests: behave as if O_DIRECT failed with EINVAL (exercises the fallback). */
    CLR_IO_OPEN_TEST_NO_DIRECT = 1u << 3,
};

/** What clr_io_dev_info() reports about an open member. */
struct clr_io_dev_info {
    uint64_t size;           /**< bytes */
    uint32_t logical_block;  /**< bytes: alignment of offsets and lengths */
    uint32_t mem_align;      /**< bytes: alignment of buffers (1: any; else logical_block) */
    uint32_t physical_block; /**< bytes; equal to logical_block for files */
    bool is_blockdev;
    bool direct;          /**< true: O_DIRECT; false: buffered (fallback or asked) */
    bool direct_fallback; /**< O_DIRECT was tried and refused with EINVAL */
    bool memory_backed;   /**< a file on tmpfs or ramfs */
    bool inline_io;       /**< served inline (clr_io_ctx_opts.inline_buffered) */
    bool can_discard;     /**< clr_io_discard() is expected to work */
    bool can_zero;        /**< clr_io_zero() zeroes without writing data */
    bool read_only;
};

/**
 * Open a member device (a block device or a regular file).
 *
 * Tries O_DIRECT first, unless CLR_IO_OPEN_BUFFERED. If the open fails with
 * EINVAL (tmpfs before Linux 6.6, some FUSE and network file systems) it
 * reopens buffered and logs one notice line naming the device; the mode is
 * then reported by clr_io_dev_info() and clr_io_dev_mode().
 *
 * Size is BLKGETSIZE64 or st_size; logical block size is BLKSSZGET for
 * block devices and 512 for files (or the file system's direct-I/O offset
 * alignment from statx(), when it is larger). Discard and zero support
 * come from the queue limits in sysfs (block devices) or a harmless
 * fallocate(PUNCH_HOLE) probe past the end of the file. Files on tmpfs or
 * ramfs are flagged memory_backed (and served inline if the context asks).
 *
 * Thread-safe. Return: 0 or -errno from open(2)/ioctl(2); -EINVAL for a
 * path that is neither a regular file nor a block device, or whose block
 * size is not a power of two up to CLR_IO_ALIGN.
 */
int clr_io_open(struct clr_io_ctx *ctx, const char *path, unsigned flags, struct clr_io_dev **devp);

/**
 * Close a member. Waits until the device has no request in flight (its
 * callbacks have returned), so call it only once no new requests for it
 * will be submitted. Must not be called from a callback. NULL is ignored.
 */
void clr_io_close(struct clr_io_dev *dev);

/** Fill @info for @dev. Thread-safe. */
void clr_io_dev_info(const struct clr_io_dev *dev, struct clr_io_dev_info *info);

/** With requests in flight on @dev, ms since it last completed one (or
 *  since the first was submitted); 0 when idle.  Coarse (a few ms):
 *  for hang detection, whose thresholds are seconds. */
uint64_t clr_io_dev_stall_ms(struct clr_io_dev *dev);

/** "direct" or "buffered": the mode the device runs in, for status output. */
const char *clr_io_dev_mode(const struct clr_io_dev *dev);

/** The path the device was opened with. */
const char *clr_io_dev_path(const struct clr_io_dev *dev);

/**
 * Allocate a buffer aligned to CLR_IO_ALIGN, suitable for O_DIRECT.
 * @len: bytes (rounded up to CLR_IO_ALIGN; 0 is allowed).
 * Return: 0 or -ENOMEM. The contents are not initialised.
 */
int clr_io_alloc(void **bufp, size_t len);

/** Free a buffer from clr_io_alloc(). NULL is ignored. */
void clr_io_free(void *buf);

/** Flags for writes. */
enum {
    /** Complete only once the data is durable (RWF_DSYNC, see above). */
    CLR_IO_FUA = 1u << 0,
};

/**
 * Read @len bytes at @off into @buf, asynchronously.
 * Short reads are resubmitted for the remainder; EINTR and EAGAIN are
 * retried; reaching the end of the device before @len bytes fails the
 * request with -EIO. Thread-safe.
 * Return: 0 (accepted; @cb will be called) or -EINVAL (misaligned, out of
 * range, or too long: @len must fit in an int), -ESHUTDOWN, -ENOMEM.
 */
int clr_io_read(struct clr_io_dev *dev, void *buf, size_t len, uint64_t off, clr_io_cb cb, void *arg);

/** As clr_io_read(), writing. @flags: 0 or CLR_IO_FUA. -EBADF if read-only. */
int clr_io_write(struct clr_io_dev *dev, const void *buf, size_t len, uint64_t off, unsigned flags,
                 clr_io_cb cb, void *arg);

/**
 * Vectored read into @iovcnt buffers (1..IOV_MAX). The iovec array is
 * copied; the buffers it points to must stay valid until the callback.
 */
int clr_io_readv(struct clr_io_dev *dev, const struct iovec *iov, int iovcnt, uint64_t off, clr_io_cb cb,
                 void *arg);

/** Vectored write, as clr_io_readv(); @flags as clr_io_write(). */
int clr_io_writev(struct clr_io_dev *dev, const struct iovec *iov, int iovcnt, uint64_t off, unsigned flags,
                  clr_io_cb cb, void *arg);

/**
 * fdatasync() the device asynchronously: every write completed before this
 * call is durable when @cb gets 0. Thread-safe.
 */
int clr_io_flush(struct clr_io_dev *dev, clr_io_cb cb, void *arg);

/**
 * Discard a range: the device may deallocate it; reads afterwards return
 * zeroes on files and on block devices that zero discarded blocks, and
 * unspecified data otherwise. Files: fallocate(PUNCH_HOLE|KEEP_SIZE).
 * Block devices: fallocate(PUNCH_HOLE|KEEP_SIZE|NO_HIDE_STALE), the same
 * request as BLKDISCARD; kernels that dropped that mode (6.18 has) get
 * PUNCH_HOLE|KEEP_SIZE, a write-zeroes that may unmap. Completes with -EOPNOTSUPP where unsupported
 * (clr_io_dev_info().can_discard then becomes false); callers may ignore
 * that, discard being advisory.
 */
int clr_io_discard(struct clr_io_dev *dev, uint64_t len, uint64_t off, clr_io_cb cb, void *arg);

/**
 * Zero a range; always works on a writable device. Block devices:
 * fallocate(ZERO_RANGE), the same request as BLKZEROOUT (the kernel
 * writes zeroes itself where the disk has no offload). Files:
 * fallocate(ZERO_RANGE|KEEP_SIZE), else PUNCH_HOLE|KEEP_SIZE (tmpfs),
 * else writing zeroes from a shared buffer.
 */
int clr_io_zero(struct clr_io_dev *dev, uint64_t len, uint64_t off, clr_io_cb cb, void *arg);

/**
 * Wait group: lets a thread (an nbdkit worker) issue several requests, e.g.
 * one per RAID leg, and sleep until all have completed. Use
 * clr_io_wg_done() with the group as the callback argument.
 *
 *   struct clr_io_wg wg;
 *   clr_io_wg_init(&wg);
 *   for each leg: clr_io_wg_add(&wg, 1);
 *                 if (clr_io_write(leg, ..., clr_io_wg_done, &wg) < 0)
 *                         clr_io_wg_done(&wg, that error);
 *   err = clr_io_wg_wait(&wg);   // first error, or 0
 */
struct clr_io_wg {
    struct clr_mutex lock;
    pthread_cond_t cond;
    unsigned pending;
    int err; /* first error seen, or 0 */
};

/** Initialise an empty wait group. */
void clr_io_wg_init(struct clr_io_wg *wg);

/** Expect @n more completions. Call before submitting. */
void clr_io_wg_add(struct clr_io_wg *wg, unsigned n);

/** A clr_io_cb: @arg is the struct clr_io_wg; @res < 0 is kept if first. */
void clr_io_wg_done(void *arg, int res);

/**
 * Sleep until every expected completion has arrived, then release the
 * group's resources. Return: the first error (-errno) or 0. Must not be
 * called from a completion callback.
 */
int clr_io_wg_wait(struct clr_io_wg *wg);

/**
 * Synchronous read of exactly @len bytes through the same path (so fault
 * injection applies), for metadata. Blocks the calling thread.
 * Return: 0 once all @len bytes are read, or -errno; -EDEADLK if called
 * from a completion callback.
 */
int clr_io_pread(struct clr_io_dev *dev, void *buf, size_t len, uint64_t off);

/** Synchronous write, as clr_io_pread(); @flags: 0 or CLR_IO_FUA. */
int clr_io_pwrite(struct clr_io_dev *dev, const void *buf, size_t len, uint64_t off, unsigned flags);

/** Synchronous clr_io_flush(). */
int clr_io_fsync(struct clr_io_dev *dev);

/** Synchronous clr_io_zero(). */
int clr_io_pzero(struct clr_io_dev *dev, uint64_t len, uint64_t off);

/** Synchronous clr_io_discard(). */
int clr_io_pdiscard(struct clr_io_dev *dev, uint64_t len, uint64_t off);

/* ---------------------------------------------------------------------
 * Fault injection (tests and simulation only; off unless turned on)
 *
 * Faults are per device and are applied when a request is about to be
 * issued (first issue only, not on resubmission of a short transfer), so a
 * faulted request never reaches the kernel.
 * An injected error is delivered through the request's callback like a
 * real one. With no fault armed the cost is a few relaxed atomic loads
 * per request, no lock.
 *
 * All functions here are thread-safe and may be called at any time, while
 * I/O is running. They are meant to be driven later by a control-socket
 * command such as "fault DEV read|write|vanish|delay|clear ARGS", mapping
 * one to one onto these calls (the socket would be test-builds only or
 * gated by an option; none exists yet).
 * --------------------------------------------------------------------- */

/** Which requests a range fault applies to. */
enum {
    CLR_IO_FAULT_READ = 1u << 0,
    /** Writes, and also zero and discard: anything that changes data. */
    CLR_IO_FAULT_WRITE = 1u << 1,
    /** With _READ only: a latent sector error.  Reads fail until a write
     *  covering the whole range is issued, which the drive remaps: the
     *  range is then disarmed. */
    CLR_IO_FAULT_HEAL_ON_WRITE = 1u << 2,
};

/** Most range faults armed on one device at once. */
#define CLR_IO_FAULT_MAX_RANGES 8

/** Counters of injected faults, since the device was opened. */
struct clr_io_fault_stats {
    uint64_t read_errors;  /**< reads failed by a range fault */
    uint64_t write_errors; /**< writes/zeroes/discards failed by a range fault */
    uint64_t vanished;     /**< requests failed because the device vanished */
    uint64_t delayed;      /**< completions delayed */
    uint64_t short_ios;    /**< transfers issued shortened */
};

/**
 * Fail requests of kind @ops (CLR_IO_FAULT_READ and/or _WRITE) that touch
 * [@off, @off+@len) with @err (a positive errno; 0 means EIO). @len 0
 * means the whole device. Adds to the ranges already armed.
 * Return: 0, -EINVAL (bad @ops), -ENOSPC (CLR_IO_FAULT_MAX_RANGES armed).
 */
int clr_io_fault_fail_range(struct clr_io_dev *dev, unsigned ops, uint64_t off, uint64_t len, int err);

/**
 * Make the device vanish: every later request, flushes included, fails
 * with @err (positive errno; 0 means ENODEV). Requests already in the
 * kernel complete normally, as on a real hot-unplug race.
 */
void clr_io_fault_vanish(struct clr_io_dev *dev, int err);

/** Delay every completion on @dev by @ms milliseconds (0 turns it off). */
void clr_io_fault_delay(struct clr_io_dev *dev, unsigned ms);

/**
 * Make reads and writes on @dev short: each is issued to the kernel at most
 * @max_bytes at a time (a multiple of the block size; 0 turns it off), so
 * the engine's resubmission of remainders is exercised as it would be by a
 * real short transfer. Counted in clr_io_fault_stats().short_ios.
 */
void clr_io_fault_short(struct clr_io_dev *dev, unsigned max_bytes);

/** Disarm every fault on @dev (counters are kept). */
void clr_io_fault_clear(struct clr_io_dev *dev);

/** Read the injected-fault counters of @dev. */
void clr_io_fault_stats(const struct clr_io_dev *dev, struct clr_io_fault_stats *st);

#endif /* CLRAID_IO_IO_H */
