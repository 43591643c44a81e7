/* clraid: tests of the member-device I/O engine (engine/io). */
#include <config.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/io_internal.h"
#include "io_test_util.h"

#define MiB (1024 * 1024)

struct fixture {
    struct io_test_dir dir;
    struct io_test_log log;
    struct clr_io_ctx *ctx;
    char path[PATH_MAX];
    unsigned oflags; /* added to every clr_io_open() */
    bool inline_io;
};

static int setup_ctx(void **state, bool inline_io)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct clr_io_ctx_opts o = { .log = io_test_log_fn };

    assert_non_null(f);
    /* Inline only serves page-cache members: open them buffered. */
    f->inline_io = o.inline_buffered = inline_io;
    f->oflags = inline_io ? CLR_IO_OPEN_BUFFERED : 0;
    io_test_dir_make(&f->dir);
    o.log_opaque = &f->log;
    assert_int_equal(clr_io_ctx_create(&o, &f->ctx), 0);
    io_test_file(&f->dir, "member0", 16 * MiB, f->path, sizeof(f->path));
    *state = f;
    return 0;
}

static int setup(void **state)
{
    return setup_ctx(state, false);
}

static int setup_inline(void **state)
{
    return setup_ctx(state, true);
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    clr_io_ctx_destroy(f->ctx);
    io_test_dir_remove(&f->dir);
    free(f);
    return 0;
}

static void test_alloc_aligned(void **state)
{
    void *a, *b;

    (void)state;
    assert_int_equal(clr_io_alloc(&a, 12345), 0);
    assert_int_equal(clr_io_alloc(&b, 0), 0);
    assert_int_equal((uintptr_t)a % CLR_IO_ALIGN, 0);
    assert_int_equal((uintptr_t)b % CLR_IO_ALIGN, 0);
    memset(a, 0xa5, 16384); /* rounded up to a whole 4 KiB */
    clr_io_free(a);
    clr_io_free(b);
    clr_io_free(NULL);
}

static void test_open_file_info(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev_info info;
    struct clr_io_dev *dev;

    assert_int_equal(clr_io_open(f->ctx, f->path, 0, &dev), 0);
    clr_io_dev_info(dev, &info);
    assert_int_equal(info.size, 16 * MiB);
    assert_true(info.logical_block >= 512 && info.logical_block <= CLR_IO_ALIGN);
    assert_int_equal(info.logical_block & (info.logical_block - 1), 0);
    assert_false(info.is_blockdev);
    assert_false(info.read_only);
    /* Either mode is fine, but a refusal must be the reported fallback. */
    assert_true(info.direct || info.direct_fallback);
    assert_string_equal(clr_io_dev_mode(dev), info.direct ? "direct" : "buffered");
    assert_string_equal(clr_io_dev_path(dev), f->path);
    clr_io_close(dev);
}

static void test_open_direct_fallback(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev_info info;
    struct clr_io_dev *dev;
    void *buf;
    int lines = f->log.lines;

    assert_int_equal(clr_io_open(f->ctx, f->path, CLR_IO_OPEN_TEST_NO_DIRECT, &dev), 0);
    clr_io_dev_info(dev, &info);
    assert_false(info.direct);
    assert_true(info.direct_fallback);
    assert_string_equal(clr_io_dev_mode(dev), "buffered");
    assert_int_equal(f->log.lines, lines + 1);
    assert_non_null(strstr(f->log.last, "O_DIRECT"));
    assert_non_null(strstr(f->log.last, f->path));

    /* Buffered mode still does the whole job, flush included. */
    assert_int_equal(clr_io_alloc(&buf, 65536), 0);
    io_test_pattern(buf, 65536, 7);
    assert_int_equal(clr_io_pwrite(dev, buf, 65536, MiB, CLR_IO_FUA), 0);
    assert_int_equal(clr_io_fsync(dev), 0);
    memset(buf, 0, 65536);
    assert_int_equal(clr_io_pread(dev, buf, 65536, MiB), 0);
    assert_true(io_test_pattern_ok(buf, 65536, 7));
    clr_io_free(buf);
    clr_io_close(dev);
}

