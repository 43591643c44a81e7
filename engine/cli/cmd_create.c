/* clraid create: writes md v1.2 superblocks and the clustered bitmap.
 * Every check runs before the first byte is written to any device. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "format/create_plan.h"
#include "format/plog.h"

static const char create_usage[] =
    "usage: clraid create --level=1|10|5|6 --raid-devices=N [--spare-devices=N]\n"
    "                     [--layout=L] [--chunk=KiB] [--bitmap-chunk=KiB]\n"
    "                     [--nodes=K] [--home-cluster=NAME] [--name=NAME]\n"
    "                     [--uuid=UUID] [--assume-clean] [--force] DEV...\n";

static int parse_u32(const char *opt, const char *s, uint32_t *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || end == s || v > UINT32_MAX || s[0] == '-') {
        clr_cli_error("create", "--%s=%s: expected a whole number", opt, s);
        return -1;
    }
    /* mdadm accepts a K/M/G suffix on sizes given in KiB. */
    if (*end == 'K' || *end == 'k')
        end++;
    else if (*end == 'M' || *end == 'm')
        v *= 1024, end++;
    else if (*end == 'G' || *end == 'g')
        v *= 1024 * 1024, end++;
    if (*end || v > UINT32_MAX) {
        clr_cli_error("create", "--%s=%s: expected a whole number (optionally with K, M or G)", opt, s);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

enum {
    OPT_BITMAP_CHUNK = 256,
    OPT_NODES,
    OPT_HOME_CLUSTER,
    OPT_ASSUME_CLEAN,
    OPT_UUID,
    OPT_LAYOUT
};

static int write_member(struct clr_dev *d, const struct clr_create_plan *plan, uint32_t index, bool force,
                        uint8_t *region, uint8_t *sbuf)
{
    struct clr_md_sb sb;
    uint8_t dev_uuid[16];
    int rc;

    if (force) {
        rc = clr_wipe_signatures(d->fd);
        if (rc)
            return rc;
        /* The 4 KiB before the superblock may hold old boot/label data. */
        memset(sbuf, 0, CLR_MD_SB_AREA_BYTES);
        rc = clr_pwrite_full(d->fd, sbuf, CLR_MD_SB_AREA_BYTES, 0);
        if (rc)
            return rc;
    }
    rc = clr_random_bytes(dev_uuid, sizeof dev_uuid);
    if (rc)
        return rc;
    for (uint32_t slot = 0; slot < plan->slots; slot++) {
        rc = clr_create_bitmap_region(plan, slot, region, plan->stride_bytes);
        if (rc)
            return rc;
        rc = clr_pwrite_full(d->fd, region, plan->stride_bytes,
                             (plan->sb.super_offset + (uint64_t)plan->sb.bitmap_offset) * 512 +
                                 slot * plan->stride_bytes);
        if (rc)
            return rc;
    }
    /* A clustered RAID5/6: every slot's log starts empty (a header left
     * by an earlier use of the device must not be replayed). */
    if (plan->sb.feature_map & CLR_MD_FEAT_CLRAID_PARITY) {
        struct clr_plog_layout lay;
        struct clr_err e;

        if (clr_plog_layout(&plan->sb, &plan->bitmap, &lay, &e) != 0)
            return -ERANGE;
        memset(region, 0, CLR_PLOG_HDR_BYTES * CLR_PLOG_COPIES);
        for (uint32_t slot = 0; slot < lay.slots; slot++) {
            rc = clr_pwrite_full(d->fd, region, CLR_PLOG_HDR_BYTES * CLR_PLOG_COPIES,
                                 lay.start + slot * lay.slot_bytes);
            if (rc)
                return rc;
        }
    }
    /* The superblock goes last: a member is only a member once its
     * bitmap is in place. */
    clr_create_member_sb(plan, index, d->bytes / 512, dev_uuid, &sb);
    rc = clr_md_sb_encode(&sb, sbuf, CLR_MD_SB_AREA_BYTES);
    if (rc)
        return rc;
    rc = clr_pwrite_full(d->fd, sbuf, CLR_MD_SB_AREA_BYTES, CLR_MD_V12_SB_SECTOR * 512);
    if (rc)
        return rc;
    return fsync(d->fd) < 0 ? -errno : 0;
}

/* What 'clraid create' was asked for. */
struct create_req {
    struct clr_create_params p;
    const char *layout_arg;
    bool force, have_level, have_uuid;
    char **paths; /* the member arguments */
    uint32_t ndev;
};

/* The members, opened read-only (phase 1), then for writing (phase 2). */
struct create_members {
    struct clr_dev *devs;
    uint64_t *sizes; /* sectors */
    uint32_t n;
};

/* A step's outcome: go on, or exit with this code (0 after --help). */
#define CREATE_GO (-1)

/* The whole-number options: their name and where they go. */
static uint32_t *u32_option(int c, struct clr_create_params *p, const char **name)
{
    switch (c) {
    case 'n':
        *name = "raid-devices";
        return &p->raid_disks;
    case 'x':
        *name = "spare-devices";
        return &p->spare_devices;
    case 'c':
        *name = "chunk";
        return &p->chunk_kib;
    case OPT_BITMAP_CHUNK:
        *name = "bitmap-chunk";
        return &p->bitmap_chunk_kib;
    case OPT_NODES:
        *name = "nodes";
        return &p->nodes;
    default:
        return NULL;
    }
}

/* One option @c (argument @arg) into @r. */
static int create_option(int c, const char *arg, struct create_req *r)
{
    const char *uname;
    uint32_t *u = u32_option(c, &r->p, &uname);

    if (u)
        return parse_u32(uname, arg, u) ? 1 : CREATE_GO;
    switch (c) {
    case 'l':
        if (clr_md_level_parse(arg, &r->p.level) != 0) {
            clr_cli_error("create", "--level=%s: not a supported level (use 1, 10, 5 or 6)", arg);
            return 1;
        }
        r->have_level = true;
        return CREATE_GO;
    case OPT_LAYOUT:
        r->layout_arg = arg;
        return CREATE_GO;
    case OPT_HOME_CLUSTER:
        if (strlen(arg) > 63) {
            clr_cli_error("create", "--home-cluster: name longer than 63 characters");
            return 1;
        }
        snprintf(r->p.cluster_name, sizeof r->p.cluster_name, "%s", arg);
        return CREATE_GO;
    case 'N':
        if (strlen(arg) > 32 || !arg[0]) {
            clr_cli_error("create", "--name=%s: use 1 to 32 characters", arg);
            return 1;
        }
        snprintf(r->p.name, sizeof r->p.name, "%s", arg);
        return CREATE_GO;
    case OPT_UUID:
        if (clr_uuid_parse(arg, r->p.set_uuid) != 0) {
            clr_cli_error("create", "--uuid=%s: not a UUID (32 hex digits)", arg);
            return 1;
        }
        r->have_uuid = true;
        return CREATE_GO;
    case OPT_ASSUME_CLEAN:
        r->p.assume_clean = true;
        return CREATE_GO;
    case 'f':
        r->force = true;
        return CREATE_GO;
    case 'h':
        fputs(create_usage, stdout);
        return 0;
    default:
        fputs(create_usage, stderr);
        return 2;
    }
}

/* Step 1: the options, in order; the members are left at argv[optind...]. */
static int create_parse(int argc, char **argv, struct create_req *r)
{
    static const struct option opts[] = {
        { "level", required_argument, NULL, 'l' },
        { "raid-devices", required_argument, NULL, 'n' },
        { "spare-devices", required_argument, NULL, 'x' },
        { "layout", required_argument, NULL, OPT_LAYOUT },
        { "chunk", required_argument, NULL, 'c' },
        { "bitmap-chunk", required_argument, NULL, OPT_BITMAP_CHUNK },
        { "nodes", required_argument, NULL, OPT_NODES },
        { "home-cluster", required_argument, NULL, OPT_HOME_CLUSTER },
        { "name", required_argument, NULL, 'N' },
        { "uuid", required_argument, NULL, OPT_UUID },
        { "assume-clean", no_argument, NULL, OPT_ASSUME_CLEAN },
        { "force", no_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c, rc;

    memset(r, 0, sizeof *r);
    r->p.nodes = CLR_CREATE_DEFAULT_NODES;
    snprintf(r->p.name, sizeof r->p.name, "clraid");
    optind = 1;
    while ((c = getopt_long(argc, argv, "l:n:x:c:N:fh", opts, NULL)) != -1)
        if ((rc = create_option(c, optarg, r)) != CREATE_GO)
            return rc;
    return CREATE_GO;
}

/* Step 2: what the options say together, before any device is opened. */
static int create_validate(int argc, char **argv, struct create_req *r)
{
    struct clr_create_params check;
    struct clr_err err = { "" };
    struct timeval tv;

    if (!r->have_level) {
        clr_cli_error("create", "--level is required (1, 10, 5 or 6)");
        return 2;
    }
    if (r->layout_arg) {
        if (clr_md_layout_parse(r->p.level, r->layout_arg, &r->p.layout) != 0) {
            clr_cli_error(
                "create", "--layout=%s is not a layout for raid%d (%s)", r->layout_arg, r->p.level,
                r->p.level == 10 ? "use n2, f2 or o2"
                : r->p.level == 1
                    ? "raid1 has no layout"
                    : "use left-symmetric, right-symmetric, left-asymmetric, right-asymmetric, parity-first or parity-last");
            return 1;
        }
        r->p.layout_set = true;
    }
    if (optind >= argc) {
        clr_cli_error("create", "no devices given");
        return 2;
    }
    r->paths = argv + optind;
    r->ndev = (uint32_t)(argc - optind);
    if (!r->have_uuid && clr_random_bytes(r->p.set_uuid, sizeof r->p.set_uuid) != 0) {
        clr_cli_error("create", "cannot read random bytes for the array UUID");
        return 1;
    }
    check = r->p;
    if (clr_create_check_params(&check, r->ndev, &err) != 0) {
        clr_cli_error("create", "%s", err.msg);
        return 1;
    }
    gettimeofday(&tv, NULL);
    r->p.now_sec = (uint64_t)tv.tv_sec;
    r->p.now_usec = (uint32_t)tv.tv_usec;
    return CREATE_GO;
}

/* Step 3 (phase 1): read-only checks of every device: it opens, is given
 * once, and holds no data unless --force. */
static int create_open_members(const struct create_req *r, struct create_members *m)
{
    m->devs = calloc(r->ndev, sizeof *m->devs);
    m->sizes = calloc(r->ndev, sizeof *m->sizes);
    if (!m->devs || !m->sizes) {
        clr_cli_error("create", "out of memory");
        return -1;
    }
    m->n = r->ndev;
    for (uint32_t i = 0; i < m->n; i++)
        m->devs[i].fd = -1;
    for (uint32_t i = 0; i < m->n; i++) {
        struct clr_probe_result pr;

        if (clr_dev_open("create", r->paths[i], O_RDONLY, &m->devs[i]) != 0)
            return -1;
        for (uint32_t j = 0; j < i; j++) {
            if (clr_dev_same(&m->devs[i], &m->devs[j])) {
                clr_cli_error("create", "%s and %s are the same device; give each member once",
                              m->devs[j].path, m->devs[i].path);
                return -1;
            }
        }
        if (clr_probe_signatures(m->devs[i].fd, &pr) != 0) {
            clr_cli_error("create", "%s: cannot probe for existing signatures", m->devs[i].path);
            return -1;
        }
        if (pr.found && !r->force) {
            clr_cli_error(
                "create",
                "%s holds existing data (%s); refusing to overwrite it (pass --force to destroy it)",
                m->devs[i].path, pr.what);
            return -1;
        }
        m->sizes[i] = m->devs[i].bytes / 512;
    }
    return 0;
}

/* Step 4: the layout of every member, from their sizes. */
static int create_make_plan(const struct create_req *r, const struct create_members *m,
                            struct clr_create_plan *plan)
{
    struct clr_err err = { "" };

    if (clr_create_plan(&r->p, m->sizes, m->n, plan, &err) != 0) {
        clr_cli_error("create", "%s", err.msg);
        return -1;
    }
    return 0;
}

/* Step 5 (phase 2): reopen every device for writing before writing any;
 * refuse if one changed since phase 1. */
static int create_reopen_for_write(struct create_members *m)
{
    for (uint32_t i = 0; i < m->n; i++) {
        struct clr_dev w;

        if (clr_dev_open("create", m->devs[i].path, O_RDWR | (m->devs[i].is_blk ? O_EXCL : 0), &w) != 0)
            return -1;
        if (!clr_dev_same(&w, &m->devs[i]) || w.bytes != m->devs[i].bytes) {
            clr_cli_error("create", "%s changed while being checked; run the command again", w.path);
            clr_dev_close(&w);
            return -1;
        }
        clr_dev_close(&m->devs[i]);
        m->devs[i] = w;
    }
    return 0;
}

/* Step 6: the bitmap and the superblock of every member. */
static int create_write_members(const struct create_req *r, struct create_members *m,
                                const struct clr_create_plan *plan)
{
    /* a bitmap region, or the log header copies of a slot (zeroed) */
    uint64_t rbytes = (plan->stride_bytes + 4095) & ~(uint64_t)4095;
    uint8_t *region = aligned_alloc(
        4096, rbytes > CLR_PLOG_HDR_BYTES * CLR_PLOG_COPIES ? rbytes : CLR_PLOG_HDR_BYTES * CLR_PLOG_COPIES);
    uint8_t *sbuf = aligned_alloc(4096, CLR_MD_SB_AREA_BYTES);
    int rc = -1;

    if (!region || !sbuf) {
        clr_cli_error("create", "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < m->n; i++) {
        int wrc = write_member(&m->devs[i], plan, i, r->force, region, sbuf);

        if (wrc) {
            clr_cli_error("create",
                          "%s: write failed: %s (the array is incomplete; re-run create with --force)",
                          m->devs[i].path, strerror(-wrc));
            goto out;
        }
    }
    rc = 0;
out:
    free(region);
    free(sbuf);
    return rc;
}

/* Step 7: what was created, on stdout. */
static void create_report(const struct create_req *r, const struct clr_create_plan *plan)
{
    char uuid[36], lname[48];

    clr_uuid_format_mdadm(r->p.set_uuid, uuid);
    clr_md_layout_name(plan->sb.level, plan->sb.layout, lname, sizeof lname);
    printf("clraid: created %s array '%s' UUID %s: %u devices, %" PRIu64 " MiB, %s%s, %u node slot%s\n",
           clr_md_level_name(plan->sb.level), plan->sb.set_name, uuid, r->ndev, plan->array_sectors / 2048,
           plan->sb.level == 1 ? "" : "layout ", plan->sb.level == 1 ? "mirror" : lname, plan->slots,
           plan->slots == 1 ? "" : "s");
    if (!r->p.assume_clean)
        printf("clraid: the first start will run an initial resync\n");
}

int clr_cmd_create(int argc, char **argv)
{
    struct create_req r;
    struct create_members m = { 0 };
    struct clr_create_plan plan;
    int rc = create_parse(argc, argv, &r);

    if (rc == CREATE_GO)
        rc = create_validate(argc, argv, &r);
    if (rc != CREATE_GO)
        return rc;
    rc = 1;
    if (create_open_members(&r, &m) == 0 && create_make_plan(&r, &m, &plan) == 0 &&
        create_reopen_for_write(&m) == 0 && create_write_members(&r, &m, &plan) == 0) {
        create_report(&r, &plan);
        rc = 0;
    }
    for (uint32_t i = 0; m.devs && i < m.n; i++)
        clr_dev_close(&m.devs[i]);
    free(m.devs);
    free(m.sizes);
    return rc;
}
