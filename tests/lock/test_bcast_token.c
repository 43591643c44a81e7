/*
 * White-box test of the token hand-over in the broadcast layer: this file
 * includes engine/lock/bcast.c to reach its sender mutex.
 *
 * The token holder keeps the token after its round unless its sender saw
 * token_wanted (clr_bcast_send); otherwise its receiver gives it up
 * (recv_thread).  A BAST that comes after the sender's check but before
 * it drops send_mu finds send_mu busy; the receiver must then retry, not
 * sleep until the next message (the BAST is not sent again): every other
 * sender would wait for the token until it times out.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/lockrank.h"
#include "lock/bcast.c"

static int on_msg(void *arg, const struct clr_bcast_msg *m)
{
    (void)arg;
    (void)m;
    return 0;
}

static struct clr_ls *member(const char *name)
{
    struct clr_ls_config cfg = { .backend = "local", .name = name };
    struct clr_ls *ls;

    assert_int_equal(clr_ls_open(&cfg, &ls), 0);
    assert_int_equal(clr_ls_start_dispatch_thread(ls), 0);
    return ls;
}

struct sender {
    struct clr_bcast *b;
    int rc;
};

static void *send_one(void *arg)
{
    struct sender *s = arg;
    struct clr_bcast_msg m = { .type = 1 };
    struct clr_bcast_result res;

    s->rc = clr_bcast_send(s->b, &m, &res);
    return NULL;
}

static bool wanted(struct clr_bcast *b)
{
    bool w;

    clr_mutex_lock(&b->mu);
    w = b->token_wanted;
    clr_mutex_unlock(&b->mu);
    return w;
}

static void test_token_given_after_busy_sender(void **state)
{
    struct clr_ls *la = member("bt1"), *lb = member("bt1");
    struct clr_bcast *a, *b;
    struct clr_bcast_msg m = { .type = 1 };
    struct clr_bcast_result res;
    struct sender s = { 0 };
    pthread_t th;
    uint64_t t0;

    (void)state;
    /* a short timeout: the bug shows as b's token request timing out */
    assert_int_equal(clr_bcast_open(la, on_msg, NULL, 3000, &a), 0);
    assert_int_equal(clr_bcast_open(lb, on_msg, NULL, 3000, &b), 0);
    /* a broadcasts and, unasked, keeps the token */
    assert_int_equal(clr_bcast_send(a, &m, &res), 0);
    assert_true(a->token_held);
    assert_int_equal(clr_lock_mode(a->token), CLR_LOCK_EX);
    /* a's sender is past its token_wanted check, not yet done */
    clr_mutex_lock(&a->send_mu);
    s.b = b;
    assert_int_equal(pthread_create(&th, NULL, send_one, &s), 0);
    /* b's token request BASTs a; a's receiver finds send_mu busy */
    t0 = clr_lock_now_ms();
    while (!wanted(a) && clr_lock_now_ms() - t0 < 2000)
        usleep(1000);
    assert_true(wanted(a));
    usleep(100000);
    assert_int_equal(clr_lock_mode(a->token), CLR_LOCK_EX);
    clr_mutex_unlock(&a->send_mu);
    /* a's receiver gives the token up now, not at b's timeout */
    t0 = clr_lock_now_ms();
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(s.rc, 0);
    assert_true(clr_lock_now_ms() - t0 < 2000);
    assert_false(a->token_held);
    clr_bcast_close(b);
    clr_bcast_close(a);
    clr_ls_close(lb);
    clr_ls_close(la);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_given_after_busy_sender),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
