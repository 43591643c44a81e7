/*
 * The `dlm` backend: locks from the kernel DLM through libdlm (completion
 * through dlm_ls_get_fd() / dlm_dispatch() on our thread), membership
 * from corosync CPG.  The DLM itself keeps a failed node's locks until it
 * has recovered the lockspace (after dlm_controld fenced the node, when it
 * fences), so this backend needs no fencing logic.
 *
 * Slots (doc/cluster.md, "--lock dlm"): the DLM's own slot numbers are not
 * exported to user space, so each member claims one with a lock of its
 * own, `slotNNNN` (NNNN = slot - 1, as md's bitmapNNNN): NOQUEUE EX on
 * slot0000, slot0001, ..., the first grant is ours, held PW for life, its
 * LVB {magic, nodeid, pid} for whoever looks.  Members announce "nodeid
 * pid slot" in the CPG group "clraid-dlm:<lockspace>" (again on every
 * join), so a departure maps to a slot at once:
 *   - node left the membership (NODEDOWN): MEMBER_LOST(slot) at once,
 *     then a queued EX on its slot lock; the kernel grants it only after
 *     the dead node's locks are released (recovery, after fencing), so
 *     the grant is the confirmation: MEMBER_FAILED(slot), release, DONE;
 *   - process died on a live node (PROCDOWN): the kernel drops its locks
 *     when its device closes: the same grant, MEMBER_FAILED only;
 *   - clean leave: the leaver zeroed and released its slot: nothing;
 *   - died before announcing: its slot is found by a NOQUEUE sweep (a
 *     granted slot with our magic in the LVB, or VALNOTVALID: every
 *     member holds NL with VALBLK on every other slot, so the kernel keeps
 *     a slot's LVB; best effort for a node lost that early, as the kernel
 *     does not always mark it not valid, see doc/cluster.md).
 * Our bitmapNNNN locks are md's (engine/cluster/mdc.c takes them), never
 * ours: the backend must not conflict with its own caller.
 *
 * Known limits: libdlm's BAST callback does not carry the blocked mode, so
 * BASTs report CLR_LOCK_EX; a grant that a death allows may reach the
 * caller before the MEMBER_FAILED that the slot lock's grant produces (the
 * kernel grants them in the same recovery, we see the slot's a little
 * later); no FREEZE on quorum loss (the kernel DLM blocks instead).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <corosync/cpg.h>
#include <libdlm.h>

#include "common/lockrank.h"
#include "lock/lock_internal.h"
#include "lock/lock_wire.h"

#define DLM_GROUP_PREFIX "clraid-dlm:"
#define SLOT_RES_FMT     "slot%04u"
#define SLOT_MAX         64          /* as md-cluster's (CLR_MDC_MAX_SLOTS) */
#define SLOT_MAGIC       0x534c4f54u /* "SLOT" in the slot lock's LVB */
#define ANNOUNCE_MAGIC   0x434c5244u /* "CLRD": nodeid, pid, slot (1-based) */
#define ANNOUNCE_LEN     16
#define MAX_PEERS        128
#define MAX_LOST         64
#define TICK_MS          100 /* lost-member work while any is pending */
#define SWEEP_PAUSE_MS   200 /* between sweeps for an unannounced one */

/* Our modes are the DLM's; spelled out so a renumbering cannot slip by. */
static const uint32_t dlm_modes[CLR_LOCK_NMODES] = {
    LKM_NLMODE, LKM_CRMODE, LKM_CWMODE, LKM_PRMODE, LKM_PWMODE, LKM_EXMODE,
};

struct dlm_lock_priv {
    struct dlm_lksb lksb;
    int rqmode;
    bool unlocking;
};

/* A lock of the backend's own (slot claim, probes): not a clr_lock. */
struct ilk {
    struct dlm_lksb lksb;
    uint8_t lvb[CLR_LOCK_LVB_LEN];
    bool done; /* set by ilk_ast (atomic) */
    int status;
    bool vnv;
};

struct peer {
    uint32_t nodeid, pid;
    int slot; /* 1-based, 0 until announced */
};

enum lost_phase {
    LOST_IDLE,
    LOST_WAIT,
    LOST_UNLOCK
};