static void test_open_buffered(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev_info info;
    struct clr_io_dev *dev;
    int lines = f->log.lines;

    assert_int_equal(clr_io_open(f->ctx, f->path, CLR_IO_OPEN_BUFFERED, &dev), 0);
    clr_io_dev_info(dev, &info);
    assert_false(info.direct);
    assert_false(info.direct_fallback);
    assert_int_equal(info.logical_block, 512);
    assert_int_equal(f->log.lines, lines); /* asked for: no notice */
    clr_io_close(dev);
}

static void test_open_errors(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev *dev = (void *)1;
    char missing[PATH_MAX + 16];

    snprintf(missing, sizeof(missing), "%s/nope", f->dir.path);
    assert_int_equal(clr_io_open(f->ctx, missing, 0, &dev), -ENOENT);
    assert_null(dev);
    assert_int_equal(clr_io_open(f->ctx, "/dev/null", 0, &dev), -EINVAL);
    assert_true(clr_io_open(f->ctx, f->dir.path, 0, &dev) < 0);
}

static void never_called(void *arg, int res)
{
    /* Runs on the ring thread, where cmocka cannot fail a test. */
    fprintf(stderr, "callback of a refused request (%p, %d)\n", arg, res);
    abort();
}

static void test_submit_refused(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev *dev, *ro;
    char *buf;
    uint32_t lbs;
    struct clr_io_dev_info info;

    assert_int_equal(clr_io_open(f->ctx, f->path, f->oflags, &dev), 0);
    clr_io_dev_info(dev, &info);
    lbs = info.logical_block;
    assert_int_equal(clr_io_alloc((void **)&buf, 2 * CLR_IO_ALIGN), 0);

    assert_int_equal(clr_io_read(dev, buf, lbs, 1, never_called, NULL), -EINVAL);
    assert_int_equal(clr_io_read(dev, buf, lbs + 1, 0, never_called, NULL), -EINVAL);
    assert_int_equal(clr_io_read(dev, buf, 0, 0, never_called, NULL), -EINVAL);
    assert_int_equal(clr_io_read(dev, buf, lbs, 16 * MiB, never_called, NULL), -EINVAL);
    assert_int_equal(clr_io_read(dev, buf, 2 * lbs, 16 * MiB - lbs, never_called, NULL), -EINVAL);
    assert_int_equal(clr_io_read(dev, buf, lbs, 0, NULL, NULL), -EINVAL);
    assert_int_equal(clr_io_write(dev, buf, lbs, 0, 0x80, never_called, NULL), -EINVAL);
    assert_int_equal(clr_io_zero(dev, lbs, 3, never_called, NULL), -EINVAL);
    assert_int_equal(clr_io_discard(dev, 0, 0, never_called, NULL), -EINVAL);
    assert_int_equal(clr_io_readv(dev, NULL, 0, 0, never_called, NULL), -EINVAL);

    assert_int_equal(clr_io_open(f->ctx, f->path, CLR_IO_OPEN_RDONLY, &ro), 0);
    clr_io_dev_info(ro, &info);
    assert_true(info.read_only);
    assert_false(info.can_discard);
    assert_int_equal(clr_io_write(ro, buf, lbs, 0, 0, never_called, NULL), -EBADF);
    assert_int_equal(clr_io_zero(ro, lbs, 0, never_called, NULL), -EBADF);
    assert_int_equal(clr_io_pread(ro, buf, lbs, 0), 0);

    clr_io_close(ro);
    clr_io_close(dev);
    clr_io_free(buf);
}

