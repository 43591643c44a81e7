/* FAKE libdlm (see fake_libdlm.h): in-process, on the pure lock table. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/types.h>
#include <unistd.h>

#include <libdlm.h>

#include "fake_libdlm.h"
#include "lock/lock_table.h"

#define FAKE_MAX_LOCKS 1024

struct fake_lock {
    struct dlm_lksb *lksb;
    void (*ast)(void *);
    void (*bast)(void *);
    void *astarg;
    bool used;
};

struct fake_cb {
    struct fake_cb *next;
    void (*fn)(void *);
    void *arg;
};

struct fake_ls {
    struct fake_ls *next;
    char name[128];
    uint64_t owner;
    int fd;
    struct fake_cb *head, *tail;
};

static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
static struct clr_lt *fake_table;
static struct fake_ls *fake_all;
static struct fake_lock fake_locks[FAKE_MAX_LOCKS]; /* index = lkid */
static uint64_t fake_next_owner = 1;
static bool fake_unavailable;
static int fake_calls;

void fake_dlm_set_unavailable(bool unavailable)
{
    fake_unavailable = unavailable;
}

int fake_dlm_lock_calls(void)
{
    return fake_calls;
}

static struct fake_ls *by_owner(uint64_t owner)
{
    for (struct fake_ls *f = fake_all; f; f = f->next)
        if (f->owner == owner)
            return f;
    return NULL;
}

static void queue_cb(struct fake_ls *f, void (*fn)(void *), void *arg)
{
    struct fake_cb *cb = calloc(1, sizeof(*cb));
    uint64_t one = 1;

    cb->fn = fn;
    cb->arg = arg;
    if (f->tail)
        f->tail->next = cb;
    else
        f->head = cb;
    f->tail = cb;
    if (write(f->fd, &one, sizeof(one)) < 0) {
        /* cannot overflow in a test */
    }
}

static void fake_emit(void *arg, const struct clr_lt_effect *e)
{
    struct fake_ls *f = by_owner(e->owner);
    struct fake_lock *l = &fake_locks[e->lkid];

    (void)arg;
    if (!f || !l->used)
        return;
    switch (e->type) {
    case CLR_LT_GRANTED:
        l->lksb->sb_status = 0;
        l->lksb->sb_flags = (e->sb_flags & CLR_LOCK_SB_VALNOTVALID) ? DLM_SBF_VALNOTVALID : 0;
        if (e->has_lvb && l->lksb->sb_lvbptr)
            memcpy(l->lksb->sb_lvbptr, e->lvb, CLR_LOCK_LVB_LEN);
        queue_cb(f, l->ast, l->astarg);
        break;
    case CLR_LT_FAILED:
        l->lksb->sb_status = e->status;
        queue_cb(f, l->ast, l->astarg);
        break;
    case CLR_LT_CANCELED:
        l->lksb->sb_status = ECANCEL;
        queue_cb(f, l->ast, l->astarg);
        if (e->mode == CLR_LOCK_IV)
            l->used = false;
        break;
    case CLR_LT_UNLOCKED:
        l->lksb->sb_status = EUNLOCK;
        queue_cb(f, l->ast, l->astarg);
        l->used = false;
        break;
    case CLR_LT_BAST:
        if (l->bast)
            queue_cb(f, l->bast, l->astarg);
        break;
    }
}

void fake_dlm_crash_newest(void)
{
    pthread_mutex_lock(&fake_mu);
    if (fake_all && fake_table) {
        clr_lt_remove_owner(fake_table, fake_all->owner, true, fake_emit, NULL);
        fake_all->owner = fake_next_owner++; /* a fresh, lock-less identity */
    }
    pthread_mutex_unlock(&fake_mu);
}

static dlm_lshandle_t fake_open(const char *name)
{
    struct fake_ls *f;

    if (fake_unavailable) {
        errno = 0;
        return NULL;
    }
    f = calloc(1, sizeof(*f));
    strncpy(f->name, name, sizeof(f->name) - 1);
    f->fd = eventfd(0, EFD_NONBLOCK);
    pthread_mutex_lock(&fake_mu);
    if (!fake_table)
        fake_table = clr_lt_new();
    f->owner = fake_next_owner++;
    f->next = fake_all;
    fake_all = f;
    pthread_mutex_unlock(&fake_mu);
    return f;
}

