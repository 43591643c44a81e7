/* clraid: the engine's lock order, written down and checked.
 *
 * Every mutex of the engine is a struct clr_mutex with a rank from the
 * table below.  A thread takes locks in increasing rank only: holding
 * rank r it may take a lock of rank > r, never one of rank <= r.  The
 * sleeping waits that order like locks (the range lock, held across
 * member I/O) carry a rank too.  In builds with CLR_LOCKRANK (configure
 * --enable-lockrank, which scripts/run-tests.sh uses, and the sanitizer
 * builds) every acquisition is checked against what the thread holds and
 * a violation aborts with both lock names; otherwise the wrappers are
 * plain pthread calls.
 *
 * The written version, with the cross-node waits (drain, broadcast
 * delivery, the cluster locks `metadata`, `token`, `bitmapNNNN`, the write
 * hold), is doc/architecture.md §7.  Locks of the same rank are never
 * nested (each is one of many instances taken one at a time).
 *
 * rank  lock                  file               may take while holding it
 * ----  --------------------  -----------------  --------------------------
 *  100  a->mgmt_lock          array_manage/run   everything below
 *  110  b->send_mu            lock/bcast.c       recv_mu, the lock service
 *       (one local sender; the token is taken under it)
 *  120  b->recv_mu            lock/bcast.c       the range lock and below
 *       (the receiver runs the message handler under it)
 *  150  range lock (held      array_state.c      meta_lock, the cluster host's
 *       range, a sleeping                        locks (non-deferred failure
 *       wait)                                    announcement), bm_lock, lock
 *  200  a->meta_lock          array_super.c      cl lock entries, bm_lock, lock
 *                             (superblock writes; the cluster `metadata`
 *                             lock is taken before it)
 *  300  le->mu                array_cluster.c    le->tmu, mdc, cl->mu, the
 *       (one operation per cluster lock         lock service
 *       resource; sleeps in the lock service)
 *  310  le->tmu               array_cluster.c    nothing of the array
 *  350  m->mu                 cluster/mdc.c      cl->mu (the changed() hook)
 *       (protocol state; never held across a lock request or a send)
 *  400  cl->mu                array_cluster.c    bm_lock, lock
 *  450  zs->mu                array_zone.c       the lock service (a zone's
 *       (RAID5/6 zone cache; waited on after    request or unlock)
 *       the range lock, held as a sleeping
 *       admission across member I/O)
 *  460  pl->mu                array_plog.c       nothing (member I/O and the view
 *       (partial-parity log entries; never     with it dropped)
 *       held across I/O)
 *  500  a->bm_lock            array_bitmap.c     lock (dropped for the flush I/O)
 *  600  a->lock               array_state.c      rl.mu, sp_lock
 *  700  rl.mu                 array_state.c      nothing (inside rl_lock/unlock)
 *  710  a->sp_lock            array_parity.c     nothing
 *  720  a->rb_lock            array_state.c      nothing (request buffer pool)
 *  800  backends_mu           lock/lock.c        nothing
 *  810  registry_mu           lock/lock_local.c  the table's mu
 *  820  t->mu (local table)   lock/lock_local.c  a member's ls->mu
 *  830  ls->mu                lock/lock.c        b->mu (BAST hooks)
 *  840  b->mu                 lock/bcast.c       nothing
 *  850  be->send_mu           lock/lock_cpg.c    nothing (never with ls->mu)
 *  860  s->lock               ctl/ctl_server.c   nothing
 *  900  ctx->lock             io/io_ring.c       nothing
 *  910  ctx->sq_lock          io/io_ring.c       nothing (submitters try it)
 *  920  f->lock               io/io_fault.c      nothing
 *  930  wg->lock              io/io_sync.c       nothing
 */
#ifndef CLRAID_COMMON_LOCKRANK_H
#define CLRAID_COMMON_LOCKRANK_H

#include <pthread.h>
#include <time.h>

