/*
 * clraid policy decision core: from the facts the policy daemon gathers
 * (error reports, probe results, membership, quorum, fencing, times) to one
 * action, "fence the node or fail the disk" and what to do on the last
 * device (issue 15; the table and its precedence are at the top of
 * policy.c, doc/architecture.md §3.3 lists them).
 *
 * Pure: no I/O, no clocks (every time is a fact, in ms), no globals, no
 * allocation.  The daemon around it (CIB watching, probes, libstonithd)
 * gathers the facts, calls clr_policy_decide() on every change and on a
 * tick, and carries the decision out.  Only the decider (the DC, or the
 * lowest node id that runs the array) acts on a decision; every node may
 * call it (a fenced node learns it must stop, a node without quorum that it
 * must freeze).
 */
#ifndef CLRAID_AGENT_POLICY_H
#define CLRAID_AGENT_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#define CLR_POL_MAX_NODES    32
#define CLR_POL_MAX_DEVS     64
#define CLR_POL_EVIDENCE_MAX 200

/** The class of an error a node reported on a member. */
enum clr_pol_err {
    CLR_POL_ERR_NONE,
    CLR_POL_ERR_MEDIA, /**< ENODATA, EILSEQ, EREMOTEIO: the disk's content */
    CLR_POL_ERR_PATH,  /**< EIO, ENOLINK, ENODEV, ETIMEDOUT (and unknown) */
    CLR_POL_ERR_HUNG,  /**< an I/O with no completion, reported at once */
    CLR_POL_ERR_RESV,  /**< EBADE: reservation conflict, the node is fenced */
};

/** One node's probe of one member (O_DIRECT read + write of its own sector). */
enum clr_pol_probe {
    CLR_POL_PROBE_NOT_RUN,
    CLR_POL_PROBE_PENDING,
    CLR_POL_PROBE_OK,
    CLR_POL_PROBE_FAILED,
};

/** Where fencing of a node stands. */
enum clr_pol_fence {
    CLR_POL_FENCE_NONE,
    CLR_POL_FENCE_REQUESTED,
    CLR_POL_FENCE_FAILED, /**< failed or timed out */
    CLR_POL_FENCE_DONE,   /**< by us or by anyone (Pacemaker too) */
};

enum clr_pol_path_action {
    CLR_POL_PATH_FENCE,     /**< fence the node at fault (default) */
    CLR_POL_PATH_FAIL_DISK, /**< fail the disk on that node only: its I/O
                             *   touching the disk gets errors (CVM's
                             *   "local" detach); never cluster-wide */
    CLR_POL_PATH_IGNORE,    /**< decide nothing, retry */
};

enum clr_pol_last_action {
    CLR_POL_LAST_FREEZE, /**< default; bounded by freeze_timeout */
    CLR_POL_LAST_ERROR,
    CLR_POL_LAST_FENCE,
};

enum clr_pol_fence_action {
    CLR_POL_FENCE_REBOOT,
    CLR_POL_FENCE_OFF,
};

/** The decision. */
enum clr_pol_action {
    CLR_POL_NONE,      /**< nothing to do, or wait and retry (writes to a
                        *   device under decision stay held) */
    CLR_POL_REWRITE,   /**< rewrite `devs` from a good copy */
    CLR_POL_FAIL_DISK, /**< fail `devs` cluster-wide */
    CLR_POL_FENCE,     /**< fence `nodes` (fence_action) */
    CLR_POL_FREEZE,    /**< freeze the array; `nodes`: fencing to retry */
    CLR_POL_ERROR,     /**< return errors to clients (`nodes`: only these
                        *   nodes' I/O touching `devs`; none: everyone's) */
    CLR_POL_STOP,      /**< this node is fenced: stop I/O and leave */
};

/** A node, as the cluster and its engine report it. */
struct clr_pol_node {
    uint32_t id;                       /**< corosync node id, for evidence */
    bool online;                       /**< in the membership */
    bool active;                       /**< has the array active */
    uint8_t fence;                     /**< enum clr_pol_fence */
    uint64_t since_fence_ms;           /**< since the last fence request */
    uint8_t err[CLR_POL_MAX_DEVS];     /**< enum clr_pol_err per member */
    uint8_t probe[CLR_POL_MAX_DEVS];   /**< enum clr_pol_probe per member */
    uint16_t errors[CLR_POL_MAX_DEVS]; /**< error reports on the member in
                                         *   the last error_window */
};

