/*
 * Unit tests of the lockspace core (lock.c) through the local backend:
 * several members of one lockspace live in this process.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/lockrank.h"
#include "lock/lock.h"
#include "lock/lock_internal.h"

#define MAXEV 32

struct evlog {
    int n;
    struct clr_ls_event ev[MAXEV];
    int order[MAXEV]; /* global sequence number of each event */
};

static int global_seq;
/* event logs are written by dispatch threads and read by the tests */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_event(struct clr_ls *ls, const struct clr_ls_event *ev, void *arg)
{
    struct evlog *l = arg;

    (void)ls;
    pthread_mutex_lock(&log_mu);
    assert_true(l->n < MAXEV);
    l->order[l->n] = ++global_seq;
    l->ev[l->n++] = *ev;
    pthread_mutex_unlock(&log_mu);
}

static int log_count(struct evlog *l)
{
    int n;

    pthread_mutex_lock(&log_mu);
    n = l->n;
    pthread_mutex_unlock(&log_mu);
    return n;
}

struct astlog {
    int asts, basts, last_bast_mode, ast_seq;
};

static void on_ast(struct clr_lock *lk, void *arg)
{
    struct astlog *a = arg;

    (void)lk;
    a->asts++;
    a->ast_seq = ++global_seq;
}

static void on_bast(struct clr_lock *lk, int mode, void *arg)
{
    struct astlog *a = arg;

    (void)lk;
    a->basts++;
    a->last_bast_mode = mode;
}

static struct clr_ls *open_member(const char *name, struct evlog *log)
{
    struct clr_ls_config cfg = { .backend = "local", .name = name };
    struct clr_ls *ls = NULL;

    if (log) {
        cfg.event = on_event;
        cfg.event_arg = log;
    }
    assert_int_equal(clr_ls_open(&cfg, &ls), 0);
    return ls;
}

static void test_open_errors(void **state)
{
    struct clr_ls_config cfg = { .backend = "nosuch", .name = "x" };
    struct clr_ls *ls;
    char longname[CLR_LS_NAME_MAX + 2];

    (void)state;
    assert_int_equal(clr_ls_open(&cfg, &ls), -ENOENT);
    cfg.backend = NULL;
    cfg.name = "";
    assert_int_equal(clr_ls_open(&cfg, &ls), -EINVAL);
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    cfg.name = longname;
    assert_int_equal(clr_ls_open(&cfg, &ls), -EINVAL);
    assert_int_equal(clr_lock_backend_register(&clr_lock_backend_local), -EEXIST);
    /* the dlm backend cannot work without a kernel DLM */
    clr_lock_cluster_backends();
    cfg.backend = "dlm";
    cfg.name = "x";
    assert_true(clr_ls_open(&cfg, &ls) < 0);
}

