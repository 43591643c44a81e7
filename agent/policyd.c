/*
 * clraid-policyd: the policy daemon's CIB side (doc/architecture.md §3.3).
 *
 * It reads the CIB through libcib, on start and after every change (diff
 * notifications: the patch is applied to our copy; on any failure to
 * apply it the whole CIB is queried again), turns it into facts
 * (agent/cib_facts.c) and logs each change of them: nodes joining and
 * leaving, quorum, the DC, fencing, and every clraid resource's policy
 * settings.
 *
 * Every second it reads each array's status from the local engine (its
 * control socket, RUN_DIR/NAME.ctl), renews the engine's policy lease
 * (a member's I/O error then waits for a decision instead of failing the
 * member at once) and publishes what this node sees as the transient node
 * attribute clraid-NAME-io (agent/evidence.h: errors per member and class
 * in error_window, hangs, probes, the redundancy left).  From every node's
 * attribute in the CIB it builds the decision core's facts (agent/policy.c)
 * and decides; the decider (the DC if it runs the array, else the lowest
 * node id that does) logs each new decision with its evidence, shows it as
 * its node attribute clraid-NAME-decision, and carries it out: fencing
 * through libstonithd, failing a disk through its engine, or (every node)
 * failing the blocked I/O of a frozen last copy (doc/architecture.md §3.3).
 *
 *   clraid-policyd [--node NAME] [--pidfile FILE]   watch, decide, act
 *   clraid-policyd [--node NAME] --once [--json]    print once
 *   clraid-policyd --check-settings NAME=VALUE...   validate policy parameters
 *
 * CIB_file=FILE (libcib's own variable) reads a CIB file instead of the
 * running cluster, as cibadmin and crm_mon do.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/utsname.h>
#include <syslog.h>
#include <unistd.h>

#include <crm/cib.h>
#include <crm/common/logging.h>
#include <crm/cib/util.h>
#include <crm/common/xml.h>
#include <crm/stonith-ng.h>
#include <glib-unix.h>
#include <glib.h>
#include <json-c/json.h>

#include "agent/cib_facts.h"
#include "agent/evidence.h"
#include "ctl/ctl_client.h"
#include "format/errbuf.h"

/* exit codes, as the OCF agent maps them */
#define EXIT_USAGE  2
#define EXIT_CONFIG 6
#define EXIT_NO_CIB 7

static const char *const path_names[] = { "fence", "fail-disk", "ignore" };
static const char *const last_names[] = { "freeze", "error", "fence" };
static const char *const fence_names[] = { "reboot", "off" };

static cib_t *cib;
static xmlNode *current; /* our copy of the CIB, patched on every diff */
static struct clr_cib_facts facts, prev;
static bool have_prev;
static GMainLoop *loop;
static int exit_rc;
static char self[CLR_CIB_NAME_MAX]; /* this node's name in the CIB */

#define TICK_MS     1000
#define CTL_TIMEOUT 2000
#define N_CLASSES   4 /* media, path, reservation, media on a write: the engine's counters */

/* What this daemon keeps per array resource between ticks. */
struct tracked {
    char rsc[CLR_CIB_NAME_MAX];
    bool seen; /* still in the CIB at the last tick */
    /* the evidence attribute as published ("" and !published: none) */
    bool published;
    char value[CLR_CIB_ATTR_MAX];
    bool hist_ok[CLR_POL_MAX_DEVS];
    struct clr_ev_hist hist[CLR_POL_MAX_DEVS][N_CLASSES];
    /* this node's probes: the member path of each role (from the local
     * engine), each probe's state, and a generation that a late answer
     * must match */
    char path[CLR_POL_MAX_DEVS][256];
    uint8_t probe[CLR_POL_MAX_DEVS]; /* as published */
    bool probe_busy[CLR_POL_MAX_DEVS];
    unsigned probe_gen[CLR_POL_MAX_DEVS];
    uint16_t probe_seq[CLR_POL_MAX_DEVS];     /* probes of the member answered (published with a failure) */
    uint64_t probe_done_ms[CLR_POL_MAX_DEVS]; /* monotonic; 0: none yet */
    /* the least error count reported on the member (all nodes, in the
     * window) since the last probe began: more errors, probe again */
    uint32_t probe_basis[CLR_POL_MAX_DEVS];
    /* the decider's side */
    struct clr_ev_state st;
    bool have_last;
    struct clr_pol_decision last;
    bool decision_published;
    char pending[CLR_CIB_PENDING_MAX]; /* as published ("": none) */
    uint64_t fail_seen_ms;             /* monotonic: a fail-disk decision came up */
    /* row 3's fence came up (0: not now), and each failed node's probe
     * sequence then: it fences once they moved on and failed again */
    uint64_t fence_seen_ms;
    uint16_t fence_basis[CLR_POL_MAX_NODES][CLR_POL_MAX_DEVS];
    /* this node's engine: writes held for a decision, attached, health */
    unsigned held;
    bool engine_frozen, thawed_error;
    uint64_t in_use;    /* roles with a member in use on this node's engine */
    const char *health; /* as published: NULL, "yellow", "red" */
};
static struct tracked tracked[CLR_CIB_MAX_ARRAYS];

static void usage(FILE *f)
{
    fprintf(f, "usage: clraid-policyd [--node NAME] [--pidfile FILE | --once [--json]]\n"
               "       clraid-policyd --check-settings NAME=VALUE...\n"
               "Watches the CIB and the local engines, publishes this node's evidence and decides\n"
               "(doc/architecture.md §3.3).\n"
               "  --node NAME        this node's name in the CIB (default: uname -n)\n"
               "  --once             print the facts and decisions once and exit\n"
               "                     (CIB_file=FILE reads a file)\n"
               "  --json             with --once: as JSON\n"
               "  --pidfile FILE     one daemon per node (FILE is locked; another start exits 0);\n"
               "                     exits once no array of the CIB has run here for 10 s\n"
               "  --check-settings   validate policy parameters (exit 0, or 6 with the reason)\n"
               "Exit codes: 0 ok, 2 usage, 6 bad settings, 7 no CIB.\n");
}

static json_object *settings_json(const struct clr_pol_settings *s)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "path_failure_action",
                           json_object_new_string(path_names[s->path_failure_action]));
    json_object_object_add(o, "last_device_action",
                           json_object_new_string(last_names[s->last_device_action]));
    json_object_object_add(o, "fence_action", json_object_new_string(fence_names[s->fence_action]));
    json_object_object_add(o, "freeze_timeout_ms", json_object_new_int64((int64_t)s->freeze_timeout));
    json_object_object_add(o, "confirm_timeout_ms", json_object_new_int64((int64_t)s->confirm_timeout));
    json_object_object_add(o, "probe_timeout_ms", json_object_new_int64((int64_t)s->probe_timeout));
    json_object_object_add(o, "io_timeout_ms", json_object_new_int64((int64_t)s->io_timeout));
    json_object_object_add(o, "error_threshold", json_object_new_int64(s->error_threshold));
    json_object_object_add(o, "error_window_ms", json_object_new_int64((int64_t)s->error_window));
    json_object_object_add(o, "max_read_errors", json_object_new_int64(s->max_read_errors));
    return o;
}

static json_object *decision_json(const struct clr_cib_facts *f, unsigned ai);

static json_object *facts_json(const struct clr_cib_facts *f)
{
    json_object *o = json_object_new_object(), *nodes = json_object_new_array(),
                *arrays = json_object_new_array();

    json_object_object_add(o, "have_quorum", json_object_new_boolean(f->have_quorum));
    json_object_object_add(o, "dc", f->dc_uuid[0] ? json_object_new_string(f->dc_uuid) : NULL);
    json_object_object_add(o, "stonith_enabled", json_object_new_boolean(f->stonith_enabled));
    json_object_object_add(o, "fence_devices", json_object_new_int(f->fence_devices));
    for (unsigned i = 0; i < f->n_nodes; i++) {
        const struct clr_cib_node *n = &f->node[i];
        json_object *x = json_object_new_object();

        json_object_object_add(x, "name", json_object_new_string(n->name));
        json_object_object_add(x, "id", json_object_new_string(n->id));
        json_object_object_add(x, "in_ccm", json_object_new_boolean(n->in_ccm));
        json_object_object_add(x, "online", json_object_new_boolean(n->online));
        json_object_object_add(x, "member", json_object_new_boolean(n->member));
        json_object_object_add(x, "standby", json_object_new_boolean(n->standby));
        json_object_object_add(x, "maintenance", json_object_new_boolean(n->maintenance));
        json_object_array_add(nodes, x);
    }
    json_object_object_add(o, "nodes", nodes);
    for (unsigned i = 0; i < f->n_arrays; i++) {
        const struct clr_cib_array *a = &f->array[i];
        json_object *x = json_object_new_object();

        json_object_object_add(x, "resource", json_object_new_string(a->rsc));
        json_object_object_add(x, "name", json_object_new_string(a->name));
        json_object_object_add(x, "cloned", json_object_new_boolean(a->cloned));
        json_object_object_add(x, "settings", settings_json(&a->settings));
        json_object_object_add(x, "error", a->error[0] ? json_object_new_string(a->error) : NULL);
        json_object_object_add(x, "run_dir", json_object_new_string(a->run_dir));
        json_object_object_add(x, "policy", decision_json(f, i));
        json_object_array_add(arrays, x);
    }
    json_object_object_add(o, "arrays", arrays);
    if (f->nodes_dropped || f->arrays_dropped) {
        json_object_object_add(o, "nodes_dropped", json_object_new_int(f->nodes_dropped));
        json_object_object_add(o, "arrays_dropped", json_object_new_int(f->arrays_dropped));
    }
    return o;
}

