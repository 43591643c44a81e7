/* clraid control protocol: request decoding, reply encoding (pure code). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl_proto.h"

/* What each command needs in "args". */
enum {
    NEEDS_DEVICE = 1u << 0,
    NEEDS_FAULT = 1u << 1,
    NEEDS_POLICY = 1u << 2
};

static const struct {
    const char *name;
    unsigned needs;
} cmd_table[CLR_CTL_NCMDS] = {
    [CLR_CTL_STATUS] = { "status", 0 },
    [CLR_CTL_FAIL] = { "fail", NEEDS_DEVICE },
    [CLR_CTL_REMOVE] = { "remove", NEEDS_DEVICE },
    [CLR_CTL_ADD] = { "add", NEEDS_DEVICE },
    [CLR_CTL_READD] = { "re-add", NEEDS_DEVICE },
    [CLR_CTL_CHECK] = { "check", 0 },
    [CLR_CTL_REPAIR] = { "repair", 0 },
    [CLR_CTL_THAW_ERROR] = { "thaw-error", 0 },
    [CLR_CTL_STOP] = { "stop", 0 },
    [CLR_CTL_FAULT] = { "fault", NEEDS_DEVICE | NEEDS_FAULT },
    [CLR_CTL_PROBE] = { "probe", NEEDS_DEVICE },
    [CLR_CTL_POLICY] = { "policy", NEEDS_POLICY },
};

static const char *const fault_ops[] = {
    [CLR_CTL_FAULT_READ] = "read",
    [CLR_CTL_FAULT_WRITE] = "write",
    [CLR_CTL_FAULT_RW] = "rw",
    [CLR_CTL_FAULT_VANISH] = "vanish",
    [CLR_CTL_FAULT_DELAY] = "delay",
    [CLR_CTL_FAULT_CLEAR] = "clear",
    [CLR_CTL_FAULT_BAD_SECTOR] = "bad-sector",
};

const char *clr_ctl_cmd_name(enum clr_ctl_cmd cmd)
{
    return (unsigned)cmd < CLR_CTL_NCMDS ? cmd_table[cmd].name : "?";
}

int clr_ctl_cmd_lookup(const char *name, enum clr_ctl_cmd *cmd)
{
    for (unsigned i = 0; i < CLR_CTL_NCMDS; i++)
        if (strcmp(name, cmd_table[i].name) == 0) {
            *cmd = (enum clr_ctl_cmd)i;
            return 0;
        }
    return -EINVAL;
}

/* Parses exactly one JSON value filling @len bytes (whitespace around it
 * allowed); NULL if anything else. */
static json_object *parse_exact(const char *s, size_t len)
{
    struct json_tokener *tok;
    json_object *obj;
    size_t used;

    if (len > CLR_CTL_MAX_LINE || memchr(s, '\0', len))
        return NULL;
    tok = json_tokener_new_ex(16);
    if (!tok)
        return NULL;
    obj = json_tokener_parse_ex(tok, s, (int)len);
    if (!obj || json_tokener_get_error(tok) != json_tokener_success) {
        json_object_put(obj);
        json_tokener_free(tok);
        return NULL;
    }
    used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    for (; used < len; used++)
        if (!strchr(" \t\r\n", s[used])) {
            json_object_put(obj);
            return NULL;
        }
    return obj;
}

/* Reads a non-negative integer member; absent leaves *@v. */
static int get_u64(json_object *args, const char *key, unsigned long long max, unsigned long long *v,
                   struct clr_err *e)
{
    json_object *o;
    int64_t x;

    if (!json_object_object_get_ex(args, key, &o))
        return 0;
    if (!json_object_is_type(o, json_type_int))
        return clr_err_set(e, -EINVAL, "args.%s must be an integer", key);
    errno = 0;
    x = json_object_get_int64(o);
    if (x < 0 || (unsigned long long)x > max)
        return clr_err_set(e, -ERANGE, "args.%s out of range", key);
    *v = (unsigned long long)x;
    return 0;
}

