/* Unit tests for engine/raid/parity.c: P and Q against a slow reference
 * GF(2^8) implementation written here from md's definition (polynomial
 * 0x11d, g = 2, Q = sum g^slot * D), checks, and recovery of every single
 * and double loss on random stripes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raid/layout.h"
#include "raid/parity.h"

/* ---- reference GF(2^8), bit by bit -------------------------------- */

static uint8_t ref_mul(uint8_t a, uint8_t b)
{
    unsigned r = 0, x = a;

    for (int i = 0; i < 8; i++) {
        if (b & (1U << i))
            r ^= x;
        x <<= 1;
        if (x & 0x100)
            x ^= 0x11d;
    }
    return (uint8_t)r;
}

static uint8_t ref_pow2(unsigned e)
{
    uint8_t v = 1;

    while (e--)
        v = ref_mul(v, 2);
    return v;
}

static void ref_pq(unsigned ndata, size_t len, uint8_t *const *data, const uint8_t *qexp, uint8_t *p,
                   uint8_t *q)
{
    memset(p, 0, len);
    memset(q, 0, len);
    for (unsigned k = 0; k < ndata; k++) {
        uint8_t c = ref_pow2(qexp ? qexp[k] : k);

        for (size_t i = 0; i < len; i++) {
            p[i] ^= data[k][i];
            q[i] ^= ref_mul(c, data[k][i]);
        }
    }
}

/* ---- helpers ------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint8_t rnd8(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint8_t)(rng >> 24);
}

struct stripe {
    unsigned ndata;
    size_t len;
    uint8_t *blk[CLR_RAID_MAX_DISKS + 2]; /* data..., P, Q */
    uint8_t *orig[CLR_RAID_MAX_DISKS + 2];
};

static void stripe_new(struct stripe *s, unsigned ndata, size_t len)
{
    s->ndata = ndata;
    s->len = len;
    for (unsigned b = 0; b < ndata + 2; b++) {
        s->blk[b] = aligned_alloc(CLR_PARITY_ALIGN, len);
        s->orig[b] = aligned_alloc(CLR_PARITY_ALIGN, len);
        assert_non_null(s->blk[b]);
        assert_non_null(s->orig[b]);
        for (size_t i = 0; i < len; i++)
            s->blk[b][i] = rnd8();
    }
}

static void stripe_save(struct stripe *s)
{
    for (unsigned b = 0; b < s->ndata + 2; b++)
        memcpy(s->orig[b], s->blk[b], s->len);
}

static void stripe_free(struct stripe *s)
{
    for (unsigned b = 0; b < s->ndata + 2; b++) {
        free(s->blk[b]);
        free(s->orig[b]);
    }
}

static void *const *vp(struct stripe *s)
{
    return (void *const *)s->blk;
}

/* ---- tests -------------------------------------------------------- */

static void test_gf_field(void **state)
{
    (void)state;
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b++)
            assert_int_equal(clr_gf_mul((uint8_t)a, (uint8_t)b), ref_mul((uint8_t)a, (uint8_t)b));
    for (unsigned e = 0; e < 600; e++)
        assert_int_equal(clr_gf_exp2(e), ref_pow2(e));
    /* g = 2 generates the whole multiplicative group */
    assert_int_equal(clr_gf_exp2(255), 1);
    assert_int_equal(clr_gf_exp2(8), 0x1d);
}

/* Known answers, independent of any GF code: Q = D0 ^ 2*D1 ^ 4*D2. */
static void test_known_answer(void **state)
{
    struct stripe s;

    (void)state;
    stripe_new(&s, 3, 64);
    memset(s.blk[0], 0x01, 64);
    memset(s.blk[1], 0x80, 64); /* 2 * 0x80 = 0x100 ^ 0x11d = 0x1d */
    memset(s.blk[2], 0x40, 64); /* 4 * 0x40 = 0x100 -> 0x1d */
    assert_int_equal(clr_parity_pq_gen(3, 64, vp(&s), NULL, s.blk[3], s.blk[4]), 0);
    for (int i = 0; i < 64; i++) {
        assert_int_equal(s.blk[3][i], 0x01 ^ 0x80 ^ 0x40);
        assert_int_equal(s.blk[4][i], 0x01 ^ 0x1d ^ 0x1d);
    }
    stripe_free(&s);
}