dlm_lshandle_t dlm_new_lockspace(const char *name, mode_t mode, uint32_t flags)
{
    (void)mode;
    (void)flags;
    return fake_open(name);
}

dlm_lshandle_t dlm_open_lockspace(const char *name)
{
    return fake_open(name);
}

static int fake_close(dlm_lshandle_t ls)
{
    struct fake_ls *f = ls, **pp;

    pthread_mutex_lock(&fake_mu);
    clr_lt_remove_owner(fake_table, f->owner, false, fake_emit, NULL);
    for (pp = &fake_all; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    pthread_mutex_unlock(&fake_mu);
    while (f->head) {
        struct fake_cb *cb = f->head;

        f->head = cb->next;
        free(cb);
    }
    close(f->fd);
    free(f);
    return 0;
}

int dlm_release_lockspace(const char *name, dlm_lshandle_t ls, int force)
{
    (void)name;
    (void)force;
    return fake_close(ls);
}

int dlm_close_lockspace(dlm_lshandle_t ls)
{
    return fake_close(ls);
}

int dlm_ls_get_fd(dlm_lshandle_t ls)
{
    return ((struct fake_ls *)ls)->fd;
}

int dlm_ls_lock(dlm_lshandle_t ls, uint32_t mode, struct dlm_lksb *lksb, uint32_t flags, const void *name,
                unsigned int namelen, uint32_t parent, void (*astaddr)(void *astarg), void *astarg,
                void (*bastaddr)(void *astarg), void *range)
{
    struct fake_ls *f = ls;
    unsigned tflags =
        ((flags & LKF_NOQUEUE) ? CLR_LOCK_F_NOQUEUE : 0) | ((flags & LKF_VALBLK) ? CLR_LOCK_F_VALBLK : 0);

    (void)parent;
    (void)range;
    pthread_mutex_lock(&fake_mu);
    fake_calls++;
    if (flags & LKF_CONVERT) {
        clr_lt_convert(fake_table, f->owner, lksb->sb_lkid, (int)mode, tflags,
                       (const uint8_t *)lksb->sb_lvbptr, fake_emit, NULL);
    } else {
        uint32_t id = 0;

        for (uint32_t i = 1; i < FAKE_MAX_LOCKS; i++)
            if (!fake_locks[i].used) {
                id = i;
                break;
            }
        if (!id) {
            pthread_mutex_unlock(&fake_mu);
            errno = ENOMEM;
            return -1;
        }
        fake_locks[id] = (struct fake_lock){
            .lksb = lksb, .ast = astaddr, .bast = bastaddr, .astarg = astarg, .used = true
        };
        lksb->sb_lkid = id;
        clr_lt_request(fake_table, f->owner, id, name, namelen, (int)mode, tflags, fake_emit, NULL);
        if (clr_lt_lock_info(fake_table, f->owner, id, NULL, NULL, NULL) == -ENOENT)
            fake_locks[id].used = false; /* refused at once */
    }
    pthread_mutex_unlock(&fake_mu);
    return 0;
}

int dlm_ls_unlock(dlm_lshandle_t ls, uint32_t lkid, uint32_t flags, struct dlm_lksb *lksb, void *astarg)
{
    struct fake_ls *f = ls;
    int rc;

    (void)astarg;
    pthread_mutex_lock(&fake_mu);
    if (flags & LKF_CANCEL)
        rc = clr_lt_cancel(fake_table, f->owner, lkid, fake_emit, NULL);
    else
        rc = clr_lt_unlock(fake_table, f->owner, lkid, (flags & LKF_VALBLK) ? CLR_LOCK_F_VALBLK : 0,
                           (const uint8_t *)lksb->sb_lvbptr, fake_emit, NULL);
    pthread_mutex_unlock(&fake_mu);
    if (rc) {
        errno = -rc;
        return -1;
    }
    return 0;
}

int dlm_dispatch(int fd)
{
    struct fake_ls *f;
    uint64_t v;

    if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        return -1;
    for (;;) {
        struct fake_cb *cb = NULL;

        pthread_mutex_lock(&fake_mu);
        for (f = fake_all; f; f = f->next)
            if (f->fd == fd)
                break;
        if (f && f->head) {
            cb = f->head;
            f->head = cb->next;
            if (!f->head)
                f->tail = NULL;
        }
        pthread_mutex_unlock(&fake_mu);
        if (!cb)
            return 0;
        cb->fn(cb->arg);
        free(cb);
    }
}
