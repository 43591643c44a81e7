/*
 * uml_xstate.so: lets Debian 12's User-Mode Linux (6.1) run on a host whose
 * XSAVE area is larger than the one UML 6.1 was built for.  Preloaded into
 * the UML kernel process by tests/uml/uml-functions.sh, only where a plain
 * probe boot fails with "ptrace set fp regs failed, errno = 14".
 *
 * Why: UML saves and restores its processes' FPU state with
 * PTRACE_GETREGSET / PTRACE_SETREGSET (NT_X86_XSTATE) and a buffer of its own
 * fixed size.  The host kernel gives a short read for GETREGSET, but refuses
 * a SETREGSET whose length is not the host's whole XSAVE size (EFAULT).  On
 * CPUs with AMX (Sapphire Rapids and later) that size is about 11 KiB, more
 * than UML's buffer, and every instance dies at its first context switch.
 * Later kernels size the buffer from the host; 6.1 does not.
 *
 * What: on that EFAULT, read the tracee's whole state, lay UML's shorter
 * buffer over its start (the legacy area, the XSAVE header and the
 * components UML knows), and write the whole state back.  The parts past
 * UML's buffer are the tracee's own current values: UML's processes never
 * turn AMX on, so those stay in their initial state.  Every other ptrace
 * call passes through unchanged.  UML's host side is one thread making
 * these calls, so one static buffer serves.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>

/* larger than any XSAVE area x86 defines (AMX's is about 11 KiB) */
#define XSTATE_MAX (64 * 1024)

typedef long (*ptrace_fn)(int req, pid_t pid, void *addr, void *data);

static ptrace_fn real_ptrace;
static unsigned char *whole;

long ptrace(enum __ptrace_request req, ...);

static long set_whole_xstate(pid_t pid, void *addr, const struct iovec *part)
{
    struct iovec all;

    if (!whole) {
        void *p = mmap(NULL, XSTATE_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            errno = EFAULT;
            return -1;
        }
        whole = p;
    }
    all.iov_base = whole;
    all.iov_len = XSTATE_MAX;
    if (real_ptrace(PTRACE_GETREGSET, pid, addr, &all) < 0)
        return -1;
    if (part->iov_len > all.iov_len) {
        errno = EFAULT;
        return -1;
    }
    memcpy(whole, part->iov_base, part->iov_len);
    return real_ptrace(PTRACE_SETREGSET, pid, addr, &all);
}

long ptrace(enum __ptrace_request req, ...)
{
    va_list ap;
    pid_t pid;
    void *addr, *data;
    long rc;

    va_start(ap, req);
    pid = va_arg(ap, pid_t);
    addr = va_arg(ap, void *);
    data = va_arg(ap, void *);
    va_end(ap);
    if (!real_ptrace) {
        real_ptrace = (ptrace_fn)dlsym(RTLD_NEXT, "ptrace");
        if (!real_ptrace) {
            errno = ENOSYS;
            return -1;
        }
    }
    rc = real_ptrace(req, pid, addr, data);
    if (rc < 0 && errno == EFAULT && req == PTRACE_SETREGSET && (unsigned long)addr == NT_X86_XSTATE)
        rc = set_whole_xstate(pid, addr, data);
    return rc;
}
