/* clraid examine: prints what is on a member device, as mdadm --examine
 * would, plus every node slot's bitmap state. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cluster/zone.h"
#include "format/md_bitmap.h"
#include "format/md_sb.h"
#include "format/plog.h"

struct slot_info {
    int rc;
    struct clr_err err;
    struct clr_bitmap_sb b;
    uint64_t dirty;
    /* its partial-parity log (clustered RAID5/6): lrc 0 with a header,
     * -ENODATA empty, else why neither copy could be used */
    int lrc;
    struct clr_err lerr;
    uint64_t lgen;
    uint32_t lentries;
};

struct exam {
    struct clr_md_sb sb;
    bool has_bitmap;
    struct clr_bitmap_sb bm;
    uint64_t bits;
    uint32_t nslots;
    struct slot_info *slots;
    bool has_plog;
    int plog_rc;
    struct clr_err plog_err;
    struct clr_plog_layout plog;
};

static const char *advice(int rc)
{
    switch (rc) {
    case -ENODATA:
        return "not a clraid/md member: check the device path";
    case -EBADMSG:
        return "corrupt metadata: replace or re-add this member from the array";
    case -EPROTO:
        return "metadata this clraid version does not support";
    default:
        return "inconsistent metadata: corrupt, truncated or foreign device";
    }
}

/* Each slot's partial-parity log header: the newest copy that decodes. */
static void read_plogs(struct clr_dev *d, struct exam *x)
{
    uint8_t *buf = malloc(CLR_PLOG_HDR_BYTES);
    struct clr_plog_hdr *h = malloc(sizeof *h);

    x->has_plog = true;
    x->plog_rc = clr_plog_layout(&x->sb, &x->bm, &x->plog, &x->plog_err);
    if (x->plog_rc)
        goto out;
    if (!buf || !h) {
        x->plog_rc = -ENOMEM;
        snprintf(x->plog_err.msg, sizeof x->plog_err.msg, "out of memory");
        goto out;
    }
    for (uint32_t s = 0; s < x->nslots && s < x->plog.slots; s++) {
        struct slot_info *si = &x->slots[s];
        uint64_t gen[CLR_PLOG_COPIES] = { 0 };
        uint32_t n[CLR_PLOG_COPIES] = { 0 };
        bool valid[CLR_PLOG_COPIES] = { false };
        bool written = false;

        si->lrc = -ENODATA;
        for (unsigned c = 0; c < CLR_PLOG_COPIES; c++) {
            struct clr_err e;
            int rc = clr_pread_full(d->fd, buf, CLR_PLOG_HDR_BYTES,
                                    x->plog.start + s * x->plog.slot_bytes + c * CLR_PLOG_HDR_BYTES);

            if (rc) {
                snprintf(si->lerr.msg, sizeof si->lerr.msg, "read failed: %s", strerror(-rc));
                written = true;
                continue;
            }
            rc = clr_plog_hdr_decode(buf, x->sb.set_uuid, s, h, &e);
            if (rc == 0) {
                valid[c] = true;
                gen[c] = h->gen;
                n[c] = h->nentries;
            } else if (rc != -ENODATA) {
                written = true;
                si->lerr = e;
            }
        }
        /* the rule the engine and the simulator follow */
        int k = clr_zone_log_pick(gen, valid, CLR_PLOG_COPIES);

        if (k >= 0) {
            si->lrc = 0;
            si->lgen = gen[k];
            si->lentries = n[k];
        } else if (written) {
            si->lrc = -EBADMSG;
        }
    }
out:
    free(buf);
    free(h);
}