/* A member that left without a clean leave, until its slot is confirmed. */
struct lost {
    uint32_t nodeid, pid;
    int slot; /* 1-based, 0: never announced (sweep) */
    uint64_t since;
    bool timeout_sent;
    enum lost_phase phase;
    struct ilk probe;
    unsigned cursor; /* sweep position */
    bool busy;       /* the sweep met a busy unaccounted slot */
    bool found;
    uint64_t next_sweep;
};

struct dlm_be {
    struct clr_ls *ls;
    dlm_lshandle_t dls;
    bool created; /* we created the lockspace: release it at close */
    int fd;
    int wake_fd;
    pthread_t thread;
    bool running;
    bool stop;
    cpg_handle_t cpg;
    bool cpg_init, cpg_ok;
    struct cpg_name group;
    uint32_t nodeid, pid;
    int nmembers; /* CPG group size at the last confchg (ls->mu) */
    /* ours: the slot lock (held PW for life), and NL on every other slot
     * so that the kernel keeps their value blocks (and may mark them
     * VALNOTVALID when a holder's node dies, doc/cluster.md) */
    struct ilk slot;
    struct ilk watch[SLOT_MAX];
    unsigned slot_no;
    bool slot_held;
    /* our thread's only (CPG and DLM callbacks run there) */
    struct peer peers[MAX_PEERS];
    int npeers;
    struct lost lost[MAX_LOST];
    int nlost;
    bool announce, done_owed;
    /* test hook input (clr_lock_dlm_test_left), under ls->mu */
    struct {
        uint32_t nodeid, pid;
        int slot, reason;
    } inject[8];
    int ninject;
};

static struct dlm_be *dbe(struct clr_ls *ls)
{
    return ls->be;
}

static struct dlm_lock_priv *priv(struct clr_lock *lk)
{
    if (!lk->be)
        lk->be = calloc(1, sizeof(struct dlm_lock_priv));
    return lk->be;
}

/* Completion of any request on @arg (the lock object), in dlm_dispatch. */
static void dlm_ast(void *arg)
{
    struct clr_lock *lk = arg;
    struct clr_ls *ls = lk->ls;
    struct dlm_lock_priv *p = lk->be;
    int st = p->lksb.sb_status;
    unsigned flags = (p->lksb.sb_flags & DLM_SBF_VALNOTVALID) ? CLR_LOCK_SB_VALNOTVALID : 0;

    clr_mutex_lock(&ls->mu);
    if (st == EUNLOCK || st == -EUNLOCK) {
        p->unlocking = false;
        clr_ls_complete_locked(ls, lk, 0, CLR_LOCK_IV, 0, NULL);
    } else if (st == ECANCEL || st == -ECANCEL) {
        clr_ls_complete_locked(ls, lk, -ECANCELED, lk->grmode, 0, NULL);
    } else if (st == 0) {
        /* the DLM already wrote the LVB into lk->lvb (sb_lvbptr) */
        clr_ls_complete_locked(ls, lk, 0, p->rqmode, flags, NULL);
    } else {
        clr_ls_complete_locked(ls, lk, st < 0 ? st : -st, lk->grmode, 0, NULL);
    }
    clr_mutex_unlock(&ls->mu);
}

static void dlm_bast(void *arg)
{
    struct clr_lock *lk = arg;

    clr_mutex_lock(&lk->ls->mu);
    clr_ls_bast_locked(lk->ls, lk, CLR_LOCK_EX);
    clr_mutex_unlock(&lk->ls->mu);
}

/* ---- internal locks: our slot and the probes of others' slots ---- */

/* Completion of an internal lock request or unlock (in dlm_dispatch, on
 * our thread, or on the opener's/closer's thread in ilk_wait). */
static void ilk_ast(void *arg)
{
    struct ilk *l = arg;

    l->status = l->lksb.sb_status;
    l->vnv = (l->lksb.sb_flags & DLM_SBF_VALNOTVALID) != 0;
    __atomic_store_n(&l->done, true, __ATOMIC_RELEASE);
}

