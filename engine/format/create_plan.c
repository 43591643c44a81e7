/* Geometry planning for `clraid create` (see create_plan.h). The data
 * offset follows mdadm's idea (metadata, then headroom of up to 128 MiB
 * shrunk to ~0.1% of the device, rounded to 1 MiB) with room reserved for
 * every node's bitmap. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "format/create_plan.h"
#include "format/plog.h"

static bool is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static int check_level(struct clr_create_params *q, struct clr_err *e)
{
    uint32_t n = q->raid_disks;

    switch (q->level) {
    case 1:
        if (q->layout_set && q->layout != 0)
            return clr_err_set(e, -EINVAL, "--layout does not apply to raid1");
        q->layout = 0;
        if (n < 2)
            return clr_err_set(e, -EINVAL, "raid1 needs --raid-devices=2 or more");
        return 0;
    case 10:
        if (!q->layout_set)
            q->layout = 2 | (1U << 8); /* n2 */
        if (n < 2)
            return clr_err_set(e, -EINVAL, "raid10 needs --raid-devices=2 or more");
        if (CLR_R10_NEAR(q->layout) * CLR_R10_FAR(q->layout) > n)
            return clr_err_set(e, -EINVAL,
                               "raid10 layout with %u copies needs at least %u devices, --raid-devices=%u",
                               CLR_R10_NEAR(q->layout) * CLR_R10_FAR(q->layout),
                               CLR_R10_NEAR(q->layout) * CLR_R10_FAR(q->layout), n);
        if (CLR_R10_NEAR(q->layout) > 1 && CLR_R10_FAR(q->layout) > 1)
            return clr_err_set(
                e, -EINVAL, "raid10 layouts mixing near and far copies are not supported (use nN, fN or oN)");
        return 0;
    case 5:
        if (!q->layout_set)
            q->layout = CLR_R5_LEFT_SYMMETRIC;
        if (n < 3)
            return clr_err_set(e, -EINVAL, "raid5 needs --raid-devices=3 or more");
        return 0;
    case 6:
        if (!q->layout_set)
            q->layout = CLR_R5_LEFT_SYMMETRIC;
        if (q->layout != CLR_R5_LEFT_SYMMETRIC)
            return clr_err_set(e, -EINVAL, "raid6 supports only --layout=left-symmetric (md's default)");
        if (n < 4)
            return clr_err_set(e, -EINVAL, "raid6 needs --raid-devices=4 or more");
        return 0;
    default:
        return clr_err_set(e, -EINVAL, "--level=%d is not supported (use 1, 10, 5 or 6)", q->level);
    }
}

int clr_create_check_params(struct clr_create_params *q, uint32_t ndev, struct clr_err *e)
{
    int rc;

    if (q->raid_disks == 0)
        return clr_err_set(e, -EINVAL, "--raid-devices is required");
    rc = check_level(q, e);
    if (rc)
        return rc;
    if (q->raid_disks + q->spare_devices > CLR_CREATE_MAX_DEVICES)
        return clr_err_set(e, -EINVAL, "at most %d devices are supported", CLR_CREATE_MAX_DEVICES);
    if (ndev != q->raid_disks + q->spare_devices)
        return clr_err_set(e, -EINVAL,
                           "%u devices given, but --raid-devices=%u and --spare-devices=%u need %u", ndev,
                           q->raid_disks, q->spare_devices, q->raid_disks + q->spare_devices);
    if (!q->chunk_kib)
        q->chunk_kib = CLR_CREATE_DEFAULT_CHUNK_KIB;
    if (!is_pow2(q->chunk_kib) || q->chunk_kib < 4 || q->chunk_kib > 65536)
        return clr_err_set(e, -EINVAL, "--chunk=%u: use a power of two from 4 to 65536 (KiB)", q->chunk_kib);
    if (!q->bitmap_chunk_kib)
        q->bitmap_chunk_kib = CLR_CREATE_DEFAULT_BITMAP_KIB;
    if (!is_pow2(q->bitmap_chunk_kib) || q->bitmap_chunk_kib < 4 || q->bitmap_chunk_kib > 1048576)
        return clr_err_set(e, -EINVAL, "--bitmap-chunk=%u: use a power of two from 4 to 1048576 (KiB)",
                           q->bitmap_chunk_kib);
    if (q->nodes < 1 || q->nodes > CLR_BITMAP_MAX_NODES)
        return clr_err_set(e, -EINVAL, "--nodes=%u: use 1 to %d", q->nodes, CLR_BITMAP_MAX_NODES);
    if (q->nodes > 1 && q->cluster_name[0] == '\0')
        return clr_err_set(e, -EINVAL,
                           "--home-cluster=NAME is required with --nodes=%u (use corosync's cluster_name)",
                           q->nodes);
    if (strnlen(q->cluster_name, sizeof q->cluster_name) > 63)
        return clr_err_set(e, -EINVAL, "--home-cluster name is longer than 63 characters");
    if (strnlen(q->name, sizeof q->name) > 32)
        return clr_err_set(e, -EINVAL, "--name is longer than 32 characters");

    return 0;
}