static void check_pq(unsigned ndata, size_t len, const uint8_t *qexp)
{
    struct stripe s;
    uint8_t *p = aligned_alloc(64, len), *q = aligned_alloc(64, len);

    stripe_new(&s, ndata, len);
    ref_pq(ndata, len, s.blk, qexp, p, q);
    assert_int_equal(clr_parity_pq_gen(ndata, len, vp(&s), qexp, s.blk[ndata], s.blk[ndata + 1]), 0);
    assert_memory_equal(s.blk[ndata], p, len);
    assert_memory_equal(s.blk[ndata + 1], q, len);
    assert_int_equal(clr_parity_pq_check(ndata, len, vp(&s), qexp, s.blk[ndata], s.blk[ndata + 1]), 0);
    assert_int_equal(clr_parity_xor_check(ndata, len, vp(&s), s.blk[ndata]), 0);
    memset(s.blk[ndata], 0, len);
    assert_int_equal(clr_parity_xor_gen(ndata, len, vp(&s), s.blk[ndata]), 0);
    assert_memory_equal(s.blk[ndata], p, len);

    /* a single flipped bit anywhere is caught */
    s.blk[ndata + 1][len - 1] ^= 0x10;
    assert_int_equal(clr_parity_pq_check(ndata, len, vp(&s), qexp, s.blk[ndata], s.blk[ndata + 1]), -EBADMSG);
    s.blk[ndata + 1][len - 1] ^= 0x10;
    s.blk[ndata][0] ^= 1;
    assert_int_equal(clr_parity_pq_check(ndata, len, vp(&s), qexp, s.blk[ndata], s.blk[ndata + 1]), -EBADMSG);
    assert_int_equal(clr_parity_xor_check(ndata, len, vp(&s), s.blk[ndata]), -EBADMSG);
    s.blk[ndata][0] ^= 1;
    s.blk[ndata - 1][len / 2] ^= 0x80;
    assert_int_equal(clr_parity_pq_check(ndata, len, vp(&s), qexp, s.blk[ndata], s.blk[ndata + 1]), -EBADMSG);
    free(p);
    free(q);
    stripe_free(&s);
}

static void test_pq_vs_reference(void **state)
{
    uint8_t perm[16], sparse[16];

    (void)state;
    for (unsigned nd = 1; nd <= 12; nd++) {
        for (size_t len = 64; len <= 4096; len *= 4) {
            check_pq(nd, len, NULL);
            for (unsigned k = 0; k < nd; k++) {
                perm[k] = (uint8_t)((k * 5 + 3) % nd);          /* a permutation */
                sparse[k] = (uint8_t)(k + (k >= 1) + (k >= 3)); /* with gaps */
            }
            if (nd % 5 == 0) /* k*5 mod nd is not a permutation then */
                for (unsigned k = 0; k < nd; k++)
                    perm[k] = (uint8_t)(nd - 1 - k);
            check_pq(nd, len, perm);
            check_pq(nd, len, sparse);
        }
    }
    check_pq(3, 192, NULL); /* odd multiple of 64 */
}

/* md's Q for real layouts: data in logical order with qexp from the
 * stripe roles, against the reference walking md's syndrome slots. */
static void test_pq_md_layouts(void **state)
{
    static const uint32_t algos[] = { 0, 1, 2, 3, 4, 5, 8, 9, 10, 16, 17, 18, 19, 20 };

    (void)state;
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
        for (uint32_t n = 4; n <= 8; n++) {
            struct clr_raid_geom g;
            struct clr_raid_stripe st;

            assert_int_equal(clr_raid_geom_init(&g, 6, algos[a], 8, n, 800, NULL), 0);
            for (uint64_t sn = 0; sn < n; sn++) {
                clr_raid_stripe_roles(&g, sn, &st);
                check_pq(st.ndata, 128, st.qexp);
            }
        }
    }
}

