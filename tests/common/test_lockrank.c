/* Unit tests of the lock-rank checks (engine/common/lockrank.h): locks
 * taken in rank order pass; a lower or equal rank taken while holding a
 * higher one aborts the process (checked in a child). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/lockrank.h"

static struct clr_mutex lo, mid, hi;

static int in_child(void (*fn)(void))
{
    pid_t p = fork();
    int st = 0;

    if (p == 0) {
        fn();
        _exit(0);
    }
    assert_true(p > 0);
    assert_int_equal(waitpid(p, &st, 0), p);
    return WIFSIGNALED(st) ? WTERMSIG(st) : -WEXITSTATUS(st);
}

static void in_order(void)
{
    clr_mutex_lock(&lo);
    clr_mutex_lock(&mid);
    clr_mutex_lock(&hi);
    clr_mutex_unlock(&mid); /* any release order */
    clr_mutex_unlock(&hi);
    clr_mutex_unlock(&lo);
}

static void inverted(void)
{
    clr_mutex_lock(&hi);
    clr_mutex_lock(&lo);
}

static void twice(void)
{
    clr_mutex_lock(&mid);
    clr_mutex_lock(&mid);
}

static void range_under_array_lock(void)
{
    clr_mutex_lock(&hi); /* rank of a->lock */
    CLR_RANK_ACQUIRE(CLR_RANK_RANGE, "range lock");
}

static void release_unheld(void)
{
    CLR_RANK_RELEASE(CLR_RANK_RANGE, "range lock");
}

static void test_in_order_passes(void **s)
{
    (void)s;
    assert_int_equal(in_child(in_order), 0);
    in_order();
    assert_false(clr_rank_held(CLR_RANK_ARRAY));
}

static void test_violations_abort(void **s)
{
    (void)s;
    assert_int_equal(in_child(inverted), SIGABRT);
    assert_int_equal(in_child(twice), SIGABRT);
    assert_int_equal(in_child(range_under_array_lock), SIGABRT);
    assert_int_equal(in_child(release_unheld), SIGABRT);
}

static void test_trylock_is_recorded(void **s)
{
    (void)s;
    assert_int_equal(clr_mutex_trylock(&hi), 0);
    assert_true(clr_rank_held(CLR_RANK_ARRAY));
    clr_mutex_unlock(&hi);
    assert_false(clr_rank_held(CLR_RANK_ARRAY));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_passes),
        cmocka_unit_test(test_violations_abort),
        cmocka_unit_test(test_trylock_is_recorded),
    };

    clr_mutex_init(&lo, CLR_RANK_MGMT, "lo");
    clr_mutex_init(&mid, CLR_RANK_META, "mid");
    clr_mutex_init(&hi, CLR_RANK_ARRAY, "hi");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
