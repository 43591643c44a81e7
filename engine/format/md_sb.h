/* md v1.2 superblock (struct mdp_superblock_1): host representation,
 * encode/decode and validation. Pure code, no I/O.
 * Layout and rules: doc/architecture.md §2.2-§2.3. */
#ifndef CLRAID_FORMAT_MD_SB_H
#define CLRAID_FORMAT_MD_SB_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "format/errbuf.h"

#define CLR_MD_MAGIC          0xa92b4efcU
#define CLR_MD_SB_FIXED_BYTES 256
#define CLR_MD_SB_AREA_BYTES  4096 /* what we read/write at the sb offset */
#define CLR_MD_V12_SB_SECTOR  8    /* v1.2: 4 KiB from the start */
#define CLR_MD_MAX_DEV_LIMIT  1920 /* (4096 - 256) / 2 */
#define CLR_MD_MAX_SECTOR     UINT64_MAX

#define CLR_MD_ROLE_SPARE   0xffffU
#define CLR_MD_ROLE_FAULTY  0xfffeU
#define CLR_MD_ROLE_JOURNAL 0xfffdU
#define CLR_MD_ROLE_MAX     0xff00U

/* feature_map bits */
#define CLR_MD_FEAT_BITMAP_OFFSET     0x1U
#define CLR_MD_FEAT_RECOVERY_OFFSET   0x2U
#define CLR_MD_FEAT_RESHAPE_ACTIVE    0x4U
#define CLR_MD_FEAT_BAD_BLOCKS        0x8U
#define CLR_MD_FEAT_REPLACEMENT       0x10U
#define CLR_MD_FEAT_RESHAPE_BACKWARDS 0x20U
#define CLR_MD_FEAT_NEW_OFFSET        0x40U
#define CLR_MD_FEAT_RECOVERY_BITMAP   0x80U
#define CLR_MD_FEAT_CLUSTERED         0x100U
#define CLR_MD_FEAT_JOURNAL           0x200U
#define CLR_MD_FEAT_PPL               0x400U
#define CLR_MD_FEAT_MULTIPLE_PPLS     0x800U
#define CLR_MD_FEAT_RAID0_LAYOUT      0x1000U
#define CLR_MD_FEAT_ALL               0x1fffU
/*
 * Ours, not md's: a clustered RAID5/6 (a parity level with a clustered
 * bitmap).  Kernel md refuses a superblock with a feature bit it does not
 * know (md.c super_1_load), so no stock kernel assembles such an array on
 * several nodes with no stripe locking; mdadm --examine still prints it.
 * High in the word, away from the bits md adds from the bottom.
 */
#define CLR_MD_FEAT_CLRAID_PARITY 0x40000000U

/* RAID10 layout word */
#define CLR_R10_NEAR(l) ((l)&0xffU)
#define CLR_R10_FAR(l)  (((l) >> 8) & 0xffU)
#define CLR_R10_OFFSET  0x10000U

/* RAID5/6 layouts (md's ALGORITHM_*) */
enum clr_r5_layout {
    CLR_R5_LEFT_ASYMMETRIC = 0,
    CLR_R5_RIGHT_ASYMMETRIC = 1,
    CLR_R5_LEFT_SYMMETRIC = 2,
    CLR_R5_RIGHT_SYMMETRIC = 3,
    CLR_R5_PARITY_FIRST = 4,
    CLR_R5_PARITY_LAST = 5,
};