static int ilk_lock(struct dlm_be *be, struct ilk *l, unsigned slot, uint32_t mode, uint32_t flags)
{
    char name[16];

    snprintf(name, sizeof(name), SLOT_RES_FMT, slot);
    l->done = false;
    l->lksb.sb_lvbptr = (char *)l->lvb;
    if (dlm_ls_lock(be->dls, mode, &l->lksb, flags, name, (unsigned int)strlen(name), 0, ilk_ast, l, NULL,
                    NULL))
        return errno ? -errno : -EIO;
    return 0;
}

static int ilk_unlock(struct dlm_be *be, struct ilk *l, uint32_t flags)
{
    l->done = false;
    l->lksb.sb_lvbptr = (char *)l->lvb;
    if (dlm_ls_unlock(be->dls, l->lksb.sb_lkid, flags, &l->lksb, l))
        return errno ? -errno : -EIO;
    return 0;
}

static bool is_unlock_status(int st)
{
    return st == EUNLOCK || st == -EUNLOCK;
}

/* Wait for @l's completion by dispatching the lockspace fd ourselves:
 * only while our thread does not run (open, close). */
static int ilk_wait(struct dlm_be *be, struct ilk *l, unsigned timeout_ms)
{
    uint64_t end = clr_lock_now_ms() + timeout_ms;

    while (!__atomic_load_n(&l->done, __ATOMIC_ACQUIRE)) {
        struct pollfd p = { .fd = be->fd, .events = POLLIN };

        if (clr_lock_now_ms() >= end)
            return -ETIMEDOUT;
        if (poll(&p, 1, 100) > 0)
            dlm_dispatch(be->fd);
    }
    if (is_unlock_status(l->status))
        return 0;
    return l->status > 0 ? -l->status : l->status;
}

static void slot_lvb_encode(uint8_t *lvb, uint32_t nodeid, uint32_t pid)
{
    memset(lvb, 0, CLR_LOCK_LVB_LEN);
    clr_wire_put32(lvb, SLOT_MAGIC);
    clr_wire_put32(lvb + 4, nodeid);
    clr_wire_put32(lvb + 8, pid);
}

/* Claim the first free slot: NOQUEUE EX on slot0000, slot0001, ... The
 * first grant is ours for life (a dead process's or node's slot is
 * granted only once the kernel DLM has released its locks).  Then EX->PW
 * with VALBLK writes {magic, nodeid, pid} for whoever probes it later. */
static int claim_slot(struct dlm_be *be, unsigned timeout_ms)
{
    uint64_t end = clr_lock_now_ms() + timeout_ms;

    for (unsigned s = 0; s < SLOT_MAX; s++) {
        uint64_t now = clr_lock_now_ms();
        int rc = ilk_lock(be, &be->slot, s, LKM_EXMODE, LKF_NOQUEUE | LKF_VALBLK);

        if (!rc)
            rc = ilk_wait(be, &be->slot, now < end ? (unsigned)(end - now) : 1);
        if (rc == -EAGAIN)
            continue;
        if (rc)
            return rc;
        be->slot_no = s;
        slot_lvb_encode(be->slot.lvb, be->nodeid, be->pid);
        rc = ilk_lock(be, &be->slot, s, LKM_PWMODE, LKF_CONVERT | LKF_VALBLK);
        if (!rc)
            rc = ilk_wait(be, &be->slot, timeout_ms);
        if (rc)
            return rc;
        be->slot_held = true;
        be->ls->our_slot = (int)s + 1;
        for (unsigned w = 0; w < SLOT_MAX; w++)
            if (w != s && ilk_lock(be, &be->watch[w], w, LKM_NLMODE, LKF_VALBLK))
                break; /* only the sweep's VALNOTVALID test needs them */
        return 0;
    }
    return -ENOSPC;
}

/* Let go of our slot so that nobody takes a clean leaver for a dead one:
 * zero its LVB (PW->NL with VALBLK), then unlock. */
static void release_slot(struct dlm_be *be)
{
    if (!be->slot_held)
        return;
    memset(be->slot.lvb, 0, sizeof(be->slot.lvb));
    if (!ilk_lock(be, &be->slot, be->slot_no, LKM_NLMODE, LKF_CONVERT | LKF_VALBLK))
        ilk_wait(be, &be->slot, 2000);
    if (!ilk_unlock(be, &be->slot, 0))
        ilk_wait(be, &be->slot, 2000);
    be->slot_held = false;
}

