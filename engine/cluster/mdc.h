/*
 * clraid cluster protocol core: md-cluster's protocols for RAID1/10
 * (doc/architecture.md §4), written once and run by two hosts:
 *
 *   - the engine (engine/array/array_cluster.c): host ops call the real
 *     lock service (lock.h), broadcast channel (bcast.h) and array core,
 *     from the engine's threads;
 *   - the deterministic simulator (tests/sim): host ops run on cooperative
 *     coroutines over the pure lock table and simulated disks, so a seed
 *     replays the same interleaving.
 *
 * So this file must stay free of threads, clocks, sleeps and I/O of its
 * own: everything outside goes through struct clr_mdc_host.  The state
 * below is guarded by one internal mutex that is never held across a host
 * call except changed() and log(), which must not block or call back.
 *
 * Units: "sync sectors" of 512 bytes (md's resync space: logical sectors
 * for RAID1/10).  Slots are 0-based bitmap slots (lockspace slot - 1).
 *
 * Resources (lock names, DLM semantics through the host):
 *   bitmapNNNN  PW by its owner for its lifetime (slot ownership); LVB =
 *               le64 win_lo, le64 win_hi, le64 dirty_lo, le64 dirty_hi:
 *               the owner's current resync window and the extent of the
 *               dirty bits it still has to resync (0/0: none).
 *   resync      EX while this node resyncs (one resyncer cluster-wide).
 *   metadata    EX around superblock updates (read, change, write, send
 *               METADATA_UPDATED); md uses `token` for this, ours belongs
 *               to the broadcast channel.
 *   no-new-dev  CR by everyone; a receiver of NEWDISK that found the disk
 *               drops it to NL; the adder try-locks EX (NOQUEUE).
 */
#ifndef CLRAID_CLUSTER_MDC_H
#define CLRAID_CLUSTER_MDC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/lockrank.h"
#include "cluster/rules.h"
#include "lock/bcast.h"

/** Message types (payload little-endian; md's numbers where md has one). */
enum clr_mdc_msg_type {
    CLR_MDC_METADATA_UPDATED = 0,  /**< le32 dev_number of a good member */
    CLR_MDC_RESYNCING = 1,         /**< le64 lo, le64 hi, le64 dirty_lo:
                       *   window [lo, hi) (hi == 0: none) and
                       *   where the sender's dirty extent now
                       *   starts (>= its dirty_hi: all clean) */
    CLR_MDC_NEWDISK = 2,           /**< uuid[16] device uuid, le32 dev_number */
    CLR_MDC_REMOVE = 3,            /**< le32 dev_number */
    CLR_MDC_RE_ADD = 4,            /**< le32 dev_number */
    CLR_MDC_BITMAP_NEEDS_SYNC = 5, /**< sender leaves unclean: take its slot */
    CLR_MDC_TAKEOVER = 9,          /**< le64 lo, le64 hi, le32 slot: sender
                       *   now owns slot's dirty bits, extent
                       *   [lo, hi) (hi == 0: nothing dirty) */
};

/** A decoded message (sender is a 0-based slot). */
struct clr_mdc_msg {
    enum clr_mdc_msg_type type;
    int sender;          /**< 0-based slot of the sender (decode only) */
    uint64_t lo, hi;     /**< RESYNCING, TAKEOVER */
    uint64_t dirty_lo;   /**< RESYNCING */
    uint32_t dev_number; /**< METADATA_UPDATED, NEWDISK, REMOVE, RE_ADD */
    uint32_t slot;       /**< TAKEOVER: the slot taken over */
    uint8_t uuid[16];    /**< NEWDISK */
};

/** Encode into a broadcast message (type + payload; bcast fills the rest). */
void clr_mdc_msg_encode(const struct clr_mdc_msg *m, struct clr_bcast_msg *out);
/** Decode; -EPROTO for an unknown type. sender = out->sender_slot - 1. */
int clr_mdc_msg_decode(const struct clr_bcast_msg *in, struct clr_mdc_msg *out);
/** "METADATA_UPDATED", ... or "?" */
const char *clr_mdc_msg_name(int type);

/** LVB of bitmapNNNN: le64 win_lo, win_hi, dirty_lo, dirty_hi. */
struct clr_mdc_lvb {
    uint64_t win_lo, win_hi, dirty_lo, dirty_hi;
};
void clr_mdc_lvb_encode(const struct clr_mdc_lvb *v, uint8_t out[32]);
void clr_mdc_lvb_decode(struct clr_mdc_lvb *v, const uint8_t in[32]);

