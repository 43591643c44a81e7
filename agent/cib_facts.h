/*
 * clraid policy daemon: what the CIB says, as facts (doc/architecture.md
 * §3.3).  The daemon (agent/policyd.c) reads the CIB through libcib, on
 * start and on every change, and hands the XML here: the nodes and which
 * are up, quorum, the DC, whether fencing is on and has devices, and every
 * ocf:clraid:clraid resource with its policy settings.  Pure: XML (text
 * or libxml2 tree) in, facts out; no libcib, no I/O.
 */
#ifndef CLRAID_AGENT_CIB_FACTS_H
#define CLRAID_AGENT_CIB_FACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libxml/tree.h>

#include "agent/policy.h"

#define CLR_CIB_NAME_MAX   64
#define CLR_CIB_MAX_ARRAYS 16
#define CLR_CIB_ERR_MAX    200
/** Longest evidence attribute kept (agent/evidence.h): "n=64 r=64",
 *  64 " mII=media:65535", 64 " wII=65535" and 64 " pII=failed:65535",
 *  " frozen" (2768 bytes) */
#define CLR_CIB_ATTR_MAX     2800
#define CLR_CIB_PENDING_MAX  160
#define CLR_CIB_DECISION_MAX 320

struct clr_cib_node {
    char name[CLR_CIB_NAME_MAX]; /**< uname */
    char id[CLR_CIB_NAME_MAX];   /**< the node's id in the CIB (corosync id) */
    bool in_ccm;                 /**< in the corosync membership */
    bool online;                 /**< its controller is up (crmd online) */
    bool member;                 /**< in_ccm, controller up, joined */
    bool standby;                /**< node attribute standby=on */
    bool maintenance;            /**< node attribute maintenance=on */
};

/** One ocf:clraid:clraid resource and its policy parameters. */
struct clr_cib_array {
    char rsc[CLR_CIB_NAME_MAX];       /**< primitive id */
    char name[CLR_CIB_NAME_MAX];      /**< its `name` parameter (the array) */
    char run_dir[256];                /**< its `run_dir` (the engine's
                                       *   control socket is NAME.ctl there) */
    bool cloned;                      /**< inside a clone */
    struct clr_pol_settings settings; /**< defaults, then its parameters */
    char error[CLR_CIB_ERR_MAX];      /**< "": the settings are valid; else
                                       *   why not (the daemon keeps the
                                       *   defaults for this resource) */
    /** node n's transient attribute clraid-NAME-io (agent/evidence.h),
     *  "" if it has none; longer values are cut (and then fail to parse) */
    char io[CLR_POL_MAX_NODES][CLR_CIB_ATTR_MAX];
    /** node n's clraid-NAME-pending: what its decider waits for ("fence
     *  n2", "freeze", "error"; "" none): writes held for the decision
     *  keep waiting while a decider publishes one */
    char pending[CLR_POL_MAX_NODES][CLR_CIB_PENDING_MAX];
    /** node n's clraid-NAME-decision: its last decision as decider, with
     *  the time it was taken ("" none) */
    char decision[CLR_POL_MAX_NODES][CLR_CIB_DECISION_MAX];
};

struct clr_cib_facts {
    bool have_quorum;               /**< cib have-quorum */
    char dc_uuid[CLR_CIB_NAME_MAX]; /**< "": no DC elected */
    bool stonith_enabled;           /**< cluster option, default true */
    unsigned fence_devices;         /**< stonith-class primitives */
    unsigned n_nodes;
    struct clr_cib_node node[CLR_POL_MAX_NODES];
    unsigned n_arrays;
    struct clr_cib_array array[CLR_CIB_MAX_ARRAYS];
    unsigned arrays_dropped; /**< clraid resources past CLR_CIB_MAX_ARRAYS */
    unsigned nodes_dropped;  /**< nodes past CLR_POL_MAX_NODES */
};

/**
 * Reads a CIB (`cibadmin -Q`, or libcib's query) into @out.
 * @return 0, or -EINVAL with a one-line reason in @err when @xml is not a
 * CIB at all.  Bad policy parameters of one resource are not an error of
 * the CIB: they are reported in that resource's `error`.
 */
int clr_cib_facts_parse(const char *xml, size_t len, struct clr_cib_facts *out, char *err, size_t errlen);

/**
 * The same from a parsed <cib> element (the daemon's libcib copy: no
 * text round trip on every change).  @return 0, or -EINVAL if @root is
 * not a <cib> element.
 */
int clr_cib_facts_read(xmlNodePtr root, struct clr_cib_facts *out, char *err, size_t errlen);

/**
 * Parses one policy parameter into @s (the names of the OCF agent's
 * parameters: path_failure_action, last_device_action, fence_action,
 * freeze_timeout, confirm_timeout, probe_timeout, io_timeout,
 * error_threshold, error_window, max_read_errors).  Times take a unit: ms,
 * s, m or h (none: seconds, as Pacemaker's intervals).
 * @return 1 if @name is a policy parameter and @value is good, 0 if @name
 * is not one, -EINVAL with a reason in @err if the value is bad.
 */
int clr_cib_policy_param(struct clr_pol_settings *s, const char *name, const char *value, char *err,
                         size_t errlen);

/** The names clr_cib_policy_param() takes, NULL-terminated. */
extern const char *const clr_cib_policy_params[];

/** The node named @name, or NULL. */
const struct clr_cib_node *clr_cib_node_find(const struct clr_cib_facts *f, const char *name);

#endif
