/*
 * The `local` backend: the lock table in this process, no cluster stack.
 * Every lockspace opened with the same name in one process is a member of
 * the same table, so tests (and the future simulator) can run several
 * members side by side, deterministically when driven from one thread.
 *
 * Locking order: table mutex, then a member's ls->mu.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/lockrank.h"
#include "lock/lock_internal.h"

#define LOCAL_MAX_MEMBERS 64

struct local_table {
    struct local_table *next;
    char name[CLR_LS_NAME_MAX + 1];
    struct clr_mutex mu;
    struct clr_lt *lt;
    struct clr_ls *members[LOCAL_MAX_MEMBERS]; /* index = slot - 1 */
    /* members lost with their "node" (clr_lock_local_lose): id per slot
     * (0: none); their locks and slots are kept until confirmed dead */
    uint64_t lost[LOCAL_MAX_MEMBERS];
    int nlost;
    uint64_t next_member;
    int nmembers;
};

enum detach_how {
    DETACH_LEAVE,
    DETACH_KILL,
    DETACH_LOSE
};

static struct clr_mutex registry_mu = CLR_MUTEX_INITIALIZER(CLR_RANK_LOCAL_REGISTRY, "local registry_mu");
static struct local_table *registry;

static struct local_table *tab_of(struct clr_ls *ls)
{
    return ls->be;
}

/* Route an effect to the member that owns the lock. */
static void local_emit(void *arg, const struct clr_lt_effect *e)
{
    struct local_table *t = arg;

    for (int i = 0; i < LOCAL_MAX_MEMBERS; i++) {
        struct clr_ls *m = t->members[i];

        if (m && m->member_id == e->owner) {
            clr_mutex_lock(&m->mu);
            clr_ls_effect_locked(m, e);
            clr_mutex_unlock(&m->mu);
            return;
        }
    }
}

static void event_all(struct local_table *t, struct clr_ls *except, const struct clr_ls_event *ev)
{
    for (int i = 0; i < LOCAL_MAX_MEMBERS; i++) {
        struct clr_ls *m = t->members[i];

        if (m && m != except) {
            clr_mutex_lock(&m->mu);
            clr_ls_event_locked(m, ev);
            clr_mutex_unlock(&m->mu);
        }
    }
}

static int local_open(struct clr_ls *ls, const struct clr_ls_config *cfg)
{
    struct local_table *t;
    struct clr_ls_event ev = { .type = CLR_LS_EV_PREP };
    int slot = -1;

    clr_mutex_lock(&registry_mu);
    for (t = registry; t; t = t->next)
        if (strcmp(t->name, cfg->name) == 0)
            break;
    if (!t) {
        t = calloc(1, sizeof(*t));
        if (!t || !(t->lt = clr_lt_new())) {
            free(t);
            clr_mutex_unlock(&registry_mu);
            return -ENOMEM;
        }
        strcpy(t->name, cfg->name);
        clr_mutex_init(&t->mu, CLR_RANK_LOCAL_TABLE, "local table mu");
        t->next = registry;
        registry = t;
    }
    clr_mutex_lock(&t->mu);
    for (int i = 0; i < LOCAL_MAX_MEMBERS; i++) {
        if (!t->members[i] && !t->lost[i]) {
            slot = i;
            break;
        }
    }
    if (slot < 0) {
        clr_mutex_unlock(&t->mu);
        clr_mutex_unlock(&registry_mu);
        return -EUSERS;
    }
    ls->be = t;
    ls->member_id = ++t->next_member;
    ls->our_slot = slot + 1;
    event_all(t, NULL, &ev);
    t->members[slot] = ls;
    t->nmembers++;
    ev.type = CLR_LS_EV_DONE;
    event_all(t, NULL, &ev);
    clr_mutex_unlock(&t->mu);
    clr_mutex_unlock(&registry_mu);
    return 0;
}

static void local_detach(struct clr_ls *ls, enum detach_how how)
{
    struct local_table *t = tab_of(ls);
    struct clr_ls_event ev = { .member = ls->member_id, .slot = ls->our_slot };
    bool failed = how != DETACH_LEAVE;

    clr_mutex_lock(&registry_mu);
    clr_mutex_lock(&t->mu);
    t->members[ls->our_slot - 1] = NULL;
    t->nmembers--;
    if (failed) {
        ev.type = CLR_LS_EV_PREP;
        event_all(t, NULL, &ev);
    }
    if (how == DETACH_LOSE) {
        /* maybe alive: its locks stay until clr_ls_confirm_dead() */
        t->lost[ls->our_slot - 1] = ls->member_id;
        t->nlost++;
        ev.type = CLR_LS_EV_MEMBER_LOST;
        event_all(t, NULL, &ev);
    } else {
        if (failed) {
            ev.type = CLR_LS_EV_MEMBER_FAILED;
            event_all(t, NULL, &ev);
        }
        clr_lt_remove_owner(t->lt, ls->member_id, failed, local_emit, t);
    }
    /* as cpg: DONE only once no lost member is unconfirmed */
    if (failed && !t->nlost) {
        ev.type = CLR_LS_EV_DONE;
        event_all(t, NULL, &ev);
    }
    clr_mutex_unlock(&t->mu);
    if (t->nmembers == 0) {
        struct local_table **pp;

        for (pp = &registry; *pp; pp = &(*pp)->next) {
            if (*pp == t) {
                *pp = t->next;
                break;
            }
        }
        clr_lt_free(t->lt);
        clr_mutex_destroy(&t->mu);
        free(t);
    }
    clr_mutex_unlock(&registry_mu);
    ls->be = NULL;
}

