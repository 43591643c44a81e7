/* clraid check|repair NAME [--wait]: starts a scrub ("check" counts
 * mismatches, "repair" rewrites them); --wait polls until it finishes. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli/cli.h"

static int check_cmd(const char *cmd, int argc, char **argv)
{
    static const struct option opts[] = {
        { "run-dir", required_argument, NULL, 'r' },
        { "wait", no_argument, NULL, 'w' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *dir = CLR_RUN_DIR_DEFAULT, *name;
    bool wait = false;
    json_object *st = NULL;
    int c;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            dir = optarg;
            break;
        case 'w':
            wait = true;
            break;
        case 'h':
            printf("usage: clraid %s NAME [--wait] [--run-dir DIR]\n", cmd);
            return 0;
        default:
            clr_cli_error(cmd, "bad option (run 'clraid %s --help')", cmd);
            return 1;
        }
    }
    if (argc - optind != 1) {
        clr_cli_error(cmd, "give exactly one array name: clraid %s NAME [--wait]", cmd);
        return 1;
    }
    name = argv[optind];
    if (clr_name_check(cmd, name) != 0)
        return 1;
    if (clr_cli_ctl(cmd, dir, name, cmd, NULL, CLR_CTL_TIMEOUT_MS, NULL) != 0)
        return 1;
    if (!wait) {
        printf("%s: %s started ('clraid status %s' shows progress)\n", name, cmd, name);
        return 0;
    }
    for (;;) {
        json_object *a;

        if (clr_cli_ctl(cmd, dir, name, "status", NULL, CLR_CTL_TIMEOUT_MS, &st) != 0)
            return 1;
        a = clr_json_path(st, "sync_action");
        if (!a || strcmp(json_object_get_string(a), "idle") == 0)
            break;
        json_object_put(st);
        st = NULL;
        usleep(200 * 1000);
    }
    printf("%s: %s finished: %" PRId64 " mismatches\n", name, cmd,
           clr_json_path(st, "last_check.mismatches")
               ? json_object_get_int64(clr_json_path(st, "last_check.mismatches"))
               : 0);
    json_object_put(st);
    return 0;
}

int clr_cmd_check(int argc, char **argv)
{
    return check_cmd("check", argc, argv);
}

int clr_cmd_repair(int argc, char **argv)
{
    return check_cmd("repair", argc, argv);
}
