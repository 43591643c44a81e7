/* Run files and the control socket, for the CLI's engine commands. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cli/cli.h"
#include "ctl/ctl_client.h"

int clr_name_check(const char *cmd, const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > 64 || name[0] == '.' || name[0] == '-' ||
        strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != n) {
        clr_cli_error(cmd, "'%s' is not a valid array name (1-64 of letters, digits, '_', '.', '-')", name);
        return -1;
    }
    return 0;
}

int clr_run_path(const char *cmd, char *buf, size_t size, const char *dir, const char *name, const char *ext)
{
    int n = snprintf(buf, size, "%s/%s%s", dir, name, ext);

    /* 108 is sun_path: sockets must fit there. */
    if (n < 0 || (size_t)n >= size || (size_t)n >= 108) {
        clr_cli_error(cmd, "%s/%s%s: path too long for a unix socket (use a shorter --run-dir)", dir, name,
                      ext);
        return -1;
    }
    return 0;
}

/* True if @pid runs (a zombie waiting for its parent does not). */
static bool pid_alive(pid_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;

    if (kill(pid, 0) != 0 && errno == ESRCH)
        return false;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    f = fopen(path, "re");
    if (!f)
        return true;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

bool clr_pid_alive(pid_t pid)
{
    return pid_alive(pid);
}

pid_t clr_run_pid(const char *dir, const char *name)
{
    char path[4096];
    FILE *f;
    long pid = 0;

    snprintf(path, sizeof path, "%s/%s.pid", dir, name);
    f = fopen(path, "re");
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1 || pid <= 1)
        pid = 0;
    fclose(f);
    if (pid && !pid_alive((pid_t)pid))
        pid = 0;
    return (pid_t)pid;
}

int clr_cli_ctl(const char *cmd, const char *dir, const char *name, const char *ctlcmd, json_object *args,
                int timeout_ms, json_object **result)
{
    char path[4096];
    struct clr_err e = { "" };
    json_object *res = NULL;
    int rc;

    if (result)
        *result = NULL;
    if (clr_run_path(cmd, path, sizeof path, dir, name, ".ctl") != 0) {
        json_object_put(args);
        return -1;
    }
    rc = clr_ctl_call(path, ctlcmd, args, timeout_ms, &res, &e);
    if (rc == -ENOENT || rc == -ECONNREFUSED) {
        clr_cli_error(cmd, "array '%s' is not running in %s (start it with 'clraid start %s DEV...'%s)", name,
                      dir, name, strcmp(dir, CLR_RUN_DIR_DEFAULT) ? " or check --run-dir" : "");
        return -1;
    }
    if (rc) {
        clr_cli_error(cmd, "%s: %s", name, e.msg);
        return -1;
    }
    if (result)
        *result = res;
    else
        json_object_put(res);
    return 0;
}

json_object *clr_json_path(json_object *o, const char *path)
{
    char key[64];

    while (o && *path) {
        size_t n = strcspn(path, ".");

        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &o))
            return NULL;
        path += n;
        if (*path == '.')
            path++;
    }
    return o;
}
