/* clraid control socket, client side (used by the CLI). */
#ifndef CLRAID_CTL_CTL_CLIENT_H
#define CLRAID_CTL_CTL_CLIENT_H

#include "ctl/ctl_proto.h"

/**
 * Sends one request line (newline-terminated) to the socket at @path and
 * reads one reply line into *@reply (malloc'd, newline stripped), within
 * @timeout_ms. -ENOENT/-ECONNREFUSED when no engine listens, -ETIMEDOUT,
 * -EPROTO on an oversized or truncated reply; @e says which.
 */
int clr_ctl_call_raw(const char *path, const char *line, int timeout_ms, char **reply, struct clr_err *e);

/**
 * Sends @cmd with @args (consumed; may be NULL) and decodes the reply:
 * 0 with *@result (may be NULL), -EREMOTEIO with the engine's message in
 * @e, or a transport error as clr_ctl_call_raw().
 */
int clr_ctl_call(const char *path, const char *cmd, json_object *args, int timeout_ms, json_object **result,
                 struct clr_err *e);

#endif
