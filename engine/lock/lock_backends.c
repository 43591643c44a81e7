/* The cluster backends' registration: the one reference to them, kept out
 * of lock.c so that a program that never calls this links neither them nor
 * their libraries (lock.h, clr_lock_cluster_backends()). */
#include "lock/lock_internal.h"

void clr_lock_cluster_backends(void)
{
    /* -EEXIST on a second call: already known */
#ifdef HAVE_LOCK_CPG
    (void)clr_lock_backend_register(&clr_lock_backend_cpg);
#endif
#ifdef HAVE_LOCK_DLM
    (void)clr_lock_backend_register(&clr_lock_backend_dlm);
#endif
}
