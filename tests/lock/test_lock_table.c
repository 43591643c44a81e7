/* Unit tests of the pure lock table (engine/lock/lock_table.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lock/lock_table.h"

#define MAXFX 256

struct rec {
    int n;
    struct clr_lt_effect fx[MAXFX];
};

static void record(void *arg, const struct clr_lt_effect *e)
{
    struct rec *r = arg;

    assert_true(r->n < MAXFX);
    r->fx[r->n++] = *e;
}

static const char *NAME = "res";

static int req(struct clr_lt *lt, struct rec *r, uint64_t owner, int mode, unsigned flags)
{
    return clr_lt_request(lt, owner, owner, NAME, strlen(NAME), mode, flags, record, r);
}

static const struct clr_lt_effect *find_fx(const struct rec *r, enum clr_lt_effect_type t, uint64_t owner)
{
    for (int i = 0; i < r->n; i++)
        if (r->fx[i].type == t && r->fx[i].owner == owner)
            return &r->fx[i];
    return NULL;
}

static int granted_mode(struct clr_lt *lt, uint64_t owner)
{
    int gr;

    if (clr_lt_lock_info(lt, owner, owner, &gr, NULL, NULL))
        return -100;
    return gr;
}

static enum clr_lt_queue queue_of(struct clr_lt *lt, uint64_t owner)
{
    enum clr_lt_queue q = 99;

    assert_int_equal(clr_lt_lock_info(lt, owner, owner, NULL, NULL, &q), 0);
    return q;
}

/* The DLM matrix, written out independently of the implementation. */
static const char *const expected_compat[CLR_LOCK_NMODES] = {
    /* NL */ "111111",
    /* CR */ "111110",
    /* CW */ "111000",
    /* PR */ "110100",
    /* PW */ "110000",
    /* EX */ "100000",
};

static void test_mode_matrix_new_requests(void **state)
{
    (void)state;
    for (int a = 0; a < CLR_LOCK_NMODES; a++) {
        for (int b = 0; b < CLR_LOCK_NMODES; b++) {
            struct clr_lt *lt = clr_lt_new();
            struct rec r = { 0 };
            bool want = expected_compat[a][b] == '1';

            assert_int_equal(clr_lock_modes_compat(a, b), want);
            assert_int_equal(req(lt, &r, 1, a, 0), 0);
            assert_int_equal(granted_mode(lt, 1), a);
            r.n = 0;
            assert_int_equal(req(lt, &r, 2, b, CLR_LOCK_F_NOQUEUE), 0);
            if (want) {
                assert_non_null(find_fx(&r, CLR_LT_GRANTED, 2));
                assert_int_equal(granted_mode(lt, 2), b);
            } else {
                const struct clr_lt_effect *e = find_fx(&r, CLR_LT_FAILED, 2);

                assert_non_null(e);
                assert_int_equal(e->status, -EAGAIN);
                assert_int_equal(granted_mode(lt, 2), -100);
                /* NOQUEUE sends no BAST */
                assert_null(find_fx(&r, CLR_LT_BAST, 1));
            }
            clr_lt_free(lt);
        }
    }
}

static void test_mode_matrix_conversions(void **state)
{
    (void)state;
    for (int a = 0; a < CLR_LOCK_NMODES; a++) {
        for (int b = 0; b < CLR_LOCK_NMODES; b++) {
            struct clr_lt *lt = clr_lt_new();
            struct rec r = { 0 };
            bool want = expected_compat[a][b] == '1';

            assert_int_equal(req(lt, &r, 1, a, 0), 0);
            assert_int_equal(req(lt, &r, 2, CLR_LOCK_NL, 0), 0);
            r.n = 0;
            assert_int_equal(clr_lt_convert(lt, 2, 2, b, CLR_LOCK_F_NOQUEUE, NULL, record, &r), 0);
            assert_int_equal(granted_mode(lt, 2), want ? b : CLR_LOCK_NL);
            if (!want) {
                const struct clr_lt_effect *e = find_fx(&r, CLR_LT_FAILED, 2);

                assert_non_null(e);
                assert_int_equal(e->status, -EAGAIN);
                assert_int_equal(e->mode, CLR_LOCK_NL);
            }
            clr_lt_free(lt);
        }
    }
}

