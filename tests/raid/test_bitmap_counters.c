/* Unit tests for engine/raid/bitmap_counters.c: md's write-intent bitmap
 * rules (bit on disk before the first write to a clean chunk, lazy
 * clearing after idle sweeps, never while writes are pending, never while
 * degraded, failed writes and loaded bits need resync first). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raid/bitmap_counters.h"

/* 10 chunks of 128 sectors, the last one short (sync 1200 sectors) */
static int setup(void **state)
{
    static struct clr_bmc b;

    if (clr_bmc_init(&b, 1200, 128, 0))
        return -1;
    *state = &b;
    return 0;
}

static int teardown(void **state)
{
    clr_bmc_free(*state);
    return 0;
}

static size_t sweep(struct clr_bmc *b, uint64_t *out)
{
    return clr_bmc_sweep(b, out, 16);
}

static void test_init(void **state)
{
    struct clr_bmc *b = *state, x;

    assert_int_equal(b->nchunks, 10);
    assert_int_equal(clr_bmc_dirty_chunks(b), 0);
    assert_int_equal(clr_bmc_init(&x, 0, 128, 0), -EINVAL);
    assert_int_equal(clr_bmc_init(&x, 100, 96, 0), -EINVAL);
    assert_int_equal(clr_bmc_init(&x, 100, 0, 0), -EINVAL);
}

static void test_first_write_needs_flush(void **state)
{
    struct clr_bmc *b = *state;
    uint64_t f = 99, l = 99;

    /* 100..300 covers chunks 0, 1, 2: all clean -> all need the disk */
    assert_int_equal(clr_bmc_start_write(b, 100, 200, &f, &l), 3);
    assert_int_equal(f, 0);
    assert_int_equal(l, 2);
    assert_int_equal(clr_bmc_dirty_chunks(b), 3);
    /* an overlapping write finds chunks 1, 2 dirty, only 3 is new */
    assert_int_equal(clr_bmc_start_write(b, 256, 200, &f, &l), 1);
    /* a write inside dirty chunks needs no bitmap I/O at all */
    assert_int_equal(clr_bmc_start_write(b, 0, 8, NULL, NULL), 0);
    assert_int_equal(clr_bmc_pending(b, 0), 2);
    assert_int_equal(clr_bmc_pending(b, 2), 2);
    assert_int_equal(clr_bmc_pending(b, 3), 1);

    uint8_t img[2];

    clr_bmc_render(b, 0, 10, img);
    assert_int_equal(img[0], 0x0f);
    assert_int_equal(img[1], 0x00);
    clr_bmc_render(b, 2, 3, img); /* chunks 2, 3, 4 -> bits 0, 1 */
    assert_int_equal(img[0], 0x03);

    assert_int_equal(clr_bmc_start_write(b, 1200, 1, NULL, NULL), -ERANGE);
    assert_int_equal(clr_bmc_start_write(b, 1100, 101, NULL, NULL), -ERANGE);
    assert_int_equal(clr_bmc_start_write(b, 0, 0, NULL, NULL), -ERANGE);
}

static void test_lazy_clear(void **state)
{
    struct clr_bmc *b = *state;
    uint64_t out[16];

    assert_int_equal(clr_bmc_start_write(b, 0, 8, NULL, NULL), 1);
    /* pending: never cleared, however many sweeps */
    for (int i = 0; i < 5; i++)
        assert_int_equal(sweep(b, out), 0);
    assert_int_equal(clr_bmc_end_write(b, 0, 8, true), 0);
    assert_true(clr_bmc_is_dirty(b, 0));
    /* md: first pass arms (2 -> 1), second clears (1 -> 0) */
    assert_int_equal(sweep(b, out), 0);
    assert_int_equal(sweep(b, out), 1);
    assert_int_equal(out[0], 0);
    assert_false(clr_bmc_is_dirty(b, 0));
    assert_int_equal(clr_bmc_dirty_chunks(b), 0);
    assert_int_equal(sweep(b, out), 0);
}

static void test_write_restarts_idle_clock(void **state)
{
    struct clr_bmc *b = *state;
    uint64_t out[16];

    clr_bmc_start_write(b, 0, 8, NULL, NULL);
    clr_bmc_end_write(b, 0, 8, true);
    assert_int_equal(sweep(b, out), 0); /* armed */
    /* a new write to the armed chunk: no flush (bit still set), and the
     * clock restarts */
    assert_int_equal(clr_bmc_start_write(b, 8, 8, NULL, NULL), 0);
    clr_bmc_end_write(b, 8, 8, true);
    assert_int_equal(sweep(b, out), 0);
    assert_int_equal(sweep(b, out), 1);
}

static void test_pending_blocks_clear(void **state)
{
    struct clr_bmc *b = *state;
    uint64_t out[16];

    clr_bmc_start_write(b, 0, 8, NULL, NULL);
    clr_bmc_start_write(b, 0, 8, NULL, NULL);
    clr_bmc_end_write(b, 0, 8, true);
    for (int i = 0; i < 4; i++)
        assert_int_equal(sweep(b, out), 0); /* one still in flight */
    clr_bmc_end_write(b, 0, 8, true);
    assert_int_equal(sweep(b, out), 0);
    assert_int_equal(sweep(b, out), 1);
    /* ending a write that never started is a caller bug */
    assert_int_equal(clr_bmc_end_write(b, 0, 8, true), -EINVAL);
}

