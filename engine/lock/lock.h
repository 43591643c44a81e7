/*
 * clraid cluster lock service: the one interface all cluster coordination
 * goes through (doc/architecture.md §4).  DLM semantics: a lockspace per array,
 * resources by name, modes NL..EX, conversions, NOQUEUE, a 32-byte LVB,
 * blocking callbacks and membership events.
 *
 * Backends (local, cpg, dlm, sim) sit behind struct clr_lock_backend_ops
 * (lock_internal.h); callers only see this header.
 *
 * Threading: every function here may be called from any thread.  Callbacks
 * (completion, BAST, membership events) run only inside clr_ls_dispatch(),
 * which the caller runs when clr_ls_fd() is readable, or on the library's
 * own thread after clr_ls_start_dispatch_thread().  Callbacks may issue
 * asynchronous requests, but must not call the *_sync wrappers.
 *
 * Ordering: a membership event is delivered before any completion it
 * causes (MEMBER_FAILED before the grant the death allows), and a *_sync
 * wrapper returns such a grant only after the event's callback has run.
 * So with an event callback registered, keep the lockspace dispatched.
 *
 * Failure semantics (cpg): a member that leaves cleanly releases its
 * locks; one that dies on a live node (PROCDOWN) is released at once, its
 * PW/EX LVBs marked not valid; one lost with its node is held until the
 * fencer confirms, clr_ls_confirm_dead() is called, or the same process
 * comes back after dropping everything (see CLR_LS_EV_FREEZE).
 */
#ifndef CLRAID_LOCK_LOCK_H
#define CLRAID_LOCK_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Lock modes, numbered as the DLM numbers them (order matters: LVB rules). */
enum clr_lock_mode {
    CLR_LOCK_IV = -1, /**< no lock granted */
    CLR_LOCK_NL = 0,
    CLR_LOCK_CR = 1,
    CLR_LOCK_CW = 2,
    CLR_LOCK_PR = 3,
    CLR_LOCK_PW = 4,
    CLR_LOCK_EX = 5,
};
#define CLR_LOCK_NMODES 6

/** Size of the lock value block: the user-space DLM size. */
#define CLR_LOCK_LVB_LEN 32
/** Longest resource name in bytes (the DLM allows 64). */
#define CLR_LOCK_NAME_MAX 64
/** Longest lockspace name. */
#define CLR_LS_NAME_MAX 96

/* Request flags. */
#define CLR_LOCK_F_NOQUEUE 0x1u /**< fail with -EAGAIN instead of waiting */
#define CLR_LOCK_F_VALBLK  0x2u /**< read/write the LVB with this request */

/* Completion flags (clr_lock_sb_flags()). */
#define CLR_LOCK_SB_VALNOTVALID 0x1u /**< a PW/EX holder died: LVB suspect */

/** Membership and service events, delivered through clr_ls_dispatch(). */
enum clr_ls_event_type {
    /** Membership is changing: stop read balancing (md recover_prep). */
    CLR_LS_EV_PREP = 1,
    /** A member died and is confirmed dead; its locks are released
     *  (md recover_slot).  member/slot/nodeid/pid say who. */
    CLR_LS_EV_MEMBER_FAILED,
    /** Membership change fully handled; our_slot is valid (recover_done). */
    CLR_LS_EV_DONE,
    /** A failed member is still not confirmed dead after fence_timeout_ms;
     *  its locks stay held (safety) until confirmation or
     *  clr_ls_confirm_dead(). */
    CLR_LS_EV_FENCE_TIMEOUT,
    /** Quorum lost or this side lost a partition merge: freeze I/O.  All
     *  our locks are dropped (they complete with -ENOLCK); the lockspace
     *  rejoins by itself once quorum is back and then sends DONE. */
    CLR_LS_EV_FREEZE,
    /** A member was lost in a way that may leave it alive and writing
     *  (its node left the membership: crash or partition), so its locks
     *  stay held until it is confirmed dead.  member/slot/nodeid/pid as
     *  for MEMBER_FAILED; comes after PREP.  Every lost member later gets
     *  MEMBER_FAILED (fencer or clr_ls_confirm_dead(), or the same process
     *  rejoining after dropping its locks), unless the lockspace FREEZEs
     *  first; DONE comes only when no lost member is left unconfirmed.
     *  A joiner that finds unconfirmed members in the state it receives
     *  gets MEMBER_LOST for each.  Not sent for a clean leave or a process
     *  death on a live node (confirmed at once: MEMBER_FAILED only). */
    CLR_LS_EV_MEMBER_LOST,
};

