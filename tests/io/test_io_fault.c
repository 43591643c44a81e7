/* clraid: tests of the fault-injection seam of engine/io. */
#include <config.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/io.h"
#include "io_test_util.h"

#define MiB (1024 * 1024)

struct fixture {
    struct io_test_dir dir;
    struct clr_io_ctx *ctx;
    struct clr_io_dev *dev;
    char *buf; /* 1 MiB */
};

static int setup_ctx(void **state, bool inline_io)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct clr_io_ctx_opts o = { .inline_buffered = inline_io };
    struct clr_io_dev_info info;
    char path[PATH_MAX];

    assert_non_null(f);
    io_test_dir_make(&f->dir);
    io_test_file(&f->dir, "member0", 8 * MiB, path, sizeof(path));
    assert_int_equal(clr_io_ctx_create(&o, &f->ctx), 0);
    assert_int_equal(clr_io_open(f->ctx, path, inline_io ? CLR_IO_OPEN_BUFFERED : 0, &f->dev), 0);
    clr_io_dev_info(f->dev, &info);
    assert_int_equal(info.inline_io, inline_io);
    assert_int_equal(clr_io_alloc((void **)&f->buf, MiB), 0);
    memset(f->buf, 0x3c, MiB);
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

    clr_io_close(f->dev);
    clr_io_ctx_destroy(f->ctx);
    clr_io_free(f->buf);
    io_test_dir_remove(&f->dir);
    free(f);
    return 0;
}

static void test_fail_read_range(void **state)
{
    struct fixture *f = *state;
    struct clr_io_fault_stats st;

    assert_int_equal(clr_io_fault_fail_range(f->dev, CLR_IO_FAULT_READ, 8192, 4096, 0), 0);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 0), 0);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 4096), 0);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 8192), -EIO);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 16384, 4096), -EIO); /* overlaps */
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 12288), 0);    /* end is exclusive */
    assert_int_equal(clr_io_pwrite(f->dev, f->buf, 4096, 8192, 0), 0); /* writes unaffected */
    clr_io_fault_stats(f->dev, &st);
    assert_int_equal(st.read_errors, 2);
    assert_int_equal(st.write_errors, 0);

    clr_io_fault_clear(f->dev);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 8192), 0);
    clr_io_fault_stats(f->dev, &st);
    assert_int_equal(st.read_errors, 2); /* counters survive a clear */
}

static void test_fail_writes_whole_device(void **state)
{
    struct fixture *f = *state;
    struct clr_io_fault_stats st;

    assert_int_equal(clr_io_fault_fail_range(f->dev, CLR_IO_FAULT_WRITE, 0, 0, ENOSPC), 0);
    assert_int_equal(clr_io_pwrite(f->dev, f->buf, 4096, 7 * MiB, 0), -ENOSPC);
    assert_int_equal(clr_io_pwrite(f->dev, f->buf, 4096, 0, CLR_IO_FUA), -ENOSPC);
    assert_int_equal(clr_io_pzero(f->dev, 4096, 0), -ENOSPC);
    assert_int_equal(clr_io_pdiscard(f->dev, 4096, 0), -ENOSPC);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 0), 0);
    assert_int_equal(clr_io_fsync(f->dev), 0);
    clr_io_fault_stats(f->dev, &st);
    assert_int_equal(st.write_errors, 4);
    assert_int_equal(st.read_errors, 0);
}

static void test_fail_both_several_ranges(void **state)
{
    struct fixture *f = *state;
    unsigned both = CLR_IO_FAULT_READ | CLR_IO_FAULT_WRITE;

    assert_int_equal(clr_io_fault_fail_range(f->dev, both, MiB, 4096, 0), 0);
    assert_int_equal(clr_io_fault_fail_range(f->dev, both, 2 * MiB, 4096, EILSEQ), 0);
    assert_int_equal(clr_io_pwrite(f->dev, f->buf, 4096, MiB, 0), -EIO);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, MiB), -EIO);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 2 * MiB), -EILSEQ);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 3 * MiB), 0);
}

