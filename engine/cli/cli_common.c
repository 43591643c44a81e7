/* Device handling and small helpers for the clraid CLI. */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

void clr_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "clraid %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int clr_dev_open(const char *cmd, const char *path, int flags, struct clr_dev *d)
{
    struct stat st;

    memset(d, 0, sizeof *d);
    d->path = path;
    d->fd = open(path, flags | O_CLOEXEC);
    if (d->fd < 0) {
        int err = errno;

        if (err == ENOENT)
            clr_cli_error(cmd, "%s: no such device or file (check the path)", path);
        else if (err == EBUSY)
            clr_cli_error(cmd, "%s: device is busy (in use by a filesystem, md or another clraid?)", path);
        else
            clr_cli_error(cmd, "%s: cannot open: %s", path, strerror(err));
        return -1;
    }
    if (fstat(d->fd, &st) < 0) {
        clr_cli_error(cmd, "%s: cannot stat: %s", path, strerror(errno));
        goto fail;
    }
    d->st_dev = st.st_dev;
    d->st_ino = st.st_ino;
    d->st_rdev = st.st_rdev;
    if (S_ISBLK(st.st_mode)) {
        d->is_blk = true;
        if (ioctl(d->fd, BLKGETSIZE64, &d->bytes) < 0) {
            clr_cli_error(cmd, "%s: cannot read the device size: %s", path, strerror(errno));
            goto fail;
        }
    } else if (S_ISREG(st.st_mode)) {
        d->bytes = (uint64_t)st.st_size;
    } else {
        clr_cli_error(cmd, "%s: not a block device or regular file", path);
        goto fail;
    }
    return 0;
fail:
    close(d->fd);
    d->fd = -1;
    return -1;
}

void clr_dev_close(struct clr_dev *d)
{
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}

bool clr_dev_same(const struct clr_dev *a, const struct clr_dev *b)
{
    if (a->is_blk && b->is_blk)
        return a->st_rdev == b->st_rdev;
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int clr_pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    char *p = buf;

    while (len) {
        ssize_t n = pread(fd, p, len, (off_t)off);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

int clr_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
    const char *p = buf;

    while (len) {
        ssize_t n = pwrite(fd, p, len, (off_t)off);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

int clr_random_bytes(void *buf, size_t len)
{
    char *p = buf;

    while (len) {
        ssize_t n = getrandom(p, len, 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