static void test_sync_exclusion_and_lvb(void **state)
{
    struct clr_ls *a = open_member("t1", NULL), *b = open_member("t1", NULL);
    struct clr_lock *la = clr_lock_create(a, "r", NULL, NULL, NULL);
    struct clr_lock *lb = clr_lock_create(b, "r", NULL, NULL, NULL);

    (void)state;
    assert_string_equal(clr_ls_backend_name(a), "local");
    assert_int_equal(clr_ls_our_slot(a), 1);
    assert_int_equal(clr_ls_our_slot(b), 2);
    assert_int_not_equal(clr_ls_member_id(a), clr_ls_member_id(b));
    assert_int_equal(clr_lock_sync(la, CLR_LOCK_EX, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_int_equal(clr_lock_mode(la), CLR_LOCK_EX);
    assert_int_equal(clr_lock_sync(lb, CLR_LOCK_PR, CLR_LOCK_F_NOQUEUE, 1000), -EAGAIN);
    assert_int_equal(clr_lock_mode(lb), CLR_LOCK_IV);
    memcpy(clr_lock_lvb(la), "hello", 6);
    assert_int_equal(clr_lock_sync(la, CLR_LOCK_NL, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_int_equal(clr_lock_sync(lb, CLR_LOCK_PR, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_string_equal((char *)clr_lock_lvb(lb), "hello");
    assert_int_equal(clr_lock_sb_flags(lb) & CLR_LOCK_SB_VALNOTVALID, 0);
    assert_string_equal(clr_lock_name(lb), "r");
    assert_ptr_equal(clr_lock_ls(lb), b);
    /* busy object */
    assert_int_equal(clr_lock_destroy(lb), -EBUSY);
    assert_int_equal(clr_unlock_sync(lb, 0, 1000), 0);
    assert_int_equal(clr_unlock_sync(lb, 0, 1000), -ENOENT);
    assert_int_equal(clr_lock_destroy(lb), 0);
    assert_int_equal(clr_lock_sync(la, 9, 0, 1000), -EINVAL);
    assert_int_equal(clr_lock_sync(la, CLR_LOCK_NL, 0x100, 1000), -EINVAL);
    clr_ls_close(b);
    clr_ls_close(a); /* still holds NL: close releases it */
}

static void test_async_fd_ast_bast(void **state)
{
    struct clr_ls *a = open_member("t2", NULL), *b = open_member("t2", NULL);
    struct astlog aa = { 0 }, ab = { 0 };
    struct clr_lock *la = clr_lock_create(a, "r", on_ast, on_bast, &aa);
    struct clr_lock *lb = clr_lock_create(b, "r", on_ast, on_bast, &ab);
    struct pollfd pfd = { .fd = clr_ls_fd(a), .events = POLLIN };

    (void)state;
    assert_int_equal(clr_lock_request(la, CLR_LOCK_PW, 0), 0);
    assert_int_equal(poll(&pfd, 1, 1000), 1);
    assert_int_equal(clr_ls_dispatch(a), 1);
    assert_int_equal(aa.asts, 1);
    assert_int_equal(clr_lock_status(la), 0);
    assert_int_equal(clr_lock_mode(la), CLR_LOCK_PW);
    assert_int_equal(poll(&pfd, 1, 0), 0); /* drained */

    assert_int_equal(clr_lock_request(lb, CLR_LOCK_CW, 0), 0);
    assert_int_equal(clr_lock_request(lb, CLR_LOCK_NL, 0), -EBUSY);
    assert_int_equal(clr_lock_bast_count(la), 1); /* counted on arrival */
    assert_int_equal(clr_ls_dispatch(a), 1);
    assert_int_equal(aa.basts, 1);
    assert_int_equal(aa.last_bast_mode, CLR_LOCK_CW);
    /* clr_lock_wait: a blocked request times out, a done one returns */
    assert_int_equal(clr_lock_wait(lb, 20), -ETIMEDOUT);
    assert_int_equal(clr_ls_dispatch(b), 0);
    assert_int_equal(clr_lock_request(la, CLR_LOCK_NL, 0), 0);
    assert_int_equal(clr_ls_dispatch(a), 1);
    assert_int_equal(clr_lock_wait(lb, 1000), 0);
    assert_int_equal(clr_lock_wait(lb, 1000), 0); /* nothing pending */
    assert_int_equal(clr_ls_dispatch(b), 1);
    assert_int_equal(ab.asts, 1);
    assert_int_equal(clr_lock_mode(lb), CLR_LOCK_CW);

    /* cancel a waiting conversion: back to the granted mode */
    assert_int_equal(clr_lock_request(la, CLR_LOCK_EX, 0), 0);
    assert_int_equal(clr_lock_cancel(la), 0);
    clr_ls_dispatch(a);
    assert_int_equal(clr_lock_status(la), -ECANCELED);
    assert_int_equal(clr_lock_mode(la), CLR_LOCK_NL);
    assert_int_equal(clr_lock_cancel(la), -ENOENT);
    /* a queued callback of a destroyed lock is dropped */
    assert_int_equal(clr_lock_unlock(la, 0), 0);
    assert_int_equal(clr_lock_destroy(la), 0);
    assert_int_equal(clr_ls_dispatch(a), 0);
    clr_ls_close(a);
    clr_ls_close(b);
}

static void test_sync_timeout_cancels(void **state)
{
    struct clr_ls *a = open_member("t3", NULL), *b = open_member("t3", NULL);
    struct clr_lock *la = clr_lock_create(a, "r", NULL, NULL, NULL);
    struct clr_lock *lb = clr_lock_create(b, "r", NULL, NULL, NULL);

    (void)state;
    assert_int_equal(clr_lock_sync(la, CLR_LOCK_EX, 0, 0), 0);
    assert_int_equal(clr_lock_sync(lb, CLR_LOCK_EX, 0, 50), -ETIMEDOUT);
    assert_int_equal(clr_lock_mode(lb), CLR_LOCK_IV);
    /* the cancelled request is gone: releasing a grants nothing to b */
    assert_int_equal(clr_lock_sync(la, CLR_LOCK_NL, 0, 1000), 0);
    assert_int_equal(clr_lock_mode(lb), CLR_LOCK_IV);
    /* conversion timeout keeps the old mode */
    assert_int_equal(clr_lock_sync(lb, CLR_LOCK_PR, 0, 1000), 0);
    assert_int_equal(clr_lock_sync(la, CLR_LOCK_PR, 0, 1000), 0);
    assert_int_equal(clr_lock_sync(lb, CLR_LOCK_EX, 0, 50), -ETIMEDOUT);
    assert_int_equal(clr_lock_mode(lb), CLR_LOCK_PR);
    clr_ls_close(a);
    clr_ls_close(b);
}

struct waiter {
    struct clr_lock *lk;
    struct evlog *log;
    int rc;
    int events_seen_at_grant;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;

    w->rc = clr_lock_sync(w->lk, CLR_LOCK_EX, CLR_LOCK_F_VALBLK, 5000);
    w->events_seen_at_grant = log_count(w->log);
    return NULL;
}

/* Polls (up to 5 s) until @ls's dispatch thread has run every callback
 * queued so far. */
static void wait_dispatched(struct clr_ls *ls)
{
    for (int i = 0; i < 5000; i++) {
        bool done;

        clr_mutex_lock(&ls->mu);
        done = ls->dispatched_seq == ls->cb_seq;
        clr_mutex_unlock(&ls->mu);
        if (done)
            return;
        usleep(1000);
    }
    fail_msg("the dispatch thread did not run its callbacks in 5 s");
}

/* Polls (up to 5 s) until a request conflicting with @lk is queued: the
 * lock table sends @lk a BAST for it (counted even without a callback). */
static void wait_bast(struct clr_lock *lk)
{
    for (int i = 0; i < 5000 && clr_lock_bast_count(lk) == 0; i++)
        usleep(1000);
    assert_true(clr_lock_bast_count(lk) > 0);
}

static void test_member_failure(void **state)
{
    struct evlog la = { 0 }, lb = { 0 }, lc = { 0 };
    struct clr_ls *a = open_member("t4", &la), *b = open_member("t4", &lb);
    struct clr_ls *c = open_member("t4", &lc);
    struct clr_lock *ka = clr_lock_create(a, "bitmap0000", NULL, NULL, NULL);
    struct clr_lock *kb = clr_lock_create(b, "bitmap0000", NULL, NULL, NULL);
    struct clr_lock *kc = clr_lock_create(c, "bitmap0000", NULL, NULL, NULL);
    struct waiter w = { .lk = kb, .log = &lb };
    pthread_t th;

    (void)state;
    clr_ls_start_dispatch_thread(b);
    assert_int_equal(clr_ls_start_dispatch_thread(b), -EBUSY);
    assert_int_equal(clr_lock_sync(ka, CLR_LOCK_EX, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_int_equal(clr_lock_sync(kc, CLR_LOCK_NL, CLR_LOCK_F_VALBLK, 1000), 0);
    wait_dispatched(b); /* the joins' events are in lb: drop them */
    pthread_mutex_lock(&log_mu);
    lb.n = 0;
    pthread_mutex_unlock(&log_mu);
    pthread_create(&th, NULL, wait_thread, &w);
    wait_bast(ka); /* b's request waits behind a's EX */
    assert_int_equal(clr_lock_local_kill(a), 0);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, 0);
    /* PREP and MEMBER_FAILED were handled before the grant returned */
    assert_true(w.events_seen_at_grant >= 2);
    assert_int_equal(lb.ev[0].type, CLR_LS_EV_PREP);
    assert_int_equal(lb.ev[1].type, CLR_LS_EV_MEMBER_FAILED);
    assert_int_equal(lb.ev[1].slot, 1);
    assert_int_equal(lb.ev[1].our_slot, 2);
    assert_true(clr_lock_sb_flags(kb) & CLR_LOCK_SB_VALNOTVALID);
    assert_int_equal(clr_lock_mode(ka), CLR_LOCK_IV);
    assert_int_equal(clr_lock_status(ka), -ENOLCK);
    assert_int_equal(clr_lock_request(ka, CLR_LOCK_NL, 0), -ENOLCK);
    /* c saw the events too (dispatched by hand) */
    clr_ls_dispatch(c);
    assert_true(lc.n >= 3);
    /* writing the LVB makes it valid again for the next holder */
    memcpy(clr_lock_lvb(kb), "v2", 3);
    assert_int_equal(clr_lock_sync(kb, CLR_LOCK_NL, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_int_equal(clr_lock_sync(kc, CLR_LOCK_PR, CLR_LOCK_F_VALBLK, 1000), 0);
    assert_int_equal(clr_lock_sb_flags(kc) & CLR_LOCK_SB_VALNOTVALID, 0);
    assert_string_equal((char *)clr_lock_lvb(kc), "v2");
    clr_ls_close(a);
    clr_ls_close(b);
    clr_ls_close(c);
}

/* A killed member's thread that read ls->be before the kill and reaches
 * the table after it (its locks removed, its own ones failed to IV): its
 * request is refused, and leaves no lock of a dead owner behind. */
static void test_killed_member_late_request(void **state)
{
    struct clr_ls *a = open_member("t6", NULL), *b = open_member("t6", NULL);
    struct clr_lock *ka = clr_lock_create(a, "ack", NULL, NULL, NULL);
    struct clr_lock *kb = clr_lock_create(b, "ack", NULL, NULL, NULL);
    void *be = a->be;

    (void)state;
    assert_int_equal(clr_lock_sync(ka, CLR_LOCK_CR, 0, 1000), 0);
    assert_int_equal(clr_lock_local_kill(a), 0);
    assert_int_equal(clr_lock_mode(ka), CLR_LOCK_IV);
    /* the late request, with ls->be as that thread read it */
    a->be = be;
    assert_int_equal(clr_lock_request(ka, CLR_LOCK_CR, 0), -ENOLCK);
    a->be = NULL;
    assert_int_equal(clr_lock_sync(kb, CLR_LOCK_EX, 0, 1000), 0);
    clr_ls_close(a);
    clr_ls_close(b);
}

static void test_clean_close_releases(void **state)
{
    struct clr_ls *a = open_member("t5", NULL), *b = open_member("t5", NULL);
    struct clr_lock *ka = clr_lock_create(a, "r", NULL, NULL, NULL);
    struct clr_lock *kb = clr_lock_create(b, "r", NULL, NULL, NULL);
    struct astlog ab = { 0 };

    (void)state;
    kb->ast = on_ast;
    kb->arg = &ab;
    assert_int_equal(clr_lock_sync(ka, CLR_LOCK_EX, 0, 1000), 0);
    assert_int_equal(clr_lock_request(kb, CLR_LOCK_EX, CLR_LOCK_F_VALBLK), 0);
    clr_ls_close(a);
    clr_ls_dispatch(b);
    assert_int_equal(ab.asts, 1);
    assert_int_equal(clr_lock_mode(kb), CLR_LOCK_EX);
    /* a clean leave does not invalidate */
    assert_int_equal(clr_lock_sb_flags(kb) & CLR_LOCK_SB_VALNOTVALID, 0);
    /* the slot is free again */
    a = open_member("t5", NULL);
    assert_int_equal(clr_ls_our_slot(a), 1);
    clr_ls_close(a);
    clr_ls_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_errors),          cmocka_unit_test(test_sync_exclusion_and_lvb),
        cmocka_unit_test(test_async_fd_ast_bast),    cmocka_unit_test(test_sync_timeout_cancels),
        cmocka_unit_test(test_member_failure),       cmocka_unit_test(test_killed_member_late_request),
        cmocka_unit_test(test_clean_close_releases),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
