/* clraid: the command-line tool. One table of subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct clr_cli_command commands[] = {
    { "create", clr_cmd_create, "write md v1.2 metadata and the clustered bitmap to new members" },
    { "examine", clr_cmd_examine, "print the metadata of member devices" },
    { "start", clr_cmd_start, "assemble an array and serve it over NBD in the background" },
    { "stop", clr_cmd_stop, "flush and stop a running array cleanly" },
    { "status", clr_cmd_status, "show running arrays (--json, --watch)" },
    { "fail", clr_cmd_fail, "mark a member faulty" },
    { "remove", clr_cmd_remove, "remove a faulty or spare member" },
    { "probe", clr_cmd_probe, "read and write this node's own block on a member (the policy's probe)" },
    { "add", clr_cmd_add, "add a spare (rebuilt at once if the array is degraded)" },
    { "re-add", clr_cmd_readd, "re-add a member that left, resyncing from the bitmap" },
    { "check", clr_cmd_check, "scrub: count mismatches (--wait)" },
    { "repair", clr_cmd_repair, "scrub and rewrite mismatches (--wait)" },
    { "thaw", clr_cmd_thaw, "release a frozen array: --error fails blocked I/O with EIO" },
    { "fault", clr_cmd_fault, "test hook: inject member I/O faults into a running array" },
    { "ctl", clr_cmd_ctl, "test hook: send one raw control-socket request line" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: clraid COMMAND [OPTIONS] ...\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'clraid COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("clraid %s\n", PACKAGE_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "clraid: unknown command '%s' (run 'clraid --help')\n", argv[1]);
    return 2;
}