/* ---- fencing, as this node knows it ------------------------------------ */

/* Where fencing of each node stands: requested by us (libstonithd's
 * result callback), or done by anyone (the fencer's notifications:
 * Pacemaker's own fencing counts).  Reset once the node is a member
 * again. */
struct fence_state {
    char node[CLR_CIB_NAME_MAX];
    uint8_t state;  /* enum clr_pol_fence */
    bool seen_down; /* out of the membership since the request */
    uint64_t at_ms; /* monotonic: request, or result */
    uint64_t requested_ms;
};
static struct fence_state fences[CLR_POL_MAX_NODES];

static uint64_t mono_ms(void);

static struct fence_state *fence_of(const char *node, bool add)
{
    struct fence_state *free_slot = NULL;

    for (unsigned i = 0; i < CLR_POL_MAX_NODES; i++) {
        if (fences[i].node[0] && !strcmp(fences[i].node, node))
            return &fences[i];
        if (!fences[i].node[0] && !free_slot)
            free_slot = &fences[i];
    }
    if (!add || !free_slot)
        return NULL;
    memset(free_slot, 0, sizeof(*free_slot));
    snprintf(free_slot->node, sizeof(free_slot->node), "%s", node);
    return free_slot;
}

/* ---- deciding ---------------------------------------------------------- */

/* The decision for array @ai as this node sees the CIB now; @st carries
 * the decider's timers between calls.  0, or the error of
 * clr_evidence_facts (-ENODATA: no node runs the array). */
/* @out: roles no longer in use on this node's engine (the decision on
 * them was carried out; other nodes' reports may lag behind it). */
static int decide_array(const struct clr_cib_facts *f, unsigned ai, uint64_t now_ms, struct clr_ev_state *st,
                        uint64_t out, struct clr_pol_facts *pf, struct clr_pol_decision *d, char *bad,
                        size_t badlen)
{
    static const char *names[CLR_POL_MAX_NODES];
    int rc = clr_evidence_facts(f, ai, self, now_ms, st, pf, bad, badlen);

    if (rc < 0)
        return rc;
    for (unsigned r = 0; r < pf->n_devs; r++)
        pf->dev[r].out = (out >> r) & 1;
    for (unsigned n = 0; n < f->n_nodes; n++) {
        const struct fence_state *fs = fence_of(f->node[n].name, false);

        names[n] = f->node[n].name;
        if (fs && fs->state != CLR_POL_FENCE_NONE) {
            pf->node[n].fence = fs->state;
            pf->node[n].since_fence_ms = now_ms - fs->at_ms;
        }
    }
    pf->node_names = names;
    clr_policy_decide(pf, &f->array[ai].settings, d);
    return 0;
}

static json_object *decision_json(const struct clr_cib_facts *f, unsigned ai)
{
    json_object *o = json_object_new_object(), *ev = json_object_new_object();
    struct clr_ev_state st;
    struct clr_pol_facts pf;
    struct clr_pol_decision d;
    char bad[CLR_CIB_ERR_MAX * 2];
    int rc;

    for (unsigned n = 0; n < f->n_nodes; n++)
        if (f->array[ai].io[n][0])
            json_object_object_add(ev, f->node[n].name, json_object_new_string(f->array[ai].io[n]));
    json_object_object_add(o, "evidence", ev);
    memset(&st, 0, sizeof(st));
    rc = decide_array(f, ai, 1, &st, 0, &pf, &d, bad, sizeof(bad));
    json_object_object_add(o, "evidence_errors", bad[0] ? json_object_new_string(bad) : NULL);
    if (rc < 0) {
        json_object_object_add(o, "decision", NULL);
        json_object_object_add(
            o, "why_none",
            json_object_new_string(rc == -ENOENT ? "this node is not in the CIB" : "no node runs the array"));
        return o;
    }
    json_object_object_add(o, "decider", json_object_new_boolean(pf.decider));
    json_object_object_add(o, "redundancy", json_object_new_int(pf.redundancy));
    {
        json_object *x = json_object_new_object();

        json_object_object_add(x, "action", json_object_new_string(clr_policy_action_name(d.action)));
        json_object_object_add(x, "row", json_object_new_int((int)d.row));
        json_object_object_add(x, "devs", json_object_new_int64((int64_t)d.devs));
        json_object_object_add(x, "nodes", json_object_new_int64(d.nodes));
        json_object_object_add(x, "evidence", json_object_new_string(d.evidence));
        json_object_object_add(o, "decision", x);
    }
    return o;
}

static const char *node_state(const struct clr_cib_node *n)
{
    return n->member ? "member" : n->in_ccm ? "in membership, not joined" : "down";
}

/* The text form of decision_json(): the same facts and decision. */
static void print_decision(const struct clr_cib_facts *f, unsigned ai)
{
    json_object *o = decision_json(f, ai), *ev, *v, *d;

    if (json_object_object_get_ex(o, "evidence", &ev)) {
        json_object_object_foreach(ev, node, val)
        {
            printf("  evidence of %s: %s\n", node, json_object_get_string(val));
        }
    }
    if (json_object_object_get_ex(o, "evidence_errors", &v) && v)
        printf("  evidence ignored: %s\n", json_object_get_string(v));
    if (!json_object_object_get_ex(o, "decision", &d) || !d) {
        printf("  decision: none (%s)\n",
               json_object_object_get_ex(o, "why_none", &v) ? json_object_get_string(v) : "?");
    } else {
        json_object *row, *act, *evd, *dec;

        json_object_object_get_ex(d, "row", &row);
        json_object_object_get_ex(d, "action", &act);
        json_object_object_get_ex(d, "evidence", &evd);
        json_object_object_get_ex(o, "decider", &dec);
        printf("  decision: row %d %s: %s%s\n", json_object_get_int(row), json_object_get_string(act),
               *json_object_get_string(evd) ? json_object_get_string(evd) : "nothing to do",
               json_object_get_boolean(dec) ? "" : " (this node is not the decider)");
    }
    json_object_put(o);
}

static void print_text(const struct clr_cib_facts *f)
{
    printf("quorum: %s; DC: %s; fencing: %s, %u device(s)\n", f->have_quorum ? "yes" : "NO",
           f->dc_uuid[0] ? f->dc_uuid : "none", f->stonith_enabled ? "on" : "OFF", f->fence_devices);
    for (unsigned i = 0; i < f->n_nodes; i++)
        printf("node %s (id %s): %s%s%s\n", f->node[i].name, f->node[i].id, node_state(&f->node[i]),
               f->node[i].standby ? ", standby" : "", f->node[i].maintenance ? ", maintenance" : "");
    for (unsigned i = 0; i < f->n_arrays; i++) {
        const struct clr_cib_array *a = &f->array[i];
        const struct clr_pol_settings *s = &a->settings;

        printf("array %s (resource %s%s): path_failure_action=%s last_device_action=%s fence_action=%s "
               "freeze_timeout=%llums confirm_timeout=%llums probe_timeout=%llums io_timeout=%llums "
               "error_threshold=%u error_window=%llums max_read_errors=%u%s%s\n",
               a->name[0] ? a->name : "?", a->rsc, a->cloned ? ", cloned" : "",
               path_names[s->path_failure_action], last_names[s->last_device_action],
               fence_names[s->fence_action], (unsigned long long)s->freeze_timeout,
               (unsigned long long)s->confirm_timeout, (unsigned long long)s->probe_timeout,
               (unsigned long long)s->io_timeout, s->error_threshold, (unsigned long long)s->error_window,
               s->max_read_errors, a->error[0] ? "; BAD SETTINGS, defaults used: " : "", a->error);
        print_decision(f, i);
    }
}