/* A latent sector error: reads fail until a write covers the range. */
static void test_heal_on_write(void **state)
{
    struct fixture *f = *state;
    unsigned heal = CLR_IO_FAULT_READ | CLR_IO_FAULT_HEAL_ON_WRITE;

    assert_int_equal(
        clr_io_fault_fail_range(f->dev, CLR_IO_FAULT_WRITE | CLR_IO_FAULT_HEAL_ON_WRITE, 0, 4096, 0),
        -EINVAL);
    assert_int_equal(clr_io_fault_fail_range(f->dev, heal, MiB, 8192, ENODATA), 0);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, MiB + 4096), -ENODATA);
    /* a write over part of it heals nothing */
    assert_int_equal(clr_io_pwrite(f->dev, f->buf, 4096, MiB, 0), 0);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, MiB), -ENODATA);
    /* one over all of it does */
    assert_int_equal(clr_io_pwrite(f->dev, f->buf, 65536, MiB - 4096, 0), 0);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 8192, MiB), 0);
}

static void test_fault_limits(void **state)
{
    struct fixture *f = *state;

    assert_int_equal(clr_io_fault_fail_range(f->dev, 0, 0, 0, 0), -EINVAL);
    assert_int_equal(clr_io_fault_fail_range(f->dev, 0x10, 0, 0, 0), -EINVAL);
    for (int i = 0; i < CLR_IO_FAULT_MAX_RANGES; i++)
        assert_int_equal(clr_io_fault_fail_range(f->dev, CLR_IO_FAULT_READ, (uint64_t)i * 4096, 4096, 0), 0);
    assert_int_equal(clr_io_fault_fail_range(f->dev, CLR_IO_FAULT_READ, 0, 0, 0), -ENOSPC);
    clr_io_fault_clear(f->dev);
    assert_int_equal(clr_io_fault_fail_range(f->dev, CLR_IO_FAULT_READ, 0, 0, 0), 0);
}

static void test_vanish(void **state)
{
    struct fixture *f = *state;
    struct clr_io_fault_stats st;

    io_test_pattern(f->buf, 4096, 9);
    assert_int_equal(clr_io_pwrite(f->dev, f->buf, 4096, 0, 0), 0);

    clr_io_fault_vanish(f->dev, 0);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 0), -ENODEV);
    assert_int_equal(clr_io_pwrite(f->dev, f->buf, 4096, 0, 0), -ENODEV);
    assert_int_equal(clr_io_fsync(f->dev), -ENODEV);
    assert_int_equal(clr_io_pzero(f->dev, 4096, 0), -ENODEV);
    assert_int_equal(clr_io_pdiscard(f->dev, 4096, 0), -ENODEV);
    clr_io_fault_vanish(f->dev, EIO);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 0), -EIO);
    clr_io_fault_stats(f->dev, &st);
    assert_int_equal(st.vanished, 6);

    /* Back again, with the data it had. */
    clr_io_fault_clear(f->dev);
    memset(f->buf, 0, 4096);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 0), 0);
    assert_true(io_test_pattern_ok(f->buf, 4096, 9));
}

static void test_delay(void **state)
{
    struct fixture *f = *state;
    struct clr_io_fault_stats st;
    double t0;

    clr_io_fault_delay(f->dev, 60);
    t0 = io_test_now_ms();
    assert_int_equal(clr_io_pwrite(f->dev, f->buf, 4096, 0, 0), 0);
    assert_true(io_test_now_ms() - t0 >= 60);

    /* An injected error is delayed like a real one. */
    assert_int_equal(clr_io_fault_fail_range(f->dev, CLR_IO_FAULT_READ, 0, 0, 0), 0);
    t0 = io_test_now_ms();
    assert_int_equal(clr_io_pread(f->dev, f->buf, 4096, 0), -EIO);
    assert_true(io_test_now_ms() - t0 >= 60);

    clr_io_fault_delay(f->dev, 0);
    clr_io_fault_clear(f->dev);
    clr_io_fault_stats(f->dev, &st);
    assert_int_equal(st.delayed, 2);
    assert_int_equal(st.read_errors, 1);
}

/* A device with a request in flight and no completion is stalled, for as
 * long as that lasts; idle, or once it completes, it is not. */
