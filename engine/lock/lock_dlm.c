/*
 * The `dlm` backend: locks from the kernel DLM through libdlm (completion
 * through dlm_ls_get_fd() / dlm_dispatch() on our thread), membership
 * events from corosync CPG.  The DLM itself keeps a failed node's locks
 * until dlm_controld has fenced it, so this backend needs no fencing logic.
 *
 * NOT RUN AGAINST A KERNEL DLM: the development machine has none.  It is
 * unit-tested against tests/lock/fake_libdlm.c only.
 *
 * Known limits: libdlm's BAST callback does not carry the blocked mode, so
 * BASTs report CLR_LOCK_EX; slots are the rank of our (nodeid, pid) among
 * the group members when we joined (the DLM's own slots are not exported
 * to user space, reference §2.8).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/types.h>
#include <unistd.h>

#include <corosync/cpg.h>
#include <libdlm.h>

#include "lock/lock_internal.h"

#define DLM_GROUP_PREFIX "clraid-dlm:"

/* Our modes are the DLM's; spelled out so a renumbering cannot slip by. */
static const uint32_t dlm_modes[CLR_LOCK_NMODES] = {
	LKM_NLMODE, LKM_CRMODE, LKM_CWMODE, LKM_PRMODE, LKM_PWMODE, LKM_EXMODE,
};

struct dlm_lock_priv {
	struct dlm_lksb lksb;
	int rqmode;
	bool unlocking;
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
	bool cpg_ok;
	struct cpg_name group;
	uint32_t nodeid, pid;
	int nmembers; /* CPG group size at the last confchg (ls->mu) */
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

	pthread_mutex_lock(&ls->mu);
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
	pthread_mutex_unlock(&ls->mu);
}

static void dlm_bast(void *arg)
{
	struct clr_lock *lk = arg;

	pthread_mutex_lock(&lk->ls->mu);
	clr_ls_bast_locked(lk->ls, lk, CLR_LOCK_EX);
	pthread_mutex_unlock(&lk->ls->mu);
}

/* ---- membership from CPG ---- */

static void dlm_cpg_deliver(cpg_handle_t h, const struct cpg_name *g, uint32_t nodeid,
			    uint32_t pid, void *msg, size_t len)
{
	(void)h;
	(void)g;
	(void)nodeid;
	(void)pid;
	(void)msg;
	(void)len;
}

static void dlm_cpg_confchg(cpg_handle_t h, const struct cpg_name *g,
			    const struct cpg_address *members, size_t nm,
			    const struct cpg_address *left, size_t nl,
			    const struct cpg_address *joined, size_t nj)
{
	void *ctx = NULL;
	struct dlm_be *be;
	struct clr_ls *ls;
	struct clr_ls_event ev = { .type = CLR_LS_EV_PREP };

	(void)g;
	(void)joined;
	cpg_context_get(h, &ctx);
	be = ctx;
	ls = be->ls;
	pthread_mutex_lock(&ls->mu);
	be->nmembers = (int)nm;
	if (ls->our_slot == 0) {
		int rank = 1;

		for (size_t i = 0; i < nm; i++)
			if (members[i].nodeid < be->nodeid ||
			    (members[i].nodeid == be->nodeid && members[i].pid < be->pid))
				rank++;
		ls->our_slot = rank;
	}
	if (nl || nj)
		clr_ls_event_locked(ls, &ev);
	for (size_t i = 0; i < nl; i++) {
		if (left[i].reason == CPG_REASON_LEAVE)
			continue;
		ev = (struct clr_ls_event){ .type = CLR_LS_EV_MEMBER_FAILED,
					    .nodeid = left[i].nodeid,
					    .pid = left[i].pid,
					    .member = ((uint64_t)left[i].nodeid << 32) | left[i].pid };
		clr_ls_event_locked(ls, &ev);
	}
	if (nl || nj) {
		ev = (struct clr_ls_event){ .type = CLR_LS_EV_DONE };
		clr_ls_event_locked(ls, &ev);
	}
	pthread_mutex_unlock(&ls->mu);
}

static cpg_model_v1_data_t dlm_cpg_model = {
	.model = CPG_MODEL_V1,
	.cpg_deliver_fn = dlm_cpg_deliver,
	.cpg_confchg_fn = dlm_cpg_confchg,
};

