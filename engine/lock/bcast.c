/* Broadcast over the lock service: token / message / ack (see bcast.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/lockrank.h"
#include "lock/bcast.h"
#include "lock/lock_internal.h"
#include "lock/lock_wire.h"

/*
 * Lock use per round (doc/architecture.md §4.1, with requests on different locks
 * pipelined where agreed order already gives the order md waits for):
 *   sender:   token EX (kept until another member's BAST asks for it),
 *             message NL->EX, then [message EX->CW with the LVB,
 *             ack CR->EX] back to back, then [ack EX->CR, message ->NL].
 *   receiver: message NL->CR, process, then [ack CR->NL, message CR->PR]
 *             (PR is granted when the sender drops CW: the round is over),
 *             then [ack NL->CR, message PR->NL].
 * Refusals: the token holder also holds `nack` CR.  A refusing receiver
 * asks `nack` EX before it acks; that BAST reaches the sender before its
 * ack EX is granted, so only then does the sender step aside and read the
 * refusals the receivers wrote into the `nack` LVB:
 * le16 sender slot, le32 seq, le16 count, u8 bitmap[24] (bit s-1: slot s).
 */
#define NACK_BITMAP_OFF 8

struct clr_bcast {
    struct clr_ls *ls;
    struct clr_lock *token, *message, *ack, *nack;
    clr_bcast_recv_fn recv;
    void *arg;
    unsigned tmo;
    struct clr_mutex send_mu; /* one local sender at a time */
    struct clr_mutex recv_mu; /* send and receive never overlap locally */
    struct clr_mutex mu;      /* guards the fields below */
    pthread_cond_t cond;
    int pending; /* EX BASTs on ack not yet served */
    bool stop;
    uint32_t seq;
    bool token_held;   /* token EX and nack CR cached (send_mu) */
    bool token_wanted; /* someone BASTed our token */
    pthread_t thread;
    bool thread_running;
};

void clr_bcast_msg_encode(const struct clr_bcast_msg *m, uint8_t out[CLR_LOCK_LVB_LEN])
{
    out[0] = CLR_BCAST_VERSION;
    out[1] = m->type;
    clr_wire_put16(out + 2, m->sender_slot);
    clr_wire_put32(out + 4, m->seq);
    memcpy(out + 8, m->payload, CLR_BCAST_PAYLOAD);
}

int clr_bcast_msg_decode(struct clr_bcast_msg *m, const uint8_t in[CLR_LOCK_LVB_LEN])
{
    memset(m, 0, sizeof(*m));
    m->version = in[0];
    if (m->version != CLR_BCAST_VERSION)
        return -EPROTO;
    m->type = in[1];
    m->sender_slot = clr_wire_get16(in + 2);
    m->seq = clr_wire_get32(in + 4);
    memcpy(m->payload, in + 8, CLR_BCAST_PAYLOAD);
    if (m->sender_slot == 0)
        return -EBADMSG;
    return 0;
}

static void ack_bast(struct clr_lock *lk, int mode, void *arg)
{
    struct clr_bcast *b = arg;

    (void)lk;
    if (mode != CLR_LOCK_EX)
        return;
    clr_mutex_lock(&b->mu);
    b->pending++;
    pthread_cond_broadcast(&b->cond);
    clr_mutex_unlock(&b->mu);
}

static void token_bast(struct clr_lock *lk, int mode, void *arg)
{
    struct clr_bcast *b = arg;

    (void)lk;
    (void)mode;
    clr_mutex_lock(&b->mu);
    b->token_wanted = true;
    pthread_cond_broadcast(&b->cond);
    clr_mutex_unlock(&b->mu);
}

/* Wait for every request issued without waiting (async_req) to finish.
 * The receiver leaves the token out (wait_tail_rx): our own sender may be
 * waiting for it, held by a remote sender that needs our ack first. */
static int wait_tail_from(struct clr_bcast *b, size_t first)
{
    struct clr_lock *all[] = { b->token, b->message, b->ack, b->nack };
    uint64_t end = clr_lock_now_ms() + b->tmo;

    for (size_t i = first; i < sizeof(all) / sizeof(all[0]); i++) {
        uint64_t now = clr_lock_now_ms();

        if (now >= end || clr_lock_wait(all[i], (unsigned)(end - now)) == -ETIMEDOUT)
            return -ETIMEDOUT;
    }
    return 0;
}

static int wait_tail(struct clr_bcast *b)
{
    return wait_tail_from(b, 0);
}

static int wait_tail_rx(struct clr_bcast *b)
{
    return wait_tail_from(b, 1);
}

