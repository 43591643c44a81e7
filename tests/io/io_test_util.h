/* clraid: helpers shared by the engine/io tests. */
#ifndef CLRAID_TESTS_IO_IO_TEST_UTIL_H
#define CLRAID_TESTS_IO_IO_TEST_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/io.h"

/* A scratch directory under $TMPDIR (default /var/tmp), removed at the end. */
struct io_test_dir {
    char path[256];
};

static inline void io_test_dir_make(struct io_test_dir *d)
{
    const char *base = getenv("TMPDIR");

    snprintf(d->path, sizeof(d->path), "%s/clraid-io-test.XXXXXX", base && *base ? base : "/var/tmp");
    if (!mkdtemp(d->path)) {
        perror("mkdtemp");
        abort();
    }
}

/* Remove the directory and the files in it (the tests make no subdirs). */
static inline void io_test_dir_remove(struct io_test_dir *d)
{
    char cmd[sizeof(d->path) + 16];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", d->path);
}

/* Create @name of @size bytes (sparse) in @d; path into @out. */
static inline void io_test_file(const struct io_test_dir *d, const char *name, off_t size, char *out,
                                size_t outlen)
{
    int fd;

    if ((size_t)snprintf(out, outlen, "%s/%s", d->path, name) >= outlen)
        abort();
    fd = open(out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, size) < 0) {
        perror(out);
        abort();
    }
    close(fd);
}

/* Fill @buf with a pattern that names @tag and every 8-byte word's place. */
static inline void io_test_pattern(void *buf, size_t len, uint64_t tag)
{
    uint64_t *w = buf;

    for (size_t i = 0; i < len / 8; i++)
        w[i] = (tag << 32) ^ (i * 0x9e3779b97f4a7c15ull);
}

static inline bool io_test_pattern_ok(const void *buf, size_t len, uint64_t tag)
{
    const uint64_t *w = buf;

    for (size_t i = 0; i < len / 8; i++)
        if (w[i] != ((tag << 32) ^ (i * 0x9e3779b97f4a7c15ull)))
            return false;
    return true;
}

static inline bool io_test_all_zero(const void *buf, size_t len)
{
    const unsigned char *p = buf;

    for (size_t i = 0; i < len; i++)
        if (p[i])
            return false;
    return true;
}

static inline double io_test_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Log sink that keeps the last line, so tests can check notices. */
struct io_test_log {
    char last[512];
    int lines;
};

static inline void io_test_log_fn(void *opaque, int prio, const char *msg)
{
    struct io_test_log *l = opaque;

    (void)prio;
    snprintf(l->last, sizeof(l->last), "%s", msg);
    __atomic_fetch_add(&l->lines, 1, __ATOMIC_SEQ_CST);
}

#endif /* CLRAID_TESTS_IO_IO_TEST_UTIL_H */