static void cpg_start(struct dlm_be *be, const char *name)
{
	unsigned int local = 0;
	size_t pl = strlen(DLM_GROUP_PREFIX), nl = strlen(name);

	if (pl + nl >= CPG_MAX_NAME_LENGTH)
		return;
	if (cpg_model_initialize(&be->cpg, CPG_MODEL_V1,
				 (cpg_model_data_t *)&dlm_cpg_model, be) != CS_OK)
		return; /* no corosync: locks still work, no membership events */
	cpg_context_set(be->cpg, be);
	cpg_local_get(be->cpg, &local);
	be->nodeid = local;
	be->pid = (uint32_t)getpid();
	memcpy(be->group.value, DLM_GROUP_PREFIX, pl);
	memcpy(be->group.value + pl, name, nl);
	be->group.length = (uint32_t)(pl + nl);
	if (cpg_join(be->cpg, &be->group) != CS_OK) {
		cpg_finalize(be->cpg);
		return;
	}
	be->cpg_ok = true;
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

		pthread_mutex_lock(&be->ls->mu);
		stop = be->stop;
		pthread_mutex_unlock(&be->ls->mu);
		if (stop)
			break;
		if (be->cpg_ok)
			cpg_fd_get(be->cpg, &pfd[2].fd);
		if (poll(pfd, 3, 200) <= 0)
			continue;
		if (pfd[0].revents) {
			uint64_t v;

			if (read(be->wake_fd, &v, sizeof(v)) < 0) {
				/* nothing to clear */
			}
		}
		if (pfd[1].revents)
			dlm_dispatch(be->fd);
		if (pfd[2].revents)
			cpg_dispatch(be->cpg, CS_DISPATCH_ALL);
	}
	return NULL;
}

static void be_destroy(struct dlm_be *be)
{
	uint64_t one = 1;

	if (be->running) {
		pthread_mutex_lock(&be->ls->mu);
		be->stop = true;
		pthread_mutex_unlock(&be->ls->mu);
		if (write(be->wake_fd, &one, sizeof(one)) < 0) {
			/* the poll timeout wakes it anyway */
		}
		pthread_join(be->thread, NULL);
	}
	if (be->cpg_ok) {
		cpg_leave(be->cpg, &be->group);
		cpg_finalize(be->cpg);
	}
	if (be->dls) {
		if (be->created)
			dlm_release_lockspace(be->ls->name, be->dls, 1);
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

	if (!be)
		return -ENOMEM;
	be->ls = ls;
	be->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ls->be = be;
	errno = 0;
	be->dls = dlm_new_lockspace(cfg->name, 0600, DLM_LSFL_NEWEXCL);
	if (be->dls) {
		be->created = true;
	} else {
		errno = 0;
		be->dls = dlm_open_lockspace(cfg->name);
	}
	if (!be->dls) {
		/* libdlm leaves errno 0 when there is no kernel DLM at all */
		int err = errno ? -errno : -ENOTCONN;

		be_destroy(be);
		return err;
	}
	be->fd = dlm_ls_get_fd(be->dls);
	if (be->fd < 0) {
		be_destroy(be);
		return -ENOTCONN;
	}
	if (!(cfg->backend_arg && strcmp((const char *)cfg->backend_arg, "no-cpg") == 0))
		cpg_start(be, cfg->name);
	if (!be->cpg_ok)
		ls->our_slot = 1;
	ls->member_id = ((uint64_t)be->nodeid << 32) | (uint32_t)getpid();
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

static int dlm_backend_request(struct clr_ls *ls, struct clr_lock *lk, int mode,
			       unsigned flags)
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
	rc = dlm_ls_lock(dbe(ls)->dls, dlm_modes[mode], &p->lksb, f, lk->name,
			 (unsigned int)lk->namelen, 0, dlm_ast, lk, dlm_bast, NULL);
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
	rc = dlm_ls_unlock(dbe(ls)->dls, p->lksb.sb_lkid,
			   (flags & CLR_LOCK_F_VALBLK) ? LKF_VALBLK : 0, &p->lksb, lk);
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

	pthread_mutex_lock(&ls->mu);
	n = be && be->cpg_ok ? be->nmembers : 0;
	pthread_mutex_unlock(&ls->mu);
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
