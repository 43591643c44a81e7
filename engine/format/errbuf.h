/* A caller-supplied buffer for one precise, human-readable error line.
 * Pure code fills it; the CLI prints it with the device name and advice. */
#ifndef CLRAID_FORMAT_ERRBUF_H
#define CLRAID_FORMAT_ERRBUF_H

#include <stddef.h>

struct clr_err {
    char msg[256];
};

/** Formats into @e (if not NULL) and returns @rc, so callers can write
 *  `return clr_err_set(e, -EINVAL, "...", ...)`. */
int clr_err_set(struct clr_err *e, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