/** One membership event. */
struct clr_ls_event {
    enum clr_ls_event_type type;
    uint64_t member; /**< member id (incarnation) the event is about */
    uint32_t nodeid; /**< corosync node id of that member, 0 if none */
    uint32_t pid;    /**< process id of that member, 0 if none */
    int slot;        /**< 1-based slot of that member, 0 if none */
    int our_slot;    /**< our 1-based slot (md uses slot - 1) */
};

struct clr_ls;
struct clr_lock;

/** Membership event callback. */
typedef void (*clr_ls_event_fn)(struct clr_ls *ls, const struct clr_ls_event *ev, void *arg);
/** Completion callback: clr_lock_status() tells the result. */
typedef void (*clr_lock_ast_fn)(struct clr_lock *lk, void *arg);
/** Blocking callback: another member waits for @mode on this resource. */
typedef void (*clr_lock_bast_fn)(struct clr_lock *lk, int mode, void *arg);

/** Lockspace configuration.  Zero values pick the defaults. */
struct clr_ls_config {
    /** "local" (default), "cpg", "dlm", or one registered with
     *  clr_lock_backend_register() (the simulator's "sim") */
    const char *backend;
    const char *name;      /**< lockspace name, e.g. the array UUID */
    clr_ls_event_fn event; /**< membership events, may be NULL */
    void *event_arg;
    unsigned join_timeout_ms;  /**< bound on clr_ls_open() (default 10 s) */
    unsigned fence_timeout_ms; /**< report unconfirmed deaths after (60 s) */
    unsigned fence_poll_ms;    /**< fencer poll interval (default 1 s) */
    /** backend specific: sim: the simulator; dlm: the string "no-cpg"
     *  runs without CPG membership events (unit tests) */
    const void *backend_arg;
};

/**
 * Open (join) a lockspace.  Returns once this member is part of the
 * lockspace and has its state, or fails after join_timeout_ms.
 * @return 0 and *out, or -errno (-ENOENT unknown backend, -ETIMEDOUT,
 *         -ENOTCONN no cluster stack, -EINVAL bad name).
 */
int clr_ls_open(const struct clr_ls_config *cfg, struct clr_ls **out);

/**
 * Make the cluster backends that ./configure built (cpg, dlm) known to
 * clr_ls_open().  A program that runs clustered engines (the nbdkit plugin,
 * the lock tests' members) calls it once before its first clr_ls_open();
 * the CLI does not, so that it loads none of corosync's, the DLM's and
 * Pacemaker's libraries (46 shared libraries for a `clraid status`).
 */
void clr_lock_cluster_backends(void);

/**
 * Leave the lockspace cleanly: every lock still held is released (a clean
 * leave never invalidates LVBs) and every lock object freed.
 */
void clr_ls_close(struct clr_ls *ls);

/** Pollable fd: readable while callbacks are waiting for clr_ls_dispatch(). */
int clr_ls_fd(struct clr_ls *ls);

/**
 * Run every pending callback (completions, BASTs, events) in order.
 * @return number of callbacks run, or -errno.
 */
int clr_ls_dispatch(struct clr_ls *ls);

/** Run clr_ls_dispatch() on an internal thread until clr_ls_close(). */
int clr_ls_start_dispatch_thread(struct clr_ls *ls);

/** Our 1-based slot in this lockspace (stable while we stay joined). */
int clr_ls_our_slot(const struct clr_ls *ls);

/**
 * Live members of the lockspace as this member sees them (us included);
 * 0 if the backend cannot tell (dlm without CPG).
 */
int clr_ls_member_count(struct clr_ls *ls);

/** Our member id (unique per join). */
uint64_t clr_ls_member_id(const struct clr_ls *ls);

/** Backend name of an open lockspace. */
const char *clr_ls_backend_name(const struct clr_ls *ls);

/**
 * Administrative override: declare a failed member dead although the
 * fencer did not confirm it (the operator checked by hand).
 * @return 0, -ENOENT if no such failed member, -EOPNOTSUPP.
 */
int clr_ls_confirm_dead(struct clr_ls *ls, uint64_t member);

/**
 * Create a lock object for resource @name (not yet requested: mode IV).
 * @ast and @bast may be NULL (the sync wrappers do not need @ast).
 * @return the object or NULL with errno set (EINVAL name too long).
 */
