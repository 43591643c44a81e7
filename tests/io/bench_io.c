/* clraid: micro-benchmark of engine/io against plain pwrite().
 *
 * 4 KiB random writes to a preallocated file, for each directory given
 * (default /dev/shm and /var/tmp): plain pwrite() from T threads, then the
 * engine at queue depth 1 (clr_io_pwrite) and 32 (async, 32 outstanding
 * per thread) from the same T threads, in the same run. The pwrite() file
 * descriptor uses the engine's mode (O_DIRECT or buffered) so the two are
 * comparable. "inline" rows use a context with inline_buffered, which
 * serves page-cache members (tmpfs, or buffered) in the calling thread.
 * Prints IOPS, CPU per op (whole process, so io_uring's kernel workers
 * count) and the ratio to pwrite() from the same number of threads.
 *
 * Not run by make check: tests/io/bench_io [-b] [-t SECONDS] [-s MIB] [DIR...]
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "io/io.h"

#define BS 4096

struct run {
    const char *what;
    int threads;
    int qd;   /* 0 = plain pwrite() */
    bool inl; /* through a context with inline_buffered */
};

/* Rows printed per directory; the first of each thread count is the baseline. */
static const struct run runs[] = {
    { "pwrite", 1, 0, false },
    { "engine", 1, 1, false },
    { "engine", 1, 32, false },
    { "inline", 1, 1, true },
    { "pwrite", 2, 0, false },
    { "engine", 2, 1, false },
    { "engine", 2, 32, false },
    { "inline", 2, 1, true },
    /* nbdkit's default pool: 16 workers, each one request at a time. */
    { "pwrite", 16, 0, false },
    { "engine", 16, 1, false },
    { "inline", 16, 1, true },
};

struct shared {
    struct clr_io_dev *ring_dev; /* ring path */
    struct clr_io_dev *inl_dev;  /* inline path, NULL if not eligible */
    struct clr_io_dev *dev;      /* the one the current run uses */
    int fd;
    uint64_t blocks;
    atomic_bool stop;
};

struct thr {
    struct shared *sh;
    const struct run *run;
    uint64_t seed;
    uint64_t ops;
    int errors;
    char *buf;
    /* qd > 1: completions handed back by the ring thread */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int inflight;
};