static void test_raid5_recover(void **state)
{
    (void)state;
    for (unsigned nd = 1; nd <= 7; nd++) {
        struct stripe s;

        stripe_new(&s, nd, 512);
        assert_int_equal(clr_parity_xor_gen(nd, 512, vp(&s), s.blk[nd]), 0);
        stripe_save(&s);
        for (unsigned lost = 0; lost <= nd; lost++) {
            memset(s.blk[lost], 0xa5, 512);
            assert_int_equal(clr_parity_raid5_recover(nd, 512, vp(&s), lost), 0);
            assert_memory_equal(s.blk[lost], s.orig[lost], 512);
        }
        assert_int_equal(clr_parity_raid5_recover(nd, 512, vp(&s), nd + 1), -EINVAL);
        stripe_free(&s);
    }
}

/* Every one and every two lost blocks of 4..10-disk RAID6 stripes. */
static void check_raid6_all_losses(unsigned nd, const uint8_t *qexp, size_t len)
{
    struct stripe s;
    unsigned nb = nd + 2;

    stripe_new(&s, nd, len);
    assert_int_equal(clr_parity_pq_gen(nd, len, vp(&s), qexp, s.blk[nd], s.blk[nd + 1]), 0);
    stripe_save(&s);
    for (unsigned x = 0; x < nb; x++) {
        for (unsigned y = x; y < nb; y++) {
            unsigned lost[2] = { x, y };
            unsigned nlost = x == y ? 1 : 2;

            /* reversed order must work as well */
            if ((x + y) % 2) {
                lost[0] = y;
                lost[1] = x;
            }
            memset(s.blk[x], 0x5a, len);
            memset(s.blk[y], 0xc3, len);
            int rc = clr_parity_raid6_recover(nd, len, vp(&s), qexp, nlost, lost);

            if (rc)
                fail_msg("ndata %u lost %u,%u: rc %d", nd, x, y, rc);
            for (unsigned b = 0; b < nb; b++)
                if (memcmp(s.blk[b], s.orig[b], len))
                    fail_msg("ndata %u lost %u,%u (qexp %s): block %u wrong", nd, x, y,
                             qexp ? "given" : "NULL", b);
        }
    }
    stripe_free(&s);
}

static void test_raid6_recover(void **state)
{
    uint8_t perm[8], sparse[8];

    (void)state;
    for (unsigned nd = 2; nd <= 8; nd++) {
        check_raid6_all_losses(nd, NULL, 4096);
        for (unsigned k = 0; k < nd; k++) {
            perm[k] = (uint8_t)((k + 1) % nd);
            sparse[k] = (uint8_t)(2 * k + 1);
        }
        check_raid6_all_losses(nd, perm, 256);
        check_raid6_all_losses(nd, sparse, 256);
    }
    check_raid6_all_losses(1, NULL, 64); /* degenerate, still an MDS code */
}