/** "bitmap%04u" into @buf (>= 16 bytes). */
void clr_mdc_bitmap_res(unsigned slot, char *buf, size_t len);

/** The message a host call runs for: its sender's slot and type (-1, -1:
 *  none, e.g. the reload after a takeover this node did). */
struct clr_mdc_rx {
    int sender;
    int type;
};

/**
 * What the protocol needs from its host.  Blocking calls return 0 or
 * -errno; -ESHUTDOWN means the host is stopping (give up, no retry).
 */
struct clr_mdc_host {
    void *arg;
    /**
     * Request or convert lock @res to @mode (CLR_LOCK_*; NL keeps the
     * lock object, md's "unlock"), waiting for the result.  @flags:
     * CLR_LOCK_F_NOQUEUE, CLR_LOCK_F_VALBLK; with VALBLK @lvb (32 bytes)
     * is written on a PW/EX down/re-conversion and filled on grant.
     * @return 0, -EAGAIN (NOQUEUE, busy), -ENOLCK, -ETIMEDOUT, -ESHUTDOWN.
     */
    int (*lock)(void *arg, const char *res, int mode, unsigned flags, uint8_t *lvb);
    /** Release @res entirely (no-op if not held). */
    int (*unlock)(void *arg, const char *res);
    /**
     * Broadcast @m to every other member; returns once all processed it.
     * *@refused = members that refused it.  The core turns a refusal of
     * METADATA_UPDATED, RESYNCING, REMOVE or RE_ADD into -EREMOTEIO.
     */
    int (*send)(void *arg, const struct clr_mdc_msg *m, unsigned *refused);
    /** Read slot @slot's on-disk bits (md order, @nbytes) into @bits. */
    int (*bitmap_read)(void *arg, unsigned slot, uint8_t *bits, size_t nbytes);
    /** Make slot @slot's on-disk bits all clear (durable on return). */
    int (*bitmap_clear)(void *arg, unsigned slot);
    /**
     * Merge @bits into this node's bitmap: each set chunk becomes dirty
     * and needing resync in memory, and is durable in our own slot on
     * every in-sync member before this returns.  Does not start a resync.
     */
    int (*bitmap_merge)(void *arg, const uint8_t *bits, size_t nbytes);
    /**
     * Optional (clustered RAID5/6): make slot @slot's partial-parity log
     * good and empty it, called with the slot's bitmap lock held, before
     * the slot counts as recovered: by a survivor taking a dead slot
     * over, by a joiner for a slot with no owner, and by a joiner for its
     * own slot.  Idempotent; an error leaves the slot to be taken again.
     */
    int (*log_replay)(void *arg, unsigned slot);
    /** Wake the local sync thread: NEEDED chunks wait for a resync. */
    void (*want_resync)(void *arg);
    /**
     * Optional: the extent [*lo, *hi) of this node's NEEDED chunks right
     * now (0, 0: none).  With it, every extent this node announces
     * (TAKEOVER, RESYNCING) is taken at the moment it is sent, under one
     * local claim, so a takeover's merge and a resync pass ending at the
     * same time cannot leave the others with a wrong extent; the dirty_lo
     * / dirty_hi the resync calls pass are then only a fallback.
     */
    int (*needed_extent)(void *arg, uint64_t *lo, uint64_t *hi);
    /**
     * Wait a little (engine: up to @ms or until changed(); sim: a few
     * scheduler steps) before polling again.  -ESHUTDOWN: stopping.
     */
    int (*pause)(void *arg, unsigned ms);
    /**
     * Wait until no local client write overlapping [lo, hi) is in flight.
     * New writes there are already held by clr_mdc_write_blocked().
     */
    int (*drain)(void *arg, uint64_t lo, uint64_t hi);
    /** METADATA_UPDATED: re-read member @dev_number's superblock (or any
     *  good member's, for CLR_MDC_ANY_DEV) and apply role changes (faulty,
     *  spare, active, removed) and events.  Also called after a member
     *  died (it may have written a failure it could not announce) and
     *  when a node joins.  @rx: the message (METADATA_UPDATED: its sender
     *  made the change; TAKEOVER) or none (our own takeover). */
    int (*reload_sb)(void *arg, uint32_t dev_number, const struct clr_mdc_rx *rx);
    /** NEWDISK: find a device with device uuid @uuid on this node and hold
     *  it as a candidate for @dev_number.  0 found, -ENOENT not found. */
    int (*find_disk)(void *arg, const uint8_t uuid[16], uint32_t dev_number, const struct clr_mdc_rx *rx);
    /** REMOVE: forget member @dev_number (no role) locally. */
    int (*remote_remove)(void *arg, uint32_t dev_number, const struct clr_mdc_rx *rx);
    /**
     * RE_ADD: member @dev_number comes back: from now on every local
     * client write also goes to it (it is not read from until a later
     * METADATA_UPDATED shows it in sync); returns after in-flight writes
     * issued without it have drained.  @rx->sender re-adds it.
     */
    int (*remote_readd)(void *arg, uint32_t dev_number, const struct clr_mdc_rx *rx);
    /** The window, dirty extents or recovery state changed: wake waiters
     *  (blocked writers, and the recovery thread: a takeover may now be
     *  queued, see clr_mdc_recovery_pending()).
     *  Called with the core's mutex held: must not block or call back. */
    void (*changed)(void *arg);
    /** One log line (syslog priority). */
    void (*log)(void *arg, int prio, const char *msg);
};

