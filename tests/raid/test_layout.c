/* Unit tests for engine/raid/layout.c: md's layout rules as hand-worked
 * tables for small arrays, and exhaustive properties (map/unmap round
 * trip, no physical location used twice, every used sector of a parity
 * array is exactly one of data/P/Q) over every sector of small
 * geometries of every level and layout. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raid/layout.h"

static void geom(struct clr_raid_geom *g, int level, uint32_t layout, uint32_t chunk, uint32_t disks,
                 uint64_t dev)
{
    struct clr_err e = { { 0 } };
    int rc = clr_raid_geom_init(g, level, layout, chunk, disks, dev, &e);

    if (rc)
        fail_msg("geom level %d layout 0x%x chunk %u disks %u: %s", level, layout, chunk, disks, e.msg);
}

/* ------------------------------------------------------------------ */
/* Validation                                                         */
/* ------------------------------------------------------------------ */

static void expect_invalid(int level, uint32_t layout, uint32_t chunk, uint32_t disks, uint64_t dev, int want)
{
    struct clr_raid_geom g;
    struct clr_err e = { { 0 } };

    assert_int_equal(clr_raid_geom_init(&g, level, layout, chunk, disks, dev, &e), want);
    assert_true(strlen(e.msg) > 10);
    assert_null(g.pers);
}

static void test_validation(void **state)
{
    (void)state;
    expect_invalid(0, 0, 128, 2, 1024, -EOPNOTSUPP);
    expect_invalid(4, 0, 128, 3, 1024, -EOPNOTSUPP);
    expect_invalid(5, 8, 128, 4, 1024, -EINVAL); /* DDF is RAID6 only */
    expect_invalid(5, 6, 128, 4, 1024, -EINVAL);
    expect_invalid(6, 7, 128, 4, 1024, -EINVAL);
    expect_invalid(6, 21, 128, 4, 1024, -EINVAL);
    expect_invalid(6, 2, 128, 3, 1024, -EINVAL); /* < 4 members */
    expect_invalid(5, 2, 128, 1, 1024, -EINVAL);
    expect_invalid(5, 2, 12, 4, 1024, -EINVAL);       /* chunk not 2^n */
    expect_invalid(5, 2, 4, 4, 1024, -EINVAL);        /* chunk < 4 KiB */
    expect_invalid(5, 2, 128, 4, 100, -EINVAL);       /* < one chunk */
    expect_invalid(10, 0x102, 128, 1, 1024, -EINVAL); /* 2 copies, 1 disk */
    expect_invalid(10, 0x103, 128, 2, 1024, -EINVAL); /* 3 copies, 2 disks */
    expect_invalid(10, 0x101, 128, 2, 1024, -EINVAL); /* 1 copy */
    expect_invalid(10, 0x202, 128, 3, 1024, -EINVAL); /* 4 copies, 3 disks */
    expect_invalid(10, 0x102 | (1U << 19), 128, 4, 1024, -EINVAL);
    expect_invalid(10, 0x102 | (3U << 17), 128, 4, 1024, -EINVAL);
    expect_invalid(10, 0x202 | (1U << 17), 128, 4, 1024, -EINVAL); /* buggy variant */
    expect_invalid(10, 0x102, 96, 4, 1024, -EINVAL);
    expect_invalid(10, 0x10202, 128, 5, 1024, -EINVAL); /* md overlaps copies */
    expect_invalid(10, 0x102, 128, 4, 64, -EINVAL);     /* too small */
    expect_invalid(1, 0, 0, 0, 1024, -EINVAL);
    expect_invalid(1, 0, 0, 2, 0, -EINVAL);
    expect_invalid(1, 0, 0, CLR_RAID_MAX_DISKS + 1, 1024, -EINVAL);

    struct clr_raid_geom g;

    assert_int_equal(clr_raid_geom_init(&g, 1, 0, 0, 2, 1000, NULL), 0);
    assert_string_equal(g.pers->name, "raid1");
    assert_int_equal(clr_raid_geom_init(&g, 6, 2, 128, 4, 1024, NULL), 0);
    assert_string_equal(g.pers->name, "raid6");
    assert_int_equal(g.data_disks, 2);
    assert_null(clr_raid_personality_find(0));
    assert_int_equal(clr_raid_personality_find(10)->level, 10);
    assert_string_equal(clr_raid_algo_name(2), "left-symmetric");
    assert_null(clr_raid_algo_name(7));
}

/* ------------------------------------------------------------------ */
/* Sizes                                                              */
/* ------------------------------------------------------------------ */