static void test_sync_roundtrip(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev *dev;
    struct clr_io_wg wg;
    struct iovec iov[3];
    char *buf;

    assert_int_equal(clr_io_open(f->ctx, f->path, f->oflags, &dev), 0);
    assert_int_equal(clr_io_alloc((void **)&buf, 3 * 65536), 0);

    io_test_pattern(buf, 65536, 1);
    assert_int_equal(clr_io_pwrite(dev, buf, 65536, 0, 0), 0);
    io_test_pattern(buf, 65536, 2);
    assert_int_equal(clr_io_pwrite(dev, buf, 65536, 65536, CLR_IO_FUA), 0);
    assert_int_equal(clr_io_fsync(dev), 0);

    memset(buf, 0, 65536);
    assert_int_equal(clr_io_pread(dev, buf, 65536, 0), 0);
    assert_true(io_test_pattern_ok(buf, 65536, 1));
    assert_int_equal(clr_io_pread(dev, buf, 65536, 65536), 0);
    assert_true(io_test_pattern_ok(buf, 65536, 2));

    /* Vectored, out of order in memory, through a wait group. */
    for (int i = 0; i < 3; i++) {
        iov[i].iov_base = buf + (2 - i) * 65536;
        iov[i].iov_len = 65536;
        io_test_pattern(iov[i].iov_base, 65536, 10 + (uint64_t)i);
    }
    clr_io_wg_init(&wg);
    clr_io_wg_add(&wg, 1);
    assert_int_equal(clr_io_writev(dev, iov, 3, 4 * MiB, CLR_IO_FUA, clr_io_wg_done, &wg), 0);
    assert_int_equal(clr_io_wg_wait(&wg), 0);
    memset(buf, 0, 3 * 65536);
    clr_io_wg_init(&wg);
    clr_io_wg_add(&wg, 1);
    assert_int_equal(clr_io_readv(dev, iov, 3, 4 * MiB, clr_io_wg_done, &wg), 0);
    assert_int_equal(clr_io_wg_wait(&wg), 0);
    for (int i = 0; i < 3; i++)
        assert_true(io_test_pattern_ok(iov[i].iov_base, 65536, 10 + (uint64_t)i));
    assert_int_equal(clr_io_pread(dev, buf, 65536, 4 * MiB + 65536), 0);
    assert_true(io_test_pattern_ok(buf, 65536, 11));

    clr_io_free(buf);
    clr_io_close(dev);
}

/* ---- many requests in flight from several threads ---- */

#define NTHREADS 4
#define BLK      8192
#define NBLKS    (16 * MiB / BLK)
#define WINDOW   64

struct worker {
    struct clr_io_dev *dev;
    int id;
    int errors;
    char *bufs; /* WINDOW blocks */
    /* the first failure, for the message: a pass's error, or a block
     * that read back wrong */
    int first_err;
    const char *first_pass;
    long first_bad_block;
};

/* Block b belongs to thread b % NTHREADS; visit them in a scrambled order. */
static unsigned worker_block(int id, unsigned i)
{
    unsigned per = NBLKS / NTHREADS;
    unsigned j = (i * 37u) % per; /* 37 is coprime with per (512) */

    return j * NTHREADS + (unsigned)id;
}

static void worker_pass(struct worker *w, bool write)
{
    unsigned per = NBLKS / NTHREADS;

    for (unsigned base = 0; base < per; base += WINDOW) {
        struct clr_io_wg wg;

        clr_io_wg_init(&wg);
        for (unsigned k = 0; k < WINDOW && base + k < per; k++) {
            unsigned b = worker_block(w->id, base + k);
            char *buf = w->bufs + (size_t)k * BLK;
            uint64_t off = (uint64_t)b * BLK;
            int ret;

            clr_io_wg_add(&wg, 1);
            if (write) {
                io_test_pattern(buf, BLK, b);
                if (b % 4 == 0) {
                    /* Every fourth block goes vectored. */
                    struct iovec iov[2] = {
                        { buf, BLK / 2 },
                        { buf + BLK / 2, BLK / 2 },
                    };

                    ret = clr_io_writev(w->dev, iov, 2, off, 0, clr_io_wg_done, &wg);
                } else {
                    ret = clr_io_write(w->dev, buf, BLK, off, 0, clr_io_wg_done, &wg);
                }
            } else {
                memset(buf, 0, BLK);
                ret = clr_io_read(w->dev, buf, BLK, off, clr_io_wg_done, &wg);
            }
            if (ret < 0)
                clr_io_wg_done(&wg, ret);
        }
        {
            int err = clr_io_wg_wait(&wg);

            if (err < 0 && w->errors++ == 0) {
                w->first_err = err;
                w->first_pass = write ? "write" : "read";
            }
        }
        if (!write) {
            for (unsigned k = 0; k < WINDOW && base + k < per; k++) {
                unsigned b = worker_block(w->id, base + k);

                if (!io_test_pattern_ok(w->bufs + (size_t)k * BLK, BLK, b) && w->errors++ == 0)
                    w->first_bad_block = (long)b;
            }
        }
    }
}

static void *worker_main(void *opaque)
{
    struct worker *w = opaque;

    worker_pass(w, true);
    worker_pass(w, false);
    return NULL;
}

