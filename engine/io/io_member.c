/* clraid: opening member devices and probing what they can do. */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "io/io_internal.h"

/* From linux/magic.h, spelled out to keep that header out. */
#define CLR_IO_TMPFS_MAGIC 0x01021994
#define CLR_IO_RAMFS_MAGIC 0x858458f6

int clr_io_alloc(void **bufp, size_t len)
{
    size_t rounded = (len + CLR_IO_ALIGN - 1) & ~(size_t)(CLR_IO_ALIGN - 1);

    if (rounded < len)
        return -ENOMEM;
    /* posix_memalign(0) may return NULL; callers expect a real pointer. */
    if (posix_memalign(bufp, CLR_IO_ALIGN, rounded ? rounded : CLR_IO_ALIGN))
        return -ENOMEM;
    return 0;
}

void clr_io_free(void *buf)
{
    free(buf);
}

/* Read one unsigned number from sysfs; 0 if absent. */
static uint64_t sysfs_u64(const char *path)
{
    unsigned long long v = 0;
    FILE *f = fopen(path, "re");

    if (!f)
        return 0;
    if (fscanf(f, "%llu", &v) != 1)
        v = 0;
    fclose(f);
    return v;
}

/* A queue limit of a block device; partitions keep theirs in the parent. */
static uint64_t blk_queue_limit(dev_t rdev, const char *name)
{
    char path[128];
    uint64_t v;

    snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s", major(rdev), minor(rdev), name);
    if (access(path, R_OK) == 0)
        return sysfs_u64(path);
    snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/%s", major(rdev), minor(rdev), name);
    v = sysfs_u64(path);
    return v;
}

static int probe_blockdev(struct clr_io_dev *dev, const struct stat *st)
{
    uint64_t size;
    int lbs = 0;
    unsigned int pbs = 0;

    if (ioctl(dev->fd, BLKGETSIZE64, &size) < 0)
        return -errno;
    if (ioctl(dev->fd, BLKSSZGET, &lbs) < 0)
        return -errno;
    if (ioctl(dev->fd, BLKPBSZGET, &pbs) < 0)
        pbs = (unsigned)lbs;
    dev->info.size = size;
    dev->info.logical_block = (uint32_t)lbs;
    dev->info.physical_block = pbs;
    dev->info.is_blockdev = true;
    dev->info.can_discard = !dev->info.read_only && blk_queue_limit(st->st_rdev, "discard_max_bytes") > 0;
    dev->info.can_zero = !dev->info.read_only && blk_queue_limit(st->st_rdev, "write_zeroes_max_bytes") > 0;
    return 0;
}

static void probe_file(struct clr_io_dev *dev, const struct stat *st)
{
    uint32_t lbs = 512;
    struct statx stx;
    struct statfs sfs;

    /* In direct mode the file system may need more than 512 (4Kn disks). */
    if (dev->info.direct && statx(dev->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
        (stx.stx_mask & STATX_DIOALIGN)) {
        if (stx.stx_dio_offset_align > lbs)
            lbs = stx.stx_dio_offset_align;
        if (stx.stx_dio_mem_align > lbs)
            lbs = stx.stx_dio_mem_align;
    }
    if (fstatfs(dev->fd, &sfs) == 0 &&
        ((unsigned long)sfs.f_type == CLR_IO_TMPFS_MAGIC || (unsigned long)sfs.f_type == CLR_IO_RAMFS_MAGIC))
        dev->info.memory_backed = true;
    dev->info.size = (uint64_t)st->st_size;
    dev->info.logical_block = lbs;
    dev->info.physical_block = lbs;
    dev->info.is_blockdev = false;
    /*
     * Punching a hole past the end of the file changes nothing, but fails
     * with EOPNOTSUPP where holes are not supported. Zeroing falls back
     * to punching, so the same answer holds for zero.
     */
    if (!dev->info.read_only) {
        bool ok = fallocate(dev->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)dev->info.size,
                            CLR_IO_ALIGN) == 0;

        dev->info.can_discard = ok;
        dev->info.can_zero = ok;
    }
}

