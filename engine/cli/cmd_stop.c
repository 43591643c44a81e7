/* clraid stop: asks the engine to flush and stop cleanly, and waits until
 * its process has gone (the bitmap and superblocks are then clean). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli/cli.h"

#define STOP_TIMEOUT_S 120

int clr_cmd_stop(int argc, char **argv)
{
    static const struct option opts[] = {
        { "run-dir", required_argument, NULL, 'r' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *dir = CLR_RUN_DIR_DEFAULT, *name;
    char path[PATH_MAX];
    pid_t pid;
    int c;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'r':
            dir = optarg;
            break;
        case 'h':
            printf("usage: clraid stop NAME [--run-dir DIR]\n"
                   "  Flushes array NAME, stops its engine cleanly and waits for it to exit.\n");
            return 0;
        default:
            clr_cli_error("stop", "bad option (run 'clraid stop --help')");
            return 1;
        }
    }
    if (argc - optind != 1) {
        clr_cli_error("stop", "give exactly one array name: clraid stop NAME");
        return 1;
    }
    name = argv[optind];
    if (clr_name_check("stop", name) != 0)
        return 1;
    pid = clr_run_pid(dir, name);
    if (clr_cli_ctl("stop", dir, name, "stop", NULL, CLR_CTL_TIMEOUT_MS, NULL) != 0) {
        if (!pid)
            return 1;
        /* The control socket is gone but the process is not: nbdkit also
         * stops cleanly on SIGTERM. */
        fprintf(stderr, "clraid stop: %s: control socket did not answer, sending SIGTERM to pid %ld\n", name,
                (long)pid);
        kill(pid, SIGTERM);
    }
    if (pid) {
        for (int i = 0; clr_pid_alive(pid); i++) {
            if (i >= STOP_TIMEOUT_S * 10) {
                clr_cli_error("stop", "%s: engine pid %ld still running after %d s (see %s/%s.log)", name,
                              (long)pid, STOP_TIMEOUT_S, dir, name);
                return 1;
            }
            usleep(100 * 1000);
        }
    }
    if (clr_run_path("stop", path, sizeof path, dir, name, ".pid") == 0)
        unlink(path);
    if (clr_run_path("stop", path, sizeof path, dir, name, ".sock") == 0)
        unlink(path);
    printf("stopped array '%s'\n", name);
    return 0;
}