enum clr_rank {
    CLR_RANK_MGMT = 100,
    CLR_RANK_BCAST_SEND = 110,
    CLR_RANK_BCAST_RECV = 120,
    CLR_RANK_RANGE = 150,
    CLR_RANK_META = 200,
    CLR_RANK_CL_LOCKENT = 300,
    CLR_RANK_CL_LOCKENT_T = 310,
    CLR_RANK_MDC = 350,
    CLR_RANK_CL = 400,
    CLR_RANK_ZONE = 450,
    CLR_RANK_PLOG = 460,
    CLR_RANK_BM = 500,
    CLR_RANK_ARRAY = 600,
    CLR_RANK_RL = 700,
    CLR_RANK_SP = 710,
    CLR_RANK_RB = 720,
    CLR_RANK_LS_BACKENDS = 800,
    CLR_RANK_LOCAL_REGISTRY = 810,
    CLR_RANK_LOCAL_TABLE = 820,
    CLR_RANK_LS = 830,
    CLR_RANK_BCAST_STATE = 840,
    CLR_RANK_CPG_SEND = 850,
    CLR_RANK_CTL = 860,
    CLR_RANK_IO = 900,
    CLR_RANK_IO_SQ = 910,
    CLR_RANK_IO_FAULT = 920,
    CLR_RANK_IO_WG = 930,
};

struct clr_mutex {
    pthread_mutex_t mu;
    unsigned rank;
    const char *name;
};

/* for a mutex with static storage */
#define CLR_MUTEX_INITIALIZER(rank, name)                                                                    \
    {                                                                                                        \
        PTHREAD_MUTEX_INITIALIZER, (rank), (name)                                                            \
    }

void clr_mutex_init(struct clr_mutex *m, enum clr_rank rank, const char *name);
void clr_mutex_destroy(struct clr_mutex *m);

/* The checks: the calling thread takes / releases rank @rank. */
void clr_rank_acquire(unsigned rank, const char *name);
void clr_rank_release(unsigned rank, const char *name);
/* records a lock taken without waiting (no order check) */
void clr_rank_note(unsigned rank, const char *name);
/* the calling thread holds a lock of rank @rank (for assertions) */
int clr_rank_held(unsigned rank);

#ifdef CLR_LOCKRANK
#define CLR_RANK_ACQUIRE(r, n) clr_rank_acquire((r), (n))
#define CLR_RANK_RELEASE(r, n) clr_rank_release((r), (n))
#else
#define CLR_RANK_ACQUIRE(r, n) ((void)0)
#define CLR_RANK_RELEASE(r, n) ((void)0)
#endif

static inline void clr_mutex_lock(struct clr_mutex *m)
{
    CLR_RANK_ACQUIRE(m->rank, m->name);
    pthread_mutex_lock(&m->mu);
}

/* The rank is read before the unlock: once the mutex is free, another
 * thread may end the object that holds it (a wait group on a stack). */
static inline void clr_mutex_unlock(struct clr_mutex *m)
{
#ifdef CLR_LOCKRANK
    unsigned rank = m->rank;
    const char *name = m->name;

    pthread_mutex_unlock(&m->mu);
    clr_rank_release(rank, name);
#else
    pthread_mutex_unlock(&m->mu);
#endif
}

/* A try never waits, so it cannot close a cycle: recorded, not checked. */
static inline int clr_mutex_trylock(struct clr_mutex *m)
{
    int rc = pthread_mutex_trylock(&m->mu);

#ifdef CLR_LOCKRANK
    if (rc == 0)
        clr_rank_note(m->rank, m->name);
#endif
    return rc;
}

/* A condition wait gives the mutex back and retakes it: the thread's
 * held ranks do not change. */
static inline void clr_cond_wait(pthread_cond_t *c, struct clr_mutex *m)
{
    pthread_cond_wait(c, &m->mu);
}

static inline int clr_cond_timedwait(pthread_cond_t *c, struct clr_mutex *m, const struct timespec *ts)
{
    return pthread_cond_timedwait(c, &m->mu, ts);
}

#endif