static void test_mode_names(void **state)
{
    (void)state;
    for (int m = 0; m < CLR_LOCK_NMODES; m++)
        assert_int_equal(clr_lock_mode_parse(clr_lock_mode_name(m)), m);
    assert_string_equal(clr_lock_mode_name(CLR_LOCK_IV), "IV");
    assert_int_equal(clr_lock_mode_parse("XX"), -EINVAL);
    assert_false(clr_lock_modes_compat(7, 0));
}

static void test_waiters_fifo(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };

    (void)state;
    req(lt, &r, 1, CLR_LOCK_EX, 0);
    req(lt, &r, 2, CLR_LOCK_PR, 0);
    req(lt, &r, 3, CLR_LOCK_PR, 0);
    req(lt, &r, 4, CLR_LOCK_EX, 0);
    req(lt, &r, 5, CLR_LOCK_PR, 0);
    for (uint64_t o = 2; o <= 5; o++)
        assert_int_equal(queue_of(lt, o), CLR_LT_Q_WAIT);
    r.n = 0;
    assert_int_equal(clr_lt_unlock(lt, 1, 1, 0, NULL, record, &r), 0);
    /* 2 and 3 in order; 4 blocks; 5 may not pass 4 although PR fits */
    assert_int_equal(r.fx[0].type, CLR_LT_UNLOCKED);
    assert_int_equal(r.fx[1].type, CLR_LT_GRANTED);
    assert_int_equal(r.fx[1].owner, 2);
    assert_int_equal(r.fx[2].type, CLR_LT_GRANTED);
    assert_int_equal(r.fx[2].owner, 3);
    assert_int_equal(queue_of(lt, 4), CLR_LT_Q_WAIT);
    assert_int_equal(queue_of(lt, 5), CLR_LT_Q_WAIT);
    /* a new PR may not jump the queue either */
    assert_int_equal(req(lt, &r, 6, CLR_LOCK_PR, CLR_LOCK_F_NOQUEUE), 0);
    assert_int_equal(granted_mode(lt, 6), -100);
    clr_lt_unlock(lt, 2, 2, 0, NULL, record, &r);
    r.n = 0;
    clr_lt_unlock(lt, 3, 3, 0, NULL, record, &r);
    assert_non_null(find_fx(&r, CLR_LT_GRANTED, 4));
    assert_int_equal(queue_of(lt, 5), CLR_LT_Q_WAIT);
    r.n = 0;
    clr_lt_unlock(lt, 4, 4, 0, NULL, record, &r);
    assert_non_null(find_fx(&r, CLR_LT_GRANTED, 5));
    clr_lt_free(lt);
}

static void test_conversion_ahead_of_new(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };

    (void)state;
    req(lt, &r, 1, CLR_LOCK_PR, 0);
    req(lt, &r, 2, CLR_LOCK_PR, 0);
    req(lt, &r, 3, CLR_LOCK_EX, 0); /* waits first */
    assert_int_equal(clr_lt_convert(lt, 1, 1, CLR_LOCK_EX, 0, NULL, record, &r), 0);
    assert_int_equal(queue_of(lt, 1), CLR_LT_Q_CONVERT);
    r.n = 0;
    clr_lt_unlock(lt, 2, 2, 0, NULL, record, &r);
    /* the conversion wins although the new request came first */
    assert_non_null(find_fx(&r, CLR_LT_GRANTED, 1));
    assert_null(find_fx(&r, CLR_LT_GRANTED, 3));
    assert_int_equal(granted_mode(lt, 1), CLR_LOCK_EX);
    r.n = 0;
    clr_lt_convert(lt, 1, 1, CLR_LOCK_NL, 0, NULL, record, &r);
    assert_non_null(find_fx(&r, CLR_LT_GRANTED, 3));
    clr_lt_free(lt);
}

static void test_conversions_fifo_and_new_blocked(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };

    (void)state;
    req(lt, &r, 1, CLR_LOCK_EX, 0);
    req(lt, &r, 2, CLR_LOCK_NL, 0);
    req(lt, &r, 3, CLR_LOCK_NL, 0);
    clr_lt_convert(lt, 2, 2, CLR_LOCK_PR, 0, NULL, record, &r);
    clr_lt_convert(lt, 3, 3, CLR_LOCK_PR, 0, NULL, record, &r);
    /* a new NL is compatible with everything, but must wait while
     * conversions are queued */
    assert_int_equal(req(lt, &r, 4, CLR_LOCK_NL, 0), 0);
    assert_int_equal(queue_of(lt, 4), CLR_LT_Q_WAIT);
    r.n = 0;
    clr_lt_convert(lt, 1, 1, CLR_LOCK_NL, 0, NULL, record, &r);
    assert_int_equal(r.n, 4);
    assert_int_equal(r.fx[0].owner, 1);
    assert_int_equal(r.fx[1].owner, 2);
    assert_int_equal(r.fx[2].owner, 3);
    assert_int_equal(r.fx[3].owner, 4);
    clr_lt_free(lt);
}