/* One log line per fact that changed since the last reading. */
static void log_changes(const struct clr_cib_facts *o, const struct clr_cib_facts *n)
{
    if (o->have_quorum != n->have_quorum)
        syslog(n->have_quorum ? LOG_NOTICE : LOG_WARNING, "quorum %s", n->have_quorum ? "gained" : "LOST");
    if (strcmp(o->dc_uuid, n->dc_uuid))
        syslog(LOG_INFO, "DC is now %s", n->dc_uuid[0] ? n->dc_uuid : "none");
    if (o->stonith_enabled != n->stonith_enabled || o->fence_devices != n->fence_devices)
        syslog(LOG_NOTICE, "fencing %s, %u device(s)", n->stonith_enabled ? "on" : "OFF", n->fence_devices);
    for (unsigned i = 0; i < n->n_nodes; i++) {
        const struct clr_cib_node *b = &n->node[i], *a = clr_cib_node_find(o, b->name);

        if (!a || a->member != b->member || a->in_ccm != b->in_ccm)
            syslog(LOG_NOTICE, "node %s: %s", b->name, node_state(b));
        if (a && a->standby != b->standby)
            syslog(LOG_NOTICE, "node %s: standby %s", b->name, b->standby ? "on" : "off");
        if (a && a->maintenance != b->maintenance)
            syslog(LOG_NOTICE, "node %s: maintenance %s", b->name, b->maintenance ? "on" : "off");
    }
    for (unsigned i = 0; i < o->n_nodes; i++)
        if (!clr_cib_node_find(n, o->node[i].name))
            syslog(LOG_NOTICE, "node %s: removed from the configuration", o->node[i].name);
    for (unsigned i = 0; i < n->n_arrays; i++) {
        const struct clr_cib_array *b = &n->array[i], *a = NULL;

        for (unsigned k = 0; k < o->n_arrays && !a; k++)
            if (!strcmp(o->array[k].rsc, b->rsc))
                a = &o->array[k];
        if (a && !memcmp(&a->settings, &b->settings, sizeof(b->settings)) && !strcmp(a->error, b->error))
            continue;
        if (b->error[0])
            syslog(LOG_ERR, "resource %s: bad policy settings, the defaults apply: %s", b->rsc, b->error);
        else {
            json_object *s = settings_json(&b->settings);

            syslog(LOG_NOTICE, "resource %s (array %s): policy %s", b->rsc, b->name[0] ? b->name : "?",
                   json_object_to_json_string_ext(s, JSON_C_TO_STRING_PLAIN));
            json_object_put(s);
        }
    }
}

/* ---- the local engines' evidence ---------------------------------------- */

static int attrd(const char *name, const char *value)
{
    const char *set[] = { "attrd_updater", "-n", name, "-U", value, NULL };
    const char *del[] = { "attrd_updater", "-n", name, "-D", NULL };
    GError *gerr = NULL;
    int status = 0;

    if (!g_spawn_sync(NULL, (char **)(value ? set : del), NULL,
                      G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                      NULL, NULL, NULL, &status, &gerr)) {
        syslog(LOG_WARNING, "cannot run attrd_updater for %s: %s", name, gerr ? gerr->message : "?");
        g_clear_error(&gerr);
        return -ENOENT;
    }
    if (!g_spawn_check_wait_status(status, &gerr)) {
        syslog(LOG_WARNING, "attrd_updater -n %s %s failed: %s", name, value ? "-U" : "-D",
               gerr ? gerr->message : "?");
        g_clear_error(&gerr);
        return -EIO;
    }
    return 0;
}

static int64_t jint(json_object *o, const char *key)
{
    json_object *v;

    return json_object_object_get_ex(o, key, &v) && v ? json_object_get_int64(v) : 0;
}

/* The engine's error counters, in the error window, as one member's class
 * and count: a reservation conflict over a path error over a media error
 * (the first means this node is fenced; the second is what a probe
 * settles). */
static void member_evidence(struct tracked *t, unsigned role, const uint64_t count[N_CLASSES],
                            uint64_t last_ms, uint64_t now_ms, uint64_t window_ms, struct clr_evidence *e)
{
    static const uint8_t cls[3] = { CLR_POL_ERR_MEDIA, CLR_POL_ERR_PATH, CLR_POL_ERR_RESV };
    uint32_t w[N_CLASSES], sum = 0;

    for (unsigned c = 0; c < N_CLASSES; c++) {
        if (!t->hist_ok[role])
            clr_ev_hist_init(&t->hist[role][c], count[c], count[c] ? last_ms : 0);
        else
            clr_ev_hist_add(&t->hist[role][c], now_ms, count[c]);
        w[c] = clr_ev_hist_window(&t->hist[role][c], now_ms, window_ms);
        if (c < 3) /* media on a write is among media already */
            sum += w[c];
    }
    t->hist_ok[role] = true;
    e->errors[role] = (uint16_t)(sum > 65535 ? 65535 : sum);
    e->media_writes[role] = (uint16_t)(w[3] > 65535 ? 65535 : w[3]);
    e->err[role] = w[2] ? cls[2] : w[1] ? cls[1] : w[0] ? cls[0] : CLR_POL_ERR_NONE;
}

/* What this node's engine says about array @a: 0 with @e filled, -ENOENT
 * if it does not run here, or the control call's error. */
static int local_evidence(const struct clr_cib_array *a, struct tracked *t, uint64_t now_ms,
                          struct clr_evidence *e)
{
    char path[sizeof(a->run_dir) + CLR_CIB_NAME_MAX + 8];
    uint64_t count[CLR_POL_MAX_DEVS][N_CLASSES], last[CLR_POL_MAX_DEVS], stall[CLR_POL_MAX_DEVS];
    json_object *st = NULL, *devs, *v;
    struct clr_err err;
    int rc;

    memset(e, 0, sizeof(*e));
    snprintf(path, sizeof(path), "%s/%s.ctl", a->run_dir, a->name);
    if (access(path, F_OK) != 0)
        return -ENOENT;
    rc = clr_ctl_call(path, "status", NULL, CTL_TIMEOUT, &st, &err);
    if (rc < 0) {
        syslog(LOG_DEBUG, "%s: status: %s", path, err.msg);
        return rc;
    }
    e->n_devs = (unsigned)jint(st, "raid_disks");
    if (e->n_devs > CLR_POL_MAX_DEVS)
        e->n_devs = CLR_POL_MAX_DEVS;
    e->redundancy = (unsigned)jint(st, "redundancy");
    e->frozen = json_object_object_get_ex(st, "frozen", &v) && v;
    t->engine_frozen = e->frozen;
    if (!e->frozen)
        t->thawed_error = false;
    t->held = 0;
    t->in_use = 0;
    memset(count, 0, sizeof(count));
    memset(last, 0, sizeof(last));
    memset(stall, 0, sizeof(stall));
    if (json_object_object_get_ex(st, "devices", &devs) && json_object_is_type(devs, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(devs); i++) {
            json_object *d = json_object_array_get_idx(devs, i), *x, *r = NULL;
            int64_t role;

            /* members in use only: a faulty one is out already, and the
             * decision core's redundancy counts the members in use */
            if (!(json_object_object_get_ex(d, "role", &r) && r))
                continue;
            role = json_object_get_int64(r);
            if (role < 0 || role >= (int64_t)e->n_devs || !json_object_object_get_ex(d, "io_errors", &x))
                continue;
            t->in_use |= 1ull << role;
            {
                json_object *pj;

                if (json_object_object_get_ex(d, "path", &pj) && pj)
                    snprintf(t->path[role], sizeof(t->path[role]), "%s", json_object_get_string(pj));
            }
            {
                json_object *aw;

                if (json_object_object_get_ex(d, "awaiting_decision", &aw) && aw)
                    t->held += (unsigned)jint(aw, "held_writes");
            }
            if ((uint64_t)jint(d, "stalled_ms") > stall[role])
                stall[role] = (uint64_t)jint(d, "stalled_ms");
            count[role][0] += (uint64_t)jint(x, "media");
            count[role][1] += (uint64_t)jint(x, "path");
            count[role][2] += (uint64_t)jint(x, "reservation");
            count[role][3] += (uint64_t)jint(x, "media_on_write");
            if ((uint64_t)jint(x, "last_ms") > last[role])
                last[role] = (uint64_t)jint(x, "last_ms");
        }
    }
    json_object_put(st);
    for (unsigned d = 0; d < e->n_devs; d++) {
        member_evidence(t, d, count[d], last[d], now_ms, a->settings.error_window, e);
        /* requests in flight and no completion for io_timeout: hung */
        if (stall[d] >= a->settings.io_timeout) {
            if (e->err[d] != CLR_POL_ERR_HUNG)
                syslog(LOG_WARNING, "array %s: member %u (%s): no completion for %llu ms: hung", a->name, d,
                       t->path[d], (unsigned long long)stall[d]);
            e->err[d] = CLR_POL_ERR_HUNG;
            if (!e->errors[d])
                e->errors[d] = 1;
        }
    }
    return 0;
}

static uint64_t real_ms(void)
{
    return (uint64_t)(g_get_real_time() / 1000);
}

static uint64_t mono_ms(void)
{
    return (uint64_t)(g_get_monotonic_time() / 1000);
}

/* ---- probes ---------------------------------------------------------- */

