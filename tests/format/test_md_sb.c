/* Unit tests: md v1.2 superblock encode/decode and validation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "format/endian.h"
#include "format/md_sb.h"

static uint8_t buf[CLR_MD_SB_AREA_BYTES];
static const uint64_t DEV = 2097152; /* 1 GiB in sectors */

/* A valid 2-disk clustered RAID1 as in doc/architecture.md §2.6. */
static void sample(struct clr_md_sb *sb)
{
    memset(sb, 0, sizeof *sb);
    sb->magic = CLR_MD_MAGIC;
    sb->major_version = 1;
    sb->feature_map = CLR_MD_FEAT_BITMAP_OFFSET | CLR_MD_FEAT_CLUSTERED;
    for (int i = 0; i < 16; i++)
        sb->set_uuid[i] = (uint8_t)(0xa0 + i), sb->device_uuid[i] = (uint8_t)i;
    strcpy(sb->set_name, "r1");
    sb->ctime = 1700000000ULL | (123456ULL << 40);
    sb->utime = sb->ctime + 5;
    sb->level = 1;
    sb->size = 2093056;
    sb->raid_disks = 2;
    sb->bitmap_offset = 8;
    sb->data_offset = 4096;
    sb->data_size = 2093056;
    sb->super_offset = 8;
    sb->events = 42;
    sb->max_dev = 128;
    for (int i = 0; i < 128; i++)
        sb->dev_roles[i] = CLR_MD_ROLE_SPARE;
    sb->dev_roles[0] = 0;
    sb->dev_roles[1] = 1;
    sb->dev_number = 1;
}

static int decode(struct clr_md_sb *out, struct clr_err *e)
{
    return clr_md_sb_decode(buf, sizeof buf, DEV, out, e);
}

/* Re-encodes after a field change so only that field is wrong, not the csum. */
static int reencode_decode(struct clr_md_sb *sb, struct clr_md_sb *out, struct clr_err *e)
{
    assert_int_equal(clr_md_sb_encode(sb, buf, sizeof buf), 0);
    return decode(out, e);
}

static void test_roundtrip_every_field(void **state)
{
    struct clr_md_sb a, b;
    struct clr_err e;

    (void)state;
    sample(&a);
    a.recovery_offset = 77;
    a.cnt_corrected_read = 3;
    a.devflags = 0;
    a.resync_offset = CLR_MD_MAX_SECTOR;
    assert_int_equal(reencode_decode(&a, &b, &e), 0);
    a.sb_csum = b.sb_csum;
    assert_memory_equal(&a, &b, offsetof(struct clr_md_sb, dev_roles) + 2 * a.max_dev);
    /* Byte positions that mdadm relies on. */
    assert_int_equal(clr_get_le32(buf + 0), CLR_MD_MAGIC);
    assert_int_equal(clr_get_le64(buf + 128), 4096);
    assert_int_equal(clr_get_le64(buf + 200), 42);
    assert_int_equal(clr_get_le16(buf + 256 + 2), 1);
    assert_int_equal(clr_get_le16(buf + 256 + 4), 0xffff);
}

static void test_csum_matches_md_algorithm(void **state)
{
    struct clr_md_sb a;
    uint64_t acc = 0;

    (void)state;
    sample(&a);
    a.max_dev = 129; /* odd: exercises the trailing 16-bit word */
    a.dev_roles[128] = CLR_MD_ROLE_SPARE;
    assert_int_equal(clr_md_sb_encode(&a, buf, sizeof buf), 0);
    /* Independent statement of the checksum (doc/architecture.md §2.2) with the csum field zeroed. */
    uint8_t copy[CLR_MD_SB_AREA_BYTES];
    memcpy(copy, buf, sizeof copy);
    memset(copy + 216, 0, 4);
    size_t len = 256 + 2 * 129;
    for (size_t i = 0; i + 4 <= len; i += 4)
        acc += (uint64_t)copy[i] | (uint64_t)copy[i + 1] << 8 | (uint64_t)copy[i + 2] << 16 |
               (uint64_t)copy[i + 3] << 24;
    acc += (uint64_t)copy[len - 2] | (uint64_t)copy[len - 1] << 8;
    uint32_t want = (uint32_t)(acc & 0xffffffff) + (uint32_t)(acc >> 32);
    assert_int_equal(clr_get_le32(buf + 216), want);
}

static void test_zeroed_device(void **state)
{
    struct clr_md_sb b;
    struct clr_err e;

    (void)state;
    memset(buf, 0, sizeof buf);
    assert_int_equal(decode(&b, &e), -ENODATA);
    assert_non_null(strstr(e.msg, "zero"));
}

static void test_wrong_magic(void **state)
{
    struct clr_md_sb a, b;
    struct clr_err e;

    (void)state;
    sample(&a);
    a.magic = 0x12345678;
    assert_int_equal(reencode_decode(&a, &b, &e), -ENODATA);
    assert_non_null(strstr(e.msg, "magic 0x12345678"));
}

