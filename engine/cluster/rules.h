/*
 * clraid cluster rules: how a node's view of the members follows what the
 * other nodes did, and when a client write may go, written once for the
 * engine (engine/array/array_cluster.c, engine/array/array_io.c) and the
 * simulator (tests/sim), which both gather the facts, call these, and
 * apply the decisions under their own lock.
 *
 * Pure: no threads, no I/O, no allocation, no globals (except the
 * fault-injection switch of test builds, below).  Every function reads
 * plain structs the caller filled and writes only the caller's arrays.
 *
 * Slots are 0-based bitmap slots (engine/cluster/mdc.h).  Roles are md's
 * (doc/architecture.md §2.2): 0..raid_disks-1 active, CLR_RULES_ROLE_FAULTY,
 * CLR_RULES_ROLE_SPARE.
 */
#ifndef CLRAID_CLUSTER_RULES_H
#define CLRAID_CLUSTER_RULES_H

#include <stdbool.h>
#include <stdint.h>

#define CLR_RULES_ROLE_SPARE  0xffffU /* md's dev_roles[] values */
#define CLR_RULES_ROLE_FAULTY 0xfffeU
#define CLR_RULES_MAX_ROLES   256
/* = CLR_MDC_METADATA_UPDATED (engine/cluster/mdc.h; mdc.c checks it) */
#define CLR_RULES_MSG_METADATA_UPDATED 0

/** A member's state in one node's view. */
enum clr_rules_mstate {
    CLR_RULES_IN_SYNC,
    CLR_RULES_REBUILDING,
    CLR_RULES_SPARE,
    CLR_RULES_FAULTY,
    CLR_RULES_REMOVED,
};

/** One member as this node sees it. */
struct clr_rules_member {
    enum clr_rules_mstate state;
    int role;                 /**< -1: none */
    bool has_io;              /**< this node can reach it */
    bool remote_rebuild;      /**< REBUILDING driven by another node */
    int rebuilder;            /**< remote_rebuild: its slot, -1 unknown */
    bool write_behind;        /**< FAULTY by another's report, still written */
    uint64_t readd_events;    /**< superblock events when its RE_ADD began
                   *   (0: none): an older or equal superblock's
                   *   FAULTY predates the re-add */
    uint64_t recovery_offset; /**< REBUILDING: checkpoint here */
    bool bitmap_recovery;     /**< REBUILDING: only NEEDED chunks */
};

/** The newest superblock's entry for a member. */
struct clr_rules_sbrole {
    bool present;  /**< dev_number < max_dev */
    uint16_t role; /**< raw dev_roles[dev_number] */
};

/** The member's own superblock (the one on that device). */
struct clr_rules_own {
    bool readable;        /**< read (false: not read, or failed) */
    bool present;         /**< its dev_number < its max_dev */
    uint16_t role;        /**< its dev_roles[its dev_number] */
    bool recovering;      /**< recovery-offset feature, offset not max */
    bool bitmap_recovery; /**< recovery-bitmap feature */
    uint64_t recovery_offset;
    uint64_t events;
};

/** What a rule runs in. */
struct clr_rules_ctx {
    int sender;      /**< slot of the message being processed, -1 */
    int type;        /**< its CLR_MDC_* type, -1: no message */
    uint64_t dead;   /**< slots that died (their adds, rebuilds) */
    bool alone;      /**< no other node is left */
    bool settle_all; /**< settle every NEWDISK candidate: a
                   *   METADATA_UPDATED, or our own `metadata` */
    unsigned raid_disks;
    uint64_t sb_events; /**< events of the superblock the rule reads */
    /** bit r: role r is held (IN_SYNC/REBUILDING) by a member; for
     *  clr_rules_remote_readd() by a member other than the one asked */
    uint64_t role_taken[CLR_RULES_MAX_ROLES / 64];
};

static inline void clr_rules_role_set(struct clr_rules_ctx *x, unsigned r, bool on)
{
    if (r >= CLR_RULES_MAX_ROLES)
        return;
    if (on)
        x->role_taken[r / 64] |= 1ull << (r % 64);
    else
        x->role_taken[r / 64] &= ~(1ull << (r % 64));
}

static inline bool clr_rules_role_taken(const struct clr_rules_ctx *x, unsigned r)
{
    return r >= CLR_RULES_MAX_ROLES || (x->role_taken[r / 64] >> (r % 64)) & 1;
}

/* ---- superblock reload ---- */

