/* Unit tests: bitmap superblock and per-node placement (doc/architecture.md §2.4-§2.6). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "format/endian.h"
#include "format/md_bitmap.h"

static const uint8_t UUID[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static void sample(struct clr_bitmap_sb *b)
{
    memset(b, 0, sizeof *b);
    b->magic = CLR_BITMAP_MAGIC;
    b->version = 5;
    memcpy(b->uuid, UUID, 16);
    b->events = 9;
    b->events_cleared = 7;
    b->sync_size = 2093056;
    b->chunksize = 64 << 20;
    b->daemon_sleep = 5;
    b->nodes = 4;
    strcpy(b->cluster_name, "clraidtest");
}

static void sample_sb(struct clr_md_sb *sb)
{
    memset(sb, 0, sizeof *sb);
    sb->level = 1;
    sb->size = 2093056;
    sb->raid_disks = 2;
    sb->super_offset = 8;
    sb->bitmap_offset = 8;
    sb->data_offset = 4096;
}

static void test_roundtrip(void **state)
{
    struct clr_bitmap_sb a, b;
    struct clr_err e;
    uint8_t buf[256];

    (void)state;
    sample(&a);
    assert_int_equal(clr_bitmap_sb_encode(&a, buf, sizeof buf), 0);
    assert_int_equal(clr_get_le32(buf), 0x6d746962);
    assert_memory_equal(buf, "bitm", 4); /* "bitm" in byte order */
    assert_int_equal(clr_get_le32(buf + 68), 4);
    assert_string_equal((char *)buf + 72, "clraidtest");
    assert_int_equal(clr_bitmap_sb_decode(buf, sizeof buf, UUID, &b, &e), 0);
    assert_memory_equal(&a, &b, sizeof a);
}

static void test_worked_example_placement(void **state)
{
    struct clr_bitmap_sb b;
    struct clr_md_sb sb;
    struct clr_err e;

    (void)state;
    sample(&b);
    sample_sb(&sb);
    /* doc/architecture.md §2.6: 16 bits, stride 4096 bytes, slots at 8192, 12288, 16384, 20480. */
    assert_int_equal(clr_bitmap_bits(b.sync_size, b.chunksize), 16);
    assert_int_equal(clr_bitmap_stride_bytes(b.sync_size, b.chunksize), 4096);
    assert_int_equal(clr_bitmap_slot_offset(&sb, &b, 0), 8192);
    assert_int_equal(clr_bitmap_slot_offset(&sb, &b, 2), 16384);
    assert_int_equal(clr_bitmap_slot_offset(&sb, &b, 3), 20480);
    assert_int_equal(clr_bitmap_check_fits(&sb, &b, &e), 0);
    /* node 2, chunk 9 -> byte 16641 of the device, mask 0x02 */
    uint8_t bits[2] = { 0, 0 };
    clr_bitmap_set(bits, 9);
    assert_int_equal(bits[1], 0x02);
    assert_int_equal(clr_bitmap_slot_offset(&sb, &b, 2) + 256 + 9 / 8, 16641);
    assert_true(clr_bitmap_test(bits, 9));
    clr_bitmap_clear(bits, 9);
    assert_false(clr_bitmap_test(bits, 9));
}

static void test_stride_rounding(void **state)
{
    (void)state;
    /* 8*(4096-256) bits fill one 4 KiB region exactly; one more bit needs two. */
    uint64_t cs = 4096; /* bytes -> 8 sectors per bit */
    assert_int_equal(clr_bitmap_stride_bytes(8 * (4096 - 256) * 8, cs), 4096);
    assert_int_equal(clr_bitmap_stride_bytes(8 * (4096 - 256) * 8 + 8, cs), 8192);
    assert_int_equal(clr_bitmap_bits(17, 4096), 3);
}

static void test_count(void **state)
{
    uint8_t bits[4] = { 0xff, 0x01, 0x80, 0xff };

    (void)state;
    assert_int_equal(clr_bitmap_count(bits, 32), 8 + 1 + 1 + 8);
    assert_int_equal(clr_bitmap_count(bits, 9), 9);
    assert_int_equal(clr_bitmap_count(bits, 23), 9); /* bit 23 excluded */
    assert_int_equal(clr_bitmap_count(bits, 24), 10);
}

static void test_decode_errors(void **state)
{
    struct clr_bitmap_sb a, b;
    struct clr_err e;
    uint8_t buf[256];
    static const uint8_t other[16] = { 9 };

    (void)state;
#define TRY(mutate, want)                                                                                    \
    do {                                                                                                     \
        sample(&a);                                                                                          \
        mutate;                                                                                              \
        clr_bitmap_sb_encode(&a, buf, sizeof buf);                                                           \
        assert_int_equal(clr_bitmap_sb_decode(buf, sizeof buf, UUID, &b, &e), want);                         \
    } while (0)
    TRY(a.magic = 0, -ENODATA);
    TRY(a.version = 3, -EPROTO);
    TRY(a.version = 6, -EPROTO);
    TRY(a.chunksize = 3000, -EINVAL);
    TRY(a.chunksize = 256, -EINVAL);
    TRY(a.daemon_sleep = 0, -ERANGE);
    TRY(a.write_behind = 20000, -ERANGE);
    TRY(a.nodes = 0, -ERANGE);
    TRY(a.nodes = 100000, -ERANGE);
    TRY(memcpy(a.uuid, other, 16), -EINVAL);
#undef TRY
    sample(&a);
    clr_bitmap_sb_encode(&a, buf, sizeof buf);
    memset(buf + 72, 'x', 64); /* name without a NUL */
    assert_int_equal(clr_bitmap_sb_decode(buf, sizeof buf, UUID, &b, &e), -EINVAL);
    sample(&a);
    clr_bitmap_sb_encode(&a, buf, sizeof buf);
    buf[200] = 1; /* padding */
    assert_int_equal(clr_bitmap_sb_decode(buf, sizeof buf, UUID, &b, &e), -EINVAL);
    assert_int_equal(clr_bitmap_sb_decode(buf, 100, UUID, &b, &e), -EINVAL);
}

static void test_fits(void **state)
{
    struct clr_bitmap_sb b;
    struct clr_md_sb sb;
    struct clr_err e;

    (void)state;
    sample(&b);
    sample_sb(&sb);
    sb.data_offset = 40; /* 4 slots end at sector 48 */
    assert_int_equal(clr_bitmap_check_fits(&sb, &b, &e), -ERANGE);
    sample_sb(&sb);
    b.sync_size = sb.size + 1;
    assert_int_equal(clr_bitmap_check_fits(&sb, &b, &e), -ERANGE);
    sample(&b);
    b.chunksize = 512;
    b.sync_size = 1ULL << 40;
    sb.size = 1ULL << 40;
    assert_int_equal(clr_bitmap_check_fits(&sb, &b, &e), -ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),       cmocka_unit_test(test_worked_example_placement),
        cmocka_unit_test(test_stride_rounding), cmocka_unit_test(test_count),
        cmocka_unit_test(test_decode_errors),   cmocka_unit_test(test_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