static void test_conversion_deadlock(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };
    const struct clr_lt_effect *e;

    (void)state;
    req(lt, &r, 1, CLR_LOCK_PR, 0);
    req(lt, &r, 2, CLR_LOCK_PR, 0);
    clr_lt_convert(lt, 1, 1, CLR_LOCK_EX, 0, NULL, record, &r);
    r.n = 0;
    clr_lt_convert(lt, 2, 2, CLR_LOCK_EX, 0, NULL, record, &r);
    e = find_fx(&r, CLR_LT_FAILED, 2);
    assert_non_null(e);
    assert_int_equal(e->status, -EDEADLK);
    assert_int_equal(granted_mode(lt, 2), CLR_LOCK_PR);
    r.n = 0;
    clr_lt_convert(lt, 2, 2, CLR_LOCK_NL, 0, NULL, record, &r);
    assert_non_null(find_fx(&r, CLR_LT_GRANTED, 1));
    clr_lt_free(lt);
}

static void test_noqueue_and_errors(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };
    const struct clr_lt_effect *e;

    (void)state;
    req(lt, &r, 1, CLR_LOCK_PR, 0);
    req(lt, &r, 2, CLR_LOCK_EX, 0);
    r.n = 0;
    /* CR fits the holders, but the waiter is ahead */
    req(lt, &r, 3, CLR_LOCK_CR, CLR_LOCK_F_NOQUEUE);
    e = find_fx(&r, CLR_LT_FAILED, 3);
    assert_non_null(e);
    assert_int_equal(e->status, -EAGAIN);
    assert_int_equal(clr_lt_owner_locks(lt, 3), 0);
    /* duplicate id, bad mode, bad name */
    assert_int_equal(req(lt, &r, 1, CLR_LOCK_NL, 0), -EEXIST);
    assert_int_equal(req(lt, &r, 9, 6, 0), -EINVAL);
    assert_int_equal(clr_lt_request(lt, 9, 9, "", 0, CLR_LOCK_NL, 0, record, &r), -EINVAL);
    /* converting or unlocking a waiting lock is refused */
    assert_int_equal(clr_lt_convert(lt, 2, 2, CLR_LOCK_NL, 0, NULL, record, &r), -EBUSY);
    assert_int_equal(clr_lt_unlock(lt, 2, 2, 0, NULL, record, &r), -EBUSY);
    assert_int_equal(clr_lt_unlock(lt, 7, 7, 0, NULL, record, &r), -ENOENT);
    assert_int_equal(clr_lt_convert(lt, 7, 7, CLR_LOCK_NL, 0, NULL, record, &r), -ENOENT);
    clr_lt_free(lt);
}

static void test_cancel(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };
    const struct clr_lt_effect *e;

    (void)state;
    req(lt, &r, 1, CLR_LOCK_EX, 0);
    req(lt, &r, 2, CLR_LOCK_NL, 0);
    req(lt, &r, 3, CLR_LOCK_PR, 0);
    clr_lt_convert(lt, 2, 2, CLR_LOCK_PR, 0, NULL, record, &r);
    r.n = 0;
    assert_int_equal(clr_lt_cancel(lt, 3, 3, record, &r), 0);
    e = find_fx(&r, CLR_LT_CANCELED, 3);
    assert_non_null(e);
    assert_int_equal(e->status, -ECANCELED);
    assert_int_equal(clr_lt_owner_locks(lt, 3), 0);
    r.n = 0;
    assert_int_equal(clr_lt_cancel(lt, 2, 2, record, &r), 0);
    e = find_fx(&r, CLR_LT_CANCELED, 2);
    assert_non_null(e);
    assert_int_equal(e->mode, CLR_LOCK_NL);
    assert_int_equal(granted_mode(lt, 2), CLR_LOCK_NL);
    assert_int_equal(queue_of(lt, 2), CLR_LT_Q_GRANTED);
    assert_int_equal(clr_lt_cancel(lt, 1, 1, record, &r), -EBUSY);
    assert_int_equal(clr_lt_cancel(lt, 8, 8, record, &r), -ENOENT);
    clr_lt_free(lt);
}