enum {
    CLR_RULES_CH_FAULTY = 1u << 0,     /**< another node failed it */
    CLR_RULES_CH_ACTIVATE = 1u << 1,   /**< spare activated elsewhere:
                      *   REBUILDING remote, @role, @rebuilder,
                      *   no bitmap recovery */
    CLR_RULES_CH_CHECKPOINT = 1u << 2, /**< its rebuild moved on: take
                      *   @recovery_offset, @rebuilder */
    CLR_RULES_CH_IN_SYNC = 1u << 3,    /**< recovered elsewhere: IN_SYNC,
                      *   not remote, no bitmap recovery */
    CLR_RULES_CH_READD_KEPT = 1u << 4, /**< FAULTY ignored: written before
                      *   its RE_ADD (nothing to apply) */
};

/** One member's decision (in the order the caller applies them). */
struct clr_rules_change {
    unsigned what;            /**< CLR_RULES_* bits, 0: nothing */
    int role;                 /**< ACTIVATE */
    int rebuilder;            /**< ACTIVATE, CHECKPOINT: its rebuilder now */
    uint64_t recovery_offset; /**< CHECKPOINT */
    const char *why;          /**< log reason of the last change */
};

/**
 * A superblock was re-read (METADATA_UPDATED, a death, a join, our own
 * metadata section): apply what other nodes changed to @n members.
 * @sb[i]: the newest superblock's entry for member i; @own[i]: member i's
 * own superblock, read for the members that were SPARE or REBUILDING
 * remote (readable false for the others).  @x: sender and type of the
 * message (a spare activated by a METADATA_UPDATED is rebuilt by its
 * sender), raid_disks, role_taken, sb_events (of the newest superblock).
 * Writes @out[i] for every member.  @return whether a member's state
 * changed (a checkpoint alone is not a change).
 */
bool clr_rules_reload(const struct clr_rules_ctx *x, const struct clr_rules_member *m,
                      const struct clr_rules_sbrole *sb, const struct clr_rules_own *own, unsigned n,
                      struct clr_rules_change *out);

/** Member with @role is in sync on disk: its own superblock, as new as the
 *  newest (@sb_events), carries the role and no recovery, and so does the
 *  newest.  (A spare's superblock from before its activation is neither.) */
bool clr_rules_recovered_elsewhere(const struct clr_rules_own *own, const struct clr_rules_sbrole *sb,
                                   uint64_t sb_events, int role);

/* ---- start ---- */

/**
 * A node that starts, holding `metadata` after its join: every member the
 * newest superblock gives a role (in sync or rebuilding: @sb[i].role <
 * raid_disks) must be one it runs (@m[i] IN_SYNC, REBUILDING or SPARE),
 * or it would never write that member while the others read it.  This
 * happens when another node re-added a member this node loaded as faulty
 * (the RE_ADD went out before this node joined; the re-adder held
 * `metadata` until the role was written), or when the member's path was
 * not given here.  @return the first such member's index (the node does
 * not start; it re-reads the superblocks and starts again), or -1.
 */
int clr_rules_start_missing(const struct clr_rules_ctx *x, const struct clr_rules_member *m,
                            const struct clr_rules_sbrole *sb, unsigned n);

/* ---- NEWDISK candidates ---- */

/** A candidate added by slot @adder (-1: unknown) waits (its adder is
 *  alive and its METADATA_UPDATED, commit or roll back, still to come)
 *  rather than being settled now. */
bool clr_rules_candidate_waits(const struct clr_rules_ctx *x, int adder);

/** What the candidate's device and the newest superblock say. */
struct clr_rules_candidate {
    bool sb_readable;           /**< its superblock reads, same array */
    bool uuid_match;            /**< its device uuid is the announced one */
    bool dev_match;             /**< its dev_number is the announced one */
    struct clr_rules_sbrole sb; /**< newest superblock's entry for it */
};

/** Settle: it becomes a member (a spare) or is dropped (rolled back). */
bool clr_rules_candidate_taken(const struct clr_rules_candidate *c);

/* ---- rebuild ownership ---- */

/** Nobody drives member @m's rebuild any more: its rebuilder is in
 *  @x->dead, or @x->alone (nobody else is left); it resumes here. */
bool clr_rules_orphaned(const struct clr_rules_ctx *x, const struct clr_rules_member *m);

/** Where an adopted rebuild resumes: the checkpoint of its own superblock
 *  (a re-add's gathered bits died with its node: from 0 otherwise). */
uint64_t clr_rules_resume_offset(const struct clr_rules_own *own);

/** Who finishes a rebuild whose rebuilder slot is @rebuilder, asked on
 *  slot @slot. */