static void test_sizes(void **state)
{
    struct clr_raid_geom g;

    (void)state;
    geom(&g, 1, 0, 64, 3, 2093056);
    assert_int_equal(g.array_sectors, 2093056);
    assert_int_equal(g.chunk_sectors, 0);

    /* RAID5/6: member size rounded down to a chunk, times data disks. */
    geom(&g, 5, 2, 128, 5, 1000);
    assert_int_equal(g.used_dev_sectors, 896);
    assert_int_equal(g.array_sectors, 896 * 4);
    geom(&g, 6, 2, 128, 6, 1024);
    assert_int_equal(g.array_sectors, 1024 * 4);

    /* RAID10, md's raid10_size: chunks / far * disks / near. */
    geom(&g, 10, 0x102, 8, 3, 69); /* 8 chunks -> 8*3/2 = 12 */
    assert_int_equal(g.array_sectors, 12 * 8);
    assert_int_equal(clr_raid10_size(&g, 69), 12 * 8);
    assert_int_equal(g.used_dev_sectors, 64);
    geom(&g, 10, 0x102, 8, 3, 7 * 8); /* 7*3/2 = 10 (rounded down) */
    assert_int_equal(g.array_sectors, 10 * 8);
    assert_int_equal(g.used_dev_sectors, 7 * 8); /* ceil(10*2/3) = 7 */
    geom(&g, 10, 0x201, 8, 4, 64);               /* f2: 8/2*4 = 16 chunks */
    assert_int_equal(g.array_sectors, 16 * 8);
    assert_int_equal(g.stride, 32);
    geom(&g, 10, 0x201, 8, 3, 72); /* f2: 9/2*3 = 12 chunks */
    assert_int_equal(g.array_sectors, 12 * 8);
    assert_int_equal(g.used_dev_sectors, 64);
    assert_int_equal(g.stride, 32);
    geom(&g, 10, 0x10201, 8, 4, 64); /* o2 */
    assert_int_equal(g.array_sectors, 16 * 8);
    assert_int_equal(g.stride, 8);
    geom(&g, 10, 0x302, 8, 6, 30 * 8); /* n2 f3: 30/3*6/2 = 30 */
    assert_int_equal(g.array_sectors, 30 * 8);
    assert_int_equal(g.copies, 6);
}

/* ------------------------------------------------------------------ */
/* RAID5/6 hand-worked tables                                         */
/* ------------------------------------------------------------------ */

struct stripe_row {
    uint32_t pd, qd;
    uint32_t data[8];
};

static void check_rows(int level, uint32_t layout, uint32_t disks, const struct stripe_row *rows,
                       unsigned nrows)
{
    struct clr_raid_geom g;
    struct clr_raid_stripe st;
    struct clr_raid_extent x;

    geom(&g, level, layout, 8, disks, 8 * 64);
    for (unsigned s = 0; s < nrows; s++) {
        assert_int_equal(clr_raid_stripe_roles(&g, s, &st), 0);
        assert_int_equal(st.pd, rows[s].pd);
        assert_int_equal(st.qd, level == 6 ? rows[s].qd : CLR_RAID_NO_DISK);
        assert_int_equal(st.ndata, g.data_disks);
        assert_int_equal(clr_raid_stripe_block(&st, rows[s].pd), g.data_disks);
        if (level == 5 && disks < CLR_RAID_MAX_DISKS)
            assert_int_equal(clr_raid_stripe_block(&st, disks), -ENOENT);
        for (unsigned k = 0; k < g.data_disks; k++) {
            assert_int_equal(st.data_disk[k], rows[s].data[k]);
            assert_int_equal(clr_raid_stripe_block(&st, rows[s].data[k]), k);
            /* the sector-level map agrees with the stripe table */
            uint64_t ls = ((uint64_t)s * g.data_disks + k) * 8 + 3;

            assert_int_equal(clr_raid_map(&g, ls, &x), 0);
            assert_int_equal(x.copy[0].disk, rows[s].data[k]);
            assert_int_equal(x.copy[0].sector, (uint64_t)s * 8 + 3);
            assert_int_equal(x.stripe, s);
            assert_int_equal(x.data_index, k);
            assert_int_equal(x.run, 5);
        }
    }
}

#define ROWS(...)  ((const struct stripe_row[]){ __VA_ARGS__ })
#define NROWS(...) (sizeof(ROWS(__VA_ARGS__)) / sizeof(struct stripe_row))
#define CHECK(level, layout, disks, ...)                                                                     \
    check_rows(level, layout, disks, ROWS(__VA_ARGS__), NROWS(__VA_ARGS__))