static void local_close(struct clr_ls *ls)
{
    if (ls->be)
        local_detach(ls, DETACH_LEAVE);
}

static int local_die(struct clr_ls *ls, enum detach_how how)
{
    if (ls->ops != &clr_lock_backend_local || !ls->be)
        return -EINVAL;
    local_detach(ls, how);
    clr_mutex_lock(&ls->mu);
    clr_ls_fail_all_locked(ls, -ENOLCK);
    clr_mutex_unlock(&ls->mu);
    return 0;
}

int clr_lock_local_kill(struct clr_ls *ls)
{
    return local_die(ls, DETACH_KILL);
}

int clr_lock_local_lose(struct clr_ls *ls)
{
    return local_die(ls, DETACH_LOSE);
}

/* A lost member is dead after all: release its locks (LVBs not valid). */
static int local_confirm_dead(struct clr_ls *ls, uint64_t member)
{
    struct local_table *t = tab_of(ls);
    struct clr_ls_event ev = { .type = CLR_LS_EV_MEMBER_FAILED, .member = member };
    int i;

    if (!t)
        return -ENOLCK;
    clr_mutex_lock(&t->mu);
    for (i = 0; i < LOCAL_MAX_MEMBERS; i++)
        if (member && t->lost[i] == member)
            break;
    if (i == LOCAL_MAX_MEMBERS) {
        clr_mutex_unlock(&t->mu);
        return -ENOENT;
    }
    t->lost[i] = 0;
    t->nlost--;
    ev.slot = i + 1;
    event_all(t, NULL, &ev);
    clr_lt_remove_owner(t->lt, member, true, local_emit, t);
    if (!t->nlost) {
        ev.type = CLR_LS_EV_DONE;
        event_all(t, NULL, &ev);
    }
    clr_mutex_unlock(&t->mu);
    return 0;
}

/* Still a member?  A request of a killed (or lost) member may have read
 * ls->be before the kill and reach the table after its locks were removed
 * and its own ones failed (grmode IV): as a new request it would leave a
 * lock of a dead owner that nothing ever removes. */
static bool attached_locked(struct local_table *t, struct clr_ls *ls)
{
    return t->members[ls->our_slot - 1] == ls;
}

static int local_request(struct clr_ls *ls, struct clr_lock *lk, int mode, unsigned flags)
{
    struct local_table *t = tab_of(ls);

    if (!t)
        return -ENOLCK;
    clr_mutex_lock(&t->mu);
    if (!attached_locked(t, ls)) {
        clr_mutex_unlock(&t->mu);
        return -ENOLCK;
    }
    if (lk->grmode == CLR_LOCK_IV)
        clr_lt_request(t->lt, ls->member_id, lk->lkid, lk->name, lk->namelen, mode, flags, local_emit, t);
    else
        clr_lt_convert(t->lt, ls->member_id, lk->lkid, mode, flags, lk->lvb, local_emit, t);
    clr_mutex_unlock(&t->mu);
    return 0;
}

static int local_unlock(struct clr_ls *ls, struct clr_lock *lk, unsigned flags)
{
    struct local_table *t = tab_of(ls);

    if (!t)
        return -ENOLCK;
    clr_mutex_lock(&t->mu);
    if (!attached_locked(t, ls)) {
        clr_mutex_unlock(&t->mu);
        return -ENOLCK;
    }
    clr_lt_unlock(t->lt, ls->member_id, lk->lkid, flags, lk->lvb, local_emit, t);
    clr_mutex_unlock(&t->mu);
    return 0;
}

static int local_cancel(struct clr_ls *ls, struct clr_lock *lk)
{
    struct local_table *t = tab_of(ls);
    int rc;

    if (!t)
        return -ENOLCK;
    clr_mutex_lock(&t->mu);
    if (!attached_locked(t, ls)) {
        clr_mutex_unlock(&t->mu);
        return -ENOLCK;
    }
    rc = clr_lt_cancel(t->lt, ls->member_id, lk->lkid, local_emit, t);
    clr_mutex_unlock(&t->mu);
    return rc == -EBUSY ? 0 : rc;
}

static int local_member_count(struct clr_ls *ls)
{
    struct local_table *t;
    int n = 0;

    clr_mutex_lock(&registry_mu);
    t = tab_of(ls);
    if (t) {
        clr_mutex_lock(&t->mu);
        n = t->nmembers;
        clr_mutex_unlock(&t->mu);
    }
    clr_mutex_unlock(&registry_mu);
    return n;
}

const struct clr_lock_backend_ops clr_lock_backend_local = {
    .name = "local",
    .open = local_open,
    .close = local_close,
    .request = local_request,
    .unlock = local_unlock,
    .cancel = local_cancel,
    .confirm_dead = local_confirm_dead,
    .member_count = local_member_count,
};