/* Read-modify-write parity update equals recomputing from scratch. */
static void test_rmw(void **state)
{
    (void)state;
    for (unsigned nd = 2; nd <= 8; nd++) {
        struct stripe s, fresh;
        uint8_t qexp[8];
        void *olds[8], *news[8];
        uint8_t exps[8];
        unsigned nch = 0;

        for (unsigned k = 0; k < nd; k++)
            qexp[k] = (uint8_t)((k + 2) % nd);
        stripe_new(&s, nd, 256);
        stripe_new(&fresh, nd, 256);
        assert_int_equal(clr_parity_pq_gen(nd, 256, vp(&s), qexp, s.blk[nd], s.blk[nd + 1]), 0);
        /* new content for every other data block */
        for (unsigned k = 0; k < nd; k++) {
            if (k % 2 == 0) {
                olds[nch] = s.blk[k];
                news[nch] = fresh.blk[k];
                exps[nch++] = qexp[k];
            } else {
                memcpy(fresh.blk[k], s.blk[k], 256);
            }
        }
        assert_int_equal(clr_parity_rmw(nch, 256, olds, news, exps, s.blk[nd], s.blk[nd + 1]), 0);
        assert_int_equal(clr_parity_pq_check(nd, 256, vp(&fresh), qexp, s.blk[nd], s.blk[nd + 1]), 0);
        /* RAID5 flavour: P only */
        assert_int_equal(clr_parity_xor_gen(nd, 256, vp(&s), s.blk[nd]), 0);
        assert_int_equal(clr_parity_rmw(nch, 256, olds, news, NULL, s.blk[nd], NULL), 0);
        assert_int_equal(clr_parity_xor_check(nd, 256, vp(&fresh), s.blk[nd]), 0);
        /* the new data straight from a client's buffer: 8-byte aligned is
         * enough (the engine passes nbdkit's malloc'd buffer as it is) */
        {
            uint8_t *odd[8];
            void *onews[8];

            assert_int_equal(clr_parity_pq_gen(nd, 256, vp(&s), qexp, s.blk[nd], s.blk[nd + 1]), 0);
            for (unsigned i = 0; i < nch; i++) {
                /* the new content again, at +8, +16, ... */
                odd[i] = malloc(256 + 64);
                assert_non_null(odd[i]);
                onews[i] = odd[i] + 8 * (i % 7 + 1);
                memcpy(onews[i], news[i], 256);
            }
            assert_int_equal(clr_parity_rmw(nch, 256, olds, onews, exps, s.blk[nd], s.blk[nd + 1]), 0);
            assert_int_equal(clr_parity_pq_check(nd, 256, vp(&fresh), qexp, s.blk[nd], s.blk[nd + 1]), 0);
            onews[0] = odd[0] + 4;
            assert_int_equal(clr_parity_rmw(nch, 256, olds, onews, exps, s.blk[nd], s.blk[nd + 1]), -EINVAL);
            for (unsigned i = 0; i < nch; i++)
                free(odd[i]);
        }
        stripe_free(&s);
        stripe_free(&fresh);
    }
}

static void test_bad_arguments(void **state)
{
    struct stripe s;
    unsigned lost[2] = { 0, 0 };
    uint8_t dup[3] = { 0, 1, 1 };

    (void)state;
    stripe_new(&s, 3, 256);
    assert_int_equal(clr_parity_xor_gen(3, 0, vp(&s), s.blk[3]), -EINVAL);
    assert_int_equal(clr_parity_xor_gen(3, 32, vp(&s), s.blk[3]), -EINVAL);
    assert_int_equal(clr_parity_xor_gen(3, 100, vp(&s), s.blk[3]), -EINVAL);
    assert_int_equal(clr_parity_xor_gen(0, 64, vp(&s), s.blk[3]), -EINVAL);
    assert_int_equal(clr_parity_xor_gen(3, 64, vp(&s), s.blk[3] + 16), -EINVAL);
    assert_int_equal(clr_parity_pq_gen(3, 64, vp(&s), dup, s.blk[3], s.blk[4]), -EINVAL);
    assert_int_equal(clr_parity_pq_gen(3, 64, vp(&s), NULL, NULL, s.blk[4]), -EINVAL);
    assert_int_equal(clr_parity_raid6_recover(3, 64, vp(&s), NULL, 2, lost), -EINVAL);
    assert_int_equal(clr_parity_raid6_recover(3, 64, vp(&s), NULL, 0, lost), -EINVAL);
    assert_int_equal(clr_parity_raid6_recover(3, 64, vp(&s), NULL, 3, lost), -EINVAL);
    lost[0] = 5;
    assert_int_equal(clr_parity_raid6_recover(3, 64, vp(&s), NULL, 1, lost), -EINVAL);
    stripe_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gf_field),
        cmocka_unit_test(test_known_answer),
        cmocka_unit_test(test_pq_vs_reference),
        cmocka_unit_test(test_pq_md_layouts),
        cmocka_unit_test(test_raid5_recover),
        cmocka_unit_test(test_raid6_recover),
        cmocka_unit_test(test_rmw),
        cmocka_unit_test(test_bad_arguments),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
