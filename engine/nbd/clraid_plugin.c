/* nbdkit-clraid-plugin: serves one clraid array over NBD.
 *
 *   nbdkit clraid name=NAME device=PATH [device=PATH ...] | devices="A B ..."
 *                 [run_dir=/run/clraid] [lock=local|cpg|dlm] [buffered=false]
 *
 * The array is assembled in .get_ready (before nbdkit forks, so a bad
 * member fails the start with one line) and run in .after_fork, where the
 * control socket RUN_DIR/NAME.ctl starts too. All RAID logic is in the
 * array core (array/array.h); this file only maps callbacks onto it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "array/array.h"
#include "ctl/ctl_array.h"
#include "ctl/ctl_server.h"
#include "lock/lock.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static char *name;
static char **devices;
static unsigned ndevices;
static const char *run_dir = "/run/clraid";
static char *run_dir_owned;
static const char *lock = "local";
static bool buffered;
static bool skip_stale;
static bool bitmap_all_dirty;
static char *export_uri; /* how clients reach us, for status (clraid start says) */

static struct clr_array *array;
static bool running;
static struct clr_ctl_server *ctl;
static struct clr_ctl_array ctl_array;

static int clraid_add_device(const char *path)
{
    char **n = realloc(devices, (ndevices + 1) * sizeof *devices);

    if (!n) {
        nbdkit_error("realloc: %m");
        return -1;
    }
    devices = n;
    devices[ndevices] = nbdkit_realpath(path);
    if (!devices[ndevices])
        return -1;
    ndevices++;
    return 0;
}

static int clraid_config(const char *key, const char *value)
{
    if (strcmp(key, "name") == 0) {
        free(name);
        name = strdup(value);
        if (!name) {
            nbdkit_error("strdup: %m");
            return -1;
        }
    } else if (strcmp(key, "device") == 0) {
        return clraid_add_device(value);
    } else if (strcmp(key, "devices") == 0) {
        char *copy = strdup(value), *save = NULL;

        if (!copy) {
            nbdkit_error("strdup: %m");
            return -1;
        }
        for (char *t = strtok_r(copy, " \t,", &save); t; t = strtok_r(NULL, " \t,", &save))
            if (clraid_add_device(t) != 0) {
                free(copy);
                return -1;
            }
        free(copy);
    } else if (strcmp(key, "run_dir") == 0) {
        free(run_dir_owned);
        run_dir_owned = nbdkit_absolute_path(value);
        if (!run_dir_owned)
            return -1;
        run_dir = run_dir_owned;
    } else if (strcmp(key, "lock") == 0) {
        if (strcmp(value, "local") != 0 && strcmp(value, "cpg") != 0 && strcmp(value, "dlm") != 0) {
            nbdkit_error("lock=%s: unknown lock backend (use local, cpg or dlm)", value);
            return -1;
        }
        lock = strcmp(value, "local") == 0 ? "local" : strcmp(value, "cpg") == 0 ? "cpg" : "dlm";
    } else if (strcmp(key, "buffered") == 0) {
        int r = nbdkit_parse_bool(value);

        if (r < 0)
            return -1;
        buffered = r;
    } else if (strcmp(key, "skip_stale") == 0) {
        int r = nbdkit_parse_bool(value);

        if (r < 0)
            return -1;
        skip_stale = r;
    } else if (strcmp(key, "bitmap") == 0) {
        if (strcmp(value, "normal") != 0 && strcmp(value, "all-dirty") != 0) {
            nbdkit_error("bitmap=%s: use normal or all-dirty", value);
            return -1;
        }
        bitmap_all_dirty = strcmp(value, "all-dirty") == 0;
    } else if (strcmp(key, "export") == 0) {
        free(export_uri);
        export_uri = strdup(value);
        if (!export_uri) {
            nbdkit_error("strdup: %m");
            return -1;
        }
    } else {
        nbdkit_error("unknown parameter '%s' (see nbdkit-clraid-plugin --help)", key);
        return -1;
    }
    return 0;
}

static int clraid_config_complete(void)
{
    clr_lock_cluster_backends(); /* lock=cpg and lock=dlm run here */
    if (!name || !*name || strchr(name, '/') || strlen(name) > 64) {
        nbdkit_error("name=NAME is required (1-64 characters, no '/')");
        return -1;
    }
    if (ndevices == 0) {
        nbdkit_error("no member devices: give device=PATH (repeatable) or devices=\"A B ...\"");
        return -1;
    }
    return 0;
}