/* ---- membership: CPG for who is there, slot locks for who is dead ---- */

static void emit(struct dlm_be *be, enum clr_ls_event_type type, uint32_t nodeid, uint32_t pid, int slot)
{
    struct clr_ls_event ev = { .type = type, .nodeid = nodeid, .pid = pid, .slot = slot };

    if (nodeid || pid)
        ev.member = ((uint64_t)nodeid << 32) | pid;
    clr_mutex_lock(&be->ls->mu);
    clr_ls_event_locked(be->ls, &ev);
    clr_mutex_unlock(&be->ls->mu);
}

static struct peer *peer_find(struct dlm_be *be, uint32_t nodeid, uint32_t pid)
{
    for (int i = 0; i < be->npeers; i++)
        if (be->peers[i].nodeid == nodeid && be->peers[i].pid == pid)
            return &be->peers[i];
    return NULL;
}

/* Is slot @s (0-based) known to be held by someone alive, or already
 * being waited for? */
static bool slot_accounted(struct dlm_be *be, unsigned s)
{
    if (be->slot_held && s == be->slot_no)
        return true;
    for (int i = 0; i < be->npeers; i++)
        if (be->peers[i].slot == (int)s + 1)
            return true;
    for (int i = 0; i < be->nlost; i++)
        if (be->lost[i].slot == (int)s + 1)
            return true;
    return false;
}

/* Member (nodeid, pid) left the group for @reason (CPG_REASON_*); @slot
 * as it announced it (0: never). */
static void member_left(struct dlm_be *be, uint32_t nodeid, uint32_t pid, int slot, int reason)
{
    struct lost *l;

    /* a clean leave zeroed and released its slot itself */
    if (reason == CPG_REASON_LEAVE || be->nlost >= MAX_LOST)
        return;
    l = &be->lost[be->nlost++];
    *l = (struct lost){ .nodeid = nodeid, .pid = pid, .slot = slot, .since = clr_lock_now_ms() };
    /* its node left the membership: it may still be writing until the
     * DLM has recovered (and dlm_controld fenced it) */
    if (reason != CPG_REASON_PROCDOWN && slot)
        emit(be, CLR_LS_EV_MEMBER_LOST, nodeid, pid, slot);
}

/* After a membership change: DONE now, or once every lost member is
 * confirmed (DONE ends the caller's write hold). */
static void change_end(struct dlm_be *be)
{
    if (!be->nlost)
        emit(be, CLR_LS_EV_DONE, 0, 0, 0);
    else
        be->done_owed = true;
}

static void dlm_cpg_deliver(cpg_handle_t h, const struct cpg_name *g, uint32_t nodeid, uint32_t pid,
                            void *msg, size_t len)
{
    void *ctx = NULL;
    struct dlm_be *be;
    struct peer *p;
    const uint8_t *m = msg;

    (void)g;
    cpg_context_get(h, &ctx);
    be = ctx;
    if (len != ANNOUNCE_LEN || clr_wire_get32(m) != ANNOUNCE_MAGIC)
        return;
    p = peer_find(be, nodeid, pid);
    if (p)
        p->slot = (int)clr_wire_get32(m + 12);
}

static void dlm_cpg_confchg(cpg_handle_t h, const struct cpg_name *g, const struct cpg_address *members,
                            size_t nm, const struct cpg_address *left, size_t nl,
                            const struct cpg_address *joined, size_t nj)
{
    void *ctx = NULL;
    struct dlm_be *be;
    struct peer old[MAX_PEERS];
    int nold;

    (void)g;
    (void)joined;
    cpg_context_get(h, &ctx);
    be = ctx;
    nold = be->npeers;
    memcpy(old, be->peers, sizeof(old));
    be->npeers = 0;
    for (size_t i = 0; i < nm && be->npeers < MAX_PEERS; i++) {
        struct peer *p = &be->peers[be->npeers++];

        *p = (struct peer){ .nodeid = members[i].nodeid, .pid = members[i].pid };
        for (int j = 0; j < nold; j++)
            if (old[j].nodeid == p->nodeid && old[j].pid == p->pid)
                p->slot = old[j].slot;
        if (p->nodeid == be->nodeid && p->pid == be->pid)
            p->slot = be->ls->our_slot;
    }
    clr_mutex_lock(&be->ls->mu);
    be->nmembers = (int)nm;
    clr_mutex_unlock(&be->ls->mu);
    if (nj)
        be->announce = true; /* tell the newcomers our slot */
    if (!nl && !nj)
        return;
    emit(be, CLR_LS_EV_PREP, 0, 0, 0);
    for (size_t i = 0; i < nl; i++) {
        int slot = 0;

        for (int j = 0; j < nold; j++)
            if (old[j].nodeid == left[i].nodeid && old[j].pid == left[i].pid)
                slot = old[j].slot;
        member_left(be, left[i].nodeid, left[i].pid, slot, (int)left[i].reason);
    }
    change_end(be);
}

