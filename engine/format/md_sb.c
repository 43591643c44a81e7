/* md v1.2 superblock encode/decode. Field offsets: doc/architecture.md §2.2. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "format/endian.h"
#include "format/md_sb.h"

enum {
    OFF_MAGIC = 0,
    OFF_MAJOR = 4,
    OFF_FEATURE = 8,
    OFF_PAD0 = 12,
    OFF_SET_UUID = 16,
    OFF_SET_NAME = 32,
    OFF_CTIME = 64,
    OFF_LEVEL = 72,
    OFF_LAYOUT = 76,
    OFF_SIZE = 80,
    OFF_CHUNK = 88,
    OFF_RAID_DISKS = 92,
    OFF_BITMAP_OFFSET = 96,
    OFF_NEW_LEVEL = 100,
    OFF_RESHAPE_POS = 104,
    OFF_DELTA_DISKS = 112,
    OFF_NEW_LAYOUT = 116,
    OFF_NEW_CHUNK = 120,
    OFF_NEW_OFFSET = 124,
    OFF_DATA_OFFSET = 128,
    OFF_DATA_SIZE = 136,
    OFF_SUPER_OFFSET = 144,
    OFF_RECOVERY_OFFSET = 152,
    OFF_DEV_NUMBER = 160,
    OFF_CNT_CORRECTED = 164,
    OFF_DEVICE_UUID = 168,
    OFF_DEVFLAGS = 184,
    OFF_BBLOG_SHIFT = 185,
    OFF_BBLOG_SIZE = 186,
    OFF_BBLOG_OFFSET = 188,
    OFF_UTIME = 192,
    OFF_EVENTS = 200,
    OFF_RESYNC_OFFSET = 208,
    OFF_SB_CSUM = 216,
    OFF_MAX_DEV = 220,
    OFF_PAD3 = 224,
    OFF_DEV_ROLES = 256,
};

size_t clr_md_sb_bytes(uint32_t max_dev)
{
    return CLR_MD_SB_FIXED_BYTES + 2 * (size_t)max_dev;
}

uint32_t clr_md_sb_csum(const uint8_t *buf, uint32_t max_dev)
{
    size_t len = clr_md_sb_bytes(max_dev);
    uint64_t acc = 0;
    size_t i;

    for (i = 0; i + 4 <= len; i += 4) {
        uint32_t w = (i == OFF_SB_CSUM) ? 0 : clr_get_le32(buf + i);
        acc += w;
    }
    if (len - i == 2)
        acc += clr_get_le16(buf + i);
    /* The fold is 32-bit arithmetic: a carry out of bit 31 is lost. */
    return (uint32_t)((uint32_t)acc + (uint32_t)(acc >> 32));
}

