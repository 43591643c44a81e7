/* clraid: the command-line tool. One table of subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct clr_cli_command commands[] = {
    { "create", clr_cmd_create, "write md v1.2 metadata and the clustered bitmap to new members" },
    { "examine", clr_cmd_examine, "print the metadata of member devices" },
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
