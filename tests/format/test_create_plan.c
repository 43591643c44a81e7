/* Unit tests: create geometry planning (pure; no device is touched). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "format/create_plan.h"

static void params(struct clr_create_params *p, int32_t level, uint32_t n)
{
    memset(p, 0, sizeof *p);
    p->level = level;
    p->raid_disks = n;
    p->nodes = 4;
    strcpy(p->cluster_name, "c1");
    strcpy(p->name, "arr");
    for (int i = 0; i < 16; i++)
        p->set_uuid[i] = (uint8_t)(i * 7);
}

static void test_mdadm_worked_example(void **state)
{
    struct clr_create_params p;
    struct clr_create_plan plan;
    struct clr_err e;
    uint64_t sizes[2] = { 2097152, 2097152 };

    (void)state;
    params(&p, 1, 2);
    p.bitmap_chunk_kib = 65536;
    assert_int_equal(clr_create_plan(&p, sizes, 2, &plan, &e), 0);
    /* doc/architecture.md §2.6: what mdadm writes for the same command */
    assert_int_equal(plan.data_offset, 4096);
    assert_int_equal(plan.size, 2093056);
    assert_int_equal(plan.bitmap_bits, 16);
    assert_int_equal(plan.stride_bytes, 4096);
    assert_int_equal(plan.sb.max_dev, 128);
    assert_int_equal(plan.sb.feature_map, 0x101);
    assert_int_equal(plan.sb.bitmap_offset, 8);
    assert_int_equal(plan.sb.chunksize, 0);
    assert_int_equal(plan.bitmap.version, 5);
    assert_int_equal(plan.bitmap.nodes, 4);
    assert_int_equal(plan.bitmap.sync_size, 2093056);

    struct clr_md_sb sb;
    uint8_t du[16] = { 0 };
    clr_create_member_sb(&plan, 1, 2097152, du, &sb);
    assert_int_equal(sb.dev_number, 1);
    assert_int_equal(sb.data_size, 2093056);
    assert_int_equal(sb.dev_roles[1], 1);
    assert_int_equal(sb.dev_roles[2], 0xffff);
}

static void test_regions(void **state)
{
    struct clr_create_params p;
    struct clr_create_plan plan;
    struct clr_err e;
    uint64_t sizes[4] = { 409600, 409600, 409600, 409600 };
    uint8_t *buf;

    (void)state;
    params(&p, 5, 4);
    assert_int_equal(clr_create_plan(&p, sizes, 4, &plan, &e), 0);
    buf = malloc(plan.stride_bytes);
    assert_int_equal(clr_create_bitmap_region(&plan, 0, buf, plan.stride_bytes), 0);
    assert_int_equal(buf[256], 0xff);                   /* needs initial resync */
    assert_int_equal(buf[plan.stride_bytes - 1], 0xff); /* mdadm pads with 0xff */
    assert_int_equal(clr_create_bitmap_region(&plan, 3, buf, plan.stride_bytes), 0);
    assert_int_equal(buf[256], 0);
    assert_int_equal(clr_create_bitmap_region(&plan, 4, buf, plan.stride_bytes), -EINVAL);
    p.assume_clean = true;
    assert_int_equal(clr_create_plan(&p, sizes, 4, &plan, &e), 0);
    assert_int_equal(plan.sb.resync_offset, UINT64_MAX);
    assert_int_equal(clr_create_bitmap_region(&plan, 0, buf, plan.stride_bytes), 0);
    assert_int_equal(buf[256], 0);
    free(buf);
}

