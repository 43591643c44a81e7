/*
 * clraid clustered RAID5/6 rules: stripe-zone locks, the per-node
 * partial-parity log and the recovery of a dead node's log, written once
 * for the engine and the simulator (tests/sim/sim56.c), which gather the
 * facts, call these and carry out the decisions.  The protocol is
 * doc/cluster.md, "Clustered RAID5/6".
 *
 * Pure: no threads, no I/O, no allocation, no globals (except the
 * fault-injection switch of test builds, below).
 *
 * Terms.  A zone is `stripes_per_zone` consecutive stripes; its lock is a
 * lock-service resource.  EX is needed to write a stripe of the zone (and
 * to resync or repair it), PR to read it degraded (reconstruct) or check
 * it; a fault-free read of a data chunk takes no lock.  A node keeps a
 * zone lock cached after use and gives it up only when another node asks
 * (a blocking callback), after a minimum hold time.
 *
 * The log.  Before a node writes data or parity of a stripe it makes an
 * entry durable in its own log: the stripe, the data chunks it changes,
 * and the partial parity of the chunks it leaves alone (P, and Q for
 * RAID6).  After a crash, parity = partial parity + the changed chunks as
 * they are on disk, whichever of old or new each holds.  A node's durable
 * log names only stripes of zones it holds EX: before a zone lock leaves
 * the node the zone's entries are retired (a newer header without them).
 */
#ifndef CLRAID_CLUSTER_ZONE_H
#define CLRAID_CLUSTER_ZONE_H

#include <stdbool.h>
#include <stdint.h>

/** Lock modes as engine/lock/lock.h numbers them. */
#define CLR_ZONE_IV (-1)
#define CLR_ZONE_PR 3
#define CLR_ZONE_EX 5

/** The zone's resource name: "z" and its number in hex (fits in 64). */
#define CLR_ZONE_NAME_FMT "z%llx"

/** How stripes group into zones. */
struct clr_zone_geom {
    uint64_t stripes;          /**< stripes in the array */
    uint32_t stripes_per_zone; /**< >= 1 */
};

/** Zone of @stripe. */
static inline uint64_t clr_zone_of(const struct clr_zone_geom *g, uint64_t stripe)
{
    return stripe / g->stripes_per_zone;
}

/** Number of zones. */
static inline uint64_t clr_zone_count(const struct clr_zone_geom *g)
{
    return (g->stripes + g->stripes_per_zone - 1) / g->stripes_per_zone;
}

/**
 * Split a request over stripes [@first, @first + @n) at zone boundaries:
 * @return how many stripes, from @first, lie in @first's zone (so that no
 * request waits on two zones at once).
 */
uint64_t clr_zone_split(const struct clr_zone_geom *g, uint64_t first, uint64_t n);

/* ---- the zone's lock value block ---- */

#define CLR_ZONE_LVB_MAGIC 0x7a6f6e65u /* "zone" */

/** What the LVB of a zone says, once decoded. */
struct clr_zone_lvb {
    uint64_t seq;   /**< bumped by every EX holder that wrote the zone */
    int32_t writer; /**< slot (0-based) of the last writer, -1 none */
    uint32_t epoch; /**< recovery epoch it was written in */
};

enum clr_zone_lvb_state {
    CLR_ZONE_LVB_VALID,   /**< written by a holder that released it */
    CLR_ZONE_LVB_NEW,     /**< never written (all zero, valid) */
    CLR_ZONE_LVB_SUSPECT, /**< marked not valid (an EX holder died) or
                           *   not ours: the zone may be in a dead node's
                           *   log; never read as zero */
};

/** Encode @l into the 32-byte LVB @buf. */
void clr_zone_lvb_encode(const struct clr_zone_lvb *l, uint8_t buf[32]);
/** Decode the LVB of a grant; @valnotvalid is the grant's flag. */
enum clr_zone_lvb_state clr_zone_lvb_decode(const uint8_t buf[32], bool valnotvalid,
                                            struct clr_zone_lvb *out);

/* ---- one zone in one node's cache ---- */

/** What an operation on a zone needs. */
enum clr_zone_op {
    CLR_ZONE_OP_READ,          /**< fault-free read: no lock */
    CLR_ZONE_OP_READ_DEGRADED, /**< reconstruct: PR */
    CLR_ZONE_OP_CHECK,         /**< compare parity: PR */
    CLR_ZONE_OP_WRITE,         /**< EX */
    CLR_ZONE_OP_RESYNC,        /**< EX */
};