#define clraid_config_help                                                                                   \
    "name=NAME            (required) the array's name: run files and logs\n"                                 \
    "device=PATH          a member or spare; repeat for each\n"                                              \
    "devices=\"A B ...\"    members as one list\n"                                                           \
    "run_dir=DIR          where NAME.ctl is created (default /run/clraid)\n"                                 \
    "lock=local           local: this node alone; cpg or dlm: join the cluster\n"                            \
    "buffered=false       true: never use O_DIRECT on members\n"                                             \
    "skip_stale=false     true: leave stale/faulty members out, start degraded\n"                            \
    "export=URI           the URI clients use, shown by 'clraid status' (set by clraid start)\n"             \
    "bitmap=normal        all-dirty: no bitmap flushes, full resync after a crash"

static void clraid_dump_plugin(void)
{
    printf("clraid_version=%s\n", PACKAGE_VERSION);
    printf("clraid_ctl_protocol=%d\n", CLR_CTL_VERSION);
}

/* Errors go through nbdkit_error; warnings, notices and info (takeovers,
 * write holds, resyncs: events, never per request) are written to the log
 * (nbdkit's stderr) as they are, so an operator sees them without
 * --verbose; only debug needs CLRAID_NBDKIT_VERBOSE. */
static void clraid_log(void *opaque, int prio, const char *msg)
{
    static const char *const level[] = { "emerg",   "alert",  "crit", "error",
                                         "warning", "notice", "info", "debug" };

    (void)opaque;
    if (prio <= LOG_ERR)
        nbdkit_error("%s: %s", name, msg);
    else if (prio <= LOG_INFO)
        fprintf(stderr, "nbdkit: %s: %s: %s\n", name, level[prio], msg);
    else
        nbdkit_debug("%s: %s", name, msg);
}

/* Assembles the array from the configured devices (writes nothing). */
static int assemble(void)
{
    struct clr_array_config cfg = {
        .name = name,
        .devices = (const char *const *)devices,
        .ndevices = ndevices,
        .lock = lock,
        .flags = (buffered ? CLR_ARRAY_BUFFERED : 0) | (skip_stale ? CLR_ARRAY_SKIP_STALE : 0) |
                 (bitmap_all_dirty ? CLR_ARRAY_BITMAP_ALL_DIRTY : 0),
        .log = clraid_log,
    };
    struct clr_err e = { "" };
    int rc;

    rc = clr_array_assemble(&cfg, &array, &e);
    if (rc) {
        nbdkit_error("%s", e.msg[0] ? e.msg : strerror(-rc));
        return -1;
    }
    return 0;
}

static int clraid_get_ready(void)
{
    return assemble();
}

static void clraid_request_stop(void *opaque)
{
    nbdkit_debug("%s: stop requested on the control socket", name);
    /* held writes fail now: nbdkit waits for them before it unloads us */
    if (array)
        clr_array_stop_requested(array);
    nbdkit_shutdown();
}

/* Starts tried when the membership changes under a start (-ESTALE). */
#define START_TRIES 5

static int clraid_after_fork(void)
{
    struct clr_err e = { "" };
    char *path = NULL;
    int rc;

    rc = clr_array_run(array, &e);
    /* -ESTALE: a member was re-added by another node while we started
     * (clr_rules_start_missing): the start was undone; assemble again
     * from what is on disk now, which includes it */
    for (int tries = 1; rc == -ESTALE && tries < START_TRIES; tries++) {
        fprintf(stderr, "nbdkit: %s: notice: %s; assembling again\n", name, e.msg);
        clr_array_free(array);
        array = NULL;
        if (assemble() != 0)
            return -1;
        e.msg[0] = 0;
        rc = clr_array_run(array, &e);
    }
    if (rc) {
        nbdkit_error("%s", e.msg[0] ? e.msg : strerror(-rc));
        return -1;
    }
    running = true;
    if (asprintf(&path, "%s/%s.ctl", run_dir, name) < 0) {
        nbdkit_error("asprintf: %m");
        return -1;
    }
    ctl_array =
        (struct clr_ctl_array){ .array = array, .stop = clraid_request_stop, .export_uri = export_uri };
    rc = clr_ctl_server_start(path, clr_ctl_array_handle, &ctl_array, &ctl, &e);
    free(path);
    if (rc) {
        nbdkit_error("%s", e.msg);
        return -1;
    }
    return 0;
}

/* Every connection has gone: stop the control socket, then the array, so
 * the bitmap and superblocks are left clean. */
static void clraid_cleanup(void)
{
    clr_ctl_server_stop(ctl);
    ctl = NULL;
    if (running) {
        int rc = clr_array_stop(array);

        if (rc)
            nbdkit_error("%s: clean stop failed: %s (the next start resyncs dirty regions)", name,
                         strerror(-rc));
        running = false;
    }
}

