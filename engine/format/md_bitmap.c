/* md write-intent bitmap superblock encode/decode and slot placement. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "format/endian.h"
#include "format/md_bitmap.h"

enum {
    OFF_MAGIC = 0,
    OFF_VERSION = 4,
    OFF_UUID = 8,
    OFF_EVENTS = 24,
    OFF_EVENTS_CLEARED = 32,
    OFF_SYNC_SIZE = 40,
    OFF_STATE = 48,
    OFF_CHUNKSIZE = 52,
    OFF_DAEMON_SLEEP = 56,
    OFF_WRITE_BEHIND = 60,
    OFF_SECTORS_RESERVED = 64,
    OFF_NODES = 68,
    OFF_CLUSTER_NAME = 72,
    OFF_PAD = 136,
};

int clr_bitmap_sb_encode(const struct clr_bitmap_sb *b, uint8_t *buf, size_t len)
{
    if (len < CLR_BITMAP_SB_BYTES)
        return -EINVAL;
    memset(buf, 0, CLR_BITMAP_SB_BYTES);
    clr_put_le32(buf + OFF_MAGIC, b->magic);
    clr_put_le32(buf + OFF_VERSION, b->version);
    memcpy(buf + OFF_UUID, b->uuid, 16);
    clr_put_le64(buf + OFF_EVENTS, b->events);
    clr_put_le64(buf + OFF_EVENTS_CLEARED, b->events_cleared);
    clr_put_le64(buf + OFF_SYNC_SIZE, b->sync_size);
    clr_put_le32(buf + OFF_STATE, b->state);
    clr_put_le32(buf + OFF_CHUNKSIZE, b->chunksize);
    clr_put_le32(buf + OFF_DAEMON_SLEEP, b->daemon_sleep);
    clr_put_le32(buf + OFF_WRITE_BEHIND, b->write_behind);
    clr_put_le32(buf + OFF_SECTORS_RESERVED, b->sectors_reserved);
    clr_put_le32(buf + OFF_NODES, b->nodes);
    /* At most 63 characters: the name must stay NUL-terminated on disk. */
    memcpy(buf + OFF_CLUSTER_NAME, b->cluster_name, strnlen(b->cluster_name, 63));
    return 0;
}

static bool is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

int clr_bitmap_sb_decode(const uint8_t *buf, size_t len, const uint8_t *set_uuid, struct clr_bitmap_sb *b,
                         struct clr_err *e)
{
    memset(b, 0, sizeof *b);
    if (len < CLR_BITMAP_SB_BYTES)
        return clr_err_set(e, -EINVAL, "bitmap superblock buffer too short (%zu bytes)", len);
    b->magic = clr_get_le32(buf + OFF_MAGIC);
    if (b->magic != CLR_BITMAP_MAGIC)
        return clr_err_set(e, -ENODATA, "no bitmap superblock: magic 0x%08x, expected 0x%08x", b->magic,
                           CLR_BITMAP_MAGIC);
    b->version = clr_get_le32(buf + OFF_VERSION);
    memcpy(b->uuid, buf + OFF_UUID, 16);
    b->events = clr_get_le64(buf + OFF_EVENTS);
    b->events_cleared = clr_get_le64(buf + OFF_EVENTS_CLEARED);
    b->sync_size = clr_get_le64(buf + OFF_SYNC_SIZE);
    b->state = clr_get_le32(buf + OFF_STATE);
    b->chunksize = clr_get_le32(buf + OFF_CHUNKSIZE);
    b->daemon_sleep = clr_get_le32(buf + OFF_DAEMON_SLEEP);
    b->write_behind = clr_get_le32(buf + OFF_WRITE_BEHIND);
    b->sectors_reserved = clr_get_le32(buf + OFF_SECTORS_RESERVED);
    b->nodes = clr_get_le32(buf + OFF_NODES);
    memcpy(b->cluster_name, buf + OFF_CLUSTER_NAME, 64);

