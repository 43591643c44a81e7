/* clraid array core: private state shared by the engine/array sources.
 *
 * Address spaces: "logical" sectors are the exported device; "sync"
 * sectors are what the write-intent bitmap covers (md's resync space):
 * logical for RAID1/10, member (stripe row) sectors for RAID5/6. The range
 * lock, the bitmap and every sync action work in sync sectors, so a client
 * write and a resync of the same place always meet on the same lock.
 *
 * Lock order: the rank table in engine/common/lockrank.h (checked with
 * --enable-lockrank) and doc/architecture.md §7. Never hold lock or
 * bm_lock across member I/O except bm_lock's flush generation hand-off
 * (the flusher drops bm_lock while writing).  Layering: doc/architecture.md
 * §5 (tests/array/layering.sh). */
#ifndef CLRAID_ARRAY_ARRAY_INTERNAL_H
#define CLRAID_ARRAY_ARRAY_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "array/array.h"
#include "common/lockrank.h"
#include "format/md_bitmap.h"
#include "format/md_sb.h"
#include "io/io.h"
#include "raid/bitmap_counters.h"
#include "raid/layout.h"

#define ARR_MAX_MEMBERS (CLR_RAID_MAX_DISKS + 32)
#define ARR_SECTOR      512u
#define ARR_NOWAIT_MAX  4
/* request buffer pool: classes of 4 KiB << c, c < ARR_RB_CLASSES (up to
 * 32 MiB, the largest request); idle buffers kept per class and in all */
#define ARR_RB_CLASSES    14
#define ARR_RB_PER_CLASS  8
#define ARR_RB_KEEP_BYTES (48u << 20)

enum arr_mstate {
    ARR_M_IN_SYNC,
    ARR_M_REBUILDING, /* has a role, being recovered */
    ARR_M_SPARE,
    ARR_M_FAULTY,
    ARR_M_REMOVED,
};

struct arr_member {
    char *path;
    struct clr_md_sb sb; /* its own superblock as last read */
    uint32_t dev_number;
    int role; /* -1: none */
    enum arr_mstate state;
    uint64_t recovery_offset; /* device sectors, REBUILDING */
    bool bitmap_recovery;     /* re-add: only NEEDED chunks */
    bool remote_rebuild;      /* REBUILDING driven by another node:
                                     * written, never read, not recovered here */
    uint64_t faulty_gen;      /* state_gen that recorded the failure */
    bool write_behind;        /* FAULTY by another node's report while
                                     * in sync here: client writes still go
                                     * to it, errors ignored, never read */
    int rebuilder;            /* remote_rebuild: slot that rebuilds
                                     * it (-1: unknown) */
    bool bits_gathered;       /* cluster re-add driven here: every
                                     * slot's bits were merged into ours */
    uint64_t readd_events;    /* superblock events when its RE_ADD
                                     * began (0: none): an older or equal
                                     * superblock's FAULTY predates it */
    struct clr_io_dev *io;
    /* legs submitted to it here (data, sync and rebuild I/O; not the
     * superblock and bitmap writes), and their bytes: status, metrics */
    atomic_uint_fast64_t n_reads, n_writes, read_bytes, write_bytes;
    /* I/O errors it returned here (each failed leg), by the policy's errno class
     * (agent/policy.h): media, path, reservation conflict; under a->lock */
    uint32_t io_errors[3];
    uint32_t media_write_errors; /* of io_errors[media], on a write */
    uint32_t rewrites;           /* media read errors rewritten from a good
                                  * copy and read back (row 1) */
    int last_errno;              /* positive; 0: none yet */
    int64_t last_error_ms;       /* wall clock */
    /* policy daemon attached (doc/architecture.md §3.3), under a->lock:
     * the last error on it (monotonic ms; 0: none) makes reads avoid it
     * for confirm_timeout; `held` writes whose leg failed on it wait for
     * the decision, the first since held_since_ms */
    uint64_t suspect_ms;
    unsigned held;
    uint64_t held_since_ms;
};