static void lvb_fill(uint8_t *lvb, uint8_t v)
{
    memset(lvb, v, CLR_LOCK_LVB_LEN);
}

static void test_lvb_rules(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };
    uint8_t lvb[CLR_LOCK_LVB_LEN], got[CLR_LOCK_LVB_LEN];
    const struct clr_lt_effect *e;
    bool valid;

    (void)state;
    req(lt, &r, 1, CLR_LOCK_EX, CLR_LOCK_F_VALBLK);
    e = find_fx(&r, CLR_LT_GRANTED, 1);
    assert_true(e->has_lvb);
    lvb_fill(lvb, 0);
    assert_memory_equal(e->lvb, lvb, CLR_LOCK_LVB_LEN);

    /* EX -> NL with VALBLK writes */
    lvb_fill(lvb, 0x11);
    clr_lt_convert(lt, 1, 1, CLR_LOCK_NL, CLR_LOCK_F_VALBLK, lvb, record, &r);
    assert_int_equal(clr_lt_res_lvb(lt, NAME, got, &valid), 0);
    assert_memory_equal(got, lvb, CLR_LOCK_LVB_LEN);
    assert_true(valid);

    /* a PR grant with VALBLK returns it; without VALBLK it does not */
    r.n = 0;
    req(lt, &r, 2, CLR_LOCK_PR, CLR_LOCK_F_VALBLK);
    req(lt, &r, 3, CLR_LOCK_PR, 0);
    e = find_fx(&r, CLR_LT_GRANTED, 2);
    assert_true(e->has_lvb);
    assert_memory_equal(e->lvb, lvb, CLR_LOCK_LVB_LEN);
    assert_false(find_fx(&r, CLR_LT_GRANTED, 3)->has_lvb);

    /* PR -> NL does not write, even with VALBLK */
    lvb_fill(got, 0x22);
    clr_lt_convert(lt, 2, 2, CLR_LOCK_NL, CLR_LOCK_F_VALBLK, got, record, &r);
    clr_lt_res_lvb(lt, NAME, got, NULL);
    assert_memory_equal(got, lvb, CLR_LOCK_LVB_LEN);
    clr_lt_unlock(lt, 3, 3, CLR_LOCK_F_VALBLK, got, record, &r);
    clr_lt_res_lvb(lt, NAME, got, NULL);
    assert_memory_equal(got, lvb, CLR_LOCK_LVB_LEN);

    /* EX down-convert without VALBLK does not write */
    clr_lt_convert(lt, 1, 1, CLR_LOCK_EX, 0, NULL, record, &r);
    lvb_fill(got, 0x33);
    clr_lt_convert(lt, 1, 1, CLR_LOCK_NL, 0, got, record, &r);
    clr_lt_res_lvb(lt, NAME, got, NULL);
    assert_memory_equal(got, lvb, CLR_LOCK_LVB_LEN);

    /* PW -> PW re-request publishes (md resync_info_update) */
    clr_lt_convert(lt, 1, 1, CLR_LOCK_PW, CLR_LOCK_F_VALBLK, NULL, record, &r);
    lvb_fill(lvb, 0x44);
    clr_lt_convert(lt, 1, 1, CLR_LOCK_PW, CLR_LOCK_F_VALBLK, lvb, record, &r);
    clr_lt_res_lvb(lt, NAME, got, NULL);
    assert_memory_equal(got, lvb, CLR_LOCK_LVB_LEN);

    /* PW -> EX reads, does not write */
    lvb_fill(got, 0x55);
    r.n = 0;
    clr_lt_convert(lt, 1, 1, CLR_LOCK_EX, CLR_LOCK_F_VALBLK, got, record, &r);
    e = find_fx(&r, CLR_LT_GRANTED, 1);
    assert_true(e->has_lvb);
    assert_memory_equal(e->lvb, lvb, CLR_LOCK_LVB_LEN);

    /* unlock from EX with VALBLK writes */
    lvb_fill(lvb, 0x66);
    clr_lt_unlock(lt, 1, 1, CLR_LOCK_F_VALBLK, lvb, record, &r);
    clr_lt_res_lvb(lt, NAME, got, NULL);
    assert_memory_equal(got, lvb, CLR_LOCK_LVB_LEN);
    clr_lt_free(lt);
}