static void clraid_unload(void)
{
    clr_array_free(array);
    array = NULL;
    for (unsigned i = 0; i < ndevices; i++)
        free(devices[i]);
    free(devices);
    free(name);
    free(run_dir_owned);
    free(export_uri);
}

static void *clraid_open(int readonly)
{
    return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t clraid_get_size(void *handle)
{
    return (int64_t)clr_array_size(array);
}

static uint32_t pow2_floor(uint32_t v)
{
    uint32_t p = 1;

    while (p <= v / 2)
        p *= 2;
    return p;
}

/* NBD wants powers of two for minimum and preferred. A RAID5 stripe of
 * three data chunks is not one: then preferred is the largest power of two
 * dividing the stripe (the chunk), so aligned requests of that size never
 * straddle stripes unevenly. */
static int clraid_block_size(void *handle, uint32_t *minimum, uint32_t *preferred, uint32_t *maximum)
{
    uint32_t mn, pr, mx;

    clr_array_block_sizes(array, &mn, &pr, &mx);
    mn = mn ? pow2_floor(mn) : 512;
    if (mn > 65536)
        mn = 65536;
    pr = pr ? pr & -pr : 4096;
    if (pr < 512)
        pr = 512;
    if (pr > 32u << 20)
        pr = 32u << 20;
    if (pr < mn)
        pr = mn;
    if (!mx || mx < pr)
        mx = 0xffffffff;
    else
        mx -= mx % mn;
    *minimum = mn;
    *preferred = pr;
    *maximum = mx;
    return 0;
}

static int clraid_can_multi_conn(void *handle)
{
    return 1; /* one array under all connections: a flush covers all */
}

static int clraid_can_fua(void *handle)
{
    return NBDKIT_FUA_NATIVE;
}

static int clraid_can_flush(void *handle)
{
    return 1;
}

static int clraid_can_trim(void *handle)
{
    return 1;
}

static int clraid_can_zero(void *handle)
{
    return 1;
}

static int clraid_fail(int rc, const char *op, uint32_t count, uint64_t offset)
{
    nbdkit_debug("%s: %s of %u bytes at %llu: %s", name, op, count, (unsigned long long)offset,
                 strerror(-rc));
    nbdkit_set_error(-rc);
    return -1;
}

static unsigned write_flags(uint32_t flags)
{
    return (flags & NBDKIT_FLAG_FUA ? CLR_ARRAY_FUA : 0) |
           (flags & NBDKIT_FLAG_MAY_TRIM ? CLR_ARRAY_MAY_TRIM : 0);
}

static int clraid_pread(void *handle, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
    int rc = clr_array_pread(array, buf, count, offset);

    return rc ? clraid_fail(rc, "read", count, offset) : 0;
}

static int clraid_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
    int rc = clr_array_pwrite(array, buf, count, offset, write_flags(flags));

    return rc ? clraid_fail(rc, "write", count, offset) : 0;
}

static int clraid_flush(void *handle, uint32_t flags)
{
    int rc = clr_array_flush(array);

    return rc ? clraid_fail(rc, "flush", 0, 0) : 0;
}

static int clraid_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
    int rc = clr_array_trim(array, count, offset, write_flags(flags));

    return rc ? clraid_fail(rc, "trim", count, offset) : 0;
}

static int clraid_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
    int rc = clr_array_zero(array, count, offset, write_flags(flags));

    return rc ? clraid_fail(rc, "zero", count, offset) : 0;
}

static struct nbdkit_plugin plugin = {
    .name = "clraid",
    .version = PACKAGE_VERSION,
    .longname = "clraid clustered software RAID",
    .description = "Serves a clraid RAID1/10/5/6 array",
    .config = clraid_config,
    .config_complete = clraid_config_complete,
    .config_help = clraid_config_help,
    .magic_config_key = "device",
    .dump_plugin = clraid_dump_plugin,
    .get_ready = clraid_get_ready,
    .after_fork = clraid_after_fork,
    .cleanup = clraid_cleanup,
    .unload = clraid_unload,
    .open = clraid_open,
    .get_size = clraid_get_size,
    .block_size = clraid_block_size,
    .can_multi_conn = clraid_can_multi_conn,
    .can_fua = clraid_can_fua,
    .can_flush = clraid_can_flush,
    .can_trim = clraid_can_trim,
    .can_zero = clraid_can_zero,
    .pread = clraid_pread,
    .pwrite = clraid_pwrite,
    .flush = clraid_flush,
    .trim = clraid_trim,
    .zero = clraid_zero,
    .errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