static void test_raid5_tables(void **state)
{
    (void)state;
    /* 5 disks: P rotates 4,3,2,1,0; data fills after P, wrapping */
    CHECK(5, CLR_RAID_ALGO_LEFT_SYMMETRIC, 5, { 4, 0, { 0, 1, 2, 3 } }, { 3, 0, { 4, 0, 1, 2 } },
          { 2, 0, { 3, 4, 0, 1 } }, { 1, 0, { 2, 3, 4, 0 } }, { 0, 0, { 1, 2, 3, 4 } },
          { 4, 0, { 0, 1, 2, 3 } });
    /* P rotates 4..0; data in disk order, skipping P */
    CHECK(5, CLR_RAID_ALGO_LEFT_ASYMMETRIC, 5, { 4, 0, { 0, 1, 2, 3 } }, { 3, 0, { 0, 1, 2, 4 } },
          { 2, 0, { 0, 1, 3, 4 } }, { 1, 0, { 0, 2, 3, 4 } }, { 0, 0, { 1, 2, 3, 4 } },
          { 4, 0, { 0, 1, 2, 3 } });
    /* P rotates 0..4; data in disk order, skipping P */
    CHECK(5, CLR_RAID_ALGO_RIGHT_ASYMMETRIC, 5, { 0, 0, { 1, 2, 3, 4 } }, { 1, 0, { 0, 2, 3, 4 } },
          { 2, 0, { 0, 1, 3, 4 } }, { 3, 0, { 0, 1, 2, 4 } }, { 4, 0, { 0, 1, 2, 3 } },
          { 0, 0, { 1, 2, 3, 4 } });
    /* P rotates 0..4; data fills after P, wrapping */
    CHECK(5, CLR_RAID_ALGO_RIGHT_SYMMETRIC, 5, { 0, 0, { 1, 2, 3, 4 } }, { 1, 0, { 2, 3, 4, 0 } },
          { 2, 0, { 3, 4, 0, 1 } }, { 3, 0, { 4, 0, 1, 2 } }, { 4, 0, { 0, 1, 2, 3 } });
    CHECK(5, CLR_RAID_ALGO_PARITY_0, 5, { 0, 0, { 1, 2, 3, 4 } }, { 0, 0, { 1, 2, 3, 4 } },
          { 0, 0, { 1, 2, 3, 4 } });
    CHECK(5, CLR_RAID_ALGO_PARITY_N, 5, { 4, 0, { 0, 1, 2, 3 } }, { 4, 0, { 0, 1, 2, 3 } },
          { 4, 0, { 0, 1, 2, 3 } });
    /* 3 disks, the smallest striped case */
    CHECK(5, CLR_RAID_ALGO_LEFT_SYMMETRIC, 3, { 2, 0, { 0, 1 } }, { 1, 0, { 2, 0 } }, { 0, 0, { 1, 2 } });
    /* 2 disks: a mirror in RAID5 clothing */
    CHECK(5, CLR_RAID_ALGO_LEFT_SYMMETRIC, 2, { 1, 0, { 0 } }, { 0, 0, { 1 } }, { 1, 0, { 0 } });
}

