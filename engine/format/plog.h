/* The partial-parity log of a clustered RAID5/6 (doc/cluster.md,
 * "Clustered RAID5/RAID6"): where each node slot's log lies on a member,
 * and the codec of its header.  Pure code, no I/O.
 *
 * A member of an array with the clraid parity feature bit
 * (CLR_MD_FEAT_CLRAID_PARITY) holds, after the bitmap regions of every
 * slot and below data_offset, one log area per slot of
 * CLR_PLOG_SLOT_BYTES: two header copies of CLR_PLOG_HDR_BYTES, then the
 * partial-parity blocks the entries point to.  Nothing in the superblock
 * says where: it follows from the bitmap's geometry, 4 KiB aligned.  A
 * stripe's entry is kept on the members that hold its parity (P, and Q
 * for RAID6), as md's PPL does: with the parity member gone there is
 * nothing to replay.  The engine writes and replays it in
 * engine/array/array_plog.c.
 */
#ifndef CLRAID_FORMAT_PLOG_H
#define CLRAID_FORMAT_PLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/errbuf.h"
#include "format/md_bitmap.h"
#include "format/md_sb.h"

#define CLR_PLOG_SLOT_BYTES (1024U * 1024U) /* per slot, per member */
#define CLR_PLOG_HDR_BYTES  4096U
#define CLR_PLOG_COPIES     2
#define CLR_PLOG_MAGIC      0x676f6c7aU /* "zlog" */
#define CLR_PLOG_VERSION    1
/* 64-byte head, then 32 bytes an entry */
#define CLR_PLOG_MAX_ENTRIES ((CLR_PLOG_HDR_BYTES - 64) / 32)

/** Where the logs lie on a member (bytes from the start of the device). */
struct clr_plog_layout {
    uint64_t start;      /**< slot 0's area */
    uint64_t slot_bytes; /**< CLR_PLOG_SLOT_BYTES */
    uint32_t slots;
    uint64_t end; /**< first byte after the last slot's area */
};

/**
 * The log areas of a member whose superblock is @sb and bitmap @b.
 * @return 0, or -ERANGE with one line in @e if they do not fit below
 * data_offset.
 */
int clr_plog_layout(const struct clr_md_sb *sb, const struct clr_bitmap_sb *b, struct clr_plog_layout *out,
                    struct clr_err *e);

/** Bytes the log areas need after @meta_end bytes of metadata, for
 *  @slots slots: the aligned start plus every area. */
uint64_t clr_plog_end(uint64_t meta_end, uint32_t slots);

/** One write the log covers. */
struct clr_plog_entry {
    uint64_t stripe;     /**< stripe number in the array */
    uint64_t changed;    /**< data chunks the write changes (bit i: chunk i) */
    uint32_t pp_offset;  /**< its partial parity, in sectors from the end of
                          *   the header copies */
    uint32_t pp_sectors; /**< length of partial P (partial Q follows it for
                          *   RAID6, as long) */
    uint32_t first;      /**< first sector of the stripe's chunk range it
                          *   covers */
    uint32_t flags;      /**< 0 (reserved) */
};

/** A log header, decoded. */
struct clr_plog_hdr {
    uint8_t set_uuid[16]; /**< the array's */
    uint32_t slot;
    uint64_t gen; /**< newer headers have larger generations */
    uint32_t nentries;
    struct clr_plog_entry e[CLR_PLOG_MAX_ENTRIES];
};

/** CRC-32C (Castagnoli) of @len bytes, as ext4 and md's PPL use it. */
uint32_t clr_crc32c(uint32_t crc, const void *buf, size_t len);

/** Encode @h into @buf (CLR_PLOG_HDR_BYTES).  @return 0 or -EINVAL. */
int clr_plog_hdr_encode(const struct clr_plog_hdr *h, uint8_t *buf);

/**
 * Decode a header copy for the array @uuid and slot @slot.
 * @return 0; -ENODATA for a copy never written (all zero); -EBADMSG for
 * one whose checksum fails (torn, or not ours); -EPROTO for a version we
 * do not know; -ESTALE for another array's or slot's header.
 */
int clr_plog_hdr_decode(const uint8_t *buf, const uint8_t uuid[16], uint32_t slot, struct clr_plog_hdr *h,
                        struct clr_err *e);

#endif
