/* clraid fail|remove|add|re-add|probe NAME DEV, thaw NAME --error, and the test
 * hooks fault and ctl: one control request each. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli/cli.h"
#include "ctl/ctl_client.h"

/* Parses [--run-dir DIR] and the positional args; -1 after one line. */
static int parse_common(const char *cmd, int argc, char **argv, const char *usage, int npos, const char **dir,
                        bool *flag, const char *flagname)
{
    const struct option opts[] = {
        { "run-dir", required_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { flagname ? flagname : "-", no_argument, NULL, 'f' },
        { NULL, 0, NULL, 0 },
    };
    int c;

    *dir = CLR_RUN_DIR_DEFAULT;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            *dir = optarg;
            break;
        case 'f':
            *flag = true;
            break;
        case 'h':
            printf("usage: %s\n", usage);
            exit(0);
        default:
            clr_cli_error(cmd, "bad option (usage: %s)", usage);
            return -1;
        }
    }
    if (argc - optind != npos) {
        clr_cli_error(cmd, "wrong arguments (usage: %s)", usage);
        return -1;
    }
    return clr_name_check(cmd, argv[optind]);
}

/* The member path as the engine knows it (absolute, symlinks resolved);
 * a device that has vanished is passed as given. */
static json_object *device_args(const char *dev)
{
    char *real = realpath(dev, NULL);
    json_object *args = json_object_new_object();

    json_object_object_add(args, "device", json_object_new_string(real ? real : dev));
    free(real);
    return args;
}

static int device_cmd(const char *cmd, const char *ctlcmd, const char *done, int argc, char **argv)
{
    char usage[128];
    const char *dir;
    bool unused = false;

    snprintf(usage, sizeof usage, "clraid %s NAME DEV [--run-dir DIR]", cmd);
    if (parse_common(cmd, argc, argv, usage, 2, &dir, &unused, NULL) != 0)
        return 1;
    if (clr_cli_ctl(cmd, dir, argv[optind], ctlcmd, device_args(argv[optind + 1]), CLR_CTL_TIMEOUT_MS,
                    NULL) != 0)
        return 1;
    printf("%s: %s %s\n", argv[optind], argv[optind + 1], done);
    return 0;
}

int clr_cmd_fail(int argc, char **argv)
{
    return device_cmd("fail", "fail", "marked faulty", argc, argv);
}

int clr_cmd_remove(int argc, char **argv)
{
    return device_cmd("remove", "remove", "removed", argc, argv);
}

int clr_cmd_add(int argc, char **argv)
{
    return device_cmd("add", "add", "added", argc, argv);
}

int clr_cmd_readd(int argc, char **argv)
{
    return device_cmd("re-add", "re-add", "re-added", argc, argv);
}

/* clraid probe NAME DEV: what the policy daemon asks for.  Exit 0 if the
 * member read and wrote from this node, 1 if not (or on any error). */
int clr_cmd_probe(int argc, char **argv)
{
    const char *dir;
    bool unused = false;
    json_object *res = NULL, *v;
    bool ok;

    if (parse_common("probe", argc, argv, "clraid probe NAME DEV [--run-dir DIR]", 2, &dir, &unused, NULL) !=
        0)
        return 1;
    if (clr_cli_ctl("probe", dir, argv[optind], "probe", device_args(argv[optind + 1]), CLR_CTL_TIMEOUT_MS,
                    &res) != 0)
        return 1;
    ok = json_object_object_get_ex(res, "ok", &v) && json_object_get_boolean(v);
    if (ok)
        printf("%s: %s: probe passed (read and wrote this node's bitmap block) in %s ms\n", argv[optind],
               argv[optind + 1], json_object_object_get_ex(res, "ms", &v) ? json_object_get_string(v) : "?");
    else
        printf("%s: %s: probe FAILED: %s\n", argv[optind], argv[optind + 1],
               json_object_object_get_ex(res, "errno", &v) && v ? json_object_get_string(v) : "?");
    json_object_put(res);
    return ok ? 0 : 1;
}