enum arr_action {
    ARR_SYNC_IDLE,
    ARR_SYNC_RESYNC,
    ARR_SYNC_RECOVER,
    ARR_SYNC_CHECK,
    ARR_SYNC_REPAIR,
};

/* Range lock over sync sectors: holders of overlapping ranges exclude each
 * other (client writes, RAID5/6 stripe updates, sync units). */
struct arr_range {
    uint64_t start, end;
    struct arr_range *next;
};

struct arr_rlock {
    struct clr_mutex mu;
    pthread_cond_t cv;
    struct arr_range *held;
};

struct clr_array;
struct arr_member;

/* One request's section, carried down the call chain as md passes an
 * r1bio: a client write, a sync unit or a recovery unit.  In a cluster,
 * member failures seen inside the range-locked section are written and
 * announced at its end (a remote resync's drain must never wait for our
 * broadcast), and write-behind legs that failed in it wait for the
 * failure's announcer there.  Functions that take @rq accept NULL:
 * no section, a failure is announced at once. */
struct arr_req {
    bool deferring;     /* cluster: failures wait for the end */
    uint64_t defer_gen; /* newest failure generation seen */
    bool behind_any;    /* a write-behind leg failed */
    unsigned nbehind;   /* their members, each once */
    struct arr_member *behind[ARR_MAX_MEMBERS];
};

/* What a RAID5/6 operation needs of its stripe's zone in a cluster
 * (array_zone.c; a fault-free read needs nothing). */
enum arr_zone_op {
    ARR_ZONE_READ_DEGRADED, /* PR */
    ARR_ZONE_CHECK,         /* PR */
    ARR_ZONE_WRITE,         /* EX */
    ARR_ZONE_RESYNC,        /* EX: resync, repair, rebuild */
};
struct arr_zone;
struct arr_zones;

/* Per-level data path and sync operations (mirror or parity). */
struct arr_ops {
    /* [ls, ls+n) logical sectors, aligned buffers. */
    int (*read)(struct clr_array *a, struct arr_req *rq, uint8_t *buf, uint64_t ls, uint64_t n, bool locked);
    /* *whole = every role got the data (else the bitmap keeps NEEDED). */
    int (*write)(struct clr_array *a, struct arr_req *rq, const uint8_t *buf, uint64_t ls, uint64_t n,
                 unsigned ioflags, bool *whole);
    /* Sync range of a logical range. */
    void (*sync_range)(const struct clr_array *a, uint64_t ls, uint64_t n, uint64_t *ss, uint64_t *sn);
    /* One sync unit [ss, ss+sn) of sync sectors, range lock held. */
    int (*sync_unit)(struct clr_array *a, struct arr_req *rq, enum arr_action act, uint64_t ss, uint64_t sn,
                     uint64_t *mismatch);
    /* Recover member @m's device sectors [ds, ds+n); returns sectors done. */
    int64_t (*recover_unit)(struct clr_array *a, struct arr_member *m, uint64_t ds, uint64_t n);
};

extern const struct arr_ops clr_arr_mirror_ops;
extern const struct arr_ops clr_arr_parity_ops;

struct clr_array {
    char *name;
    clr_array_log_fn log;
    void *log_opaque;
    unsigned flags;
    uint32_t stripe_cache_kib;
    uint32_t speed_min_kib, speed_max_kib;
    uint32_t bitmap_sleep_ms;

    struct clr_md_sb sb;      /* template: freshest superblock */
    struct clr_bitmap_sb bsb; /* this slot's bitmap superblock */
    uint32_t slot;
    uint64_t bm_off;         /* byte offset of the slot region (same on all) */
    uint64_t bm_write_bytes; /* sb + bits, rounded to 4 KiB */
    struct clr_raid_geom g;
    const struct arr_ops *ops;
    uint64_t size_bytes;
    uint64_t sync_sectors;
    uint32_t lbs; /* largest member logical block */

    unsigned nmem;
    struct arr_member *mem[ARR_MAX_MEMBERS];
    struct arr_member *role_mem[CLR_RAID_MAX_DISKS]; /* IN_SYNC/REBUILDING holder */