#define CLR_MDC_MAX_SLOTS 64
/** reload_sb(): any good member will do. */
#define CLR_MDC_ANY_DEV UINT32_MAX

struct clr_mdc_config {
    unsigned slot;           /**< our 0-based slot (< nodes) */
    unsigned nodes;          /**< bitmap slots on disk */
    uint64_t sync_sectors;   /**< size of the resync space */
    uint32_t chunk_sectors;  /**< bitmap chunk */
    uint64_t window_sectors; /**< resync window (md RAID1: 65536 = 32 MiB) */
};

/** Protocol state of one node.  Fields are private; use the calls. */
struct clr_mdc {
    struct clr_mutex mu;
    struct clr_mdc_host h;
    struct clr_mdc_config c;
    size_t bm_bytes; /* on-disk bits per slot: ceil(nchunks / 8) */
    /* scratch of bm_bytes each, allocated with the state: for the join,
     * the takeovers and the gathering, which may run at once; a node
     * that dies in one leaves nothing allocated behind (the simulator's
     * crashed nodes) */
    uint8_t *join_bits, *take_bits, *gather_bits;
    bool joined, leaving;
    /* remote resync window (one per array, as current md) */
    int win_from; /* slot, -1: none */
    uint64_t win_lo, win_hi;
    /* per slot: dirty extent a live node still has to resync */
    uint64_t dirty_lo[CLR_MDC_MAX_SLOTS], dirty_hi[CLR_MDC_MAX_SLOTS];
    /* membership: prep seen and not done; slots waiting for takeover */
    bool recovering;
    uint64_t pending;           /* bit s: slot s waits for takeover */
    uint64_t lost;              /* bit s: slot s lost, not confirmed dead:
                   * new writes are held */
    uint64_t holds;             /* times writes became held */
    uint64_t recovered_slots;   /* takeovers this node completed */
    int last_taken_slot;        /* -1: none yet */
    uint64_t last_taken_chunks; /* dirty chunks found in it */
    /* our own resync */
    bool resync_locked;
    uint64_t my_win_lo, my_win_hi, my_dirty_lo, my_dirty_hi;
    bool nonewdev_dropped; /* NEWDISK found: no-new-dev at NL */
    uint64_t claims;       /* named lock objects in use (mdc.c) */
    uint64_t slot_claims;  /* bitmap lock objects in use, per slot */
    /* counters */
    uint64_t msgs_sent, msgs_received;
    uint64_t rx_seq[CLR_MDC_MAX_SLOTS];    /* messages received per sender */
    uint64_t about_seq[CLR_MDC_MAX_SLOTS]; /* TAKEOVERs of a slot by others */
};

/** Set up (no host calls). -EINVAL if slot >= nodes or nodes > 64. */
int clr_mdc_init(struct clr_mdc *m, const struct clr_mdc_config *c, const struct clr_mdc_host *h);
void clr_mdc_destroy(struct clr_mdc *m);

/**
 * Join (doc/architecture.md §4.3), after the lockspace and broadcast channel are
 * open: take our bitmap lock EX (NOQUEUE, polled while a survivor still
 * takes over our previous incarnation's bits; -EBUSY after 30 s), read our
 * own bits and down-convert to PW publishing a fresh LVB (so nobody reads
 * the previous incarnation's window), no-new-dev CR, resync NL; then for
 * every other slot j: PW NOQUEUE on bitmap j: granted -> read slot j's
 * bits, merge them into ours (j's bits stay), release; busy -> CR with
 * VALBLK to read j's LVB (window and dirty extent; ignored if a message
 * from j, or a TAKEOVER of j by another node, arrived meanwhile: messages
 * are newer, and a busy lock may be a survivor's takeover, which zeroes
 * the LVB first), then release.  The host
 * has loaded our own slot's bits as NEEDED itself (single-node crash
 * recovery) and must write its in-memory bitmap to our slot after join (a
 * survivor may have cleared bits it loaded before).  Join always ends
 * with TAKEOVER(our slot, lo, hi) (hi == 0: clean): the others drop our
 * slot from their takeover queue and any window of our previous
 * incarnation, read-first in [lo, hi), and reload the superblock.  Calls
 * want_resync() if anything is dirty.
 */