static void test_levels(void **state)
{
    struct clr_create_params p;
    struct clr_create_plan plan;
    struct clr_err e;
    uint64_t sizes[8];

    (void)state;
    for (int i = 0; i < 8; i++)
        sizes[i] = 409600 + (uint64_t)i * 2048; /* mixed sizes: smallest wins */
    params(&p, 6, 6);
    p.chunk_kib = 64;
    assert_int_equal(clr_create_plan(&p, sizes, 6, &plan, &e), 0);
    assert_int_equal(plan.sb.layout, 2);
    assert_int_equal(plan.sb.chunksize, 128);
    assert_int_equal(plan.size % 128, 0);
    assert_true(plan.size <= 409600 - plan.data_offset);
    assert_int_equal(plan.array_sectors, plan.size * 4);
    assert_int_equal(plan.sync_sectors, plan.size);

    params(&p, 10, 3);
    assert_int_equal(clr_create_plan(&p, sizes, 3, &plan, &e), 0);
    assert_int_equal(plan.sb.layout, 0x102);
    assert_int_equal(plan.sync_sectors, plan.array_sectors); /* raid10: array size */
    assert_int_equal(plan.array_sectors, plan.size * 3 / 2 / 1024 * 1024);

    /* RAID5/6 for several nodes: clraid's own bit keeps kernel md off */
    params(&p, 5, 3);
    assert_int_equal(clr_create_plan(&p, sizes, 3, &plan, &e), 0);
    assert_int_equal(plan.sb.feature_map, 0x40000101);
    params(&p, 6, 4);
    assert_int_equal(clr_create_plan(&p, sizes, 4, &plan, &e), 0);
    assert_int_equal(plan.sb.feature_map, 0x40000101);
    /* ... and one node stays plain md */
    params(&p, 5, 3);
    p.nodes = 1;
    p.cluster_name[0] = '\0';
    assert_int_equal(clr_create_plan(&p, sizes, 3, &plan, &e), 0);
    assert_int_equal(plan.bitmap.version, 4);
    assert_int_equal(plan.bitmap.nodes, 0);
    assert_int_equal(plan.sb.feature_map, 0x1);
}

static void test_refusals(void **state)
{
    struct clr_create_params p;
    struct clr_create_plan plan;
    struct clr_err e;
    uint64_t sizes[8] = { 409600, 409600, 409600, 409600, 409600, 409600, 409600, 409600 };
    uint64_t tiny[2] = { 409600, 4095 }; /* 2 MiB less a sector */

    (void)state;
    params(&p, 1, 2);
    assert_int_equal(clr_create_plan(&p, tiny, 2, &plan, &e), -ENOSPC);
    assert_non_null(strstr(e.msg, "needs at least"));
    params(&p, 1, 3);
    assert_int_equal(clr_create_plan(&p, sizes, 2, &plan, &e), -EINVAL); /* count */
    params(&p, 1, 1);
    assert_int_equal(clr_create_plan(&p, sizes, 1, &plan, &e), -EINVAL);
    params(&p, 6, 3);
    assert_int_equal(clr_create_plan(&p, sizes, 3, &plan, &e), -EINVAL);
    params(&p, 6, 5);
    p.layout = 0;
    p.layout_set = true;
    assert_int_equal(clr_create_plan(&p, sizes, 5, &plan, &e), -EINVAL);
    params(&p, 5, 4);
    p.chunk_kib = 96;
    assert_int_equal(clr_create_plan(&p, sizes, 4, &plan, &e), -EINVAL);
    params(&p, 5, 4);
    p.bitmap_chunk_kib = 3;
    assert_int_equal(clr_create_plan(&p, sizes, 4, &plan, &e), -EINVAL);
    params(&p, 5, 4);
    p.nodes = 65;
    assert_int_equal(clr_create_plan(&p, sizes, 4, &plan, &e), -EINVAL);
    params(&p, 5, 4);
    p.cluster_name[0] = '\0';
    assert_int_equal(clr_create_plan(&p, sizes, 4, &plan, &e), -EINVAL);
    assert_non_null(strstr(e.msg, "--home-cluster"));
    params(&p, 10, 2);
    p.layout = 0x103;
    p.layout_set = true;
    assert_int_equal(clr_create_plan(&p, sizes, 2, &plan, &e), -EINVAL);
    params(&p, 7, 2);
    assert_int_equal(clr_create_plan(&p, sizes, 2, &plan, &e), -EINVAL);
}

static void test_many_nodes_small_chunk_fit(void **state)
{
    struct clr_create_params p;
    struct clr_create_plan plan;
    struct clr_err e;
    uint64_t sizes[2] = { 64ULL << 21, 64ULL << 21 }; /* 64 GiB */

    (void)state;
    params(&p, 1, 2);
    p.nodes = 32;
    p.bitmap_chunk_kib = 4; /* 16M bits per slot: 2 MiB per region */
    assert_int_equal(clr_create_plan(&p, sizes, 2, &plan, &e), 0);
    assert_true(plan.stride_bytes >= (16ULL << 20) / 8);
    assert_true((8 + 8) * 512 + 32 * plan.stride_bytes <= plan.data_offset * 512);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mdadm_worked_example),
        cmocka_unit_test(test_regions),
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_many_nodes_small_chunk_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
