/*
 * The lock table: DLM grant rules as a pure state machine.
 *
 * Grant rules follow the DLM (fs/dlm/lock.c _can_be_granted):
 *  - a request is compatible if its mode is compatible with the granted
 *    mode of every granted lock and of every converting lock;
 *  - a conversion is granted at once if compatible; once queued, the
 *    conversion queue is served in order;
 *  - a new request is granted at once only if both queues are empty; once
 *    queued, only the head of the wait queue, and only while no conversion
 *    waits (conversions go ahead of new requests);
 *  - two conversions that block each other: the later one fails -EDEADLK.
 * BASTs follow send_bast_queue: a holder whose granted mode blocks a waiter
 * gets the waiter's mode, at most once per higher mode until re-granted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lock/lock_table.h"
#include "lock/lock_wire.h"

#define LT_BUCKETS 1024

struct lt_link {
    struct lt_link *prev, *next;
};

struct lt_res;

struct lt_lock {
    struct lt_link qlink; /* in one of the resource queues */
    struct lt_lock *hnext;
    struct lt_res *res;
    uint64_t owner, lkid;
    int grmode, rqmode, highbast;
    enum clr_lt_queue queue;
    unsigned flags; /* flags of the pending request */
    bool lvb_set;   /* lvb below is to be written at grant */
    uint8_t lvb[CLR_LOCK_LVB_LEN];
};

struct lt_res {
    struct lt_link order; /* all resources, creation order */
    struct lt_res *hnext;
    struct lt_link q[3]; /* granted, convert, wait */
    uint8_t namelen;
    char name[CLR_LOCK_NAME_MAX + 1];
    bool lvb_valid;
    uint8_t lvb[CLR_LOCK_LVB_LEN];
};

struct clr_lt {
    struct lt_res *rhash[LT_BUCKETS];
    struct lt_lock *lhash[LT_BUCKETS];
    struct lt_link resources;
    unsigned nres, nlocks;
};

#define container_of(p, type, member) ((type *)(void *)((char *)(p)-offsetof(type, member)))

static void link_init(struct lt_link *h)
{
    h->prev = h->next = h;
}

static bool link_empty(const struct lt_link *h)
{
    return h->next == h;
}

static void link_add_tail(struct lt_link *h, struct lt_link *n)
{
    n->prev = h->prev;
    n->next = h;
    h->prev->next = n;
    h->prev = n;
}

static void link_del(struct lt_link *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->prev = n->next = n;
}

#define LOCK_OF(l) container_of(l, struct lt_lock, qlink)
#define RES_OF(l)  container_of(l, struct lt_res, order)

/* DLM compatibility matrix, rows/columns NL..EX. */
static const bool compat[CLR_LOCK_NMODES][CLR_LOCK_NMODES] = {
    /*          NL CR CW PR PW EX */
    /* NL */ { 1, 1, 1, 1, 1, 1 },
    /* CR */ { 1, 1, 1, 1, 1, 0 },
    /* CW */ { 1, 1, 1, 0, 0, 0 },
    /* PR */ { 1, 1, 0, 1, 0, 0 },
    /* PW */ { 1, 1, 0, 0, 0, 0 },
    /* EX */ { 1, 0, 0, 0, 0, 0 },
};

/*
 * DLM dlm_lvb_operations: what happens to the LVB when a lock granted in
 * mode row (IV first) is granted mode column.  1 = resource to lock (read),
 * 0 = lock to resource (write), -1 = nothing.
 */
static const int lvb_ops[CLR_LOCK_NMODES + 1][CLR_LOCK_NMODES] = {
    /*          NL  CR  CW  PR  PW  EX */
    /* IV */ { 1, 1, 1, 1, 1, 1 },
    /* NL */ { 1, 1, 1, 1, 1, 1 },
    /* CR */ { -1, 1, 1, 1, 1, 1 },
    /* CW */ { -1, -1, 1, 1, 1, 1 },
    /* PR */ { -1, -1, -1, 1, 1, 1 },
    /* PW */ { 0, 0, 0, 0, 0, 1 },
    /* EX */ { 0, 0, 0, 0, 0, 0 },
};

static bool mode_ok(int mode)
{
    return mode >= CLR_LOCK_NL && mode <= CLR_LOCK_EX;
}