static void test_raid6_tables(void **state)
{
    (void)state;
    /* md's default: P rotates n-1..0, Q right after P, data after Q */
    CHECK(6, CLR_RAID_ALGO_LEFT_SYMMETRIC, 4, { 3, 0, { 1, 2 } }, { 2, 3, { 0, 1 } }, { 1, 2, { 3, 0 } },
          { 0, 1, { 2, 3 } }, { 3, 0, { 1, 2 } });
    CHECK(6, CLR_RAID_ALGO_LEFT_SYMMETRIC, 6, { 5, 0, { 1, 2, 3, 4 } }, { 4, 5, { 0, 1, 2, 3 } },
          { 3, 4, { 5, 0, 1, 2 } }, { 2, 3, { 4, 5, 0, 1 } });
    CHECK(6, CLR_RAID_ALGO_LEFT_ASYMMETRIC, 5, { 4, 0, { 1, 2, 3 } }, { 3, 4, { 0, 1, 2 } },
          { 2, 3, { 0, 1, 4 } }, { 1, 2, { 0, 3, 4 } }, { 0, 1, { 2, 3, 4 } });
    CHECK(6, CLR_RAID_ALGO_RIGHT_SYMMETRIC, 5, { 0, 1, { 2, 3, 4 } }, { 1, 2, { 3, 4, 0 } },
          { 2, 3, { 4, 0, 1 } }, { 3, 4, { 0, 1, 2 } }, { 4, 0, { 1, 2, 3 } });
    CHECK(6, CLR_RAID_ALGO_PARITY_0, 5, { 0, 1, { 2, 3, 4 } }, { 0, 1, { 2, 3, 4 } });
    CHECK(6, CLR_RAID_ALGO_PARITY_N, 5, { 3, 4, { 0, 1, 2 } }, { 3, 4, { 0, 1, 2 } });
    /* RAID5 left-symmetric on disks 0..3, Q fixed on disk 4 */
    CHECK(6, CLR_RAID_ALGO_LEFT_SYMMETRIC_6, 5, { 3, 4, { 0, 1, 2 } }, { 2, 4, { 3, 0, 1 } },
          { 1, 4, { 2, 3, 0 } }, { 0, 4, { 1, 2, 3 } }, { 3, 4, { 0, 1, 2 } });
    CHECK(6, CLR_RAID_ALGO_PARITY_0_6, 5, { 0, 4, { 1, 2, 3 } });
    /* DDF N-continue: P rotates n-1..0, Q just before P, data after P */
    CHECK(6, CLR_RAID_ALGO_ROTATING_N_CONTINUE, 5, { 4, 3, { 0, 1, 2 } }, { 3, 2, { 4, 0, 1 } },
          { 2, 1, { 3, 4, 0 } }, { 1, 0, { 2, 3, 4 } }, { 0, 4, { 1, 2, 3 } });
    /* DDF zero-restart: P rotates 0.., Q after P, data in disk order */
    CHECK(6, CLR_RAID_ALGO_ROTATING_ZERO_RESTART, 5, { 0, 1, { 2, 3, 4 } }, { 1, 2, { 0, 3, 4 } },
          { 2, 3, { 0, 1, 4 } }, { 3, 4, { 0, 1, 2 } }, { 4, 0, { 1, 2, 3 } });
    /* DDF N-restart: P starts on n-2 */
    CHECK(6, CLR_RAID_ALGO_ROTATING_N_RESTART, 5, { 3, 4, { 0, 1, 2 } }, { 2, 3, { 0, 1, 4 } });
}

/* md's syndrome order, restated independently: md walks the members from
 * raid6_d0 (just after Q, or disk 0 when Q is last; disk 0 for DDF) and
 * numbers the data members as met (DDF: numbers every member). */
static void test_raid6_qexp(void **state)
{
    static const uint32_t algos[] = { 0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20 };
    struct clr_raid_geom g;
    struct clr_raid_stripe st;

    (void)state;
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
        for (uint32_t n = 4; n <= 9; n++) {
            bool ddf = algos[a] >= 8 && algos[a] <= 10;

            geom(&g, 6, algos[a], 8, n, 8 * 40);
            for (uint64_t s = 0; s < 2 * n; s++) {
                int slot_of[CLR_RAID_MAX_DISKS];
                int count = 0;

                assert_int_equal(clr_raid_stripe_roles(&g, s, &st), 0);
                uint32_t d0 = ddf ? 0 : (st.qd == n - 1 ? 0 : st.qd + 1);

                for (uint32_t j = 0, d = d0; j < n; j++, d = (d + 1) % n) {
                    int slot = count;

                    if (ddf)
                        count++;
                    if (d == st.pd || d == st.qd)
                        continue;
                    if (!ddf)
                        count++;
                    slot_of[d] = slot;
                }
                for (uint32_t k = 0; k < st.ndata; k++)
                    assert_int_equal(st.qexp[k], slot_of[st.data_disk[k]]);
            }
        }
    }

    /* left-symmetric: the syndrome order is the logical order */
    geom(&g, 6, 2, 8, 7, 8 * 40);
    for (uint64_t s = 0; s < 14; s++) {
        clr_raid_stripe_roles(&g, s, &st);
        for (uint32_t k = 0; k < st.ndata; k++)
            assert_int_equal(st.qexp[k], k);
    }
    /* left-asymmetric, 5 disks, stripe 2: P=2 Q=3, data on 0,1,4; md
     * starts the syndrome at disk 4, so Q = g^1 D0 + g^2 D1 + g^0 D2 */
    geom(&g, 6, 0, 8, 5, 8 * 40);
    clr_raid_stripe_roles(&g, 2, &st);
    assert_int_equal(st.qexp[0], 1);
    assert_int_equal(st.qexp[1], 2);
    assert_int_equal(st.qexp[2], 0);
}

/* ------------------------------------------------------------------ */
/* RAID10 hand-worked tables                                          */
/* ------------------------------------------------------------------ */

struct copies_row {
    uint64_t chunk;
    uint32_t n;
    struct clr_raid_loc c[4]; /* device sectors in chunks (x8) */
};