struct probe_job {
    char ctl[sizeof(((struct clr_cib_array *)0)->run_dir) + CLR_CIB_NAME_MAX + 8];
    char dev[256];
    char rsc[CLR_CIB_NAME_MAX];
    char array[CLR_CIB_NAME_MAX];
    unsigned role, gen;
    int timeout_ms;
    int result; /* 1 passed, 0 failed, -1 could not ask */
    char why[300];
};

static gboolean probe_done(gpointer data);

/* Runs in its own thread: the control call may wait up to probe_timeout;
 * the answer goes back to the main loop. */
static gpointer probe_thread(gpointer data)
{
    struct probe_job *j = data;
    json_object *args = json_object_new_object(), *res = NULL, *v;
    struct clr_err e = { "" };
    int rc;

    json_object_object_add(args, "device", json_object_new_string(j->dev));
    rc = clr_ctl_call(j->ctl, "probe", args, j->timeout_ms, &res, &e);
    if (rc == 0) {
        j->result = json_object_object_get_ex(res, "ok", &v) && json_object_get_boolean(v);
        snprintf(j->why, sizeof(j->why), "%s",
                 json_object_object_get_ex(res, "errno", &v) && v ? json_object_get_string(v) : "");
    } else if (rc == -ETIMEDOUT) {
        j->result = 0;
        snprintf(j->why, sizeof(j->why), "no answer within probe_timeout (%d ms)", j->timeout_ms);
    } else {
        j->result = -1;
        snprintf(j->why, sizeof(j->why), "%s", e.msg);
    }
    json_object_put(res);
    g_idle_add(probe_done, j);
    return NULL;
}

static struct tracked *find_tracked(const char *rsc)
{
    for (unsigned i = 0; i < CLR_CIB_MAX_ARRAYS; i++)
        if (tracked[i].rsc[0] && !strcmp(tracked[i].rsc, rsc))
            return &tracked[i];
    return NULL;
}

static void probe_answer(struct probe_job *j);

static gboolean probe_done(gpointer data)
{
    probe_answer(data);
    g_free(data);
    return G_SOURCE_REMOVE;
}

static void probe_answer(struct probe_job *j)
{
    struct tracked *t;
    uint8_t was;

    t = find_tracked(j->rsc);
    if (!t || t->probe_gen[j->role] != j->gen || !t->probe_busy[j->role])
        return; /* the reports ended meanwhile, or the resource went */
    t->probe_busy[j->role] = false;
    t->probe_done_ms[j->role] = mono_ms();
    was = t->probe[j->role];
    if (j->result < 0) {
        syslog(LOG_WARNING, "array %s: cannot probe %s: %s", j->array, j->dev, j->why);
        if (was == CLR_POL_PROBE_PENDING)
            t->probe[j->role] = CLR_POL_PROBE_NOT_RUN;
        return;
    }
    t->probe[j->role] = j->result ? CLR_POL_PROBE_OK : CLR_POL_PROBE_FAILED;
    if (++t->probe_seq[j->role] == 0)
        t->probe_seq[j->role] = 1;
    if (t->probe[j->role] != was)
        syslog(j->result ? LOG_NOTICE : LOG_WARNING,
               "array %s: probe of member %u (%s) from this node %s%s%s", j->array, j->role, j->dev,
               j->result ? "passed" : "FAILED", j->result ? "" : ": ", j->why);
}

static void probe_start(const struct clr_cib_array *a, struct tracked *t, unsigned role)
{
    struct probe_job *j = g_new0(struct probe_job, 1);
    GThread *thread;
    GError *gerr = NULL;

    snprintf(j->ctl, sizeof(j->ctl), "%s/%s.ctl", a->run_dir, a->name);
    snprintf(j->dev, sizeof(j->dev), "%s", t->path[role]);
    snprintf(j->rsc, sizeof(j->rsc), "%s", a->rsc);
    snprintf(j->array, sizeof(j->array), "%s", a->name);
    j->role = role;
    j->gen = ++t->probe_gen[role];
    j->timeout_ms = a->settings.probe_timeout > INT32_MAX ? INT32_MAX : (int)a->settings.probe_timeout;
    t->probe_busy[role] = true;
    /* a retry keeps the last result published until its own comes */
    if (t->probe[role] == CLR_POL_PROBE_NOT_RUN) {
        t->probe[role] = CLR_POL_PROBE_PENDING;
        syslog(LOG_INFO, "array %s: member %u (%s) reported failing: probing it from this node", a->name,
               role, j->dev);
    }
    thread = g_thread_try_new("clraid-probe", probe_thread, j, &gerr);
    if (!thread) {
        syslog(LOG_ERR, "array %s: cannot start a probe thread: %s", a->name, gerr ? gerr->message : "?");
        g_clear_error(&gerr);
        t->probe_busy[role] = false;
        g_free(j);
        return;
    }
    g_thread_unref(thread);
}

/* Probes follow the reports: a member some node reports (this one
 * included) is probed from here; a failed probe is retried every
 * probe_timeout (a path comes back), a passed one stands; when no node
 * reports the member any more the result is dropped. */
#define PROBE_RETRY_MS 2000

static void probes_update(const struct clr_cib_array *a, unsigned ai, struct tracked *t,
                          struct clr_evidence *e)
{
    uint64_t reported = 0;
    uint32_t sum[CLR_POL_MAX_DEVS];
    bool fence_pending = false;

    for (unsigned d = 0; d < e->n_devs; d++) {
        sum[d] = e->errors[d];
        if (e->err[d] != CLR_POL_ERR_NONE)
            reported |= 1ull << d;
    }
    for (unsigned n = 0; n < facts.n_nodes; n++) {
        struct clr_evidence o;

        if (!facts.node[n].member || !a->io[n][0] || clr_evidence_parse(a->io[n], &o, NULL, 0) < 0)
            continue;
        if (!strcmp(facts.node[n].name, self))
            continue; /* ours is @e, newer than the CIB's copy */
        for (unsigned d = 0; d < o.n_devs && d < e->n_devs; d++) {
            sum[d] += o.errors[d];
            if (o.err[d] != CLR_POL_ERR_NONE)
                reported |= 1ull << d;
        }
    }
    (void)ai;
    for (unsigned n = 0; n < facts.n_nodes && n < CLR_POL_MAX_NODES; n++)
        if (facts.node[n].member && !strncmp(a->pending[n], "fence", 5))
            fence_pending = true;
    for (unsigned d = 0; d < e->n_devs; d++) {
        /* A failed probe is repeated every 2 s while reports last, and
         * a passed one too while a decider waits to fence (row 3 waits
         * for a newer result from every node it weighs): a result stands
         * until the next one, and the fault may have started or ended
         * since.  Otherwise a failed one every probe_timeout, a passed
         * one when the reports grow. */
        bool quick = t->probe[d] == CLR_POL_PROBE_FAILED || fence_pending;
        uint64_t every =
            quick && a->settings.probe_timeout > PROBE_RETRY_MS ? PROBE_RETRY_MS : a->settings.probe_timeout;
        bool due = !t->probe_done_ms[d] || mono_ms() - t->probe_done_ms[d] >= every;

        if (!(reported & (1ull << d))) {
            t->probe_gen[d]++; /* an answer still on its way is dropped */
            t->probe_busy[d] = false;
            t->probe_done_ms[d] = 0;
            t->probe_basis[d] = 0;
            t->probe[d] = CLR_POL_PROBE_NOT_RUN;
        } else if (!t->probe_busy[d] && t->path[d][0] &&
                   ((due && (t->probe[d] == CLR_POL_PROBE_NOT_RUN || t->probe[d] == CLR_POL_PROBE_FAILED ||
                             (t->probe[d] == CLR_POL_PROBE_OK && fence_pending))) ||
                    (t->probe[d] == CLR_POL_PROBE_OK && sum[d] > t->probe_basis[d]))) {
            t->probe_basis[d] = sum[d];
            probe_start(a, t, d);
        } else if (sum[d] < t->probe_basis[d]) {
            t->probe_basis[d] = sum[d];
        }
        e->probe[d] = t->probe[d];
        e->probe_seq[d] = t->probe_seq[d];
    }
}

static struct tracked *track(const char *rsc)
{
    struct tracked *free_slot = NULL;

    for (unsigned i = 0; i < CLR_CIB_MAX_ARRAYS; i++) {
        if (tracked[i].rsc[0] && !strcmp(tracked[i].rsc, rsc))
            return &tracked[i];
        if (!tracked[i].rsc[0] && !free_slot)
            free_slot = &tracked[i];
    }
    if (free_slot) {
        memset(free_slot, 0, sizeof(*free_slot));
        snprintf(free_slot->rsc, sizeof(free_slot->rsc), "%s", rsc);
    }
    return free_slot;
}

static bool same_decision(const struct clr_pol_decision *a, const struct clr_pol_decision *b)
{
    return a->action == b->action && a->row == b->row && a->devs == b->devs && a->nodes == b->nodes;
}

static void publish(const char *what, const char *array, const char *value)
{
    char name[CLR_CIB_NAME_MAX + 32];

    snprintf(name, sizeof(name), "clraid-%s-%s", array, what);
    attrd(name, value);
}