static int load(const char *path, struct exam *x)
{
    struct clr_dev d;
    struct clr_err e = { "" };
    uint8_t *buf = NULL;
    int rc;

    memset(x, 0, sizeof *x);
    if (clr_dev_open("examine", path, O_RDONLY, &d) != 0)
        return -1;
    rc = -1;
    if (d.bytes < (CLR_MD_V12_SB_SECTOR * 512) + CLR_MD_SB_AREA_BYTES) {
        clr_cli_error("examine", "%s: only %" PRIu64 " bytes, too small to hold an md v1.2 superblock (%s)",
                      path, d.bytes, advice(-ENODATA));
        goto out;
    }
    buf = malloc(CLR_MD_SB_AREA_BYTES);
    if (!buf || clr_pread_full(d.fd, buf, CLR_MD_SB_AREA_BYTES, CLR_MD_V12_SB_SECTOR * 512) != 0) {
        clr_cli_error("examine", "%s: cannot read the superblock area", path);
        goto out;
    }
    rc = clr_md_sb_decode(buf, CLR_MD_SB_AREA_BYTES, d.bytes / 512, &x->sb, &e);
    if (rc) {
        clr_cli_error("examine", "%s: %s (%s)", path, e.msg, advice(rc));
        rc = -1;
        goto out;
    }
    rc = 0;
    if (!(x->sb.feature_map & CLR_MD_FEAT_BITMAP_OFFSET))
        goto out;

    uint64_t off = (x->sb.super_offset + (uint64_t)x->sb.bitmap_offset) * 512;
    if (clr_pread_full(d.fd, buf, CLR_BITMAP_SB_BYTES, off) != 0) {
        clr_cli_error("examine", "%s: cannot read the bitmap superblock at byte %" PRIu64, path, off);
        rc = -1;
        goto out;
    }
    rc = clr_bitmap_sb_decode(buf, CLR_BITMAP_SB_BYTES, x->sb.set_uuid, &x->bm, &e);
    if (rc == 0)
        rc = clr_bitmap_check_fits(&x->sb, &x->bm, &e);
    if (rc) {
        clr_cli_error("examine", "%s: bitmap: %s (%s)", path, e.msg, advice(rc));
        rc = -1;
        goto out;
    }
    x->has_bitmap = true;
    x->bits = clr_bitmap_bits(x->bm.sync_size, x->bm.chunksize);
    x->nslots = clr_bitmap_slots(&x->bm);
    x->slots = calloc(x->nslots, sizeof *x->slots);
    uint64_t stride = clr_bitmap_stride_bytes(x->bm.sync_size, x->bm.chunksize);
    uint8_t *region = malloc(stride);
    if (!x->slots || !region) {
        free(region);
        clr_cli_error("examine", "out of memory");
        rc = -1;
        goto out;
    }
    for (uint32_t s = 0; s < x->nslots; s++) {
        struct slot_info *si = &x->slots[s];

        si->rc = clr_pread_full(d.fd, region, stride, clr_bitmap_slot_offset(&x->sb, &x->bm, s));
        if (si->rc) {
            snprintf(si->err.msg, sizeof si->err.msg, "read failed: %s", strerror(-si->rc));
            continue;
        }
        si->rc = clr_bitmap_sb_decode(region, stride, x->sb.set_uuid, &si->b, &si->err);
        if (si->rc == 0 && (si->b.sync_size != x->bm.sync_size || si->b.chunksize != x->bm.chunksize ||
                            si->b.nodes != x->bm.nodes)) {
            si->rc = -EINVAL;
            snprintf(si->err.msg, sizeof si->err.msg, "geometry differs from slot 0");
        }
        if (si->rc == 0)
            si->dirty = clr_bitmap_count(region + CLR_BITMAP_SB_BYTES, x->bits);
    }
    free(region);
    if (x->sb.feature_map & CLR_MD_FEAT_CLRAID_PARITY)
        read_plogs(&d, x);
out:
    free(buf);
    clr_dev_close(&d);
    return rc;
}

