/* clraid status [NAME] [--json] [--watch]: the engine's status, as JSON or
 * as a /proc/mdstat-like view with a progress bar for sync actions;
 * every array of the run directory when NAME is omitted. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli/cli.h"

static const char *jstr(json_object *o, const char *path, const char *dflt)
{
    json_object *v = clr_json_path(o, path);

    return v && !json_object_is_type(v, json_type_null) ? json_object_get_string(v) : dflt;
}

static int64_t jint(json_object *o, const char *path)
{
    json_object *v = clr_json_path(o, path);

    return v ? json_object_get_int64(v) : 0;
}

static void print_human(const char *name, json_object *st)
{
    json_object *devs = clr_json_path(st, "devices"), *prog = clr_json_path(st, "sync_progress");
    size_t ndev = devs && json_object_is_type(devs, json_type_array) ? json_object_array_length(devs) : 0;
    int64_t raid_disks = 0, in_sync = 0, max_role = -1;

    printf("%s : %s %s", name, jstr(st, "state", "?"), jstr(st, "level", "?"));
    for (size_t i = 0; i < ndev; i++) {
        json_object *d = json_object_array_get_idx(devs, i);
        const char *path = jstr(d, "path", "?"), *base = strrchr(path, '/');
        const char *state = jstr(d, "state", "?");
        json_object *role = clr_json_path(d, "role");

        printf(" %s", base ? base + 1 : path);
        if (role && !json_object_is_type(role, json_type_null)) {
            int64_t r = json_object_get_int64(role);

            printf("[%" PRId64 "]", r);
            if (r > max_role)
                max_role = r;
        }
        if (strcmp(state, "faulty") == 0)
            printf("(F)");
        else if (strcmp(state, "spare") == 0)
            printf("(S)");
        else if (strcmp(state, "rebuilding") == 0)
            printf("(R)");
        else if (strcmp(state, "removed") == 0)
            printf("(-)");
        if (strcmp(state, "in_sync") == 0)
            in_sync++;
    }
    raid_disks = max_role + 1;
    printf("\n      %" PRId64 " KiB", jint(st, "size_bytes") / 1024);
    if (jint(st, "chunk_kib"))
        printf(", %" PRId64 "k chunk", jint(st, "chunk_kib"));
    printf(", events %" PRId64 ", %zu devices, %" PRId64 " in sync [", jint(st, "events"), ndev, in_sync);
    for (int64_t r = 0; r < raid_disks; r++) {
        char c = '_';

        for (size_t i = 0; i < ndev; i++) {
            json_object *d = json_object_array_get_idx(devs, i), *role = clr_json_path(d, "role");

            if (role && !json_object_is_type(role, json_type_null) && json_object_get_int64(role) == r &&
                strcmp(jstr(d, "state", ""), "in_sync") == 0)
                c = 'U';
        }
        putchar(c);
    }
    printf("]\n");
    if (prog && !json_object_is_type(prog, json_type_null)) {
        int64_t pos = jint(prog, "position_bytes"), total = jint(prog, "total_bytes");
        double pct = total > 0 ? 100.0 * (double)pos / (double)total : 0;
        int width = 20, fill = (int)(pct / 100.0 * width);

        printf("      [");
        for (int i = 0; i < width; i++)
            putchar(i < fill ? '=' : i == fill ? '>' : '.');
        printf("]  %s = %.1f%% (%" PRId64 "/%" PRId64 " KiB) finish=%.1fmin speed=%" PRId64 "K/sec\n",
               jstr(st, "sync_action", "?"), pct, pos / 1024, total / 1024,
               (double)jint(prog, "eta_s") / 60.0, jint(prog, "rate_kib_s"));
    }
    for (size_t i = 0; i < ndev; i++) {
        json_object *d = json_object_array_get_idx(devs, i);
        const char *path = jstr(d, "path", "?"), *base = strrchr(path, '/');
        int64_t md = jint(d, "io_errors.media"), pa = jint(d, "io_errors.path");
        int64_t rs = jint(d, "io_errors.reservation"), ms = jint(d, "io_errors.last_ms");
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        char when[32] = "?";

        if (md + pa + rs == 0)
            continue;
        if (localtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        printf("      %s: %" PRId64 " I/O error(s) here (media %" PRId64 ", path %" PRId64
               ", reservation %" PRId64 "), last %s at %s\n",
               base ? base + 1 : path, md + pa + rs, md, pa, rs, jstr(d, "io_errors.last_errno", "?"), when);
    }
    if (clr_json_path(st, "frozen") && !json_object_is_type(clr_json_path(st, "frozen"), json_type_null))
        printf("      FROZEN: %" PRId64 " requests blocked; 'clraid thaw %s --error' fails them with EIO\n",
               jint(st, "frozen.blocked_requests"), name);
    if (clr_json_path(st, "policy.attached") &&
        json_object_get_boolean(clr_json_path(st, "policy.attached"))) {
        const char *pend = jstr(st, "policy.pending", NULL), *dec = jstr(st, "policy.decision", NULL);

        printf("      policy: clraid-policyd attached (writes wait up to %" PRId64
               " ms for a decision)%s%s\n",
               jint(st, "policy.confirm_timeout_ms"), pend ? "; PENDING: " : "", pend ? pend : "");
        if (dec)
            printf("      policy: last decision %s\n", dec);
    }
    for (size_t i = 0; i < ndev; i++) {
        json_object *d = json_object_array_get_idx(devs, i);
        const char *path = jstr(d, "path", "?"), *base = strrchr(path, '/');

        if (clr_json_path(d, "awaiting_decision"))
            printf("      %s: AWAITING DECISION: %" PRId64 " write(s) held, for %" PRId64 " ms\n",
                   base ? base + 1 : path, jint(d, "awaiting_decision.held_writes"),
                   jint(d, "awaiting_decision.held_for_ms"));
    }
    if (clr_json_path(st, "export"))
        printf("      export: %s\n", jstr(st, "export", "?"));
    printf("      bitmap: %" PRId64 " dirty chunks of %" PRId64 " KiB; last resync %" PRId64
           " KiB; last check %" PRId64 " mismatches\n",
           jint(st, "bitmap.dirty_chunks"), jint(st, "bitmap.chunk_bytes") / 1024,
           jint(st, "last_resync.bytes") / 1024, jint(st, "last_check.mismatches"));
    if (clr_json_path(st, "cluster")) {
        json_object *w = clr_json_path(st, "cluster.remote_window");
        json_object *tk = clr_json_path(st, "cluster.last_takeover");
        json_object *rec = clr_json_path(st, "cluster.recovering");

        printf("      cluster: %s, slot %" PRId64 ", %" PRId64 " members, %" PRId64
               " slots taken over%s; %" PRId64 " lock ops, %" PRId64 " messages\n",
               jstr(st, "cluster.backend", "?"), jint(st, "cluster.slot"), jint(st, "cluster.members"),
               jint(st, "cluster.recovered_slots"),
               rec && json_object_get_boolean(rec) ? ", RECOVERING (reads from the first device)" : "",
               jint(st, "counters.lock_ops"), jint(st, "counters.messages"));
        {
            json_object *held = clr_json_path(st, "cluster.writes_held");
            int64_t h0 = jint(st, "cluster.write_hold.start_ms");
            int64_t h1 = jint(st, "cluster.write_hold.end_ms");

            if (held && json_object_get_boolean(held))
                printf("      cluster: WRITES HELD: %" PRId64
                       " member(s) lost with their node, waiting for the fencer; %" PRId64
                       " write(s) waiting\n",
                       jint(st, "cluster.unconfirmed"), jint(st, "cluster.writes_waiting"));
            else if (h0 > 0 && h1 >= h0)
                printf("      cluster: last write hold (lost node until fenced): %" PRId64 " ms\n", h1 - h0);
        }
        if (w && !json_object_is_type(w, json_type_null))
            printf("      cluster: slot %" PRId64 " resyncing [%" PRId64 ", %" PRId64
                   ") KiB: writes there wait\n",
                   jint(w, "from"), jint(w, "lo_bytes") / 1024, jint(w, "hi_bytes") / 1024);
        if (clr_json_path(st, "cluster.zones")) {
            json_object *pl = clr_json_path(st, "cluster.zones.parity_log");

            printf("      cluster: zone locks (%" PRId64 " stripes each): %" PRId64 " held EX, %" PRId64
                   " PR; %" PRId64 " requests, %" PRId64 " given up on request, grant mean %" PRId64 " ms\n",
                   jint(st, "cluster.zones.stripes_per_zone"), jint(st, "cluster.zones.held_ex"),
                   jint(st, "cluster.zones.held_pr"), jint(st, "cluster.zones.requests"),
                   jint(st, "cluster.zones.releases"), jint(st, "cluster.zones.grant_ms_mean"));
            if (pl && json_object_is_type(pl, json_type_object))
                printf("      cluster: partial-parity log: %" PRId64 " entries logged, %" PRId64
                       " live, %" PRId64 " headers; %" PRId64 " entries replayed from dead nodes' logs\n",
                       jint(st, "cluster.zones.parity_log.entries_logged"),
                       jint(st, "cluster.zones.parity_log.entries_live"),
                       jint(st, "cluster.zones.parity_log.headers_written"),
                       jint(st, "cluster.zones.parity_log.replayed_entries"));
            else
                printf("      cluster: partial-parity log: %s\n", jstr(st, "cluster.zones.parity_log", "?"));
        }
        if (tk && !json_object_is_type(tk, json_type_null))
            printf("      cluster: last takeover: slot %" PRId64 ", %" PRId64 " dirty chunks (%" PRId64
                   " KiB)\n",
                   jint(tk, "slot"), jint(tk, "dirty_chunks"), jint(tk, "bytes") / 1024);
        {
            int64_t t0 = jint(st, "cluster.recovery_started_ms");
            int64_t t1 = jint(st, "cluster.read_balancing_restored_ms");

            if (t0 > 0 && t1 >= t0)
                printf("      cluster: last membership change: read balancing back after %" PRId64 " ms\n",
                       t1 - t0);
        }
    }
}

/* Names of the arrays whose NAME.ctl is in @dir. */
static int list_arrays(const char *dir, char ***names, size_t *n)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    *names = NULL;
    *n = 0;
    if (!d)
        return errno == ENOENT ? 0 : -errno;
    while ((de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);

        if (len > 4 && strcmp(de->d_name + len - 4, ".ctl") == 0) {
            char **nn = realloc(*names, (*n + 1) * sizeof *nn);

            if (!nn)
                break;
            *names = nn;
            nn[*n] = strndup(de->d_name, len - 4);
            if (nn[*n])
                (*n)++;
        }
    }
    closedir(d);
    return 0;
}

