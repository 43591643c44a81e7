/* clraid start: assemble (refusing stale, foreign or missing members with
 * one line), then run nbdkit + the clraid plugin in the background and
 * return once the engine answers on its control socket. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "array/array.h"
#include "cli/cli.h"
#include "ctl/ctl_client.h"

#ifndef CLR_NBDKIT_PLUGIN_PATH
#define CLR_NBDKIT_PLUGIN_PATH "/usr/local/lib/nbdkit/plugins/nbdkit-clraid-plugin.so"
#endif
#define START_TIMEOUT_S 60

static void start_usage(FILE *f)
{
    fprintf(f, "usage: clraid start NAME DEV... [--run-dir DIR] [--lock local|cpg|dlm] [--buffered]\n"
               "                    [--skip-stale] [--bitmap=normal|all-dirty]\n"
               "  Assembles array NAME from its members and serves it over NBD at\n"
               "  RUN_DIR/NAME.sock (default run dir " CLR_RUN_DIR_DEFAULT ").\n"
               "  --lock local (default) runs it on this node alone (bitmap slot 0);\n"
               "  --lock cpg or dlm joins the array's cluster (lockspace = array UUID;\n"
               "  clraid-UUID in the kernel DLM with dlm), every node running\n"
               "  'clraid start' on the same shared devices (RAID1 and RAID10 near\n"
               "  layouts; one bitmap slot per node).  Refused while a kernel\n"
               "  md-cluster node has the array assembled.\n"
               "  --skip-stale leaves stale or faulty members out (warning) and starts\n"
               "  degraded if enough remain; re-add them with 'clraid re-add'.\n"
               "  --bitmap=all-dirty holds every bitmap chunk dirty while running: no\n"
               "  bitmap writes on the write path, a full resync after a crash (md\n"
               "  without a bitmap); used to measure what the bitmap costs.\n"
               "  CLRAID_NBDKIT_PLUGIN overrides the plugin path (" CLR_NBDKIT_PLUGIN_PATH ").\n");
}

/* Creates @dir (parents 0755, itself 0700) if missing. */
static int make_run_dir(const char *dir)
{
    char tmp[PATH_MAX];
    struct stat st;

    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            clr_cli_error("start", "%s: not a directory (give another --run-dir)", dir);
            return -1;
        }
        return 0;
    }
    if (strlen(dir) >= sizeof tmp) {
        clr_cli_error("start", "%s: run directory path too long", dir);
        return -1;
    }
    strcpy(tmp, dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                goto fail;
            *p = '/';
        }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        goto fail;
    return 0;
fail:
    clr_cli_error("start", "cannot create the run directory %s: %s", dir, strerror(errno));
    return -1;
}

static void copy_line(char *out, size_t size, const char *s)
{
    size_t n = strlen(s);

    if (n >= size)
        n = size - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

/* The line of @log that best says why the engine failed: the last one
 * with "error", else the last non-empty one; nbdkit's prefix removed. */
static void last_error_line(const char *log, char *out, size_t size)
{
    char line[1024];
    FILE *f = fopen(log, "re");
    bool have_err = false;

    copy_line(out, size, "no message");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *err = strstr(line, "error: ");
        if (err) {
            copy_line(out, size, err + 7);
            have_err = true;
        } else if (!have_err && line[0] && !strstr(line, "debug: ")) {
            copy_line(out, size, line);
        }
    }
    fclose(f);
}

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Assembles and frees at once: the same checks the plugin makes, but with
 * the refusal printed here, before anything runs. */
static void precheck_log(void *opaque, int prio, const char *msg)
{
    (void)opaque;
    if (prio <= 4)
        fprintf(stderr, "clraid start: warning: %s\n", msg);
}

static int precheck(const char *name, char **devs, unsigned n, const char *lock, bool buffered,
                    bool skip_stale)
{
    struct clr_array_config cfg = {
        .name = name,
        .devices = (const char *const *)devs,
        .ndevices = n,
        .lock = lock,
        .flags = (buffered ? CLR_ARRAY_BUFFERED : 0) | (skip_stale ? CLR_ARRAY_SKIP_STALE : 0),
        .log = precheck_log,
    };
    struct clr_array *a = NULL;
    struct clr_err e = { "" };
    int rc = clr_array_assemble(&cfg, &a, &e);

    if (rc) {
        clr_cli_error("start", "%s", e.msg[0] ? e.msg : strerror(-rc));
        return -1;
    }
    clr_array_free(a);
    return 0;
}