static uint64_t rnd(uint64_t *s)
{
    /* xorshift64*: cheap and good enough to scatter offsets */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void async_done(void *arg, int res)
{
    struct thr *t = arg;

    pthread_mutex_lock(&t->lock);
    if (res != BS)
        t->errors++;
    t->ops++;
    t->inflight--;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void *thr_main(void *opaque)
{
    struct thr *t = opaque;
    struct shared *sh = t->sh;

    while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
        uint64_t off = (rnd(&t->seed) % sh->blocks) * BS;

        if (t->run->qd == 0) {
            if (pwrite(sh->fd, t->buf, BS, (off_t)off) != BS)
                t->errors++;
            t->ops++;
        } else if (t->run->qd == 1) {
            if (clr_io_pwrite(sh->dev, t->buf, BS, off, 0) < 0)
                t->errors++;
            t->ops++;
        } else {
            pthread_mutex_lock(&t->lock);
            while (t->inflight >= t->run->qd)
                pthread_cond_wait(&t->cond, &t->lock);
            t->inflight++;
            pthread_mutex_unlock(&t->lock);
            /* Every request writes the same buffer: contents do not matter here. */
            if (clr_io_write(sh->dev, t->buf, BS, off, 0, async_done, t) < 0)
                async_done(t, -EIO);
        }
    }
    pthread_mutex_lock(&t->lock);
    while (t->inflight > 0)
        pthread_cond_wait(&t->cond, &t->lock);
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Run @r for @secs; return IOPS, and CPU microseconds per op in @cpu_us. */
static double do_run(struct shared *sh, const struct run *r, double secs, double *cpu_us)
{
    pthread_t tid[64];
    struct thr t[64];
    uint64_t ops = 0;
    double t0, c0, el;
    int errors = 0;

    atomic_store(&sh->stop, false);
    sh->dev = r->inl ? sh->inl_dev : sh->ring_dev;
    t0 = now();
    c0 = cpu_seconds();
    for (int i = 0; i < r->threads; i++) {
        t[i] = (struct thr){ .sh = sh, .run = r, .seed = 0x9e3779b9u * (unsigned)(i + 1) };
        pthread_mutex_init(&t[i].lock, NULL);
        pthread_cond_init(&t[i].cond, NULL);
        if (clr_io_alloc((void **)&t[i].buf, BS) < 0)
            abort();
        memset(t[i].buf, 0x5a + i, BS);
        if (pthread_create(&tid[i], NULL, thr_main, &t[i]))
            abort();
    }
    usleep((useconds_t)(secs * 1e6));
    atomic_store(&sh->stop, true);
    for (int i = 0; i < r->threads; i++) {
        pthread_join(tid[i], NULL);
        ops += t[i].ops;
        errors += t[i].errors;
        clr_io_free(t[i].buf);
        pthread_cond_destroy(&t[i].cond);
        pthread_mutex_destroy(&t[i].lock);
    }
    el = now() - t0;
    *cpu_us = (cpu_seconds() - c0) * 1e6 / (double)(ops ? ops : 1);
    if (errors)
        fprintf(stderr, "bench_io: %d errors\n", errors);
    return (double)ops / el;
}

static int bench_dir(const char *dir, double secs, uint64_t mib, unsigned oflags)
{
    char path[4096];
    struct clr_io_ctx_opts inl_opts = { .inline_buffered = true };
    struct clr_io_ctx *ctx, *inl_ctx;
    struct shared sh = { 0 };
    struct clr_io_dev_info info;
    double base = 0;
    bool inline_ok;
    char *buf;
    int fd, ret;

    snprintf(path, sizeof(path), "%s/clraid-bench-io.%d", dir, (int)getpid());
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)(mib << 20)) < 0) {
        fprintf(stderr, "bench_io: %s: %s\n", path, strerror(errno));
        return -1;
    }
    close(fd);

    if ((ret = clr_io_ctx_create(NULL, &ctx)) < 0 ||
        (ret = clr_io_open(ctx, path, oflags, &sh.ring_dev)) < 0 ||
        (ret = clr_io_ctx_create(&inl_opts, &inl_ctx)) < 0 ||
        (ret = clr_io_open(inl_ctx, path, oflags, &sh.inl_dev)) < 0) {
        fprintf(stderr, "bench_io: %s: %s\n", path, strerror(-ret));
        unlink(path);
        return -1;
    }
    clr_io_dev_info(sh.inl_dev, &info);
    inline_ok = info.inline_io;
    clr_io_dev_info(sh.ring_dev, &info);
    sh.dev = sh.ring_dev;
    sh.blocks = info.size / BS;

    /* Fill once, so every measured write overwrites allocated blocks. */
    if (clr_io_alloc((void **)&buf, 1 << 20) < 0)
        abort();
    memset(buf, 0xa5, 1 << 20);
    for (uint64_t off = 0; off < info.size; off += 1 << 20)
        if (clr_io_pwrite(sh.dev, buf, 1 << 20, off, 0) < 0)
            abort();
    clr_io_fsync(sh.dev);
    clr_io_free(buf);

    sh.fd = open(path, O_RDWR | O_CLOEXEC | (info.direct ? O_DIRECT : 0));
    if (sh.fd < 0)
        abort();

    printf("\n%s (%s%s, %llu MiB, 4 KiB random writes, %.0f s each)\n", dir, clr_io_dev_mode(sh.dev),
           info.memory_backed ? ", tmpfs" : "", (unsigned long long)mib, secs);
    printf("%-8s %7s %4s %12s %10s %10s\n", "path", "threads", "qd", "IOPS", "cpu us/op", "vs pwrite");
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        const struct run *r = &runs[i];
        double cpu, iops;

        if (r->inl && !inline_ok) {
            printf("%-8s %7d %4d %12s   (member is not page-cache backed)\n", r->what, r->threads, r->qd,
                   "n/a");
            continue;
        }
        iops = do_run(&sh, r, secs, &cpu);

        if (r->qd == 0)
            base = iops;
        printf("%-8s %7d %4d %12.0f %10.2f %9.2fx\n", r->what, r->threads, r->qd ? r->qd : 1, iops, cpu,
               iops / base);
        fflush(stdout);
    }
    close(sh.fd);
    clr_io_close(sh.ring_dev);
    clr_io_close(sh.inl_dev);
    clr_io_ctx_destroy(ctx);
    clr_io_ctx_destroy(inl_ctx);
    unlink(path);
    return 0;
}

int main(int argc, char **argv)
{
    static const char *defaults[] = { "/dev/shm", "/var/tmp" };
    double secs = 2;
    uint64_t mib = 256;
    unsigned oflags = 0;
    int c, ret = 0;

    while ((c = getopt(argc, argv, "bt:s:h")) != -1) {
        switch (c) {
        case 'b':
            oflags |= CLR_IO_OPEN_BUFFERED;
            break;
        case 't':
            secs = atof(optarg);
            break;
        case 's':
            mib = strtoull(optarg, NULL, 10);
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-b] [-t SECONDS] [-s MIB] [DIR...]\n"
                    "  -b  open members buffered (no O_DIRECT)\n",
                    argv[0]);
            return c == 'h' ? 0 : 2;
        }
    }
    if (optind == argc) {
        for (size_t i = 0; i < 2; i++)
            ret |= bench_dir(defaults[i], secs, mib, oflags) < 0;
    } else {
        for (int i = optind; i < argc; i++)
            ret |= bench_dir(argv[i], secs, mib, oflags) < 0;
    }
    return ret;
}