static int step(struct clr_bcast *b, struct clr_lock *lk, int mode, unsigned flags, const char *what)
{
    uint64_t t0 = clr_lock_now_ms();
    int rc = clr_lock_sync(lk, mode, flags, b->tmo);

    if (rc)
        fprintf(stderr, "clraid bcast: %s (%s %s) failed after %llu ms: %s\n", what, clr_lock_name(lk),
                clr_lock_mode_name(mode), (unsigned long long)(clr_lock_now_ms() - t0), strerror(-rc));
    return rc;
}

/* Issue a request without waiting; wait_tail() collects it. */
static void async_req(struct clr_bcast *b, struct clr_lock *lk, int mode, unsigned flags)
{
    int rc;

    (void)b;
    if (clr_lock_mode(lk) == mode && !(flags & CLR_LOCK_F_VALBLK))
        return;
    rc = clr_lock_request(lk, mode, flags);
    if (rc)
        fprintf(stderr, "clraid bcast: %s %s not issued: %s\n", clr_lock_name(lk), clr_lock_mode_name(mode),
                strerror(-rc));
}

/* Write our refusal of the round into the nack LVB (nack EX granted). */
static void nack_write(struct clr_bcast *b, const struct clr_bcast_msg *m)
{
    uint8_t *lvb = clr_lock_lvb(b->nack);
    int slot = clr_ls_our_slot(b->ls);

    if (clr_lock_mode(b->nack) != CLR_LOCK_EX) {
        fprintf(stderr, "clraid bcast: could not record a refusal (nack not granted)\n");
        return;
    }
    if (clr_wire_get16(lvb) != m->sender_slot || clr_wire_get32(lvb + 2) != m->seq ||
        (clr_lock_sb_flags(b->nack) & CLR_LOCK_SB_VALNOTVALID)) {
        memset(lvb, 0, CLR_LOCK_LVB_LEN);
        clr_wire_put16(lvb, m->sender_slot);
        clr_wire_put32(lvb + 2, m->seq);
    }
    if (slot >= 1 && slot <= CLR_BCAST_MAX_SLOTS &&
        !(lvb[NACK_BITMAP_OFF + (slot - 1) / 8] & (1u << ((slot - 1) % 8)))) {
        lvb[NACK_BITMAP_OFF + (slot - 1) / 8] |= (uint8_t)(1u << ((slot - 1) % 8));
        clr_wire_put16(lvb + 6, (uint16_t)(clr_wire_get16(lvb + 6) + 1));
    }
    step(b, b->nack, CLR_LOCK_NL, CLR_LOCK_F_VALBLK, "recording a refusal");
}

/* md recv_daemon: read, process (or refuse), ack, then re-arm. */
static void receive_one(struct clr_bcast *b)
{
    struct clr_bcast_msg m;
    int err;

    if (wait_tail_rx(b))
        fprintf(stderr, "clraid bcast: previous round still pending\n");
    err = step(b, b->message, CLR_LOCK_CR, CLR_LOCK_F_VALBLK, "reading a message");
    if (!err && (clr_lock_sb_flags(b->message) & CLR_LOCK_SB_VALNOTVALID))
        err = -EBADMSG; /* the sender died while writing it */
    if (!err)
        err = clr_bcast_msg_decode(&m, clr_lock_lvb(b->message));
    else
        memset(&m, 0, sizeof(m));
    if (!err && m.sender_slot == clr_ls_our_slot(b->ls))
        err = -EINVAL;
    if (!err)
        err = b->recv(b->arg, &m);
    if (err) {
        fprintf(stderr, "clraid bcast: refusing message type %u from slot %u: %s\n", m.type, m.sender_slot,
                strerror(-err));
        /* ask nack EX before the ack: its BAST tells the sender */
        async_req(b, b->nack, CLR_LOCK_EX, CLR_LOCK_F_VALBLK);
    }
    /* the ack is never withheld: dropping CR is the acknowledgement */
    async_req(b, b->ack, CLR_LOCK_NL, 0);
    if (err) {
        if (wait_tail_rx(b))
            fprintf(stderr, "clraid bcast: refusal not recorded in %u ms\n", b->tmo);
        nack_write(b, &m);
    }
    /* PR is granted once the sender dropped CW: the round is over */
    step(b, b->message, CLR_LOCK_PR, 0, "waiting for the end of the round");
    if (wait_tail_rx(b))
        fprintf(stderr, "clraid bcast: acknowledging took over %u ms\n", b->tmo);
    for (;;) {
        bool stop;

        async_req(b, b->ack, CLR_LOCK_CR, 0);
        async_req(b, b->message, CLR_LOCK_NL, 0);
        if (wait_tail_rx(b) == 0 && clr_lock_mode(b->ack) == CLR_LOCK_CR)
            break;
        fprintf(stderr, "clraid bcast: re-arming (ack CR) takes over %u ms\n", b->tmo);
        clr_mutex_lock(&b->mu);
        stop = b->stop;
        clr_mutex_unlock(&b->mu);
        if (stop)
            break;
    }
}

