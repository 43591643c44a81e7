/* clraid: wait groups and the synchronous wrappers built on them. */
#include <config.h>

#include <errno.h>

#include "common/lockrank.h"
#include "io/io_internal.h"

void clr_io_wg_init(struct clr_io_wg *wg)
{
    clr_mutex_init(&wg->lock, CLR_RANK_IO_WG, "io wg->lock");
    pthread_cond_init(&wg->cond, NULL);
    wg->pending = 0;
    wg->err = 0;
}

void clr_io_wg_add(struct clr_io_wg *wg, unsigned n)
{
    clr_mutex_lock(&wg->lock);
    wg->pending += n;
    clr_mutex_unlock(&wg->lock);
}

void clr_io_wg_done(void *arg, int res)
{
    struct clr_io_wg *wg = arg;

    /* Signal under the lock: the waiter may destroy @wg once it wakes. */
    clr_mutex_lock(&wg->lock);
    if (res < 0 && wg->err == 0)
        wg->err = res;
    if (--wg->pending == 0)
        pthread_cond_signal(&wg->cond);
    clr_mutex_unlock(&wg->lock);
}

int clr_io_wg_wait(struct clr_io_wg *wg)
{
    int err;

    clr_mutex_lock(&wg->lock);
    while (wg->pending > 0)
        clr_cond_wait(&wg->cond, &wg->lock);
    err = wg->err;
    clr_mutex_unlock(&wg->lock);
    pthread_cond_destroy(&wg->cond);
    clr_mutex_destroy(&wg->lock);
    return err;
}

/* Start a synchronous call: refuse on the ring thread, which would wait on itself. */
static int sync_begin(struct clr_io_dev *dev, struct clr_io_wg *wg)
{
    if (clr_io_on_ring_thread(dev->ctx))
        return -EDEADLK;
    clr_io_wg_init(wg);
    clr_io_wg_add(wg, 1);
    return 0;
}

/* Finish it: @submitted is the submit call's return. */
static int sync_end(struct clr_io_wg *wg, int submitted)
{
    if (submitted < 0)
        clr_io_wg_done(wg, submitted);
    return clr_io_wg_wait(wg);
}

int clr_io_pread(struct clr_io_dev *dev, void *buf, size_t len, uint64_t off)
{
    struct clr_io_wg wg;
    int ret = sync_begin(dev, &wg);

    if (ret < 0)
        return ret;
    return sync_end(&wg, clr_io_read(dev, buf, len, off, clr_io_wg_done, &wg));
}

int clr_io_pwrite(struct clr_io_dev *dev, const void *buf, size_t len, uint64_t off, unsigned flags)
{
    struct clr_io_wg wg;
    int ret = sync_begin(dev, &wg);

    if (ret < 0)
        return ret;
    return sync_end(&wg, clr_io_write(dev, buf, len, off, flags, clr_io_wg_done, &wg));
}

int clr_io_fsync(struct clr_io_dev *dev)
{
    struct clr_io_wg wg;
    int ret = sync_begin(dev, &wg);

    if (ret < 0)
        return ret;
    return sync_end(&wg, clr_io_flush(dev, clr_io_wg_done, &wg));
}

int clr_io_pzero(struct clr_io_dev *dev, uint64_t len, uint64_t off)
{
    struct clr_io_wg wg;
    int ret = sync_begin(dev, &wg);

    if (ret < 0)
        return ret;
    return sync_end(&wg, clr_io_zero(dev, len, off, clr_io_wg_done, &wg));
}

int clr_io_pdiscard(struct clr_io_dev *dev, uint64_t len, uint64_t off)
{
    struct clr_io_wg wg;
    int ret = sync_begin(dev, &wg);

    if (ret < 0)
        return ret;
    return sync_end(&wg, clr_io_discard(dev, len, off, clr_io_wg_done, &wg));
}