/* Open @path, trying O_DIRECT first. Return an fd or -errno. */
static int open_member(struct clr_io_ctx *ctx, const char *path, unsigned flags, struct clr_io_dev *dev)
{
    int oflags = O_CLOEXEC | ((flags & CLR_IO_OPEN_RDONLY) ? O_RDONLY : O_RDWR);
    struct stat st;
    int fd;

    /* O_EXCL only means something for block devices: look first. */
    if ((flags & CLR_IO_OPEN_EXCL) && stat(path, &st) == 0 && S_ISBLK(st.st_mode))
        oflags |= O_EXCL;

    if (!(flags & CLR_IO_OPEN_BUFFERED)) {
        if (flags & CLR_IO_OPEN_TEST_NO_DIRECT) {
            fd = -1;
            errno = EINVAL;
        } else {
            fd = open(path, oflags | O_DIRECT);
        }
        if (fd >= 0) {
            dev->info.direct = true;
            return fd;
        }
        if (errno != EINVAL)
            return -errno;
        dev->info.direct_fallback = true;
        clr_io_log(ctx, CLR_IO_LOG_NOTICE,
                   "%s: O_DIRECT refused (EINVAL), using buffered I/O "
                   "(page cache; flush and FUA still honoured)",
                   path);
    }
    fd = open(path, oflags);
    if (fd < 0)
        return -errno;
    return fd;
}

int clr_io_open(struct clr_io_ctx *ctx, const char *path, unsigned flags, struct clr_io_dev **devp)
{
    struct clr_io_dev *dev;
    struct stat st;
    int ret;

    *devp = NULL;
    dev = calloc(1, sizeof(*dev));
    if (!dev)
        return -ENOMEM;
    dev->ctx = ctx;
    dev->fd = -1;
    dev->path = strdup(path);
    if (!dev->path) {
        ret = -ENOMEM;
        goto err;
    }
    dev->info.read_only = flags & CLR_IO_OPEN_RDONLY;

    ret = open_member(ctx, path, flags, dev);
    if (ret < 0)
        goto err;
    dev->fd = ret;

    if (fstat(dev->fd, &st) < 0) {
        ret = -errno;
        goto err;
    }
    if (S_ISBLK(st.st_mode)) {
        ret = probe_blockdev(dev, &st);
        if (ret < 0)
            goto err;
    } else if (S_ISREG(st.st_mode)) {
        probe_file(dev, &st);
    } else {
        clr_io_log(ctx, CLR_IO_LOG_ERR, "%s: not a block device or regular file", path);
        ret = -EINVAL;
        goto err;
    }
    if (dev->info.logical_block < 512 || dev->info.logical_block > CLR_IO_ALIGN ||
        (dev->info.logical_block & (dev->info.logical_block - 1))) {
        clr_io_log(ctx, CLR_IO_LOG_ERR, "%s: unsupported block size %" PRIu32, path, dev->info.logical_block);
        ret = -EINVAL;
        goto err;
    }

    dev->info.inline_io = ctx->inline_buffered && (!dev->info.direct || dev->info.memory_backed);
    /* Through the page cache (buffered, or tmpfs/ramfs even when opened
     * O_DIRECT) the kernel copies from any address: no bounce needed. */
    dev->info.mem_align = (!dev->info.direct || dev->info.memory_backed) ? 1 : dev->info.logical_block;
    atomic_init(&dev->can_discard, dev->info.can_discard);
    atomic_init(&dev->discard_nohide, dev->info.is_blockdev);
    /* Block devices: ZERO_RANGE is BLKZEROOUT, which the kernel emulates. */
    atomic_init(&dev->zero_mode, CLR_IO_ZERO_RANGE);
    atomic_init(&dev->inflight, 0);
    atomic_init(&dev->progress_ns, clr_io_coarse_ns());
    clr_io_fault_init(&dev->fault);
    clr_io_ctx_add_dev(ctx, dev);
    *devp = dev;
    return 0;

err:
    if (dev->fd >= 0)
        close(dev->fd);
    free(dev->path);
    free(dev);
    return ret;
}

void clr_io_close(struct clr_io_dev *dev)
{
    if (!dev)
        return;
    clr_io_ctx_drain_dev(dev->ctx, dev);
    clr_io_fault_fini(&dev->fault);
    close(dev->fd);
    free(dev->path);
    free(dev);
}

void clr_io_dev_info(const struct clr_io_dev *dev, struct clr_io_dev_info *info)
{
    *info = dev->info;
    info->can_discard = atomic_load(&dev->can_discard);
}

const char *clr_io_dev_mode(const struct clr_io_dev *dev)
{
    return dev->info.direct ? "direct" : "buffered";
}

const char *clr_io_dev_path(const struct clr_io_dev *dev)
{
    return dev->path;
}
