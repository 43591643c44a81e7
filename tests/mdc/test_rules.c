/*
 * Unit tests of the cluster rules (engine/cluster/rules.c): each rule on
 * plain facts, as the engine (engine/array/array_cluster.c) and the
 * simulator (tests/sim) fill them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/mdc.h"
#include "cluster/rules.h"

#define MU CLR_MDC_METADATA_UPDATED

static struct clr_rules_ctx ctx(int sender, int type, uint64_t events)
{
    struct clr_rules_ctx x = { .sender = sender, .type = type, .raid_disks = 2, .sb_events = events };

    return x;
}

static struct clr_rules_member mem(enum clr_rules_mstate st, int role)
{
    struct clr_rules_member m = { .state = st, .role = role, .has_io = true, .rebuilder = -1 };

    return m;
}

static struct clr_rules_sbrole sbr(uint16_t role)
{
    struct clr_rules_sbrole r = { true, role };

    return r;
}

static struct clr_rules_own own_of(uint16_t role, uint64_t events)
{
    struct clr_rules_own o = { .readable = true, .present = true, .role = role, .events = events };

    return o;
}

static const struct clr_rules_own no_own;

/* Another node's FAULTY role is followed; a member already faulty, or
 * removed, or not in the superblock, is left alone. */
static void test_reload_faulty(void **state)
{
    struct clr_rules_ctx x = ctx(1, MU, 10);
    struct clr_rules_member m[4] = { mem(CLR_RULES_IN_SYNC, 0), mem(CLR_RULES_FAULTY, 1),
                                     mem(CLR_RULES_REMOVED, -1), mem(CLR_RULES_IN_SYNC, 1) };
    struct clr_rules_sbrole sb[4] = {
        sbr(CLR_RULES_ROLE_FAULTY), sbr(CLR_RULES_ROLE_FAULTY), sbr(CLR_RULES_ROLE_FAULTY), { false, 0 }
    };
    struct clr_rules_own own[4] = { no_own, no_own, no_own, no_own };
    struct clr_rules_change out[4];

    (void)state;
    clr_rules_role_set(&x, 0, true);
    clr_rules_role_set(&x, 1, true);
    assert_true(clr_rules_reload(&x, m, sb, own, 4, out));
    assert_int_equal(out[0].what, CLR_RULES_CH_FAULTY);
    assert_non_null(out[0].why);
    assert_int_equal(out[1].what, 0);
    assert_int_equal(out[2].what, 0);
    assert_int_equal(out[3].what, 0);
    /* nothing to do: no change reported */
    sb[0] = sbr(0);
    assert_false(clr_rules_reload(&x, m, sb, own, 4, out));
    assert_int_equal(out[0].what, 0);
}

/* A superblock not newer than the member's RE_ADD still shows it FAULTY
 * (the re-adder has not written the role yet): not a new failure.  A
 * newer one (the re-adder rolled back, or it failed again) is. */
static void test_reload_readd_exception(void **state)
{
    struct clr_rules_ctx x = ctx(-1, -1, 7);
    struct clr_rules_member m[1] = { mem(CLR_RULES_REBUILDING, 0) };
    struct clr_rules_sbrole sb[1] = { sbr(CLR_RULES_ROLE_FAULTY) };
    struct clr_rules_own own[1] = { no_own };
    struct clr_rules_change out[1];

    (void)state;
    m[0].remote_rebuild = true;
    m[0].readd_events = 7;
    assert_false(clr_rules_reload(&x, m, sb, own, 1, out));
    assert_int_equal(out[0].what, CLR_RULES_CH_READD_KEPT);
    x.sb_events = 6;
    assert_false(clr_rules_reload(&x, m, sb, own, 1, out));
    assert_int_equal(out[0].what, CLR_RULES_CH_READD_KEPT);
    x.sb_events = 8;
    assert_true(clr_rules_reload(&x, m, sb, own, 1, out));
    assert_int_equal(out[0].what, CLR_RULES_CH_FAULTY);
    /* no re-add: a rebuilding member marked faulty is faulty */
    m[0].readd_events = 0;
    x.sb_events = 1;
    assert_true(clr_rules_reload(&x, m, sb, own, 1, out));
    assert_int_equal(out[0].what, CLR_RULES_CH_FAULTY);
}