/** Host view of every field of struct mdp_superblock_1. */
struct clr_md_sb {
    uint32_t magic;
    uint32_t major_version;
    uint32_t feature_map;
    uint32_t pad0;
    uint8_t set_uuid[16];
    char set_name[33]; /* 32 on disk + NUL for convenience */
    uint64_t ctime;
    int32_t level;
    uint32_t layout;
    uint64_t size;      /* used sectors per member */
    uint32_t chunksize; /* sectors */
    uint32_t raid_disks;
    int32_t bitmap_offset; /* sectors from superblock, signed */
    uint32_t new_level;
    uint64_t reshape_position;
    int32_t delta_disks;
    uint32_t new_layout;
    uint32_t new_chunk;
    int32_t new_offset;
    uint64_t data_offset;
    uint64_t data_size;
    uint64_t super_offset;
    uint64_t recovery_offset;
    uint32_t dev_number;
    uint32_t cnt_corrected_read;
    uint8_t device_uuid[16];
    uint8_t devflags;
    uint8_t bblog_shift;
    uint16_t bblog_size;
    int32_t bblog_offset;
    uint64_t utime;
    uint64_t events;
    uint64_t resync_offset;
    uint32_t sb_csum; /* as read; encode recomputes */
    uint32_t max_dev;
    uint8_t pad3[32];
    uint16_t dev_roles[CLR_MD_MAX_DEV_LIMIT];
};

/** Bytes of the superblock proper: 256 + 2*max_dev. */
size_t clr_md_sb_bytes(uint32_t max_dev);

/** md's sb_csum over the first 256+2*max_dev bytes of @buf, with the
 *  checksum field taken as zero. @buf must hold that many bytes. */
uint32_t clr_md_sb_csum(const uint8_t *buf, uint32_t max_dev);

/** Encodes @sb into @buf (at least clr_md_sb_bytes(sb->max_dev) bytes;
 *  bytes after that up to @len are zeroed) with a fresh checksum.
 *  Returns 0, or -EINVAL if max_dev is out of range or @len too small. */
int clr_md_sb_encode(const struct clr_md_sb *sb, uint8_t *buf, size_t len);

/** Decodes and fully validates a v1.2 superblock read from sector 8 of a
 *  device of @dev_sectors sectors (0: size unknown, skip size checks).
 *  Returns 0; -ENODATA (no md superblock: wrong magic), -EBADMSG (bad
 *  checksum), -EPROTO (unsupported version/features), -ERANGE or -EINVAL
 *  (a field out of range). @e gets one precise line. */
int clr_md_sb_decode(const uint8_t *buf, size_t len, uint64_t dev_sectors, struct clr_md_sb *sb,
                     struct clr_err *e);

/** Checks the geometry fields (level, layout, chunk, raid_disks) that must
 *  agree across members and make sense together. */
int clr_md_sb_check_geometry(const struct clr_md_sb *sb, struct clr_err *e);

/** Array size in sectors as md computes it for sb->level. */
uint64_t clr_md_array_sectors(int32_t level, uint32_t layout, uint32_t raid_disks, uint64_t size,
                              uint32_t chunk_sectors);

/** Resync address space covered by the bitmap: the member size for
 *  RAID1/5/6, the array size for RAID10 (doc/architecture.md §2.4). */
uint64_t clr_md_sync_sectors(const struct clr_md_sb *sb);

/** mdadm-style level name ("raid1") or NULL if unknown. */
const char *clr_md_level_name(int32_t level);

/** Parses a level given as "1", "raid1", "10", "5", "6"; -EINVAL else. */
int clr_md_level_parse(const char *s, int32_t *level);

/** Parses an mdadm layout name for @level into md's layout word:
 *  RAID5/6: left-asymmetric|la, right-asymmetric|ra, left-symmetric|ls,
 *  right-symmetric|rs, parity-first, parity-last; RAID10: nN, fN, oN. */
int clr_md_layout_parse(int32_t level, const char *s, uint32_t *layout);

/** Writes the mdadm layout name of @layout for @level into @buf. */
void clr_md_layout_name(int32_t level, uint32_t layout, char *buf, size_t len);

/** Formats a 16-byte UUID the way mdadm prints it: 8:8:8:8 hex. */
void clr_uuid_format_mdadm(const uint8_t uuid[16], char out[36]);

/** Formats a 16-byte UUID as 8-4-4-4-12 lower-case hex (blkid, lockspace). */
void clr_uuid_format_dashed(const uint8_t uuid[16], char out[37]);

/** Parses either form above (and plain 32 hex digits). */
int clr_uuid_parse(const char *s, uint8_t uuid[16]);

#endif