static void test_never_clear_while_degraded(void **state)
{
    struct clr_bmc *b = *state;
    uint64_t out[16];

    /* written before degradation, all legs ok */
    clr_bmc_start_write(b, 0, 8, NULL, NULL);
    clr_bmc_end_write(b, 0, 8, true);
    clr_bmc_set_degraded(b, true);
    /* written while degraded */
    clr_bmc_start_write(b, 300, 8, NULL, NULL);
    clr_bmc_end_write(b, 300, 8, true);
    assert_true(clr_bmc_is_needed(b, 2));
    assert_false(clr_bmc_is_needed(b, 0));
    for (int i = 0; i < 10; i++)
        assert_int_equal(sweep(b, out), 0);
    assert_int_equal(clr_bmc_dirty_chunks(b), 2);
    /* the member returns: chunk 0 may go, chunk 2 waits for its resync */
    clr_bmc_set_degraded(b, false);
    assert_int_equal(sweep(b, out), 0);
    assert_int_equal(sweep(b, out), 1);
    assert_int_equal(out[0], 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(sweep(b, out), 0);
    assert_int_equal(clr_bmc_sync_done(b, 256, 128), 0);
    assert_false(clr_bmc_is_needed(b, 2));
    assert_int_equal(sweep(b, out), 0);
    assert_int_equal(sweep(b, out), 1);
    assert_int_equal(out[0], 2);
}

static void test_failed_write_needs_resync(void **state)
{
    struct clr_bmc *b = *state;
    uint64_t out[16];

    clr_bmc_start_write(b, 0, 8, NULL, NULL);
    clr_bmc_end_write(b, 0, 8, false);
    assert_true(clr_bmc_is_needed(b, 0));
    for (int i = 0; i < 4; i++)
        assert_int_equal(sweep(b, out), 0);
    /* a partial resync of the chunk does not count */
    clr_bmc_sync_done(b, 0, 64);
    assert_true(clr_bmc_is_needed(b, 0));
    clr_bmc_sync_done(b, 0, 128);
    assert_int_equal(sweep(b, out), 0);
    assert_int_equal(sweep(b, out), 1);
}

static void test_load_and_short_last_chunk(void **state)
{
    struct clr_bmc *b = *state;
    uint64_t out[16];
    const uint8_t disk[2] = { 0x81, 0x02 }; /* chunks 0, 7, 9 */

    assert_int_equal(clr_bmc_load(b, disk, sizeof disk), 3);
    assert_true(clr_bmc_is_needed(b, 9));
    assert_int_equal(sweep(b, out), 0);
    assert_int_equal(sweep(b, out), 0);
    /* chunk 9 is 1152..1200: a resync to the end covers it */
    clr_bmc_sync_done(b, 1152, 48);
    clr_bmc_sync_done(b, 0, 1024);
    assert_int_equal(sweep(b, out), 0);
    assert_int_equal(sweep(b, out), 3);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 7);
    assert_int_equal(out[2], 9);
    assert_int_equal(clr_bmc_mark_needed(b, 500, 10), 1);
    assert_true(clr_bmc_is_needed(b, 3));
}

static void test_sweep_output_limit(void **state)
{
    struct clr_bmc *b = *state;
    uint64_t out[16];

    clr_bmc_start_write(b, 0, 1200, NULL, NULL);
    clr_bmc_end_write(b, 0, 1200, true);
    assert_int_equal(clr_bmc_sweep(b, out, 4), 0);
    assert_int_equal(clr_bmc_sweep(b, out, 4), 4);
    assert_int_equal(out[3], 3);
    assert_int_equal(clr_bmc_sweep(b, out, 4), 4);
    assert_int_equal(clr_bmc_sweep(b, out, 4), 2);
    assert_int_equal(clr_bmc_dirty_chunks(b), 0);
}

static void test_overflow(void **state)
{
    struct clr_bmc *b = *state;

    for (unsigned i = 0; i < CLR_BMC_MAX_PENDING; i++)
        assert_true(clr_bmc_start_write(b, 128, 8, NULL, NULL) >= 0);
    /* chunk 1 is full: a write over chunks 0..1 is refused whole */
    assert_int_equal(clr_bmc_start_write(b, 0, 200, NULL, NULL), -EBUSY);
    assert_int_equal(clr_bmc_pending(b, 0), 0);
    assert_false(clr_bmc_is_dirty(b, 0));
    clr_bmc_end_write(b, 128, 8, true);
    assert_int_equal(clr_bmc_start_write(b, 0, 200, NULL, NULL), 1);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_init),
        T(test_first_write_needs_flush),
        T(test_lazy_clear),
        T(test_write_restarts_idle_clock),
        T(test_pending_blocks_clear),
        T(test_never_clear_while_degraded),
        T(test_failed_write_needs_resync),
        T(test_load_and_short_last_chunk),
        T(test_sweep_output_limit),
        T(test_overflow),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