struct clr_lock *clr_lock_create(struct clr_ls *ls, const char *name, clr_lock_ast_fn ast,
                                 clr_lock_bast_fn bast, void *arg);

/** Free a lock object; it must hold no lock and have nothing pending. */
int clr_lock_destroy(struct clr_lock *lk);

/**
 * Request @mode asynchronously: a new lock if none is held, else a
 * conversion.  Completion comes through the ast with clr_lock_status()
 * 0, -EAGAIN (NOQUEUE and not grantable), -EDEADLK (conversion deadlock),
 * -ECANCELED (clr_lock_cancel) or -ENOLCK (lockspace lost our locks).
 * With CLR_LOCK_F_VALBLK: a down-conversion from PW/EX (or PW->PW) writes
 * clr_lock_lvb() to the resource; a grant copies the resource LVB into it.
 * @return 0 if submitted, -EBUSY if an operation is already pending,
 *         -EINVAL, -ENOLCK when the lockspace is frozen.
 */
int clr_lock_request(struct clr_lock *lk, int mode, unsigned flags);

/**
 * Release the lock asynchronously (ast with status 0 once released).  With
 * CLR_LOCK_F_VALBLK a PW/EX holder writes its LVB back first.
 */
int clr_lock_unlock(struct clr_lock *lk, unsigned flags);

/** Cancel a waiting request or conversion (the conversion keeps the old
 *  granted mode).  The ast reports -ECANCELED, or 0 if the grant won. */
int clr_lock_cancel(struct clr_lock *lk);

/**
 * Request and wait up to @timeout_ms (0 = forever).  On timeout the request
 * is cancelled; if the grant raced the cancel, the lock is held and 0 is
 * returned.  If the cancel is not answered either (-ETIMEDOUT with the
 * request still pending), its late completion is reported to the ast, if
 * the lock has one (it may be a grant).
 * @return 0, -EAGAIN, -EDEADLK, -ETIMEDOUT, -ENOLCK, -EBUSY, -EINVAL.
 */
int clr_lock_sync(struct clr_lock *lk, int mode, unsigned flags, unsigned timeout_ms);

/**
 * Wait up to @timeout_ms (0 = forever) for the pending asynchronous
 * operation of @lk to complete, without needing clr_ls_dispatch() (the
 * ast, if any, is still queued).  Lets a caller pipeline requests on
 * several locks and then collect them.
 * @return its status (0 or -errno), -ETIMEDOUT; the last status if
 *         nothing is pending.
 */
int clr_lock_wait(struct clr_lock *lk, unsigned timeout_ms);

/** Unlock and wait up to @timeout_ms.  @return 0 or -errno. */
int clr_unlock_sync(struct clr_lock *lk, unsigned flags, unsigned timeout_ms);

/** Granted mode, or CLR_LOCK_IV if none. */
int clr_lock_mode(const struct clr_lock *lk);
/** Result of the last completed operation (0 or -errno). */
int clr_lock_status(const struct clr_lock *lk);
/** CLR_LOCK_SB_* flags of the last grant. */
unsigned clr_lock_sb_flags(const struct clr_lock *lk);
/** The lock's 32-byte LVB buffer (read after a grant, write before a
 *  down-convert or unlock with VALBLK). */
uint8_t *clr_lock_lvb(struct clr_lock *lk);
/**
 * Number of BASTs that arrived for this lock so far.  Counted when they
 * arrive, before the callback runs, so after a later grant a holder can
 * tell whether a blocking request was queued in between.
 */
unsigned clr_lock_bast_count(const struct clr_lock *lk);
/** Resource name. */
const char *clr_lock_name(const struct clr_lock *lk);
/** The lockspace of a lock object. */
struct clr_ls *clr_lock_ls(const struct clr_lock *lk);

/**
 * Is a kernel DLM lockspace named @name live anywhere in the corosync
 * cluster?  dlm_controld joins the CPG group "dlm:ls:<name>" on every node
 * that has it (kernel md-cluster names its lockspace by the array UUID).
 * @return 1 yes, 0 no, -errno if it cannot tell (no corosync).
 */
int clr_lock_kernel_lockspace_live(const char *name);

/** DLM compatibility matrix: true if @a and @b may be granted together. */
bool clr_lock_modes_compat(int a, int b);
/** "NL".."EX", "IV" for CLR_LOCK_IV, "?" otherwise. */
const char *clr_lock_mode_name(int mode);
/** Parse "NL".."EX"; @return the mode or -EINVAL. */
int clr_lock_mode_parse(const char *s);

#endif