static void run_workers(struct clr_io_dev *dev)
{
    pthread_t t[NTHREADS];
    struct worker w[NTHREADS];

    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct worker){ .dev = dev, .id = i, .first_bad_block = -1 };
        assert_int_equal(clr_io_alloc((void **)&w[i].bufs, (size_t)WINDOW * BLK), 0);
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        if (w[i].errors)
            fprintf(stderr, "worker %d: %d errors; first: %s%s%s, first bad block %ld (-1: none)\n", i,
                    w[i].errors, w[i].first_pass ? w[i].first_pass : "no pass failed",
                    w[i].first_pass ? " pass failed: " : "", w[i].first_pass ? strerror(-w[i].first_err) : "",
                    w[i].first_bad_block);
        assert_int_equal(w[i].errors, 0);
        clr_io_free(w[i].bufs);
    }
}

static void test_async_many_threads(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev_info info;
    struct clr_io_dev *dev;
    char *buf;

    assert_int_equal(clr_io_open(f->ctx, f->path, f->oflags, &dev), 0);
    clr_io_dev_info(dev, &info);
    assert_int_equal(info.inline_io, f->inline_io);
    run_workers(dev);

    /* A second reader, independent of the workers' own check. */
    assert_int_equal(clr_io_alloc((void **)&buf, BLK), 0);
    for (unsigned b = 0; b < NBLKS; b += 97) {
        assert_int_equal(clr_io_pread(dev, buf, BLK, (uint64_t)b * BLK), 0);
        assert_true(io_test_pattern_ok(buf, BLK, b));
    }
    clr_io_free(buf);
    clr_io_close(dev);
}

static void test_async_many_threads_buffered(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev *dev;

    assert_int_equal(clr_io_open(f->ctx, f->path, CLR_IO_OPEN_TEST_NO_DIRECT, &dev), 0);
    run_workers(dev);
    clr_io_close(dev);
}

/* A small ring: far more requests than the kernel may hold at once. */
static void test_async_small_ring(void **state)
{
    struct fixture *f = *state;
    struct clr_io_ctx_opts o = { .queue_depth = 4 };
    struct clr_io_ctx *ctx;
    struct clr_io_dev *dev;

    assert_int_equal(clr_io_ctx_create(&o, &ctx), 0);
    assert_int_equal(clr_io_open(ctx, f->path, 0, &dev), 0);
    run_workers(dev);
    clr_io_close(dev);
    clr_io_ctx_destroy(ctx);
}

/* ---- callbacks that submit, and sync calls where they would deadlock ---- */

struct chain {
    struct clr_io_dev *dev;
    char *buf;
    int left;
    int sync_ret;
    struct clr_io_wg *wg;
};

static void chain_cb(void *arg, int res)
{
    struct chain *c = arg;

    if (res < 0 || --c->left == 0) {
        c->sync_ret = clr_io_pread(c->dev, c->buf, 4096, 0);
        clr_io_wg_done(c->wg, res);
        return;
    }
    res = clr_io_write(c->dev, c->buf, 4096, (uint64_t)c->left * 4096, 0, chain_cb, c);
    if (res < 0)
        clr_io_wg_done(c->wg, res);
}

static void test_callback_chain(void **state)
{
    struct fixture *f = *state;
    struct clr_io_wg wg;
    struct chain c = { .left = 10, .wg = &wg };

    assert_int_equal(clr_io_open(f->ctx, f->path, 0, &c.dev), 0);
    assert_int_equal(clr_io_alloc((void **)&c.buf, 4096), 0);
    memset(c.buf, 0x5a, 4096);
    clr_io_wg_init(&wg);
    clr_io_wg_add(&wg, 1);
    assert_int_equal(clr_io_write(c.dev, c.buf, 4096, 0, 0, chain_cb, &c), 0);
    assert_int_equal(clr_io_wg_wait(&wg), 0);
    assert_int_equal(c.left, 0);
    assert_int_equal(c.sync_ret, -EDEADLK);
    clr_io_free(c.buf);
    clr_io_close(c.dev);
}

/* The member shrank under us: the read meets end of file part-way. */
static void test_read_past_eof(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev *dev;
    char *buf;

    assert_int_equal(clr_io_open(f->ctx, f->path, f->oflags, &dev), 0);
    assert_int_equal(clr_io_alloc((void **)&buf, 65536), 0);
    assert_int_equal(truncate(f->path, 16 * MiB - 32768), 0);
    assert_int_equal(clr_io_pread(dev, buf, 65536, 16 * MiB - 65536), -EIO);
    assert_int_equal(clr_io_pread(dev, buf, 32768, 16 * MiB - 65536), 0);
    assert_int_equal(truncate(f->path, 16 * MiB), 0);
    clr_io_free(buf);
    clr_io_close(dev);
}

