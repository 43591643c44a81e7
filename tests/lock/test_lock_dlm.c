/*
 * Unit tests of the dlm backend's glue against a FAKE libdlm
 * (fake_libdlm.c).  The real kernel DLM is not available on the machine
 * these tests were written on; nothing here proves the backend works
 * against it (tests/uml/dlm-lock-service.sh does, inside User-Mode Linux).
 */
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_libdlm.h"
#include "lock/lock.h"
#include "lock/lock_internal.h"

static struct clr_ls *open_dlm(const char *name)
{
    struct clr_ls_config cfg = { .backend = "dlm", .name = name, .backend_arg = "no-cpg" };
    struct clr_ls *ls = NULL;

    assert_int_equal(clr_ls_open(&cfg, &ls), 0);
    assert_string_equal(clr_ls_backend_name(ls), "dlm");
    return ls;
}

static void test_no_kernel_dlm(void **state)
{
    struct clr_ls_config cfg = { .backend = "dlm", .name = "x", .backend_arg = "no-cpg" };
    struct clr_ls *ls;

    (void)state;
    fake_dlm_set_unavailable(true);
    assert_int_equal(clr_ls_open(&cfg, &ls), -ENOTCONN);
    fake_dlm_set_unavailable(false);
}

static int basts;
static int last_bast;

static void on_bast(struct clr_lock *lk, int mode, void *arg)
{
    (void)lk;
    (void)arg;
    __atomic_add_fetch(&basts, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&last_bast, mode, __ATOMIC_SEQ_CST);
}