/* A spare given a free role elsewhere rebuilds there: its rebuilder is the
 * sender of the METADATA_UPDATED, unknown without one; a taken role is
 * not activated, one freed by a faulty mark in the same reload is. */
static void test_reload_activate(void **state)
{
    struct clr_rules_ctx x = ctx(2, MU, 5);
    struct clr_rules_member m[3] = { mem(CLR_RULES_IN_SYNC, 0), mem(CLR_RULES_SPARE, -1),
                                     mem(CLR_RULES_SPARE, -1) };
    struct clr_rules_sbrole sb[3] = { sbr(0), sbr(1), sbr(0) };
    struct clr_rules_own own[3] = { no_own, no_own, no_own };
    struct clr_rules_change out[3];

    (void)state;
    clr_rules_role_set(&x, 0, true);
    assert_true(clr_rules_reload(&x, m, sb, own, 3, out));
    assert_int_equal(out[1].what, CLR_RULES_CH_ACTIVATE);
    assert_int_equal(out[1].role, 1);
    assert_int_equal(out[1].rebuilder, 2);
    assert_int_equal(out[2].what, 0); /* role 0 is held */
    /* a reload for no message (a death, our own metadata section) */
    x = ctx(3, CLR_MDC_TAKEOVER, 5);
    clr_rules_role_set(&x, 0, true);
    assert_true(clr_rules_reload(&x, m, sb, own, 3, out));
    assert_int_equal(out[1].rebuilder, -1);
    /* the holder of role 0 failed: the later spare gets it */
    sb[0] = sbr(CLR_RULES_ROLE_FAULTY);
    assert_true(clr_rules_reload(&x, m, sb, own, 3, out));
    assert_int_equal(out[0].what, CLR_RULES_CH_FAULTY);
    assert_int_equal(out[2].what, CLR_RULES_CH_ACTIVATE);
    assert_int_equal(out[2].role, 0);
    /* a role beyond raid_disks, or a spare role, activates nothing */
    sb[1] = sbr(2);
    sb[2] = sbr(CLR_RULES_ROLE_SPARE);
    sb[0] = sbr(0);
    assert_false(clr_rules_reload(&x, m, sb, own, 3, out));
}

/* A rebuild driven elsewhere: its checkpoint follows the member's own
 * superblock (not a bitmap recovery's), its rebuilder is learned from the
 * METADATA_UPDATED that moved it, and it is in sync once its own
 * superblock, as new as the newest, has the role and no recovery. */
static void test_reload_remote_rebuild(void **state)
{
    struct clr_rules_ctx x = ctx(1, MU, 9);
    struct clr_rules_member m[1] = { mem(CLR_RULES_REBUILDING, 1) };
    struct clr_rules_sbrole sb[1] = { sbr(1) };
    struct clr_rules_own own[1] = { own_of(1, 9) };
    struct clr_rules_change out[1];

    (void)state;
    m[0].remote_rebuild = true;
    m[0].recovery_offset = 100;
    own[0].recovering = true;
    own[0].recovery_offset = 500;
    assert_false(clr_rules_reload(&x, m, sb, own, 1, out));
    assert_int_equal(out[0].what, CLR_RULES_CH_CHECKPOINT);
    assert_int_equal(out[0].recovery_offset, 500);
    assert_int_equal(out[0].rebuilder, 1);
    /* a known rebuilder stays; an older checkpoint is not taken */
    m[0].rebuilder = 3;
    assert_false(clr_rules_reload(&x, m, sb, own, 1, out));
    assert_int_equal(out[0].rebuilder, 3);
    own[0].recovery_offset = 50;
    assert_false(clr_rules_reload(&x, m, sb, own, 1, out));
    assert_int_equal(out[0].what, 0);
    /* a bitmap recovery's offset is no checkpoint */
    own[0].recovery_offset = 500;
    own[0].bitmap_recovery = true;
    assert_false(clr_rules_reload(&x, m, sb, own, 1, out));
    assert_int_equal(out[0].what, 0);
    /* recovered: in sync */
    own[0].recovering = false;
    assert_true(clr_rules_reload(&x, m, sb, own, 1, out));
    assert_int_equal(out[0].what, CLR_RULES_CH_IN_SYNC);
    /* but not from an own superblock older than the newest */
    own[0].events = 8;
    assert_false(clr_rules_reload(&x, m, sb, own, 1, out));
    /* nor one of another role, nor one we did not read */
    own[0] = own_of(0, 9);
    assert_false(clr_rules_reload(&x, m, sb, own, 1, out));
    own[0] = no_own;
    assert_false(clr_rules_reload(&x, m, sb, own, 1, out));
    /* a local rebuild is ours to finish */
    own[0] = own_of(1, 9);
    m[0].remote_rebuild = false;
    assert_false(clr_rules_reload(&x, m, sb, own, 1, out));
    /* a spare activated and already recovered elsewhere (we started
     * late): in sync in the same reload */
    m[0] = mem(CLR_RULES_SPARE, -1);
    assert_true(clr_rules_reload(&x, m, sb, own, 1, out));
    assert_int_equal(out[0].what, CLR_RULES_CH_ACTIVATE | CLR_RULES_CH_IN_SYNC);
}

