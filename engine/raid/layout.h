/* RAID geometry: md's level/layout/chunk encodings turned into pure mapping
 * functions between the array's logical sectors and (member, sector)
 * locations. No I/O, no allocation.
 *
 * All sectors are 512-byte units. A "device sector" is relative to the
 * member's data_offset (what md calls the rdev sector before adding
 * data_offset). Encodings: doc/architecture.md §2.3; the arithmetic
 * follows Linux md (raid10.c __raid10_find_phys/raid10_find_virt/
 * calc_sectors/raid10_size, raid5.c raid5_compute_sector/
 * raid5_compute_blocknr/raid5_size) so an array we write is the array md
 * reads. */
#ifndef CLRAID_RAID_LAYOUT_H
#define CLRAID_RAID_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/errbuf.h"
#include "format/md_sb.h"

/** Most members we accept in one array (md allows more; nobody needs it,
 *  and it keeps per-stripe descriptors on the stack). */
#define CLR_RAID_MAX_DISKS 128
/** "No such disk" in a disk field (e.g. the Q disk of a RAID5 stripe). */
#define CLR_RAID_NO_DISK UINT32_MAX

/* md levels we run */
#define CLR_RAID_LEVEL1  1
#define CLR_RAID_LEVEL5  5
#define CLR_RAID_LEVEL6  6
#define CLR_RAID_LEVEL10 10

/* RAID10 layout word: bits 0-7 near copies, 8-15 far copies, bit 16
 * offset, bits 17-18 far-set variant. */
#define CLR_RAID10_NEAR(l)   ((uint32_t)(l)&0xffU)
#define CLR_RAID10_FAR(l)    (((uint32_t)(l) >> 8) & 0xffU)
#define CLR_RAID10_OFFSET    CLR_R10_OFFSET /* the on-disk bit, engine/format */
#define CLR_RAID10_FARSET(l) (((uint32_t)(l) >> 17) & 0x3U)
/** Builds a RAID10 layout word (variant 0 = md's original far layout,
 *  which is what mdadm writes unless told otherwise). */
#define CLR_RAID10_LAYOUT(near, far, offset)                                                                 \
    ((uint32_t)(near) | ((uint32_t)(far) << 8) | ((offset) ? CLR_RAID10_OFFSET : 0U))

/** RAID5/6 layouts: md's ALGORITHM_* numbers. The RAID5 ones are the
 *  on-disk values engine/format defines; only the RAID6-only ones live here. */
enum clr_raid_algo {
    CLR_RAID_ALGO_LEFT_ASYMMETRIC = CLR_R5_LEFT_ASYMMETRIC,
    CLR_RAID_ALGO_RIGHT_ASYMMETRIC = CLR_R5_RIGHT_ASYMMETRIC,
    CLR_RAID_ALGO_LEFT_SYMMETRIC = CLR_R5_LEFT_SYMMETRIC, /* md's default for 5 and 6 */
    CLR_RAID_ALGO_RIGHT_SYMMETRIC = CLR_R5_RIGHT_SYMMETRIC,
    CLR_RAID_ALGO_PARITY_0 = CLR_R5_PARITY_FIRST,
    CLR_RAID_ALGO_PARITY_N = CLR_R5_PARITY_LAST,
    /* RAID6 only: DDF layouts */
    CLR_RAID_ALGO_ROTATING_ZERO_RESTART = 8,
    CLR_RAID_ALGO_ROTATING_N_RESTART = 9,
    CLR_RAID_ALGO_ROTATING_N_CONTINUE = 10,
    /* RAID6 only: a RAID5 layout on the first n-1 disks, Q on the last */
    CLR_RAID_ALGO_LEFT_ASYMMETRIC_6 = 16,
    CLR_RAID_ALGO_RIGHT_ASYMMETRIC_6 = 17,
    CLR_RAID_ALGO_LEFT_SYMMETRIC_6 = 18,
    CLR_RAID_ALGO_RIGHT_SYMMETRIC_6 = 19,
    CLR_RAID_ALGO_PARITY_0_6 = 20,
};

struct clr_raid_personality;

/** A validated array geometry. Fill it with clr_raid_geom_init(); the
 *  derived fields are read-only afterwards. */
struct clr_raid_geom {
    /* as given (superblock fields) */
    int level;
    uint32_t layout;
    uint32_t chunk_sectors; /* 0 for RAID1 */
    uint32_t raid_disks;
    uint64_t dev_sectors; /* superblock `size`: used sectors per member */