static void test_locks_through_libdlm(void **state)
{
    struct clr_ls *a = open_dlm("d1"), *b = open_dlm("d1");
    struct clr_lock *la = clr_lock_create(a, "bitmap0000", NULL, on_bast, NULL);
    struct clr_lock *lb = clr_lock_create(b, "bitmap0000", NULL, NULL, NULL);
    int calls = fake_dlm_lock_calls();

    (void)state;
    clr_ls_start_dispatch_thread(a);
    assert_int_equal(clr_lock_sync(la, CLR_LOCK_PW, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_int_equal(clr_lock_mode(la), CLR_LOCK_PW);
    assert_int_equal(clr_lock_sync(lb, CLR_LOCK_EX, CLR_LOCK_F_NOQUEUE, 1000), -EAGAIN);
    assert_int_equal(clr_lock_mode(lb), CLR_LOCK_IV);
    /* PW -> PW re-request publishes the LVB, a CR reader sees it */
    memcpy(clr_lock_lvb(la), "resync 0-100", 13);
    assert_int_equal(clr_lock_sync(la, CLR_LOCK_PW, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_int_equal(clr_lock_sync(lb, CLR_LOCK_CR, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_string_equal((char *)clr_lock_lvb(lb), "resync 0-100");
    /* a blocked conversion times out, is cancelled, keeps CR */
    assert_int_equal(clr_lock_sync(lb, CLR_LOCK_EX, 0, 100), -ETIMEDOUT);
    assert_int_equal(clr_lock_mode(lb), CLR_LOCK_CR);
    assert_true(__atomic_load_n(&basts, __ATOMIC_SEQ_CST) >= 1);
    /* libdlm gives no mode */
    assert_int_equal(__atomic_load_n(&last_bast, __ATOMIC_SEQ_CST), CLR_LOCK_EX);
    assert_int_equal(clr_unlock_sync(la, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_int_equal(clr_lock_mode(la), CLR_LOCK_IV);
    assert_int_equal(clr_lock_sync(lb, CLR_LOCK_EX, 0, 1000), 0);
    assert_true(fake_dlm_lock_calls() - calls >= 6);
    clr_ls_close(a); /* releases through dlm_release_lockspace */
    clr_ls_close(b);
}

static void test_async_via_fd(void **state)
{
    struct clr_ls *a = open_dlm("d2");
    struct clr_lock *la = clr_lock_create(a, "r", NULL, NULL, NULL);
    struct pollfd pfd = { .fd = clr_ls_fd(a), .events = POLLIN };

    (void)state;
    /* without an ast the completion still updates the lock object */
    assert_int_equal(clr_lock_request(la, CLR_LOCK_EX, 0), 0);
    for (int i = 0; i < 100 && clr_lock_mode(la) != CLR_LOCK_EX; i++)
        usleep(10000);
    assert_int_equal(clr_lock_mode(la), CLR_LOCK_EX);
    assert_int_equal(poll(&pfd, 1, 0), 0); /* no ast registered: nothing queued */
    assert_int_equal(clr_unlock_sync(la, 0, 1000), 0);
    assert_int_equal(clr_lock_destroy(la), 0);
    clr_ls_close(a);
}

/* Each member claims the first free slotNNNN lock (NOQUEUE EX, then PW
 * for life with {magic, nodeid, pid} in its LVB); a clean leave zeroes the
 * LVB and frees the slot for the next joiner. */
static void test_slots_claimed(void **state)
{
    struct clr_ls *a = open_dlm("d3"), *b = open_dlm("d3"), *c;
    struct clr_lock *probe;
    static const uint8_t zero[32];

    (void)state;
    assert_int_equal(clr_ls_our_slot(a), 1);
    assert_int_equal(clr_ls_our_slot(b), 2);
    /* a's slot is held: a NOQUEUE probe fails at once */
    c = open_dlm("d3");
    assert_int_equal(clr_ls_our_slot(c), 3);
    probe = clr_lock_create(c, "slot0000", NULL, NULL, NULL);
    assert_int_equal(clr_lock_sync(probe, CLR_LOCK_EX, CLR_LOCK_F_NOQUEUE | CLR_LOCK_F_VALBLK, 1000),
                     -EAGAIN);
    /* the holder's LVB says who holds it: a CR reader sees the magic */
    assert_int_equal(clr_lock_sync(probe, CLR_LOCK_CR, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_memory_equal(clr_lock_lvb(probe), "TOLS", 4); /* 0x534c4f54 little-endian */
    assert_int_equal(clr_unlock_sync(probe, 0, 1000), 0);
    /* a clean leave zeroes it and frees the slot */
    clr_ls_close(a);
    assert_int_equal(clr_lock_sync(probe, CLR_LOCK_EX, CLR_LOCK_F_NOQUEUE | CLR_LOCK_F_VALBLK, 1000), 0);
    assert_memory_equal(clr_lock_lvb(probe), zero, 32);
    assert_int_equal(clr_unlock_sync(probe, 0, 1000), 0);
    clr_lock_destroy(probe);
    a = open_dlm("d3");
    assert_int_equal(clr_ls_our_slot(a), 1);
    clr_ls_close(a);
    clr_ls_close(b);
    clr_ls_close(c);
}

/* ---- departures (CPG injected through clr_lock_dlm_test_left) ---- */

static pthread_mutex_t ev_mu = PTHREAD_MUTEX_INITIALIZER;
static struct clr_ls_event evs[64];
static int nevs;

static void on_event(struct clr_ls *ls, const struct clr_ls_event *ev, void *arg)
{
    (void)ls;
    (void)arg;
    pthread_mutex_lock(&ev_mu);
    if (nevs < 64)
        evs[nevs++] = *ev;
    pthread_mutex_unlock(&ev_mu);
}

/* Index of the first event of @type at or after @from, waiting up to
 * @ms; -1 if none came. */
static int wait_event(int from, enum clr_ls_event_type type, int ms)
{
    for (int t = 0; t <= ms; t += 10) {
        pthread_mutex_lock(&ev_mu);
        for (int i = from; i < nevs; i++)
            if (evs[i].type == type) {
                pthread_mutex_unlock(&ev_mu);
                return i;
            }
        pthread_mutex_unlock(&ev_mu);
        usleep(10000);
    }
    return -1;
}

static void test_departures(void **state)
{
    struct clr_ls_config cfg = { .backend = "dlm", .name = "d4", .backend_arg = "no-cpg", .event = on_event };
    struct clr_ls *a, *b, *c, *d;
    int i, j;

    (void)state;
    assert_int_equal(clr_ls_open(&cfg, &a), 0);
    clr_ls_start_dispatch_thread(a);
    assert_int_equal(clr_ls_our_slot(a), 1);
    b = open_dlm("d4");
    assert_int_equal(clr_ls_our_slot(b), 2);

    /* b's node is lost: MEMBER_LOST at once; MEMBER_FAILED only once the
     * DLM has let b's slot lock go (here: b dies) */
    assert_int_equal(clr_lock_dlm_test_left(a, 7, 77, 2, true), 0);
    i = wait_event(0, CLR_LS_EV_MEMBER_LOST, 2000);
    assert_true(i >= 0);
    assert_int_equal(evs[i].slot, 2);
    assert_int_equal(evs[i].nodeid, 7);
    assert_true(wait_event(0, CLR_LS_EV_PREP, 0) >= 0);
    assert_int_equal(wait_event(i, CLR_LS_EV_MEMBER_FAILED, 300), -1);
    assert_int_equal(wait_event(i, CLR_LS_EV_DONE, 0), -1);
    fake_dlm_crash_newest(); /* b */
    j = wait_event(i, CLR_LS_EV_MEMBER_FAILED, 2000);
    assert_true(j > i);
    assert_int_equal(evs[j].slot, 2);
    assert_int_equal(evs[j].pid, 77);
    assert_true(wait_event(j, CLR_LS_EV_DONE, 2000) > j);

    /* a process that died before announcing its slot: found by the
     * sweep (its slot lock granted with VALNOTVALID / our magic) */
    c = open_dlm("d4");
    assert_int_equal(clr_ls_our_slot(c), 2); /* the probe released it */
    fake_dlm_crash_newest();                 /* c */
    pthread_mutex_lock(&ev_mu);
    i = nevs;
    pthread_mutex_unlock(&ev_mu);
    assert_int_equal(clr_lock_dlm_test_left(a, 8, 88, 0, false), 0);
    j = wait_event(i, CLR_LS_EV_MEMBER_FAILED, 3000);
    assert_true(j >= 0);
    assert_int_equal(evs[j].slot, 2);
    assert_int_equal(wait_event(i, CLR_LS_EV_MEMBER_LOST, 0), -1); /* a process: no hold */
    assert_true(wait_event(j, CLR_LS_EV_DONE, 2000) > j);

    /* a clean leaver's slot is found free and zeroed: nothing to take */
    d = open_dlm("d4");
    assert_int_equal(clr_ls_our_slot(d), 2);
    clr_ls_close(d);
    pthread_mutex_lock(&ev_mu);
    i = nevs;
    pthread_mutex_unlock(&ev_mu);
    assert_int_equal(clr_lock_dlm_test_left(a, 9, 99, 0, false), 0);
    j = wait_event(i, CLR_LS_EV_DONE, 3000);
    assert_true(j >= 0);
    assert_int_equal(wait_event(i, CLR_LS_EV_MEMBER_FAILED, 0), -1);
    clr_ls_close(a);
    clr_ls_close(b);
    clr_ls_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_kernel_dlm), cmocka_unit_test(test_locks_through_libdlm),
        cmocka_unit_test(test_async_via_fd),  cmocka_unit_test(test_slots_claimed),
        cmocka_unit_test(test_departures),
    };

    clr_lock_cluster_backends();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