int clr_mdc_join(struct clr_mdc *m);

/**
 * Leave (doc/architecture.md §4.4): if @unclean (NEEDED chunks remain), send BITMAP_NEEDS_SYNC
 * so another node takes our bits over once we are gone; then release
 * every lock this core took.
 */
int clr_mdc_leave(struct clr_mdc *m, bool unclean);

/* ---- membership events (non-blocking; the host then runs recovery) ---- */
void clr_mdc_on_prep(struct clr_mdc *m);
/**
 * Member in slot @slot was lost in a way that may leave it alive (its
 * whole node left: crash or partition) and is not confirmed dead yet.
 * Until it is, new client writes are held (clr_mdc_writes_held()): a node
 * behind a partition may still be writing, so the survivors serve writes
 * only once the fencer confirmed it (the lock service keeps its locks
 * until then anyway).  Lifted by clr_mdc_on_member_failed() for the slot
 * and by clr_mdc_on_done() (the lock service sends DONE only when no lost
 * member is left unconfirmed, also after it rejoined from a freeze).  A
 * freeze does not lift it: the host's frozen I/O must not be let through
 * by the end of a hold.  A process death on a live node or a clean leave
 * is confirmed at once and never comes here.
 */
void clr_mdc_on_member_lost(struct clr_mdc *m, unsigned slot);
/** Member in slot @slot died and is confirmed dead: queue its takeover
 *  (and lift its write hold). */
void clr_mdc_on_member_failed(struct clr_mdc *m, unsigned slot);
/** Membership change done: nothing is lost any more. */
void clr_mdc_on_done(struct clr_mdc *m);
/** True while a takeover is queued (the host's recovery thread runs
 *  clr_mdc_recover()). */
bool clr_mdc_recovery_pending(struct clr_mdc *m);

/**
 * Take over every queued slot, highest first (doc/architecture.md §4.5): PW NOQUEUE on its
 * bitmap lock, polled with pause() while busy (the dead owner's lock is
 * released once its death is confirmed); a slot leaves the queue when
 * someone else's TAKEOVER for it arrives (another survivor won, or its
 * owner came back).  With the lock: publish a zero LVB (a joiner must not
 * take the departed owner's window for a live one); read its bits; if any:
 * merge into ours
 * (durable), then clear its slot, then broadcast TAKEOVER(slot, lo, hi)
 * and want_resync(); release the lock.  Drops the slot's window and dirty
 * extent, then reload_sb(CLR_MDC_ANY_DEV) (the dead node may have written
 * a failure it could not announce).  Returns when nothing is queued.  @return 0 or -errno (the slot
 * stays queued; -ESHUTDOWN from the host).
 */
int clr_mdc_recover(struct clr_mdc *m);

/* ---- our resync (the host's sync thread) ---- */

/** Take `resync` EX (blocking: one resyncer cluster-wide) and publish our
 *  dirty extent [dirty_lo, dirty_hi) (of our NEEDED chunks) in our bitmap
 *  LVB. */
int clr_mdc_resync_begin(struct clr_mdc *m, uint64_t dirty_lo, uint64_t dirty_hi);
/**
 * Before syncing [lo, hi): if it is not inside the published window, move
 * the window to [lo, min(lo + window_sectors, end)) (at least hi): LVB
 * then RESYNCING broadcast; returns once every node drained its writes
 * there.  @dirty_lo: start of our lowest chunk still NEEDED (the host's
 * truth; a takeover during the pass may have added chunks below lo).
 */
int clr_mdc_resync_window(struct clr_mdc *m, uint64_t lo, uint64_t hi, uint64_t end, uint64_t dirty_lo);
/** Resync over (or aborted): [@dirty_lo, @dirty_hi) is what is still
 *  NEEDED (0, 0: nothing); LVB, RESYNCING(0, 0, dirty_lo), `resync` NL. */
int clr_mdc_resync_end(struct clr_mdc *m, uint64_t dirty_lo, uint64_t dirty_hi);

/* ---- receiving (the broadcast receive callback) ---- */