int clr_create_plan(const struct clr_create_params *p, const uint64_t *dev_sectors, uint32_t ndev,
                    struct clr_create_plan *plan, struct clr_err *e)
{
    struct clr_create_params q = *p;
    uint64_t min_sectors = UINT64_MAX, headroom, upper_sync, upper_stride;
    uint64_t chunk_sectors, avail, meta_end;
    int rc;

    memset(plan, 0, sizeof *plan);
    rc = clr_create_check_params(&q, ndev, e);
    if (rc)
        return rc;

    for (uint32_t i = 0; i < ndev; i++)
        if (dev_sectors[i] < min_sectors)
            min_sectors = dev_sectors[i];

    /* RAID1 sizes are rounded to 64 KiB like mdadm; striped levels to a chunk. */
    chunk_sectors = q.level == 1 ? 128 : (uint64_t)q.chunk_kib * 2;
    headroom = 262144;
    while (headroom * 1024 > min_sectors && headroom > 8)
        headroom /= 2;

    /* Reserve bitmap room from an upper bound of the synced size: the real
     * stride (computed from the final size) can only be smaller. */
    upper_sync = min_sectors;
    if (q.level == 10)
        upper_sync = clr_md_array_sectors(
            10, q.layout, q.raid_disks, min_sectors / chunk_sectors * chunk_sectors, (uint32_t)chunk_sectors);
    upper_stride = clr_bitmap_stride_bytes(upper_sync, q.bitmap_chunk_kib * 1024);
    plan->slots = q.nodes;
    meta_end = CLR_MD_V12_SB_SECTOR + 8 + q.nodes * upper_stride / 512 + 8;
    /* a clustered RAID5/6: each slot's partial-parity log after the
     * bitmaps (format/plog.h) */
    if (q.nodes > 1 && (q.level == 5 || q.level == 6))
        meta_end = clr_plog_end((CLR_MD_V12_SB_SECTOR + 8) * 512 + q.nodes * upper_stride, q.nodes) / 512 + 8;
    plan->data_offset = round_up(meta_end + headroom, 2048);

    avail = min_sectors > plan->data_offset ? min_sectors - plan->data_offset : 0;
    plan->size = avail / chunk_sectors * chunk_sectors;
    if (plan->size < CLR_CREATE_MIN_DATA_SECTORS || plan->size < chunk_sectors) {
        uint64_t need =
            plan->data_offset +
            (chunk_sectors > CLR_CREATE_MIN_DATA_SECTORS ? chunk_sectors : CLR_CREATE_MIN_DATA_SECTORS);
        return clr_err_set(e, -ENOSPC,
                           "smallest device has %" PRIu64 " bytes; this geometry needs at least %" PRIu64
                           " bytes per device",
                           min_sectors * 512, need * 512);
    }
    plan->ndev = ndev;
    plan->array_sectors = clr_md_array_sectors(q.level, q.layout, q.raid_disks, plan->size,
                                               q.level == 1 ? 0 : (uint32_t)chunk_sectors);
    plan->sync_sectors = q.level == 10 ? plan->array_sectors : plan->size;
    if (plan->array_sectors == 0)
        return clr_err_set(e, -ENOSPC, "the devices are too small for one full stripe of this geometry");
    plan->bitmap_bits = clr_bitmap_bits(plan->sync_sectors, q.bitmap_chunk_kib * 1024);
    plan->stride_bytes = clr_bitmap_stride_bytes(plan->sync_sectors, q.bitmap_chunk_kib * 1024);