    /* derived */
    const struct clr_raid_personality *pers;
    uint32_t data_disks;       /* RAID5: n-1, RAID6: n-2, RAID1/10: 0 */
    uint32_t copies;           /* RAID1: n, RAID10: near*far, RAID5/6: 1 */
    uint32_t near_copies;      /* RAID10 */
    uint32_t far_copies;       /* RAID10 */
    bool far_offset;           /* RAID10 "offset" layout */
    uint32_t far_set_size;     /* RAID10, from the far-set variant bits */
    uint64_t stride;           /* RAID10: sectors between far copies */
    uint64_t used_dev_sectors; /* sectors per member the layout touches */
    uint64_t array_sectors;    /* logical size of the array */
};

/** One physical location: member index (raid role) and device sector. */
struct clr_raid_loc {
    uint32_t disk;
    uint64_t sector;
};

/** The result of mapping one logical sector of any level: every location
 *  that holds it (all copies for RAID1/10; the single data location for
 *  RAID5/6), and how many sectors from there on map contiguously the same
 *  way (up to the next chunk boundary or the array end). */
struct clr_raid_extent {
    uint64_t lsector;
    uint64_t run; /* sectors, >= 1 */
    uint32_t ncopies;
    struct clr_raid_loc copy[CLR_RAID_MAX_DISKS];
    /* RAID5/6 only */
    uint64_t stripe;
    uint32_t data_index; /* position in the stripe's data order */
};

/** What a physical sector holds. */
enum clr_raid_role {
    CLR_RAID_ROLE_DATA = 0,
    CLR_RAID_ROLE_P,
    CLR_RAID_ROLE_Q,
    CLR_RAID_ROLE_UNUSED, /* beyond the used area, or layout padding */
};

/** Inverse mapping result. */
struct clr_raid_phys {
    enum clr_raid_role role;
    uint64_t lsector;    /* valid for ROLE_DATA */
    uint64_t stripe;     /* RAID5/6: stripe of the sector (all roles but UNUSED) */
    uint32_t data_index; /* RAID5/6, ROLE_DATA */
};

/** RAID5/6: the roles of the members in one stripe (a row of chunks). */
struct clr_raid_stripe {
    uint64_t stripe;
    uint32_t pd; /* P disk */
    uint32_t qd; /* Q disk, CLR_RAID_NO_DISK for RAID5 */
    uint32_t ndata;
    /** data_disk[k]: member holding the k-th chunk of the stripe in
     *  logical order. */
    uint32_t data_disk[CLR_RAID_MAX_DISKS];
    /** qexp[k]: exponent i of the Q coefficient g^i of data chunk k
     *  (md's syndrome slot). 0..ndata-1 with no gaps for md's own layouts;
     *  the member index for the DDF layouts (8-10), with gaps. */
    uint8_t qexp[CLR_RAID_MAX_DISKS];
};

/** A per-level table of operations, so the engine dispatches by level
 *  through clr_raid_personality_find() instead of if-chains. The map
 *  functions take a geometry validated for that level. */
struct clr_raid_personality {
    const char *name; /* "raid1", "raid10", "raid5", "raid6" */
    int level;
    bool has_parity; /* RAID5/6: stripes with P (and Q) */
    /** Fills the derived fields of @g, or fails with a one-line reason. */
    int (*setup)(struct clr_raid_geom *g, struct clr_err *e);
    /** Logical sector -> every location holding it. */
    int (*map)(const struct clr_raid_geom *g, uint64_t lsector, struct clr_raid_extent *x);
    /** (member, device sector) -> what it holds. */
    int (*unmap)(const struct clr_raid_geom *g, uint32_t disk, uint64_t dsector, struct clr_raid_phys *p);
    /** Members failed per @failed[disk] (raid_disks entries): can every
     *  logical sector still be read or reconstructed? */
    bool (*enough)(const struct clr_raid_geom *g, const bool *failed);
};

/** The personality for md level @level, or NULL if we do not run it. */
const struct clr_raid_personality *clr_raid_personality_find(int level);