/** A zone as one node holds it. */
struct clr_zone_cache {
    int mode;            /**< granted: CLR_ZONE_IV, _PR or _EX */
    bool requesting;     /**< a request or conversion is out */
    bool releasing;      /**< release under way (retire, then unlock) */
    bool suspect;        /**< granted with a suspect LVB, not yet cleared */
    bool blocked;        /**< a blocking callback came since the grant */
    unsigned inflight;   /**< admitted operations not finished */
    unsigned logged;     /**< stripes of the zone in our durable log */
    int want;            /**< strongest mode an operation waits for */
    uint64_t granted_at; /**< time of the grant (caller's unit) */
};

/** What the node knows that every rule reads. */
struct clr_zone_ctx {
    uint64_t now;         /**< caller's clock, same unit as min_hold */
    uint64_t min_hold;    /**< keep a blocked lock this long after the
                              *   grant, so contended zones do not
                              *   ping-pong */
    uint64_t unrecovered; /**< slots (bit i: slot i) seen die whose log
                              *   is not yet replayed */
};

enum clr_zone_admit {
    CLR_ZONE_ADMIT,   /**< go (the caller counts it in inflight) */
    CLR_ZONE_REQUEST, /**< ask for the lock (mode: clr_zone_need) */
    CLR_ZONE_DROP,    /**< PR held, EX needed: unlock the PR first, then
                       *   request EX (two PR holders converting up
                       *   deadlock) */
    CLR_ZONE_WAIT,    /**< wait for a grant, a release, a drain or a
                       *   recovery */
};

/** Lock mode @op needs (CLR_ZONE_IV: none). */
int clr_zone_need(enum clr_zone_op op);

/**
 * Mode to request when clr_zone_admit() says CLR_ZONE_REQUEST for @op:
 * the strongest any operation on the zone waits for, so that a write
 * waiting behind a dropped PR is not overtaken by a read asking PR again.
 */
int clr_zone_request_mode(const struct clr_zone_cache *z, enum clr_zone_op op);

/**
 * May @op start on zone @z now?  A zone granted with a suspect LVB is
 * usable once no slot is left unrecovered; the first admission after that
 * clears z->suspect.  An operation told to wait for a stronger mode than
 * held records it in z->want (the two fields this writes).
 */
enum clr_zone_admit clr_zone_admit(struct clr_zone_cache *z, const struct clr_zone_ctx *x,
                                   enum clr_zone_op op);

/**
 * A grant arrived: record it in @z (mode, time, LVB state).  A grant with
 * a suspect LVB leaves the zone unusable until clr_zone_admit() sees no
 * unrecovered slot.
 */
void clr_zone_granted(struct clr_zone_cache *z, const struct clr_zone_ctx *x, int mode,
                      enum clr_zone_lvb_state lvb);

/** Next step of giving the zone's lock up. */
enum clr_zone_release {
    CLR_ZONE_KEEP,   /**< nobody asked, or the minimum hold is not over */
    CLR_ZONE_DRAIN,  /**< stop admitting; wait for inflight to reach 0 */
    CLR_ZONE_RETIRE, /**< write a log header without the zone's entries
                      *   and wait until it is durable (logged -> 0) */
    CLR_ZONE_UNLOCK, /**< write the LVB (seq + 1 if we wrote) and unlock */
};

enum clr_zone_release clr_zone_release_step(const struct clr_zone_cache *z, const struct clr_zone_ctx *x);

/**
 * Does the unlock write the LVB?  Not while the zone is still suspect: the
 * not-valid mark must stay on the resource until the dead node's log is
 * replayed, or the next holder would take the zone as clean.
 */
bool clr_zone_unlock_writes_lvb(const struct clr_zone_cache *z);

/* ---- the log ---- */

/**
 * Which of a node's log header copies holds its log: the valid one (its
 * checksum right, a torn or unwritten copy is not) with the highest
 * generation.  @return its index, or -1 if none is valid (empty log).
 */
int clr_zone_log_pick(const uint64_t *gen, const bool *valid, unsigned ncopies);

/** The copy a new header goes to: never over the one clr_zone_log_pick()
 *  gives, so that a torn write leaves the previous header readable. */
unsigned clr_zone_log_next_copy(const uint64_t *gen, const bool *valid, unsigned ncopies);

/**
 * May the data and parity writes of a stripe be issued?  Only once the
 * log header naming the write is durable (@entry_durable).
 */
bool clr_zone_may_issue(bool entry_durable);

/**
 * May a log entry be dropped from the header (retired)?  Only once its
 * write is complete on every member it went to (data and parity), or at a
 * replay once parity was rewritten.
 */
