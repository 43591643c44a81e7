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

enum { OPT_BITMAP_CHUNK = 256, OPT_NODES, OPT_HOME_CLUSTER, OPT_ASSUME_CLEAN,
       OPT_UUID, OPT_LAYOUT };

static int write_member(struct clr_dev *d, const struct clr_create_plan *plan, uint32_t index,
                        bool force, uint8_t *region, uint8_t *sbuf)
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

int clr_cmd_create(int argc, char **argv)
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
    struct clr_create_params p;
    struct clr_create_plan plan;
    struct clr_err err = { "" };
    const char *layout_arg = NULL;
    bool force = false, have_level = false, have_uuid = false;
    struct clr_dev *devs = NULL;
    uint64_t *sizes = NULL;
    uint8_t *region = NULL, *sbuf = NULL;
    struct timeval tv;
    uint32_t ndev;
    int c, rc = 1;

    memset(&p, 0, sizeof p);
    p.nodes = CLR_CREATE_DEFAULT_NODES;
    snprintf(p.name, sizeof p.name, "clraid");
    optind = 1;
    while ((c = getopt_long(argc, argv, "l:n:x:c:N:fh", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (clr_md_level_parse(optarg, &p.level) != 0) {
                clr_cli_error("create", "--level=%s: not a supported level (use 1, 10, 5 or 6)", optarg);
                return 1;
            }
            have_level = true;
            break;
        case 'n':
            if (parse_u32("raid-devices", optarg, &p.raid_disks))
                return 1;
            break;
        case 'x':
            if (parse_u32("spare-devices", optarg, &p.spare_devices))
                return 1;
            break;
        case OPT_LAYOUT:
            layout_arg = optarg;
            break;
        case 'c':
            if (parse_u32("chunk", optarg, &p.chunk_kib))
                return 1;
            break;
        case OPT_BITMAP_CHUNK:
            if (parse_u32("bitmap-chunk", optarg, &p.bitmap_chunk_kib))
                return 1;
            break;
        case OPT_NODES:
            if (parse_u32("nodes", optarg, &p.nodes))
                return 1;
            break;
        case OPT_HOME_CLUSTER:
            if (strlen(optarg) > 63) {
                clr_cli_error("create", "--home-cluster: name longer than 63 characters");
                return 1;
            }
            snprintf(p.cluster_name, sizeof p.cluster_name, "%s", optarg);
            break;
        case 'N':
            if (strlen(optarg) > 32 || !optarg[0]) {
                clr_cli_error("create", "--name=%s: use 1 to 32 characters", optarg);
                return 1;
            }
            snprintf(p.name, sizeof p.name, "%s", optarg);
            break;
        case OPT_UUID:
            if (clr_uuid_parse(optarg, p.set_uuid) != 0) {
                clr_cli_error("create", "--uuid=%s: not a UUID (32 hex digits)", optarg);
                return 1;
            }
            have_uuid = true;
            break;
        case OPT_ASSUME_CLEAN:
            p.assume_clean = true;
            break;
        case 'f':
            force = true;
            break;
        case 'h':
            fputs(create_usage, stdout);
            return 0;
        default:
            fputs(create_usage, stderr);
            return 2;
        }
    }
    if (!have_level) {
        clr_cli_error("create", "--level is required (1, 10, 5 or 6)");
        return 2;
    }
    if (layout_arg) {
        if (clr_md_layout_parse(p.level, layout_arg, &p.layout) != 0) {
            clr_cli_error("create", "--layout=%s is not a layout for raid%d (%s)", layout_arg, p.level,
                          p.level == 10 ? "use n2, f2 or o2" :
                          p.level == 1 ? "raid1 has no layout" :
                          "use left-symmetric, right-symmetric, left-asymmetric, right-asymmetric, parity-first or parity-last");
            return 1;
        }
        p.layout_set = true;
    }
    if (optind >= argc) {
        clr_cli_error("create", "no devices given");
        return 2;
    }
    ndev = (uint32_t)(argc - optind);
    if (!have_uuid && clr_random_bytes(p.set_uuid, sizeof p.set_uuid) != 0) {
        clr_cli_error("create", "cannot read random bytes for the array UUID");
        return 1;
    }
    {
        struct clr_create_params check = p;

        if (clr_create_check_params(&check, ndev, &err) != 0) {
            clr_cli_error("create", "%s", err.msg);
            return 1;
        }
    }
    gettimeofday(&tv, NULL);
    p.now_sec = (uint64_t)tv.tv_sec;
    p.now_usec = (uint32_t)tv.tv_usec;

    devs = calloc(ndev, sizeof *devs);
    sizes = calloc(ndev, sizeof *sizes);
    if (!devs || !sizes) {
        clr_cli_error("create", "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < ndev; i++)
        devs[i].fd = -1;

    /* Phase 1: read-only checks of every device. */
    for (uint32_t i = 0; i < ndev; i++) {
        struct clr_probe_result pr;

        if (clr_dev_open("create", argv[optind + i], O_RDONLY, &devs[i]) != 0)
            goto out;
        for (uint32_t j = 0; j < i; j++) {
            if (clr_dev_same(&devs[i], &devs[j])) {
                clr_cli_error("create", "%s and %s are the same device; give each member once",
                              devs[j].path, devs[i].path);
                    goto out;
            }
        }
        if (clr_probe_signatures(devs[i].fd, &pr) != 0) {
            clr_cli_error("create", "%s: cannot probe for existing signatures", devs[i].path);
            goto out;
        }
        if (pr.found && !force) {
            clr_cli_error("create", "%s holds existing data (%s); refusing to overwrite it (pass --force to destroy it)",
                          devs[i].path, pr.what);
            goto out;
        }
        sizes[i] = devs[i].bytes / 512;
    }
    rc = clr_create_plan(&p, sizes, ndev, &plan, &err);
    if (rc) {
        clr_cli_error("create", "%s", err.msg);
        rc = 1;
        goto out;
    }
    rc = 1;

    /* Phase 2: reopen every device for writing before writing any. */
    for (uint32_t i = 0; i < ndev; i++) {
        struct clr_dev w;

        if (clr_dev_open("create", devs[i].path, O_RDWR | (devs[i].is_blk ? O_EXCL : 0), &w) != 0)
            goto out;
        if (!clr_dev_same(&w, &devs[i]) || w.bytes != devs[i].bytes) {
            clr_cli_error("create", "%s changed while being checked; run the command again", w.path);
            clr_dev_close(&w);
            goto out;
        }
        clr_dev_close(&devs[i]);
        devs[i] = w;
    }

    region = aligned_alloc(4096, (plan.stride_bytes + 4095) & ~(uint64_t)4095);
    sbuf = aligned_alloc(4096, CLR_MD_SB_AREA_BYTES);
    if (!region || !sbuf) {
        clr_cli_error("create", "out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < ndev; i++) {
        int wrc = write_member(&devs[i], &plan, i, force, region, sbuf);

        if (wrc) {
            clr_cli_error("create", "%s: write failed: %s (the array is incomplete; re-run create with --force)",
                          devs[i].path, strerror(-wrc));
            goto out;
        }
    }
    {
        char uuid[36], lname[48];

        clr_uuid_format_mdadm(p.set_uuid, uuid);
        clr_md_layout_name(plan.sb.level, plan.sb.layout, lname, sizeof lname);
        printf("clraid: created %s array '%s' UUID %s: %u devices, %" PRIu64 " MiB, %s%s, %u node slot%s\n",
               clr_md_level_name(plan.sb.level), plan.sb.set_name, uuid, ndev,
               plan.array_sectors / 2048, plan.sb.level == 1 ? "" : "layout ",
               plan.sb.level == 1 ? "mirror" : lname, plan.slots, plan.slots == 1 ? "" : "s");
        if (!p.assume_clean)
            printf("clraid: the first start will run an initial resync\n");
    }
    rc = 0;
out:
    for (uint32_t i = 0; devs && i < ndev; i++)
        clr_dev_close(&devs[i]);
    free(devs);
    free(sizes);
    free(region);
    free(sbuf);
    return rc;
}