static int decode_fault(json_object *args, struct clr_ctl_request *req, struct clr_err *e)
{
    json_object *o;
    const char *op;
    unsigned long long ms = 0, err = 0;
    unsigned i;
    int rc;

    if (!json_object_object_get_ex(args, "op", &o) || !json_object_is_type(o, json_type_string))
        return clr_err_set(e, -EINVAL,
                           "fault: args.op must be one of read, write, rw, vanish, delay, clear, bad-sector");
    op = json_object_get_string(o);
    for (i = 0; i < sizeof fault_ops / sizeof fault_ops[0]; i++)
        if (strcmp(op, fault_ops[i]) == 0)
            break;
    if (i == sizeof fault_ops / sizeof fault_ops[0])
        return clr_err_set(e, -EINVAL,
                           "fault: unknown op (use read, write, rw, vanish, delay, clear or bad-sector)");
    req->fault_op = (enum clr_ctl_fault_op)i;
    if ((rc = get_u64(args, "offset", INT64_MAX, &req->offset, e)) ||
        (rc = get_u64(args, "length", INT64_MAX, &req->length, e)) ||
        (rc = get_u64(args, "ms", 600000, &ms, e)) || (rc = get_u64(args, "errno", 4095, &err, e)))
        return rc;
    if (req->fault_op == CLR_CTL_FAULT_DELAY && !json_object_object_get_ex(args, "ms", NULL))
        return clr_err_set(e, -EINVAL, "fault delay: args.ms is required");
    if (req->fault_op == CLR_CTL_FAULT_BAD_SECTOR && req->length == 0)
        return clr_err_set(e, -EINVAL, "fault bad-sector: args.length (bytes, > 0) is required");
    req->ms = (unsigned)ms;
    req->err = (int)err;
    return 0;
}

static int decode_policy(json_object *args, struct clr_ctl_request *req, struct clr_err *e)
{
    unsigned long long confirm = 0, lease = 0;
    json_object *o;
    int rc;

    if (!args || !json_object_object_get_ex(args, "confirm_ms", NULL))
        return clr_err_set(e, -EINVAL, "policy: args.confirm_ms is required (0 detaches)");
    if ((rc = get_u64(args, "confirm_ms", 3600000, &confirm, e)) ||
        (rc = get_u64(args, "lease_ms", 600000, &lease, e)))
        return rc;
    if (json_object_object_get_ex(args, "hold", &o)) {
        if (!json_object_is_type(o, json_type_boolean))
            return clr_err_set(e, -EINVAL, "policy: args.hold must be true or false");
        req->hold = json_object_get_boolean(o);
    }
    for (unsigned i = 0; i < 2; i++) {
        const char *key = i ? "pending" : "decision";

        if (!json_object_object_get_ex(args, key, &o) || json_object_is_type(o, json_type_null))
            continue;
        if (!json_object_is_type(o, json_type_string) ||
            (unsigned)json_object_get_string_len(o) > CLR_CTL_POLICY_TEXT_MAX)
            return clr_err_set(e, -EINVAL, "policy: args.%s must be a string of at most %u bytes", key,
                               CLR_CTL_POLICY_TEXT_MAX);
        *(i ? &req->pending : &req->decision) = json_object_get_string(o);
    }
    req->confirm_ms = (unsigned)confirm;
    req->lease_ms = (unsigned)lease;
    return 0;
}

int clr_ctl_request_decode(const char *line, size_t len, struct clr_ctl_request *req, struct clr_err *e)
{
    json_object *obj, *o, *args = NULL;
    int rc;

    memset(req, 0, sizeof *req);
    if (len > CLR_CTL_MAX_LINE)
        return clr_err_set(e, -EMSGSIZE, "request longer than %u bytes", CLR_CTL_MAX_LINE);
    obj = parse_exact(line, len);
    if (!obj)
        return clr_err_set(e, -EINVAL, "malformed request: expected one JSON object per line");
    if (!json_object_is_type(obj, json_type_object)) {
        rc = clr_err_set(e, -EINVAL, "malformed request: expected a JSON object");
        goto fail;
    }
    if (!json_object_object_get_ex(obj, "v", &o) || !json_object_is_type(o, json_type_int)) {
        rc = clr_err_set(e, -EINVAL, "request has no integer \"v\" (protocol version %d)", CLR_CTL_VERSION);
        goto fail;
    }
    if (json_object_get_int64(o) != CLR_CTL_VERSION) {
        rc = clr_err_set(e, -EPROTONOSUPPORT, "protocol version %lld not supported (this engine speaks %d)",
                         (long long)json_object_get_int64(o), CLR_CTL_VERSION);
        goto fail;
    }
    if (!json_object_object_get_ex(obj, "cmd", &o) || !json_object_is_type(o, json_type_string)) {
        rc = clr_err_set(e, -EINVAL, "request has no string \"cmd\"");
        goto fail;
    }
    if (clr_ctl_cmd_lookup(json_object_get_string(o), &req->cmd) != 0) {
        rc = clr_err_set(e, -EOPNOTSUPP, "unknown command \"%.64s\"", json_object_get_string(o));
        goto fail;
    }
    if (json_object_object_get_ex(obj, "args", &args) && !json_object_is_type(args, json_type_object) &&
        !json_object_is_type(args, json_type_null)) {
        rc = clr_err_set(e, -EINVAL, "\"args\" must be an object");
        goto fail;
    }
    if (args && !json_object_is_type(args, json_type_object))
        args = NULL;
    if (cmd_table[req->cmd].needs & NEEDS_DEVICE) {
        if (!args || !json_object_object_get_ex(args, "device", &o) ||
            !json_object_is_type(o, json_type_string) || json_object_get_string_len(o) == 0) {
            rc = clr_err_set(e, -EINVAL, "%s: args.device (a member path) is required",
                             cmd_table[req->cmd].name);
            goto fail;
        }
        req->device = json_object_get_string(o);
    }
    if (cmd_table[req->cmd].needs & NEEDS_FAULT) {
        rc = decode_fault(args, req, e);
        if (rc)
            goto fail;
    }
    if (cmd_table[req->cmd].needs & NEEDS_POLICY) {
        rc = decode_policy(args, req, e);
        if (rc)
            goto fail;
    }
    req->obj = obj;
    return 0;
fail:
    json_object_put(obj);
    memset(req, 0, sizeof *req);
    return rc;
}