static void check_copies(uint32_t layout, uint32_t disks, uint64_t dev, const struct copies_row *rows,
                         unsigned nrows)
{
    struct clr_raid_geom g;
    struct clr_raid_extent x;

    geom(&g, 10, layout, 8, disks, dev);
    for (unsigned r = 0; r < nrows; r++) {
        assert_int_equal(clr_raid_map(&g, rows[r].chunk * 8 + 5, &x), 0);
        assert_int_equal(x.ncopies, rows[r].n);
        assert_int_equal(x.run, 3);
        for (unsigned i = 0; i < rows[r].n; i++) {
            if (x.copy[i].disk != rows[r].c[i].disk || x.copy[i].sector != rows[r].c[i].sector * 8 + 5)
                fail_msg("layout 0x%x disks %u chunk %llu copy %u: got (%u, %llu) "
                         "want (%u, %llu)",
                         layout, disks, (unsigned long long)rows[r].chunk, i, x.copy[i].disk,
                         (unsigned long long)x.copy[i].sector, rows[r].c[i].disk,
                         (unsigned long long)rows[r].c[i].sector * 8 + 5);
        }
    }
}

#define CROWS(...)  ((const struct copies_row[]){ __VA_ARGS__ })
#define NCROWS(...) (sizeof(CROWS(__VA_ARGS__)) / sizeof(struct copies_row))
#define CCHECK(layout, disks, dev, ...)                                                                      \
    check_copies(layout, disks, dev, CROWS(__VA_ARGS__), NCROWS(__VA_ARGS__))

static void test_raid10_tables(void **state)
{
    (void)state;
    /* n2, 4 disks: pairs (0,1) (2,3), rows advance every 2 chunks */
    CCHECK(0x102, 4, 64, { 0, 2, { { 0, 0 }, { 1, 0 } } }, { 1, 2, { { 2, 0 }, { 3, 0 } } },
           { 2, 2, { { 0, 1 }, { 1, 1 } } }, { 3, 2, { { 2, 1 }, { 3, 1 } } },
           { 15, 2, { { 2, 7 }, { 3, 7 } } });
    /* n2, 3 disks: a chunk's second copy wraps to disk 0 of the next row */
    CCHECK(0x102, 3, 64, { 0, 2, { { 0, 0 }, { 1, 0 } } }, { 1, 2, { { 2, 0 }, { 0, 1 } } },
           { 2, 2, { { 1, 1 }, { 2, 1 } } }, { 3, 2, { { 0, 2 }, { 1, 2 } } },
           { 11, 2, { { 1, 7 }, { 2, 7 } } });
    /* n3, 3 disks = a 3-way mirror */
    CCHECK(0x103, 3, 64, { 5, 3, { { 0, 5 }, { 1, 5 }, { 2, 5 } } });
    /* f2, 4 disks: raid0 in the first half, shifted by one disk in the
     * second half (stride 4 chunks) */
    CCHECK(0x201, 4, 64, { 0, 2, { { 0, 0 }, { 1, 4 } } }, { 1, 2, { { 1, 0 }, { 2, 4 } } },
           { 3, 2, { { 3, 0 }, { 0, 4 } } }, { 4, 2, { { 0, 1 }, { 1, 5 } } },
           { 15, 2, { { 3, 3 }, { 0, 7 } } });
    /* f2, 3 disks */
    CCHECK(0x201, 3, 64, { 0, 2, { { 0, 0 }, { 1, 4 } } }, { 2, 2, { { 2, 0 }, { 0, 4 } } },
           { 3, 2, { { 0, 1 }, { 1, 5 } } }, { 11, 2, { { 2, 3 }, { 0, 7 } } });
    /* o2, 4 disks: the copy sits in the next chunk row, shifted by one */
    CCHECK(0x10201, 4, 64, { 0, 2, { { 0, 0 }, { 1, 1 } } }, { 1, 2, { { 1, 0 }, { 2, 1 } } },
           { 3, 2, { { 3, 0 }, { 0, 1 } } }, { 4, 2, { { 0, 2 }, { 1, 3 } } });
    /* o2, 3 disks */
    CCHECK(0x10201, 3, 64, { 0, 2, { { 0, 0 }, { 1, 1 } } }, { 2, 2, { { 2, 0 }, { 0, 1 } } },
           { 3, 2, { { 0, 2 }, { 1, 3 } } });
    /* n2 f2 on 4 disks: near pair, far pair shifted by near_copies */
    CCHECK(0x202, 4, 64, { 0, 4, { { 0, 0 }, { 2, 4 }, { 1, 0 }, { 3, 4 } } },
           { 1, 4, { { 2, 0 }, { 0, 4 }, { 3, 0 }, { 1, 4 } } });
    /* f2 on 5 disks, far-set variant 2 (sets of near*far = 2 disks; the
     * last set takes the odd disk: {0,1} {2,3,4}) */
    CCHECK(0x201 | (2U << 17), 5, 64, { 0, 2, { { 0, 0 }, { 1, 4 } } }, { 1, 2, { { 1, 0 }, { 0, 4 } } },
           { 2, 2, { { 2, 0 }, { 3, 4 } } }, { 3, 2, { { 3, 0 }, { 4, 4 } } },
           { 4, 2, { { 4, 0 }, { 2, 4 } } });
    /* variant 0 on 5 disks: one set, plain rotation */
    CCHECK(0x201, 5, 64, { 4, 2, { { 4, 0 }, { 0, 4 } } });
    /* variant 1 (n/fc per set) on 4 disks: sets {0,1} {2,3} */
    CCHECK(0x201 | (1U << 17), 4, 64, { 0, 2, { { 0, 0 }, { 1, 4 } } }, { 1, 2, { { 1, 0 }, { 0, 4 } } },
           { 3, 2, { { 3, 0 }, { 2, 4 } } });
}

