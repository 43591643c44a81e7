/* Geometry planning for `clraid create`: from the options and the member
 * sizes to the exact superblocks and bitmap regions to write. Pure code:
 * every refusal happens here, before anything touches a device. */
#ifndef CLRAID_FORMAT_CREATE_PLAN_H
#define CLRAID_FORMAT_CREATE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "format/md_bitmap.h"
#include "format/md_sb.h"

#define CLR_CREATE_DEFAULT_CHUNK_KIB  512
#define CLR_CREATE_DEFAULT_BITMAP_KIB 65536 /* mdadm's clustered default */
#define CLR_CREATE_DEFAULT_NODES      4
#define CLR_CREATE_MAX_DEVICES        256
#define CLR_CREATE_MIN_DATA_SECTORS   2048 /* 1 MiB of data per member */

struct clr_create_params {
    int32_t level;
    uint32_t layout;
    bool layout_set;
    uint32_t chunk_kib;        /* 0: default */
    uint32_t bitmap_chunk_kib; /* 0: default */
    uint32_t raid_disks;
    uint32_t spare_devices;
    uint32_t nodes; /* 1: single-node bitmap (v4) */
    char name[33];
    char cluster_name[64];
    bool assume_clean;
    uint8_t set_uuid[16];
    uint64_t now_sec;
    uint32_t now_usec;
};

struct clr_create_plan {
    uint32_t ndev;
    uint64_t data_offset; /* sectors, same on every member */
    uint64_t size;        /* used sectors per member */
    uint64_t array_sectors;
    uint64_t sync_sectors;
    uint64_t stride_bytes; /* one node's bitmap region */
    uint64_t bitmap_bits;
    uint32_t slots;
    struct clr_bitmap_sb bitmap; /* slot template */
    struct clr_md_sb sb;         /* member template */
};

/** Checks the options alone (no sizes) and fills in defaults (layout,
 *  chunk, bitmap chunk). Returns 0 or -errno with one line in @e. */
int clr_create_check_params(struct clr_create_params *q, uint32_t ndev, struct clr_err *e);

/** Validates @p against the member sizes (sectors) and fills @plan.
 *  Returns 0 or -errno with one line in @e that says what to change. */
int clr_create_plan(const struct clr_create_params *p, const uint64_t *dev_sectors, uint32_t ndev,
                    struct clr_create_plan *plan, struct clr_err *e);

/** The superblock for member @index (0-based; indexes past raid_disks are
 *  spares) of @dev_sectors sectors with its own device UUID. */
void clr_create_member_sb(const struct clr_create_plan *plan, uint32_t index, uint64_t dev_sectors,
                          const uint8_t dev_uuid[16], struct clr_md_sb *out);

/** Fills @buf (plan->stride_bytes long) with the initial region of bitmap
 *  slot @slot: its superblock, then all bits set for slot 0 of an array
 *  that needs an initial resync, else zero (mdadm's convention). */
int clr_create_bitmap_region(const struct clr_create_plan *plan, uint32_t slot, uint8_t *buf, uint64_t len);

#endif