static void test_lvb_invalid_after_holder_death(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };
    uint8_t lvb[CLR_LOCK_LVB_LEN];
    const struct clr_lt_effect *e;
    bool valid;

    (void)state;
    for (int holder = CLR_LOCK_NL; holder <= CLR_LOCK_EX; holder++) {
        for (int inval = 0; inval <= 1; inval++) {
            r.n = 0;
            req(lt, &r, 1, holder, CLR_LOCK_F_VALBLK);
            req(lt, &r, 2, CLR_LOCK_EX, CLR_LOCK_F_VALBLK);
            clr_lt_remove_owner(lt, 1, inval, record, &r);
            e = find_fx(&r, CLR_LT_GRANTED, 2);
            assert_non_null(e);
            bool expect_invalid = inval && holder >= CLR_LOCK_PW;
            assert_int_equal(!!(e->sb_flags & CLR_LOCK_SB_VALNOTVALID), expect_invalid);
            clr_lt_res_lvb(lt, NAME, NULL, &valid);
            assert_int_equal(valid, !expect_invalid);
            /* the next writer makes it valid again */
            lvb_fill(lvb, (uint8_t)(holder + 1));
            clr_lt_unlock(lt, 2, 2, CLR_LOCK_F_VALBLK, lvb, record, &r);
            clr_lt_res_lvb(lt, NAME, NULL, &valid);
            assert_true(valid);
        }
    }
    /* a dead sole holder: the resource keeps "not valid" for the next */
    r.n = 0;
    req(lt, &r, 1, CLR_LOCK_EX, CLR_LOCK_F_VALBLK);
    clr_lt_remove_owner(lt, 1, true, record, &r);
    req(lt, &r, 3, CLR_LOCK_PR, CLR_LOCK_F_VALBLK);
    e = find_fx(&r, CLR_LT_GRANTED, 3);
    assert_true(e->sb_flags & CLR_LOCK_SB_VALNOTVALID);
    clr_lt_free(lt);
}

static void test_bast_targets(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };
    const struct clr_lt_effect *e;

    (void)state;
    req(lt, &r, 1, CLR_LOCK_PR, 0);
    req(lt, &r, 2, CLR_LOCK_CR, 0);
    req(lt, &r, 3, CLR_LOCK_NL, 0);
    r.n = 0;
    req(lt, &r, 4, CLR_LOCK_EX, 0);
    /* PR and CR block EX; NL does not */
    e = find_fx(&r, CLR_LT_BAST, 1);
    assert_non_null(e);
    assert_int_equal(e->mode, CLR_LOCK_EX);
    e = find_fx(&r, CLR_LT_BAST, 2);
    assert_non_null(e);
    assert_int_equal(e->mode, CLR_LOCK_EX);
    assert_null(find_fx(&r, CLR_LT_BAST, 3));
    assert_null(find_fx(&r, CLR_LT_BAST, 4));
    assert_int_equal(r.n, 2);
    /* a second EX waiter: holders were already told about EX */
    r.n = 0;
    req(lt, &r, 5, CLR_LOCK_EX, 0);
    assert_null(find_fx(&r, CLR_LT_BAST, 1));
    /* once re-granted (here: converted) a holder can be told again */
    r.n = 0;
    clr_lt_convert(lt, 1, 1, CLR_LOCK_CR, 0, NULL, record, &r);
    e = find_fx(&r, CLR_LT_BAST, 1);
    assert_non_null(e);
    assert_int_equal(e->mode, CLR_LOCK_EX);
    /* a PW waiter on CW holder: carries PW */
    clr_lt_free(lt);

    lt = clr_lt_new();
    r.n = 0;
    req(lt, &r, 1, CLR_LOCK_CW, 0);
    req(lt, &r, 2, CLR_LOCK_NL, 0);
    r.n = 0;
    clr_lt_convert(lt, 2, 2, CLR_LOCK_PR, 0, NULL, record, &r);
    e = find_fx(&r, CLR_LT_BAST, 1);
    assert_non_null(e);
    assert_int_equal(e->mode, CLR_LOCK_PR);
    /* a queued conversion's granted mode also blocks: it gets BASTs */
    r.n = 0;
    req(lt, &r, 3, CLR_LOCK_EX, 0);
    assert_non_null(find_fx(&r, CLR_LT_BAST, 1));
    assert_null(find_fx(&r, CLR_LT_BAST, 2)); /* NL granted mode */
    clr_lt_free(lt);
}