/* ---- discard and zero ---- */

static void check_zero_and_discard(struct clr_io_dev *dev, uint64_t base)
{
    const size_t len = 1 * MiB;
    char *buf;

    assert_int_equal(clr_io_alloc((void **)&buf, len), 0);
    io_test_pattern(buf, len, 3);
    assert_int_equal(clr_io_pwrite(dev, buf, len, base, 0), 0);

    assert_int_equal(clr_io_pzero(dev, 128 * 1024, base + 64 * 1024), 0);
    assert_int_equal(clr_io_pdiscard(dev, 128 * 1024, base + 512 * 1024), 0);

    memset(buf, 0xff, len);
    assert_int_equal(clr_io_pread(dev, buf, len, base), 0);
    assert_true(io_test_all_zero(buf + 64 * 1024, 128 * 1024));
    assert_true(io_test_all_zero(buf + 512 * 1024, 128 * 1024));
    /* Outside the ranges, the pattern is untouched. */
    {
        char *ref;

        assert_int_equal(clr_io_alloc((void **)&ref, len), 0);
        io_test_pattern(ref, len, 3);
        assert_memory_equal(buf, ref, 64 * 1024);
        assert_memory_equal(buf + 192 * 1024, ref + 192 * 1024, 320 * 1024);
        assert_memory_equal(buf + 640 * 1024, ref + 640 * 1024, len - 640 * 1024);
        clr_io_free(ref);
    }
    clr_io_free(buf);
}

static void test_zero_discard_file(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev_info info;
    struct clr_io_dev *dev;

    assert_int_equal(clr_io_open(f->ctx, f->path, f->oflags, &dev), 0);
    clr_io_dev_info(dev, &info);
    if (!info.can_discard)
        skip(); /* a file system without holes: nothing to test */
    assert_true(info.can_zero);
    check_zero_and_discard(dev, 2 * MiB);
    clr_io_close(dev);
}

/* tmpfs has holes but no ZERO_RANGE: zeroing must fall back to punching. */
static void test_zero_tmpfs(void **state)
{
    struct fixture *f = *state;
    struct io_test_dir shm;
    char path[PATH_MAX];
    struct clr_io_dev *dev;
    struct stat st;
    int mode;

    (void)f;
    if (stat("/dev/shm", &st) < 0 || access("/dev/shm", W_OK) < 0)
        skip();
    snprintf(shm.path, sizeof(shm.path), "/dev/shm/clraid-io-test.XXXXXX");
    assert_non_null(mkdtemp(shm.path));
    io_test_file(&shm, "m", 4 * MiB, path, sizeof(path));
    assert_int_equal(clr_io_open(f->ctx, path, 0, &dev), 0);
    check_zero_and_discard(dev, MiB);
    mode = atomic_load(&dev->zero_mode);
    assert_true(mode == CLR_IO_ZERO_RANGE || mode == CLR_IO_ZERO_PUNCH);
    clr_io_close(dev);
    io_test_dir_remove(&shm);
}

/* Buffers at any address: a member served through the page cache
 * (opened buffered) takes them as they are (mem_align 1); one opened
 * O_DIRECT (where the file system allows it) goes through an aligned copy.
 * Either way the data round-trips, with a two-piece vector too. */
