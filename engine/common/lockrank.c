/* clraid: the lock-rank checks (engine/common/lockrank.h).
 * The set of ranks a thread holds is debugging state about the thread
 * itself, never about a request: it lives in thread-local storage and is
 * only read by the checks. */
#include <stdio.h>
#include <stdlib.h>

#include "common/lockrank.h"

#define RANK_MAX_HELD 16

static __thread unsigned held_rank[RANK_MAX_HELD];
static __thread const char *held_name[RANK_MAX_HELD];
static __thread unsigned nheld;

void clr_mutex_init(struct clr_mutex *m, enum clr_rank rank, const char *name)
{
    pthread_mutex_init(&m->mu, NULL);
    m->rank = rank;
    m->name = name;
}

void clr_mutex_destroy(struct clr_mutex *m)
{
    pthread_mutex_destroy(&m->mu);
}

void clr_rank_acquire(unsigned rank, const char *name)
{
    for (unsigned i = 0; i < nheld; i++) {
        if (held_rank[i] >= rank) {
            fprintf(
                stderr,
                "clraid: lock order violated: taking %s (rank %u) while holding %s (rank %u); see engine/common/lockrank.h\n",
                name, rank, held_name[i], held_rank[i]);
            abort();
        }
    }
    if (nheld == RANK_MAX_HELD) {
        fprintf(stderr, "clraid: lock order: more than %d locks held taking %s\n", RANK_MAX_HELD, name);
        abort();
    }
    held_rank[nheld] = rank;
    held_name[nheld++] = name;
}

void clr_rank_note(unsigned rank, const char *name)
{
    if (nheld == RANK_MAX_HELD) {
        fprintf(stderr, "clraid: lock order: more than %d locks held taking %s\n", RANK_MAX_HELD, name);
        abort();
    }
    held_rank[nheld] = rank;
    held_name[nheld++] = name;
}

void clr_rank_release(unsigned rank, const char *name)
{
    /* releases need not be in reverse order */
    for (unsigned i = nheld; i-- > 0;) {
        if (held_rank[i] == rank) {
            held_rank[i] = held_rank[nheld - 1];
            held_name[i] = held_name[nheld - 1];
            nheld--;
            return;
        }
    }
    fprintf(stderr, "clraid: lock order: releasing %s (rank %u), which this thread does not hold\n", name,
            rank);
    abort();
}

int clr_rank_held(unsigned rank)
{
    for (unsigned i = 0; i < nheld; i++)
        if (held_rank[i] == rank)
            return 1;
    return 0;
}