    /* lock: member states, freeze, request accounting, sync requests */
    struct clr_mutex lock;
    pthread_cond_t cond; /* freeze, drain, sync wake-ups */
    bool running, stopping, stopped;
    bool frozen, thaw_err;
    unsigned quiesce; /* >0: new requests wait (member detach) */
    unsigned probing; /* policy probes using a member's io (detach waits) */
    /* the policy daemon's lease (array_super.c, monotonic ms): attached
     * while now < policy_until_ms; a held write waits confirm_ms for a
     * decision, longer while now < policy_hold_until_ms (the decision is
     * to fence or freeze: the daemon renews it) */
    uint64_t policy_until_ms, policy_hold_until_ms;
    uint32_t policy_confirm_ms;
    uint64_t policy_holds, policy_timeouts; /* counters, for status */
    uint64_t policy_rewrites;               /* rewrites queued (row 1) */
    bool stop_requested;                    /* clr_array_stop_requested() */
    char *policy_decision, *policy_pending; /* the daemon's, for status */
    uint64_t blocked;
    unsigned inflight;
    uint64_t state_gen; /* bumped by every persistent change */
    bool degraded;

    /* management calls, one at a time (taken before everything else) */
    struct clr_mutex mgmt_lock;
    /* threads that must not wait for a thaw (under lock): a management
     * call (it holds mgmt_lock, which a thaw by re-add and the stop
     * need) and the thread joining the cluster in start (nobody can
     * thaw an array that is not started); a failure that cannot be
     * announced fails their call instead */
    pthread_t nowait_thr[ARR_NOWAIT_MAX];
    unsigned nnowait;

    /* superblock writes */
    struct clr_mutex meta_lock;
    uint64_t sb_done_gen;                  /* written to the superblocks */
    atomic_uint_fast64_t sb_announced_gen; /* written and (cluster)
                                     * METADATA_UPDATED delivered everywhere
                                     * (written under meta_lock) */
    atomic_uint_fast64_t local_fail_gen;   /* last failure seen here */
    uint8_t *sb_buf;                       /* 4 KiB per member slot */

    /* bitmap */
    struct clr_mutex bm_lock;
    pthread_cond_t bm_cond;
    struct clr_bmc bmc;
    uint64_t bm_want_gen, bm_done_gen;
    uint64_t bm_ok_gen; /* last flush an in-sync member took */
    /* flush generation that carries the latest clean -> dirty change: a
     * write onto a chunk already dirty in memory still waits for it (the
     * bit may be on its way to disk for another writer) */
    uint64_t bm_set_gen;
    bool bm_flushing;
    uint8_t *bm_buf;
    pthread_t bm_thread;
    bool bm_thread_on;

    struct arr_rlock rl;

    /* RAID5/6 stripe buffers: a bounded pool (stripe_cache_kib) */
    struct clr_mutex sp_lock;
    pthread_cond_t sp_cond;
    uint8_t *sp_free[64];
    unsigned sp_nfree, sp_total, sp_max;
    size_t sp_bytes;

    /* Request buffers (aligned copies of unaligned client buffers):
     * idle ones are kept per power-of-two size class, up to
     * ARR_RB_KEEP_BYTES in all, so that a request neither maps nor
     * faults in fresh pages. */
    struct clr_mutex rb_lock;
    uint8_t *rb_free[ARR_RB_CLASSES][ARR_RB_PER_CLASS];
    unsigned rb_n[ARR_RB_CLASSES];
    size_t rb_kept;
    /* the memory alignment member I/O needs of a buffer (1: none, every
     * member is served through the page cache); only ever raised, when a
     * member that needs more is opened (engine/io bounces a buffer that
     * a request checked before that) */
    atomic_uint mem_align;

    /* sync thread; fields under lock */
    pthread_t sync_thread;
    bool sync_thread_on;
    enum arr_action action;
    enum arr_action requested; /* check/repair asked for */
    bool resync_pending;
    unsigned sync_hold; /* >0: no new action starts (cluster re-add) */
    bool sync_abort;
    uint64_t sync_pos, sync_total; /* sectors */
    uint64_t sync_start_ns, sync_done_sectors;
    uint64_t last_resync_bytes, last_check_mismatches;
    uint64_t sync_passes; /* completed actions, for waiters */