static void test_unaligned_buffer(void **state)
{
    struct fixture *f = *state;
    const unsigned flags[2] = { CLR_IO_OPEN_BUFFERED, f->oflags };

    for (unsigned k = 0; k < 2; k++) {
        struct clr_io_dev *dev;
        struct clr_io_dev_info info;
        struct iovec iov[2];
        char *buf;

        assert_int_equal(clr_io_open(f->ctx, f->path, flags[k], &dev), 0);
        clr_io_dev_info(dev, &info);
        if (!info.direct || info.memory_backed)
            assert_int_equal(info.mem_align, 1);
        else
            assert_int_equal(info.mem_align, info.logical_block);
        assert_int_equal(clr_io_alloc((void **)&buf, 3 * 65536), 0);
        for (unsigned i = 0; i < 65536; i++)
            buf[1 + i] = (char)(i * 7 + 3 + k);
        assert_int_equal(clr_io_pwrite(dev, buf + 1, 65536, 4 * MiB, 0), 0);
        memset(buf + 65536 + 3, 0, 65536);
        assert_int_equal(clr_io_pread(dev, buf + 65536 + 3, 65536, 4 * MiB), 0);
        assert_memory_equal(buf + 65536 + 3, buf + 1, 65536);
        /* a read into two unaligned pieces */
        memset(buf + 65536 + 3, 0, 65536);
        iov[0] = (struct iovec){ .iov_base = buf + 65536 + 3, .iov_len = 4096 };
        iov[1] = (struct iovec){ .iov_base = buf + 65536 + 3 + 4096, .iov_len = 65536 - 4096 };
        {
            struct clr_io_wg wg;
            int sr;

            clr_io_wg_init(&wg);
            clr_io_wg_add(&wg, 1);
            sr = clr_io_readv(dev, iov, 2, 4 * MiB, clr_io_wg_done, &wg);
            if (sr < 0)
                clr_io_wg_done(&wg, sr);
            assert_int_equal(clr_io_wg_wait(&wg), 0);
        }
        assert_memory_equal(buf + 65536 + 3, buf + 1, 65536);
        clr_io_free(buf);
        clr_io_close(dev);
    }
}

/* Zeroing by writing, as on a file system with neither offload. */
static void test_zero_by_writing(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev *dev;
    char *buf;
    const size_t len = 3 * MiB;

    assert_int_equal(clr_io_open(f->ctx, f->path, f->oflags, &dev), 0);
    atomic_store(&dev->zero_mode, CLR_IO_ZERO_WRITE);
    assert_int_equal(clr_io_alloc((void **)&buf, len), 0);
    memset(buf, 0x77, len);
    assert_int_equal(clr_io_pwrite(dev, buf, len, 8 * MiB, 0), 0);
    /* Larger than the shared zero buffer, so it takes several writes. */
    assert_int_equal(clr_io_pzero(dev, len - 4096, 8 * MiB + 4096), 0);
    assert_int_equal(clr_io_pread(dev, buf, len, 8 * MiB), 0);
    assert_int_equal((unsigned char)buf[0], 0x77);
    assert_int_equal((unsigned char)buf[4095], 0x77);
    assert_true(io_test_all_zero(buf + 4096, len - 4096));
    clr_io_free(buf);
    clr_io_close(dev);
}

/* ---- shutdown ---- */

struct drain {
    struct clr_io_dev *dev;
    char *buf;
    atomic_int bad;
    atomic_int done;
    atomic_int chained;
    int chain_ret;
};

static void drain_chained_cb(void *arg, int res)
{
    struct drain *d = arg;

    if (res != 4096)
        atomic_fetch_add(&d->bad, 1);
    atomic_fetch_add(&d->chained, 1);
}

static void drain_cb(void *arg, int res)
{
    struct drain *d = arg;

    if (res != 4096)
        atomic_fetch_add(&d->bad, 1);
    /* The first completion chains one more write, during the drain. */
    if (atomic_fetch_add(&d->done, 1) == 0)
        d->chain_ret = clr_io_write(d->dev, d->buf, 4096, 0, 0, drain_chained_cb, d);
}

static void test_shutdown_drains(void **state)
{
    struct fixture *f = *state;
    struct clr_io_ctx *ctx;
    struct drain d = { 0 };
    double t0;

    assert_int_equal(clr_io_ctx_create(NULL, &ctx), 0);
    assert_int_equal(clr_io_open(ctx, f->path, 0, &d.dev), 0);
    assert_int_equal(clr_io_alloc((void **)&d.buf, 4096), 0);
    memset(d.buf, 1, 4096);
    clr_io_fault_delay(d.dev, 100);

    t0 = io_test_now_ms();
    for (int i = 0; i < 64; i++)
        assert_int_equal(clr_io_write(d.dev, d.buf, 4096, (uint64_t)i * 4096, 0, drain_cb, &d), 0);
    /* Destroy returns only after every callback, the chained one too. */
    clr_io_ctx_destroy(ctx);
    assert_true(io_test_now_ms() - t0 >= 100);
    assert_int_equal(atomic_load(&d.done), 64);
    assert_int_equal(d.chain_ret, 0);
    assert_int_equal(atomic_load(&d.chained), 1);
    assert_int_equal(atomic_load(&d.bad), 0);
    clr_io_free(d.buf);
}