static void test_recovered_elsewhere(void **state)
{
    struct clr_rules_own o = own_of(1, 4);
    struct clr_rules_sbrole r = sbr(1);

    (void)state;
    assert_true(clr_rules_recovered_elsewhere(&o, &r, 4, 1));
    assert_false(clr_rules_recovered_elsewhere(&o, &r, 4, -1));
    assert_false(clr_rules_recovered_elsewhere(&o, &r, 5, 1));
    o.recovering = true;
    assert_false(clr_rules_recovered_elsewhere(&o, &r, 4, 1));
    o = own_of(1, 4);
    r.present = false;
    assert_false(clr_rules_recovered_elsewhere(&o, &r, 4, 1));
}

/* NEWDISK candidates: a live adder's waits unless settle-all; a dead or
 * unknown adder's is settled; taken only if its superblock and the
 * newest one carry it. */
static void test_candidates(void **state)
{
    struct clr_rules_ctx x = ctx(-1, -1, 1);
    struct clr_rules_candidate c = { true, true, true, { true, 0 } };

    (void)state;
    assert_true(clr_rules_candidate_waits(&x, 2));
    assert_false(clr_rules_candidate_waits(&x, -1));
    x.dead = 1ull << 2;
    assert_false(clr_rules_candidate_waits(&x, 2));
    assert_true(clr_rules_candidate_waits(&x, 1));
    x.settle_all = true;
    assert_false(clr_rules_candidate_waits(&x, 1));

    assert_true(clr_rules_candidate_taken(&c));
    c.sb.role = CLR_RULES_ROLE_SPARE;
    assert_true(clr_rules_candidate_taken(&c));
    c.sb.role = CLR_RULES_ROLE_FAULTY;
    assert_false(clr_rules_candidate_taken(&c));
    c.sb.role = 0;
    c.sb.present = false;
    assert_false(clr_rules_candidate_taken(&c));
    c.sb.present = true;
    c.uuid_match = false;
    assert_false(clr_rules_candidate_taken(&c));
    c.uuid_match = true;
    c.dev_match = false;
    assert_false(clr_rules_candidate_taken(&c));
    c.dev_match = true;
    c.sb_readable = false;
    assert_false(clr_rules_candidate_taken(&c));
}

/* Orphans: a remote rebuild whose rebuilder died, or every remote
 * rebuild when we are alone; never one of an unknown rebuilder while
 * others live, nor a local one, nor one we cannot reach. */