bool clr_lock_modes_compat(int a, int b)
{
    if (a == CLR_LOCK_IV || b == CLR_LOCK_IV)
        return true;
    if (!mode_ok(a) || !mode_ok(b))
        return false;
    return compat[a][b];
}

static const char *const mode_names[CLR_LOCK_NMODES] = { "NL", "CR", "CW", "PR", "PW", "EX" };

const char *clr_lock_mode_name(int mode)
{
    if (mode == CLR_LOCK_IV)
        return "IV";
    return mode_ok(mode) ? mode_names[mode] : "?";
}

int clr_lock_mode_parse(const char *s)
{
    for (int m = 0; m < CLR_LOCK_NMODES; m++)
        if (strcmp(s, mode_names[m]) == 0)
            return m;
    return -EINVAL;
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const uint8_t *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static unsigned name_bucket(const char *name, size_t len)
{
    return (unsigned)(fnv(name, len, 0xcbf29ce484222325ULL) % LT_BUCKETS);
}

static unsigned lock_bucket(uint64_t owner, uint64_t lkid)
{
    uint8_t k[16];

    clr_wire_put64(k, owner);
    clr_wire_put64(k + 8, lkid);
    return (unsigned)(fnv(k, sizeof(k), 0xcbf29ce484222325ULL) % LT_BUCKETS);
}

struct clr_lt *clr_lt_new(void)
{
    struct clr_lt *lt = calloc(1, sizeof(*lt));

    if (lt)
        link_init(&lt->resources);
    return lt;
}

static struct lt_res *res_find(const struct clr_lt *lt, const char *name, size_t len)
{
    for (struct lt_res *r = lt->rhash[name_bucket(name, len)]; r; r = r->hnext)
        if (r->namelen == len && memcmp(r->name, name, len) == 0)
            return r;
    return NULL;
}

static struct lt_res *res_get(struct clr_lt *lt, const char *name, size_t len)
{
    struct lt_res *r = res_find(lt, name, len);
    unsigned b;

    if (r)
        return r;
    r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    memcpy(r->name, name, len);
    r->namelen = (uint8_t)len;
    r->lvb_valid = true;
    for (int i = 0; i < 3; i++)
        link_init(&r->q[i]);
    b = name_bucket(name, len);
    r->hnext = lt->rhash[b];
    lt->rhash[b] = r;
    link_add_tail(&lt->resources, &r->order);
    lt->nres++;
    return r;
}

static bool lvb_zero(const uint8_t *lvb)
{
    for (int i = 0; i < CLR_LOCK_LVB_LEN; i++)
        if (lvb[i])
            return false;
    return true;
}

/* A resource with no locks goes away, unless its LVB still says something
 * (a value, or "not valid" after a holder died): the next holder needs it. */
static void res_put(struct clr_lt *lt, struct lt_res *r)
{
    struct lt_res **pp;

    for (int i = 0; i < 3; i++)
        if (!link_empty(&r->q[i]))
            return;
    if (!r->lvb_valid || !lvb_zero(r->lvb))
        return;
    for (pp = &lt->rhash[name_bucket(r->name, r->namelen)]; *pp; pp = &(*pp)->hnext) {
        if (*pp == r) {
            *pp = r->hnext;
            break;
        }
    }
    link_del(&r->order);
    lt->nres--;
    free(r);
}

static struct lt_lock *lock_find(const struct clr_lt *lt, uint64_t owner, uint64_t lkid)
{
    for (struct lt_lock *l = lt->lhash[lock_bucket(owner, lkid)]; l; l = l->hnext)
        if (l->owner == owner && l->lkid == lkid)
            return l;
    return NULL;
}

static void lock_unhash(struct clr_lt *lt, struct lt_lock *l)
{
    struct lt_lock **pp;

    for (pp = &lt->lhash[lock_bucket(l->owner, l->lkid)]; *pp; pp = &(*pp)->hnext) {
        if (*pp == l) {
            *pp = l->hnext;
            break;
        }
    }
    lt->nlocks--;
}

static void lock_destroy(struct clr_lt *lt, struct lt_lock *l)
{
    link_del(&l->qlink);
    lock_unhash(lt, l);
    free(l);
}

static void emit_simple(clr_lt_emit_fn emit, void *arg, enum clr_lt_effect_type type, uint64_t owner,
                        uint64_t lkid, int mode, int status)
{
    struct clr_lt_effect e;

    if (!emit)
        return;
    memset(&e, 0, sizeof(e));
    e.type = type;
    e.owner = owner;
    e.lkid = lkid;
    e.mode = mode;
    e.status = status;
    emit(arg, &e);
}

static void move_to(struct lt_lock *l, enum clr_lt_queue q)
{
    link_del(&l->qlink);
    link_add_tail(&l->res->q[q], &l->qlink);
    l->queue = q;
}

/* Is @l's requested mode compatible with every other lock's granted mode? */
static bool compat_with_holders(const struct lt_lock *l)
{
    const struct lt_res *r = l->res;

    for (int q = CLR_LT_Q_GRANTED; q <= CLR_LT_Q_CONVERT; q++) {
        for (const struct lt_link *p = r->q[q].next; p != &r->q[q]; p = p->next) {
            const struct lt_lock *o = LOCK_OF(p);

            if (o != l && !compat[o->grmode][l->rqmode])
                return false;
        }
    }
    return true;
}

/* Grant @l its requested mode and apply the LVB rule. */
static void grant(struct lt_lock *l, clr_lt_emit_fn emit, void *arg)
{
    struct lt_res *r = l->res;
    struct clr_lt_effect e;
    int op = lvb_ops[l->grmode + 1][l->rqmode];

    memset(&e, 0, sizeof(e));
    if (l->flags & CLR_LOCK_F_VALBLK) {
        if (op == 1) {
            memcpy(e.lvb, r->lvb, CLR_LOCK_LVB_LEN);
            e.has_lvb = true;
        } else if (op == 0 && l->lvb_set) {
            memcpy(r->lvb, l->lvb, CLR_LOCK_LVB_LEN);
            r->lvb_valid = true;
        }
    }
    if (!r->lvb_valid)
        e.sb_flags |= CLR_LOCK_SB_VALNOTVALID;
    l->grmode = l->rqmode;
    l->rqmode = CLR_LOCK_IV;
    l->highbast = CLR_LOCK_NL;
    l->lvb_set = false;
    move_to(l, CLR_LT_Q_GRANTED);
    e.type = CLR_LT_GRANTED;
    e.owner = l->owner;
    e.lkid = l->lkid;
    e.mode = l->grmode;
    if (emit)
        emit(arg, &e);
}

/* Serve the queues after any change: conversions in order first, then new
 * requests in order, each stopping at the first that cannot be granted. */
static void grant_pending(struct lt_res *r, clr_lt_emit_fn emit, void *arg)
{
    while (!link_empty(&r->q[CLR_LT_Q_CONVERT])) {
        struct lt_lock *h = LOCK_OF(r->q[CLR_LT_Q_CONVERT].next);

        if (!compat_with_holders(h))
            break;
        grant(h, emit, arg);
    }
    if (!link_empty(&r->q[CLR_LT_Q_CONVERT]))
        return;
    while (!link_empty(&r->q[CLR_LT_Q_WAIT])) {
        struct lt_lock *h = LOCK_OF(r->q[CLR_LT_Q_WAIT].next);

        if (!compat_with_holders(h))
            break;
        grant(h, emit, arg);
    }
}

/* BAST every holder whose granted mode blocks a waiter, once per mode. */
static void send_basts(struct lt_res *r, clr_lt_emit_fn emit, void *arg)
{
    for (int wq = CLR_LT_Q_CONVERT; wq <= CLR_LT_Q_WAIT; wq++) {
        for (struct lt_link *w = r->q[wq].next; w != &r->q[wq]; w = w->next) {
            struct lt_lock *wl = LOCK_OF(w);

            for (int q = CLR_LT_Q_GRANTED; q <= CLR_LT_Q_CONVERT; q++) {
                for (struct lt_link *p = r->q[q].next; p != &r->q[q]; p = p->next) {
                    struct lt_lock *h = LOCK_OF(p);

                    if (h == wl || compat[h->grmode][wl->rqmode] || h->highbast >= wl->rqmode)
                        continue;
                    h->highbast = wl->rqmode;
                    emit_simple(emit, arg, CLR_LT_BAST, h->owner, h->lkid, wl->rqmode, 0);
                }
            }
        }
    }
}

static void settle(struct clr_lt *lt, struct lt_res *r, clr_lt_emit_fn emit, void *arg)
{
    grant_pending(r, emit, arg);
    send_basts(r, emit, arg);
    res_put(lt, r);
}

int clr_lt_request(struct clr_lt *lt, uint64_t owner, uint64_t lkid, const char *name, size_t namelen,
                   int mode, unsigned flags, clr_lt_emit_fn emit, void *arg)
{
    struct lt_res *r;
    struct lt_lock *l;
    unsigned b;

    if (!mode_ok(mode) || namelen == 0 || namelen > CLR_LOCK_NAME_MAX) {
        emit_simple(emit, arg, CLR_LT_FAILED, owner, lkid, CLR_LOCK_IV, -EINVAL);
        return -EINVAL;
    }
    if (lock_find(lt, owner, lkid)) {
        emit_simple(emit, arg, CLR_LT_FAILED, owner, lkid, CLR_LOCK_IV, -EEXIST);
        return -EEXIST;
    }
    r = res_get(lt, name, namelen);
    l = calloc(1, sizeof(*l));
    if (!r || !l) {
        free(l);
        if (r)
            res_put(lt, r);
        emit_simple(emit, arg, CLR_LT_FAILED, owner, lkid, CLR_LOCK_IV, -ENOMEM);
        return -ENOMEM;
    }
    l->res = r;
    l->owner = owner;
    l->lkid = lkid;
    l->grmode = CLR_LOCK_IV;
    l->rqmode = mode;
    l->flags = flags;
    link_init(&l->qlink);
    b = lock_bucket(owner, lkid);
    l->hnext = lt->lhash[b];
    lt->lhash[b] = l;
    lt->nlocks++;

    if (link_empty(&r->q[CLR_LT_Q_CONVERT]) && link_empty(&r->q[CLR_LT_Q_WAIT]) && compat_with_holders(l)) {
        grant(l, emit, arg);
    } else if (flags & CLR_LOCK_F_NOQUEUE) {
        lock_destroy(lt, l);
        emit_simple(emit, arg, CLR_LT_FAILED, owner, lkid, CLR_LOCK_IV, -EAGAIN);
        res_put(lt, r);
        return 0;
    } else {
        move_to(l, CLR_LT_Q_WAIT);
    }
    settle(lt, r, emit, arg);
    return 0;
}

/* Conversion deadlock: another queued conversion wants a mode our granted
 * mode blocks while we want a mode its granted mode blocks. */
static bool conversion_deadlock(const struct lt_lock *l)
{
    const struct lt_res *r = l->res;

    for (const struct lt_link *p = r->q[CLR_LT_Q_CONVERT].next; p != &r->q[CLR_LT_Q_CONVERT]; p = p->next) {
        const struct lt_lock *o = LOCK_OF(p);

        if (o != l && !compat[l->grmode][o->rqmode] && !compat[o->grmode][l->rqmode])
            return true;
    }
    return false;
}

int clr_lt_convert(struct clr_lt *lt, uint64_t owner, uint64_t lkid, int mode, unsigned flags,
                   const uint8_t *lvb, clr_lt_emit_fn emit, void *arg)
{
    struct lt_lock *l = lock_find(lt, owner, lkid);
    int err = 0;

    if (!l)
        err = -ENOENT;
    else if (!mode_ok(mode))
        err = -EINVAL;
    else if (l->queue != CLR_LT_Q_GRANTED)
        err = -EBUSY;
    if (err) {
        emit_simple(emit, arg, CLR_LT_FAILED, owner, lkid, l ? l->grmode : CLR_LOCK_IV, err);
        return err;
    }
    l->rqmode = mode;
    l->flags = flags;
    l->lvb_set = lvb != NULL && (flags & CLR_LOCK_F_VALBLK);
    if (l->lvb_set)
        memcpy(l->lvb, lvb, CLR_LOCK_LVB_LEN);

    if (compat_with_holders(l)) {
        grant(l, emit, arg);
    } else if (flags & CLR_LOCK_F_NOQUEUE) {
        l->rqmode = CLR_LOCK_IV;
        l->lvb_set = false;
        emit_simple(emit, arg, CLR_LT_FAILED, owner, lkid, l->grmode, -EAGAIN);
        return 0;
    } else if (conversion_deadlock(l)) {
        l->rqmode = CLR_LOCK_IV;
        l->lvb_set = false;
        emit_simple(emit, arg, CLR_LT_FAILED, owner, lkid, l->grmode, -EDEADLK);
        return 0;
    } else {
        move_to(l, CLR_LT_Q_CONVERT);
    }
    settle(lt, l->res, emit, arg);
    return 0;
}

int clr_lt_unlock(struct clr_lt *lt, uint64_t owner, uint64_t lkid, unsigned flags, const uint8_t *lvb,
                  clr_lt_emit_fn emit, void *arg)
{
    struct lt_lock *l = lock_find(lt, owner, lkid);
    struct lt_res *r;
    int err = 0;

    if (!l)
        err = -ENOENT;
    else if (l->queue != CLR_LT_Q_GRANTED)
        err = -EBUSY;
    if (err) {
        emit_simple(emit, arg, CLR_LT_FAILED, owner, lkid, l ? l->grmode : CLR_LOCK_IV, err);
        return err;
    }
    r = l->res;
    if ((flags & CLR_LOCK_F_VALBLK) && lvb && l->grmode >= CLR_LOCK_PW) {
        memcpy(r->lvb, lvb, CLR_LOCK_LVB_LEN);
        r->lvb_valid = true;
    }
    lock_destroy(lt, l);
    emit_simple(emit, arg, CLR_LT_UNLOCKED, owner, lkid, CLR_LOCK_IV, 0);
    settle(lt, r, emit, arg);
    return 0;
}

int clr_lt_cancel(struct clr_lt *lt, uint64_t owner, uint64_t lkid, clr_lt_emit_fn emit, void *arg)
{
    struct lt_lock *l = lock_find(lt, owner, lkid);
    struct lt_res *r;

    if (!l)
        return -ENOENT;
    if (l->queue == CLR_LT_Q_GRANTED)
        return -EBUSY;
    r = l->res;
    if (l->queue == CLR_LT_Q_WAIT) {
        lock_destroy(lt, l);
        emit_simple(emit, arg, CLR_LT_CANCELED, owner, lkid, CLR_LOCK_IV, -ECANCELED);
    } else {
        l->rqmode = CLR_LOCK_IV;
        l->lvb_set = false;
        move_to(l, CLR_LT_Q_GRANTED);
        emit_simple(emit, arg, CLR_LT_CANCELED, owner, lkid, l->grmode, -ECANCELED);
    }
    settle(lt, r, emit, arg);
    return 0;
}

int clr_lt_remove_owner(struct clr_lt *lt, uint64_t owner, bool invalidate, clr_lt_emit_fn emit, void *arg)
{
    struct lt_link *p, *pn;
    int removed = 0;

    /* First drop every lock, then serve the touched resources in creation
     * order, so the effects do not depend on hash order. */
    for (p = lt->resources.next; p != &lt->resources; p = p->next) {
        struct lt_res *r = RES_OF(p);

        for (int q = 0; q < 3; q++) {
            struct lt_link *x, *xn;

            for (x = r->q[q].next; x != &r->q[q]; x = xn) {
                struct lt_lock *l = LOCK_OF(x);

                xn = x->next;
                if (l->owner != owner)
                    continue;
                if (invalidate && l->grmode >= CLR_LOCK_PW)
                    r->lvb_valid = false;
                lock_destroy(lt, l);
                removed++;
            }
        }
    }
    for (p = lt->resources.next; p != &lt->resources; p = pn) {
        pn = p->next;
        settle(lt, RES_OF(p), emit, arg);
    }
    return removed;
}

int clr_lt_lock_info(const struct clr_lt *lt, uint64_t owner, uint64_t lkid, int *grmode, int *rqmode,
                     enum clr_lt_queue *queue)
{
    const struct lt_lock *l = lock_find(lt, owner, lkid);

    if (!l)
        return -ENOENT;
    if (grmode)
        *grmode = l->grmode;
    if (rqmode)
        *rqmode = l->rqmode;
    if (queue)
        *queue = l->queue;
    return 0;
}

int clr_lt_res_lvb(const struct clr_lt *lt, const char *name, uint8_t lvb[CLR_LOCK_LVB_LEN], bool *valid)
{
    const struct lt_res *r = res_find(lt, name, strlen(name));

    if (!r)
        return -ENOENT;
    if (lvb)
        memcpy(lvb, r->lvb, CLR_LOCK_LVB_LEN);
    if (valid)
        *valid = r->lvb_valid;
    return 0;
}

unsigned clr_lt_owner_locks(const struct clr_lt *lt, uint64_t owner)
{
    unsigned n = 0;

    for (int b = 0; b < LT_BUCKETS; b++)
        for (const struct lt_lock *l = lt->lhash[b]; l; l = l->hnext)
            n += l->owner == owner;
    return n;
}

void clr_lt_counts(const struct clr_lt *lt, unsigned *nres, unsigned *nlocks)
{
    if (nres)
        *nres = lt->nres;
    if (nlocks)
        *nlocks = lt->nlocks;
}

static void clear_all(struct clr_lt *lt)
{
    struct lt_link *p, *pn;

    for (p = lt->resources.next; p != &lt->resources; p = pn) {
        struct lt_res *r = RES_OF(p);

        pn = p->next;
        for (int q = 0; q < 3; q++)
            while (!link_empty(&r->q[q]))
                lock_destroy(lt, LOCK_OF(r->q[q].next));
        link_del(&r->order);
        free(r);
    }
    memset(lt->rhash, 0, sizeof(lt->rhash));
    memset(lt->lhash, 0, sizeof(lt->lhash));
    lt->nres = 0;
    lt->nlocks = 0;
}

void clr_lt_free(struct clr_lt *lt)
{
    if (!lt)
        return;
    clear_all(lt);
    free(lt);
}

/*
 * Encoding: "CLT1", le32 nres, then per resource: u8 namelen, name,
 * lvb[32], u8 valid, le32 nlocks, then per lock (granted, convert, wait
 * queue order): le64 owner, le64 lkid, i8 grmode, i8 rqmode, i8 highbast,
 * u8 queue, le32 flags, u8 lvb_set, lvb[32].
 */
#define LT_ENC_MAGIC     "CLT1"
#define LT_ENC_RES_FIXED (1 + CLR_LOCK_LVB_LEN + 1 + 4)
#define LT_ENC_LOCK      (8 + 8 + 4 + 4 + 1 + CLR_LOCK_LVB_LEN)

size_t clr_lt_encoded_size(const struct clr_lt *lt)
{
    size_t n = 8;

    for (const struct lt_link *p = lt->resources.next; p != &lt->resources; p = p->next)
        n += LT_ENC_RES_FIXED + RES_OF(p)->namelen;
    return n + (size_t)lt->nlocks * LT_ENC_LOCK;
}

long clr_lt_encode(const struct clr_lt *lt, uint8_t *buf, size_t len)
{
    size_t need = clr_lt_encoded_size(lt);
    uint8_t *p = buf;

    if (len < need)
        return -ENOSPC;
    memcpy(p, LT_ENC_MAGIC, 4);
    clr_wire_put32(p + 4, lt->nres);
    p += 8;
    for (const struct lt_link *rp = lt->resources.next; rp != &lt->resources; rp = rp->next) {
        const struct lt_res *r = RES_OF(rp);
        uint8_t *count;
        uint32_t n = 0;

        *p++ = r->namelen;
        memcpy(p, r->name, r->namelen);
        p += r->namelen;
        memcpy(p, r->lvb, CLR_LOCK_LVB_LEN);
        p += CLR_LOCK_LVB_LEN;
        *p++ = r->lvb_valid;
        count = p;
        p += 4;
        for (int q = 0; q < 3; q++) {
            for (const struct lt_link *x = r->q[q].next; x != &r->q[q]; x = x->next) {
                const struct lt_lock *l = LOCK_OF(x);

                clr_wire_put64(p, l->owner);
                clr_wire_put64(p + 8, l->lkid);
                p[16] = (uint8_t)(int8_t)l->grmode;
                p[17] = (uint8_t)(int8_t)l->rqmode;
                p[18] = (uint8_t)(int8_t)l->highbast;
                p[19] = (uint8_t)l->queue;
                clr_wire_put32(p + 20, l->flags);
                p[24] = l->lvb_set;
                memcpy(p + 25, l->lvb, CLR_LOCK_LVB_LEN);
                p += LT_ENC_LOCK;
                n++;
            }
        }
        clr_wire_put32(count, n);
    }
    return (long)(p - buf);
}

/* Granted locks have a granted mode only, waiting ones a requested mode
 * only, converting ones both. */
static bool queue_modes_ok(unsigned q, int gr, int rq)
{
    switch (q) {
    case CLR_LT_Q_GRANTED:
        return mode_ok(gr) && rq == CLR_LOCK_IV;
    case CLR_LT_Q_CONVERT:
        return mode_ok(gr) && mode_ok(rq);
    case CLR_LT_Q_WAIT:
        return gr == CLR_LOCK_IV && mode_ok(rq);
    default:
        return false;
    }
}

int clr_lt_decode(struct clr_lt *lt, const uint8_t *buf, size_t len)
{
    const uint8_t *p = buf, *end = buf + len;
    uint32_t nres;

    clear_all(lt);
    if (len < 8 || memcmp(p, LT_ENC_MAGIC, 4) != 0)
        return -EBADMSG;
    nres = clr_wire_get32(p + 4);
    p += 8;
    for (uint32_t i = 0; i < nres; i++) {
        struct lt_res *r;
        uint32_t nl;
        uint8_t nlen;

        if (end - p < 1)
            goto bad;
        nlen = *p++;
        if (nlen == 0 || nlen > CLR_LOCK_NAME_MAX || (size_t)(end - p) < (size_t)nlen + CLR_LOCK_LVB_LEN + 5)
            goto bad;
        if (res_find(lt, (const char *)p, nlen))
            goto bad;
        r = res_get(lt, (const char *)p, nlen);
        if (!r)
            goto bad;
        p += nlen;
        memcpy(r->lvb, p, CLR_LOCK_LVB_LEN);
        p += CLR_LOCK_LVB_LEN;
        r->lvb_valid = *p++ != 0;
        nl = clr_wire_get32(p);
        p += 4;
        for (uint32_t j = 0; j < nl; j++) {
            struct lt_lock *l;
            unsigned b;

            if ((size_t)(end - p) < LT_ENC_LOCK)
                goto bad;
            l = calloc(1, sizeof(*l));
            if (!l)
                goto bad;
            l->res = r;
            l->owner = clr_wire_get64(p);
            l->lkid = clr_wire_get64(p + 8);
            l->grmode = (int8_t)p[16];
            l->rqmode = (int8_t)p[17];
            l->highbast = (int8_t)p[18];
            l->queue = (enum clr_lt_queue)p[19];
            l->flags = clr_wire_get32(p + 20);
            l->lvb_set = p[24] != 0;
            memcpy(l->lvb, p + 25, CLR_LOCK_LVB_LEN);
            p += LT_ENC_LOCK;
            link_init(&l->qlink);
            if (!queue_modes_ok(p[-LT_ENC_LOCK + 19], l->grmode, l->rqmode) || !mode_ok(l->highbast) ||
                lock_find(lt, l->owner, l->lkid)) {
                free(l);
                goto bad;
            }
            link_add_tail(&r->q[l->queue], &l->qlink);
            b = lock_bucket(l->owner, l->lkid);
            l->hnext = lt->lhash[b];
            lt->lhash[b] = l;
            lt->nlocks++;
        }
    }
    if (p != end)
        goto bad;
    return 0;
bad:
    clear_all(lt);
    return -EBADMSG;
}

uint64_t clr_lt_digest(const struct clr_lt *lt)
{
    size_t n = clr_lt_encoded_size(lt);
    uint8_t *buf = malloc(n);
    uint64_t h;

    if (!buf)
        return 0;
    clr_lt_encode(lt, buf, n);
    h = fnv(buf, n, 0xcbf29ce484222325ULL);
    free(buf);
    return h;
}