enum clr_rules_owner {
    CLR_RULES_OWNER_OTHER,  /**< a live node drives it: follow */
    CLR_RULES_OWNER_MINE,   /**< we drive it */
    CLR_RULES_OWNER_ORPHAN, /**< its rebuilder is dead: adopt it */
};
enum clr_rules_owner clr_rules_rebuild_owner(const struct clr_rules_ctx *x, int rebuilder, unsigned slot);

/** The rebuild's driver may declare it done: nothing NEEDED here, no
 *  resync wanted, and no takeover, window or other node's dirty extent
 *  anywhere (@cluster_busy: clr_mdc_recovery_pending() or
 *  clr_mdc_read_first() over the whole array). */
bool clr_rules_rebuild_done(bool needed_here, bool cluster_busy);

/* ---- remote RE_ADD ---- */

/** The state a remote RE_ADD puts the member in. */
struct clr_rules_readd {
    enum clr_rules_mstate state; /**< REBUILDING */
    int role;
    int rebuilder;         /**< the sender */
    uint64_t readd_events; /**< @x->sb_events */
    /* and: remote_rebuild, bitmap_recovery, no write_behind: written
     * from now on, not read */
};

/**
 * RE_ADD of member @m from @x->sender: its role (its own, else its own
 * superblock's @own if that names this device), which no other member
 * holds (@x->role_taken), must be < raid_disks and @m FAULTY or REMOVED.
 * @return 0 with @out filled, -EINVAL (refused).
 */
int clr_rules_remote_readd(const struct clr_rules_ctx *x, const struct clr_rules_member *m,
                           const struct clr_rules_own *own, bool own_names_it, struct clr_rules_readd *out);

/* ---- write admission ---- */

/** The protocol state a client write's admission reads (engine/cluster/
 *  mdc.c keeps it). */
struct clr_rules_window {
    bool held;    /**< a lost node is not fenced yet */
    int win_from; /**< slot of the remote resync window, -1 */
    uint64_t win_lo, win_hi;
};

enum clr_rules_admit {
    CLR_RULES_ADMIT,       /**< the write goes */
    CLR_RULES_WAIT_WINDOW, /**< inside a remote resync window */
    CLR_RULES_WAIT_HOLD,   /**< a lost node is not fenced yet */
};

/** A client write (or trim, zero) to [lo, hi) registered in flight: go,
 *  or back off and wait for the window to move / the hold to end. */
enum clr_rules_admit clr_rules_admit(const struct clr_rules_window *w, uint64_t lo, uint64_t hi);

/** [lo, hi) overlaps the remote resync window. */
bool clr_rules_in_window(const struct clr_rules_window *w, uint64_t lo, uint64_t hi);

/* ---- fault injection (test builds only) ---- */

/**
 * The simulator's self-test (tests/sim/selftest-sim.sh) breaks one rule
 * here or in engine/cluster/mdc.c and checks that its checker catches
 * it.  Compiled in only with CLR_RULES_FAULTS (tests/sim builds its own
 * copy of rules.c and mdc.c with it); the engine has no switch at all.
 */
enum clr_rules_fault {
    CLR_RULES_FAULT_NONE = 0,
    CLR_RULES_FAULT_IGNORE_WINDOW,    /**< admission ignores the window */
    CLR_RULES_FAULT_IGNORE_HOLD,      /**< admission ignores the hold */
    CLR_RULES_FAULT_READD_NO_WRITE,   /**< remote RE_ADD leaves it faulty */
    CLR_RULES_FAULT_NO_DRAIN,         /**< mdc: RESYNCING acked undrained */
    CLR_RULES_FAULT_BALANCE_RECOVERY, /**< mdc: read_first() says no */
    CLR_RULES_FAULT_NEWDISK_IGNORE,   /**< mdc: NEWDISK busy taken as found */
    CLR_RULES_FAULT_LEAVE_NO_SYNC,    /**< mdc: an unclean leave sends nothing */
    CLR_RULES_FAULT_ORPHAN_NEVER,     /**< a dead rebuilder's rebuild is
                     *   never adopted */
    CLR_RULES_FAULT_REBUILD_EARLY,    /**< a rebuild is declared done while
                     *   the cluster still resyncs */
    CLR_RULES_FAULT_SB_NO_FAULTY,     /**< reload ignores remote faulty marks */
    CLR_RULES_FAULT_START_MISSING,    /**< a start misses a member re-added
                     *   elsewhere while it started */
    CLR_RULES_FAULT_NCOUNT
};

#ifdef CLR_RULES_FAULTS
extern enum clr_rules_fault clr_rules_fault;
#define CLR_RULES_FAULT(f) (clr_rules_fault == (f))
#else
#define CLR_RULES_FAULT(f) 0
#endif

#endif
