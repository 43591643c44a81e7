/* clraid control commands onto the array core: the handler a front end
 * (the nbdkit plugin today, ublk later) gives to clr_ctl_server_start(). */
#ifndef CLRAID_CTL_CTL_ARRAY_H
#define CLRAID_CTL_CTL_ARRAY_H

#include "ctl/ctl_proto.h"

struct clr_array;

struct clr_ctl_array {
    struct clr_array *array;
    /** "stop": asks the front end to shut down cleanly (it then calls
     *  clr_array_stop from its own teardown). */
    void (*stop)(void *opaque);
    void *opaque;
    /** How clients reach the array (an NBD URI), for "status"; may be NULL. */
    const char *export_uri;
};

/** clr_ctl_handler_fn for a struct clr_ctl_array *@opaque. */
char *clr_ctl_array_handle(void *opaque, const struct clr_ctl_request *req);

#endif