static int status_once(const char *dir, char **names, size_t n, bool json)
{
    json_object *all = json ? json_object_new_object() : NULL;
    int ret = 0;

    for (size_t i = 0; i < n; i++) {
        json_object *st = NULL;

        if (clr_cli_ctl("status", dir, names[i], "status", NULL, CLR_CTL_TIMEOUT_MS, &st) != 0) {
            ret = 1;
            continue;
        }
        if (json)
            json_object_object_add(all, names[i], st);
        else {
            print_human(names[i], st);
            json_object_put(st);
        }
    }
    if (json) {
        /* One array by name: its object; all arrays: keyed by name. */
        json_object *out = all, *one = NULL;

        if (n == 1 && json_object_object_get_ex(all, names[0], &one))
            out = one;
        if (out && (n != 1 || one))
            printf("%s\n", json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY |
                                                                   JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(all);
    }
    fflush(stdout);
    return ret;
}

/* ---- --prometheus: node_exporter's textfile format ---- */

/* @s as a label value: backslash, double quote and newline escaped. */
static void prom_label(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(f, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static void prom_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample: @name{array="A"[,@k="@v"]...} @value. */
static void prom_sample(FILE *f, const char *name, const char *array, const char *const *kv, double value)
{
    fprintf(f, "%s{array=\"", name);
    prom_label(f, array);
    fputc('"', f);
    for (; kv && kv[0]; kv += 2) {
        fprintf(f, ",%s=\"", kv[0]);
        prom_label(f, kv[1]);
        fputc('"', f);
    }
    fprintf(f, "} %.17g\n", value);
}

/* The member's name in labels: its path. */
static const char *dev_path(json_object *d)
{
    return jstr(d, "path", "?");
}

/* Every family once, its samples for every array together (the format
 * wants a family's samples contiguous). */
static void print_prometheus(FILE *f, char **names, json_object **st, size_t n)
{
    static const struct {
        const char *name, *type, *help, *path;
    } scalars[] = {
        { "clraid_size_bytes", "gauge", "Size of the array's export in bytes.", "size_bytes" },
        { "clraid_raid_disks", "gauge", "Member roles of the array (raid_disks).", "raid_disks" },
        { "clraid_last_check_mismatches", "gauge", "Mismatched sectors the last check or repair found.",
          "last_check.mismatches" },
        { "clraid_last_resync_bytes", "gauge", "Bytes the last resync or recovery pass rewrote.",
          "last_resync.bytes" },
        { "clraid_bitmap_dirty_chunks", "gauge", "Write-intent bitmap chunks dirty in this node's slot.",
          "bitmap.dirty_chunks" },
        { "clraid_reads_total", "counter", "Client reads the engine served.", "counters.reads" },
        { "clraid_writes_total", "counter", "Client writes the engine served.", "counters.writes" },
        { "clraid_bitmap_flushes_total", "counter", "Bitmap writes to the members.",
          "counters.bitmap_flushes" },
        { "clraid_lock_ops_total", "counter", "Cluster lock requests and releases of this node.",
          "counters.lock_ops" },
        { "clraid_messages_total", "counter", "Cluster messages this node sent.", "counters.messages" },
    };
    static const struct {
        const char *name, *help, *path;
    } mcounters[] = {
        { "clraid_member_reads_total", "Reads this node sent to the member.", "reads" },
        { "clraid_member_writes_total", "Writes this node sent to the member.", "writes" },
        { "clraid_member_read_bytes_total", "Bytes this node read from the member.", "read_bytes" },
        { "clraid_member_written_bytes_total", "Bytes this node wrote to the member.", "write_bytes" },
    };
    static const char *const eclass[] = { "media", "path", "reservation" };

    prom_family(f, "clraid_up", "gauge", "1 if the array's engine answered, 0 if not.");
    for (size_t i = 0; i < n; i++)
        prom_sample(f, "clraid_up", names[i], NULL, st[i] ? 1 : 0);
    prom_family(f, "clraid_array_state", "gauge", "1 for the array's state (clean, active, degraded, ...).");
    for (size_t i = 0; i < n; i++)
        if (st[i]) {
            const char *kv[] = { "state", jstr(st[i], "state", "unknown"), "level", jstr(st[i], "level", "?"),
                                 NULL };

            prom_sample(f, "clraid_array_state", names[i], kv, 1);
        }
    prom_family(f, "clraid_degraded_members", "gauge", "Member roles without an in-sync member.");
    for (size_t i = 0; i < n; i++) {
        json_object *devs = st[i] ? clr_json_path(st[i], "devices") : NULL;
        int64_t in_sync = 0;

        if (!st[i])
            continue;
        for (size_t k = 0; devs && k < json_object_array_length(devs); k++) {
            json_object *d = json_object_array_get_idx(devs, k), *role = clr_json_path(d, "role");

            in_sync += role && !json_object_is_type(role, json_type_null) &&
                       strcmp(jstr(d, "state", ""), "in_sync") == 0;
        }
        prom_sample(f, "clraid_degraded_members", names[i], NULL,
                    (double)(jint(st[i], "raid_disks") - in_sync));
    }
    for (size_t s = 0; s < sizeof scalars / sizeof scalars[0]; s++) {
        prom_family(f, scalars[s].name, scalars[s].type, scalars[s].help);
        for (size_t i = 0; i < n; i++)
            if (st[i])
                prom_sample(f, scalars[s].name, names[i], NULL, (double)jint(st[i], scalars[s].path));
    }
    prom_family(f, "clraid_sync_active", "gauge", "1 while a sync action runs, by action.");
    for (size_t i = 0; i < n; i++)
        if (st[i]) {
            const char *act = jstr(st[i], "sync_action", "idle");
            const char *kv[] = { "action", act, NULL };

            prom_sample(f, "clraid_sync_active", names[i], kv, strcmp(act, "idle") != 0);
        }
    prom_family(f, "clraid_sync_progress_ratio", "gauge", "Position of the running sync action, 0 to 1.");
    for (size_t i = 0; i < n; i++) {
        json_object *p = st[i] ? clr_json_path(st[i], "sync_progress") : NULL;

        if (p && !json_object_is_type(p, json_type_null) && jint(p, "total_bytes") > 0)
            prom_sample(f, "clraid_sync_progress_ratio", names[i], NULL,
                        (double)jint(p, "position_bytes") / (double)jint(p, "total_bytes"));
    }
    prom_family(f, "clraid_sync_speed_bytes_per_second", "gauge", "Speed of the running sync action.");
    for (size_t i = 0; i < n; i++) {
        json_object *p = st[i] ? clr_json_path(st[i], "sync_progress") : NULL;

        if (p && !json_object_is_type(p, json_type_null))
            prom_sample(f, "clraid_sync_speed_bytes_per_second", names[i], NULL,
                        (double)jint(p, "rate_kib_s") * 1024);
    }
    prom_family(f, "clraid_cluster_members", "gauge", "Nodes this node sees running the array.");
    for (size_t i = 0; i < n; i++)
        if (st[i] && clr_json_path(st[i], "cluster.members"))
            prom_sample(f, "clraid_cluster_members", names[i], NULL, (double)jint(st[i], "cluster.members"));
    prom_family(f, "clraid_member_state", "gauge",
                "1 for each member's state (in_sync, rebuilding, faulty, ...).");
    for (size_t i = 0; i < n; i++) {
        json_object *devs = st[i] ? clr_json_path(st[i], "devices") : NULL;

        for (size_t k = 0; devs && k < json_object_array_length(devs); k++) {
            json_object *d = json_object_array_get_idx(devs, k);
            const char *kv[] = { "member", dev_path(d), "state", jstr(d, "state", "unknown"), NULL };

            prom_sample(f, "clraid_member_state", names[i], kv, 1);
        }
    }
    for (size_t c = 0; c < sizeof mcounters / sizeof mcounters[0]; c++) {
        prom_family(f, mcounters[c].name, "counter", mcounters[c].help);
        for (size_t i = 0; i < n; i++) {
            json_object *devs = st[i] ? clr_json_path(st[i], "devices") : NULL;

            for (size_t k = 0; devs && k < json_object_array_length(devs); k++) {
                json_object *d = json_object_array_get_idx(devs, k);
                const char *kv[] = { "member", dev_path(d), NULL };

                prom_sample(f, mcounters[c].name, names[i], kv, (double)jint(d, mcounters[c].path));
            }
        }
    }
    prom_family(f, "clraid_member_io_errors_total", "counter",
                "I/O errors the member returned on this node, by class (media, path, reservation).");
    for (size_t i = 0; i < n; i++) {
        json_object *devs = st[i] ? clr_json_path(st[i], "devices") : NULL;

        for (size_t k = 0; devs && k < json_object_array_length(devs); k++) {
            json_object *d = json_object_array_get_idx(devs, k);

            for (size_t e = 0; e < 3; e++) {
                char path[64];
                const char *kv[] = { "member", dev_path(d), "class", eclass[e], NULL };

                snprintf(path, sizeof path, "io_errors.%s", eclass[e]);
                prom_sample(f, "clraid_member_io_errors_total", names[i], kv, (double)jint(d, path));
            }
        }
    }
}

/* Writes the metrics of every array to @file (atomically: a temporary file
 * renamed over it, as node_exporter's textfile collector wants), or to
 * stdout (@file NULL). */
static int prometheus_once(const char *dir, char **names, size_t n, const char *file)
{
    json_object **st = calloc(n ? n : 1, sizeof *st);
    char tmp[4096];
    FILE *f = stdout;
    int ret = 0;

    if (!st)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (clr_cli_ctl("status", dir, names[i], "status", NULL, CLR_CTL_TIMEOUT_MS, &st[i]) != 0) {
            st[i] = NULL;
            ret = 1;
        }
    if (file) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", file, (long)getpid());
        f = fopen(tmp, "w");
        if (!f) {
            clr_cli_error("status", "cannot write %s: %s (check the directory)", tmp, strerror(errno));
            ret = 1;
            goto out;
        }
    }
    print_prometheus(f, names, st, n);
    if (file) {
        bool bad = ferror(f) != 0;

        if (fclose(f) != 0 || bad || rename(tmp, file) != 0) {
            clr_cli_error("status", "cannot write %s: %s", file, strerror(errno));
            unlink(tmp);
            ret = 1;
        }
    } else {
        fflush(stdout);
    }
out:
    for (size_t i = 0; i < n; i++)
        json_object_put(st[i]);
    free(st);
    return ret;
}

int clr_cmd_status(int argc, char **argv)
{
    static const struct option opts[] = {
        { "run-dir", required_argument, NULL, 'r' },
        { "json", no_argument, NULL, 'j' },
        { "watch", no_argument, NULL, 'w' },
        { "prometheus", no_argument, NULL, 'p' },
        { "prometheus-file", required_argument, NULL, 'P' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *dir = CLR_RUN_DIR_DEFAULT;
    bool json = false, watch = false, prom = false;
    const char *prom_file = NULL;
    char **names = NULL;
    size_t n = 0;
    int c, ret;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            dir = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'w':
            watch = true;
            break;
        case 'p':
            prom = true;
            break;
        case 'P':
            prom = true;
            prom_file = optarg;
            break;
        case 'h':
            printf("usage: clraid status [NAME] [--json | --prometheus | --prometheus-file FILE] [--watch]\n"
                   "                     [--run-dir DIR]\n"
                   "  --prometheus prints the metrics in the Prometheus text format;\n"
                   "  --prometheus-file FILE writes them to FILE (a temporary file renamed over\n"
                   "  it), for node_exporter's textfile collector (FILE ending in .prom).\n");
            return 0;
        default:
            clr_cli_error("status", "bad option (run 'clraid status --help')");
            return 1;
        }
    }
    if (argc - optind > 1) {
        clr_cli_error("status", "give at most one array name: clraid status [NAME]");
        return 1;
    }
    if (prom && (json || watch)) {
        clr_cli_error("status", "--prometheus goes alone: not with --json or --watch");
        return 1;
    }
    if (argc - optind == 1) {
        if (clr_name_check("status", argv[optind]) != 0)
            return 1;
        names = malloc(sizeof *names);
        if (!names || !(names[0] = strdup(argv[optind])))
            return 1;
        n = 1;
    } else {
        int rc = list_arrays(dir, &names, &n);

        if (rc) {
            clr_cli_error("status", "cannot read the run directory %s: %s", dir, strerror(-rc));
            return 1;
        }
        if (n == 0 && !json && !prom) {
            printf("no arrays running in %s\n", dir);
            free(names);
            return 0;
        }
    }
    if (prom) {
        ret = prometheus_once(dir, names, n, prom_file);
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return ret;
    }
    for (;;) {
        if (watch && isatty(STDOUT_FILENO))
            printf("\033[H\033[2J");
        ret = status_once(dir, names, n, json);
        if (!watch || ret)
            break;
        sleep(1);
        if (!isatty(STDOUT_FILENO))
            printf("\n");
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return ret;
}