int clr_md_sb_encode(const struct clr_md_sb *sb, uint8_t *buf, size_t len)
{
    size_t need;

    if (sb->max_dev > CLR_MD_MAX_DEV_LIMIT)
        return -EINVAL;
    need = clr_md_sb_bytes(sb->max_dev);
    if (len < need)
        return -EINVAL;
    memset(buf, 0, len);
    clr_put_le32(buf + OFF_MAGIC, sb->magic);
    clr_put_le32(buf + OFF_MAJOR, sb->major_version);
    clr_put_le32(buf + OFF_FEATURE, sb->feature_map);
    clr_put_le32(buf + OFF_PAD0, sb->pad0);
    memcpy(buf + OFF_SET_UUID, sb->set_uuid, 16);
    memcpy(buf + OFF_SET_NAME, sb->set_name, strnlen(sb->set_name, 32));
    clr_put_le64(buf + OFF_CTIME, sb->ctime);
    clr_put_le32(buf + OFF_LEVEL, (uint32_t)sb->level);
    clr_put_le32(buf + OFF_LAYOUT, sb->layout);
    clr_put_le64(buf + OFF_SIZE, sb->size);
    clr_put_le32(buf + OFF_CHUNK, sb->chunksize);
    clr_put_le32(buf + OFF_RAID_DISKS, sb->raid_disks);
    clr_put_le32(buf + OFF_BITMAP_OFFSET, (uint32_t)sb->bitmap_offset);
    clr_put_le32(buf + OFF_NEW_LEVEL, sb->new_level);
    clr_put_le64(buf + OFF_RESHAPE_POS, sb->reshape_position);
    clr_put_le32(buf + OFF_DELTA_DISKS, (uint32_t)sb->delta_disks);
    clr_put_le32(buf + OFF_NEW_LAYOUT, sb->new_layout);
    clr_put_le32(buf + OFF_NEW_CHUNK, sb->new_chunk);
    clr_put_le32(buf + OFF_NEW_OFFSET, (uint32_t)sb->new_offset);
    clr_put_le64(buf + OFF_DATA_OFFSET, sb->data_offset);
    clr_put_le64(buf + OFF_DATA_SIZE, sb->data_size);
    clr_put_le64(buf + OFF_SUPER_OFFSET, sb->super_offset);
    clr_put_le64(buf + OFF_RECOVERY_OFFSET, sb->recovery_offset);
    clr_put_le32(buf + OFF_DEV_NUMBER, sb->dev_number);
    clr_put_le32(buf + OFF_CNT_CORRECTED, sb->cnt_corrected_read);
    memcpy(buf + OFF_DEVICE_UUID, sb->device_uuid, 16);
    buf[OFF_DEVFLAGS] = sb->devflags;
    buf[OFF_BBLOG_SHIFT] = sb->bblog_shift;
    clr_put_le16(buf + OFF_BBLOG_SIZE, sb->bblog_size);
    clr_put_le32(buf + OFF_BBLOG_OFFSET, (uint32_t)sb->bblog_offset);
    clr_put_le64(buf + OFF_UTIME, sb->utime);
    clr_put_le64(buf + OFF_EVENTS, sb->events);
    clr_put_le64(buf + OFF_RESYNC_OFFSET, sb->resync_offset);
    clr_put_le32(buf + OFF_MAX_DEV, sb->max_dev);
    memcpy(buf + OFF_PAD3, sb->pad3, 32);
    for (uint32_t i = 0; i < sb->max_dev; i++)
        clr_put_le16(buf + OFF_DEV_ROLES + 2 * i, sb->dev_roles[i]);
    clr_put_le32(buf + OFF_SB_CSUM, clr_md_sb_csum(buf, sb->max_dev));
    return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static bool is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

const char *clr_md_level_name(int32_t level)
{
    switch (level) {
    case 1:
        return "raid1";
    case 10:
        return "raid10";
    case 5:
        return "raid5";
    case 6:
        return "raid6";
    case 4:
        return "raid4";
    case 0:
        return "raid0";
    case -1:
        return "linear";
    default:
        return NULL;
    }
}

int clr_md_level_parse(const char *s, int32_t *level)
{
    static const int32_t ok[] = { 1, 10, 5, 6 };
    char *end;
    long v;

    if (!s)
        return -EINVAL;
    if (strncasecmp(s, "raid", 4) == 0)
        s += 4;
    if (!*s)
        return -EINVAL;
    v = strtol(s, &end, 10);
    if (*end)
        return -EINVAL;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        if (v == ok[i]) {
            *level = (int32_t)v;
            return 0;
        }
    }
    return -EINVAL;
}

static const struct {
    const char *name, *alias;
    uint32_t value;
} r5_layouts[] = {
    { "left-asymmetric", "la", CLR_R5_LEFT_ASYMMETRIC },
    { "right-asymmetric", "ra", CLR_R5_RIGHT_ASYMMETRIC },
    { "left-symmetric", "ls", CLR_R5_LEFT_SYMMETRIC },
    { "right-symmetric", "rs", CLR_R5_RIGHT_SYMMETRIC },
    { "parity-first", NULL, CLR_R5_PARITY_FIRST },
    { "parity-last", NULL, CLR_R5_PARITY_LAST },
};

int clr_md_layout_parse(int32_t level, const char *s, uint32_t *layout)
{
    if (level == 5 || level == 6) {
        for (size_t i = 0; i < sizeof r5_layouts / sizeof r5_layouts[0]; i++) {
            if (strcmp(s, r5_layouts[i].name) == 0 ||
                (r5_layouts[i].alias && strcmp(s, r5_layouts[i].alias) == 0)) {
                *layout = r5_layouts[i].value;
                return 0;
            }
        }
        return -EINVAL;
    }
    if (level == 10) {
        char kind = s[0];
        char *end;
        long copies;

        if (kind != 'n' && kind != 'f' && kind != 'o')
            return -EINVAL;
        if (!isdigit((unsigned char)s[1]))
            return -EINVAL;
        copies = strtol(s + 1, &end, 10);
        if (*end || copies < 1 || copies > 64)
            return -EINVAL;
        if (kind == 'n')
            *layout = (uint32_t)copies | (1U << 8);
        else if (kind == 'f')
            *layout = ((uint32_t)copies << 8) | 1U;
        else
            *layout = ((uint32_t)copies << 8) | 1U | CLR_R10_OFFSET;
        return 0;
    }
    if (level == 1)
        return strcmp(s, "0") == 0 ? (*layout = 0, 0) : -EINVAL;
    return -EINVAL;
}