static void test_remove_owner(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };
    unsigned nres, nlocks;

    (void)state;
    clr_lt_request(lt, 1, 10, "a", 1, CLR_LOCK_EX, 0, record, &r);
    clr_lt_request(lt, 1, 11, "b", 1, CLR_LOCK_PR, 0, record, &r);
    clr_lt_request(lt, 2, 20, "a", 1, CLR_LOCK_PR, 0, record, &r);
    clr_lt_request(lt, 3, 30, "a", 1, CLR_LOCK_PR, 0, record, &r);
    clr_lt_request(lt, 2, 21, "b", 1, CLR_LOCK_EX, 0, record, &r);
    clr_lt_request(lt, 1, 12, "b", 1, CLR_LOCK_NL, 0, record, &r); /* queued behind 21 */
    assert_int_equal(clr_lt_owner_locks(lt, 1), 3);
    r.n = 0;
    assert_int_equal(clr_lt_remove_owner(lt, 1, true, record, &r), 3);
    assert_int_equal(clr_lt_owner_locks(lt, 1), 0);
    /* grants in resource creation order, then queue order */
    assert_int_equal(r.n, 3);
    assert_int_equal(r.fx[0].lkid, 20);
    assert_int_equal(r.fx[1].lkid, 30);
    assert_int_equal(r.fx[2].lkid, 21);
    assert_int_equal(clr_lt_remove_owner(lt, 1, true, record, &r), 0);
    clr_lt_remove_owner(lt, 2, false, record, &r);
    clr_lt_remove_owner(lt, 3, false, record, &r);
    clr_lt_counts(lt, &nres, &nlocks);
    assert_int_equal(nlocks, 0);
    /* "a" keeps its "not valid" LVB, "b" (PR holder only) is gone */
    assert_int_equal(nres, 1);
    assert_int_equal(clr_lt_res_lvb(lt, "b", NULL, NULL), -ENOENT);
    clr_lt_free(lt);
}

/* --- randomised: determinism, invariants, state transfer --- */

static uint64_t rng_state;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

#define R_OWNERS 5
#define R_LOCKS  3 /* per owner */
#define R_RES    3

static void check_invariants(struct clr_lt *lt)
{
    int gr[R_OWNERS * R_LOCKS];
    char nm[R_OWNERS * R_LOCKS];

    (void)nm;
    for (int i = 0; i < R_OWNERS * R_LOCKS; i++)
        if (clr_lt_lock_info(lt, (uint64_t)(i / R_LOCKS), (uint64_t)i, &gr[i], NULL, NULL))
            gr[i] = CLR_LOCK_IV;
    /* lock i uses resource i % R_RES: granted modes there are compatible */
    for (int i = 0; i < R_OWNERS * R_LOCKS; i++)
        for (int j = i + 1; j < R_OWNERS * R_LOCKS; j++)
            if (i % R_RES == j % R_RES)
                assert_true(clr_lock_modes_compat(gr[i], gr[j]));
}

static void random_op(struct clr_lt *lt, clr_lt_emit_fn emit, void *arg)
{
    static const char *names[R_RES] = { "r0", "r1", "r2" };
    uint32_t x = rnd();
    int i = (int)(x % (R_OWNERS * R_LOCKS));
    uint64_t owner = (uint64_t)(i / R_LOCKS), lkid = (uint64_t)i;
    int mode = (int)((x >> 8) % CLR_LOCK_NMODES);
    unsigned flags = ((x >> 12) & 1 ? CLR_LOCK_F_NOQUEUE : 0) | ((x >> 13) & 1 ? CLR_LOCK_F_VALBLK : 0);
    uint8_t lvb[CLR_LOCK_LVB_LEN];

    memset(lvb, (int)(x >> 16), sizeof(lvb));
    switch ((x >> 24) % 8) {
    case 0:
    case 1:
        clr_lt_request(lt, owner, lkid, names[i % R_RES], 2, mode, flags, emit, arg);
        break;
    case 2:
    case 3:
        clr_lt_convert(lt, owner, lkid, mode, flags, lvb, emit, arg);
        break;
    case 4:
    case 5:
        clr_lt_unlock(lt, owner, lkid, flags, lvb, emit, arg);
        break;
    case 6:
        clr_lt_cancel(lt, owner, lkid, emit, arg);
        break;
    default:
        if ((x >> 20) % 8 == 0)
            clr_lt_remove_owner(lt, owner, (x >> 19) & 1, emit, arg);
        break;
    }
}