void clr_ctl_request_free(struct clr_ctl_request *req)
{
    json_object_put(req->obj);
    memset(req, 0, sizeof *req);
}

/* Serialises @obj (consumed) as one line plus newline. */
static char *to_line(json_object *obj)
{
    const char *s;
    char *line = NULL;
    size_t n;

    if (!obj)
        return NULL;
    s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    if (s) {
        n = strlen(s);
        line = malloc(n + 2);
        if (line) {
            memcpy(line, s, n);
            line[n] = '\n';
            line[n + 1] = '\0';
        }
    }
    json_object_put(obj);
    return line;
}

char *clr_ctl_request_encode(const char *cmd, json_object *args)
{
    json_object *obj = json_object_new_object();

    if (!obj) {
        json_object_put(args);
        return NULL;
    }
    json_object_object_add(obj, "v", json_object_new_int(CLR_CTL_VERSION));
    json_object_object_add(obj, "cmd", json_object_new_string(cmd));
    json_object_object_add(obj, "args", args ? args : json_object_new_object());
    return to_line(obj);
}

char *clr_ctl_reply_ok(json_object *result)
{
    json_object *obj = json_object_new_object();

    if (!obj) {
        json_object_put(result);
        return NULL;
    }
    json_object_object_add(obj, "v", json_object_new_int(CLR_CTL_VERSION));
    json_object_object_add(obj, "ok", json_object_new_boolean(1));
    json_object_object_add(obj, "result", result);
    return to_line(obj);
}

char *clr_ctl_reply_error(const char *msg)
{
    json_object *obj = json_object_new_object();
    char *flat = strdup(msg ? msg : "unknown error");

    if (!obj || !flat) {
        json_object_put(obj);
        free(flat);
        return NULL;
    }
    for (char *p = flat; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    json_object_object_add(obj, "v", json_object_new_int(CLR_CTL_VERSION));
    json_object_object_add(obj, "ok", json_object_new_boolean(0));
    json_object_object_add(obj, "error", json_object_new_string(flat));
    free(flat);
    return to_line(obj);
}

int clr_ctl_reply_decode(const char *line, size_t len, json_object **result, struct clr_err *e)
{
    json_object *obj, *o;
    int rc;

    *result = NULL;
    obj = parse_exact(line, len);
    if (!obj || !json_object_is_type(obj, json_type_object)) {
        json_object_put(obj);
        return clr_err_set(e, -EPROTO, "malformed reply from the engine");
    }
    if (!json_object_object_get_ex(obj, "v", &o) || json_object_get_int64(o) != CLR_CTL_VERSION) {
        rc = clr_err_set(e, -EPROTO, "engine speaks another control protocol version");
        goto out;
    }
    if (!json_object_object_get_ex(obj, "ok", &o) || !json_object_is_type(o, json_type_boolean)) {
        rc = clr_err_set(e, -EPROTO, "malformed reply from the engine (no \"ok\")");
        goto out;
    }
    if (!json_object_get_boolean(o)) {
        json_object *m;

        if (json_object_object_get_ex(obj, "error", &m) && json_object_is_type(m, json_type_string))
            rc = clr_err_set(e, -EREMOTEIO, "%s", json_object_get_string(m));
        else
            rc = clr_err_set(e, -EREMOTEIO, "the engine refused the request without a reason");
        goto out;
    }
    if (json_object_object_get_ex(obj, "result", &o))
        *result = json_object_get(o);
    rc = 0;
out:
    json_object_put(obj);
    return rc;
}
