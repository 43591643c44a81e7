/*
 * Unit tests of the dlm backend's glue against a FAKE libdlm
 * (fake_libdlm.c).  The real kernel DLM is not available on the machine
 * these tests were written on; nothing here proves the backend works
 * against it (tests/uml/dlm-lock-service.sh does, inside User-Mode Linux).
 */
#include <errno.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_kernel_dlm),
		cmocka_unit_test(test_locks_through_libdlm),
		cmocka_unit_test(test_async_via_fd),
		cmocka_unit_test(test_slots_claimed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
