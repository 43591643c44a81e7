/*
 * Unit tests of the partial-parity log's place and header
 * (engine/format/plog.c).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "format/create_plan.h"
#include "format/plog.h"

static uint8_t buf[CLR_PLOG_HDR_BYTES];
static struct clr_plog_hdr h, out;

/* The CRC is CRC-32C: the check value of "123456789". */
static void test_crc32c(void **state)
{
    (void)state;
    assert_int_equal(clr_crc32c(0, "123456789", 9), 0xe3069283U);
    assert_int_equal(clr_crc32c(0, "", 0), 0);
}

static void sample(void)
{
    memset(&h, 0, sizeof h);
    for (int i = 0; i < 16; i++)
        h.set_uuid[i] = (uint8_t)(0x30 + i);
    h.slot = 2;
    h.gen = 0x0102030405060708ULL;
    h.nentries = 3;
    for (uint32_t i = 0; i < 3; i++) {
        h.e[i].stripe = 1000 + i;
        h.e[i].changed = 0x5ULL << i;
        h.e[i].pp_offset = 8 * i;
        h.e[i].pp_sectors = 8;
        h.e[i].first = i;
    }
}

static void test_roundtrip(void **state)
{
    struct clr_err e;

    (void)state;
    sample();
    assert_int_equal(clr_plog_hdr_encode(&h, buf), 0);
    assert_int_equal(clr_plog_hdr_decode(buf, h.set_uuid, 2, &out, &e), 0);
    assert_memory_equal(out.set_uuid, h.set_uuid, 16);
    assert_int_equal(out.slot, 2);
    assert_true(out.gen == h.gen);
    assert_int_equal(out.nentries, 3);
    assert_memory_equal(out.e, h.e, 3 * sizeof h.e[0]);
    h.nentries = CLR_PLOG_MAX_ENTRIES;
    assert_int_equal(clr_plog_hdr_encode(&h, buf), 0);
    assert_int_equal(clr_plog_hdr_decode(buf, h.set_uuid, 2, &out, &e), 0);
    h.nentries = CLR_PLOG_MAX_ENTRIES + 1;
    assert_int_equal(clr_plog_hdr_encode(&h, buf), -EINVAL);
}

/* Never written, torn, another array's or slot's, a newer version: never
 * taken as this slot's log. */
static void test_refusals(void **state)
{
    struct clr_err e;
    uint8_t other[16] = { 0 };

    (void)state;
    memset(buf, 0, sizeof buf);
    assert_int_equal(clr_plog_hdr_decode(buf, h.set_uuid, 2, &out, &e), -ENODATA);
    sample();
    clr_plog_hdr_encode(&h, buf);
    buf[100] ^= 0x10; /* a torn write: part old, part new */
    assert_int_equal(clr_plog_hdr_decode(buf, h.set_uuid, 2, &out, &e), -EBADMSG);
    /* torn at a sector: the new header's first sector (its checksum)
     * over the old one's second (entry 19 lies past byte 512) */
    {
        static uint8_t old_hdr[CLR_PLOG_HDR_BYTES];

        h.nentries = 20;
        clr_plog_hdr_encode(&h, old_hdr);
        h.gen++;
        h.e[19].stripe = 77;
        clr_plog_hdr_encode(&h, buf);
        memcpy(buf + 512, old_hdr + 512, sizeof buf - 512);
        assert_int_equal(clr_plog_hdr_decode(buf, h.set_uuid, 2, &out, &e), -EBADMSG);
        sample();
    }
    clr_plog_hdr_encode(&h, buf);
    assert_int_equal(clr_plog_hdr_decode(buf, other, 2, &out, &e), -ESTALE);
    assert_int_equal(clr_plog_hdr_decode(buf, h.set_uuid, 1, &out, &e), -ESTALE);
    /* a version we do not know, with a checksum that holds */
    buf[4] = 2;
    buf[8] = buf[9] = buf[10] = buf[11] = 0;
    uint32_t c = clr_crc32c(0, buf, sizeof buf);
    buf[8] = (uint8_t)c, buf[9] = (uint8_t)(c >> 8), buf[10] = (uint8_t)(c >> 16),
    buf[11] = (uint8_t)(c >> 24);
    assert_int_equal(clr_plog_hdr_decode(buf, h.set_uuid, 2, &out, &e), -EPROTO);
}

/* create reserves every slot's log after the bitmaps of a clustered
 * RAID5/6, and only there. */
static void test_layout(void **state)
{
    struct clr_create_params p;
    struct clr_create_plan plan;
    struct clr_plog_layout lay;
    struct clr_err e;
    uint64_t sizes[4] = { 2097152, 2097152, 2097152, 2097152 };

    (void)state;
    memset(&p, 0, sizeof p);
    p.level = 6;
    p.raid_disks = 4;
    p.nodes = 8;
    strcpy(p.cluster_name, "c1");
    strcpy(p.name, "r6");
    assert_int_equal(clr_create_plan(&p, sizes, 4, &plan, &e), 0);
    assert_int_equal(clr_plog_layout(&plan.sb, &plan.bitmap, &lay, &e), 0);
    assert_int_equal(lay.slots, 8);
    assert_int_equal(lay.slot_bytes, CLR_PLOG_SLOT_BYTES);
    assert_int_equal(lay.start % 4096, 0);
    assert_true(lay.start >= clr_bitmap_slot_offset(&plan.sb, &plan.bitmap, 8));
    assert_true(lay.end <= plan.data_offset * 512);
    /* the same array without room for the logs is refused */
    plan.sb.data_offset = lay.end / 512 - 8;
    assert_int_equal(clr_plog_layout(&plan.sb, &plan.bitmap, &lay, &e), -ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_layout),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