/* ------------------------------------------------------------------ */
/* Exhaustive properties                                              */
/* ------------------------------------------------------------------ */

/* Maps every logical sector and checks: copies on distinct disks, inside
 * the used area, each physical location used once, and unmap inverts.
 * Then walks every physical sector: unmap agrees with what the forward
 * pass found (data), and for parity levels everything else in the used
 * area is P or Q with the right count. */
static void check_exhaustive(const struct clr_raid_geom *g)
{
    uint64_t used = g->used_dev_sectors, n = g->raid_disks;
    uint64_t *owner = calloc(n * used, sizeof *owner); /* lsector + 1 */
    struct clr_raid_extent x;
    struct clr_raid_phys p;
    uint64_t hits = 0, np = 0, nq = 0, unused = 0;

    assert_non_null(owner);
    for (uint64_t ls = 0; ls < g->array_sectors; ls++) {
        assert_int_equal(clr_raid_map(g, ls, &x), 0);
        assert_int_equal(x.ncopies, g->copies);
        assert_true(x.run >= 1 && ls + x.run <= g->array_sectors);
        for (uint32_t i = 0; i < x.ncopies; i++) {
            struct clr_raid_loc *c = &x.copy[i];

            assert_true(c->disk < n);
            assert_true(c->sector < used);
            for (uint32_t j = 0; j < i; j++)
                assert_int_not_equal(x.copy[j].disk, c->disk);
            if (owner[c->disk * used + c->sector])
                fail_msg("level %d layout 0x%x: (%u, %llu) holds both %llu and %llu", g->level, g->layout,
                         c->disk, (unsigned long long)c->sector,
                         (unsigned long long)owner[c->disk * used + c->sector] - 1, (unsigned long long)ls);
            owner[c->disk * used + c->sector] = ls + 1;
            hits++;
            assert_int_equal(clr_raid_unmap(g, c->disk, c->sector, &p), 0);
            assert_int_equal(p.role, CLR_RAID_ROLE_DATA);
            assert_int_equal(p.lsector, ls);
        }
        /* the run really is contiguous on every copy */
        if (x.run > 1) {
            struct clr_raid_extent y;

            assert_int_equal(clr_raid_map(g, ls + x.run - 1, &y), 0);
            for (uint32_t i = 0; i < x.ncopies; i++) {
                assert_int_equal(y.copy[i].disk, x.copy[i].disk);
                assert_int_equal(y.copy[i].sector, x.copy[i].sector + x.run - 1);
            }
        }
    }
    assert_int_equal(hits, g->array_sectors * g->copies);
    assert_int_equal(clr_raid_map(g, g->array_sectors, &x), -ERANGE);

    for (uint32_t d = 0; d < n; d++) {
        for (uint64_t s = 0; s < used + 3; s++) {
            assert_int_equal(clr_raid_unmap(g, d, s, &p), 0);
            if (s < used && owner[d * used + s]) {
                assert_int_equal(p.role, CLR_RAID_ROLE_DATA);
                if (g->pers->has_parity) {
                    struct clr_raid_stripe st;

                    clr_raid_stripe_roles(g, p.stripe, &st);
                    assert_int_equal(clr_raid_stripe_block(&st, d), p.data_index);
                }
                continue;
            }
            if (p.role == CLR_RAID_ROLE_DATA)
                fail_msg("level %d layout 0x%x: (%u, %llu) unmaps to data %llu "
                         "but nothing maps there",
                         g->level, g->layout, d, (unsigned long long)s, (unsigned long long)p.lsector);
            np += p.role == CLR_RAID_ROLE_P;
            nq += p.role == CLR_RAID_ROLE_Q;
            unused += p.role == CLR_RAID_ROLE_UNUSED;
            if (p.role == CLR_RAID_ROLE_P || p.role == CLR_RAID_ROLE_Q) {
                struct clr_raid_stripe st;

                assert_true(s < used);
                clr_raid_stripe_roles(g, s / g->chunk_sectors, &st);
                assert_int_equal(p.role == CLR_RAID_ROLE_P ? st.pd : st.qd, d);
                assert_int_equal(clr_raid_stripe_block(&st, d), st.ndata + (p.role == CLR_RAID_ROLE_Q));
            }
        }
    }
    assert_int_equal(clr_raid_unmap(g, (uint32_t)n, 0, &p), -EINVAL);
    if (g->pers->has_parity) {
        /* bijection: every used sector is exactly one of data/P/Q */
        uint64_t rows = used;

        assert_int_equal(np, rows);
        assert_int_equal(nq, g->level == 6 ? rows : 0);
        assert_int_equal(hits + np + nq, n * used);
        assert_int_equal(unused, n * 3);
    } else {
        assert_int_equal(np + nq, 0);
        assert_int_equal(hits + unused, n * (used + 3));
    }
    free(owner);
}

