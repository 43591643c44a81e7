/*
 * Unit tests of the clustered RAID5/6 rules (engine/cluster/zone.c), each
 * rule on plain facts; tests/sim/sim56 runs them under faults.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/zone.h"

static struct clr_zone_ctx ctx(uint64_t now, uint64_t unrecovered)
{
    struct clr_zone_ctx x = { .now = now, .min_hold = 10, .unrecovered = unrecovered };

    return x;
}

static struct clr_zone_cache held(int mode, uint64_t at)
{
    struct clr_zone_cache z = { .mode = mode, .granted_at = at, .want = CLR_ZONE_IV };

    return z;
}

/* A request never spans two zones. */
static void test_split(void **state)
{
    struct clr_zone_geom g = { .stripes = 100, .stripes_per_zone = 4 };

    (void)state;
    assert_int_equal(clr_zone_split(&g, 0, 10), 4);
    assert_int_equal(clr_zone_split(&g, 3, 10), 1);
    assert_int_equal(clr_zone_split(&g, 4, 2), 2);
    assert_int_equal(clr_zone_split(&g, 5, 3), 3);
    assert_int_equal(clr_zone_of(&g, 7), 1);
    assert_int_equal(clr_zone_count(&g), 25);
    g.stripes = 101;
    assert_int_equal(clr_zone_count(&g), 26);
}

/* The LVB round-trips; zero is a zone nobody wrote; a not-valid mark or a
 * foreign value is suspect, never zero. */
static void test_lvb(void **state)
{
    struct clr_zone_lvb in = { .seq = 0x1122334455667788ull, .writer = 3, .epoch = 9 }, out;
    uint8_t buf[32], zero[32] = { 0 };

    (void)state;
    clr_zone_lvb_encode(&in, buf);
    assert_int_equal(clr_zone_lvb_decode(buf, false, &out), CLR_ZONE_LVB_VALID);
    assert_true(out.seq == in.seq);
    assert_int_equal(out.writer, 3);
    assert_int_equal(out.epoch, 9);
    assert_int_equal(clr_zone_lvb_decode(buf, true, &out), CLR_ZONE_LVB_SUSPECT);
    assert_int_equal(clr_zone_lvb_decode(zero, false, &out), CLR_ZONE_LVB_NEW);
    assert_int_equal(clr_zone_lvb_decode(zero, true, &out), CLR_ZONE_LVB_SUSPECT);
    buf[0] ^= 1;
    assert_int_equal(clr_zone_lvb_decode(buf, false, &out), CLR_ZONE_LVB_SUSPECT);
}

/* Fault-free reads take no lock; degraded reads and checks PR; writes and
 * resync EX. */
static void test_need(void **state)
{
    (void)state;
    assert_int_equal(clr_zone_need(CLR_ZONE_OP_READ), CLR_ZONE_IV);
    assert_int_equal(clr_zone_need(CLR_ZONE_OP_READ_DEGRADED), CLR_ZONE_PR);
    assert_int_equal(clr_zone_need(CLR_ZONE_OP_CHECK), CLR_ZONE_PR);
    assert_int_equal(clr_zone_need(CLR_ZONE_OP_WRITE), CLR_ZONE_EX);
    assert_int_equal(clr_zone_need(CLR_ZONE_OP_RESYNC), CLR_ZONE_EX);
}

static void test_admit_modes(void **state)
{
    struct clr_zone_ctx x = ctx(100, 0);
    struct clr_zone_cache z = held(CLR_ZONE_IV, 0);

    (void)state;
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_READ), CLR_ZONE_ADMIT);
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_WRITE), CLR_ZONE_REQUEST);
    z.requesting = true;
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_WRITE), CLR_ZONE_WAIT);
    z = held(CLR_ZONE_PR, 90);
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_READ_DEGRADED), CLR_ZONE_ADMIT);
    /* PR to EX: never a conversion up; drop PR once nothing uses it */
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_WRITE), CLR_ZONE_DROP);
    z.inflight = 1;
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_WRITE), CLR_ZONE_WAIT);
    z = held(CLR_ZONE_EX, 90);
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_WRITE), CLR_ZONE_ADMIT);
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_CHECK), CLR_ZONE_ADMIT);
    z.releasing = true;
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_WRITE), CLR_ZONE_WAIT);
}

/* A blocked lock keeps admitting for the minimum hold, then drains. */
static void test_admit_min_hold(void **state)
{
    struct clr_zone_cache z = held(CLR_ZONE_EX, 100);
    struct clr_zone_ctx x = ctx(105, 0);

    (void)state;
    z.blocked = true;
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_WRITE), CLR_ZONE_ADMIT);
    x.now = 110;
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_WRITE), CLR_ZONE_WAIT);
}

/* A zone granted with a suspect LVB waits until every dead slot's log is
 * replayed, then is used and stops being suspect. */
static void test_admit_suspect(void **state)
{
    struct clr_zone_cache z = held(CLR_ZONE_IV, 0);
    struct clr_zone_ctx x = ctx(100, 1u << 2);

    (void)state;
    clr_zone_granted(&z, &x, CLR_ZONE_EX, CLR_ZONE_LVB_SUSPECT);
    assert_true(z.suspect);
    assert_int_equal(z.granted_at, 100);
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_WRITE), CLR_ZONE_WAIT);
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_READ_DEGRADED), CLR_ZONE_WAIT);
    assert_false(clr_zone_unlock_writes_lvb(&z));
    x.unrecovered = 0;
    assert_int_equal(clr_zone_admit(&z, &x, CLR_ZONE_OP_WRITE), CLR_ZONE_ADMIT);
    assert_false(z.suspect);
    assert_true(clr_zone_unlock_writes_lvb(&z));
    clr_zone_granted(&z, &x, CLR_ZONE_EX, CLR_ZONE_LVB_NEW);
    assert_false(z.suspect);
}