static cpg_model_v1_data_t dlm_cpg_model = {
    .model = CPG_MODEL_V1,
    .cpg_deliver_fn = dlm_cpg_deliver,
    .cpg_confchg_fn = dlm_cpg_confchg,
};

static void announce_work(struct dlm_be *be)
{
    uint8_t m[ANNOUNCE_LEN];
    struct iovec iov = { .iov_base = m, .iov_len = sizeof(m) };

    if (!be->announce || !be->cpg_ok)
        return;
    clr_wire_put32(m, ANNOUNCE_MAGIC);
    clr_wire_put32(m + 4, be->nodeid);
    clr_wire_put32(m + 8, be->pid);
    clr_wire_put32(m + 12, (uint32_t)be->ls->our_slot);
    if (cpg_mcast_joined(be->cpg, CPG_TYPE_AGREED, &iov, 1) == CS_OK)
        be->announce = false; /* else CS_ERR_TRY_AGAIN: next round */
}

static void lost_remove(struct dlm_be *be, int i)
{
    be->lost[i] = be->lost[--be->nlost];
}

/* One step for lost member @l; returns true when it is dealt with.
 * Known slot: a queued EX on its slot lock, granted by the kernel DLM
 * only once the member's locks are gone (its process closed its device,
 * or its node was recovered, after fencing if dlm_controld fences); the
 * grant is the confirmation: MEMBER_FAILED, then release.  Queued, not
 * polled: a restarted incarnation cannot claim the slot before us.
 * Unknown slot (it died before announcing): sweep the slots nobody is
 * known to hold with NOQUEUE; a granted one that a holder left behind
 * (our magic in its LVB, or VALNOTVALID: a PW holder's node died) is
 * dead; a busy one is swept again until its holder announces itself. */
static bool lost_step(struct dlm_be *be, struct lost *l)
{
    struct ilk *p = &l->probe;

    switch (l->phase) {
    case LOST_IDLE:
        if (l->slot) {
            if (ilk_lock(be, p, (unsigned)l->slot - 1, LKM_EXMODE, LKF_VALBLK) == 0)
                l->phase = LOST_WAIT;
            return false;
        }
        while (l->cursor < SLOT_MAX && slot_accounted(be, l->cursor))
            l->cursor++;
        if (l->cursor >= SLOT_MAX) {
            if (!l->busy)
                return true; /* nothing left behind: no takeover */
            l->cursor = 0;
            l->busy = false;
            l->next_sweep = clr_lock_now_ms() + SWEEP_PAUSE_MS;
            return false;
        }
        if (clr_lock_now_ms() < l->next_sweep)
            return false;
        if (ilk_lock(be, p, l->cursor, LKM_EXMODE, LKF_NOQUEUE | LKF_VALBLK) == 0)
            l->phase = LOST_WAIT;
        return false;
    case LOST_WAIT:
        if (!__atomic_load_n(&p->done, __ATOMIC_ACQUIRE))
            return false;
        if (p->status != 0) {
            /* -EAGAIN (sweep: busy) or a failed request: go on / retry */
            if (!l->slot) {
                l->busy = true;
                l->cursor++;
            }
            l->phase = LOST_IDLE;
            return false;
        }
        if (l->slot) {
            emit(be, CLR_LS_EV_MEMBER_FAILED, l->nodeid, l->pid, l->slot);
            l->found = true;
        } else if (p->vnv || clr_wire_get32(p->lvb) == SLOT_MAGIC) {
            uint32_t nodeid = p->vnv ? l->nodeid : clr_wire_get32(p->lvb + 4);
            uint32_t pid = p->vnv ? l->pid : clr_wire_get32(p->lvb + 8);

            emit(be, CLR_LS_EV_MEMBER_FAILED, nodeid, pid, (int)l->cursor + 1);
            l->found = true;
        }
        /* zero the LVB on the way out: not found dead again */
        memset(p->lvb, 0, sizeof(p->lvb));
        if (ilk_unlock(be, p, LKF_VALBLK) == 0)
            l->phase = LOST_UNLOCK;
        else
            return true;
        return false;
    case LOST_UNLOCK:
        if (!__atomic_load_n(&p->done, __ATOMIC_ACQUIRE))
            return false;
        if (l->found)
            return true;
        l->cursor++;
        l->phase = LOST_IDLE;
        return false;
    }
    return true;
}