static void test_shutdown_refuses_new(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev *dev;
    char *buf;

    assert_int_equal(clr_io_open(f->ctx, f->path, f->oflags, &dev), 0);
    assert_int_equal(clr_io_alloc((void **)&buf, 4096), 0);
    /* What clr_io_ctx_destroy() sets first, observed from outside. */
    atomic_store(&f->ctx->stopping, true);
    assert_int_equal(clr_io_write(dev, buf, 4096, 0, 0, never_called, NULL), -ESHUTDOWN);
    assert_int_equal(clr_io_pread(dev, buf, 4096, 0), -ESHUTDOWN);
    atomic_store(&f->ctx->stopping, false);
    assert_int_equal(atomic_load(&f->ctx->pending), 0);
    assert_int_equal(clr_io_pread(dev, buf, 4096, 0), 0);
    clr_io_free(buf);
    clr_io_close(dev);
}

/* ---- a real block device, where the machine lets us make a loop device ---- */

static int run(const char *cmd, char *out, size_t outlen)
{
    FILE *p = popen(cmd, "r");
    int st;

    if (!p)
        return -1;
    if (out && (!fgets(out, (int)outlen, p)))
        out[0] = '\0';
    st = pclose(p);
    if (out)
        out[strcspn(out, "\n")] = '\0';
    return st;
}

static void test_blockdev_loop(void **state)
{
    struct fixture *f = *state;
    char cmd[PATH_MAX * 2], loop[64], img[PATH_MAX];
    struct clr_io_dev_info info;
    struct clr_io_dev *dev, *again;
    int ret;

    if (geteuid() != 0)
        skip();
    io_test_file(&f->dir, "loop.img", 8 * MiB, img, sizeof(img));
    snprintf(cmd, sizeof(cmd), "losetup -f --show '%s' 2>/dev/null", img);
    if (run(cmd, loop, sizeof(loop)) != 0 || strncmp(loop, "/dev/loop", 9) != 0)
        skip();

    ret = clr_io_open(f->ctx, loop, CLR_IO_OPEN_EXCL, &dev);
    assert_int_equal(ret, 0);
    clr_io_dev_info(dev, &info);
    assert_true(info.is_blockdev);
    assert_int_equal(info.size, 8 * MiB);
    assert_int_equal(info.logical_block, 512);
    assert_true(info.direct);
    /* O_EXCL: a second exclusive opener is refused. */
    assert_int_equal(clr_io_open(f->ctx, loop, CLR_IO_OPEN_EXCL, &again), -EBUSY);
    check_zero_and_discard(dev, MiB);
    clr_io_close(dev);

    snprintf(cmd, sizeof(cmd), "losetup -d %s", loop);
    assert_int_equal(run(cmd, NULL, 0), 0);
}

#define T(fn)  cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TI(fn) cmocka_unit_test_setup_teardown(fn, setup_inline, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_alloc_aligned),     T(test_open_file_info),       T(test_open_direct_fallback),
        T(test_open_buffered),     T(test_open_errors),          T(test_submit_refused),
        T(test_sync_roundtrip),    T(test_async_many_threads),   T(test_async_many_threads_buffered),
        T(test_async_small_ring),  T(test_callback_chain),       T(test_read_past_eof),
        T(test_zero_discard_file), T(test_zero_tmpfs),           T(test_zero_by_writing),
        T(test_shutdown_drains),   T(test_shutdown_refuses_new), T(test_blockdev_loop),
        T(test_unaligned_buffer),
    };

    /* The same behaviour when page-cache members are served inline. */
    const struct CMUnitTest inline_tests[] = {
        TI(test_submit_refused),  TI(test_sync_roundtrip),       TI(test_async_many_threads),
        TI(test_read_past_eof),   TI(test_zero_discard_file),    TI(test_zero_tmpfs),
        TI(test_zero_by_writing), TI(test_shutdown_refuses_new), TI(test_unaligned_buffer),
    };
    int failed = cmocka_run_group_tests_name("engine/io", tests, NULL, NULL);

    failed += cmocka_run_group_tests_name("engine/io inline", inline_tests, NULL, NULL);
    return failed ? 1 : 0;
}
