/*
 * Unit tests of the broadcast layer (bcast.c): the 32-byte message codec,
 * and token/message/ack rounds among members of a local lockspace.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "lock/bcast.h"
#include "lock/lock.h"

static void test_codec(void **state)
{
    struct clr_bcast_msg m = { .type = 3, .sender_slot = 2, .seq = 0x01020304 }, d;
    uint8_t lvb[CLR_LOCK_LVB_LEN];

    (void)state;
    for (int i = 0; i < CLR_BCAST_PAYLOAD; i++)
        m.payload[i] = (uint8_t)(i + 1);
    clr_bcast_msg_encode(&m, lvb);
    assert_int_equal(lvb[0], CLR_BCAST_VERSION);
    assert_int_equal(lvb[1], 3);
    assert_int_equal(lvb[2], 2);
    assert_int_equal(lvb[3], 0);
    assert_int_equal(lvb[4], 0x04); /* little-endian */
    assert_int_equal(lvb[7], 0x01);
    assert_int_equal(lvb[31], CLR_BCAST_PAYLOAD);
    assert_int_equal(clr_bcast_msg_decode(&d, lvb), 0);
    assert_int_equal(d.type, 3);
    assert_int_equal(d.sender_slot, 2);
    assert_int_equal(d.seq, 0x01020304);
    assert_memory_equal(d.payload, m.payload, CLR_BCAST_PAYLOAD);
    lvb[0] = 9;
    assert_int_equal(clr_bcast_msg_decode(&d, lvb), -EPROTO);
    memset(lvb, 0, sizeof(lvb));
    assert_int_equal(clr_bcast_msg_decode(&d, lvb), -EPROTO);
    lvb[0] = CLR_BCAST_VERSION;
    assert_int_equal(clr_bcast_msg_decode(&d, lvb), -EBADMSG);
}

struct rx {
    int got;
    int last_type;
    int last_slot;
    uint8_t last_payload0;
};

static int on_msg(void *arg, const struct clr_bcast_msg *m)
{
    struct rx *r = arg;

    if (m->type == 0x7f)
        return -EBADMSG;
    __atomic_add_fetch(&r->got, 1, __ATOMIC_SEQ_CST);
    r->last_type = m->type;
    r->last_slot = m->sender_slot;
    r->last_payload0 = m->payload[0];
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

static void test_rounds_three_members(void **state)
{
    struct clr_ls *ls[3];
    struct clr_bcast *b[3];
    struct rx rx[3] = { 0 };
    struct clr_bcast_result res;

    (void)state;
    for (int i = 0; i < 3; i++) {
        ls[i] = member("bc1");
        assert_int_equal(clr_bcast_open(ls[i], on_msg, &rx[i], 2000, &b[i]), 0);
    }
    for (int k = 0; k < 20; k++) {
        struct clr_bcast_msg m = { .type = 1 };
        int from = k % 3;

        m.payload[0] = (uint8_t)k;
        assert_int_equal(clr_bcast_send(b[from], &m, &res), 0);
        assert_int_equal(res.refused, 0);
        /* the sender returns only once everyone processed it */
        for (int i = 0; i < 3; i++) {
            if (i == from)
                continue;
            assert_int_equal(rx[i].last_payload0, k);
            assert_int_equal(rx[i].last_slot, from + 1);
        }
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(rx[i].got, 20 - (20 + 2 - i) / 3);

    /* an unknown type: refused by both receivers, but acked */
    {
        struct clr_bcast_msg m = { .type = 0x7f };

        assert_int_equal(clr_bcast_send(b[0], &m, &res), 0);
        assert_int_equal(res.refused, 2);
        assert_int_equal(res.refused_slot, 2);
    }
    /* and the channel still works */
    {
        struct clr_bcast_msg m = { .type = 2 };

        assert_int_equal(clr_bcast_send(b[2], &m, &res), 0);
        assert_int_equal(res.refused, 0);
        assert_int_equal(rx[0].last_type, 2);
    }
    for (int i = 0; i < 3; i++) {
        clr_bcast_close(b[i]);
        clr_ls_close(ls[i]);
    }
}

/* A member that holds ack CR but never processes: the wait is bounded. */
static void test_bounded_wait(void **state)
{
    struct clr_ls *a = member("bc2"), *mute = member("bc2");
    struct clr_bcast *b;
    struct clr_lock *ack = clr_lock_create(mute, "ack", NULL, NULL, NULL);
    struct clr_bcast_msg m = { .type = 1 };
    struct clr_bcast_result res;
    struct timespec t0, t1;
    long ms;

    (void)state;
    assert_int_equal(clr_lock_sync(ack, CLR_LOCK_CR, 0, 1000), 0);
    assert_int_equal(clr_bcast_open(a, on_msg, NULL, 300, &b), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(clr_bcast_send(b, &m, &res), -ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 250 && ms < 3000);
    /* once the silent member goes away, broadcasting works again */
    assert_int_equal(clr_unlock_sync(ack, 0, 1000), 0);
    assert_int_equal(clr_bcast_send(b, &m, &res), 0);
    clr_lock_destroy(ack);
    clr_bcast_close(b);
    clr_ls_close(mute);
    clr_ls_close(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec),
        cmocka_unit_test(test_rounds_three_members),
        cmocka_unit_test(test_bounded_wait),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