void clr_md_layout_name(int32_t level, uint32_t layout, char *buf, size_t len)
{
    if (level == 5 || level == 6) {
        for (size_t i = 0; i < sizeof r5_layouts / sizeof r5_layouts[0]; i++) {
            if (r5_layouts[i].value == layout) {
                snprintf(buf, len, "%s", r5_layouts[i].name);
                return;
            }
        }
        snprintf(buf, len, "unknown-%u", layout);
    } else if (level == 10) {
        uint32_t n = CLR_R10_NEAR(layout), f = CLR_R10_FAR(layout);
        if (n > 1 && f > 1)
            snprintf(buf, len, "near=%u, %s=%u", n, (layout & CLR_R10_OFFSET) ? "offset" : "far", f);
        else if (f > 1)
            snprintf(buf, len, "%s=%u", (layout & CLR_R10_OFFSET) ? "offset" : "far", f);
        else
            snprintf(buf, len, "near=%u", n);
    } else {
        snprintf(buf, len, "%u", layout);
    }
}

uint64_t clr_md_array_sectors(int32_t level, uint32_t layout, uint32_t raid_disks, uint64_t size,
                              uint32_t chunk_sectors)
{
    switch (level) {
    case 1:
        return size;
    case 5:
        return raid_disks >= 2 ? size * (raid_disks - 1) : 0;
    case 6:
        return raid_disks >= 3 ? size * (raid_disks - 2) : 0;
    case 10: {
        uint64_t near = CLR_R10_NEAR(layout), far = CLR_R10_FAR(layout);
        uint64_t chunks;

        if (!chunk_sectors || !near || !far)
            return 0;
        /* md's raid10_size(): in whole chunks, divide by far copies, scale
         * by the disk count, divide by near copies. */
        chunks = size / chunk_sectors;
        chunks /= far;
        chunks *= raid_disks;
        chunks /= near;
        return chunks * chunk_sectors;
    }
    default:
        return 0;
    }
}

uint64_t clr_md_sync_sectors(const struct clr_md_sb *sb)
{
    if (sb->level == 10)
        return clr_md_array_sectors(sb->level, sb->layout, sb->raid_disks, sb->size, sb->chunksize);
    return sb->size;
}

int clr_md_sb_check_geometry(const struct clr_md_sb *sb, struct clr_err *e)
{
    uint32_t n = sb->raid_disks;

    switch (sb->level) {
    case 1:
        if (n < 1)
            return clr_err_set(e, -ERANGE, "raid1 with %u raid devices", n);
        if (sb->layout != 0)
            return clr_err_set(e, -EINVAL, "raid1 layout %u, expected 0", sb->layout);
        return 0;
    case 10: {
        uint32_t near = CLR_R10_NEAR(sb->layout), far = CLR_R10_FAR(sb->layout);

        if (sb->layout >> 19)
            return clr_err_set(e, -EINVAL, "raid10 layout 0x%x has unknown bits", sb->layout);
        if (!near || !far || near * far < 2)
            return clr_err_set(e, -EINVAL, "raid10 layout 0x%x gives fewer than 2 copies", sb->layout);
        if (near * far > n)
            return clr_err_set(e, -ERANGE, "raid10 layout 0x%x needs %u copies but the array has %u devices",
                               sb->layout, near * far, n);
        break;
    }
    case 5:
        if (sb->layout > CLR_R5_PARITY_LAST)
            return clr_err_set(e, -EINVAL, "raid5 layout %u is not an md raid5 layout", sb->layout);
        if (n < 2)
            return clr_err_set(e, -ERANGE, "raid5 with %u raid devices (needs 2 or more)", n);
        break;
    case 6:
        if (sb->layout != CLR_R5_LEFT_SYMMETRIC)
            return clr_err_set(e, -EPROTO, "raid6 layout %u is not supported (clraid runs left-symmetric, 2)",
                               sb->layout);
        if (n < 4)
            return clr_err_set(e, -ERANGE, "raid6 with %u raid devices (needs 4 or more)", n);
        break;
    default:
        return clr_err_set(e, -EPROTO, "raid level %d is not supported by clraid (1, 10, 5, 6 are)",
                           sb->level);
    }
    if (!is_pow2(sb->chunksize) || sb->chunksize < 8)
        return clr_err_set(e, -EINVAL, "chunk size %u sectors is not a power of two of at least 4 KiB",
                           sb->chunksize);
    if (sb->size % sb->chunksize)
        return clr_err_set(e, -EINVAL, "used size %" PRIu64 " sectors is not a multiple of the chunk (%u)",
                           sb->size, sb->chunksize);
    return 0;
}