    atomic_uint_fast64_t rr; /* read balancing */
    atomic_uint_fast64_t n_reads, n_writes, n_bm_flushes;
    atomic_uint adm_waiting; /* client writes waiting at admission (a
                              * remote window or a write hold) */
    atomic_uint_fast64_t last_client_ns;
    /* client writes issuing legs, in two epochs (under lock): a drain
     * waits for the writes in flight at its start, never for a gap */
    uint64_t wr_epoch;
    unsigned wr_inflight[2];
    bool wr_draining;
    /* wall-clock ms of the last resync/recovery pass (status) */
    int64_t sync_started_ms, sync_ended_ms;

    struct clr_io_ctx *ctx;

    /* clustered RAID5/6: stripes per zone lock (0: no zone locks; set by
     * the cluster host at start, doc/cluster.md) */
    uint32_t zone_stripes;
    /* clustered RAID5/6 with the parity feature: our partial-parity log
     * (array_plog.c; NULL: none), opened and freed by the cluster host */
    struct arr_plog *plog;

    /* cluster (array_cluster.c): NULL in plain single-node mode */
    char *lock_backend; /* "local", "cpg", "dlm" */
    bool cluster;       /* run the md-cluster protocol */
    bool crashed;       /* test crash: write nothing more */
    struct arr_cluster *cl;
    const struct arr_cluster_ops *clops; /* NULL: a single node */
};

