/* What the benchmark's baseline plugins (nbdkit_twinfile.c,
 * nbdkit_rmw6file.c) share: N files named file0=..fileN-1=, opened at
 * get_ready, and whole reads and writes on them.  Static: each plugin is
 * one translation unit. */
#ifndef CLRAID_BENCH_NBDKIT_FILES_H
#define CLRAID_BENCH_NBDKIT_FILES_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nbdkit-plugin.h>

struct bench_files {
    const char *plugin; /* for messages */
    int n;
    char *path[8];
    int fd[8];
};

/* file<i>=PATH; anything else is refused */
static int bench_files_config(struct bench_files *b, const char *key, const char *value)
{
    int i = -1;

    if (strlen(key) == 5 && !strncmp(key, "file", 4) && key[4] >= '0' && key[4] < '0' + b->n)
        i = key[4] - '0';
    if (i < 0) {
        nbdkit_error("%s: unknown parameter %s (give file0= to file%d=)", b->plugin, key, b->n - 1);
        return -1;
    }
    free(b->path[i]);
    b->path[i] = nbdkit_realpath(value);
    return b->path[i] ? 0 : -1;
}

static int bench_files_open(struct bench_files *b)
{
    for (int i = 0; i < b->n; i++) {
        if (!b->path[i]) {
            nbdkit_error("%s: file%d= is required", b->plugin, i);
            return -1;
        }
        b->fd[i] = open(b->path[i], O_RDWR | O_CLOEXEC);
        if (b->fd[i] < 0) {
            nbdkit_error("%s: %s: %m", b->plugin, b->path[i]);
            return -1;
        }
    }
    return 0;
}

static void bench_files_close(struct bench_files *b)
{
    for (int i = 0; i < b->n; i++) {
        if (b->fd[i] >= 0)
            close(b->fd[i]);
        free(b->path[i]);
    }
}

/* the whole of @count bytes, or -1 with nbdkit's error set */
static int bench_full_io(const struct bench_files *b, int f, void *buf, uint32_t count, uint64_t off, int wr)
{
    while (count > 0) {
        ssize_t r = wr ? pwrite(b->fd[f], buf, count, (off_t)off) : pread(b->fd[f], buf, count, (off_t)off);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            nbdkit_error("%s: %s: %m", b->plugin, wr ? "pwrite" : "pread");
            return -1;
        }
        buf = (char *)buf + r;
        count -= (uint32_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

#endif
