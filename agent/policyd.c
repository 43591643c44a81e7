/*
 * clraid-policyd: the policy daemon's CIB side (doc/architecture.md §3.3).
 *
 * It reads the CIB through libcib, on start and after every change (diff
 * notifications: the patch is applied to our copy; on any failure to
 * apply it the whole CIB is queried again), turns it into facts
 * (agent/cib_facts.c) and logs each change of them: nodes joining and
 * leaving, quorum, the DC, fencing, and every clraid resource's policy
 * settings.  It does not yet talk to the engines or act: the decision
 * core (agent/policy.c) is wired in a later step.
 *
 *   clraid-policyd [--once [--json]]            watch (default), or print once
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
#include <syslog.h>
#include <unistd.h>

#include <crm/cib.h>
#include <crm/common/logging.h>
#include <crm/cib/util.h>
#include <crm/common/xml.h>
#include <glib-unix.h>
#include <glib.h>
#include <json-c/json.h>

#include "agent/cib_facts.h"

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

static void usage(FILE *f)
{
    fprintf(f, "usage: clraid-policyd [--once [--json]]\n"
               "       clraid-policyd --check-settings NAME=VALUE...\n"
               "Watches the CIB and logs the facts the policy decides on (doc/architecture.md §3.3).\n"
               "  --once             print the facts once and exit (CIB_file=FILE reads a file)\n"
               "  --json             with --once: as JSON\n"
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
        json_object_array_add(arrays, x);
    }
    json_object_object_add(o, "arrays", arrays);
    if (f->nodes_dropped || f->arrays_dropped) {
        json_object_object_add(o, "nodes_dropped", json_object_new_int(f->nodes_dropped));
        json_object_object_add(o, "arrays_dropped", json_object_new_int(f->arrays_dropped));
    }
    return o;
}

static const char *node_state(const struct clr_cib_node *n)
{
    return n->member ? "member" : n->in_ccm ? "in membership, not joined" : "down";
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

static int read_facts(void)
{
    char err[CLR_CIB_ERR_MAX];
    int rc = clr_cib_facts_read(current, &facts, err, sizeof(err));

    if (rc < 0)
        syslog(LOG_ERR, "cannot read the CIB: %s", err);
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

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "once", no_argument, NULL, 'o' },
        { "json", no_argument, NULL, 'j' },
        { "check-settings", no_argument, NULL, 'c' },
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
    {
        char *fj;
        json_object *o = facts_json(&facts);

        fj = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
        syslog(LOG_NOTICE, "watching the CIB: %s", fj ? fj : "");
        free(fj);
    }
    prev = facts;
    have_prev = true;
    g_main_loop_run(loop);
    cib->cmds->signoff(cib);
    cib_delete(cib);
    free_xml(current);
    g_main_loop_unref(loop);
    return exit_rc;
}