/* The fixed fields: magic, version, max_dev and the checksum first. */
static int decode_header(const uint8_t *buf, size_t len, struct clr_md_sb *sb, struct clr_err *e)
{
    uint32_t csum;

    memset(sb, 0, sizeof *sb);
    if (len < CLR_MD_SB_FIXED_BYTES)
        return clr_err_set(e, -EINVAL, "superblock buffer too short (%zu bytes)", len);
    sb->magic = clr_get_le32(buf + OFF_MAGIC);
    if (sb->magic != CLR_MD_MAGIC) {
        if (all_zero(buf, CLR_MD_SB_FIXED_BYTES))
            return clr_err_set(e, -ENODATA, "no md superblock: the bytes at offset 4096 are zero");
        return clr_err_set(e, -ENODATA, "no md superblock: magic 0x%08x, expected 0x%08x", sb->magic,
                           CLR_MD_MAGIC);
    }
    sb->major_version = clr_get_le32(buf + OFF_MAJOR);
    if (sb->major_version != 1)
        return clr_err_set(e, -EPROTO, "md superblock major version %u, only version 1 is supported",
                           sb->major_version);
    sb->max_dev = clr_get_le32(buf + OFF_MAX_DEV);
    if (sb->max_dev > CLR_MD_MAX_DEV_LIMIT)
        return clr_err_set(e, -ERANGE, "max_dev %u exceeds md's limit of %u", sb->max_dev,
                           CLR_MD_MAX_DEV_LIMIT);
    if (len < clr_md_sb_bytes(sb->max_dev))
        return clr_err_set(e, -EINVAL, "superblock buffer too short for max_dev %u", sb->max_dev);
    sb->sb_csum = clr_get_le32(buf + OFF_SB_CSUM);
    csum = clr_md_sb_csum(buf, sb->max_dev);
    if (csum != sb->sb_csum)
        return clr_err_set(e, -EBADMSG, "superblock checksum 0x%08x, expected 0x%08x", sb->sb_csum, csum);
    return 0;
}

/* Every field, as stored (little-endian). */
static void decode_fields(const uint8_t *buf, struct clr_md_sb *sb)
{
    sb->feature_map = clr_get_le32(buf + OFF_FEATURE);
    sb->pad0 = clr_get_le32(buf + OFF_PAD0);
    memcpy(sb->set_uuid, buf + OFF_SET_UUID, 16);
    memcpy(sb->set_name, buf + OFF_SET_NAME, 32);
    sb->set_name[32] = '\0';
    sb->ctime = clr_get_le64(buf + OFF_CTIME);
    sb->level = (int32_t)clr_get_le32(buf + OFF_LEVEL);
    sb->layout = clr_get_le32(buf + OFF_LAYOUT);
    sb->size = clr_get_le64(buf + OFF_SIZE);
    sb->chunksize = clr_get_le32(buf + OFF_CHUNK);
    sb->raid_disks = clr_get_le32(buf + OFF_RAID_DISKS);
    sb->bitmap_offset = (int32_t)clr_get_le32(buf + OFF_BITMAP_OFFSET);
    sb->new_level = clr_get_le32(buf + OFF_NEW_LEVEL);
    sb->reshape_position = clr_get_le64(buf + OFF_RESHAPE_POS);
    sb->delta_disks = (int32_t)clr_get_le32(buf + OFF_DELTA_DISKS);
    sb->new_layout = clr_get_le32(buf + OFF_NEW_LAYOUT);
    sb->new_chunk = clr_get_le32(buf + OFF_NEW_CHUNK);
    sb->new_offset = (int32_t)clr_get_le32(buf + OFF_NEW_OFFSET);
    sb->data_offset = clr_get_le64(buf + OFF_DATA_OFFSET);
    sb->data_size = clr_get_le64(buf + OFF_DATA_SIZE);
    sb->super_offset = clr_get_le64(buf + OFF_SUPER_OFFSET);
    sb->recovery_offset = clr_get_le64(buf + OFF_RECOVERY_OFFSET);
    sb->dev_number = clr_get_le32(buf + OFF_DEV_NUMBER);
    sb->cnt_corrected_read = clr_get_le32(buf + OFF_CNT_CORRECTED);
    memcpy(sb->device_uuid, buf + OFF_DEVICE_UUID, 16);
    sb->devflags = buf[OFF_DEVFLAGS];
    sb->bblog_shift = buf[OFF_BBLOG_SHIFT];
    sb->bblog_size = clr_get_le16(buf + OFF_BBLOG_SIZE);
    sb->bblog_offset = (int32_t)clr_get_le32(buf + OFF_BBLOG_OFFSET);
    sb->utime = clr_get_le64(buf + OFF_UTIME);
    sb->events = clr_get_le64(buf + OFF_EVENTS);
    sb->resync_offset = clr_get_le64(buf + OFF_RESYNC_OFFSET);
    memcpy(sb->pad3, buf + OFF_PAD3, 32);
    for (uint32_t i = 0; i < sb->max_dev; i++)
        sb->dev_roles[i] = clr_get_le16(buf + OFF_DEV_ROLES + 2 * i);
}