static void fmt_time(uint64_t t, char *buf, size_t len)
{
    time_t s = (time_t)(t & 0xffffffffffULL);
    struct tm tm;

    gmtime_r(&s, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void role_name(const struct clr_md_sb *sb, char *buf, size_t len)
{
    uint16_t r = sb->dev_roles[sb->dev_number];

    if (r == CLR_MD_ROLE_SPARE)
        snprintf(buf, len, "spare");
    else if (r == CLR_MD_ROLE_FAULTY)
        snprintf(buf, len, "faulty");
    else
        snprintf(buf, len, "Active device %u", r);
}

static void array_state(const struct clr_md_sb *sb, char *buf, size_t len)
{
    size_t i;

    for (i = 0; i < sb->raid_disks && i + 1 < len; i++) {
        unsigned n = 0;

        for (uint32_t j = 0; j < sb->max_dev; j++)
            if (sb->dev_roles[j] == i)
                n++;
        buf[i] = n == 0 ? '.' : n == 1 ? 'A' : 'R';
    }
    buf[i] = '\0';
}

/* The strings both views print, formatted once. */
struct exam_text {
    char uuid[36], duuid[36], ct[32], ut[32], lname[48], role[32], astate[260];
};

static void exam_text(const struct clr_md_sb *sb, struct exam_text *t)
{
    clr_uuid_format_mdadm(sb->set_uuid, t->uuid);
    clr_uuid_format_mdadm(sb->device_uuid, t->duuid);
    fmt_time(sb->ctime, t->ct, sizeof t->ct);
    fmt_time(sb->utime, t->ut, sizeof t->ut);
    clr_md_layout_name(sb->level, sb->layout, t->lname, sizeof t->lname);
    role_name(sb, t->role, sizeof t->role);
    array_state(sb, t->astate, sizeof t->astate);
}

static void print_text(const char *path, const struct exam *x)
{
    const struct clr_md_sb *sb = &x->sb;
    struct exam_text t;

    exam_text(sb, &t);

    printf("%s:\n", path);
    printf("          Magic : %08x\n", sb->magic);
    printf("        Version : 1.2\n");
    printf("    Feature Map : 0x%x\n", sb->feature_map);
    if (sb->feature_map & CLR_MD_FEAT_CLRAID_PARITY)
        printf("        Cluster : clustered RAID%d of clraid (0x%x): kernel md refuses to assemble it\n",
               sb->level, CLR_MD_FEAT_CLRAID_PARITY);
    printf("     Array UUID : %s\n", t.uuid);
    printf("           Name : %s\n", sb->set_name);
    if (x->has_bitmap && x->bm.nodes)
        printf("   Cluster Name : %s\n", x->bm.cluster_name);
    printf("  Creation Time : %s\n", t.ct);
    printf("     Raid Level : %s\n", clr_md_level_name(sb->level));
    printf("   Raid Devices : %u\n", sb->raid_disks);
    printf(" Avail Dev Size : %" PRIu64 " sectors\n", sb->data_size);
    printf("     Array Size : %" PRIu64 " KiB\n",
           clr_md_array_sectors(sb->level, sb->layout, sb->raid_disks, sb->size, sb->chunksize) / 2);
    printf("  Used Dev Size : %" PRIu64 " sectors\n", sb->size);
    printf("    Data Offset : %" PRIu64 " sectors\n", sb->data_offset);
    printf("   Super Offset : %" PRIu64 " sectors\n", sb->super_offset);
    printf("          State : %s\n", sb->resync_offset == CLR_MD_MAX_SECTOR ? "clean" : "active");
    printf("    Device UUID : %s\n", t.duuid);
    if (x->has_bitmap)
        printf("Internal Bitmap : %d sectors from superblock\n", sb->bitmap_offset);
    printf("    Update Time : %s\n", t.ut);
    printf("       Checksum : %x - correct\n", sb->sb_csum);
    printf("         Events : %" PRIu64 "\n", sb->events);
    if (sb->level != 1) {
        printf("         Layout : %s\n", t.lname);
        printf("     Chunk Size : %uK\n", sb->chunksize / 2);
    }
    printf("    Device Role : %s\n", t.role);
    printf("    Array State : %s\n", t.astate);
    if (!x->has_bitmap)
        return;
    printf("         Bitmap : v%u, chunk %u KiB, %" PRIu64 " bits, %u node slot%s, daemon sleep %us\n",
           x->bm.version, x->bm.chunksize / 1024, x->bits, x->nslots, x->nslots == 1 ? "" : "s",
           x->bm.daemon_sleep);
    for (uint32_t s = 0; s < x->nslots; s++) {
        const struct slot_info *si = &x->slots[s];

        if (si->rc)
            printf("    Node Slot %u : unreadable: %s\n", s, si->err.msg);
        else
            printf("    Node Slot %u : events %" PRIu64 ", events cleared %" PRIu64 ", %" PRIu64
                   " of %" PRIu64 " bits dirty%s\n",
                   s, si->b.events, si->b.events_cleared, si->dirty, x->bits,
                   (si->b.state & CLR_BITMAP_STATE_STALE) ? ", stale" : "");
    }
    if (!x->has_plog)
        return;
    if (x->plog_rc) {
        printf("    Parity Logs : %s\n", x->plog_err.msg);
        return;
    }
    printf("    Parity Logs : %u slot%s x %" PRIu64 " KiB from byte %" PRIu64
           " (the engine does not write them yet)\n",
           x->plog.slots, x->plog.slots == 1 ? "" : "s", x->plog.slot_bytes / 1024, x->plog.start);
    for (uint32_t s = 0; s < x->nslots && s < x->plog.slots; s++) {
        const struct slot_info *si = &x->slots[s];

        if (si->lrc == 0)
            printf("     Log Slot %u : generation %" PRIu64 ", %u entr%s\n", s, si->lgen, si->lentries,
                   si->lentries == 1 ? "y" : "ies");
        else if (si->lrc == -ENODATA)
            printf("     Log Slot %u : empty\n", s);
        else
            printf("     Log Slot %u : no valid header: %s\n", s, si->lerr.msg);
    }
}

static json_object *to_json(const char *path, const struct exam *x)
{
    const struct clr_md_sb *sb = &x->sb;
    json_object *o = json_object_new_object(), *s = json_object_new_object();
    struct exam_text t;

    exam_text(sb, &t);

    json_object_object_add(o, "device", json_object_new_string(path));
    json_object_object_add(s, "version", json_object_new_string("1.2"));
    json_object_object_add(s, "feature_map", json_object_new_int64(sb->feature_map));
    json_object_object_add(s, "clraid_parity_cluster",
                           json_object_new_boolean((sb->feature_map & CLR_MD_FEAT_CLRAID_PARITY) != 0));
    json_object_object_add(s, "array_uuid", json_object_new_string(t.uuid));
    json_object_object_add(s, "name", json_object_new_string(sb->set_name));
    json_object_object_add(s, "creation_time", json_object_new_string(t.ct));
    json_object_object_add(s, "level", json_object_new_string(clr_md_level_name(sb->level)));
    json_object_object_add(s, "raid_devices", json_object_new_int64(sb->raid_disks));
    json_object_object_add(s, "layout", json_object_new_int64(sb->layout));
    json_object_object_add(s, "layout_name", json_object_new_string(t.lname));
    json_object_object_add(s, "chunk_kib", json_object_new_int64(sb->chunksize / 2));
    json_object_object_add(s, "avail_dev_sectors", json_object_new_int64((int64_t)sb->data_size));
    json_object_object_add(s, "used_dev_sectors", json_object_new_int64((int64_t)sb->size));
    json_object_object_add(s, "array_sectors",
                           json_object_new_int64((int64_t)clr_md_array_sectors(
                               sb->level, sb->layout, sb->raid_disks, sb->size, sb->chunksize)));
    json_object_object_add(s, "data_offset", json_object_new_int64((int64_t)sb->data_offset));
    json_object_object_add(s, "super_offset", json_object_new_int64((int64_t)sb->super_offset));
    json_object_object_add(
        s, "state", json_object_new_string(sb->resync_offset == CLR_MD_MAX_SECTOR ? "clean" : "active"));
    json_object_object_add(s, "device_uuid", json_object_new_string(t.duuid));
    json_object_object_add(s, "device_number", json_object_new_int64(sb->dev_number));
    json_object_object_add(s, "device_role", json_object_new_string(t.role));
    json_object_object_add(s, "array_state", json_object_new_string(t.astate));
    json_object_object_add(s, "update_time", json_object_new_string(t.ut));
    json_object_object_add(s, "events", json_object_new_int64((int64_t)sb->events));
    json_object_object_add(s, "checksum", json_object_new_int64(sb->sb_csum));
    json_object_object_add(o, "superblock", s);
    if (x->has_bitmap) {
        json_object *b = json_object_new_object(), *arr = json_object_new_array();

        json_object_object_add(b, "version", json_object_new_int64(x->bm.version));
        json_object_object_add(b, "chunk_bytes", json_object_new_int64(x->bm.chunksize));
        json_object_object_add(b, "bits", json_object_new_int64((int64_t)x->bits));
        json_object_object_add(b, "sync_sectors", json_object_new_int64((int64_t)x->bm.sync_size));
        json_object_object_add(b, "nodes", json_object_new_int64(x->bm.nodes));
        json_object_object_add(b, "cluster_name", json_object_new_string(x->bm.cluster_name));
        json_object_object_add(b, "daemon_sleep", json_object_new_int64(x->bm.daemon_sleep));
        for (uint32_t i = 0; i < x->nslots; i++) {
            json_object *so = json_object_new_object();
            const struct slot_info *si = &x->slots[i];

            json_object_object_add(so, "slot", json_object_new_int64(i));
            if (si->rc) {
                json_object_object_add(so, "error", json_object_new_string(si->err.msg));
            } else {
                json_object_object_add(so, "events", json_object_new_int64((int64_t)si->b.events));
                json_object_object_add(so, "events_cleared",
                                       json_object_new_int64((int64_t)si->b.events_cleared));
                json_object_object_add(so, "stale",
                                       json_object_new_boolean(si->b.state & CLR_BITMAP_STATE_STALE));
                json_object_object_add(so, "dirty_bits", json_object_new_int64((int64_t)si->dirty));
            }
            json_object_array_add(arr, so);
        }
        json_object_object_add(b, "slots", arr);
        json_object_object_add(o, "bitmap", b);
    }
    if (x->has_plog) {
        json_object *l = json_object_new_object();

        if (x->plog_rc) {
            json_object_object_add(l, "error", json_object_new_string(x->plog_err.msg));
        } else {
            json_object *arr = json_object_new_array();

            json_object_object_add(l, "start", json_object_new_int64((int64_t)x->plog.start));
            json_object_object_add(l, "slot_bytes", json_object_new_int64((int64_t)x->plog.slot_bytes));
            for (uint32_t i = 0; i < x->nslots && i < x->plog.slots; i++) {
                const struct slot_info *si = &x->slots[i];
                json_object *e = json_object_new_object();

                json_object_object_add(e, "slot", json_object_new_int64(i));
                json_object_object_add(e, "state",
                                       json_object_new_string(si->lrc == 0          ? "header"
                                                              : si->lrc == -ENODATA ? "empty"
                                                                                    : "invalid"));
                if (si->lrc == 0) {
                    json_object_object_add(e, "generation", json_object_new_int64((int64_t)si->lgen));
                    json_object_object_add(e, "entries", json_object_new_int64(si->lentries));
                } else if (si->lrc != -ENODATA) {
                    json_object_object_add(e, "error", json_object_new_string(si->lerr.msg));
                }
                json_object_array_add(arr, e);
            }
            json_object_object_add(l, "slots", arr);
        }
        json_object_object_add(o, "parity_log", l);
    }
    return o;
}

int clr_cmd_examine(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool json = false;
    json_object *arr = NULL;
    const char *first_path = NULL;
    uint8_t first_uuid[16];
    int c, rc = 0;

    optind = 1;
    while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'h':
            puts("usage: clraid examine [--json] DEV...");
            return 0;
        default:
            fputs("usage: clraid examine [--json] DEV...\n", stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        clr_cli_error("examine", "no devices given (usage: clraid examine [--json] DEV...)");
        return 2;
    }
    if (json)
        arr = json_object_new_array();
    for (int i = optind; i < argc; i++) {
        struct exam x;

        if (load(argv[i], &x) != 0) {
            rc = 1;
            free(x.slots);
            continue;
        }
        /* Devices named together are meant to be one array's members. */
        if (!first_path) {
            first_path = argv[i];
            memcpy(first_uuid, x.sb.set_uuid, 16);
        } else if (memcmp(first_uuid, x.sb.set_uuid, 16) != 0) {
            char a[36], b[36];

            clr_uuid_format_mdadm(first_uuid, a);
            clr_uuid_format_mdadm(x.sb.set_uuid, b);
            clr_cli_error("examine",
                          "%s belongs to array %s, but %s to array %s: these are not members of one array",
                          argv[i], b, first_path, a);
            rc = 1;
        }
        if (json)
            json_object_array_add(arr, to_json(argv[i], &x));
        else
            print_text(argv[i], &x);
        free(x.slots);
    }
    if (json) {
        puts(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(arr);
    }
    return rc;
}