/* ---- array_state.c: lowest layer, calls nothing else of engine/array ---- */
int64_t clr_arr_wall_ms(void);
void clr_arr_log(struct clr_array *a, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
uint64_t clr_arr_now_ns(void);
static inline uint64_t clr_arr_now_ms(void)
{
    return clr_arr_now_ns() / 1000000u;
}
bool clr_arr_is_frozen(struct clr_array *a);
void clr_arr_recompute_locked(struct clr_array *a);
void clr_arr_sync_kick_locked(struct clr_array *a);
bool clr_arr_enough_without(struct clr_array *a, int role);
/* The policy daemon's probe of @m's path from this node: a read of this
 * node's own bitmap block and a FUA write of the same bytes.  0 or the
 * member's -errno.  Caller holds no lock. */
int clr_arr_bm_probe(struct clr_array *a, struct arr_member *m);
/* How many more in-sync members the array can lose, whichever they are
 * (the policy daemon's "redundancy left").  Caller holds lock. */
unsigned clr_arr_redundancy_locked(struct clr_array *a);
void clr_arr_bm_set_degraded(struct clr_array *a);
/* marks @m Faulty (a->lock held); false if that would leave too little
 * redundancy (nothing changed then) */
bool clr_arr_mark_faulty_locked(struct clr_array *a, struct arr_member *m);
bool clr_arr_mark_faulty_remote_locked(struct clr_array *a, struct arr_member *m);
void clr_arr_take_spare_locked(struct clr_array *a, int role);
void clr_arr_status_no_cluster(struct clr_array *a, json_object *o);
/* the calling thread must not wait for a thaw until nowait_exit */
void clr_arr_nowait_enter(struct clr_array *a);
void clr_arr_nowait_exit(struct clr_array *a);
bool clr_arr_nowait(struct clr_array *a);

/* range lock (array_state.c) */
void clr_arr_rl_init(struct arr_rlock *rl);
void clr_arr_rl_destroy(struct arr_rlock *rl);
void clr_arr_rl_lock(struct arr_rlock *rl, struct arr_range *r, uint64_t start, uint64_t n);
void clr_arr_rl_unlock(struct arr_rlock *rl, struct arr_range *r);

/* ---- array_super.c ---- */
int clr_arr_sb_update(struct clr_array *a, uint64_t gen, bool clean);
/* @err: the failed I/O's -errno (counted by class), or 0 for a failure on
 * request (`clraid fail`) */
int clr_arr_member_failed(struct clr_array *a, struct arr_req *rq, struct arr_member *m, int err);
/* The same for an error already counted with clr_arr_note_io_error():
 * a request whose legs failed on several members counts them all first,
 * so that a policy daemon sees every one while the first waits for it. */
int clr_arr_member_failed_counted(struct clr_array *a, struct arr_req *rq, struct arr_member *m, int err);
void clr_arr_note_io_error(struct clr_array *a, struct arr_member *m, int err, bool write);
/* A policy daemon decides @m's errors now (cluster, lease fresh, @m in
 * sync and not the last copy); a->lock held, @now monotonic ms. */
bool clr_arr_policy_applies_locked(struct clr_array *a, struct arr_member *m, uint64_t now);
/* A read on @m failed with @err: with a policy daemon attached (cluster,
 * redundancy left) the error is counted, @m becomes suspect, *kept is set
 * and 0 tells the caller to read another copy; otherwise
 * clr_arr_member_failed(). */
int clr_arr_read_failed(struct clr_array *a, struct arr_req *rq, struct arr_member *m, int err, bool *kept);
/* Row 1: @m (kept in sync by the policy) returned a media error for the
 * logical sectors [ls, ls+n), which another copy served: queue their
 * rewrite from a good copy (a resync of the bitmap chunks over them). */
void clr_arr_rewrite_later(struct clr_array *a, struct arr_member *m, uint64_t ls, uint64_t n);
/* The rewrite of @m's sectors was read back (@err 0) or not. */
void clr_arr_rewrite_done(struct clr_array *a, struct arr_member *m, int err);
/* arr_member.io_errors[] */
enum {
    ARR_IOERR_MEDIA,
    ARR_IOERR_PATH,
    ARR_IOERR_RESV
};
int clr_arr_wait_thaw(struct clr_array *a);
/* a request section: begin before taking the range lock, end after
 * releasing it; end writes and announces what failed inside (cluster) */
void clr_arr_req_begin(struct clr_array *a, struct arr_req *rq);
int clr_arr_req_end(struct clr_array *a, struct arr_req *rq);
/* a write-behind leg failed: before the ack, wait until the failure's
 * announcer released `metadata` (every node stopped reading the member) */
int clr_arr_behind_failed(struct clr_array *a, struct arr_req *rq, struct arr_member *m);

/* ---- array_bitmap.c ---- */
int clr_arr_bm_start_write(struct clr_array *a, struct arr_req *rq, uint64_t ss, uint64_t sn);
void clr_arr_bm_end_write(struct clr_array *a, uint64_t ss, uint64_t sn, bool ok);
int clr_arr_bm_flush(struct clr_array *a);
bool clr_arr_bm_final_flush(struct clr_array *a);
bool clr_arr_bm_region_needed(struct clr_array *a, uint64_t ls, uint64_t n);
/* the sync-sector extent of our NEEDED chunks; false: none */
bool clr_arr_needed_extent(struct clr_array *a, uint64_t *lo, uint64_t *hi);
void *clr_arr_bm_daemon(void *arg);

/* ---- array_parity.c (stripe buffer pool) ---- */
void clr_arr_pool_init(struct clr_array *a);
/* Request buffers (array_state.c): an aligned buffer of at least @len
 * bytes, from the pool or new; back to the pool with its length. */
void clr_arr_rb_init(struct clr_array *a);
void clr_arr_rb_destroy(struct clr_array *a);
int clr_arr_rb_get(struct clr_array *a, size_t len, uint8_t **bufp);
void clr_arr_rb_put(struct clr_array *a, uint8_t *buf, size_t len);
/* @p needs no aligned copy for member I/O (see a->mem_align) */
static inline bool arr_mem_aligned(struct clr_array *a, const void *p)
{
    return ((uintptr_t)p & (atomic_load_explicit(&a->mem_align, memory_order_relaxed) - 1)) == 0;
}
/* A member was opened for I/O: a->mem_align covers what it needs. */
void clr_arr_mem_align_note(struct clr_array *a, struct clr_io_dev *io);
void clr_arr_pool_destroy(struct clr_array *a);

/* ---- array_io.c ---- */
int clr_arr_flush_all(struct clr_array *a);

static inline uint64_t arr_dev_off(const struct arr_member *m, uint64_t dsec)
{
    return (m->sb.data_offset + dsec) * ARR_SECTOR;
}

/* ---- array_cluster.c: the cluster host ----
 * The core reaches the cluster only through this table, which
 * clr_arr_cl_start() registers (a->clops; NULL: a single node), as md.c
 * reaches md-cluster only through mddev->cluster_ops.  The arr_cl_*
 * wrappers give the single-node answer when there is no table. */
struct arr_cluster_ops {
    /* data path: a generation to wait on for window/hold changes */
    uint64_t (*gen)(struct clr_array *a);
    /* until the generation is no longer @gen, a stop, or @ms (0: no limit) */
    void (*wait)(struct clr_array *a, uint64_t gen, unsigned ms);
    /* wakes every wait() (the array is stopping) */
    void (*kick)(struct clr_array *a);
    bool (*write_blocked)(struct clr_array *a, uint64_t lo, uint64_t hi);
    bool (*read_first)(struct clr_array *a, uint64_t lo, uint64_t hi);
    /* superblocks: begin takes `metadata` and reloads the superblock from
     * disk; end broadcasts METADATA_UPDATED (if @send) and releases;
     * held: this thread holds `metadata` */
    int (*meta_begin)(struct clr_array *a);
    int (*meta_end)(struct clr_array *a, bool send);
    bool (*meta_held)(struct clr_array *a);
    /* sync thread */
    int (*resync_begin)(struct clr_array *a, uint64_t lo, uint64_t hi);
    int (*resync_window)(struct clr_array *a, uint64_t lo, uint64_t hi, uint64_t end);
    void (*resync_end)(struct clr_array *a);
    /* 1: another node finished rebuilding @m; else *off raised to its
     * checkpoint on disk */
    int (*rebuild_check)(struct clr_array *a, struct arr_member *m, uint64_t *off);
    /* management */
    int (*send_remove)(struct clr_array *a, uint32_t dev_number);
    int (*readd)(struct clr_array *a, uint32_t dev_number);
    int (*newdisk)(struct clr_array *a, const uint8_t uuid[16], uint32_t dev_number);
    void (*status)(struct clr_array *a, json_object *o, uint64_t *lock_ops, uint64_t *messages);
    /* RAID5/6 stripe-zone locks (array_zone.c): admit @op on the zone
     * of @stripe (waits for the lock), *tok for the exit; 0, or -errno
     * (-ESHUTDOWN stopping, the lock service's error) */
    int (*zone_enter)(struct clr_array *a, enum arr_zone_op op, uint64_t stripe, struct arr_zone **tok);
    void (*zone_exit)(struct clr_array *a, struct arr_zone *tok);
    /* lifecycle */
    bool (*alone)(struct clr_array *a);
    void (*leave)(struct clr_array *a, bool unclean);
    void (*crash)(struct clr_array *a, bool lost, uint64_t *member);
    void (*crash_finish)(struct clr_array *a);
    void (*free)(struct clr_array *a);
};

/* Checks a clustered array's configuration before anything runs. */
int clr_arr_cl_check_config(const struct clr_array *a, struct clr_err *e);
/* Joins the cluster and registers a->clops (also on failure: the
 * caller's stop and free release what was set up). */
int clr_arr_cl_start(struct clr_array *a, struct clr_err *e);

static inline uint64_t arr_cl_gen(struct clr_array *a)
{
    return a->clops ? a->clops->gen(a) : 0;
}
static inline void arr_cl_wait(struct clr_array *a, uint64_t gen, unsigned ms)
{
    if (a->clops)
        a->clops->wait(a, gen, ms);
}
static inline void arr_cl_kick(struct clr_array *a)
{
    if (a->clops)
        a->clops->kick(a);
}
static inline bool arr_cl_write_blocked(struct clr_array *a, uint64_t lo, uint64_t hi)
{
    return a->clops && a->clops->write_blocked(a, lo, hi);
}
static inline bool arr_cl_read_first(struct clr_array *a, uint64_t lo, uint64_t hi)
{
    return a->clops && a->clops->read_first(a, lo, hi);
}
static inline int arr_cl_meta_begin(struct clr_array *a)
{
    return a->clops ? a->clops->meta_begin(a) : 0;
}
static inline int arr_cl_meta_end(struct clr_array *a, bool send)
{
    return a->clops ? a->clops->meta_end(a, send) : 0;
}
static inline bool arr_cl_meta_held(struct clr_array *a)
{
    return a->clops && a->clops->meta_held(a);
}
static inline int arr_cl_resync_begin(struct clr_array *a, uint64_t lo, uint64_t hi)
{
    return a->clops ? a->clops->resync_begin(a, lo, hi) : 0;
}
static inline int arr_cl_resync_window(struct clr_array *a, uint64_t lo, uint64_t hi, uint64_t end)
{
    return a->clops ? a->clops->resync_window(a, lo, hi, end) : 0;
}
static inline void arr_cl_resync_end(struct clr_array *a)
{
    if (a->clops)
        a->clops->resync_end(a);
}
static inline int arr_cl_rebuild_check(struct clr_array *a, struct arr_member *m, uint64_t *off)
{
    return a->clops ? a->clops->rebuild_check(a, m, off) : 0;
}
static inline int arr_cl_send_remove(struct clr_array *a, uint32_t dev_number)
{
    return a->clops ? a->clops->send_remove(a, dev_number) : 0;
}
static inline int arr_cl_readd(struct clr_array *a, uint32_t dev_number)
{
    return a->clops ? a->clops->readd(a, dev_number) : 0;
}
static inline int arr_cl_newdisk(struct clr_array *a, const uint8_t uuid[16], uint32_t dev_number)
{
    return a->clops ? a->clops->newdisk(a, uuid, dev_number) : 0;
}
static inline int arr_cl_zone_enter(struct clr_array *a, enum arr_zone_op op, uint64_t stripe,
                                    struct arr_zone **tok)
{
    *tok = NULL;
    return a->clops && a->zone_stripes ? a->clops->zone_enter(a, op, stripe, tok) : 0;
}
static inline void arr_cl_zone_exit(struct clr_array *a, struct arr_zone *tok)
{
    if (tok)
        a->clops->zone_exit(a, tok);
}
static inline bool arr_cl_alone(struct clr_array *a)
{
    return !a->clops || a->clops->alone(a);
}
static inline void arr_cl_leave(struct clr_array *a, bool unclean)
{
    if (a->clops)
        a->clops->leave(a, unclean);
}
static inline void arr_cl_crash(struct clr_array *a, bool lost, uint64_t *member)
{
    if (a->clops)
        a->clops->crash(a, lost, member);
}
static inline void arr_cl_crash_finish(struct clr_array *a)
{
    if (a->clops)
        a->clops->crash_finish(a);
}
static inline void arr_cl_free(struct clr_array *a)
{
    if (a->clops)
        a->clops->free(a);
}

/* ---- array_zone.c: the zone cache (called by array_cluster.c only) ---- */
struct clr_ls;
struct arr_zone_cfg {
    struct clr_ls *ls;
    uint64_t stripes;
    uint32_t stripes_per_zone;
    unsigned min_hold_ms;
    int slot; /* 0-based: the LVB's last writer */
    /* slots whose death is not yet made good (nonzero: a zone granted
     * with a suspect LVB waits); called without any array lock held */
    uint64_t (*unrecovered)(void *arg);
    void *arg;
};
int clr_arr_zones_open(struct clr_array *a, const struct arr_zone_cfg *cfg, struct arr_zones **out);
int clr_arr_zone_enter(struct arr_zones *zs, enum arr_zone_op op, uint64_t stripe, struct arr_zone **tok);
void clr_arr_zone_exit(struct arr_zones *zs, struct arr_zone *tok);
void clr_arr_zones_kick(struct arr_zones *zs);
/* stop: before the lockspace closes; free: after (it freed the locks) */
void clr_arr_zones_stop(struct arr_zones *zs);
void clr_arr_zones_free(struct arr_zones *zs);
void clr_arr_zones_status(struct arr_zones *zs, json_object *c, uint64_t *lock_ops);

/* ---- array_plog.c: the partial-parity log (the cluster host's) ---- */
struct arr_plog;
/* Rows a logged partial-stripe write covers at most: its partial parity
 * (P and Q) must fit a slot's log area several times over. */
#define CLR_ARR_PLOG_MAX_ROWS 256u /* 128 KiB */
struct arr_plog_tok {
    unsigned n;       /* parity roles the entry is on (0: none) */
    unsigned role[2]; /* P's, Q's */
    int idx[2];
};
int clr_arr_plog_open(struct clr_array *a, struct arr_plog **out, struct clr_err *e);
void clr_arr_plog_free(struct arr_plog *pl);
/* before the data and parity writes of rows [first, first + sectors) of
 * stripe @st, changing data chunks @changed: an entry durable on the
 * parity members, with the partial parity @ppp (@ppq, RAID6), or none
 * (NULL: every chunk changes) */
int clr_arr_plog_log(struct arr_plog *pl, const struct clr_raid_stripe *st, uint64_t changed, uint32_t first,
                     uint32_t sectors, const uint8_t *ppp, const uint8_t *ppq, struct arr_plog_tok *tok);
/* the write's legs have all completed (failed ones failed their member) */
void clr_arr_plog_done(struct arr_plog *pl, struct arr_plog_tok *tok);
/* entries of stripes [s0, s0 + n) a durable header may still name */
unsigned clr_arr_plog_named(struct arr_plog *pl, uint64_t s0, uint64_t n);
/* headers without the completed entries, durable on every role */
int clr_arr_plog_retire(struct arr_plog *pl);
/* zeroes every slot's log area on @m, a member about to be rebuilt
 * (NULL @pl: nothing to do) */
int clr_arr_plog_wipe(struct arr_plog *pl, struct arr_member *m);
/* makes good slot @slot's log, then empties it (recovery lock held) */
int clr_arr_plog_replay(struct arr_plog *pl, unsigned slot, uint64_t *applied);
void clr_arr_plog_status(struct arr_plog *pl, json_object *z);

/* array_sync.c */
void *clr_arr_sync_main(void *arg);
const char *clr_arr_action_name(enum arr_action act);

/* A leg of a fanned-out request: its own result, then the group. */
struct arr_leg {
    struct clr_io_wg *wg;
    struct arr_member *m;
    int res;
    bool behind; /* write-behind leg: result ignored */
    bool write;
};
/* array_state.c */
void clr_arr_leg_done(void *arg, int res);
/* array_legs.c */
void clr_arr_leg_submit(struct arr_leg *l, struct clr_io_wg *wg, struct arr_member *m, bool write, void *buf,
                        size_t len, uint64_t dsec, unsigned ioflags);
/* fails every member whose leg failed: -EAGAIN if one was the last copy
 * (the array froze); *bad counts failed legs */
int clr_arr_legs_settle(struct clr_array *a, struct arr_req *rq, struct arr_leg *legs, unsigned n,
                        unsigned *bad);
static inline bool arr_writable(enum arr_mstate s)
{
    return s == ARR_M_IN_SYNC || s == ARR_M_REBUILDING;
}

/* Snapshot of the roles, taken once per request under lock. */
struct arr_view {
    struct arr_member *m[CLR_RAID_MAX_DISKS];
    enum arr_mstate st[CLR_RAID_MAX_DISKS];
    struct arr_member *wb[CLR_RAID_MAX_DISKS]; /* write-behind per role */
    bool suspect[CLR_RAID_MAX_DISKS];          /* errored here while a policy
                                       * daemon decides: reads try the
                                       * other copies first */
};
void clr_arr_view(struct clr_array *a, struct arr_view *v);
/* client writes: register in the current epoch / leave it */
unsigned clr_arr_wr_enter(struct clr_array *a);
void clr_arr_wr_exit(struct clr_array *a, unsigned epoch);
/* waits until every client write in flight now has completed its legs */
void clr_arr_wr_drain(struct clr_array *a);

#endif
