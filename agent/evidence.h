/*
 * clraid policy daemon: the evidence each node publishes, and the facts the
 * decider builds from everyone's (doc/architecture.md §3.3).
 *
 * Every node's clraid-policyd reads its own engines' status and publishes,
 * per array, one transient node attribute, `clraid-NAME-io`, through
 * Pacemaker's attribute manager.  Its value is what this node sees:
 *
 *     n=4 r=1 m1=path:3 m2=media:1
 *
 *   n=N        the array's member roles (raid disks)
 *   r=R        the members it can still lose, as this node's engine counts
 *   mI=C:K     role I: K errors of class C (media, path, hung, resv) in
 *              the error window; C is the class of the latest one
 *   wI=K       role I: K of its media errors in the window hit a write
 *              (row 1: md fails such a disk)
 *   pI=P       this node's probe of role I: pending, ok or failed (asked
 *              for by any node's report on I, kept while reports last);
 *              ok:S and failed:S name the probe: S counts this node's
 *              probes of I, so that a decider can wait for newer ones
 *              (a result may predate a fault's start or end)
 *   frozen     the array is frozen on this node
 *
 * A node that has the array running publishes the attribute (with no mI
 * when it sees no error); a node that does not, publishes none.  So the
 * CIB's status section holds every node's evidence, crm_mon -A shows it,
 * and the decider (agent/policy.h) reads all of it from its copy of the
 * CIB: the attribute manager is the only channel between the daemons.
 *
 * Pure: strings and structs in and out, no I/O, no clocks (times are
 * arguments, in ms).
 */
#ifndef CLRAID_AGENT_EVIDENCE_H
#define CLRAID_AGENT_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/cib_facts.h"
#include "agent/policy.h"

/** Longest attribute value (cib_facts.h keeps each node's). */
#define CLR_EV_VALUE_MAX CLR_CIB_ATTR_MAX

/** One node's evidence about one array. */
struct clr_evidence {
    unsigned n_devs;                         /**< member roles, <= CLR_POL_MAX_DEVS */
    unsigned redundancy;                     /**< members it can still lose */
    uint8_t err[CLR_POL_MAX_DEVS];           /**< enum clr_pol_err, NONE: clean */
    uint16_t errors[CLR_POL_MAX_DEVS];       /**< in the error window */
    uint8_t probe[CLR_POL_MAX_DEVS];         /**< enum clr_pol_probe */
    uint16_t media_writes[CLR_POL_MAX_DEVS]; /**< media errors on writes, in the window */
    uint16_t probe_seq[CLR_POL_MAX_DEVS];    /**< with ok or failed: which probe (0: not said) */
    bool frozen;
};

/** The attribute's name for array @name: "clraid-NAME-io". */
int clr_evidence_attr_name(const char *name, char *buf, size_t len);

/** Formats @e (members past n_devs are ignored); -ENOSPC if @len is short. */
int clr_evidence_format(const struct clr_evidence *e, char *buf, size_t len);

/**
 * Parses a value.  Unknown keys are skipped (a newer daemon may add some);
 * a malformed n, r or mI rejects the whole value: 0, or -EINVAL with a
 * one-line reason in @err.
 */
int clr_evidence_parse(const char *s, struct clr_evidence *e, char *err, size_t errlen);

/**
 * Errors in a sliding window, from an engine's ever-growing count: the
 * daemon samples the count on every tick and asks how many came within
 * the last @window_ms.  Samples are kept only when the count moves; past
 * CLR_EV_HIST_MAX of them the oldest are merged, so a window counts at
 * least what it should (never fewer: the policy's threshold is a floor).
 */
#define CLR_EV_HIST_MAX 64
struct clr_ev_hist {
    unsigned n;
    uint64_t base;                   /**< the count before the first sample */
    uint64_t t[CLR_EV_HIST_MAX];     /**< when the count became ... */
    uint64_t count[CLR_EV_HIST_MAX]; /**< ... this */
};

/** Starts a history: @count errors so far, the last of them at @last_ms
 *  (0: none). */
void clr_ev_hist_init(struct clr_ev_hist *h, uint64_t count, uint64_t last_ms);

/** The count at @now_ms (a count below the last one restarts the history:
 *  the engine restarted). */
void clr_ev_hist_add(struct clr_ev_hist *h, uint64_t now_ms, uint64_t count);

/** Errors within (now_ms - window_ms, now_ms], capped at 65535. */
uint16_t clr_ev_hist_window(const struct clr_ev_hist *h, uint64_t now_ms, uint64_t window_ms);

/** What the decider keeps between ticks about one array. */
struct clr_ev_state {
    uint64_t first_report_ms[CLR_POL_MAX_DEVS]; /**< 0: no report open */
    uint64_t freeze_ms;                         /**< 0: not frozen */
};

/**
 * The facts for array @ai of @cf, from the evidence values the CIB holds
 * (`cf->array[ai].io[n]` for node n), for the node named @self at
 * @now_ms.  Updates @st (when each member's reports began, cleared when
 * no node reports it any more).  Nodes with no value, or a malformed one
 * (named in @bad, as "n2: ..." joined by "; ", if not NULL), count as not
 * running the array.  The redundancy is the least any node reports.
 * @return 0, or -ENOENT if @self is not a node of @cf, -ENODATA if no
 * node reports the array.
 */
int clr_evidence_facts(const struct clr_cib_facts *cf, unsigned ai, const char *self, uint64_t now_ms,
                       struct clr_ev_state *st, struct clr_pol_facts *out, char *bad, size_t badlen);

#endif
