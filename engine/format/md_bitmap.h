/* md write-intent bitmap superblock (bitmap_super_t) and the placement of
 * the per-node bitmaps of a clustered array. Pure code, no I/O.
 * Layout and rules: doc/architecture.md §2.4-§2.5. */
#ifndef CLRAID_FORMAT_MD_BITMAP_H
#define CLRAID_FORMAT_MD_BITMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "format/errbuf.h"
#include "format/md_sb.h"

#define CLR_BITMAP_MAGIC             0x6d746962U
#define CLR_BITMAP_SB_BYTES          256
#define CLR_BITMAP_VERSION_LE        4 /* single node, little-endian bits */
#define CLR_BITMAP_VERSION_CLUSTERED 5
#define CLR_BITMAP_STATE_STALE       0x2U
#define CLR_BITMAP_MAX_NODES         64 /* slots tracked in one 64-bit word */
#define CLR_BITMAP_DEFAULT_SLEEP     5  /* seconds, md's default */

/** Host view of bitmap_super_t. */
struct clr_bitmap_sb {
    uint32_t magic;
    uint32_t version;
    uint8_t uuid[16];
    uint64_t events;
    uint64_t events_cleared;
    uint64_t sync_size; /* sectors covered by the bitmap */
    uint32_t state;
    uint32_t chunksize;    /* bytes */
    uint32_t daemon_sleep; /* seconds */
    uint32_t write_behind;
    uint32_t sectors_reserved;
    uint32_t nodes;
    char cluster_name[64]; /* NUL-terminated */
};

/** Encodes @b into the first 256 bytes of @buf (@len >= 256). */
int clr_bitmap_sb_encode(const struct clr_bitmap_sb *b, uint8_t *buf, size_t len);

/** Decodes and validates a bitmap superblock. If @set_uuid is not NULL the
 *  bitmap must belong to that array. Returns 0 or -errno with @e set:
 *  -ENODATA (no bitmap magic), -EPROTO (version), -EINVAL/-ERANGE. */
int clr_bitmap_sb_decode(const uint8_t *buf, size_t len, const uint8_t *set_uuid, struct clr_bitmap_sb *b,
                         struct clr_err *e);

/** Number of meaningful bits: ceil(sync_size*512 / chunksize). */
uint64_t clr_bitmap_bits(uint64_t sync_sectors, uint32_t chunk_bytes);

/** Bytes of one node's region: superblock + bits, rounded up to 4 KiB
 *  (the kernel's and mdadm's stride). */
uint64_t clr_bitmap_stride_bytes(uint64_t sync_sectors, uint32_t chunk_bytes);

/** Number of node slots described by a bitmap superblock (nodes, or 1 for
 *  a single-node bitmap). */
uint32_t clr_bitmap_slots(const struct clr_bitmap_sb *b);

/** Byte offset on the device of slot @slot's region. */
uint64_t clr_bitmap_slot_offset(const struct clr_md_sb *sb, const struct clr_bitmap_sb *b, uint32_t slot);

/** Checks that every slot region of @b lies between the superblock and
 *  data_offset of @sb. */
int clr_bitmap_check_fits(const struct clr_md_sb *sb, const struct clr_bitmap_sb *b, struct clr_err *e);

/** Bit @k of a region's bit area (the bytes after the 256-byte sb). */
static inline bool clr_bitmap_test(const uint8_t *bits, uint64_t k)
{
    return (bits[k / 8] >> (k % 8)) & 1;
}

static inline void clr_bitmap_set(uint8_t *bits, uint64_t k)
{
    bits[k / 8] |= (uint8_t)(1U << (k % 8));
}

static inline void clr_bitmap_clear(uint8_t *bits, uint64_t k)
{
    bits[k / 8] &= (uint8_t) ~(1U << (k % 8));
}

/** Counts set bits among the first @nbits bits of @bits. */
uint64_t clr_bitmap_count(const uint8_t *bits, uint64_t nbits);

#endif