/* Features we run, and the data area inside the device. */
static int check_areas(const struct clr_md_sb *sb, uint64_t dev_sectors, struct clr_err *e)
{
    uint64_t sb_end;

    if (sb->pad0 != 0 || !all_zero(sb->pad3, sizeof sb->pad3))
        return clr_err_set(e, -EINVAL, "reserved superblock padding is not zero");
    if (sb->feature_map & ~(CLR_MD_FEAT_ALL | CLR_MD_FEAT_CLRAID_PARITY))
        return clr_err_set(e, -EPROTO, "unknown feature bits 0x%x in the superblock",
                           sb->feature_map & ~(CLR_MD_FEAT_ALL | CLR_MD_FEAT_CLRAID_PARITY));
    if ((sb->feature_map & CLR_MD_FEAT_CLRAID_PARITY) &&
        (!(sb->feature_map & CLR_MD_FEAT_CLUSTERED) || (sb->level != 5 && sb->level != 6)))
        return clr_err_set(
            e, -EPROTO,
            "feature 0x%x (clraid clustered RAID5/6) on a raid%d superblock%s: it was not written by clraid",
            CLR_MD_FEAT_CLRAID_PARITY, sb->level,
            (sb->feature_map & CLR_MD_FEAT_CLUSTERED) ? "" : " without a clustered bitmap");
    if (sb->feature_map &
        (CLR_MD_FEAT_RESHAPE_ACTIVE | CLR_MD_FEAT_JOURNAL | CLR_MD_FEAT_PPL | CLR_MD_FEAT_MULTIPLE_PPLS))
        return clr_err_set(e, -EPROTO, "feature map 0x%x: reshape, journal and PPL arrays are not supported",
                           sb->feature_map);
    if (sb->super_offset != CLR_MD_V12_SB_SECTOR)
        return clr_err_set(e, -EINVAL, "super_offset %" PRIu64 ", expected %u for a v1.2 superblock",
                           sb->super_offset, CLR_MD_V12_SB_SECTOR);
    sb_end = sb->super_offset + (clr_md_sb_bytes(sb->max_dev) + 511) / 512;
    if (sb->data_offset < sb_end)
        return clr_err_set(e, -ERANGE,
                           "data_offset %" PRIu64 " overlaps the superblock (ends at sector %" PRIu64 ")",
                           sb->data_offset, sb_end);
    if (sb->data_size < 10)
        return clr_err_set(e, -ERANGE, "data_size %" PRIu64 " sectors is below md's minimum of 10",
                           sb->data_size);
    if (sb->data_offset + sb->data_size < sb->data_offset)
        return clr_err_set(e, -ERANGE, "data_offset + data_size overflows");
    if (dev_sectors) {
        if (sb->data_offset >= dev_sectors)
            return clr_err_set(e, -ERANGE,
                               "data_offset %" PRIu64 " is past the end of the device (%" PRIu64 " sectors)",
                               sb->data_offset, dev_sectors);
        if (sb->data_offset + sb->data_size > dev_sectors)
            return clr_err_set(e, -ERANGE,
                               "data area (offset %" PRIu64 " + %" PRIu64
                               " sectors) ends past the end of the device (%" PRIu64
                               " sectors): truncated device?",
                               sb->data_offset, sb->data_size, dev_sectors);
    }
    if (sb->size > sb->data_size)
        return clr_err_set(e, -ERANGE, "used size %" PRIu64 " exceeds the data area (%" PRIu64 " sectors)",
                           sb->size, sb->data_size);
    if (sb->raid_disks == 0 || sb->raid_disks > sb->max_dev || sb->raid_disks > 256)
        return clr_err_set(e, -ERANGE, "raid_disks %u out of range (1..%u)", sb->raid_disks,
                           sb->max_dev < 256 ? sb->max_dev : 256);
    if (sb->dev_number >= sb->max_dev)
        return clr_err_set(e, -ERANGE, "dev_number %u not below max_dev %u", sb->dev_number, sb->max_dev);
    return 0;
}