static void test_orphans(void **state)
{
    struct clr_rules_ctx x = ctx(-1, -1, 1);
    struct clr_rules_member m = mem(CLR_RULES_REBUILDING, 0);
    struct clr_rules_own o = own_of(0, 1);

    (void)state;
    m.remote_rebuild = true;
    m.rebuilder = 2;
    assert_false(clr_rules_orphaned(&x, &m));
    x.dead = 1ull << 2;
    assert_true(clr_rules_orphaned(&x, &m));
    m.rebuilder = -1;
    assert_false(clr_rules_orphaned(&x, &m));
    x.alone = true;
    assert_true(clr_rules_orphaned(&x, &m));
    m.has_io = false;
    assert_false(clr_rules_orphaned(&x, &m));
    m.has_io = true;
    m.remote_rebuild = false;
    assert_false(clr_rules_orphaned(&x, &m));
    m = mem(CLR_RULES_FAULTY, 0);
    m.remote_rebuild = true;
    assert_false(clr_rules_orphaned(&x, &m));

    /* it resumes from its own checkpoint, else from 0 */
    o.recovering = true;
    o.recovery_offset = 64;
    assert_int_equal(clr_rules_resume_offset(&o), 64);
    o.bitmap_recovery = true;
    assert_int_equal(clr_rules_resume_offset(&o), 0);
    o.bitmap_recovery = false;
    o.readable = false;
    assert_int_equal(clr_rules_resume_offset(&o), 0);
    o = own_of(0, 1);
    assert_int_equal(clr_rules_resume_offset(&o), 0);
}

static void test_rebuild_owner(void **state)
{
    struct clr_rules_ctx x = ctx(-1, -1, 1);

    (void)state;
    assert_int_equal(clr_rules_rebuild_owner(&x, 1, 1), CLR_RULES_OWNER_MINE);
    assert_int_equal(clr_rules_rebuild_owner(&x, 2, 1), CLR_RULES_OWNER_OTHER);
    x.dead = 1ull << 2;
    assert_int_equal(clr_rules_rebuild_owner(&x, 2, 1), CLR_RULES_OWNER_ORPHAN);
    assert_int_equal(clr_rules_rebuild_owner(&x, 3, 1), CLR_RULES_OWNER_OTHER);
    x.alone = true;
    assert_int_equal(clr_rules_rebuild_owner(&x, 3, 1), CLR_RULES_OWNER_ORPHAN);

    assert_true(clr_rules_rebuild_done(false, false));
    assert_false(clr_rules_rebuild_done(true, false));
    assert_false(clr_rules_rebuild_done(false, true));
}

/* RE_ADD: the member must be faulty or removed, its role (or its own
 * superblock's, when that names it) free and < raid_disks; it is then
 * rebuilt by the sender, from the current events on. */
static void test_remote_readd(void **state)
{
    struct clr_rules_ctx x = ctx(3, CLR_MDC_RE_ADD, 12);
    struct clr_rules_member m = mem(CLR_RULES_FAULTY, 1);
    struct clr_rules_own o = own_of(0, 11);
    struct clr_rules_readd d;

    (void)state;
    assert_int_equal(clr_rules_remote_readd(&x, &m, &o, true, &d), 0);
    assert_int_equal(d.state, CLR_RULES_REBUILDING);
    assert_int_equal(d.role, 1);
    assert_int_equal(d.rebuilder, 3);
    assert_int_equal(d.readd_events, 12);
    /* a removed member without a role: its own superblock's */
    m = mem(CLR_RULES_REMOVED, -1);
    assert_int_equal(clr_rules_remote_readd(&x, &m, &o, true, &d), 0);
    assert_int_equal(d.role, 0);
    /* not if that superblock is another device's, or unread */
    assert_int_equal(clr_rules_remote_readd(&x, &m, &o, false, &d), -EINVAL);
    o.readable = false;
    assert_int_equal(clr_rules_remote_readd(&x, &m, &o, true, &d), -EINVAL);
    /* role held by another member */
    o = own_of(0, 11);
    clr_rules_role_set(&x, 0, true);
    assert_int_equal(clr_rules_remote_readd(&x, &m, &o, true, &d), -EINVAL);
    clr_rules_role_set(&x, 0, false);
    /* role out of range */
    o.role = 2;
    assert_int_equal(clr_rules_remote_readd(&x, &m, &o, true, &d), -EINVAL);
    /* a member in use is not re-added */
    m = mem(CLR_RULES_IN_SYNC, 1);
    assert_int_equal(clr_rules_remote_readd(&x, &m, &o, true, &d), -EINVAL);
    m = mem(CLR_RULES_SPARE, -1);
    assert_int_equal(clr_rules_remote_readd(&x, &m, &o, true, &d), -EINVAL);
}