static void test_bad_checksum(void **state)
{
    struct clr_md_sb a, b;
    struct clr_err e;

    (void)state;
    sample(&a);
    assert_int_equal(clr_md_sb_encode(&a, buf, sizeof buf), 0);
    buf[100] ^= 0x40;
    assert_int_equal(decode(&b, &e), -EBADMSG);
    assert_non_null(strstr(e.msg, "checksum"));
}

static void test_version_and_features(void **state)
{
    struct clr_md_sb a, b;
    struct clr_err e;

    (void)state;
    sample(&a);
    a.major_version = 0;
    assert_int_equal(reencode_decode(&a, &b, &e), -EPROTO);
    sample(&a);
    a.feature_map |= 0x4000;
    assert_int_equal(reencode_decode(&a, &b, &e), -EPROTO);
    sample(&a);
    a.feature_map |= CLR_MD_FEAT_PPL;
    assert_int_equal(reencode_decode(&a, &b, &e), -EPROTO);
    /* clraid's clustered RAID5/6 bit: on a clustered parity array only */
    sample(&a);
    a.feature_map |= CLR_MD_FEAT_CLRAID_PARITY;
    assert_int_equal(reencode_decode(&a, &b, &e), -EPROTO);
    a.level = 5;
    a.layout = 2;
    a.chunksize = 128;
    assert_int_equal(reencode_decode(&a, &b, &e), 0);
    assert_int_equal(b.feature_map, a.feature_map);
    a.feature_map &= ~CLR_MD_FEAT_CLUSTERED;
    assert_int_equal(reencode_decode(&a, &b, &e), -EPROTO);
    sample(&a);
    a.pad0 = 1;
    assert_int_equal(reencode_decode(&a, &b, &e), -EINVAL);
    sample(&a);
    a.pad3[31] = 1;
    assert_int_equal(reencode_decode(&a, &b, &e), -EINVAL);
}

static void test_offsets_inside_device(void **state)
{
    struct clr_md_sb a, b;
    struct clr_err e;

    (void)state;
    sample(&a);
    a.super_offset = 0;
    assert_int_equal(reencode_decode(&a, &b, &e), -EINVAL);
    sample(&a);
    a.data_offset = DEV + 8;
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    assert_non_null(strstr(e.msg, "past the end"));
    sample(&a);
    a.data_offset = 9; /* inside the superblock */
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    sample(&a);
    a.data_size = DEV; /* a truncated device */
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    assert_non_null(strstr(e.msg, "truncated"));
    sample(&a);
    a.size = a.data_size + 1;
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    sample(&a);
    a.bitmap_offset = 5000; /* bitmap inside the data area */
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    sample(&a);
    a.bitmap_offset = -8;
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    /* Size checks are skipped when the device size is unknown. */
    sample(&a);
    a.data_size = DEV;
    assert_int_equal(clr_md_sb_encode(&a, buf, sizeof buf), 0);
    assert_int_equal(clr_md_sb_decode(buf, sizeof buf, 0, &b, &e), 0);
}

static void test_absurd_counts(void **state)
{
    struct clr_md_sb a, b;
    struct clr_err e;

    (void)state;
    sample(&a);
    a.raid_disks = 100000;
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    sample(&a);
    a.raid_disks = 0;
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    sample(&a);
    a.dev_number = 128;
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    sample(&a);
    a.dev_roles[7] = 5; /* role outside 0..raid_disks-1 */
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    sample(&a);
    a.dev_roles[2] = 0;
    a.dev_roles[3] = 0; /* role 0 claimed three times */
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    /* max_dev beyond md's limit: write the raw field, csum cannot help. */
    sample(&a);
    assert_int_equal(clr_md_sb_encode(&a, buf, sizeof buf), 0);
    clr_put_le32(buf + 220, 5000);
    assert_int_equal(decode(&b, &e), -ERANGE);
    assert_non_null(strstr(e.msg, "max_dev"));
}

static void test_geometry_rules(void **state)
{
    struct clr_md_sb a, b;
    struct clr_err e;

    (void)state;
    sample(&a);
    a.level = 4;
    assert_int_equal(reencode_decode(&a, &b, &e), -EPROTO);
    sample(&a);
    a.level = 5;
    a.raid_disks = 3;
    a.dev_roles[2] = 2;
    a.chunksize = 1024;
    a.layout = 2;
    a.size = 2093056;
    assert_int_equal(reencode_decode(&a, &b, &e), 0);
    a.layout = 6;
    assert_int_equal(reencode_decode(&a, &b, &e), -EINVAL);
    a.layout = 2;
    a.chunksize = 1000;
    assert_int_equal(reencode_decode(&a, &b, &e), -EINVAL);
    a.chunksize = 1024;
    a.level = 6;
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE); /* 3 disks */
    a.level = 10;
    a.layout = 0x102;
    assert_int_equal(reencode_decode(&a, &b, &e), 0);
    a.layout = 0x104; /* 4 copies on 3 disks */
    assert_int_equal(reencode_decode(&a, &b, &e), -ERANGE);
    a.layout = 0x80102; /* unknown bit 19 */
    assert_int_equal(reencode_decode(&a, &b, &e), -EINVAL);
}