/* Give the cached token (and nack CR) back; send_mu held. */
static void drop_token(struct clr_bcast *b)
{
    if (!b->token_held)
        return;
    clr_mutex_lock(&b->mu);
    b->token_wanted = false;
    clr_mutex_unlock(&b->mu);
    async_req(b, b->nack, CLR_LOCK_NL, 0);
    async_req(b, b->token, CLR_LOCK_NL, 0);
    b->token_held = false;
}

static void *recv_thread(void *arg)
{
    struct clr_bcast *b = arg;
    bool tok_busy = false; /* our sender had send_mu at the last try */

    for (;;) {
        clr_mutex_lock(&b->mu);
        bool msg, tok;

        /* A wanted token we could not give (tok_busy) must not put us
         * to sleep untimed: our sender may have checked token_wanted
         * before the BAST came, and the BAST is not sent again. */
        while (!b->pending && !b->token_wanted && !b->stop)
            clr_cond_wait(&b->cond, &b->mu);
        if (tok_busy && !b->pending && !b->stop) {
            /* retry the token soon, messages first meanwhile */
            struct timespec ts;

            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += 5000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            clr_cond_timedwait(&b->cond, &b->mu, &ts);
        }
        if (b->stop) {
            clr_mutex_unlock(&b->mu);
            break;
        }
        msg = b->pending > 0;
        tok = b->token_wanted;
        b->pending = 0;
        clr_mutex_unlock(&b->mu);
        if (msg) {
            clr_mutex_lock(&b->recv_mu);
            receive_one(b);
            clr_mutex_unlock(&b->recv_mu);
        }
        tok_busy = false;
        if (tok) {
            /* A sender finishing its round drops it itself.  Never
             * wait for send_mu here: our sender may be waiting for
             * the token held by a remote sender that needs our ack
             * (we would not receive its message). */
            if (clr_mutex_trylock(&b->send_mu) != 0) {
                tok_busy = true;
                continue;
            }
            if (!b->token_held) {
                clr_mutex_lock(&b->mu);
                b->token_wanted = false; /* nothing to give */
                clr_mutex_unlock(&b->mu);
            } else if (wait_tail(b) == 0) {
                drop_token(b);
            }
            clr_mutex_unlock(&b->send_mu);
        }
    }
    return NULL;
}

static void free_locks(struct clr_bcast *b)
{
    struct clr_lock *all[] = { b->token, b->message, b->ack, b->nack };

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (!all[i])
            continue;
        if (clr_lock_mode(all[i]) != CLR_LOCK_IV)
            clr_unlock_sync(all[i], 0, b->tmo);
        clr_lock_destroy(all[i]);
    }
}

int clr_bcast_open(struct clr_ls *ls, clr_bcast_recv_fn recv, void *arg, unsigned timeout_ms,
                   struct clr_bcast **out)
{
    struct clr_bcast *b = calloc(1, sizeof(*b));
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    if (!b)
        return -ENOMEM;
    b->ls = ls;
    b->recv = recv;
    b->arg = arg;
    b->tmo = timeout_ms ? timeout_ms : 30000;
    clr_mutex_init(&b->send_mu, CLR_RANK_BCAST_SEND, "bcast send_mu");
    clr_mutex_init(&b->recv_mu, CLR_RANK_BCAST_RECV, "bcast recv_mu");
    clr_mutex_init(&b->mu, CLR_RANK_BCAST_STATE, "bcast b->mu");
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&b->cond, &ca);
    pthread_condattr_destroy(&ca);
    /* no callbacks through the dispatch queue: completions are collected
     * with clr_lock_wait() and BASTs wake the receiver directly */
    b->token = clr_lock_create(ls, "token", NULL, NULL, b);
    b->message = clr_lock_create(ls, "message", NULL, NULL, b);
    b->ack = clr_lock_create(ls, "ack", NULL, NULL, b);
    b->nack = clr_lock_create(ls, "nack", NULL, NULL, b);
    if (!b->token || !b->message || !b->ack || !b->nack) {
        rc = -ENOMEM;
        goto fail;
    }
    clr_mutex_lock(&ls->mu);
    b->token->bast_hook = token_bast;
    b->ack->bast_hook = ack_bast;
    clr_mutex_unlock(&ls->mu);
    /* md join: take ack CR under the token so we never join mid-round */
    rc = step(b, b->token, CLR_LOCK_EX, 0, "joining");
    if (!rc)
        rc = step(b, b->ack, CLR_LOCK_CR, 0, "joining");
    if (!rc)
        rc = step(b, b->message, CLR_LOCK_NL, 0, "joining");
    if (!rc)
        rc = step(b, b->nack, CLR_LOCK_NL, 0, "joining");
    if (!rc)
        rc = step(b, b->token, CLR_LOCK_NL, 0, "joining");
    if (rc)
        goto fail;
    rc = -pthread_create(&b->thread, NULL, recv_thread, b);
    if (rc)
        goto fail;
    b->thread_running = true;
    *out = b;
    return 0;