static void test_stall(void **state)
{
    struct fixture *f = *state;
    struct clr_io_wg wg;
    int spins = 0;

    assert_int_equal(clr_io_dev_stall_ms(f->dev), 0);
    /* a completion long ago is no stall for the next request */
    assert_int_equal(clr_io_pwrite(f->dev, f->buf, 4096, 0, 0), 0);
    clr_io_fault_delay(f->dev, 1500);
    clr_io_wg_init(&wg);
    clr_io_wg_add(&wg, 1);
    assert_int_equal(clr_io_write(f->dev, f->buf, 4096, 0, 0, clr_io_wg_done, &wg), 0);
    assert_true(clr_io_dev_stall_ms(f->dev) < 500);
    while (clr_io_dev_stall_ms(f->dev) < 300) {
        assert_true(++spins < 1000); /* 10 s */
        usleep(10000);
    }
    assert_int_equal(clr_io_wg_wait(&wg), 0);
    /* the completion thread leaves the in-flight count just after the
     * callback that woke us: not stalled once it has */
    spins = 0;
    while (clr_io_dev_stall_ms(f->dev) != 0) {
        assert_true(++spins < 1000); /* 10 s */
        usleep(10000);
    }
    clr_io_fault_delay(f->dev, 0);
}

/* Delays do not serialise: many delayed requests overlap in time. */
static void test_delay_concurrent(void **state)
{
    struct fixture *f = *state;
    struct clr_io_wg wg;
    double t0, ms;

    clr_io_fault_delay(f->dev, 100);
    clr_io_wg_init(&wg);
    t0 = io_test_now_ms();
    for (int i = 0; i < 32; i++) {
        clr_io_wg_add(&wg, 1);
        assert_int_equal(
            clr_io_read(f->dev, f->buf + i * 4096, 4096, (uint64_t)i * 4096, clr_io_wg_done, &wg), 0);
    }
    assert_int_equal(clr_io_wg_wait(&wg), 0);
    ms = io_test_now_ms() - t0;
    assert_true(ms >= 100 && ms < 1000);
}

static void test_short_transfers(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev_info info;
    struct clr_io_fault_stats st;
    struct clr_io_wg wg;
    struct iovec iov[4];
    char *ref;

    clr_io_dev_info(f->dev, &info);
    assert_int_equal(clr_io_alloc((void **)&ref, 256 * 1024), 0);
    io_test_pattern(ref, 256 * 1024, 5);
    memcpy(f->buf, ref, 256 * 1024);
    clr_io_fault_short(f->dev, info.logical_block);

    for (int i = 0; i < 4; i++) {
        iov[i].iov_base = f->buf + i * 65536;
        iov[i].iov_len = 65536;
    }
    clr_io_wg_init(&wg);
    clr_io_wg_add(&wg, 1);
    assert_int_equal(clr_io_writev(f->dev, iov, 4, MiB, 0, clr_io_wg_done, &wg), 0);
    assert_int_equal(clr_io_wg_wait(&wg), 0);

    memset(f->buf, 0, 256 * 1024);
    clr_io_wg_init(&wg);
    clr_io_wg_add(&wg, 1);
    assert_int_equal(clr_io_readv(f->dev, iov, 4, MiB, clr_io_wg_done, &wg), 0);
    assert_int_equal(clr_io_wg_wait(&wg), 0);
    assert_memory_equal(f->buf, ref, 256 * 1024);

    clr_io_fault_stats(f->dev, &st);
    assert_true(st.short_ios >= 2 * (256 * 1024 / info.logical_block) - 2);

    /* And without the fault, a plain read sees the same. */
    clr_io_fault_clear(f->dev);
    memset(f->buf, 0, 256 * 1024);
    assert_int_equal(clr_io_pread(f->dev, f->buf, 256 * 1024, MiB), 0);
    assert_memory_equal(f->buf, ref, 256 * 1024);
    clr_io_free(ref);
}

static void count_cb(void *arg, int res)
{
    atomic_int *n = arg;

    if (res == 4096)
        atomic_fetch_add(n, 1);
}

/* Closing a member waits for its requests still in flight. */
static void test_close_waits_for_inflight(void **state)
{
    struct fixture *f = *state;
    struct clr_io_dev *dev;
    atomic_int done = 0;
    char path[PATH_MAX];

    io_test_file(&f->dir, "member1", MiB, path, sizeof(path));
    assert_int_equal(clr_io_open(f->ctx, path, 0, &dev), 0);
    clr_io_fault_delay(dev, 50);
    for (int i = 0; i < 16; i++)
        assert_int_equal(clr_io_write(dev, f->buf, 4096, (uint64_t)i * 4096, 0, count_cb, &done), 0);
    clr_io_close(dev);
    assert_int_equal(atomic_load(&done), 16);
}