    /* Version 3 stores bits host-endian; we only read the portable ones. */
    if (b->version != CLR_BITMAP_VERSION_LE && b->version != CLR_BITMAP_VERSION_CLUSTERED)
        return clr_err_set(e, -EPROTO, "bitmap version %u is not supported (4 or 5 are)", b->version);
    if (set_uuid && memcmp(b->uuid, set_uuid, 16) != 0)
        return clr_err_set(e, -EINVAL, "bitmap UUID does not match the array UUID (stale or foreign bitmap)");
    if (!is_pow2(b->chunksize) || b->chunksize < 512)
        return clr_err_set(e, -EINVAL, "bitmap chunk size %u bytes is not a power of two of at least 512",
                           b->chunksize);
    if (b->daemon_sleep < 1 || b->daemon_sleep > 3600)
        return clr_err_set(e, -ERANGE, "bitmap daemon_sleep %u s out of range (1..3600)", b->daemon_sleep);
    if (b->write_behind > 16383)
        return clr_err_set(e, -ERANGE, "bitmap write_behind %u exceeds 16383", b->write_behind);
    if (b->version == CLR_BITMAP_VERSION_CLUSTERED) {
        if (b->nodes < 1 || b->nodes > CLR_BITMAP_MAX_NODES)
            return clr_err_set(e, -ERANGE, "bitmap node count %u out of range (1..%u)", b->nodes,
                               CLR_BITMAP_MAX_NODES);
        if (memchr(b->cluster_name, '\0', sizeof b->cluster_name) == NULL)
            return clr_err_set(e, -EINVAL, "bitmap cluster name is not NUL-terminated");
    } else {
        b->nodes = 0;
        b->cluster_name[0] = '\0';
    }
    for (size_t i = OFF_PAD; i < CLR_BITMAP_SB_BYTES; i++)
        if (buf[i])
            return clr_err_set(e, -EINVAL, "bitmap superblock padding is not zero");
    return 0;
}

uint64_t clr_bitmap_bits(uint64_t sync_sectors, uint32_t chunk_bytes)
{
    uint64_t cs = chunk_bytes / 512;

    if (!cs)
        return 0;
    return (sync_sectors + cs - 1) / cs;
}

uint64_t clr_bitmap_stride_bytes(uint64_t sync_sectors, uint32_t chunk_bytes)
{
    uint64_t bytes = (clr_bitmap_bits(sync_sectors, chunk_bytes) + 7) / 8 + CLR_BITMAP_SB_BYTES;

    return (bytes + 4095) & ~(uint64_t)4095;
}

uint32_t clr_bitmap_slots(const struct clr_bitmap_sb *b)
{
    return b->nodes ? b->nodes : 1;
}

uint64_t clr_bitmap_slot_offset(const struct clr_md_sb *sb, const struct clr_bitmap_sb *b, uint32_t slot)
{
    uint64_t start = (sb->super_offset + (uint64_t)(int64_t)sb->bitmap_offset) * 512;

    return start + (uint64_t)slot * clr_bitmap_stride_bytes(b->sync_size, b->chunksize);
}

int clr_bitmap_check_fits(const struct clr_md_sb *sb, const struct clr_bitmap_sb *b, struct clr_err *e)
{
    uint64_t sync = clr_md_sync_sectors(sb);
    uint64_t end;

    if (b->sync_size == 0 || b->sync_size > sync)
        return clr_err_set(e, -ERANGE,
                           "bitmap sync_size %" PRIu64 " sectors does not match the array (%" PRIu64 ")",
                           b->sync_size, sync);
    if (clr_bitmap_bits(b->sync_size, b->chunksize) > (1ULL << 31))
        return clr_err_set(e, -ERANGE, "bitmap has more than 2^31 bits (chunk %u bytes too small)",
                           b->chunksize);
    end = clr_bitmap_slot_offset(sb, b, clr_bitmap_slots(b));
    if (end > sb->data_offset * 512)
        return clr_err_set(e, -ERANGE,
                           "%u bitmap slots end at byte %" PRIu64 ", past data_offset (byte %" PRIu64 ")",
                           clr_bitmap_slots(b), end, sb->data_offset * 512);
    return 0;
}

uint64_t clr_bitmap_count(const uint8_t *bits, uint64_t nbits)
{
    uint64_t n = 0, k;

    for (k = 0; k + 8 <= nbits; k += 8)
        n += (uint64_t)__builtin_popcount(bits[k / 8]);
    for (; k < nbits; k++)
        n += clr_bitmap_test(bits, k);
    return n;
}