fail:
    free_locks(b);
    free(b);
    return rc;
}

int clr_bcast_send(struct clr_bcast *b, const struct clr_bcast_msg *m, struct clr_bcast_result *res)
{
    struct clr_bcast_msg out = *m;
    const uint8_t *lvb;
    unsigned nack_basts;
    bool wanted;
    int rc;

    memset(res, 0, sizeof(*res));
    clr_mutex_lock(&b->send_mu);
    rc = wait_tail(b);
    if (rc) {
        fprintf(stderr, "clraid bcast: previous round did not finish in %u ms\n", b->tmo);
        clr_mutex_unlock(&b->send_mu);
        return rc;
    }
    /* token first, then the receive mutex (md lock_comm): a remote sender
     * holding the token needs our receiver to ack */
    if (!b->token_held) {
        rc = step(b, b->token, CLR_LOCK_EX, 0, "taking the token");
        if (!rc)
            rc = step(b, b->nack, CLR_LOCK_CR, 0, "taking the token");
        if (rc) {
            async_req(b, b->token, CLR_LOCK_NL, 0);
            clr_mutex_unlock(&b->send_mu);
            return rc;
        }
        b->token_held = true;
    }
    clr_mutex_lock(&b->recv_mu);
    rc = wait_tail(b);
    if (rc)
        goto release;
    rc = step(b, b->message, CLR_LOCK_EX, 0, "taking the message lock");
    if (rc)
        goto release;
    out.sender_slot = (uint16_t)clr_ls_our_slot(b->ls);
    out.seq = ++b->seq;
    clr_bcast_msg_encode(&out, clr_lock_lvb(b->message));
    nack_basts = clr_lock_bast_count(b->nack);
    /* EX->CW publishes the LVB; a down-conversion is granted at once, so
     * the ack request may follow it without waiting */
    async_req(b, b->message, CLR_LOCK_CW, CLR_LOCK_F_VALBLK);
    /* granted once every receiver has processed the message */
    rc = step(b, b->ack, CLR_LOCK_EX, 0, "waiting for every member's ack");
    if (wait_tail(b) && !rc)
        rc = -ETIMEDOUT;
    if (rc)
        goto release;
    if (clr_lock_bast_count(b->nack) != nack_basts) {
        /* someone refused: let them write, then read what they wrote */
        rc = step(b, b->nack, CLR_LOCK_NL, 0, "reading refusals");
        if (!rc)
            rc = step(b, b->nack, CLR_LOCK_CR, CLR_LOCK_F_VALBLK, "reading refusals");
        if (rc)
            goto release;
        lvb = clr_lock_lvb(b->nack);
        if (clr_wire_get16(lvb) == out.sender_slot && clr_wire_get32(lvb + 2) == out.seq) {
            res->refused = clr_wire_get16(lvb + 6);
            for (int sl = 0; sl < CLR_BCAST_MAX_SLOTS; sl++) {
                if (lvb[NACK_BITMAP_OFF + sl / 8] & (1u << (sl % 8))) {
                    res->refused_slot = (uint8_t)(sl + 1);
                    break;
                }
            }
        }
    }
release:
    /* the end of the round, not waited for: the next round waits */
    async_req(b, b->ack, CLR_LOCK_CR, 0);
    async_req(b, b->message, CLR_LOCK_NL, 0);
    clr_mutex_unlock(&b->recv_mu);
    clr_mutex_lock(&b->mu);
    wanted = b->token_wanted;
    clr_mutex_unlock(&b->mu);
    if (wanted || rc)
        drop_token(b);
    clr_mutex_unlock(&b->send_mu);
    return rc;
}

void clr_bcast_close(struct clr_bcast *b)
{
    if (!b)
        return;
    clr_mutex_lock(&b->mu);
    b->stop = true;
    pthread_cond_broadcast(&b->cond);
    clr_mutex_unlock(&b->mu);
    if (b->thread_running)
        pthread_join(b->thread, NULL);
    wait_tail(b);
    clr_mutex_lock(&b->send_mu);
    drop_token(b);
    clr_mutex_unlock(&b->send_mu);
    wait_tail(b);
    free_locks(b);
    clr_mutex_destroy(&b->send_mu);
    clr_mutex_destroy(&b->recv_mu);
    clr_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cond);
    free(b);
}
