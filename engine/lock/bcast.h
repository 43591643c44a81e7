/*
 * Cluster broadcast over the lock service, the md-cluster way (doc/architecture.md
 * §4.1): `token` serialises senders, the message travels in the LVB of
 * `message`, and `ack` (held CR by every member at rest) is the barrier:
 * the sender's CR->EX is granted only once every receiver has processed the
 * message and dropped its CR.  The EX BAST on `ack` is the "new message"
 * notification.
 *
 * Unlike md, a receiver that cannot handle a message (unknown version,
 * garbage, a handler error) still acks; it first records its refusal in
 * the LVB of `nack`, which the sender reads after the acks are in.  Every
 * wait is bounded by the timeout given at open.
 *
 * The receiver thread is woken by the BAST directly, so the channel does
 * not depend on the lockspace being dispatched (but see lock.h about
 * event callbacks and dispatching).
 */
#ifndef CLRAID_LOCK_BCAST_H
#define CLRAID_LOCK_BCAST_H

#include <stdint.h>

#include "lock/lock.h"

#define CLR_BCAST_VERSION   1
#define CLR_BCAST_PAYLOAD   24
#define CLR_BCAST_MAX_SLOTS 192

/** A broadcast message: fits the 32-byte LVB. */
struct clr_bcast_msg {
    uint8_t version;      /**< CLR_BCAST_VERSION (set by encode) */
    uint8_t type;         /**< engine message type */
    uint16_t sender_slot; /**< filled in by clr_bcast_send() */
    uint32_t seq;         /**< sender's round number (filled in) */
    uint8_t payload[CLR_BCAST_PAYLOAD];
};

/**
 * Encode @m into 32 little-endian bytes: u8 version, u8 type,
 * le16 sender_slot, le32 seq, payload[24].
 */
void clr_bcast_msg_encode(const struct clr_bcast_msg *m, uint8_t out[CLR_LOCK_LVB_LEN]);

/**
 * Decode 32 bytes.  @return 0, -EPROTO (unknown version), -EBADMSG
 * (no sender slot: never written).
 */
int clr_bcast_msg_decode(struct clr_bcast_msg *m, const uint8_t in[CLR_LOCK_LVB_LEN]);

/** Receive handler: 0 = processed; -errno = refused (still acked). */
typedef int (*clr_bcast_recv_fn)(void *arg, const struct clr_bcast_msg *m);

/** Outcome of one broadcast. */
struct clr_bcast_result {
    unsigned refused;     /**< members that acked with an error state */
    uint8_t refused_slot; /**< lowest refusing slot (0: none) */
};

struct clr_bcast;

/**
 * Join the broadcast channel of @ls (resting state: ack CR, message and
 * token NL, taken under token EX as md's join does) and start the
 * receiver thread.  @timeout_ms bounds every wait (0: 30 s).
 */
int clr_bcast_open(struct clr_ls *ls, clr_bcast_recv_fn recv, void *arg, unsigned timeout_ms,
                   struct clr_bcast **out);

/**
 * Broadcast @m to every other member and wait until all processed it.
 * @return 0 (res->refused may be > 0), -ETIMEDOUT naming the step that
 *         did not finish, -ENOLCK if the lockspace lost its locks.
 */
int clr_bcast_send(struct clr_bcast *b, const struct clr_bcast_msg *m, struct clr_bcast_result *res);

/** Stop the receiver and release the channel's locks. */
void clr_bcast_close(struct clr_bcast *b);

#endif
