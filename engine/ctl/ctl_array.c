/* clraid control commands onto the array core (see ctl_array.h). */
#include <errno.h>
#include <string.h>

#include "array/array.h"
#include "ctl/ctl_array.h"
#include "io/io.h"

/* Reply for a management call that returned @rc with @e. */
static char *reply_rc(int rc, const struct clr_err *e, const char *what)
{
    if (rc == 0)
        return clr_ctl_reply_ok(NULL);
    if (e->msg[0])
        return clr_ctl_reply_error(e->msg);
    struct clr_err m = { "" };
    clr_err_set(&m, rc, "%s: %s", what, strerror(-rc));
    return clr_ctl_reply_error(m.msg);
}

/* Test hook: io fault injection on one member (see ctl_proto.h). */
static char *do_fault(struct clr_array *a, const struct clr_ctl_request *req)
{
    struct clr_io_dev *dev = clr_array_member_io(a, req->device);
    struct clr_err e = { "" };
    int rc = 0;

    if (!dev) {
        clr_err_set(&e, -ENODEV, "fault: %s is not an open member of this array", req->device);
        return clr_ctl_reply_error(e.msg);
    }
    switch (req->fault_op) {
    case CLR_CTL_FAULT_READ:
        rc = clr_io_fault_fail_range(dev, CLR_IO_FAULT_READ, req->offset, req->length, req->err);
        break;
    case CLR_CTL_FAULT_WRITE:
        rc = clr_io_fault_fail_range(dev, CLR_IO_FAULT_WRITE, req->offset, req->length, req->err);
        break;
    case CLR_CTL_FAULT_RW:
        rc = clr_io_fault_fail_range(dev, CLR_IO_FAULT_READ | CLR_IO_FAULT_WRITE, req->offset, req->length,
                                     req->err);
        break;
    case CLR_CTL_FAULT_VANISH:
        clr_io_fault_vanish(dev, req->err);
        break;
    case CLR_CTL_FAULT_DELAY:
        clr_io_fault_delay(dev, req->ms);
        break;
    case CLR_CTL_FAULT_CLEAR:
        clr_io_fault_clear(dev);
        break;
    case CLR_CTL_FAULT_BAD_SECTOR:
        rc = clr_io_fault_fail_range(dev, CLR_IO_FAULT_READ | CLR_IO_FAULT_HEAL_ON_WRITE, req->offset,
                                     req->length, req->err ? req->err : ENODATA);
        break;
    }
    if (rc)
        clr_err_set(&e, rc, "fault: %s: %s", req->device,
                    rc == -ENOSPC ? "too many fault ranges armed (clear first)" : strerror(-rc));
    return reply_rc(rc, &e, "fault");
}

char *clr_ctl_array_handle(void *opaque, const struct clr_ctl_request *req)
{
    struct clr_ctl_array *ca = opaque;
    struct clr_array *a = ca->array;
    struct clr_err e = { "" };
    json_object *st;

    switch (req->cmd) {
    case CLR_CTL_STATUS:
        st = clr_array_status_json(a);
        if (st && ca->export_uri)
            json_object_object_add(st, "export", json_object_new_string(ca->export_uri));
        return st ? clr_ctl_reply_ok(st) : clr_ctl_reply_error("status unavailable (out of memory?)");
    case CLR_CTL_FAIL:
        return reply_rc(clr_array_fail_device(a, req->device, &e), &e, "fail");
    case CLR_CTL_REMOVE:
        return reply_rc(clr_array_remove_device(a, req->device, &e), &e, "remove");
    case CLR_CTL_ADD:
        return reply_rc(clr_array_add_device(a, req->device, &e), &e, "add");
    case CLR_CTL_READD:
        return reply_rc(clr_array_readd_device(a, req->device, &e), &e, "re-add");
    case CLR_CTL_CHECK:
    case CLR_CTL_REPAIR:
        return reply_rc(clr_array_start_check(a, req->cmd == CLR_CTL_REPAIR, &e), &e,
                        clr_ctl_cmd_name(req->cmd));
    case CLR_CTL_THAW_ERROR:
        return reply_rc(clr_array_thaw_error(a, &e), &e, "thaw-error");
    case CLR_CTL_STOP:
        if (!ca->stop)
            return clr_ctl_reply_error("stop: not supported by this front end");
        ca->stop(ca->opaque);
        return clr_ctl_reply_ok(NULL);
    case CLR_CTL_FAULT:
        return do_fault(a, req);
    case CLR_CTL_PROBE:
        st = clr_array_probe_device(a, req->device, &e);
        return st ? clr_ctl_reply_ok(st) : reply_rc(-EINVAL, &e, "probe");
    case CLR_CTL_POLICY:
        return reply_rc(
            clr_array_policy(a, req->confirm_ms, req->lease_ms, req->hold, req->decision, req->pending, &e),
            &e, "policy");
    case CLR_CTL_NCMDS:
        break;
    }
    return clr_ctl_reply_error("unknown command");
}