/* ---- carrying decisions out ------------------------------------------ */

static stonith_t *st_conn;
static bool st_connected;

static void fence_result(stonith_t *st, stonith_callback_data_t *data)
{
    char *node = data->userdata;
    struct fence_state *fs = node ? fence_of(node, true) : NULL;

    (void)st;
    if (fs && fs->state == CLR_POL_FENCE_REQUESTED) {
        fs->state = data->rc == pcmk_ok ? CLR_POL_FENCE_DONE : CLR_POL_FENCE_FAILED;
        fs->at_ms = mono_ms();
        syslog(data->rc == pcmk_ok ? LOG_NOTICE : LOG_ERR, "fencing of %s %s%s (%llu ms after the request)",
               node, data->rc == pcmk_ok ? "succeeded" : "FAILED: ",
               data->rc == pcmk_ok ? "" : pcmk_strerror(data->rc),
               (unsigned long long)(fs->at_ms - fs->requested_ms));
    }
    free(node);
}

/* Fencing by anyone: Pacemaker's own, an operator's, another node's. */
static void fence_notified(stonith_t *st, stonith_event_t *e)
{
    struct fence_state *fs;

    (void)st;
    if (!e || !e->target || !e->action || e->result != pcmk_ok)
        return;
    if (strcmp(e->action, "off") && strcmp(e->action, "reboot"))
        return;
    fs = fence_of(e->target, true);
    if (!fs || fs->state == CLR_POL_FENCE_DONE)
        return;
    syslog(LOG_NOTICE, "%s was fenced (%s by %s for %s)", e->target, e->action,
           e->executioner ? e->executioner : "?", e->client_origin ? e->client_origin : "?");
    if (fs->state == CLR_POL_FENCE_NONE)
        fs->seen_down = false;
    fs->state = CLR_POL_FENCE_DONE;
    fs->at_ms = mono_ms();
}

static void fencer_lost(stonith_t *st, stonith_event_t *e)
{
    (void)st;
    (void)e;
    syslog(LOG_WARNING, "the connection to the fencer was lost: reconnecting when fencing is needed");
    st_connected = false;
}

static bool fencer_connect(void)
{
    int rc;

    if (st_connected)
        return true;
    if (!st_conn && !(st_conn = stonith_api_new())) {
        syslog(LOG_ERR, "cannot create a fencer connection");
        return false;
    }
    rc = st_conn->cmds->connect(st_conn, "clraid-policyd", NULL);
    if (rc != pcmk_ok) {
        syslog(LOG_ERR, "cannot connect to the fencer: %s", pcmk_strerror(rc));
        return false;
    }
    st_conn->cmds->register_notification(st_conn, T_STONITH_NOTIFY_DISCONNECT, fencer_lost);
    st_conn->cmds->register_notification(st_conn, T_STONITH_NOTIFY_FENCE, fence_notified);
    st_connected = true;
    return true;
}

#define FENCE_TIMEOUT_S 60

static void fence_request(const char *node, enum clr_pol_fence_action action, const char *why)
{
    struct fence_state *fs = fence_of(node, true);
    const char *act = action == CLR_POL_FENCE_OFF ? "off" : "reboot";
    int call;

    if (!fs || fs->state == CLR_POL_FENCE_REQUESTED || fs->state == CLR_POL_FENCE_DONE)
        return;
    fs->state = CLR_POL_FENCE_FAILED;
    fs->seen_down = false;
    fs->requested_ms = fs->at_ms = mono_ms();
    if (!fencer_connect())
        return;
    call = st_conn->cmds->fence(st_conn, st_opt_none, node, act, FENCE_TIMEOUT_S, 0);
    if (call < 0) {
        syslog(LOG_ERR, "cannot request fencing of %s: %s", node, pcmk_strerror(call));
        return;
    }
    fs->state = CLR_POL_FENCE_REQUESTED;
    syslog(LOG_CRIT, "fencing %s (%s): %s", node, act, why);
    st_conn->cmds->register_callback(st_conn, call, FENCE_TIMEOUT_S + 10, st_opt_timeout_updates,
                                     strdup(node), "clraid-fence", fence_result);
}

/* A control call that may take a while (failing a member writes every
 * superblock and waits for every node), in its own thread. */
struct ctl_job {
    char ctl[sizeof(((struct clr_cib_array *)0)->run_dir) + CLR_CIB_NAME_MAX + 8];
    char cmd[16];
    char dev[256];
    char rsc[CLR_CIB_NAME_MAX];
    char array[CLR_CIB_NAME_MAX];
    int rc;
    char why[300];
};

/* A failed command is retried by carrying the decision out again, once
 * CTL_RETRY_S seconds passed (not on every tick: the engine may refuse
 * for a while, and each try is a connection and a log line). */
#define CTL_RETRY_S 5

static gboolean ctl_retry(gpointer data)
{
    struct tracked *t = find_tracked(data);

    if (t)
        t->have_last = false; /* the same decision is carried out again */
    g_free(data);
    return G_SOURCE_REMOVE;
}

static gboolean ctl_job_done(gpointer data)
{
    struct ctl_job *j = data;

    if (j->rc == 0) {
        syslog(LOG_NOTICE, "array %s: %s%s%s: done", j->array, j->cmd, j->dev[0] ? " " : "", j->dev);
    } else {
        syslog(LOG_ERR, "array %s: %s%s%s failed: %s; trying again in %d s", j->array, j->cmd,
               j->dev[0] ? " " : "", j->dev, j->why, CTL_RETRY_S);
        g_timeout_add_seconds(CTL_RETRY_S, ctl_retry, g_strdup(j->rsc));
    }
    g_free(j);
    return G_SOURCE_REMOVE;
}

static gpointer ctl_job_thread(gpointer data)
{
    struct ctl_job *j = data;
    json_object *args = NULL, *res = NULL;
    struct clr_err e = { "" };

    if (j->dev[0]) {
        args = json_object_new_object();
        json_object_object_add(args, "device", json_object_new_string(j->dev));
    }
    j->rc = clr_ctl_call(j->ctl, j->cmd, args, 60000, &res, &e);
    snprintf(j->why, sizeof(j->why), "%s", e.msg);
    json_object_put(res);
    g_idle_add(ctl_job_done, j);
    return NULL;
}

static void ctl_job(const struct clr_cib_array *a, const char *cmd, const char *dev)
{
    struct ctl_job *j = g_new0(struct ctl_job, 1);
    GError *gerr = NULL;
    GThread *thread;

    snprintf(j->ctl, sizeof(j->ctl), "%s/%s.ctl", a->run_dir, a->name);
    snprintf(j->cmd, sizeof(j->cmd), "%s", cmd);
    snprintf(j->dev, sizeof(j->dev), "%s", dev ? dev : "");
    snprintf(j->rsc, sizeof(j->rsc), "%s", a->rsc);
    snprintf(j->array, sizeof(j->array), "%s", a->name);
    thread = g_thread_try_new("clraid-ctl", ctl_job_thread, j, &gerr);
    if (!thread) {
        syslog(LOG_ERR, "array %s: cannot start a thread for %s: %s", a->name, cmd,
               gerr ? gerr->message : "?");
        g_clear_error(&gerr);
        g_free(j);
        return;
    }
    g_thread_unref(thread);
}

/* The decider carries its decision out. */
static void carry_out(const struct clr_cib_array *a, struct tracked *t, const struct clr_pol_decision *d)
{
    switch (d->action) {
    case CLR_POL_FENCE:
    case CLR_POL_FREEZE: /* row 9: `nodes` are the fencing to retry */
        for (unsigned n = 0; n < facts.n_nodes; n++)
            if (d->nodes & (1u << n)) {
                struct fence_state *fs = fence_of(facts.node[n].name, true);

                if (fs && fs->state == CLR_POL_FENCE_FAILED && d->action == CLR_POL_FREEZE)
                    fs->state = CLR_POL_FENCE_NONE; /* retry */
                fence_request(facts.node[n].name, d->fence_action, d->evidence);
            }
        break;
    case CLR_POL_FAIL_DISK:
        for (unsigned r = 0; r < CLR_POL_MAX_DEVS; r++)
            if ((d->devs & (1ull << r)) && t->path[r][0]) {
                syslog(LOG_CRIT, "array %s: failing member %u (%s) cluster-wide: %s", a->name, r, t->path[r],
                       d->evidence);
                ctl_job(a, "fail", t->path[r]);
            }
        break;
    case CLR_POL_ERROR:
        break; /* the last copy: every node thaws its engine (pending "error") */
    case CLR_POL_REWRITE:
        break; /* the engine that read the error rewrites it (row 1) */
    default:
        break;
    }
}

/* Row 2 (a disk failing on every node) fails it cluster-wide only on a
 * probe this node ran after the decision came up, and that failed: a failed probe stands until its
 * retry, and the member may have come back meanwhile (a fault cleared, a
 * re-add that brought redundancy back).  The decider runs the array
 * (evidence.c), so its own probe is among those the decision counts.
 * false: wait (a passed probe is published, and the decision changes). */