/* A start must run every member the superblock gives a role: one it
 * loaded faulty (re-added elsewhere meanwhile), one it has no handle for
 * (path not given) or none at all is refused; spares and faulty roles
 * need not be run, nor roles beyond raid_disks. */
static void test_start_missing(void **state)
{
    struct clr_rules_ctx x = ctx(-1, -1, 10);
    struct clr_rules_member m[4] = { mem(CLR_RULES_IN_SYNC, 0), mem(CLR_RULES_REBUILDING, 1),
                                     mem(CLR_RULES_FAULTY, -1), mem(CLR_RULES_SPARE, -1) };
    struct clr_rules_sbrole sb[4] = { sbr(0), sbr(1), sbr(CLR_RULES_ROLE_FAULTY), sbr(CLR_RULES_ROLE_SPARE) };

    (void)state;
    assert_int_equal(clr_rules_start_missing(&x, m, sb, 4), -1);
    /* member 1 re-added elsewhere while this node loaded it faulty */
    m[1] = mem(CLR_RULES_FAULTY, 1);
    assert_int_equal(clr_rules_start_missing(&x, m, sb, 4), 1);
    /* not even known here (left out, or its path not given) */
    m[1] = mem(CLR_RULES_REMOVED, -1);
    assert_int_equal(clr_rules_start_missing(&x, m, sb, 4), 1);
    m[1] = mem(CLR_RULES_REBUILDING, 1);
    m[1].has_io = false;
    assert_int_equal(clr_rules_start_missing(&x, m, sb, 4), 1);
    m[1].has_io = true;
    /* the first one is named */
    m[0] = mem(CLR_RULES_FAULTY, 0);
    m[1] = mem(CLR_RULES_FAULTY, 1);
    assert_int_equal(clr_rules_start_missing(&x, m, sb, 4), 0);
    /* a role beyond raid_disks, or a member not in the superblock */
    m[0] = mem(CLR_RULES_IN_SYNC, 0);
    sb[1] = sbr(2);
    assert_int_equal(clr_rules_start_missing(&x, m, sb, 4), -1);
    sb[1].present = false;
    sb[1].role = 1;
    assert_int_equal(clr_rules_start_missing(&x, m, sb, 4), -1);
}

/* Admission: a remote window holds writes inside it, a lost unfenced
 * node holds every write. */
static void test_admit(void **state)
{
    struct clr_rules_window w = { false, -1, 0, 0 };

    (void)state;
    assert_int_equal(clr_rules_admit(&w, 0, 8), CLR_RULES_ADMIT);
    w.win_from = 1;
    w.win_lo = 64;
    w.win_hi = 128;
    assert_int_equal(clr_rules_admit(&w, 0, 64), CLR_RULES_ADMIT);
    assert_int_equal(clr_rules_admit(&w, 128, 136), CLR_RULES_ADMIT);
    assert_int_equal(clr_rules_admit(&w, 60, 65), CLR_RULES_WAIT_WINDOW);
    assert_int_equal(clr_rules_admit(&w, 127, 200), CLR_RULES_WAIT_WINDOW);
    assert_true(clr_rules_in_window(&w, 64, 65));
    assert_false(clr_rules_in_window(&w, 128, 129));
    w.held = true;
    assert_int_equal(clr_rules_admit(&w, 0, 8), CLR_RULES_WAIT_HOLD);
    assert_int_equal(clr_rules_admit(&w, 64, 72), CLR_RULES_WAIT_WINDOW);
    w.win_from = -1;
    assert_int_equal(clr_rules_admit(&w, 64, 72), CLR_RULES_WAIT_HOLD);
    w.held = false;
    assert_int_equal(clr_rules_admit(&w, 64, 72), CLR_RULES_ADMIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reload_faulty),
        cmocka_unit_test(test_reload_readd_exception),
        cmocka_unit_test(test_reload_activate),
        cmocka_unit_test(test_reload_remote_rebuild),
        cmocka_unit_test(test_recovered_elsewhere),
        cmocka_unit_test(test_candidates),
        cmocka_unit_test(test_orphans),
        cmocka_unit_test(test_rebuild_owner),
        cmocka_unit_test(test_remote_readd),
        cmocka_unit_test(test_start_missing),
        cmocka_unit_test(test_admit),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