static void lost_work(struct dlm_be *be)
{
    uint64_t now = clr_lock_now_ms();

    for (int i = 0; i < be->nlost;) {
        struct lost *l = &be->lost[i];

        if (!l->timeout_sent && now - l->since >= be->ls->cfg.fence_timeout_ms) {
            l->timeout_sent = true;
            emit(be, CLR_LS_EV_FENCE_TIMEOUT, l->nodeid, l->pid, l->slot);
        }
        bool fin = false;

        /* go on while a step ends without a request in flight (a busy
         * slot skipped, a probe released): no wake-up would come */
        for (int k = 0; k <= 2 * SLOT_MAX && !fin; k++) {
            enum lost_phase ph = l->phase;
            unsigned cur = l->cursor;

            fin = lost_step(be, l);
            if (l->phase != LOST_IDLE || (ph == LOST_IDLE && l->cursor == cur))
                break;
        }
        if (fin)
            lost_remove(be, i);
        else
            i++;
    }
    if (!be->nlost && be->done_owed) {
        be->done_owed = false;
        emit(be, CLR_LS_EV_DONE, 0, 0, 0);
    }
}

static int cpg_start(struct dlm_be *be, const char *name)
{
    unsigned int local = 0;
    size_t pl = strlen(DLM_GROUP_PREFIX), nl = strlen(name);

    if (pl + nl >= CPG_MAX_NAME_LENGTH)
        return -EINVAL;
    if (cpg_model_initialize(&be->cpg, CPG_MODEL_V1, (cpg_model_data_t *)&dlm_cpg_model, be) != CS_OK)
        return -ENOTCONN;
    cpg_context_set(be->cpg, be);
    cpg_local_get(be->cpg, &local);
    be->nodeid = local;
    memcpy(be->group.value, DLM_GROUP_PREFIX, pl);
    memcpy(be->group.value + pl, name, nl);
    be->group.length = (uint32_t)(pl + nl);
    be->cpg_init = true;
    return 0;
}

static int cpg_go(struct dlm_be *be)
{
    if (cpg_join(be->cpg, &be->group) != CS_OK)
        return -ENOTCONN;
    be->cpg_ok = true;
    be->announce = true;
    return 0;
}

static void inject_work(struct dlm_be *be)
{
    int n;
    __typeof__(be->inject) in;

    clr_mutex_lock(&be->ls->mu);
    n = be->ninject;
    memcpy(in, be->inject, sizeof(in));
    be->ninject = 0;
    clr_mutex_unlock(&be->ls->mu);
    if (!n)
        return;
    emit(be, CLR_LS_EV_PREP, 0, 0, 0);
    for (int i = 0; i < n; i++)
        member_left(be, in[i].nodeid, in[i].pid, in[i].slot, in[i].reason);
    change_end(be);
}