static bool fresh_failed_probes(const struct clr_cib_array *a, struct tracked *t,
                                const struct clr_pol_decision *d)
{
    bool fresh = true;

    if (!t->fail_seen_ms) {
        t->fail_seen_ms = mono_ms();
        syslog(LOG_NOTICE, "array %s: a disk would fail cluster-wide: probing it again from this node first",
               a->name);
    }
    for (unsigned r = 0; r < CLR_POL_MAX_DEVS; r++) {
        if (!(d->devs & (1ull << r)))
            continue;
        if (t->probe_busy[r] || t->probe_done_ms[r] < t->fail_seen_ms) {
            fresh = false;
            if (!t->probe_busy[r] && t->path[r][0])
                probe_start(a, t, r);
        } else if (t->probe[r] != CLR_POL_PROBE_FAILED) {
            fresh = false; /* it passed: the decision changes once published */
        }
    }
    return fresh;
}

/* Row 3 fences a node for its failed probe only once every node weighed
 * probed again after the decision came up: a failure may be older than
 * the passes it is weighed against (every node's fault cleared, the
 * others probed first), and a pass older than the failure (the fault hit
 * every node, the failing one probed first).  Live, a decider fenced a
 * healthy node each way.  A probe still pending or never answered is the
 * core's to judge (its deadline).  false: wait. */
static bool fresh_node_probes(const struct clr_cib_array *a, struct tracked *t,
                              const struct clr_pol_decision *d)
{
    bool fresh = true, first = !t->fence_seen_ms;

    if (first) {
        t->fence_seen_ms = mono_ms();
        memset(t->fence_basis, 0, sizeof(t->fence_basis));
    }
    /* every member's probes: a fence decision names nodes, not members */
    for (unsigned n = 0; n < facts.n_nodes && n < CLR_POL_MAX_NODES; n++) {
        struct clr_evidence e;

        if (!facts.node[n].member || !a->io[n][0] || clr_evidence_parse(a->io[n], &e, NULL, 0) < 0)
            continue;
        for (unsigned r = 0; r < e.n_devs; r++) {
            if (e.probe[r] != CLR_POL_PROBE_FAILED && e.probe[r] != CLR_POL_PROBE_OK)
                continue;
            if (first)
                t->fence_basis[n][r] = e.probe_seq[r];
            else if (e.probe_seq[r] == t->fence_basis[n][r] && e.probe_seq[r])
                fresh = false;
            if (first && e.probe_seq[r])
                fresh = false;
        }
    }
    if (first && !fresh)
        syslog(LOG_NOTICE, "array %s: %s: waiting for every node's next probe", a->name, d->evidence);
    else if (fresh)
        syslog(LOG_INFO, "array %s: every node probed again since the decision came up %llu ms ago", a->name,
               (unsigned long long)(mono_ms() - t->fence_seen_ms));
    return fresh;
}

/* What the decider publishes while its decision is not settled: held
 * writes keep waiting on every node (fence, freeze, fencing requested),
 * or every frozen engine returns errors (error). */
static void pending_of(const struct clr_pol_decision *d, const struct clr_pol_facts *pf, char *out,
                       size_t len)
{
    size_t at = 0;

    out[0] = '\0';
    if (d->action == CLR_POL_FENCE || d->action == CLR_POL_FREEZE)
        at = (size_t)snprintf(out, len, "%s", clr_policy_action_name(d->action));
    else if (d->action == CLR_POL_ERROR && !d->nodes)
        snprintf(out, len, "error");
    else if (d->action == CLR_POL_NONE)
        for (unsigned n = 0; n < pf->n_nodes; n++)
            if (pf->node[n].fence == CLR_POL_FENCE_REQUESTED) {
                at = (size_t)snprintf(out, len, "fencing");
                break;
            }
    for (unsigned n = 0; at && at < len && n < pf->n_nodes; n++)
        if ((d->nodes & (1u << n)) ||
            (d->action == CLR_POL_NONE && pf->node[n].fence == CLR_POL_FENCE_REQUESTED))
            at += (size_t)snprintf(out + at, len - at, " %s", pf->node_names ? pf->node_names[n] : "?");
}

/* The decider's pending value names @node ("fence n2 n3"). */
static bool pending_names(const char *pend, const char *node)
{
    size_t n = strlen(node);

    for (const char *p = pend ? strchr(pend, ' ') : NULL; p; p = strchr(p + 1, ' '))
        if (!strncmp(p + 1, node, n) && (p[1 + n] == ' ' || p[1 + n] == '\0'))
            return true;
    return false;
}

/* Every node: the lease on the local engine (held writes wait while a
 * decider has something pending), a thaw with errors when the decider
 * says so, and this node's #health while a decision is pending. */
static void engine_side(const struct clr_cib_array *a, unsigned ai, struct tracked *t, bool running)
{
    const char *pend = NULL, *health = NULL, *last = NULL;
    char ctl[sizeof(a->run_dir) + CLR_CIB_NAME_MAX + 8], name[CLR_CIB_NAME_MAX + 32];

    for (unsigned n = 0; n < facts.n_nodes; n++) {
        const char *dn = facts.array[ai].decision[n];

        if (facts.node[n].member && facts.array[ai].pending[n][0])
            pend = facts.array[ai].pending[n];
        /* the newest decision: its time comes first, as text that sorts */
        if (dn[0] && (!last || strcmp(dn, last) > 0))
            last = dn;
    }
    if (running) {
        json_object *args = json_object_new_object(), *res = NULL;
        struct clr_err e = { "" };
        bool hold = pend && strncmp(pend, "error", 5) != 0;

        snprintf(ctl, sizeof(ctl), "%s/%s.ctl", a->run_dir, a->name);
        json_object_object_add(args, "confirm_ms",
                               json_object_new_int64(a->settings.confirm_timeout > 3600000
                                                         ? 3600000
                                                         : (int64_t)a->settings.confirm_timeout));
        json_object_object_add(args, "lease_ms", json_object_new_int64(3 * TICK_MS));
        json_object_object_add(args, "hold", json_object_new_boolean(hold));
        json_object_object_add(args, "decision", last ? json_object_new_string(last) : NULL);
        json_object_object_add(args, "pending", pend ? json_object_new_string(pend) : NULL);
        if (clr_ctl_call(ctl, "policy", args, CTL_TIMEOUT, &res, &e) < 0)
            syslog(LOG_DEBUG, "array %s: policy lease: %s", a->name, e.msg);
        json_object_put(res);
        if (pend && !strcmp(pend, "error") && t->engine_frozen && !t->thawed_error) {
            syslog(LOG_CRIT,
                   "array %s: the decider says the last copy failed (last_device_action=error): "
                   "returning errors to the blocked I/O",
                   a->name);
            t->thawed_error = true;
            ctl_job(a, "thaw-error", NULL);
        }
        if (t->held)
            health = pending_names(pend, self) ? "red" : "yellow";
    }
    if (health != t->health) {
        snprintf(name, sizeof(name), "#health-clraid-%s-decision", a->name);
        attrd(name, health);
        t->health = health;
    }
}