/** A member of the array (one in use: in sync or rebuilding). */
struct clr_pol_dev {
    uint64_t since_report_ms; /**< since the first error report on it */
    bool media_on_write;      /**< a media error on a write (md fails it) */
    uint32_t read_errors;     /**< md's corrected-read count, decayed
                               *   (clr_policy_read_errors_decay) */
    bool out;                 /**< no longer in use on this node's engine
                               *   (failed, removed): the decision on it
                               *   was carried out, nothing is left to
                               *   decide, whatever reports linger */
};

struct clr_pol_facts {
    unsigned n_nodes; /**< <= CLR_POL_MAX_NODES */
    unsigned n_devs;  /**< <= CLR_POL_MAX_DEVS */
    unsigned self;    /**< this node's index */
    bool quorate;     /**< this node's partition has quorum */
    bool decider;     /**< this node decides (agent/evidence.c: the DC
                       *   if it runs the array, else the lowest id) */
    /** nodes a partition needs to be quorate (corosync: expected_votes/2+1,
     *  1 with two_node); 0: a majority of n_nodes */
    unsigned quorum_nodes;
    unsigned redundancy;      /**< members the array can still lose */
    bool frozen;              /**< the array is frozen ... */
    uint64_t since_freeze_ms; /**< ... since then */
    struct clr_pol_node node[CLR_POL_MAX_NODES];
    struct clr_pol_dev dev[CLR_POL_MAX_DEVS];
    const char *const *node_names; /**< optional, n_nodes entries */
    const char *const *dev_names;  /**< optional, n_devs entries */
};

/** The settings (resource parameters); times in ms. */
struct clr_pol_settings {
    enum clr_pol_path_action path_failure_action;
    enum clr_pol_last_action last_device_action;
    enum clr_pol_fence_action fence_action;
    uint64_t freeze_timeout;  /**< 0: frozen until the operator thaws */
    uint64_t confirm_timeout; /**< longest a write waits for a decision */
    uint64_t probe_timeout;
    uint64_t io_timeout;
    uint32_t error_threshold; /**< this many reports in error_window while
                               *   the probe passes: the node's path is bad */
    uint64_t error_window;    /**< the window the caller counts them in */
    uint32_t max_read_errors; /**< corrected reads before the disk fails */
};

struct clr_pol_decision {
    enum clr_pol_action action;
    unsigned row;   /**< 1..10 as in the issue's table; 0: no row (nothing
                     *   to decide, waiting, or not the decider) */
    uint64_t devs;  /**< bit d: member d */
    uint32_t nodes; /**< bit n: node n */
    enum clr_pol_fence_action fence_action;
    char evidence[CLR_POL_EVIDENCE_MAX]; /**< one line, for the log */
};

/** The safe defaults (doc/architecture.md §3.3). */
void clr_policy_settings_default(struct clr_pol_settings *s);

/** 0, or -EINVAL with a reason in *why (a static string). */
int clr_policy_settings_check(const struct clr_pol_settings *s, const char **why);

/** The class of an errno (either sign) from a member's I/O; 0 is NONE,
 *  an errno this table does not know is PATH (the probe decides). */
enum clr_pol_err clr_policy_errno_class(int err);

/** md's decay of the corrected-read count: halved for every full hour
 *  since it was last decayed. */
uint32_t clr_policy_read_errors_decay(uint32_t count, uint64_t since_ms);

/**
 * Decides.  Fills *out entirely and returns out->action.  Facts out of
 * range (too many nodes or members, self not a node) decide FREEZE, row 0.
 */
enum clr_pol_action clr_policy_decide(const struct clr_pol_facts *f, const struct clr_pol_settings *s,
                                      struct clr_pol_decision *out);

/** A short name for an action ("fence", "fail-disk", ...). */
const char *clr_policy_action_name(enum clr_pol_action a);

#endif
