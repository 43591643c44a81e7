/*
 * Inside the lock service: the common lockspace core shared by all
 * backends, and the backend ops table.  Not for engine code.
 */
#ifndef CLRAID_LOCK_LOCK_INTERNAL_H
#define CLRAID_LOCK_LOCK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/lockrank.h"
#include "lock/lock.h"
#include "lock/lock_table.h"

/**
 * A lock backend.  Called WITHOUT ls->mu held (a backend may block, e.g.
 * on corosync flow control); a backend takes ls->mu itself around the
 * core's *_locked helpers.  request/unlock/cancel return 0 once submitted;
 * the outcome comes later through clr_ls_effect_locked() or
 * clr_ls_complete_locked().  A backend for the simulator is the same table
 * with its own ops, registered with clr_lock_backend_register().
 */
struct clr_lock_backend_ops {
    const char *name;
    int (*open)(struct clr_ls *ls, const struct clr_ls_config *cfg);
    /** Release every lock cleanly and leave; frees backend state. */
    void (*close)(struct clr_ls *ls);
    /** New lock if lk->grmode is IV, else conversion. */
    int (*request)(struct clr_ls *ls, struct clr_lock *lk, int mode, unsigned flags);
    int (*unlock)(struct clr_ls *ls, struct clr_lock *lk, unsigned flags);
    int (*cancel)(struct clr_ls *ls, struct clr_lock *lk);
    int (*confirm_dead)(struct clr_ls *ls, uint64_t member); /* optional */
    /** Digest of the replicated state, for consistency tests (optional). */
    uint64_t (*digest)(struct clr_ls *ls);
    /** Live members (optional; clr_ls_member_count()). */
    int (*member_count)(struct clr_ls *ls);
};

enum clr_lock_op {
    CLR_OP_NONE,
    CLR_OP_REQUEST,
    CLR_OP_UNLOCK
};

struct clr_lock {
    struct clr_ls *ls;
    struct clr_lock *hnext; /* lkid hash */
    uint64_t lkid;          /* unique within this process, never reused */
    char name[CLR_LOCK_NAME_MAX + 1];
    size_t namelen;
    int grmode;          /* granted mode as we know it, IV if none */
    int rqmode;          /* pending request's mode */
    enum clr_lock_op op; /* pending operation */
    bool sync_op;        /* a *_sync wrapper waits: no ast */
    bool cancel_sent;
    int status;
    unsigned sb_flags;
    uint64_t done_seq;   /* bumped on every completion */
    unsigned bast_count; /* BASTs received */
    uint64_t barrier;    /* event callbacks to run before a sync
                  * waiter may see this completion */
    uint8_t lvb[CLR_LOCK_LVB_LEN];
    clr_lock_ast_fn ast;
    clr_lock_bast_fn bast;
    /* called when a BAST arrives, under ls->mu, before it is queued:
     * may only record and signal (bcast uses it to skip a thread hop) */
    clr_lock_bast_fn bast_hook;
    void *arg;
    void *be; /* backend private, malloc'd; freed with lk */
};

struct clr_cb;

#define CLR_LS_LOCK_BUCKETS 256

struct clr_ls {
    struct clr_mutex mu;
    pthread_cond_t cond; /* completions, for the sync wrappers */
    const struct clr_lock_backend_ops *ops;
    void *be; /* backend private */
    char name[CLR_LS_NAME_MAX + 1];
    clr_ls_event_fn event;
    void *event_arg;
    struct clr_ls_config cfg;
    uint64_t member_id;
    int our_slot;
    uint64_t next_lkid;
    struct clr_lock *locks[CLR_LS_LOCK_BUCKETS];
    unsigned nlocks;
    struct clr_cb *cb_head, *cb_tail; /* pending callbacks */
    uint64_t cb_seq;                  /* last callback queued */
    uint64_t ev_seq;                  /* last event callback queued */
    uint64_t dispatched_seq;          /* last callback run */
    int efd;                          /* eventfd: callbacks pending */
    pthread_t dispatch_thread;
    bool dispatch_running, stopping;
};

/** Register a backend (e.g. the simulator's) under ops->name. */
int clr_lock_backend_register(const struct clr_lock_backend_ops *ops);

extern const struct clr_lock_backend_ops clr_lock_backend_local;
extern const struct clr_lock_backend_ops clr_lock_backend_cpg;
extern const struct clr_lock_backend_ops clr_lock_backend_dlm;

/* Core helpers for backends; ls->mu must be held. */

/** Find our lock object by lkid, or NULL. */
struct clr_lock *clr_ls_find_lock_locked(struct clr_ls *ls, uint64_t lkid);

/**
 * Finish the pending operation of @lk: @status, granted mode @mode, flags,
 * and the LVB read on grant (NULL: unchanged).  Wakes sync waiters, queues
 * the ast for async callers.
 */
void clr_ls_complete_locked(struct clr_ls *ls, struct clr_lock *lk, int status, int mode, unsigned sb_flags,
                            const uint8_t *lvb);

/** Queue a BAST for @lk. */
void clr_ls_bast_locked(struct clr_ls *ls, struct clr_lock *lk, int mode);

/** Queue a membership event. */
void clr_ls_event_locked(struct clr_ls *ls, const struct clr_ls_event *ev);

/** Apply a lock-table effect addressed to us (owner == ls->member_id). */
void clr_ls_effect_locked(struct clr_ls *ls, const struct clr_lt_effect *e);

/** Every lock of ours is gone (frozen/lost): complete all with @status. */
void clr_ls_fail_all_locked(struct clr_ls *ls, int status);

/**
 * Simulation/test hook of the local backend: @ls dies without leaving
 * (all its locks complete with -ENOLCK); the other members of the same
 * local lockspace get PREP, MEMBER_FAILED and DONE, and PW/EX LVBs of the
 * dead member are marked not valid.
 */
int clr_lock_local_kill(struct clr_ls *ls);

/**
 * Test hook of the local backend: @ls is lost with its whole node (as a
 * cpg member gone with NODEDOWN): all its locks complete with -ENOLCK
 * here, the other members get PREP and MEMBER_LOST, and its locks and slot
 * stay held until one of them calls clr_ls_confirm_dead() with its member
 * id (then MEMBER_FAILED, LVBs not valid, and DONE once nothing lost is
 * left unconfirmed).
 */
int clr_lock_local_lose(struct clr_ls *ls);

/**
 * Test hook of the dlm backend: as if CPG reported member (@nodeid, @pid)
 * gone, its node lost (@nodedown) or only its process (else), with the
 * slot it announced (@slot, 1-based; 0: it never announced).  The backend
 * then works as for a real departure (MEMBER_LOST, slot lock probes,
 * MEMBER_FAILED, DONE).
 */
int clr_lock_dlm_test_left(struct clr_ls *ls, uint32_t nodeid, uint32_t pid, int slot, bool nodedown);

/** Backend's state digest (0 if it has none): tests compare members. */
uint64_t clr_ls_debug_digest(struct clr_ls *ls);

/** Monotonic clock in milliseconds. */
uint64_t clr_lock_now_ms(void);

#endif