/* true if the array's engine runs on this node */
static bool tick_array(const struct clr_cib_array *a, unsigned ai, struct tracked *t)
{
    bool running;
    struct clr_evidence e;
    struct clr_pol_facts pf;
    struct clr_pol_decision d;
    char value[CLR_CIB_ATTR_MAX], bad[CLR_CIB_ERR_MAX * 2];
    int rc;

    /* 1. this node's evidence, published when it changes */
    rc = local_evidence(a, t, real_ms(), &e);
    running = rc == 0;
    if (rc == 0)
        probes_update(a, ai, t, &e);
    if (rc == 0 && clr_evidence_format(&e, value, sizeof(value)) == 0) {
        if (!t->published || strcmp(value, t->value)) {
            if (strstr(value, " m") || strstr(value, " p"))
                syslog(LOG_WARNING, "array %s: this node sees %s", a->name, value);
            publish("io", a->name, value);
            snprintf(t->value, sizeof(t->value), "%s", value);
            t->published = true;
        }
    } else if (t->published) {
        /* not running here (any more): no evidence from this node */
        publish("io", a->name, NULL);
        t->published = false;
        t->value[0] = '\0';
        memset(t->hist_ok, 0, sizeof(t->hist_ok));
        for (unsigned r = 0; r < CLR_POL_MAX_DEVS; r++) {
            t->probe_gen[r]++;
            t->probe_busy[r] = false;
            t->probe_done_ms[r] = 0;
            t->probe[r] = CLR_POL_PROBE_NOT_RUN;
        }
    }
    /* 2. the engine's lease, a decider's "error", this node's health */
    engine_side(a, ai, t, rc == 0);
    /* 3. the decision from everyone's evidence, as the CIB has it */
    rc = decide_array(&facts, ai, mono_ms(), &t->st, running ? ~t->in_use : 0, &pf, &d, bad, sizeof(bad));
    if (bad[0])
        syslog(LOG_WARNING, "array %s: evidence ignored: %s", a->name, bad);
    if (rc < 0) {
        if (t->have_last && t->decision_published)
            publish("decision", a->name, NULL);
        t->have_last = t->decision_published = false;
        if (t->pending[0])
            publish("pending", a->name, NULL);
        t->pending[0] = '\0';
        return running;
    }
    {
        char pend[CLR_CIB_PENDING_MAX] = "";

        if (pf.decider)
            pending_of(&d, &pf, pend, sizeof(pend));
        if (strcmp(pend, t->pending)) {
            publish("pending", a->name, pend[0] ? pend : NULL);
            snprintf(t->pending, sizeof(t->pending), "%s", pend);
        }
    }
    if (d.action != CLR_POL_FAIL_DISK || !pf.decider)
        t->fail_seen_ms = 0;
    if (d.action != CLR_POL_FENCE || d.row != 3 || !pf.decider)
        t->fence_seen_ms = 0;
    if (t->have_last && same_decision(&t->last, &d))
        return running;
    if (pf.decider && d.action == CLR_POL_FAIL_DISK && d.row == 2 && !fresh_failed_probes(a, t, &d))
        return running;
    if (pf.decider && d.action == CLR_POL_FENCE && d.row == 3 && !fresh_node_probes(a, t, &d))
        return running;
    t->fail_seen_ms = 0;
    if (d.action != CLR_POL_NONE || d.row)
        syslog(pf.decider || d.action == CLR_POL_STOP ? LOG_NOTICE : LOG_INFO, "array %s: %s: row %u, %s: %s",
               a->name, pf.decider || d.action == CLR_POL_STOP ? "decided" : "would decide", d.row,
               clr_policy_action_name(d.action), d.evidence);
    else if (t->have_last && (t->last.action != CLR_POL_NONE || t->last.row))
        syslog(LOG_INFO, "array %s: nothing to decide%s%s", a->name, d.evidence[0] ? ": " : "", d.evidence);
    else if (d.evidence[0] && pf.decider)
        syslog(LOG_INFO, "array %s: %s", a->name, d.evidence);
    if (pf.decider)
        carry_out(a, t, &d);
    if (d.action == CLR_POL_STOP) {
        /* row 7, decided by this node for itself, with or without
         * quorum: a reservation conflict says it has been fenced.  Its
         * engine stops (held writes are not acknowledged, the bitmap is
         * handed to the others); Pacemaker's monitor then finds it gone,
         * and a restart works only once the reservation lets it write. */
        syslog(LOG_CRIT, "array %s: stopping this node's engine: %s", a->name, d.evidence);
        ctl_job(a, "stop", NULL);
    }
    if (pf.decider && (d.action != CLR_POL_NONE || d.row)) {
        GDateTime *now = g_date_time_new_now_local();
        gchar *when = g_date_time_format(now, "%F %T");

        snprintf(value, sizeof(value), "%s row %u %s: %s", when, d.row, clr_policy_action_name(d.action),
                 d.evidence);
        g_free(when);
        g_date_time_unref(now);
        publish("decision", a->name, value);
        t->decision_published = true;
    }
    t->last = d;
    t->have_last = true;
    return running;
}

/* --pidfile (how the OCF agent runs it): one daemon per node, which
 * leaves once no array of the CIB has run here for IDLE_EXIT_MS */
static const char *pidfile;
static uint64_t last_local_ms;
#define IDLE_EXIT_MS 10000

/* A fenced node that left the membership and is back is a new node: its
 * fencing is history (it must not count against it). */
static void fences_update(void)
{
    for (unsigned i = 0; i < CLR_POL_MAX_NODES; i++) {
        struct fence_state *fs = &fences[i];
        const struct clr_cib_node *n;

        if (!fs->node[0] || fs->state == CLR_POL_FENCE_NONE)
            continue;
        n = clr_cib_node_find(&facts, fs->node);
        if (!n || !n->member) {
            fs->seen_down = true;
        } else if (fs->seen_down && fs->state != CLR_POL_FENCE_REQUESTED) {
            syslog(LOG_INFO, "%s is a member again: its fencing is over", fs->node);
            memset(fs, 0, sizeof(*fs));
        }
    }
}

static gboolean on_tick(gpointer data)
{
    bool any = false;

    (void)data;
    fences_update();
    for (unsigned i = 0; i < CLR_CIB_MAX_ARRAYS; i++)
        tracked[i].seen = false;
    for (unsigned i = 0; i < facts.n_arrays; i++) {
        const struct clr_cib_array *a = &facts.array[i];
        struct tracked *t;

        if (!a->name[0])
            continue;
        t = track(a->rsc);
        if (!t)
            continue;
        t->seen = true;
        any |= tick_array(a, i, t);
    }
    if (any || !last_local_ms)
        last_local_ms = mono_ms();
    else if (pidfile && mono_ms() - last_local_ms >= IDLE_EXIT_MS) {
        syslog(LOG_NOTICE, "no clraid array has run on this node for %d s: exiting", IDLE_EXIT_MS / 1000);
        g_main_loop_quit(loop);
        return G_SOURCE_REMOVE;
    }
    /* resources deleted from the CIB: their attributes go too */
    for (unsigned i = 0; i < CLR_CIB_MAX_ARRAYS; i++) {
        struct tracked *t = &tracked[i];

        if (!t->rsc[0] || t->seen)
            continue;
        syslog(LOG_INFO, "resource %s is gone from the CIB", t->rsc);
        memset(t, 0, sizeof(*t));
    }
    return G_SOURCE_CONTINUE;
}

/* On stop: this node's evidence and decisions leave with it. */
static void unpublish_all(void)
{
    for (unsigned i = 0; i < facts.n_arrays; i++) {
        struct tracked *t = find_tracked(facts.array[i].rsc);

        if (!t || !facts.array[i].name[0])
            continue;
        if (t->published)
            publish("io", facts.array[i].name, NULL);
        if (t->decision_published)
            publish("decision", facts.array[i].name, NULL);
        if (t->pending[0])
            publish("pending", facts.array[i].name, NULL);
        if (t->health) {
            char name[CLR_CIB_NAME_MAX + 32];

            snprintf(name, sizeof(name), "#health-clraid-%s-decision", facts.array[i].name);
            attrd(name, NULL);
        }
    }
}

/* Evidence left from before a node rejoined.  Pacemaker's attribute
 * managers may write a node's old transient attributes back when it
 * rejoins, before its new engine and daemon run: a fenced node's last
 * evidence ("path errors on every member") would have it fenced again.
 * A node's evidence is ignored from its rejoin until it changes. */
struct rejoin {
    char node[CLR_CIB_NAME_MAX];
    bool member, seen;
    struct {
        char rsc[CLR_CIB_NAME_MAX];
        uint64_t hash; /* of the value it had when the node rejoined */
        bool stale;
    } arr[CLR_CIB_MAX_ARRAYS];
};
static struct rejoin rejoins[CLR_POL_MAX_NODES];

static uint64_t fnv1a(const char *v)
{
    uint64_t h = 1469598103934665603ull;

    for (; *v; v++)
        h = (h ^ (uint8_t)*v) * 1099511628211ull;
    return h;
}

static struct rejoin *rejoin_of(const char *node)
{
    struct rejoin *free_slot = NULL;

    for (unsigned i = 0; i < CLR_POL_MAX_NODES; i++) {
        if (rejoins[i].node[0] && !strcmp(rejoins[i].node, node))
            return &rejoins[i];
        if (!rejoins[i].node[0] && !free_slot)
            free_slot = &rejoins[i];
    }
    if (free_slot)
        snprintf(free_slot->node, sizeof(free_slot->node), "%s", node);
    return free_slot;
}

static void hide_stale_evidence(void)
{
    for (unsigned n = 0; n < facts.n_nodes; n++) {
        struct rejoin *r = rejoin_of(facts.node[n].name);

        if (!r)
            continue;
        if (!facts.node[n].member) {
            r->member = false;
            r->seen = true;
            continue;
        }
        if (!r->member) {
            r->member = true;
            /* members when the daemon started are trusted as they are */
            for (unsigned ai = 0; r->seen && ai < facts.n_arrays && ai < CLR_CIB_MAX_ARRAYS; ai++) {
                snprintf(r->arr[ai].rsc, sizeof(r->arr[ai].rsc), "%s", facts.array[ai].rsc);
                r->arr[ai].hash = fnv1a(facts.array[ai].io[n]);
                r->arr[ai].stale = facts.array[ai].io[n][0] != '\0';
                if (r->arr[ai].stale)
                    syslog(LOG_INFO,
                           "array %s: %s rejoined: its evidence from before is ignored until it changes",
                           facts.array[ai].name, r->node);
            }
            r->seen = true;
        }
        for (unsigned ai = 0; ai < facts.n_arrays && ai < CLR_CIB_MAX_ARRAYS; ai++) {
            if (!r->arr[ai].stale || strcmp(r->arr[ai].rsc, facts.array[ai].rsc))
                continue;
            if (fnv1a(facts.array[ai].io[n]) == r->arr[ai].hash)
                facts.array[ai].io[n][0] = '\0';
            else
                r->arr[ai].stale = false;
        }
    }
}