/**
 * Process one message (any thread; messages arrive one at a time).
 * RESYNCING: store the window (hi == 0: clear it) and the sender's dirty
 * extent becomes [dirty_lo, its dirty_hi), changed(), then drain() the
 * window.  TAKEOVER: the sender's dirty extent grows by [lo, hi); the
 * taken slot leaves our takeover queue, and (if not the sender's own)
 * its extent and window are dropped; the sender's own slot (a join): its
 * extent becomes [lo, hi), its old window is dropped; both: reload_sb(ANY).
 * METADATA_UPDATED: re-take no-new-dev CR if dropped, reload_sb().
 * NEWDISK: find_disk(); found -> no-new-dev NL, not found -> back to CR
 * (a NEWDISK whose adder died may have left us at NL).  REMOVE / RE_ADD: the host
 * call.  BITMAP_NEEDS_SYNC: queue the sender's slot for takeover.
 * @return 0 or -errno (the message is refused, but still acked).
 */
int clr_mdc_receive(struct clr_mdc *m, const struct clr_bcast_msg *raw);

/* ---- superblock changes initiated here ---- */

/** Take `metadata` EX; the host then reloads, changes and writes. */
int clr_mdc_meta_begin(struct clr_mdc *m);
/** Broadcast METADATA_UPDATED(@good_dev) and release `metadata`.  With
 *  @send false only releases (nothing changed).  @return send's result. */
int clr_mdc_meta_end(struct clr_mdc *m, uint32_t good_dev, bool send);
/**
 * Adding a spare (doc/architecture.md §4.9), with `metadata` held: broadcast NEWDISK(@uuid,
 * @dev_number), then try no-new-dev EX NOQUEUE: granted -> every node
 * found the disk, back to CR, return 0 (the host writes the superblocks
 * and calls clr_mdc_meta_end); busy -> -ENOENT: some node lacks it, the
 * host rolls back (erases the new device's superblock) and still calls
 * clr_mdc_meta_end(…, true) so candidates are dropped everywhere.
 */
int clr_mdc_newdisk(struct clr_mdc *m, const uint8_t uuid[16], uint32_t dev_number);
/** REMOVE / RE_ADD broadcast for @dev_number (the host changes itself). */
int clr_mdc_send_remove(struct clr_mdc *m, uint32_t dev_number);
int clr_mdc_send_readd(struct clr_mdc *m, uint32_t dev_number);
/**
 * Re-add (doc/architecture.md §4.11): merge every other slot's on-disk bits into ours (without
 * clearing them) so the returning member gets every chunk any node wrote
 * while it was out.  Call after clr_mdc_send_readd() (all nodes write to
 * it by then).
 */
int clr_mdc_gather_bitmaps(struct clr_mdc *m);

/* ---- data path queries (non-blocking; host holds its own locks) ---- */

/** A local client write to [lo, hi) must wait: it overlaps a remote
 *  resync window.  Check it after registering the write in flight (so a
 *  concurrent drain() sees it), back off and wait for changed(). */
bool clr_mdc_write_blocked(struct clr_mdc *m, uint64_t lo, uint64_t hi);
/** New client writes (anything that modifies: writes, trims, zeroes)
 *  must wait: a member lost with its node is not confirmed dead yet (see
 *  clr_mdc_on_member_lost()).  Writes already in flight and reads go on.
 *  Check it with clr_mdc_write_blocked() at admission; changed() tells
 *  when it may have ended. */
bool clr_mdc_writes_held(struct clr_mdc *m);
/** Both at once, as the rules decide (clr_rules_admit()): go, or wait for
 *  the window to move or the hold to end. */
enum clr_rules_admit clr_mdc_admit(struct clr_mdc *m, uint64_t lo, uint64_t hi);
/** A read of [lo, hi) must go to the first in-sync device: cluster
 *  recovery is in progress, or it overlaps the remote window or a live
 *  node's dirty extent.  (Our own NEEDED chunks are the host's to check.) */
bool clr_mdc_read_first(struct clr_mdc *m, uint64_t lo, uint64_t hi);

/** For status. */
struct clr_mdc_stats {
    unsigned slot;
    uint64_t recovered_slots;
    uint64_t msgs_sent, msgs_received;
    bool recovering;
    uint64_t pending; /* slot mask */
    int win_from;
    uint64_t win_lo, win_hi;
    int last_taken_slot; /* -1: none */
    uint64_t last_taken_chunks;
    uint64_t lost;  /* slot mask: lost, not confirmed dead */
    uint64_t holds; /* times writes became held */
};
void clr_mdc_stats(struct clr_mdc *m, struct clr_mdc_stats *st);

#endif