int clr_lock_dlm_test_left(struct clr_ls *ls, uint32_t nodeid, uint32_t pid, int slot, bool nodedown)
{
    struct dlm_be *be = dbe(ls);
    uint64_t one = 1;
    int rc = -ENOSPC;

    if (!be || ls->ops != &clr_lock_backend_dlm)
        return -EINVAL;
    clr_mutex_lock(&ls->mu);
    if (be->ninject < (int)(sizeof(be->inject) / sizeof(be->inject[0]))) {
        be->inject[be->ninject].nodeid = nodeid;
        be->inject[be->ninject].pid = pid;
        be->inject[be->ninject].slot = slot;
        be->inject[be->ninject].reason = nodedown ? CPG_REASON_NODEDOWN : CPG_REASON_PROCDOWN;
        be->ninject++;
        rc = 0;
    }
    clr_mutex_unlock(&ls->mu);
    if (write(be->wake_fd, &one, sizeof(one)) < 0) {
        /* the poll timeout wakes it anyway */
    }
    return rc;
}

static void *dlm_thread(void *arg)
{
    struct dlm_be *be = arg;

    for (;;) {
        struct pollfd pfd[3] = {
            { .fd = be->wake_fd, .events = POLLIN },
            { .fd = be->fd, .events = POLLIN },
            { .fd = -1, .events = POLLIN },
        };
        bool stop;

        clr_mutex_lock(&be->ls->mu);
        stop = be->stop;
        clr_mutex_unlock(&be->ls->mu);
        if (stop)
            break;
        if (be->cpg_ok)
            cpg_fd_get(be->cpg, &pfd[2].fd);
        if (poll(pfd, 3, be->nlost ? TICK_MS : 200) > 0) {
            if (pfd[0].revents) {
                uint64_t v;

                if (read(be->wake_fd, &v, sizeof(v)) < 0) {
                    /* nothing to clear */
                }
            }
            if (pfd[1].revents)
                dlm_dispatch(be->fd);
            if (pfd[2].revents && cpg_dispatch(be->cpg, CS_DISPATCH_ALL) != CS_OK) {
                /* corosync went away: no more membership news */
                be->cpg_ok = false;
            }
        }
        inject_work(be);
        announce_work(be);
        lost_work(be);
    }
    return NULL;
}

static void be_destroy(struct dlm_be *be)
{
    uint64_t one = 1;

    if (be->running) {
        clr_mutex_lock(&be->ls->mu);
        be->stop = true;
        clr_mutex_unlock(&be->ls->mu);
        if (write(be->wake_fd, &one, sizeof(one)) < 0) {
            /* the poll timeout wakes it anyway */
        }
        pthread_join(be->thread, NULL);
    }
    if (be->dls)
        release_slot(be);
    if (be->cpg_ok)
        cpg_leave(be->cpg, &be->group);
    if (be->cpg_init)
        cpg_finalize(be->cpg);
    if (be->dls) {
        /* closes our device first (our locks go), then drops our
         * reference; the lockspace goes with the last one */
        if (be->created)
            dlm_release_lockspace(be->ls->name, be->dls, 0);
        else
            dlm_close_lockspace(be->dls);
    }
    if (be->wake_fd >= 0)
        close(be->wake_fd);
    be->ls->be = NULL;
    free(be);
}

static int dlm_backend_open(struct clr_ls *ls, const struct clr_ls_config *cfg)
{
    struct dlm_be *be = calloc(1, sizeof(*be));
    bool use_cpg = !(cfg->backend_arg && strcmp((const char *)cfg->backend_arg, "no-cpg") == 0);
    int rc;

    if (!be)
        return -ENOMEM;
    be->ls = ls;
    be->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    be->pid = (uint32_t)getpid();
    ls->be = be;
    /* Not NEWEXCL: a second process of this node joining at the same
     * moment would find the lockspace half made (no device node yet).
     * Each opener holds one reference, dropped at release. */
    errno = 0;
    be->dls = dlm_new_lockspace(cfg->name, 0600, 0);
    if (be->dls) {
        be->created = true;
    } else if (errno == ENOENT) {
        /* made in the kernel, but its device node (devtmpfs, made
         * asynchronously) was not there yet when libdlm opened it: seen
         * in UML under load.  Open it once it appears; ours to release. */
        uint64_t end = clr_lock_now_ms() + cfg->join_timeout_ms;

        while (!be->dls && errno == ENOENT && clr_lock_now_ms() < end) {
            usleep(100000);
            errno = 0;
            be->dls = dlm_open_lockspace(cfg->name);
        }
        be->created = be->dls != NULL;
    } else {
        errno = 0;
        be->dls = dlm_open_lockspace(cfg->name);
    }
    if (!be->dls) {
        /* libdlm leaves errno 0 when there is no kernel DLM at all */
        rc = errno ? -errno : -ENOTCONN;
        be_destroy(be);
        return rc;
    }
    be->fd = dlm_ls_get_fd(be->dls);
    if (be->fd < 0) {
        be_destroy(be);
        return -ENOTCONN;
    }
    if (use_cpg) {
        rc = cpg_start(be, cfg->name);
        if (rc) {
            be_destroy(be);
            return rc;
        }
    }
    rc = claim_slot(be, cfg->join_timeout_ms);
    if (!rc && use_cpg)
        rc = cpg_go(be);
    if (rc) {
        be_destroy(be);
        return rc;
    }
    ls->member_id = ((uint64_t)be->nodeid << 32) | be->pid;
    if (pthread_create(&be->thread, NULL, dlm_thread, be) != 0) {
        be_destroy(be);
        return -EAGAIN;
    }
    be->running = true;
    return 0;
}