int clr_cmd_thaw(int argc, char **argv)
{
    const char *dir;
    bool error = false;

    if (parse_common("thaw", argc, argv, "clraid thaw NAME --error [--run-dir DIR]", 1, &dir, &error,
                     "error") != 0)
        return 1;
    if (!error) {
        clr_cli_error("thaw", "say how to thaw: '--error' fails the blocked requests with EIO");
        return 1;
    }
    if (clr_cli_ctl("thaw", dir, argv[optind], "thaw-error", NULL, CLR_CTL_TIMEOUT_MS, NULL) != 0)
        return 1;
    printf("%s: thawed, blocked requests failed with EIO\n", argv[optind]);
    return 0;
}

/* Test hook: clraid fault NAME DEV OP [--offset N] [--length N] [--ms N]. */
int clr_cmd_fault(int argc, char **argv)
{
    static const struct option opts[] = {
        { "run-dir", required_argument, NULL, 'r' }, { "offset", required_argument, NULL, 'o' },
        { "length", required_argument, NULL, 'l' },  { "ms", required_argument, NULL, 'm' },
        { "errno", required_argument, NULL, 'e' },   { NULL, 0, NULL, 0 },
    };
    const char *dir = CLR_RUN_DIR_DEFAULT;
    json_object *args;
    long long v[4] = { -1, -1, -1, -1 };
    static const char *const keys[4] = { "offset", "length", "ms", "errno" };
    int c;

    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        char *end;
        int i = c == 'o' ? 0 : c == 'l' ? 1 : c == 'm' ? 2 : 3;

        if (c == 'r') {
            dir = optarg;
            continue;
        }
        if (c == '?') {
            clr_cli_error(
                "fault",
                "bad option (usage: clraid fault NAME DEV read|write|rw|vanish|delay|clear|bad-sector "
                "[--offset N] [--length N] [--ms N] [--errno N])");
            return 1;
        }
        errno = 0;
        v[i] = strtoll(optarg, &end, 0);
        if (errno || *end || v[i] < 0) {
            clr_cli_error("fault", "--%s %s: not a non-negative number", keys[i], optarg);
            return 1;
        }
    }
    if (argc - optind != 3) {
        clr_cli_error("fault",
                      "usage: clraid fault NAME DEV read|write|rw|vanish|delay|clear|bad-sector [options]");
        return 1;
    }
    if (clr_name_check("fault", argv[optind]) != 0)
        return 1;
    args = device_args(argv[optind + 1]);
    json_object_object_add(args, "op", json_object_new_string(argv[optind + 2]));
    for (int i = 0; i < 4; i++)
        if (v[i] >= 0)
            json_object_object_add(args, keys[i], json_object_new_int64(v[i]));
    return clr_cli_ctl("fault", dir, argv[optind], "fault", args, CLR_CTL_TIMEOUT_MS, NULL) ? 1 : 0;
}

/* Test hook: clraid ctl NAME 'LINE': sends LINE as is, prints the reply. */
int clr_cmd_ctl(int argc, char **argv)
{
    const char *dir;
    bool unused = false;
    char path[PATH_MAX], *line, *reply = NULL;
    struct clr_err e = { "" };
    int rc;

    if (parse_common("ctl", argc, argv, "clraid ctl NAME 'REQUEST LINE' [--run-dir DIR]", 2, &dir, &unused,
                     NULL) != 0)
        return 1;
    if (clr_run_path("ctl", path, sizeof path, dir, argv[optind], ".ctl") != 0)
        return 1;
    line = malloc(strlen(argv[optind + 1]) + 2);
    if (!line)
        return 1;
    sprintf(line, "%s\n", argv[optind + 1]);
    rc = clr_ctl_call_raw(path, line, CLR_CTL_TIMEOUT_MS, &reply, &e);
    free(line);
    if (rc) {
        clr_cli_error("ctl", "%s", e.msg);
        return 1;
    }
    printf("%s\n", reply);
    rc = strstr(reply, "\"ok\":true") ? 0 : 1;
    free(reply);
    return rc;
}
