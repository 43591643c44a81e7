/* clraid array core: one RAID array (RAID1/10/5/6) over member devices,
 * with this node's write-intent bitmap, sync actions and failure handling.
 *
 * It knows nothing of NBD, sockets or Pacemaker: the nbdkit plugin
 * (engine/nbd) and the control socket (engine/ctl) call this API.
 *
 * Life cycle (nbdkit forks after .get_ready, so threads start later):
 *   clr_array_assemble()  read + validate every member, no writes, no threads
 *   clr_array_run()       open member I/O, start threads, mark active
 *   ... data path and management calls, from any thread ...
 *   clr_array_stop()      drain, flush, write the bitmap and superblocks clean
 *   clr_array_free()
 *
 * Return convention: 0 or -errno; functions taking a struct clr_err fill it
 * with one line a user can act on.
 */
#ifndef CLRAID_ARRAY_ARRAY_H
#define CLRAID_ARRAY_ARRAY_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "format/errbuf.h"

struct clr_array;
struct clr_io_dev;

/** Log sink: one line, syslog priority; may be called from any thread. */
typedef void (*clr_array_log_fn)(void *opaque, int prio, const char *msg);

/** Flags for struct clr_array_config. */
enum {
    CLR_ARRAY_BUFFERED = 1u << 0, /**< never try O_DIRECT on members */
    /** Leave stale and faulty members out (logged, never written) and
     *  start degraded if enough remain, instead of refusing; they come
     *  back with clr_array_readd_device(). For cluster managers that must
     *  restart a node's engine while the array is degraded. */
    CLR_ARRAY_SKIP_STALE = 1u << 1,
    /** Hold every bitmap chunk dirty while running: the write path never
     *  waits for a bitmap flush, and a crash means a full resync, exactly
     *  like an md array without a bitmap. Re-add still resyncs only the
     *  chunks written while the member was out. For measuring what the
     *  bitmap costs (tests/bench), and for arrays that prefer that trade. */
    CLR_ARRAY_BITMAP_ALL_DIRTY = 1u << 2,
    /** Run the cluster protocol on the in-process "local" lock backend:
     *  every array of the same UUID opened in this process is a node of
     *  one cluster (tests). Without it, lock "local" is single-node. */
    CLR_ARRAY_CLUSTER_LOCAL = 1u << 3,
};

struct clr_array_config {
    const char *name;           /**< the array's name (run files, logs) */
    const char *const *devices; /**< member paths, any order; spares too */
    unsigned ndevices;
    /** lock backend: "local" (default: single node, slot 0, no cluster
     *  protocol), "cpg" or "dlm" (cluster: RAID1/10 near layouts only) */
    const char *lock;
    unsigned flags;
    uint32_t stripe_cache_kib;   /**< RAID5/6 stripe cache bound; 0 = default */
    uint32_t sync_speed_min_kib; /**< per second; 0 = default (md: 1000) */
    uint32_t sync_speed_max_kib; /**< per second; 0 = default (md: 200000) */
    uint32_t bitmap_sleep_ms;    /**< bitmap daemon period; 0 = from bitmap sb */
    clr_array_log_fn log;
    void *log_opaque;
};

/** Write flags. */
enum {
    CLR_ARRAY_FUA = 1u << 0,      /**< durable on every leg before return */
    CLR_ARRAY_MAY_TRIM = 1u << 1, /**< zero: the range may be deallocated */
};

/**
 * Reads every member's superblock and bitmap and decides the array's
 * shape: same array UUID and geometry on all, events within one of the
 * freshest (older members are stale and refused), each role claimed once.
 * Writes nothing. On error nothing is kept and @e names the device and
 * what to do (e.g. "…/d3: stale member (events 12, array at 15): re-add it
 * with 'clraid re-add NAME DEV'").
 */
int clr_array_assemble(const struct clr_array_config *cfg, struct clr_array **out, struct clr_err *e);

