/* In-memory write-intent bitmap counters. See bitmap_counters.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid/bitmap_counters.h"

/* State word of one chunk: bits 0-15 pending writes, 16-23 idle sweeps,
 * bit 30 NEEDED (must be resynced before clearing), bit 31 DIRTY (the
 * bit is set on disk, or will be before any write under it). */
#define ST_PENDING   0x0000ffffU
#define ST_AGE_SHIFT 16
#define ST_AGE       0x00ff0000U
#define ST_NEEDED    0x40000000U
#define ST_DIRTY     0x80000000U

static unsigned st_age(uint32_t s)
{
    return (s & ST_AGE) >> ST_AGE_SHIFT;
}

int clr_bmc_init(struct clr_bmc *b, uint64_t sync_sectors, uint32_t chunk_sectors, unsigned idle_sweeps)
{
    memset(b, 0, sizeof *b);
    if (!sync_sectors || !chunk_sectors || (chunk_sectors & (chunk_sectors - 1)) || idle_sweeps > 255)
        return -EINVAL;
    b->sync_sectors = sync_sectors;
    b->chunk_sectors = chunk_sectors;
    b->nchunks = (sync_sectors + chunk_sectors - 1) / chunk_sectors;
    b->idle_sweeps = idle_sweeps ? idle_sweeps : CLR_BMC_DEFAULT_IDLE_SWEEPS;
    b->state = calloc(b->nchunks, sizeof *b->state);
    return b->state ? 0 : -ENOMEM;
}

void clr_bmc_free(struct clr_bmc *b)
{
    free(b->state);
    b->state = NULL;
}

uint64_t clr_bmc_load(struct clr_bmc *b, const uint8_t *bits, size_t nbytes)
{
    for (uint64_t c = 0; c < b->nchunks && c / 8 < nbytes; c++) {
        if (!(bits[c / 8] & (1U << (c % 8))))
            continue;
        if (!(b->state[c] & ST_DIRTY))
            b->ndirty++;
        b->state[c] |= ST_DIRTY | ST_NEEDED;
    }
    return b->ndirty;
}

void clr_bmc_render(const struct clr_bmc *b, uint64_t first, uint64_t nbits, uint8_t *bits)
{
    memset(bits, 0, (nbits + 7) / 8);
    for (uint64_t i = 0; i < nbits; i++) {
        uint64_t c = first + i;

        if (c < b->nchunks && (b->state[c] & ST_DIRTY))
            bits[i / 8] |= (uint8_t)(1U << (i % 8));
    }
}

int clr_bmc_chunks(const struct clr_bmc *b, uint64_t sector, uint64_t nsectors, uint64_t *first,
                   uint64_t *last)
{
    if (!nsectors || sector >= b->sync_sectors || nsectors > b->sync_sectors - sector)
        return -ERANGE;
    *first = sector / b->chunk_sectors;
    *last = (sector + nsectors - 1) / b->chunk_sectors;
    return 0;
}

int clr_bmc_start_write(struct clr_bmc *b, uint64_t sector, uint64_t nsectors, uint64_t *first,
                        uint64_t *last)
{
    uint64_t f, l;
    int newly = 0;
    int rc = clr_bmc_chunks(b, sector, nsectors, &f, &l);

    if (rc)
        return rc;
    /* all or nothing, like md waiting on overflow_wait before counting */
    for (uint64_t c = f; c <= l; c++)
        if ((b->state[c] & ST_PENDING) == CLR_BMC_MAX_PENDING)
            return -EBUSY;
    for (uint64_t c = f; c <= l; c++) {
        uint32_t s = b->state[c];

        if (!(s & ST_DIRTY)) {
            s |= ST_DIRTY;
            b->ndirty++;
            newly++;
        }
        /* a write restarts the idle clock (md: counter back to 2+) */
        b->state[c] = (s & ~ST_AGE) + 1;
    }
    if (first)
        *first = f;
    if (last)
        *last = l;
    return newly;
}

int clr_bmc_end_write(struct clr_bmc *b, uint64_t sector, uint64_t nsectors, bool success)
{
    uint64_t f, l;
    int rc = clr_bmc_chunks(b, sector, nsectors, &f, &l);

    if (rc)
        return rc;
    for (uint64_t c = f; c <= l; c++)
        if (!(b->state[c] & ST_PENDING))
            return -EINVAL;
    for (uint64_t c = f; c <= l; c++) {
        uint32_t s = b->state[c] - 1;

        /* md: a write that did not reach every member leaves the chunk
         * needing resync, so the bit survives until then. */
        if (!success || b->degraded)
            s |= ST_NEEDED;
        b->state[c] = s & ~ST_AGE;
    }
    return 0;
}

void clr_bmc_set_degraded(struct clr_bmc *b, bool degraded)
{
    b->degraded = degraded;
}

int clr_bmc_sync_done(struct clr_bmc *b, uint64_t sector, uint64_t nsectors)
{
    uint64_t f, l, end = sector + nsectors;
    int rc = clr_bmc_chunks(b, sector, nsectors, &f, &l);

    if (rc)
        return rc;
    for (uint64_t c = f; c <= l; c++) {
        uint64_t cs = c * b->chunk_sectors;
        uint64_t ce = cs + b->chunk_sectors;

        if (ce > b->sync_sectors)
            ce = b->sync_sectors;
        if (cs >= sector && ce <= end)
            b->state[c] &= ~(ST_NEEDED | ST_AGE);
    }
    return 0;
}

int clr_bmc_mark_needed(struct clr_bmc *b, uint64_t sector, uint64_t nsectors)
{
    uint64_t f, l;
    int newly = 0;
    int rc = clr_bmc_chunks(b, sector, nsectors, &f, &l);

    if (rc)
        return rc;
    for (uint64_t c = f; c <= l; c++) {
        if (!(b->state[c] & ST_DIRTY)) {
            b->ndirty++;
            newly++;
        }
        b->state[c] = (b->state[c] | ST_DIRTY | ST_NEEDED) & ~ST_AGE;
    }
    return newly;
}

size_t clr_bmc_sweep(struct clr_bmc *b, uint64_t *cleared, size_t max)
{
    size_t n = 0;

    if (b->degraded || !b->ndirty)
        return 0;
    for (uint64_t c = 0; c < b->nchunks; c++) {
        uint32_t s = b->state[c];

        if (!(s & ST_DIRTY) || (s & (ST_NEEDED | ST_PENDING)))
            continue;
        if (st_age(s) + 1 < b->idle_sweeps) {
            b->state[c] = s + (1U << ST_AGE_SHIFT);
            continue;
        }
        if (n == max)
            continue; /* ripe; cleared on a later pass */
        b->state[c] = 0;
        b->ndirty--;
        cleared[n++] = c;
    }
    return n;
}

uint64_t clr_bmc_dirty_chunks(const struct clr_bmc *b)
{
    return b->ndirty;
}

bool clr_bmc_is_dirty(const struct clr_bmc *b, uint64_t chunk)
{
    return chunk < b->nchunks && (b->state[chunk] & ST_DIRTY);
}

bool clr_bmc_is_needed(const struct clr_bmc *b, uint64_t chunk)
{
    return chunk < b->nchunks && (b->state[chunk] & ST_NEEDED);
}

unsigned clr_bmc_pending(const struct clr_bmc *b, uint64_t chunk)
{
    return chunk < b->nchunks ? b->state[chunk] & ST_PENDING : 0;
}