/** Validates an md geometry and fills @g (including array_sectors and the
 *  personality). Checks what the md kernel checks: RAID10 copies within
 *  [2, raid_disks], known variant bits, chunk a power of two of at least
 *  4 KiB; RAID5/6 known algorithm for the level, chunk power of two of at
 *  least 4 KiB, at least 2 (RAID5) or 4 (RAID6) members; RAID1 chunk
 *  ignored. Returns 0 or -EINVAL (-EOPNOTSUPP for a level we do not run)
 *  with a one-line reason in @e. */
int clr_raid_geom_init(struct clr_raid_geom *g, int level, uint32_t layout, uint32_t chunk_sectors,
                       uint32_t raid_disks, uint64_t dev_sectors, struct clr_err *e);

/** Logical size of the array in sectors (as md sets the array size:
 *  RAID1 = dev_sectors; RAID5/6 = dev_sectors rounded down to a chunk
 *  times data disks; RAID10 = md's raid10_size() in whole chunks). */
uint64_t clr_raid_array_sectors(const struct clr_raid_geom *g);

/** RAID10 size in sectors for a member size of @dev_sectors, exactly as
 *  md's raid10_size(): chunks / far_copies * raid_disks / near_copies,
 *  in whole chunks. */
uint64_t clr_raid10_size(const struct clr_raid_geom *g, uint64_t dev_sectors);

/** Maps logical sector @lsector through @g's personality. Returns 0, or
 *  -ERANGE if @lsector is beyond the array. */
int clr_raid_map(const struct clr_raid_geom *g, uint64_t lsector, struct clr_raid_extent *x);

/** What (@disk, @dsector) holds. Returns 0 (with ROLE_UNUSED for
 *  sectors no logical sector maps to), or -EINVAL for a disk out of range. */
int clr_raid_unmap(const struct clr_raid_geom *g, uint32_t disk, uint64_t dsector, struct clr_raid_phys *p);

/** RAID5/6: the member roles of stripe @stripe. Returns 0 or -EINVAL
 *  (not a parity level). */
int clr_raid_stripe_roles(const struct clr_raid_geom *g, uint64_t stripe, struct clr_raid_stripe *st);

/** Position of member @disk in stripe @st in the block order the parity
 *  functions take (parity.h): k for data chunk k, ndata for P, ndata + 1
 *  for Q. Returns it, or -ENOENT if @disk holds nothing in the stripe. */
int clr_raid_stripe_block(const struct clr_raid_stripe *st, uint32_t disk);

/** Logical sectors in one full stripe: RAID5/6 chunk * data disks; RAID10
 *  the span after which the copies' disk pattern repeats within a row
 *  (md's io_opt: chunk * raid_disks / near_copies when that divides, else
 *  chunk * raid_disks); RAID1 8 (one 4 KiB page: any aligned write is
 *  "full"). */
uint64_t clr_raid_stripe_sectors(const struct clr_raid_geom *g);

/** True if [@lsector, @lsector + @nsectors) is a non-empty whole number of
 *  full stripes (clr_raid_stripe_sectors()) starting on a stripe
 *  boundary: a RAID5/6 write of it needs no read-modify-write. */
bool clr_raid_is_full_stripes(const struct clr_raid_geom *g, uint64_t lsector, uint64_t nsectors);

/** RAID5/6: stripe holding @lsector, and the logical range of the stripe.
 *  Returns 0, -EINVAL (not parity) or -ERANGE. */
int clr_raid_stripe_of(const struct clr_raid_geom *g, uint64_t lsector, uint64_t *stripe, uint64_t *first,
                       uint64_t *nsectors);

/** Length of the first piece of [@lsector, @lsector + @nsectors) that
 *  stays within one chunk (RAID1: within the array), i.e. what one
 *  clr_raid_map() extent covers. Callers loop: map, take the piece,
 *  advance. Returns 0 if @nsectors is 0 or @lsector is past the end. */
uint64_t clr_raid_chunk_piece(const struct clr_raid_geom *g, uint64_t lsector, uint64_t nsectors);

/** Length of the first piece of the range that stays within one full
 *  stripe (clr_raid_stripe_sectors()); RAID1 has no stripes and is not
 *  split. Same conventions as clr_raid_chunk_piece(). */
uint64_t clr_raid_stripe_piece(const struct clr_raid_geom *g, uint64_t lsector, uint64_t nsectors);

/** Human name of a RAID5/6 algorithm ("left-symmetric", ...) or NULL. */
const char *clr_raid_algo_name(uint32_t algo);

#endif
