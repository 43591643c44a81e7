/*
 * Coroutines on ucontext for the simulator.  With ASan the stack switches
 * are announced through __sanitizer_start/finish_switch_fiber; under
 * valgrind every stack is registered (VALGRIND_STACK_REGISTER).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coro.h"

#if defined(__SANITIZE_ADDRESS__)
#define SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SIM_ASAN 1
#endif
#endif

#ifdef SIM_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define SIM_VG_REGISTER(lo, hi) VALGRIND_STACK_REGISTER(lo, hi)
#define SIM_VG_DEREGISTER(id)   VALGRIND_STACK_DEREGISTER(id)
#else
#define SIM_VG_REGISTER(lo, hi) 0
#define SIM_VG_DEREGISTER(id)   ((void)(id))
#endif

struct co *co_cur;
static ucontext_t sched_uc;
static int next_id;
#ifdef SIM_ASAN
static void *sched_fake;
static const void *sched_bottom;
static size_t sched_size;
#endif

static void co_entry(void)
{
    struct co *c = co_cur;

#ifdef SIM_ASAN
    __sanitizer_finish_switch_fiber(NULL, &sched_bottom, &sched_size);
#endif
    c->fn(c->arg);
    c->st = CO_DONE;
#ifdef SIM_ASAN
    /* NULL: this fiber's fake stack is gone for good */
    __sanitizer_start_switch_fiber(NULL, sched_bottom, sched_size);
#endif
    swapcontext(&c->uc, &sched_uc);
    abort(); /* never resumed */
}

struct co *co_new(int node, uint64_t inc, const char *name, void (*fn)(void *), void *arg)
{
    struct co *c = calloc(1, sizeof(*c));

    if (!c || !(c->stack = malloc(CO_STACK))) {
        fprintf(stderr, "sim: out of memory\n");
        exit(2);
    }
    c->stack_id = SIM_VG_REGISTER(c->stack, c->stack + CO_STACK);
    c->id = ++next_id;
    c->node = node;
    c->inc = inc;
    c->st = CO_RUNNABLE;
    c->fn = fn;
    c->arg = arg;
    snprintf(c->name, sizeof(c->name), "%s", name);
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = c->stack;
    c->uc.uc_stack.ss_size = CO_STACK;
    c->uc.uc_link = NULL;
    makecontext(&c->uc, co_entry, 0);
    return c;
}

void co_run(struct co *c)
{
    co_cur = c;
#ifdef SIM_ASAN
    __sanitizer_start_switch_fiber(&sched_fake, c->stack, CO_STACK);
#endif
    swapcontext(&sched_uc, &c->uc);
#ifdef SIM_ASAN
    __sanitizer_finish_switch_fiber(sched_fake, NULL, NULL);
#endif
    co_cur = NULL;
}

void co_free(struct co *c)
{
    if (!c)
        return;
    SIM_VG_DEREGISTER(c->stack_id);
    free(c->stack);
    free(c);
}

static void co_switch_out(void)
{
    struct co *c = co_cur;

#ifdef SIM_ASAN
    __sanitizer_start_switch_fiber(&c->asan_fake, sched_bottom, sched_size);
#endif
    swapcontext(&c->uc, &sched_uc);
#ifdef SIM_ASAN
    __sanitizer_finish_switch_fiber(c->asan_fake, &sched_bottom, &sched_size);
#endif
}

void co_yield (void)
{
    co_cur->st = CO_RUNNABLE;
    co_switch_out();
}

void co_wait(const void *chan, const char *why)
{
    co_cur->st = CO_WAITING;
    co_cur->chan = chan;
    co_cur->why = why;
    co_cur->idle = false;
    co_switch_out();
    co_cur->chan = NULL;
}

void co_wait_idle(const void *chan, const char *why)
{
    co_cur->st = CO_WAITING;
    co_cur->chan = chan;
    co_cur->why = why;
    co_cur->idle = true;
    co_switch_out();
    co_cur->chan = NULL;
    co_cur->idle = false;
}

void co_sleep(uint64_t steps)
{
    co_cur->st = CO_SLEEPING;
    co_cur->wake_at = sim_now() + (steps ? steps : 1);
    co_switch_out();
}
