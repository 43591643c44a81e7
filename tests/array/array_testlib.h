/* Helpers shared by the array tests (tests/array/test_array*.c): the seed
 * of rand(), member files in a temporary folder, whole-buffer file I/O,
 * and writing a new array's superblocks and bitmap regions as `clraid
 * create` would.  Include after <cmocka.h>. */
#ifndef CLRAID_TESTS_ARRAY_ARRAY_TESTLIB_H
#define CLRAID_TESTS_ARRAY_ARRAY_TESTLIB_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/create_plan.h"
#include "format/md_sb.h"

#define TL_PATH_MAX 320

/* Seeds rand() (UUIDs, random I/O) with CLRAID_TEST_SEED if set, else with
 * @dflt, and prints the seed so that a failing run can be replayed. */
static void tl_seed(unsigned dflt)
{
    const char *env = getenv("CLRAID_TEST_SEED");
    unsigned seed = dflt;

    if (env && *env) {
        char *end;
        unsigned long v = strtoul(env, &end, 0);

        if (*end || v > 0xffffffffUL) {
            fprintf(stderr, "CLRAID_TEST_SEED=%s: give a number from 0 to 4294967295\n", env);
            exit(2);
        }
        seed = (unsigned)v;
    }
    printf("seed %u (CLRAID_TEST_SEED=%u replays it)\n", seed, seed);
    fflush(stdout);
    srand(seed);
}

/* A fresh folder $TMPDIR/@name.XXXXXX (@base when TMPDIR is unset). */
static void tl_make_dir(char *dir, size_t len, const char *name, const char *base)
{
    const char *env = getenv("TMPDIR");

    snprintf(dir, len, "%s/%s.XXXXXX", env && *env ? env : base, name);
    assert_non_null(mkdtemp(dir));
}

/* @dir/d@i, sparse, @bytes long. */
static void tl_make_file(char *path, const char *dir, unsigned i, uint64_t bytes)
{
    int fd;

    snprintf(path, TL_PATH_MAX, "%s/d%u", dir, i);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)bytes), 0);
    close(fd);
}

static void tl_remove_dir(const char *dir)
{
    char cmd[300];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

static void pwrite_all(const char *path, const void *buf, size_t len, uint64_t off)
{
    int fd = open(path, O_WRONLY);

    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, buf, len, (off_t)off), (ssize_t)len);
    fsync(fd);
    close(fd);
}

static inline void pread_all(const char *path, void *buf, size_t len, uint64_t off)
{
    int fd = open(path, O_RDONLY);

    assert_true(fd >= 0);
    assert_int_equal(pread(fd, buf, len, (off_t)off), (ssize_t)len);
    close(fd);
}

/* Writes the array @p describes onto @path[0..ndev) of @bytes each: every
 * node slot's bitmap region and each member's superblock (random device
 * UUIDs).  @plan (may be NULL) and *@data_offset (sectors, may be NULL)
 * tell the result. */
static void tl_write_members(struct clr_create_params *p, char (*path)[TL_PATH_MAX], unsigned ndev,
                             uint64_t bytes, struct clr_create_plan *plan, uint64_t *data_offset)
{
    struct clr_create_params chk = *p;
    struct clr_create_plan pl;
    uint64_t sizes[64];
    struct clr_err e = { "" };
    uint8_t *region, sbuf[CLR_MD_SB_AREA_BYTES];

    assert_true(ndev <= 64);
    assert_int_equal(clr_create_check_params(&chk, ndev, &e), 0);
    for (unsigned i = 0; i < ndev; i++)
        sizes[i] = bytes / 512;
    if (clr_create_plan(p, sizes, ndev, &pl, &e) != 0)
        fail_msg("plan: %s", e.msg);
    region = malloc(pl.stride_bytes);
    assert_non_null(region);
    for (unsigned i = 0; i < ndev; i++) {
        struct clr_md_sb sb;
        uint8_t du[16];

        for (uint32_t s = 0; s < pl.slots; s++) {
            assert_int_equal(clr_create_bitmap_region(&pl, s, region, pl.stride_bytes), 0);
            pwrite_all(path[i], region, pl.stride_bytes,
                       (pl.sb.super_offset + (uint64_t)pl.sb.bitmap_offset) * 512 + s * pl.stride_bytes);
        }
        for (int k = 0; k < 16; k++)
            du[k] = (uint8_t)rand();
        clr_create_member_sb(&pl, i, bytes / 512, du, &sb);
        if (data_offset)
            *data_offset = sb.data_offset;
        assert_int_equal(clr_md_sb_encode(&sb, sbuf, sizeof sbuf), 0);
        pwrite_all(path[i], sbuf, sizeof sbuf, 4096);
    }
    free(region);
    if (plan)
        *plan = pl;
}

#endif