bool clr_zone_log_may_retire(bool write_complete);

/** What a replay does with one entry, given which members it can use. */
enum clr_zone_replay {
    CLR_ZONE_REPLAY_PARITY,       /**< every changed chunk's member is there:
                              *   parity := partial parity + the changed
                              *   chunks as on disk (each parity member
                              *   present) */
    CLR_ZONE_REPLAY_REBUILD,      /**< the one changed chunk's member is gone:
                              *   an unchanged chunk that is gone too :=
                              *   partial parity + the other unchanged;
                              *   the changed one := from P (or Q), which
                              *   holds its old or new value; then every
                              *   parity present := from that data, so P
                              *   and Q agree */
    CLR_ZONE_REPLAY_REBUILD_LOST, /**< as REBUILD, but other changed
                              *   chunks enter the equation (or two are
                              *   gone): the gone changed chunks may end
                              *   neither old nor new.  A crash and a
                              *   member loss at once on a multi-chunk
                              *   write: more faults than the log covers;
                              *   the unchanged chunks are still kept */
    CLR_ZONE_REPLAY_NONE,         /**< no parity member left: nothing to do */
};

/**
 * @level 5 or 6; @changed data chunks the entry names, @changed_missing of
 * them on members that are gone; @p_ok, @q_ok parity members present
 * (q_ok false for RAID5).
 */
enum clr_zone_replay clr_zone_replay_plan(int level, unsigned changed, unsigned changed_missing, bool p_ok,
                                          bool q_ok);

/** Does a RAID6 replay rewrite Q as well as P (CLR_ZONE_REPLAY_PARITY)? */
bool clr_zone_replay_q(int level);

/* ---- recovery of a dead node's slot ---- */

/**
 * Recovery of slot @slot runs under EX of its recovery lock (one
 * recoverer at a time; a recoverer that dies is replaced, and starts
 * over: every step is idempotent).  Once granted: is there still work?
 * Not if another recoverer announced the slot replayed meanwhile
 * (@unrecovered no longer names it): replaying again could rewrite parity
 * under a node that writes the zone by now.
 */
bool clr_zone_recover_needed(uint64_t unrecovered, int slot);

/** The recovery lock's resource name: "r" and the slot in decimal. */
#define CLR_ZONE_REC_NAME_FMT "r%d"

/**
 * May a node that was @slot (restarting) start writing?  Only once no
 * survivor still replays its old log: @unrecovered must not name it.
 */
bool clr_zone_join_may_write(uint64_t unrecovered, int slot);

/* ---- fault injection (test builds) ---- */

/*
 * Each value breaks one rule above, for the simulator's self-test
 * (tests/sim/selftest-sim56.sh): it must catch every one.  Compiled in
 * only with CLR_ZONE_FAULTS; the engine's build has no such switch.
 */
enum clr_zone_fault {
    CLR_ZONE_FAULT_NONE = 0,
    CLR_ZONE_FAULT_NO_RETIRE,        /**< unlock with entries still logged */
    CLR_ZONE_FAULT_SUSPECT_OK,       /**< a suspect LVB read as valid */
    CLR_ZONE_FAULT_DEGRADED_NO_LOCK, /**< reconstruct reads take no PR */
    CLR_ZONE_FAULT_UNDRAINED,        /**< release with writes in flight */
    CLR_ZONE_FAULT_TORN_PICK,        /**< newest header chosen unchecked */
    CLR_ZONE_FAULT_RETIRE_EARLY,     /**< entry dropped before its write
                                       *   completed */
    CLR_ZONE_FAULT_REPLAY_RAID6_P,   /**< RAID6 replay rewrites only P */
    CLR_ZONE_FAULT_EARLY_JOIN,       /**< a restarted node writes while
                                       *   its old log is replayed */
    CLR_ZONE_FAULT_NO_EX_WRITE,      /**< a write admitted under PR */
    CLR_ZONE_FAULT_DATA_BEFORE_LOG,  /**< data issued before the entry is
                                       *   durable */
    CLR_ZONE_FAULT_RECOVER_TWICE,    /**< a recoverer replays a slot
                                       *   another already replayed */
    CLR_ZONE_FAULT_CHECK_NO_LOCK,    /**< a check compares parity with
                                       *   no lock */
};

#ifdef CLR_ZONE_FAULTS
extern enum clr_zone_fault clr_zone_fault;
#define CLR_ZONE_FAULT(f) (clr_zone_fault == (f))
#else
#define CLR_ZONE_FAULT(f) (false)
#endif

#endif
