#include <stdarg.h>
#include <stdio.h>

#include "format/errbuf.h"

int clr_err_set(struct clr_err *e, int rc, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return rc;
}
