/* clraid: fault injection for member I/O (tests and simulation only). */
#include <config.h>

#include <errno.h>

#include "common/lockrank.h"
#include "io/io_internal.h"

void clr_io_fault_init(struct clr_io_fault *f)
{
    atomic_init(&f->armed, false);
    clr_mutex_init(&f->lock, CLR_RANK_IO_FAULT, "io fault lock");
    f->vanish_err = 0;
    f->delay_ms = 0;
    f->short_max = 0;
    f->nranges = 0;
    atomic_init(&f->short_ios, 0);
    atomic_init(&f->read_errors, 0);
    atomic_init(&f->write_errors, 0);
    atomic_init(&f->vanished, 0);
    atomic_init(&f->delayed, 0);
}

void clr_io_fault_fini(struct clr_io_fault *f)
{
    clr_mutex_destroy(&f->lock);
}

/* Caller holds f->lock. */
static void fault_rearm(struct clr_io_fault *f)
{
    atomic_store(&f->armed, f->vanish_err != 0 || f->delay_ms != 0 || f->nranges != 0 || f->short_max != 0);
}

int clr_io_fault_fail_range(struct clr_io_dev *dev, unsigned ops, uint64_t off, uint64_t len, int err)
{
    struct clr_io_fault *f = &dev->fault;
    int ret = 0;

    if (ops == 0 ||
        (ops & ~(unsigned)(CLR_IO_FAULT_READ | CLR_IO_FAULT_WRITE | CLR_IO_FAULT_HEAL_ON_WRITE)) ||
        ((ops & CLR_IO_FAULT_HEAL_ON_WRITE) && ops != (CLR_IO_FAULT_READ | CLR_IO_FAULT_HEAL_ON_WRITE)))
        return -EINVAL;
    clr_mutex_lock(&f->lock);
    if (f->nranges == CLR_IO_FAULT_MAX_RANGES) {
        ret = -ENOSPC;
    } else {
        struct clr_io_fault_range *r = &f->ranges[f->nranges++];

        r->ops = ops;
        r->off = len ? off : 0;
        r->end = len ? (off + len < off ? UINT64_MAX : off + len) : UINT64_MAX;
        r->err = err > 0 ? err : EIO;
        fault_rearm(f);
    }
    clr_mutex_unlock(&f->lock);
    return ret;
}

void clr_io_fault_vanish(struct clr_io_dev *dev, int err)
{
    struct clr_io_fault *f = &dev->fault;

    clr_mutex_lock(&f->lock);
    f->vanish_err = err > 0 ? err : ENODEV;
    fault_rearm(f);
    clr_mutex_unlock(&f->lock);
}

void clr_io_fault_delay(struct clr_io_dev *dev, unsigned ms)
{
    struct clr_io_fault *f = &dev->fault;

    clr_mutex_lock(&f->lock);
    f->delay_ms = ms;
    fault_rearm(f);
    clr_mutex_unlock(&f->lock);
}

void clr_io_fault_short(struct clr_io_dev *dev, unsigned max_bytes)
{
    struct clr_io_fault *f = &dev->fault;

    clr_mutex_lock(&f->lock);
    f->short_max = max_bytes;
    fault_rearm(f);
    clr_mutex_unlock(&f->lock);
}

void clr_io_fault_clear(struct clr_io_dev *dev)
{
    struct clr_io_fault *f = &dev->fault;

    clr_mutex_lock(&f->lock);
    f->vanish_err = 0;
    f->delay_ms = 0;
    f->short_max = 0;
    f->nranges = 0;
    fault_rearm(f);
    clr_mutex_unlock(&f->lock);
}

void clr_io_fault_stats(const struct clr_io_dev *dev, struct clr_io_fault_stats *st)
{
    const struct clr_io_fault *f = &dev->fault;

    st->read_errors = atomic_load(&f->read_errors);
    st->write_errors = atomic_load(&f->write_errors);
    st->vanished = atomic_load(&f->vanished);
    st->delayed = atomic_load(&f->delayed);
    st->short_ios = atomic_load(&f->short_ios);
}

/*
 * Called by the ring thread before a request is first issued.
 * Return: 0 to issue it, or -errno to complete it with that error.
 */
int clr_io_fault_check(struct clr_io_dev *dev, const struct clr_io_req *req)
{
    struct clr_io_fault *f = &dev->fault;
    unsigned kind;
    int ret = 0;

    if (!atomic_load_explicit(&f->armed, memory_order_relaxed))
        return 0;

    switch (req->op) {
    case CLR_IO_OP_READ:
        kind = CLR_IO_FAULT_READ;
        break;
    case CLR_IO_OP_FSYNC:
        kind = 0; /* only a vanished device fails a flush */
        break;
    default:
        kind = CLR_IO_FAULT_WRITE;
        break;
    }

    clr_mutex_lock(&f->lock);
    if (f->vanish_err) {
        ret = -f->vanish_err;
        atomic_fetch_add(&f->vanished, 1);
        goto out;
    }
    for (unsigned i = 0; i < f->nranges && kind; i++) {
        const struct clr_io_fault_range *r = &f->ranges[i];

        if (!(r->ops & kind))
            continue;
        if (req->off < r->end && req->off + req->len > r->off) {
            ret = -r->err;
            atomic_fetch_add(kind == CLR_IO_FAULT_READ ? &f->read_errors : &f->write_errors, 1);
            break;
        }
    }
    /* a write that goes through heals the latent sector errors it covers */
    for (unsigned i = 0; ret == 0 && kind == CLR_IO_FAULT_WRITE && i < f->nranges;) {
        const struct clr_io_fault_range *r = &f->ranges[i];

        if ((r->ops & CLR_IO_FAULT_HEAL_ON_WRITE) && req->off <= r->off && req->off + req->len >= r->end) {
            f->ranges[i] = f->ranges[--f->nranges];
            fault_rearm(f);
        } else {
            i++;
        }
    }
out:
    clr_mutex_unlock(&f->lock);
    return ret;
}

/* Delay for completions on @dev, counting each delayed one. */
unsigned clr_io_fault_delay_ms(struct clr_io_dev *dev)
{
    struct clr_io_fault *f = &dev->fault;
    unsigned ms;

    if (!atomic_load_explicit(&f->armed, memory_order_relaxed))
        return 0;
    clr_mutex_lock(&f->lock);
    ms = f->delay_ms;
    clr_mutex_unlock(&f->lock);
    if (ms)
        atomic_fetch_add(&f->delayed, 1);
    return ms;
}

/* Cap on one issued transfer on @dev, or 0. Not counted here: the caller knows. */
unsigned clr_io_fault_short_max(struct clr_io_dev *dev)
{
    struct clr_io_fault *f = &dev->fault;
    unsigned max;

    if (!atomic_load_explicit(&f->armed, memory_order_relaxed))
        return 0;
    clr_mutex_lock(&f->lock);
    max = f->short_max;
    clr_mutex_unlock(&f->lock);
    return max;
}

void clr_io_fault_count_short(struct clr_io_dev *dev)
{
    atomic_fetch_add(&dev->fault.short_ios, 1);
}
