/* Unit tests of the lock-rank checks (engine/array/lockrank.h): locks
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

#include "array/lockrank.h"

static struct arr_mutex lo, mid, hi;

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
    arr_mutex_lock(&lo);
    arr_mutex_lock(&mid);
    arr_mutex_lock(&hi);
    arr_mutex_unlock(&mid); /* any release order */
    arr_mutex_unlock(&hi);
    arr_mutex_unlock(&lo);
}

static void inverted(void)
{
    arr_mutex_lock(&hi);
    arr_mutex_lock(&lo);
}

static void twice(void)
{
    arr_mutex_lock(&mid);
    arr_mutex_lock(&mid);
}

static void range_under_array_lock(void)
{
    arr_mutex_lock(&hi); /* rank of a->lock */
    ARR_RANK_ACQUIRE(ARR_RANK_RANGE, "range lock");
}

static void release_unheld(void)
{
    ARR_RANK_RELEASE(ARR_RANK_RANGE, "range lock");
}

static void test_in_order_passes(void **s)
{
    (void)s;
    assert_int_equal(in_child(in_order), 0);
    in_order();
    assert_false(arr_rank_held(ARR_RANK_ARRAY));
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
    assert_int_equal(arr_mutex_trylock(&hi), 0);
    assert_true(arr_rank_held(ARR_RANK_ARRAY));
    arr_mutex_unlock(&hi);
    assert_false(arr_rank_held(ARR_RANK_ARRAY));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_passes),
        cmocka_unit_test(test_violations_abort),
        cmocka_unit_test(test_trylock_is_recorded),
    };

    arr_mutex_init(&lo, ARR_RANK_MGMT, "lo");
    arr_mutex_init(&mid, ARR_RANK_META, "mid");
    arr_mutex_init(&hi, ARR_RANK_ARRAY, "hi");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
