/* In-memory write-intent bitmap logic with md's semantics (md-bitmap.c:
 * startwrite, endwrite, daemon_work), independent of I/O and locking.
 *
 * One state word per bitmap chunk: writes pending, whether the chunk's
 * bit is set on disk (DIRTY), whether it needs resync (NEEDED) and how
 * many sweeps it has been idle. The engine owns the I/O:
 *
 *  - before issuing a data write, call clr_bmc_start_write(); if it
 *    returns > 0 some chunk went clean -> dirty, and the bitmap page(s)
 *    holding [first, last] must be written (clr_bmc_render()) and reach
 *    the disk before the data write is issued (many writes may share one
 *    flush);
 *  - when every leg of the write has completed, call clr_bmc_end_write()
 *    with success = false if any leg failed or was missing;
 *  - every daemon_sleep seconds call clr_bmc_sweep(): it returns chunks
 *    whose bit may now be cleared on disk (lazily, no ordering needed).
 *
 * A bit is cleared only when no write is pending on the chunk, it has
 * been idle for idle_sweeps sweeps, it does not need resync, and the
 * array is not degraded. Writes that end while degraded (or fail) mark
 * the chunk NEEDED, so a returning member is re-synced from the bitmap.
 *
 * Not thread-safe: the caller serialises calls (one mutex is enough). */
#ifndef CLRAID_RAID_BITMAP_COUNTERS_H
#define CLRAID_RAID_BITMAP_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** md clears a bit after two idle daemon passes (counter 2 -> 1 -> 0). */
#define CLR_BMC_DEFAULT_IDLE_SWEEPS 2
/** Writes that may be pending on one chunk at once (md: 14-bit counter). */
#define CLR_BMC_MAX_PENDING 0xffffU

struct clr_bmc {
    uint64_t sync_sectors;  /* sectors the bitmap covers */
    uint32_t chunk_sectors; /* bitmap chunk, in sectors */
    uint64_t nchunks;
    unsigned idle_sweeps;
    bool degraded;
    uint64_t ndirty; /* chunks with DIRTY set */
    uint32_t *state; /* one word per chunk, see bitmap_counters.c */
};

/** Sets up counters for a bitmap covering @sync_sectors with chunks of
 *  @chunk_sectors (a power of two), all clean. @idle_sweeps 0 means
 *  CLR_BMC_DEFAULT_IDLE_SWEEPS. Returns 0, -EINVAL or -ENOMEM. */
int clr_bmc_init(struct clr_bmc *b, uint64_t sync_sectors, uint32_t chunk_sectors, unsigned idle_sweeps);

/** Frees the counters. */
void clr_bmc_free(struct clr_bmc *b);

/** Loads the on-disk bits (md's order: chunk k is bit k%8 of byte k/8):
 *  every set bit becomes DIRTY and NEEDED (it may cover an interrupted
 *  write, so it must be resynced before it can be cleared). @nbytes may be
 *  short; missing bits count as clear. Returns the number of dirty chunks. */
uint64_t clr_bmc_load(struct clr_bmc *b, const uint8_t *bits, size_t nbytes);

/** Writes the current on-disk image of chunks [@first, @first + @nbits)
 *  into @bits (md's bit order, ceil(@nbits/8) bytes, padding bits 0):
 *  what the engine writes to the bitmap page. */
void clr_bmc_render(const struct clr_bmc *b, uint64_t first, uint64_t nbits, uint8_t *bits);

/** Chunks covering [@sector, @sector + @nsectors). Returns 0 or -ERANGE
 *  if the range is empty or leaves the bitmap. */
int clr_bmc_chunks(const struct clr_bmc *b, uint64_t sector, uint64_t nsectors, uint64_t *first,
                   uint64_t *last);

/** A write to [@sector, +@nsectors) is about to be issued. Counts it as
 *  pending on every chunk it covers. Returns the number of chunks that
 *  went clean -> dirty (their bits must be on disk before the write is
 *  issued; they all lie in [*first, *last] when @first/@last are given),
 *  0 if all were already dirty, -EBUSY if a chunk already has
 *  CLR_BMC_MAX_PENDING writes (nothing changed: wait for one to end and
 *  retry), or -ERANGE. */
int clr_bmc_start_write(struct clr_bmc *b, uint64_t sector, uint64_t nsectors, uint64_t *first,
                        uint64_t *last);

/** The write started on the same range has completed on every leg
 *  (@success) or not. A failed write, or one ending while the array is
 *  degraded, marks its chunks NEEDED. Returns 0, or -ERANGE / -EINVAL if
 *  the range has no pending write (a caller bug). */
int clr_bmc_end_write(struct clr_bmc *b, uint64_t sector, uint64_t nsectors, bool success);

/** Marks the array degraded or not. While degraded, no bit is cleared. */
void clr_bmc_set_degraded(struct clr_bmc *b, bool degraded);

/** Resync of [@sector, +@nsectors) completed on every member: clears NEEDED
 *  on the chunks it fully covers, so idle ones can be cleared by later
 *  sweeps. A partially covered chunk keeps NEEDED. Returns 0 or -ERANGE. */
int clr_bmc_sync_done(struct clr_bmc *b, uint64_t sector, uint64_t nsectors);

/** Marks [@sector, +@nsectors) DIRTY and NEEDED without a pending write
 *  (e.g. a region another node left dirty, taken over). Returns the
 *  number of chunks newly dirty, or -ERANGE. */
int clr_bmc_mark_needed(struct clr_bmc *b, uint64_t sector, uint64_t nsectors);

/** One daemon pass. Ages idle dirty chunks and clears (in memory) those
 *  idle for idle_sweeps passes, writing their numbers into @cleared (at
 *  most @max; the rest wait for the next pass). Clears nothing while
 *  degraded. Returns how many were cleared: the engine then rewrites the
 *  bitmap pages that hold them. */
size_t clr_bmc_sweep(struct clr_bmc *b, uint64_t *cleared, size_t max);

/** Chunks whose bit is set (in memory, i.e. what the disk has or is about
 *  to have). */
uint64_t clr_bmc_dirty_chunks(const struct clr_bmc *b);

/** True if chunk @chunk is dirty / needs resync / has writes pending. */
bool clr_bmc_is_dirty(const struct clr_bmc *b, uint64_t chunk);
bool clr_bmc_is_needed(const struct clr_bmc *b, uint64_t chunk);
unsigned clr_bmc_pending(const struct clr_bmc *b, uint64_t chunk);

#endif