    struct clr_bitmap_sb *b = &plan->bitmap;
    b->magic = CLR_BITMAP_MAGIC;
    b->version = q.nodes > 1 ? CLR_BITMAP_VERSION_CLUSTERED : CLR_BITMAP_VERSION_LE;
    memcpy(b->uuid, q.set_uuid, 16);
    b->sync_size = plan->sync_sectors;
    b->chunksize = q.bitmap_chunk_kib * 1024;
    b->daemon_sleep = CLR_BITMAP_DEFAULT_SLEEP;
    b->nodes = q.nodes > 1 ? q.nodes : 0;
    if (q.nodes > 1)
        memcpy(b->cluster_name, q.cluster_name, strnlen(q.cluster_name, 63));

    struct clr_md_sb *sb = &plan->sb;
    sb->magic = CLR_MD_MAGIC;
    sb->major_version = 1;
    sb->feature_map = CLR_MD_FEAT_BITMAP_OFFSET | (q.nodes > 1 ? CLR_MD_FEAT_CLUSTERED : 0);
    /* a parity array for several nodes: no stock kernel may assemble it */
    if (q.nodes > 1 && (q.level == 5 || q.level == 6))
        sb->feature_map |= CLR_MD_FEAT_CLRAID_PARITY;
    memcpy(sb->set_uuid, q.set_uuid, 16);
    memcpy(sb->set_name, q.name, strnlen(q.name, 32));
    sb->ctime = (q.now_sec & 0xffffffffffULL) | ((uint64_t)q.now_usec << 40);
    sb->utime = sb->ctime;
    sb->level = q.level;
    sb->layout = q.layout;
    sb->size = plan->size;
    sb->chunksize = q.level == 1 ? 0 : (uint32_t)chunk_sectors;
    sb->raid_disks = q.raid_disks;
    sb->bitmap_offset = 8;
    sb->data_offset = plan->data_offset;
    sb->super_offset = CLR_MD_V12_SB_SECTOR;
    sb->events = 0;
    sb->resync_offset = q.assume_clean ? CLR_MD_MAX_SECTOR : 0;
    sb->max_dev = (uint32_t)((round_up(256 + 2 * (uint64_t)ndev, 512) - 256) / 2);
    for (uint32_t i = 0; i < sb->max_dev; i++)
        sb->dev_roles[i] = i < q.raid_disks ? (uint16_t)i : CLR_MD_ROLE_SPARE;

    /* Self-check: what we would write must pass our own decoder's rules. */
    rc = clr_md_sb_check_geometry(sb, e);
    if (rc)
        return rc;
    rc = clr_bitmap_check_fits(sb, b, e);
    if (rc)
        return rc;
    return 0;
}

void clr_create_member_sb(const struct clr_create_plan *plan, uint32_t index, uint64_t dev_sectors,
                          const uint8_t dev_uuid[16], struct clr_md_sb *out)
{
    *out = plan->sb;
    out->dev_number = index;
    out->data_size = dev_sectors - plan->data_offset;
    memcpy(out->device_uuid, dev_uuid, 16);
}

int clr_create_bitmap_region(const struct clr_create_plan *plan, uint32_t slot, uint8_t *buf, uint64_t len)
{
    bool dirty = slot == 0 && plan->sb.resync_offset != CLR_MD_MAX_SECTOR;

    if (len < plan->stride_bytes || slot >= plan->slots)
        return -EINVAL;
    memset(buf, dirty ? 0xff : 0, plan->stride_bytes);
    return clr_bitmap_sb_encode(&plan->bitmap, buf, CLR_BITMAP_SB_BYTES);
}