/* Giving a zone up: only when asked, after the hold, drained, retired. */
static void test_release(void **state)
{
    struct clr_zone_cache z = held(CLR_ZONE_EX, 100);
    struct clr_zone_ctx x = ctx(200, 0);

    (void)state;
    assert_int_equal(clr_zone_release_step(&z, &x), CLR_ZONE_KEEP);
    z.blocked = true;
    x.now = 105;
    assert_int_equal(clr_zone_release_step(&z, &x), CLR_ZONE_KEEP);
    x.now = 110;
    z.inflight = 2;
    z.logged = 1;
    assert_int_equal(clr_zone_release_step(&z, &x), CLR_ZONE_DRAIN);
    z.inflight = 0;
    assert_int_equal(clr_zone_release_step(&z, &x), CLR_ZONE_RETIRE);
    z.logged = 0;
    assert_int_equal(clr_zone_release_step(&z, &x), CLR_ZONE_UNLOCK);
    /* an unusable suspect zone goes at once, its not-valid mark kept */
    z = held(CLR_ZONE_EX, 100);
    z.blocked = true;
    z.suspect = true;
    x = ctx(101, 1);
    assert_int_equal(clr_zone_release_step(&z, &x), CLR_ZONE_UNLOCK);
    assert_false(clr_zone_unlock_writes_lvb(&z));
    z = held(CLR_ZONE_PR, 100);
    assert_false(clr_zone_unlock_writes_lvb(&z));
}

/* The newest header whose checksum holds; a new one never overwrites it. */
static void test_log_pick(void **state)
{
    uint64_t gen[2] = { 7, 8 };
    bool valid[2] = { true, false };

    (void)state;
    assert_int_equal(clr_zone_log_pick(gen, valid, 2), 0);
    assert_int_equal(clr_zone_log_next_copy(gen, valid, 2), 1);
    valid[1] = true;
    assert_int_equal(clr_zone_log_pick(gen, valid, 2), 1);
    assert_int_equal(clr_zone_log_next_copy(gen, valid, 2), 0);
    valid[0] = valid[1] = false;
    assert_int_equal(clr_zone_log_pick(gen, valid, 2), -1);
    assert_int_equal(clr_zone_log_next_copy(gen, valid, 2), 0);
    assert_false(clr_zone_may_issue(false));
    assert_true(clr_zone_may_issue(true));
    assert_false(clr_zone_log_may_retire(false));
    assert_true(clr_zone_log_may_retire(true));
}

static void test_replay_plan(void **state)
{
    (void)state;
    assert_int_equal(clr_zone_replay_plan(5, 2, 0, true, false), CLR_ZONE_REPLAY_PARITY);
    assert_int_equal(clr_zone_replay_plan(5, 2, 0, false, false), CLR_ZONE_REPLAY_NONE);
    assert_int_equal(clr_zone_replay_plan(5, 1, 1, true, false), CLR_ZONE_REPLAY_REBUILD);
    assert_int_equal(clr_zone_replay_plan(5, 2, 1, true, false), CLR_ZONE_REPLAY_REBUILD_LOST);
    /* RAID5 has no Q, whatever the caller says */
    assert_int_equal(clr_zone_replay_plan(5, 1, 0, false, true), CLR_ZONE_REPLAY_NONE);
    assert_int_equal(clr_zone_replay_plan(6, 3, 0, false, true), CLR_ZONE_REPLAY_PARITY);
    assert_int_equal(clr_zone_replay_plan(6, 1, 1, true, true), CLR_ZONE_REPLAY_REBUILD);
    assert_int_equal(clr_zone_replay_plan(6, 1, 1, false, true), CLR_ZONE_REPLAY_REBUILD);
    assert_int_equal(clr_zone_replay_plan(6, 2, 1, true, true), CLR_ZONE_REPLAY_REBUILD_LOST);
    assert_int_equal(clr_zone_replay_plan(6, 2, 2, true, true), CLR_ZONE_REPLAY_REBUILD_LOST);
    assert_true(clr_zone_replay_q(6));
    assert_false(clr_zone_replay_q(5));
}

static void test_recovery(void **state)
{
    (void)state;
    assert_true(clr_zone_recover_needed(1u << 3, 3));
    assert_false(clr_zone_recover_needed(1u << 3, 2));
    assert_false(clr_zone_recover_needed(~0ull, 64));
    assert_false(clr_zone_join_may_write(1u << 1, 1));
    assert_true(clr_zone_join_may_write(1u << 1, 0));
    assert_false(clr_zone_join_may_write(0, -1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),          cmocka_unit_test(test_lvb),
        cmocka_unit_test(test_need),           cmocka_unit_test(test_admit_modes),
        cmocka_unit_test(test_admit_min_hold), cmocka_unit_test(test_admit_suspect),
        cmocka_unit_test(test_release),        cmocka_unit_test(test_log_pick),
        cmocka_unit_test(test_replay_plan),    cmocka_unit_test(test_recovery),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
