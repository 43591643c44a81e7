/* clraid: requests performed in the submitting thread (opts.inline_buffered).
 *
 * The same steps as the ring path in io_ring.c, done with plain system
 * calls: fault checks first, short transfers resumed, EINTR/EAGAIN retried,
 * zeroing and discard falling back the same way.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/io_internal.h"

#define MAX_RETRIES 1000

static int inline_rw(struct clr_io_req *r)
{
    struct clr_io_dev *dev = r->dev;
    bool wr = r->op == CLR_IO_OP_WRITE;
    unsigned retries = 0;

    while (r->done < r->len) {
        struct iovec *iov = &r->iov[r->iovidx];
        int n = r->iovcnt - r->iovidx;
        unsigned cap = clr_io_fault_short_max(dev);
        struct iovec one;
        ssize_t ret;

        if (cap) {
            /* Injected short transfer, as in req_issue(). */
            one = *iov;
            if (one.iov_len > cap)
                one.iov_len = cap;
            if (one.iov_len < iov->iov_len || n > 1)
                clr_io_fault_count_short(dev);
            iov = &one;
            n = 1;
        }
        if (wr)
            ret = pwritev2(dev->fd, iov, n, (off_t)(r->off + r->done), r->rw_flags);
        else
            ret = preadv2(dev->fd, iov, n, (off_t)(r->off + r->done), 0);
        if (ret < 0) {
            if ((errno == EINTR || errno == EAGAIN) && retries++ < MAX_RETRIES)
                continue;
            return -errno;
        }
        if (ret == 0)
            return -EIO; /* end of device, or no progress */
        clr_io_req_advance(r, (unsigned)ret);
    }
    return (int)r->len;
}

static int inline_discard(struct clr_io_ctx *ctx, struct clr_io_req *r)
{
    struct clr_io_dev *dev = r->dev;

    for (;;) {
        bool nohide = atomic_load(&dev->discard_nohide);
        int mode = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE | (nohide ? FALLOC_FL_NO_HIDE_STALE : 0);

        if (fallocate(dev->fd, mode, (off_t)r->off, (off_t)r->len) == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EOPNOTSUPP && nohide) {
            atomic_store(&dev->discard_nohide, false);
            continue;
        }
        if (errno == EOPNOTSUPP && atomic_exchange(&dev->can_discard, false))
            clr_io_log(ctx, CLR_IO_LOG_INFO, "%s: discard not supported", dev->path);
        return -errno;
    }
}

static int inline_zero(struct clr_io_ctx *ctx, struct clr_io_req *r)
{
    struct clr_io_dev *dev = r->dev;

    while (!r->zero_write) {
        int mode;

        r->mode = (uint8_t)atomic_load(&dev->zero_mode);
        if (r->mode == CLR_IO_ZERO_WRITE) {
            r->zero_write = true;
            break;
        }
        mode = r->mode == CLR_IO_ZERO_RANGE
                   ? FALLOC_FL_ZERO_RANGE | (dev->info.is_blockdev ? 0 : FALLOC_FL_KEEP_SIZE)
                   : FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
        if (fallocate(dev->fd, mode, (off_t)r->off, (off_t)r->len) == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EOPNOTSUPP)
            return -errno;
        clr_io_zero_downgrade(ctx, r);
    }
    while (r->done < r->len) {
        uint64_t left = r->len - r->done;
        size_t chunk = left < CLR_IO_ZERO_BUF ? (size_t)left : CLR_IO_ZERO_BUF;
        ssize_t ret = pwrite(dev->fd, ctx->zero_buf, chunk, (off_t)(r->off + r->done));

        if (ret < 0 && errno == EINTR)
            continue;
        if (ret < 0)
            return -errno;
        if (ret == 0)
            return -EIO;
        r->done += (uint64_t)ret;
    }
    return 0;
}

int clr_io_inline_run(struct clr_io_ctx *ctx, struct clr_io_req *r)
{
    struct clr_io_dev *dev = r->dev;
    int res = clr_io_fault_check(dev, r);
    unsigned ms;

    r->issued = true;
    if (res == 0) {
        switch (r->op) {
        case CLR_IO_OP_READ:
        case CLR_IO_OP_WRITE:
            res = inline_rw(r);
            break;
        case CLR_IO_OP_FSYNC:
            res = fdatasync(dev->fd) < 0 ? -errno : 0;
            break;
        case CLR_IO_OP_DISCARD:
            res = inline_discard(ctx, r);
            break;
        case CLR_IO_OP_ZERO:
            res = inline_zero(ctx, r);
            break;
        default:
            res = -EINVAL;
            break;
        }
    }
    ms = clr_io_fault_delay_ms(dev);
    if (ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
    return res;
}