/**
 * Opens member I/O, starts the background threads (bitmap daemon, sync),
 * writes the superblocks "active" and starts whatever sync is due
 * (initial resync, resync of dirty bitmap chunks after an unclean stop,
 * recovery onto a spare). Call once, after any fork.
 */
int clr_array_run(struct clr_array *a, struct clr_err *e);

/** Drains I/O, stops sync (keeping its checkpoint), flushes members,
 *  clears the bitmap where it may, and writes the superblocks. */
int clr_array_stop(struct clr_array *a);

/** A stop is on its way (the control socket's `stop`, before the front end
 *  drains): writes held for a policy decision, and I/O waiting for a thaw,
 *  fail now, unacknowledged, as they would once clr_array_stop() runs. */
void clr_array_stop_requested(struct clr_array *a);

/** Frees everything (stops first if still running). NULL is ignored. */
void clr_array_free(struct clr_array *a);

/** Exported size in bytes. */
uint64_t clr_array_size(const struct clr_array *a);

/** Block sizes for NBD: minimum (member logical block), preferred (one
 *  full stripe for RAID5/6, the chunk for RAID10, 4 KiB for RAID1) and
 *  maximum request size. */
void clr_array_block_sizes(const struct clr_array *a, uint32_t *minimum, uint32_t *preferred,
                           uint32_t *maximum);

/* ---- data path: thread-safe; blocks while the array is frozen ---- */

/** Reads @count bytes at @offset (any alignment). */
int clr_array_pread(struct clr_array *a, void *buf, uint32_t count, uint64_t offset);

/** Writes @count bytes at @offset. Returns once every in-sync leg (or the
 *  stripe with its parity) holds the data; a failed leg is marked Faulty
 *  in the remaining superblocks before this returns. */
int clr_array_pwrite(struct clr_array *a, const void *buf, uint32_t count, uint64_t offset, unsigned flags);

/** Makes every completed write durable on every member. */
int clr_array_flush(struct clr_array *a);

/** Discards a range: RAID1/10 deallocate it on every leg (it then reads
 *  as zeroes, identically on every copy); RAID5/6 treat it as advisory. */
int clr_array_trim(struct clr_array *a, uint32_t count, uint64_t offset, unsigned flags);

/** Writes zeroes to a range (CLR_ARRAY_MAY_TRIM allows deallocation). */
int clr_array_zero(struct clr_array *a, uint32_t count, uint64_t offset, unsigned flags);

/* ---- management: thread-safe ---- */

/**
 * Status as a JSON object (caller puts it). Keys, at least:
 *   name, uuid, level, layout, chunk_kib, size_bytes, events,
 *   state: "clean" | "active" | "degraded" | "resyncing" | "recovering" |
 *          "frozen" | "failed" | "stopped",
 *   devices: [ { path, dev_number, role (int or null), state:
 *               "in_sync" | "faulty" | "spare" | "rebuilding" | "removed",
 *               io_mode: "direct" | "buffered" } ],
 *   sync_action: "idle" | "resync" | "recover" | "check" | "repair",
 *   sync_progress: { position_bytes, total_bytes, rate_kib_s, eta_s } or null,
 *   last_resync: { bytes }, last_check: { mismatches },
 *   bitmap: { dirty_chunks, chunk_bytes, slot },
 *   frozen: { blocked_requests } or null,
 *   cluster: { backend, slot, members, recovered_slots, recovering,
 *              read_balancing, remote_window: { from, lo_bytes, hi_bytes }
 *              or null, last_takeover: { slot, dirty_chunks, bytes } or
 *              null, messages_sent, messages_received },
 *   counters: { reads, writes, bitmap_flushes, lock_ops, messages }
 */
json_object *clr_array_status_json(struct clr_array *a);

/**
 * The policy daemon's probe of a member from this node (doc/architecture.md
 * §3.3): an O_DIRECT read of this node's own bitmap block on it and a FUA
 * write of the same bytes, through the member's I/O handle (a faulty
 * member's too).  Returns { ok, errno (null or "EIO", ...), ms }, or NULL
 * with @e set if @path is not a member, or was removed.  The probe's own
 * failure counts no I/O error and fails nothing.
 */