static uint64_t fx_hash;

static void hash_fx(void *arg, const struct clr_lt_effect *e)
{
    uint64_t *h = arg;
    uint64_t v[6] = { (uint64_t)e->type,   e->owner,   e->lkid, (uint64_t)e->mode,
                      (uint64_t)e->status, e->sb_flags };

    for (int i = 0; i < 6; i++)
        *h = (*h ^ v[i]) * 0x100000001b3ULL;
    if (e->has_lvb)
        for (int i = 0; i < CLR_LOCK_LVB_LEN; i++)
            *h = (*h ^ e->lvb[i]) * 0x100000001b3ULL;
}

static void test_random_deterministic_and_transfer(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        struct clr_lt *a = clr_lt_new(), *b = clr_lt_new(), *c = NULL;
        uint64_t ha = 0, hb = 0;

        rng_state = seed * 0x9e3779b97f4a7c15ULL;
        for (int n = 0; n < 400; n++) {
            random_op(a, hash_fx, &ha);
            check_invariants(a);
            if (n == 200) {
                /* state transfer: c starts from a's encoding */
                size_t len = clr_lt_encoded_size(a);
                uint8_t *buf = malloc(len);

                assert_int_equal(clr_lt_encode(a, buf, len), (long)len);
                c = clr_lt_new();
                assert_int_equal(clr_lt_decode(c, buf, len), 0);
                assert_int_equal(clr_lt_digest(c), clr_lt_digest(a));
                free(buf);
            }
        }
        rng_state = seed * 0x9e3779b97f4a7c15ULL;
        for (int n = 0; n < 400; n++)
            random_op(b, hash_fx, &hb);
        assert_int_equal(ha, hb);
        assert_int_equal(clr_lt_digest(a), clr_lt_digest(b));

        /* replay the second half on c: it must end where a ended */
        rng_state = seed * 0x9e3779b97f4a7c15ULL;
        for (int n = 0; n < 400; n++) {
            if (n <= 200) {
                rnd();
                continue;
            }
            random_op(c, NULL, NULL);
        }
        assert_int_equal(clr_lt_digest(c), clr_lt_digest(a));
        clr_lt_free(a);
        clr_lt_free(b);
        clr_lt_free(c);
    }
    fx_hash = 0;
}

static void test_decode_rejects_garbage(void **state)
{
    struct clr_lt *lt = clr_lt_new();
    struct rec r = { 0 };
    uint8_t buf[4096];
    long n;

    (void)state;
    req(lt, &r, 1, CLR_LOCK_EX, 0);
    req(lt, &r, 2, CLR_LOCK_PR, 0);
    n = clr_lt_encode(lt, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal(clr_lt_encode(lt, buf, 4), -ENOSPC);
    for (long cut = 0; cut < n; cut++)
        assert_int_equal(clr_lt_decode(lt, buf, (size_t)cut), -EBADMSG);
    buf[8 + 1 + 3 + 32 + 1 + 4 + 16] = 9; /* grmode 9 */
    assert_int_equal(clr_lt_decode(lt, buf, (size_t)n), -EBADMSG);
    clr_lt_free(lt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mode_matrix_new_requests),
        cmocka_unit_test(test_mode_matrix_conversions),
        cmocka_unit_test(test_mode_names),
        cmocka_unit_test(test_waiters_fifo),
        cmocka_unit_test(test_conversion_ahead_of_new),
        cmocka_unit_test(test_conversions_fifo_and_new_blocked),
        cmocka_unit_test(test_conversion_deadlock),
        cmocka_unit_test(test_noqueue_and_errors),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_lvb_rules),
        cmocka_unit_test(test_lvb_invalid_after_holder_death),
        cmocka_unit_test(test_bast_targets),
        cmocka_unit_test(test_remove_owner),
        cmocka_unit_test(test_random_deterministic_and_transfer),
        cmocka_unit_test(test_decode_rejects_garbage),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