static void test_exhaustive_raid56(void **state)
{
    static const uint32_t algos5[] = { 0, 1, 2, 3, 4, 5 };
    static const uint32_t algos6[] = { 0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20 };
    struct clr_raid_geom g;

    (void)state;
    for (size_t a = 0; a < 6; a++)
        for (uint32_t n = 2; n <= 7; n++) {
            /* 2n+1 stripes and a ragged tail that must go unused */
            geom(&g, 5, algos5[a], 8, n, 8 * (2 * n + 1) + 5);
            check_exhaustive(&g);
        }
    for (size_t a = 0; a < sizeof algos6 / sizeof algos6[0]; a++)
        for (uint32_t n = 4; n <= 8; n++) {
            geom(&g, 6, algos6[a], 8, n, 8 * (2 * n + 1) + 5);
            check_exhaustive(&g);
        }
}

static void test_exhaustive_raid10(void **state)
{
    struct clr_raid_geom g;
    unsigned checked = 0;

    (void)state;
    for (uint32_t n = 2; n <= 8; n++) {
        for (uint32_t nc = 1; nc <= 4; nc++) {
            for (uint32_t fc = 1; fc <= 4; fc++) {
                if (nc * fc < 2 || nc * fc > n)
                    continue;
                for (uint32_t variant = 0; variant <= 2; variant++) {
                    for (int offset = 0; offset <= 1; offset++) {
                        uint32_t layout = CLR_RAID10_LAYOUT(nc, fc, offset) | variant << 17;

                        if (variant == 1 && fc > 1 && n / fc < nc * fc)
                            continue; /* refused, see test_validation */
                        if (offset && fc > 1 && nc > 1 && n % nc)
                            continue; /* refused, see test_validation */
                        /* several member sizes, to hit ragged ends */
                        for (uint64_t dc = 4; dc <= 13; dc += 3) {
                            geom(&g, 10, layout, 8, n, dc * 8 + 3);
                            check_exhaustive(&g);
                            checked++;
                        }
                    }
                }
            }
        }
    }
    assert_true(checked > 500);
}

static void test_exhaustive_raid1(void **state)
{
    struct clr_raid_geom g;

    (void)state;
    for (uint32_t n = 1; n <= 4; n++) {
        geom(&g, 1, 0, 0, n, 77);
        check_exhaustive(&g);
    }
}

/* ------------------------------------------------------------------ */
/* Stripes, pieces, redundancy                                        */
/* ------------------------------------------------------------------ */