/* nbdkit in the foreground dies with its parent (PR_SET_PDEATHSIG), and in
 * the background it drops stderr; so a small monitor process, in its own
 * session, is the parent: it runs nbdkit -f with stderr in the log, waits
 * for it and notes how it ended. Returns the monitor's pid. */
static pid_t spawn(char **argv, const char *log)
{
    pid_t mon = fork();

    if (mon < 0) {
        clr_cli_error("start", "fork: %s", strerror(errno));
        return -1;
    }
    if (mon == 0) {
        int in = open("/dev/null", O_RDONLY);
        int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
        int status;
        pid_t pid;

        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(127);
        setsid();
        signal(SIGHUP, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        pid = fork();
        if (pid == 0) {
            signal(SIGHUP, SIG_DFL);
            signal(SIGINT, SIG_DFL);
            execvp(argv[0], argv);
            fprintf(stderr, "nbdkit: error: cannot run %s: %s (install nbdkit or set CLRAID_NBDKIT)\n",
                    argv[0], strerror(errno));
            _exit(127);
        }
        if (pid < 0)
            _exit(127);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (WIFSIGNALED(status))
            fprintf(stderr, "clraid: engine pid %ld killed by signal %d\n", (long)pid, WTERMSIG(status));
        else if (WEXITSTATUS(status))
            fprintf(stderr, "clraid: engine pid %ld exited with status %d\n", (long)pid, WEXITSTATUS(status));
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
    }
    return mon;
}

int clr_cmd_start(int argc, char **argv)
{
    static const struct option opts[] = {
        { "run-dir", required_argument, NULL, 'r' },
        { "lock", required_argument, NULL, 'l' },
        { "buffered", no_argument, NULL, 'b' },
        { "skip-stale", no_argument, NULL, 's' },
        { "bitmap", required_argument, NULL, 'B' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *dir = CLR_RUN_DIR_DEFAULT, *lock = "local", *name, *plugin, *nbdkit;
    char sock[PATH_MAX], ctl[PATH_MAX], pidf[PATH_MAX], log[PATH_MAX], msg[1024];
    char **devs = NULL, **args = NULL, *dirabs = NULL;
    bool buffered = false, skip_stale = false, all_dirty = false;
    unsigned n, k = 0, kdev = 0;
    int c, ret = 1;
    pid_t pid;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r': dir = optarg; break;
        case 'l': lock = optarg; break;
        case 'b': buffered = true; break;
        case 's': skip_stale = true; break;
        case 'B':
            if (strcmp(optarg, "all-dirty") == 0) {
                all_dirty = true;
            } else if (strcmp(optarg, "normal") != 0) {
                clr_cli_error("start", "--bitmap=%s: use normal or all-dirty", optarg);
                return 1;
            }
            break;
        case 'h': start_usage(stdout); return 0;
        default:
            clr_cli_error("start", "bad option (run 'clraid start --help')");
            return 1;
        }
    }
    if (argc - optind < 2) {
        clr_cli_error("start", "give the array name and its member devices: clraid start NAME DEV...");
        return 1;
    }
    name = argv[optind++];
    if (clr_name_check("start", name) != 0)
        return 1;
    if (strcmp(lock, "local") != 0 && strcmp(lock, "cpg") != 0 && strcmp(lock, "dlm") != 0) {
        clr_cli_error("start", "--lock %s: use local (one node), cpg or dlm (cluster)", lock);
        return 1;
    }
    n = (unsigned)(argc - optind);
    devs = calloc(n, sizeof *devs);
    if (!devs)
        return 1;
    for (unsigned i = 0; i < n; i++) {
        devs[i] = realpath(argv[optind + i], NULL);
        if (!devs[i]) {
            clr_cli_error("start", "%s: %s (check the device path)", argv[optind + i], strerror(errno));
            goto out;
        }
    }
    if (make_run_dir(dir) != 0)
        goto out;
    dirabs = realpath(dir, NULL);
    if (!dirabs) {
        clr_cli_error("start", "%s: %s", dir, strerror(errno));
        goto out;
    }
    dir = dirabs;
    if (clr_run_path("start", sock, sizeof sock, dir, name, ".sock") ||
        clr_run_path("start", ctl, sizeof ctl, dir, name, ".ctl") ||
        clr_run_path("start", pidf, sizeof pidf, dir, name, ".pid") ||
        clr_run_path("start", log, sizeof log, dir, name, ".log"))
        goto out;
    pid = clr_run_pid(dir, name);
    if (pid) {
        clr_cli_error("start", "array '%s' is already running (pid %ld): stop it first with 'clraid stop %s'",
                      name, (long)pid, name);
        goto out;
    }
    /* Left by an engine that was killed: nobody serves them any more. */
    unlink(sock);
    unlink(ctl);
    unlink(pidf);

    if (precheck(name, devs, n, lock, buffered, skip_stale) != 0)
        goto out;

    plugin = getenv("CLRAID_NBDKIT_PLUGIN");
    if (!plugin || !*plugin)
        plugin = CLR_NBDKIT_PLUGIN_PATH;
    if (access(plugin, R_OK) != 0) {
        clr_cli_error("start", "nbdkit plugin %s: %s (install clraid or set CLRAID_NBDKIT_PLUGIN)",
                      plugin, strerror(errno));
        goto out;
    }
    nbdkit = getenv("CLRAID_NBDKIT");
    if (!nbdkit || !*nbdkit)
        nbdkit = "nbdkit";

    args = calloc(24 + n, sizeof *args);
    if (!args)
        goto out;
    char namearg[128], dirarg[PATH_MAX + 16], lockarg[64];
    snprintf(namearg, sizeof namearg, "name=%s", name);
    snprintf(dirarg, sizeof dirarg, "run_dir=%s", dir);
    snprintf(lockarg, sizeof lockarg, "lock=%s", lock);
    args[k++] = (char *)nbdkit;
    args[k++] = (char *)"--foreground";
    args[k++] = (char *)"--log=stderr";
    if (getenv("CLRAID_NBDKIT_VERBOSE"))
        args[k++] = (char *)"--verbose";
    args[k++] = (char *)"--unix";
    args[k++] = sock;
    args[k++] = (char *)"--pidfile";
    args[k++] = pidf;
    args[k++] = (char *)plugin;
    args[k++] = namearg;
    args[k++] = dirarg;
    args[k++] = lockarg;
    args[k++] = (char *)(buffered ? "buffered=true" : "buffered=false");
    args[k++] = (char *)(skip_stale ? "skip_stale=true" : "skip_stale=false");
    args[k++] = (char *)(all_dirty ? "bitmap=all-dirty" : "bitmap=normal");
    kdev = k;
    for (unsigned i = 0; i < n; i++) {
        args[k] = malloc(strlen(devs[i]) + 8);
        if (!args[k])
            goto out;
        sprintf(args[k++], "device=%s", devs[i]);
    }
    args[k] = NULL;

    pid = spawn(args, log);
    if (pid < 0)
        goto out;
    long long deadline = now_ms() + START_TIMEOUT_S * 1000LL;
    for (;;) {
        struct clr_err e = { "" };
        json_object *st = NULL;
        int status;

        if (waitpid(pid, &status, WNOHANG) == pid) {
            last_error_line(log, msg, sizeof msg);
            clr_cli_error("start", "%s: the engine failed to start: %s (log: %s)", name, msg, log);
            goto out;
        }
        if (access(ctl, F_OK) == 0 && clr_ctl_call(ctl, "status", NULL, 2000, &st, &e) == 0) {
            json_object *state = clr_json_path(st, "state");

            printf("started array '%s' (%s): nbd+unix:///?socket=%s (pid %ld)\n", name,
                   state ? json_object_get_string(state) : "?", sock, (long)clr_run_pid(dir, name));
            json_object_put(st);
            break;
        }
        if (now_ms() > deadline) {
            kill(-pid, SIGTERM);    /* the monitor's session: it and nbdkit */
            clr_cli_error("start", "%s: the engine did not answer within %d s; stopped it (log: %s)",
                          name, START_TIMEOUT_S, log);
            goto out;
        }
        usleep(50 * 1000);
    }
    ret = 0;
out:
    if (args)
        for (unsigned i = kdev; kdev && i < k; i++)
            free(args[i]);
    free(args);
    for (unsigned i = 0; devs && i < n; i++)
        free(devs[i]);
    free(devs);
    free(dirabs);
    return ret;
}
