/*
 * The lock table: a pure, deterministic DLM state machine (no I/O, no
 * threads, no clocks).  The same sequence of operations gives the same
 * effects in the same order on every replica, which is what lets the cpg
 * backend replicate it without a master and the sim backend replay it.
 *
 * Locks are named by (owner, lkid); the owner picks lkid.  Outcomes are
 * reported as effects through a callback, in a deterministic order.
 */
#ifndef CLRAID_LOCK_LOCK_TABLE_H
#define CLRAID_LOCK_LOCK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lock/lock.h"

enum clr_lt_effect_type {
    CLR_LT_GRANTED = 1, /**< request or conversion granted */
    CLR_LT_FAILED,      /**< refused: status -EAGAIN/-EDEADLK/-EINVAL/... */
    CLR_LT_CANCELED,    /**< waiting request cancelled (status -ECANCELED) */
    CLR_LT_UNLOCKED,    /**< lock released */
    CLR_LT_BAST,        /**< holder blocks a waiter asking @mode */
};

/** One outcome of an operation, for the lock (owner, lkid). */
struct clr_lt_effect {
    enum clr_lt_effect_type type;
    uint64_t owner;
    uint64_t lkid;
    int mode;          /**< GRANTED: new granted mode; FAILED/CANCELED:
               *   mode still granted (IV if none); BAST:
               *   the mode the waiter asks for */
    int status;        /**< 0 or -errno */
    unsigned sb_flags; /**< CLR_LOCK_SB_* on GRANTED */
    bool has_lvb;      /**< GRANTED with VALBLK: lvb holds the resource LVB */
    uint8_t lvb[CLR_LOCK_LVB_LEN];
};

typedef void (*clr_lt_emit_fn)(void *arg, const struct clr_lt_effect *e);

/** Queue a lock sits on. */
enum clr_lt_queue {
    CLR_LT_Q_GRANTED = 0,
    CLR_LT_Q_CONVERT,
    CLR_LT_Q_WAIT
};

struct clr_lt;

/** New empty table, or NULL on ENOMEM. */
struct clr_lt *clr_lt_new(void);
/** Free the table and every lock in it. */
void clr_lt_free(struct clr_lt *lt);

/**
 * New lock (owner, lkid) on resource @name asking @mode.
 * @return 0 if applied (see effects), -EEXIST, -EINVAL (also emitted as
 *         FAILED so a remote requester learns it).
 */
int clr_lt_request(struct clr_lt *lt, uint64_t owner, uint64_t lkid, const char *name, size_t namelen,
                   int mode, unsigned flags, clr_lt_emit_fn emit, void *arg);

/**
 * Convert a granted lock to @mode.  @lvb (VALBLK) is what a PW/EX holder
 * writes back on down-conversion.
 * @return 0, -ENOENT, -EBUSY (already converting or waiting), -EINVAL.
 */
int clr_lt_convert(struct clr_lt *lt, uint64_t owner, uint64_t lkid, int mode, unsigned flags,
                   const uint8_t *lvb, clr_lt_emit_fn emit, void *arg);

/**
 * Release a granted lock; with VALBLK a PW/EX holder writes @lvb back.
 * @return 0, -ENOENT, -EBUSY (request still pending: cancel it first).
 */
int clr_lt_unlock(struct clr_lt *lt, uint64_t owner, uint64_t lkid, unsigned flags, const uint8_t *lvb,
                  clr_lt_emit_fn emit, void *arg);

/**
 * Cancel a waiting request (removed) or conversion (back to granted mode).
 * @return 0, -ENOENT, -EBUSY (nothing pending: the grant won the race).
 */
int clr_lt_cancel(struct clr_lt *lt, uint64_t owner, uint64_t lkid, clr_lt_emit_fn emit, void *arg);

/**
 * Drop every lock of @owner (member left or confirmed dead).  With
 * @invalidate, resources where it held PW or EX get their LVB marked not
 * valid.  Waiters are then granted as usual.
 * @return number of locks removed.
 */
int clr_lt_remove_owner(struct clr_lt *lt, uint64_t owner, bool invalidate, clr_lt_emit_fn emit, void *arg);

/** Look a lock up.  @return 0 or -ENOENT. */
int clr_lt_lock_info(const struct clr_lt *lt, uint64_t owner, uint64_t lkid, int *grmode, int *rqmode,
                     enum clr_lt_queue *queue);

/** Resource LVB and validity.  @return 0 or -ENOENT (no such resource). */
int clr_lt_res_lvb(const struct clr_lt *lt, const char *name, uint8_t lvb[CLR_LOCK_LVB_LEN], bool *valid);

/** Number of locks held or queued by @owner. */
unsigned clr_lt_owner_locks(const struct clr_lt *lt, uint64_t owner);
/** Number of resources and locks in the table. */
void clr_lt_counts(const struct clr_lt *lt, unsigned *nres, unsigned *nlocks);

/** Bytes clr_lt_encode() needs. */
size_t clr_lt_encoded_size(const struct clr_lt *lt);
/**
 * Canonical little-endian encoding of the whole table (state transfer,
 * and two replicas are equal iff their encodings are equal).
 * @return bytes written or -ENOSPC.
 */
long clr_lt_encode(const struct clr_lt *lt, uint8_t *buf, size_t len);
/** Replace the table contents by a decoded encoding. @return 0, -EBADMSG. */
int clr_lt_decode(struct clr_lt *lt, const uint8_t *buf, size_t len);
/** 64-bit FNV-1a digest of the canonical encoding. */
uint64_t clr_lt_digest(const struct clr_lt *lt);

#endif