static void test_stripes_and_pieces(void **state)
{
    struct clr_raid_geom g;
    uint64_t stripe, first, len;

    (void)state;
    geom(&g, 5, 2, 128, 5, 128 * 10);
    assert_int_equal(clr_raid_stripe_sectors(&g), 512);
    assert_true(clr_raid_is_full_stripes(&g, 0, 512));
    assert_true(clr_raid_is_full_stripes(&g, 1024, 1536));
    assert_false(clr_raid_is_full_stripes(&g, 0, 511));
    assert_false(clr_raid_is_full_stripes(&g, 128, 512));
    assert_false(clr_raid_is_full_stripes(&g, 0, 0));
    assert_false(clr_raid_is_full_stripes(&g, 4608, 1024)); /* past the end */
    assert_int_equal(clr_raid_stripe_of(&g, 1000, &stripe, &first, &len), 0);
    assert_int_equal(stripe, 1);
    assert_int_equal(first, 512);
    assert_int_equal(len, 512);
    assert_int_equal(clr_raid_stripe_of(&g, 5120, &stripe, &first, &len), -ERANGE);

    /* split [100, 100+1000) by chunk and by stripe */
    uint64_t at = 100, left = 1000, pieces = 0;

    while (left) {
        uint64_t l = clr_raid_chunk_piece(&g, at, left);

        assert_true(l >= 1 && l <= 128);
        assert_int_equal(at / 128, (at + l - 1) / 128);
        at += l;
        left -= l;
        pieces++;
    }
    assert_int_equal(pieces, 9); /* 28, 7 x 128, 76 */
    at = 100;
    left = 1000;
    pieces = 0;
    while (left) {
        uint64_t l = clr_raid_stripe_piece(&g, at, left);

        assert_int_equal(at / 512, (at + l - 1) / 512);
        at += l;
        left -= l;
        pieces++;
    }
    assert_int_equal(pieces, 3);                               /* 412, 512, 76 */
    assert_int_equal(clr_raid_chunk_piece(&g, 5110, 100), 10); /* array end */
    assert_int_equal(clr_raid_chunk_piece(&g, 5120, 100), 0);

    geom(&g, 6, 2, 64, 6, 64 * 4);
    assert_int_equal(clr_raid_stripe_sectors(&g), 256);
    geom(&g, 10, 0x102, 64, 4, 64 * 4);
    assert_int_equal(clr_raid_stripe_sectors(&g), 128);
    geom(&g, 10, 0x102, 64, 3, 64 * 4);
    assert_int_equal(clr_raid_stripe_sectors(&g), 192);
    assert_int_equal(clr_raid_stripe_of(&g, 0, &stripe, &first, &len), -EINVAL);
    geom(&g, 1, 0, 0, 2, 1000);
    assert_int_equal(clr_raid_chunk_piece(&g, 10, 5000), 990);
    assert_int_equal(clr_raid_stripe_piece(&g, 10, 5000), 990);
}

static bool enough(const struct clr_raid_geom *g, const char *failed_list)
{
    bool failed[CLR_RAID_MAX_DISKS] = { false };

    for (const char *c = failed_list; *c; c++)
        failed[*c - '0'] = true;
    return g->pers->enough(g, failed);
}

static void test_enough(void **state)
{
    struct clr_raid_geom g;

    (void)state;
    geom(&g, 1, 0, 0, 3, 100);
    assert_true(enough(&g, "01"));
    assert_false(enough(&g, "012"));
    geom(&g, 5, 2, 8, 4, 80);
    assert_true(enough(&g, "3"));
    assert_false(enough(&g, "03"));
    geom(&g, 6, 2, 8, 5, 80);
    assert_true(enough(&g, "14"));
    assert_false(enough(&g, "124"));
    geom(&g, 10, 0x102, 8, 4, 80); /* pairs (0,1) (2,3) */
    assert_true(enough(&g, "02"));
    assert_true(enough(&g, "13"));
    assert_false(enough(&g, "01"));
    assert_false(enough(&g, "23"));
    geom(&g, 10, 0x102, 8, 3, 80); /* pairs (0,1) (2,0) (1,2) */
    assert_true(enough(&g, "2"));
    assert_false(enough(&g, "02"));
    assert_false(enough(&g, "12"));
    geom(&g, 10, 0x201, 8, 4, 80); /* f2: (0,1) (1,2) (2,3) (3,0) */
    assert_true(enough(&g, "02"));
    assert_false(enough(&g, "12"));
    geom(&g, 10, 0x201 | (2U << 17), 8, 4, 80); /* sets {0,1} {2,3} */
    assert_true(enough(&g, "03"));
    assert_false(enough(&g, "01"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_raid5_tables),
        cmocka_unit_test(test_raid6_tables),
        cmocka_unit_test(test_raid6_qexp),
        cmocka_unit_test(test_raid10_tables),
        cmocka_unit_test(test_exhaustive_raid1),
        cmocka_unit_test(test_exhaustive_raid56),
        cmocka_unit_test(test_exhaustive_raid10),
        cmocka_unit_test(test_stripes_and_pieces),
        cmocka_unit_test(test_enough),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
