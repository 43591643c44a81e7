/*
 * Cooperative coroutines for the cluster simulator (tests/sim): one OS
 * thread, ucontext stacks, a seeded scheduler owned by sim.c.
 *
 * A coroutine runs until it calls co_yield(), co_wait() or co_sleep();
 * only then can the scheduler run another one or inject a fault, so every
 * blocking host call of the protocol core yields at least once.
 */
#ifndef CLRAID_TESTS_SIM_CORO_H
#define CLRAID_TESTS_SIM_CORO_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

enum co_state {
    CO_RUNNABLE,
    CO_WAITING,
    CO_SLEEPING,
    CO_DONE,
    CO_DEAD
};

struct co {
    ucontext_t uc;
    char *stack;
    unsigned stack_id; /* valgrind registration */
    void *asan_fake;   /* ASan fake stack of the suspended context */
    int id;
    int node;     /* node index, -1: the simulator itself */
    uint64_t inc; /* node incarnation it belongs to */
    enum co_state st;
    const void *chan; /* CO_WAITING: what it waits on */
    const char *why;  /* CO_WAITING: human-readable reason */
    bool idle;        /* waiting for work, not for progress */
    uint64_t wake_at; /* CO_SLEEPING */
    void (*fn)(void *arg);
    void *arg;
    struct bc *bc; /* receive coroutine: its broadcast */
    bool bc_done;
    char name[40];
};

#define CO_STACK (96 * 1024)

/** The running coroutine (NULL in the scheduler). */
extern struct co *co_cur;

/** Create a runnable coroutine (not started). */
struct co *co_new(int node, uint64_t inc, const char *name, void (*fn)(void *), void *arg);
/** Switch into @c until it yields; returns when it is back in the scheduler. */
void co_run(struct co *c);
/** Free a finished or dead coroutine's stack (never the running one). */
void co_free(struct co *c);

void co_yield (void);
void co_wait(const void *chan, const char *why);
void co_wait_idle(const void *chan, const char *why);
void co_sleep(uint64_t steps);

/** Simulated time (scheduler steps), provided by sim.c. */
uint64_t sim_now(void);

#endif
