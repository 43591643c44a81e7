/* clraid control protocol: one JSON object per line over a unix socket.
 *
 *   request  {"v":1,"cmd":"status","args":{...}}
 *   reply    {"v":1,"ok":true,"result":...}
 *            {"v":1,"ok":false,"error":"one line a user can act on"}
 *
 * Pure code: decoding and validation of requests, encoding of replies and
 * requests. The socket server (ctl_server.h), the dispatcher onto the array
 * core (ctl_array.h) and the CLI client (ctl_client.h) build on it.
 */
#ifndef CLRAID_CTL_CTL_PROTO_H
#define CLRAID_CTL_CTL_PROTO_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "format/errbuf.h"

#define CLR_CTL_VERSION 1
/** Longest request or reply line accepted, newline excluded. */
#define CLR_CTL_MAX_LINE (64u * 1024u)
/** Longest decision or pending text the policy command carries. */
#define CLR_CTL_POLICY_TEXT_MAX 400u

/** Commands, one per table row in ctl_proto.c. */
enum clr_ctl_cmd {
    CLR_CTL_STATUS,
    CLR_CTL_FAIL,
    CLR_CTL_REMOVE,
    CLR_CTL_ADD,
    CLR_CTL_READD,
    CLR_CTL_CHECK,
    CLR_CTL_REPAIR,
    CLR_CTL_THAW_ERROR,
    CLR_CTL_STOP,
    CLR_CTL_FAULT,  /**< test hook: io fault injection on one member */
    CLR_CTL_PROBE,  /**< the policy daemon's probe of one member */
    CLR_CTL_POLICY, /**< the policy daemon's lease (confirm_ms, lease_ms, hold) */
    CLR_CTL_NCMDS
};

/** Fault kinds of the "fault" test hook (args.op). */
enum clr_ctl_fault_op {
    CLR_CTL_FAULT_READ,       /**< fail reads in [offset, offset+length) */
    CLR_CTL_FAULT_WRITE,      /**< fail writes/zero/trim in the range */
    CLR_CTL_FAULT_RW,         /**< both */
    CLR_CTL_FAULT_VANISH,     /**< every request fails (ENODEV) */
    CLR_CTL_FAULT_DELAY,      /**< delay completions by args.ms */
    CLR_CTL_FAULT_CLEAR,      /**< disarm everything */
    CLR_CTL_FAULT_BAD_SECTOR, /**< reads of the range fail (ENODATA) until a
                               *   write covers it: a latent sector error */
};

/** A decoded, validated request. Strings point into @obj. */
struct clr_ctl_request {
    enum clr_ctl_cmd cmd;
    const char *device; /**< fail/remove/add/re-add/fault/probe */
    enum clr_ctl_fault_op fault_op;
    unsigned long long offset; /**< fault range; length 0 = whole device */
    unsigned long long length;
    unsigned ms;                   /**< fault delay */
    int err;                       /**< fault errno (positive), 0 = default */
    unsigned confirm_ms, lease_ms; /**< policy: 0 confirm_ms detaches */
    bool hold;                     /**< policy: the decision holds writes */
    const char *decision;          /**< policy: the last decision (or NULL) */
    const char *pending;           /**< policy: what the decider waits for */
    json_object *obj;              /**< owned: put with clr_ctl_request_free */
};

/** Name of @cmd on the wire ("re-add", "thaw-error", ...). */
const char *clr_ctl_cmd_name(enum clr_ctl_cmd cmd);

/** Looks a wire name up; -EINVAL if unknown. */
int clr_ctl_cmd_lookup(const char *name, enum clr_ctl_cmd *cmd);

/**
 * Decodes and validates one request line (@len bytes, no newline needed;
 * embedded NULs are refused). On error returns -errno and @e holds the
 * line to send back; @req is left empty.
 */
int clr_ctl_request_decode(const char *line, size_t len, struct clr_ctl_request *req, struct clr_err *e);

void clr_ctl_request_free(struct clr_ctl_request *req);

/** Encodes a request line (with trailing newline); @args may be NULL and
 *  is consumed. Returns a malloc'd string or NULL. */
char *clr_ctl_request_encode(const char *cmd, json_object *args);

/** Encodes {"v":1,"ok":true,"result":@result} + newline; consumes @result
 *  (NULL encodes as null). Returns a malloc'd string or NULL. */
char *clr_ctl_reply_ok(json_object *result);

/** Encodes {"v":1,"ok":false,"error":@msg} + newline, @msg flattened to one
 *  line. Returns a malloc'd string or NULL. */
char *clr_ctl_reply_error(const char *msg);

/**
 * Decodes a reply line. On ok, *@result gets a new reference to the result
 * (may be NULL for null) and 0 is returned; on an error reply -EREMOTEIO
 * with the server's message in @e; on a malformed reply -EPROTO.
 */
int clr_ctl_reply_decode(const char *line, size_t len, json_object **result, struct clr_err *e);

#endif