static void test_array_sectors(void **state)
{
    (void)state;
    assert_int_equal(clr_md_array_sectors(1, 0, 2, 1000, 0), 1000);
    assert_int_equal(clr_md_array_sectors(5, 2, 5, 1024, 128), 4096);
    assert_int_equal(clr_md_array_sectors(6, 2, 6, 1024, 128), 4096);
    /* raid10 n2 on 3 disks: 10 chunks each -> 30 chunk-copies / 2 = 15. */
    assert_int_equal(clr_md_array_sectors(10, 0x102, 3, 1280, 128), 15 * 128);
    /* f2 on 4 disks: 10/2*4/1 = 20 chunks. */
    assert_int_equal(clr_md_array_sectors(10, 0x201, 4, 1280, 128), 20 * 128);
    /* partial chunks are not counted */
    assert_int_equal(clr_md_array_sectors(10, 0x102, 2, 1300, 128), 10 * 128);
}

static void test_level_and_layout_names(void **state)
{
    int32_t level;
    uint32_t layout;
    char name[48];

    (void)state;
    assert_int_equal(clr_md_level_parse("raid6", &level), 0);
    assert_int_equal(level, 6);
    assert_int_equal(clr_md_level_parse("10", &level), 0);
    assert_int_equal(level, 10);
    assert_int_equal(clr_md_level_parse("0", &level), -EINVAL);
    assert_int_equal(clr_md_level_parse("raid", &level), -EINVAL);
    assert_int_equal(clr_md_level_parse("5x", &level), -EINVAL);
    assert_int_equal(clr_md_layout_parse(5, "ra", &layout), 0);
    assert_int_equal(layout, 1);
    assert_int_equal(clr_md_layout_parse(5, "parity-last", &layout), 0);
    assert_int_equal(layout, 5);
    assert_int_equal(clr_md_layout_parse(10, "f2", &layout), 0);
    assert_int_equal(layout, 0x201);
    assert_int_equal(clr_md_layout_parse(10, "o3", &layout), 0);
    assert_int_equal(layout, 0x10301);
    assert_int_equal(clr_md_layout_parse(10, "n2", &layout), 0);
    assert_int_equal(layout, 0x102);
    assert_int_equal(clr_md_layout_parse(10, "x2", &layout), -EINVAL);
    assert_int_equal(clr_md_layout_parse(10, "n", &layout), -EINVAL);
    assert_int_equal(clr_md_layout_parse(5, "n2", &layout), -EINVAL);
    clr_md_layout_name(10, 0x10201, name, sizeof name);
    assert_string_equal(name, "offset=2");
    clr_md_layout_name(10, 0x102, name, sizeof name);
    assert_string_equal(name, "near=2");
    clr_md_layout_name(6, 2, name, sizeof name);
    assert_string_equal(name, "left-symmetric");
}

static void test_uuid_formats(void **state)
{
    uint8_t u[16], v[16];
    char m[36], d[37];

    (void)state;
    for (int i = 0; i < 16; i++)
        u[i] = (uint8_t)(0xa1 + i * 3);
    clr_uuid_format_mdadm(u, m);
    clr_uuid_format_dashed(u, d);
    assert_string_equal(m, "a1a4a7aa:adb0b3b6:b9bcbfc2:c5c8cbce");
    assert_string_equal(d, "a1a4a7aa-adb0-b3b6-b9bc-bfc2c5c8cbce");
    assert_int_equal(clr_uuid_parse(m, v), 0);
    assert_memory_equal(u, v, 16);
    assert_int_equal(clr_uuid_parse(d, v), 0);
    assert_memory_equal(u, v, 16);
    assert_int_equal(clr_uuid_parse("a1a4", v), -EINVAL);
    assert_int_equal(clr_uuid_parse("zz", v), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_field),  cmocka_unit_test(test_csum_matches_md_algorithm),
        cmocka_unit_test(test_zeroed_device),          cmocka_unit_test(test_wrong_magic),
        cmocka_unit_test(test_bad_checksum),           cmocka_unit_test(test_version_and_features),
        cmocka_unit_test(test_offsets_inside_device),  cmocka_unit_test(test_absurd_counts),
        cmocka_unit_test(test_geometry_rules),         cmocka_unit_test(test_array_sectors),
        cmocka_unit_test(test_level_and_layout_names), cmocka_unit_test(test_uuid_formats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