/* Each active role is held by at most two devices (one being replaced). */
static int check_roles(const struct clr_md_sb *sb, struct clr_err *e)
{
    uint32_t role_count[256];

    memset(role_count, 0, sizeof role_count);
    for (uint32_t i = 0; i < sb->max_dev; i++) {
        uint16_t r = sb->dev_roles[i];

        if (r == CLR_MD_ROLE_SPARE || r == CLR_MD_ROLE_FAULTY)
            continue;
        if (r == CLR_MD_ROLE_JOURNAL || r >= sb->raid_disks)
            return clr_err_set(e, -ERANGE, "dev_roles[%u] = 0x%04x is outside 0..%u", i, r,
                               sb->raid_disks - 1);
        if (++role_count[r] > 2)
            return clr_err_set(e, -ERANGE, "role %u is claimed by more than two devices", r);
    }
    return 0;
}

/* The bitmap and the bad-block log inside the metadata area. */
static int check_metadata_area(const struct clr_md_sb *sb, struct clr_err *e)
{
    uint64_t sb_end = sb->super_offset + (clr_md_sb_bytes(sb->max_dev) + 511) / 512, bm_start;

    if (sb->feature_map & CLR_MD_FEAT_BITMAP_OFFSET) {
        if (sb->bitmap_offset <= 0)
            return clr_err_set(e, -ERANGE, "bitmap_offset %d: a v1.2 bitmap must follow the superblock",
                               sb->bitmap_offset);
        bm_start = sb->super_offset + (uint64_t)sb->bitmap_offset;
        if (bm_start < sb_end || bm_start >= sb->data_offset)
            return clr_err_set(e, -ERANGE,
                               "bitmap at sector %" PRIu64 " is outside the metadata area (%" PRIu64
                               "..%" PRIu64 ")",
                               bm_start, sb_end, sb->data_offset);
    }
    if (sb->feature_map & CLR_MD_FEAT_BAD_BLOCKS) {
        if (sb->bblog_offset == 0 || sb->bblog_size > 8)
            return clr_err_set(e, -ERANGE, "bad-block log offset %d size %u out of range", sb->bblog_offset,
                               sb->bblog_size);
    }
    return 0;
}

int clr_md_sb_decode(const uint8_t *buf, size_t len, uint64_t dev_sectors, struct clr_md_sb *sb,
                     struct clr_err *e)
{
    int rc = decode_header(buf, len, sb, e);

    if (rc)
        return rc;
    decode_fields(buf, sb);
    rc = check_areas(sb, dev_sectors, e);
    if (rc == 0)
        rc = clr_md_sb_check_geometry(sb, e);
    if (rc == 0)
        rc = check_roles(sb, e);
    if (rc == 0)
        rc = check_metadata_area(sb, e);
    return rc;
}

void clr_uuid_format_mdadm(const uint8_t u[16], char out[36])
{
    snprintf(out, 36, "%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x:%02x%02x%02x%02x", u[0], u[1], u[2],
             u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

void clr_uuid_format_dashed(const uint8_t u[16], char out[37])
{
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

int clr_uuid_parse(const char *s, uint8_t uuid[16])
{
    int n = 0, hi = -1;

    for (; *s; s++) {
        int v;

        if (*s == ':' || *s == '-')
            continue;
        if (!isxdigit((unsigned char)*s))
            return -EINVAL;
        v = isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10);
        if (hi < 0) {
            hi = v;
        } else {
            if (n >= 16)
                return -EINVAL;
            uuid[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    return (n == 16 && hi < 0) ? 0 : -EINVAL;
}
