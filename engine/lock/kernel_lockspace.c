/*
 * Is a kernel md-cluster lockspace live in the corosync cluster?  (lock.h)
 * Asked whatever the lock backend (engine/array/array_cluster.c refuses to
 * share an array with kernel md-cluster nodes), so it lives apart from
 * lock_dlm.c, which configure may leave out, and works wherever libcpg is.
 */
#include <errno.h>

#include "lock/lock.h"

#ifdef HAVE_LIBCPG
#include <string.h>

#include <corosync/cpg.h>

int clr_lock_kernel_lockspace_live(const char *name)
{
    static const char pfx[] = "dlm:ls:";
    cpg_callbacks_t cb = { 0 };
    cpg_handle_t h;
    cpg_iteration_handle_t it;
    struct cpg_iteration_description_t d;
    size_t n = strlen(name);
    int found = 0;

    if (cpg_initialize(&h, &cb) != CS_OK)
        return -ENOTCONN;
    if (cpg_iteration_initialize(h, CPG_ITERATION_NAME_ONLY, NULL, &it) != CS_OK) {
        cpg_finalize(h);
        return -EIO;
    }
    /* dlm_controld counts the name's NUL in the group's length */
    while (!found && cpg_iteration_next(it, &d) == CS_OK) {
        size_t l = d.group.length, want = sizeof(pfx) - 1 + n;

        if (l == want + 1 && d.group.value[want] == 0)
            l = want;
        found = l == want && memcmp(d.group.value, pfx, sizeof(pfx) - 1) == 0 &&
                memcmp(d.group.value + sizeof(pfx) - 1, name, n) == 0;
    }
    cpg_iteration_finalize(it);
    cpg_finalize(h);
    return found;
}
#else
/* No corosync in this build: it cannot tell (and no cluster backend runs). */
int clr_lock_kernel_lockspace_live(const char *name)
{
    (void)name;
    return -ENOTCONN;
}
#endif