static int read_facts(void)
{
    char err[CLR_CIB_ERR_MAX];
    int rc = clr_cib_facts_read(current, &facts, err, sizeof(err));

    if (rc < 0)
        syslog(LOG_ERR, "cannot read the CIB: %s", err);
    else
        hide_stale_evidence();
    return rc;
}

static int query_all(void)
{
    xmlNode *out = NULL;
    int rc = cib->cmds->query(cib, NULL, &out, cib_scope_local | cib_sync_call);

    if (rc != pcmk_ok || !out) {
        syslog(LOG_ERR, "CIB query failed: %s", pcmk_strerror(rc));
        return -EIO;
    }
    if (current)
        free_xml(current);
    current = out;
    return 0;
}

static void changed(void)
{
    if (read_facts() < 0)
        return;
    if (have_prev)
        log_changes(&prev, &facts);
    prev = facts;
    have_prev = true;
}

static void on_diff(const char *event, xmlNode *msg)
{
    xmlNode *out = NULL;
    int rc;

    (void)event;
    rc = current ? cib_apply_patch_event(msg, current, &out, LOG_DEBUG) : -EINVAL;
    if (rc == pcmk_ok && out) {
        if (out != current)
            free_xml(current);
        current = out;
    } else {
        /* a diff we cannot apply (a gap in the sequence, a resync): read
         * the whole CIB again */
        syslog(LOG_INFO, "CIB diff not applied (%s): reading the whole CIB", pcmk_strerror(rc));
        if (out && out != current)
            free_xml(out);
        if (query_all() < 0)
            return;
    }
    changed();
}

static void on_destroy(gpointer data)
{
    (void)data;
    syslog(LOG_ERR, "connection to the CIB lost: exiting (Pacemaker restarts the resource)");
    exit_rc = EXIT_NO_CIB;
    g_main_loop_quit(loop);
}

static gboolean on_term(gpointer data)
{
    (void)data;
    syslog(LOG_NOTICE, "stopping");
    g_main_loop_quit(loop);
    return G_SOURCE_REMOVE;
}

/* stderr to /dev/null for a while; @return the saved stderr, or -1 */
static int quiet_stderr(void)
{
    int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC);

    if (saved >= 0 && null >= 0)
        dup2(null, STDERR_FILENO);
    if (null >= 0)
        close(null);
    return saved;
}

static void restore_stderr(int saved)
{
    if (saved < 0)
        return;
    dup2(saved, STDERR_FILENO);
    close(saved);
}

static int check_settings(int argc, char **argv)
{
    struct clr_pol_settings s;
    const char *why = NULL;
    char err[CLR_CIB_ERR_MAX];

    clr_policy_settings_default(&s);
    for (int i = 0; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        int rc;

        if (!eq) {
            fprintf(stderr, "clraid-policyd: %s: give NAME=VALUE\n", argv[i]);
            return EXIT_USAGE;
        }
        *eq = '\0';
        rc = clr_cib_policy_param(&s, argv[i], eq + 1, err, sizeof(err));
        if (rc == 0) {
            fprintf(stderr, "clraid-policyd: %s is not a policy parameter\n", argv[i]);
            return EXIT_CONFIG;
        }
        if (rc < 0) {
            fprintf(stderr, "clraid-policyd: %s\n", err);
            return EXIT_CONFIG;
        }
    }
    if (clr_policy_settings_check(&s, &why) < 0) {
        fprintf(stderr, "clraid-policyd: %s\n", why);
        return EXIT_CONFIG;
    }
    return 0;
}

/* One daemon per node: the pid file is locked for the daemon's life.
 * 0: ours; 1: another daemon holds it (not an error: the OCF agent
 * starts one per array); -1: cannot use it. */
static int take_pidfile(const char *path)
{
    char buf[32];
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

    if (fd < 0) {
        fprintf(stderr, "clraid-policyd: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        if (errno == EWOULDBLOCK)
            return 1;
        fprintf(stderr, "clraid-policyd: cannot lock %s: %s\n", path, strerror(errno));
        return -1;
    }
    snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, strlen(buf), 0) != (ssize_t)strlen(buf)) {
        fprintf(stderr, "clraid-policyd: cannot write %s: %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    return 0; /* fd stays open, and locked, until we exit */
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "once", no_argument, NULL, 'o' },
        { "json", no_argument, NULL, 'j' },
        { "check-settings", no_argument, NULL, 'c' },
        { "node", required_argument, NULL, 'n' },
        { "pidfile", required_argument, NULL, 'p' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool once = false, json = false, check = false;
    const char *file;
    int c, rc, quiet = -1;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            once = true;
            break;
        case 'j':
            json = true;
            break;
        case 'c':
            check = true;
            break;
        case 'n':
            snprintf(self, sizeof(self), "%s", optarg);
            break;
        case 'p':
            pidfile = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (check)
        return check_settings(argc - optind, argv + optind);
    if (!self[0]) {
        struct utsname u;

        if (uname(&u) == 0)
            snprintf(self, sizeof(self), "%.*s", (int)sizeof(self) - 1, u.nodename);
    }
    if (optind < argc || (json && !once)) {
        usage(stderr);
        return EXIT_USAGE;
    }
    /* Pacemaker's library needs its own start (it loads the CIB schemas a
     * file-backed CIB is checked against); its messages: errors only, to
     * syslog.  Ours: syslog and stderr. */
    crm_log_init("clraid-policyd", LOG_ERR, FALSE, FALSE, argc, argv, TRUE);
    openlog("clraid-policyd", LOG_PID | LOG_PERROR, LOG_DAEMON);
    cib = cib_new();
    if (!cib) {
        fprintf(stderr, "clraid-policyd: cannot create a CIB connection\n");
        return EXIT_NO_CIB;
    }
    file = getenv("CIB_file");
    /* On a file that is not a CIB, libcib prints a schema error per
     * schema it tries; one line of ours says it instead. */
    if (file && *file)
        quiet = quiet_stderr();
    rc = cib->cmds->signon(cib, "clraid-policyd", cib_query);
    if (rc == pcmk_ok && (query_all() < 0 || read_facts() < 0)) {
        rc = -EIO;
        cib->cmds->signoff(cib);
    }
    restore_stderr(quiet);
    if (rc != pcmk_ok) {
        if (file && *file)
            fprintf(stderr,
                    "clraid-policyd: cannot read CIB_file=%s (%s): give a CIB as cibadmin -Q writes it\n",
                    file, pcmk_strerror(rc));
        else
            fprintf(stderr, "clraid-policyd: cannot read the CIB (%s): is Pacemaker running on this node?\n",
                    pcmk_strerror(rc));
        cib_delete(cib);
        return EXIT_NO_CIB;
    }
    if (once) {
        if (json) {
            json_object *o = facts_json(&facts);

            printf("%s\n",
                   json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
            json_object_put(o);
        } else {
            print_text(&facts);
        }
        cib->cmds->signoff(cib);
        cib_delete(cib);
        free_xml(current);
        return 0;
    }
    if (pidfile) {
        rc = take_pidfile(pidfile);
        if (rc != 0) {
            cib->cmds->signoff(cib);
            cib_delete(cib);
            return rc > 0 ? 0 : EXIT_CONFIG;
        }
    }
    loop = g_main_loop_new(NULL, FALSE);
    rc = cib->cmds->add_notify_callback(cib, T_CIB_DIFF_NOTIFY, on_diff);
    if (rc == pcmk_ok)
        rc = cib->cmds->set_connection_dnotify(cib, on_destroy);
    if (rc != pcmk_ok) {
        fprintf(stderr, "clraid-policyd: cannot watch the CIB (%s)\n", pcmk_strerror(rc));
        return EXIT_NO_CIB;
    }
    g_unix_signal_add(SIGTERM, on_term, NULL);
    g_unix_signal_add(SIGINT, on_term, NULL);
    if (!clr_cib_node_find(&facts, self))
        syslog(LOG_WARNING, "this node (%s) is not in the CIB's nodes: give --node NAME", self);
    g_timeout_add(TICK_MS, on_tick, NULL);
    {
        char *fj;
        json_object *o = facts_json(&facts);

        fj = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
        syslog(LOG_NOTICE, "watching the CIB as node %s: %s", self, fj ? fj : "");
        free(fj);
    }
    prev = facts;
    have_prev = true;
    g_main_loop_run(loop);
    unpublish_all();
    cib->cmds->signoff(cib);
    cib_delete(cib);
    free_xml(current);
    g_main_loop_unref(loop);
    return exit_rc;
}