static void dlm_backend_close(struct clr_ls *ls)
{
    struct dlm_be *be = dbe(ls);

    if (!be)
        return;
    /* releasing (or closing) the lockspace drops our locks in the DLM */
    be_destroy(be);
}

static int dlm_backend_request(struct clr_ls *ls, struct clr_lock *lk, int mode, unsigned flags)
{
    struct dlm_lock_priv *p = priv(lk);
    uint32_t f = 0;
    int rc;

    if (!p)
        return -ENOMEM;
    if (flags & CLR_LOCK_F_NOQUEUE)
        f |= LKF_NOQUEUE;
    if (flags & CLR_LOCK_F_VALBLK)
        f |= LKF_VALBLK;
    if (lk->grmode != CLR_LOCK_IV)
        f |= LKF_CONVERT;
    p->rqmode = mode;
    p->lksb.sb_lvbptr = (char *)lk->lvb;
    rc = dlm_ls_lock(dbe(ls)->dls, dlm_modes[mode], &p->lksb, f, lk->name, (unsigned int)lk->namelen, 0,
                     dlm_ast, lk, dlm_bast, NULL);
    return rc ? (errno ? -errno : -EIO) : 0;
}

static int dlm_backend_unlock(struct clr_ls *ls, struct clr_lock *lk, unsigned flags)
{
    struct dlm_lock_priv *p = priv(lk);
    int rc;

    if (!p)
        return -ENOMEM;
    p->unlocking = true;
    p->lksb.sb_lvbptr = (char *)lk->lvb;
    rc = dlm_ls_unlock(dbe(ls)->dls, p->lksb.sb_lkid, (flags & CLR_LOCK_F_VALBLK) ? LKF_VALBLK : 0, &p->lksb,
                       lk);
    return rc ? (errno ? -errno : -EIO) : 0;
}

static int dlm_backend_cancel(struct clr_ls *ls, struct clr_lock *lk)
{
    struct dlm_lock_priv *p = priv(lk);
    int rc;

    if (!p)
        return -ENOMEM;
    rc = dlm_ls_unlock(dbe(ls)->dls, p->lksb.sb_lkid, LKF_CANCEL, &p->lksb, lk);
    /* -EBUSY: already granted, the grant's ast tells the caller */
    return rc && errno != EBUSY ? (errno ? -errno : -EIO) : 0;
}

static int dlm_backend_member_count(struct clr_ls *ls)
{
    struct dlm_be *be = dbe(ls);
    int n;

    clr_mutex_lock(&ls->mu);
    n = be && be->cpg_ok ? be->nmembers : 0;
    clr_mutex_unlock(&ls->mu);
    return n;
}

const struct clr_lock_backend_ops clr_lock_backend_dlm = {
    .name = "dlm",
    .open = dlm_backend_open,
    .close = dlm_backend_close,
    .request = dlm_backend_request,
    .unlock = dlm_backend_unlock,
    .cancel = dlm_backend_cancel,
    .member_count = dlm_backend_member_count,
};