json_object *clr_array_probe_device(struct clr_array *a, const char *path, struct clr_err *e);

/** Marks a member Faulty (as if it had failed I/O). */
int clr_array_fail_device(struct clr_array *a, const char *path, struct clr_err *e);

/** Removes a Faulty or spare member from the array (role cleared). */
int clr_array_remove_device(struct clr_array *a, const char *path, struct clr_err *e);

/** Adds a new device as a spare (writes its superblock and bitmap); if the
 *  array is degraded it is taken at once and rebuilt. */
int clr_array_add_device(struct clr_array *a, const char *path, struct clr_err *e);

/** Re-adds a member that left (same device UUID): resyncs only the chunks
 *  dirty in the bitmap since it left. */
int clr_array_readd_device(struct clr_array *a, const char *path, struct clr_err *e);

/** Starts "check" (count mismatches, fix nothing) or "repair". -EBUSY if
 *  another sync action runs. */
int clr_array_start_check(struct clr_array *a, bool repair, struct clr_err *e);

/**
 * The policy daemon's lease (doc/architecture.md §3.3): while it is fresh
 * (renewed within @lease_ms), a member's I/O error in a cluster waits for
 * the daemon's decision instead of failing the member at once: writes up
 * to @confirm_ms, longer while @hold is renewed (the decision is to fence
 * or to freeze).  @confirm_ms 0 detaches.  @decision and @pending (NULL:
 * none), the daemon's last decision and what it waits for, are shown in
 * the status.  -EOPNOTSUPP without a cluster.
 */
int clr_array_policy(struct clr_array *a, uint32_t confirm_ms, uint32_t lease_ms, bool hold,
                     const char *decision, const char *pending, struct clr_err *e);

/** Fails every request blocked by a freeze with EIO and lets later ones
 *  fail at once until a member comes back. -EINVAL if not frozen. */
int clr_array_thaw_error(struct clr_array *a, struct clr_err *e);

/** The member I/O handle of @path, for test fault injection; NULL if none. */
struct clr_io_dev *clr_array_member_io(struct clr_array *a, const char *path);

/* ---- additions for tests and waiting callers ---- */

/** Sleeps until no sync action runs or is due (resync, recovery, a
 *  requested check), at most @timeout_ms. Returns 0, -ETIMEDOUT or -EBUSY
 *  (still busy); returns 0 at once while frozen or stopped. */
int clr_array_wait_sync_idle(struct clr_array *a, unsigned timeout_ms);

/** Changes the sync speed limits (KiB/s, md's sync_speed_min/max) while
 *  running; 0 keeps a value. Takes effect at the next sync unit. */
void clr_array_set_sync_speed(struct clr_array *a, uint32_t min_kib, uint32_t max_kib);

/** Test hook: stops as if the process had been killed: the lockspace
 *  dies first (the other nodes see the member fail), threads stop, and
 *  nothing more is written (the bitmap stays dirty). Then free it. */
int clr_array_crash(struct clr_array *a);

/** Test hook: as clr_array_crash(), but the whole node is lost (local
 *  lock backend): the others see MEMBER_LOST and keep its locks, holding
 *  new writes, until one of them calls clr_array_confirm_dead() with
 *  *@member (its lockspace member id). */
int clr_array_crash_lost(struct clr_array *a, uint64_t *member);

/** Declares lockspace member @member dead although the fencer did not
 *  confirm it (clr_ls_confirm_dead: the operator checked by hand).
 *  @return 0, -ENOENT (no such lost member), -EOPNOTSUPP, -EINVAL (not a
 *  cluster array or not running). */
int clr_array_confirm_dead(struct clr_array *a, uint64_t member);

/** Sleeps until the array is frozen with at least @min_blocked requests
 *  blocked, at most @timeout_ms. Returns 0 or -ETIMEDOUT. */
int clr_array_wait_frozen(struct clr_array *a, unsigned timeout_ms, uint64_t min_blocked);

#endif
