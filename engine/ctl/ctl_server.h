/* clraid control socket, server side: a unix socket (mode 0600, peers must
 * be uid 0) served by one accept thread and a bounded number of connection
 * threads. Each request line is decoded (ctl_proto.h) and handed to a
 * handler that returns the reply line. Bounded line length and timeouts:
 * a bad or silent peer gets an error reply or is dropped, never hangs us. */
#ifndef CLRAID_CTL_CTL_SERVER_H
#define CLRAID_CTL_CTL_SERVER_H

#include "ctl/ctl_proto.h"

struct clr_ctl_server;

/** Returns a malloc'd reply line (clr_ctl_reply_ok/_error). Called from a
 *  connection thread; may run concurrently with itself. */
typedef char *(*clr_ctl_handler_fn)(void *opaque, const struct clr_ctl_request *req);

/** Creates @path (an existing socket there is replaced) and starts serving.
 *  Call after any fork. 0 or -errno with @e filled. */
int clr_ctl_server_start(const char *path, clr_ctl_handler_fn fn, void *opaque, struct clr_ctl_server **out,
                         struct clr_err *e);

/** Stops accepting, waits (bounded) for connection threads, removes the
 *  socket file and frees. NULL is ignored. */
void clr_ctl_server_stop(struct clr_ctl_server *s);

#endif
