/* clraid array core: the lock order, written down and checked.
 *
 * Every mutex of engine/array is a struct arr_mutex with a rank from the
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
 * delivery, the DLM locks `metadata`, `token`, `bitmapNNNN`, the write
 * hold), the lock service's and engine/io's mutexes, is
 * doc/architecture.md §7.
 *
 * rank  lock                 file              may take while holding it
 * ----  -------------------  ----------------  ---------------------------
 *  100  a->mgmt_lock         array_manage/run  everything below
 *  150  range lock (held     array_state.c     meta_lock, the cluster host's
 *       range, a sleeping                      locks (non-deferred failure
 *       wait)                                  announcement), bm_lock, lock
 *  200  a->meta_lock         array_super.c     cl lock entries, bm_lock, lock
 *                            (superblock writes; the cluster `metadata`
 *                            DLM lock is taken before it)
 *  300  le->mu               array_cluster.c   le->tmu, cl->mu, lock service
 *       (one operation per cluster lock resource; sleeps in the DLM)
 *  310  le->tmu              array_cluster.c   nothing of the array
 *  400  cl->mu               array_cluster.c   bm_lock, lock
 *  500  a->bm_lock           array_bitmap.c    lock (dropped for the flush I/O)
 *  600  a->lock              array_state.c     rl.mu, sp_lock
 *  700  rl.mu                array_state.c     nothing (inside rl_lock/unlock)
 *  710  a->sp_lock           array_parity.c    nothing
 *  720  a->rb_lock           array_state.c     nothing (request buffer pool)
 */
#ifndef CLRAID_ARRAY_LOCKRANK_H
#define CLRAID_ARRAY_LOCKRANK_H

#include <pthread.h>
#include <time.h>

enum arr_rank {
    ARR_RANK_MGMT = 100,
    ARR_RANK_RANGE = 150,
    ARR_RANK_META = 200,
    ARR_RANK_CL_LOCKENT = 300,
    ARR_RANK_CL_LOCKENT_T = 310,
    ARR_RANK_CL = 400,
    ARR_RANK_BM = 500,
    ARR_RANK_ARRAY = 600,
    ARR_RANK_RL = 700,
    ARR_RANK_SP = 710,
    ARR_RANK_RB = 720,
};

struct arr_mutex {
    pthread_mutex_t mu;
    unsigned rank;
    const char *name;
};

void arr_mutex_init(struct arr_mutex *m, enum arr_rank rank, const char *name);
void arr_mutex_destroy(struct arr_mutex *m);

/* The checks: the calling thread takes / releases rank @rank. */
void arr_rank_acquire(unsigned rank, const char *name);
void arr_rank_release(unsigned rank, const char *name);
/* records a lock taken without waiting (no order check) */
void arr_rank_note(unsigned rank, const char *name);
/* the calling thread holds a lock of rank @rank (for assertions) */
int arr_rank_held(unsigned rank);

#ifdef CLR_LOCKRANK
#define ARR_RANK_ACQUIRE(r, n) arr_rank_acquire((r), (n))
#define ARR_RANK_RELEASE(r, n) arr_rank_release((r), (n))
#else
#define ARR_RANK_ACQUIRE(r, n) ((void)0)
#define ARR_RANK_RELEASE(r, n) ((void)0)
#endif

static inline void arr_mutex_lock(struct arr_mutex *m)
{
    ARR_RANK_ACQUIRE(m->rank, m->name);
    pthread_mutex_lock(&m->mu);
}

static inline void arr_mutex_unlock(struct arr_mutex *m)
{
    pthread_mutex_unlock(&m->mu);
    ARR_RANK_RELEASE(m->rank, m->name);
}

/* A try never waits, so it cannot close a cycle: recorded, not checked. */
static inline int arr_mutex_trylock(struct arr_mutex *m)
{
    int rc = pthread_mutex_trylock(&m->mu);

#ifdef CLR_LOCKRANK
    if (rc == 0)
        arr_rank_note(m->rank, m->name);
#endif
    return rc;
}

/* A condition wait gives the mutex back and retakes it: the thread's
 * held ranks do not change. */
static inline void arr_cond_wait(pthread_cond_t *c, struct arr_mutex *m)
{
    pthread_cond_wait(c, &m->mu);
}

static inline int arr_cond_timedwait(pthread_cond_t *c, struct arr_mutex *m, const struct timespec *ts)
{
    return pthread_cond_timedwait(c, &m->mu, ts);
}

#endif