/*
 * Delayed completions take the submission lock on the ring thread while
 * workers submit: no request may be stranded in the queue (this hung once).
 */
struct delay_worker {
    struct clr_io_dev *dev;
    char *buf;
    int errors;
};

static void *delay_worker_main(void *opaque)
{
    struct delay_worker *w = opaque;

    for (int round = 0; round < 25; round++) {
        struct clr_io_wg wg;

        clr_io_wg_init(&wg);
        for (int i = 0; i < 16; i++) {
            clr_io_wg_add(&wg, 1);
            if (clr_io_write(w->dev, w->buf, 4096, (uint64_t)i * 4096, 0, clr_io_wg_done, &wg) < 0)
                clr_io_wg_done(&wg, -EIO);
        }
        if (clr_io_wg_wait(&wg) < 0)
            w->errors++;
    }
    return NULL;
}

static void test_delay_under_load(void **state)
{
    struct fixture *f = *state;
    struct delay_worker w[3];
    pthread_t t[3];

    clr_io_fault_delay(f->dev, 1);
    for (int i = 0; i < 3; i++) {
        w[i] = (struct delay_worker){ .dev = f->dev, .buf = f->buf };
        assert_int_equal(pthread_create(&t[i], NULL, delay_worker_main, &w[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].errors, 0);
    }
}

/* Faults toggled while other threads run I/O: each result is one or the other. */
struct hammer {
    struct clr_io_dev *dev;
    char *buf;
    atomic_bool stop;
    int ok, vanished, other;
};

static void *hammer_main(void *opaque)
{
    struct hammer *h = opaque;

    while (!atomic_load(&h->stop)) {
        int ret = clr_io_pwrite(h->dev, h->buf, 4096, 4096, 0);

        if (ret == 0)
            h->ok++;
        else if (ret == -ENODEV)
            h->vanished++;
        else
            h->other++;
    }
    return NULL;
}

static void test_toggle_under_load(void **state)
{
    struct fixture *f = *state;
    struct hammer h[2];
    pthread_t t[2];

    for (int i = 0; i < 2; i++) {
        h[i] = (struct hammer){ .dev = f->dev, .buf = f->buf };
        assert_int_equal(pthread_create(&t[i], NULL, hammer_main, &h[i]), 0);
    }
    for (int i = 0; i < 200; i++) {
        clr_io_fault_vanish(f->dev, 0);
        usleep(200);
        clr_io_fault_clear(f->dev);
        usleep(200);
    }
    for (int i = 0; i < 2; i++) {
        atomic_store(&h[i].stop, true);
        pthread_join(t[i], NULL);
        assert_int_equal(h[i].other, 0);
        assert_true(h[i].ok > 0);
    }
}

#define T(fn)  cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TI(fn) cmocka_unit_test_setup_teardown(fn, setup_inline, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_fail_read_range),
        T(test_fail_writes_whole_device),
        T(test_fail_both_several_ranges),
        T(test_heal_on_write),
        T(test_fault_limits),
        T(test_vanish),
        T(test_delay),
        T(test_stall),
        T(test_delay_concurrent),
        T(test_short_transfers),
        T(test_toggle_under_load),
        T(test_close_waits_for_inflight),
        T(test_delay_under_load),
    };

    /* Inline requests see the same faults (delays serialise there). */
    const struct CMUnitTest inline_tests[] = {
        TI(test_fail_read_range),
        TI(test_fail_writes_whole_device),
        TI(test_fail_both_several_ranges),
        TI(test_heal_on_write),
        TI(test_vanish),
        TI(test_delay),
        TI(test_short_transfers),
        TI(test_toggle_under_load),
    };
    int failed = cmocka_run_group_tests_name("engine/io faults", tests, NULL, NULL);

    failed += cmocka_run_group_tests_name("engine/io faults inline", inline_tests, NULL, NULL);
    return failed ? 1 : 0;
}
