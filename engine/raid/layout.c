/* RAID geometry and mapping, md-compatible. See layout.h. */
#include <errno.h>
#include <string.h>

#include "raid/layout.h"

static bool is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

/* md refuses chunks below one page or not a power of two (raid10
 * setup_geo, raid5 setup_conf). */
static int check_chunk(const struct clr_raid_geom *g, struct clr_err *e)
{
    if (g->chunk_sectors < 8 || !is_pow2(g->chunk_sectors))
        return clr_err_set(e, -EINVAL,
                           "raid%d chunk of %u sectors is invalid: it must be a "
                           "power of two of at least 8 sectors (4 KiB)",
                           g->level, g->chunk_sectors);
    return 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* ------------------------------------------------------------------ */
/* RAID1                                                              */
/* ------------------------------------------------------------------ */

static int raid1_setup(struct clr_raid_geom *g, struct clr_err *e)
{
    if (g->raid_disks < 1)
        return clr_err_set(e, -EINVAL, "raid1 needs at least 1 member");
    if (!g->dev_sectors)
        return clr_err_set(e, -EINVAL, "raid1 member size is 0 sectors");
    g->copies = g->raid_disks;
    g->used_dev_sectors = g->dev_sectors;
    g->array_sectors = g->dev_sectors;
    return 0;
}

static int raid1_map(const struct clr_raid_geom *g, uint64_t ls, struct clr_raid_extent *x)
{
    x->lsector = ls;
    x->run = g->array_sectors - ls;
    x->ncopies = g->raid_disks;
    for (uint32_t i = 0; i < g->raid_disks; i++) {
        x->copy[i].disk = i;
        x->copy[i].sector = ls;
    }
    return 0;
}

static int raid1_unmap(const struct clr_raid_geom *g, uint32_t disk, uint64_t ds, struct clr_raid_phys *p)
{
    (void)disk; /* every member holds the same sectors */
    if (ds < g->array_sectors) {
        p->role = CLR_RAID_ROLE_DATA;
        p->lsector = ds;
    }
    return 0;
}

static bool raid1_enough(const struct clr_raid_geom *g, const bool *failed)
{
    for (uint32_t i = 0; i < g->raid_disks; i++)
        if (!failed[i])
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* RAID10: md's near / far / offset layouts                           */
/* ------------------------------------------------------------------ */

uint64_t clr_raid10_size(const struct clr_raid_geom *g, uint64_t dev_sectors)
{
    uint64_t chunks = dev_sectors / g->chunk_sectors;

    chunks /= g->far_copies;
    chunks = chunks * g->raid_disks / g->near_copies;
    return chunks * g->chunk_sectors;
}

static int raid10_setup(struct clr_raid_geom *g, struct clr_err *e)
{
    uint32_t nc = CLR_RAID10_NEAR(g->layout);
    uint32_t fc = CLR_RAID10_FAR(g->layout);
    uint32_t n = g->raid_disks;
    int rc;

    if (g->layout >> 19)
        return clr_err_set(e, -EINVAL, "raid10 layout 0x%x has unknown bits above bit 18", g->layout);
    rc = check_chunk(g, e);
    if (rc)
        return rc;
    if (nc * fc < 2 || nc * fc > n)
        return clr_err_set(e, -EINVAL,
                           "raid10 layout 0x%x gives %u copies (near %u x far %u) "
                           "on %u members: need 2..%u copies",
                           g->layout, nc * fc, nc, fc, n, n);
    /* md's find_phys moves a wrapped near copy down one chunk row, but
     * in the offset layout that row belongs to the far copies: two chunks
     * would share one place. md does not check; we refuse. */
    if ((g->layout & CLR_RAID10_OFFSET) && fc > 1 && nc > 1 && n % nc)
        return clr_err_set(e, -EINVAL,
                           "raid10 layout 0x%x (offset, %u near copies) on %u "
                           "members overlaps copies; use a member count that is "
                           "a multiple of %u",
                           g->layout, nc, n, nc);
    g->near_copies = nc;
    g->far_copies = fc;
    g->copies = nc * fc;
    g->far_offset = (g->layout & CLR_RAID10_OFFSET) != 0;
    switch (CLR_RAID10_FARSET(g->layout)) {
    case 0: /* md's original layout */
        g->far_set_size = n;
        break;
    case 1: /* md's first, buggy "improved" layout */
        g->far_set_size = n / fc;
        /* With fewer disks in a far set than copies, md puts two copies
         * on one disk (it only warns); we refuse to run that. */
        if (fc > 1 && g->far_set_size < nc * fc)
            return clr_err_set(e, -EINVAL,
                               "raid10 layout 0x%x (far-set variant 1) would put "
                               "two copies on one disk with %u members; recreate "
                               "the array with a standard layout",
                               g->layout, n);
        break;
    case 2: /* md's fixed "improved" layout */
        g->far_set_size = fc * nc;
        break;
    default:
        return clr_err_set(e, -EINVAL, "raid10 layout 0x%x has unknown far-set variant 3", g->layout);
    }

    /* md's calc_sectors(): the member space the layout really uses, and
     * the distance between far copies. */
    uint64_t chunks = clr_raid10_size(g, g->dev_sectors) / g->chunk_sectors;
    uint64_t used = (chunks * g->copies + n - 1) / n; /* chunks per member */

    g->used_dev_sectors = used * g->chunk_sectors;
    g->stride = g->far_offset ? g->chunk_sectors : (used / fc) * g->chunk_sectors;
    g->array_sectors = clr_raid10_size(g, g->used_dev_sectors);
    if (g->array_sectors == 0)
        return clr_err_set(e, -EINVAL,
                           "member size %llu sectors is too small for raid10 "
                           "layout 0x%x with %u-sector chunks",
                           (unsigned long long)g->dev_sectors, g->layout, g->chunk_sectors);
    return 0;
}

/* Mirrors md's __raid10_find_phys, including the far-set wrap: the far
 * copies rotate by near_copies within the member's far set, and the last
 * set absorbs the members left over when raid_disks is not a multiple of
 * the set size. */
static int raid10_map(const struct clr_raid_geom *g, uint64_t ls, struct clr_raid_extent *x)
{
    uint32_t n = g->raid_disks, nc = g->near_copies, fc = g->far_copies;
    uint32_t fss = g->far_set_size;
    uint32_t last_start = (n / fss - 1) * fss;
    uint32_t last_size = fss + n % fss;
    uint64_t chunk = ls / g->chunk_sectors;
    uint64_t off = ls % g->chunk_sectors;
    uint64_t row = chunk * nc / n;
    uint32_t dev = (uint32_t)(chunk * nc % n);
    uint32_t slot = 0;

    if (g->far_offset)
        row *= fc;
    uint64_t sector = off + row * g->chunk_sectors;

    for (uint32_t i = 0; i < nc; i++) {
        uint32_t d = dev;
        uint64_t s = sector;

        x->copy[slot].disk = d;
        x->copy[slot++].sector = s;
        for (uint32_t f = 1; f < fc; f++) {
            uint32_t set = d / fss;

            d += nc;
            if ((n % fss) && d > last_start) {
                d = (d - last_start) % last_size + last_start;
            } else {
                d %= fss;
                d += fss * set;
            }
            s += g->stride;
            x->copy[slot].disk = d;
            x->copy[slot++].sector = s;
        }
        if (++dev >= n) {
            dev = 0;
            sector += g->chunk_sectors;
        }
    }
    x->lsector = ls;
    x->ncopies = slot;
    x->run = min_u64(g->chunk_sectors - off, g->array_sectors - ls);
    return 0;
}

/* Mirrors md's raid10_find_virt, then confirms by mapping forward: the
 * inverse formula also yields numbers for padding sectors no logical
 * sector maps to. */
static int raid10_unmap(const struct clr_raid_geom *g, uint32_t disk, uint64_t ds, struct clr_raid_phys *p)
{
    int64_t n = g->raid_disks, nc = g->near_copies, fss = g->far_set_size;
    int64_t set_start = (disk / fss) * fss;
    int64_t set_size = fss;
    int64_t dev = disk;
    uint64_t sector = ds, chunk;
    uint64_t off = ds % g->chunk_sectors;

    if (ds >= g->used_dev_sectors)
        return 0;
    if (n % fss) {
        int64_t last_start = (n / fss - 1) * fss;

        if (dev >= last_start) {
            set_size = fss + n % fss;
            set_start = last_start;
        }
    }
    if (g->far_offset) {
        chunk = sector / g->chunk_sectors;
        int64_t fcopy = (int64_t)(chunk % g->far_copies);

        chunk /= g->far_copies;
        dev -= fcopy * nc;
        while (dev < set_start)
            dev += set_size;
    } else {
        while (sector >= g->stride) {
            sector -= g->stride;
            if (dev < nc + set_start)
                dev += set_size - nc;
            else
                dev -= nc;
        }
        chunk = sector / g->chunk_sectors;
    }
    uint64_t vchunk = (chunk * (uint64_t)n + (uint64_t)dev) / (uint64_t)nc;
    uint64_t ls = vchunk * g->chunk_sectors + off;

    if (ls >= g->array_sectors)
        return 0;

    struct clr_raid_extent x;

    raid10_map(g, ls, &x);
    for (uint32_t i = 0; i < x.ncopies; i++) {
        if (x.copy[i].disk == disk && x.copy[i].sector == ds) {
            p->role = CLR_RAID_ROLE_DATA;
            p->lsector = ls;
            return 0;
        }
    }
    return 0;
}

/* Exact rather than md's approximation: the disk set of chunk c depends
 * only on c * near_copies mod raid_disks, so the first raid_disks chunks
 * cover every set. */
static bool raid10_enough(const struct clr_raid_geom *g, const bool *failed)
{
    uint64_t chunks = g->array_sectors / g->chunk_sectors;
    struct clr_raid_extent x;

    for (uint64_t c = 0; c < min_u64(chunks, g->raid_disks); c++) {
        bool alive = false;

        raid10_map(g, c * g->chunk_sectors, &x);
        for (uint32_t i = 0; i < x.ncopies && !alive; i++)
            alive = !failed[x.copy[i].disk];
        if (!alive)
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* RAID5 / RAID6                                                      */
/* ------------------------------------------------------------------ */

static bool algo_valid(int level, uint32_t a)
{
    if (a <= CLR_RAID_ALGO_PARITY_N)
        return true;
    return level == CLR_RAID_LEVEL6 &&
           ((a >= CLR_RAID_ALGO_ROTATING_ZERO_RESTART && a <= CLR_RAID_ALGO_ROTATING_N_CONTINUE) ||
            (a >= CLR_RAID_ALGO_LEFT_ASYMMETRIC_6 && a <= CLR_RAID_ALGO_PARITY_0_6));
}

static bool algo_is_ddf(uint32_t a)
{
    return a >= CLR_RAID_ALGO_ROTATING_ZERO_RESTART && a <= CLR_RAID_ALGO_ROTATING_N_CONTINUE;
}

static int raid56_setup(struct clr_raid_geom *g, struct clr_err *e)
{
    uint32_t parity = g->level == CLR_RAID_LEVEL6 ? 2 : 1;
    uint32_t min_disks = g->level == CLR_RAID_LEVEL6 ? 4 : 2;
    int rc;

    if (!algo_valid(g->level, g->layout))
        return clr_err_set(e, -EINVAL, "raid%d layout %u is not an md raid%d layout", g->level, g->layout,
                           g->level);
    rc = check_chunk(g, e);
    if (rc)
        return rc;
    if (g->raid_disks < min_disks)
        return clr_err_set(e, -EINVAL, "raid%d needs at least %u members, got %u", g->level, min_disks,
                           g->raid_disks);
    g->data_disks = g->raid_disks - parity;
    g->copies = 1;
    g->used_dev_sectors = g->dev_sectors / g->chunk_sectors * g->chunk_sectors;
    g->array_sectors = g->used_dev_sectors * g->data_disks;
    if (g->array_sectors == 0)
        return clr_err_set(e, -EINVAL, "member size %llu sectors is smaller than one %u-sector chunk",
                           (unsigned long long)g->dev_sectors, g->chunk_sectors);
    return 0;
}

/* P and Q members of a stripe, as md's raid5_compute_sector picks them. */
static void r56_parity(const struct clr_raid_geom *g, uint64_t stripe, uint32_t *pd, uint32_t *qd)
{
    uint32_t n = g->raid_disks, dd = g->data_disks;
    uint32_t r = (uint32_t)(stripe % n);
    uint32_t r6 = (uint32_t)(stripe % (n - 1));

    *qd = CLR_RAID_NO_DISK;
    if (g->level == CLR_RAID_LEVEL5) {
        switch (g->layout) {
        case CLR_RAID_ALGO_LEFT_ASYMMETRIC:
        case CLR_RAID_ALGO_LEFT_SYMMETRIC:
            *pd = dd - r;
            break;
        case CLR_RAID_ALGO_RIGHT_ASYMMETRIC:
        case CLR_RAID_ALGO_RIGHT_SYMMETRIC:
            *pd = r;
            break;
        case CLR_RAID_ALGO_PARITY_0:
            *pd = 0;
            break;
        default: /* PARITY_N */
            *pd = dd;
            break;
        }
        return;
    }
    switch (g->layout) {
    case CLR_RAID_ALGO_LEFT_ASYMMETRIC:
    case CLR_RAID_ALGO_RIGHT_ASYMMETRIC:
    case CLR_RAID_ALGO_ROTATING_ZERO_RESTART:
    case CLR_RAID_ALGO_ROTATING_N_RESTART:
        if (g->layout == CLR_RAID_ALGO_LEFT_ASYMMETRIC)
            *pd = n - 1 - r;
        else if (g->layout == CLR_RAID_ALGO_ROTATING_N_RESTART)
            *pd = n - 1 - (uint32_t)((stripe + 1) % n);
        else
            *pd = r;
        /* Q follows P, wrapping to disk 0 when P is last. */
        *qd = *pd == n - 1 ? 0 : *pd + 1;
        break;
    case CLR_RAID_ALGO_LEFT_SYMMETRIC:
        *pd = n - 1 - r;
        *qd = (*pd + 1) % n;
        break;
    case CLR_RAID_ALGO_RIGHT_SYMMETRIC:
        *pd = r;
        *qd = (*pd + 1) % n;
        break;
    case CLR_RAID_ALGO_PARITY_0:
        *pd = 0;
        *qd = 1;
        break;
    case CLR_RAID_ALGO_PARITY_N:
        *pd = dd;
        *qd = dd + 1;
        break;
    case CLR_RAID_ALGO_ROTATING_N_CONTINUE:
        *pd = n - 1 - r;
        *qd = (*pd + n - 1) % n;
        break;
    case CLR_RAID_ALGO_LEFT_ASYMMETRIC_6:
    case CLR_RAID_ALGO_LEFT_SYMMETRIC_6:
        *pd = dd - r6;
        *qd = n - 1;
        break;
    case CLR_RAID_ALGO_RIGHT_ASYMMETRIC_6:
    case CLR_RAID_ALGO_RIGHT_SYMMETRIC_6:
        *pd = r6;
        *qd = n - 1;
        break;
    default: /* PARITY_0_6 */
        *pd = 0;
        *qd = n - 1;
        break;
    }
}

/* Member holding data chunk @k of a stripe whose parity sits on @pd/@qd
 * (md's dd_idx adjustment for each algorithm). */
static uint32_t r56_data_disk(const struct clr_raid_geom *g, uint32_t pd, uint32_t k)
{
    uint32_t n = g->raid_disks;

    if (g->level == CLR_RAID_LEVEL5) {
        switch (g->layout) {
        case CLR_RAID_ALGO_LEFT_ASYMMETRIC:
        case CLR_RAID_ALGO_RIGHT_ASYMMETRIC:
            return k >= pd ? k + 1 : k;
        case CLR_RAID_ALGO_LEFT_SYMMETRIC:
        case CLR_RAID_ALGO_RIGHT_SYMMETRIC:
            return (pd + 1 + k) % n;
        case CLR_RAID_ALGO_PARITY_0:
            return k + 1;
        default:
            return k;
        }
    }
    switch (g->layout) {
    case CLR_RAID_ALGO_LEFT_ASYMMETRIC:
    case CLR_RAID_ALGO_RIGHT_ASYMMETRIC:
    case CLR_RAID_ALGO_ROTATING_ZERO_RESTART:
    case CLR_RAID_ALGO_ROTATING_N_RESTART:
        if (pd == n - 1)
            return k + 1; /* Q on disk 0 */
        return k >= pd ? k + 2 : k;
    case CLR_RAID_ALGO_LEFT_SYMMETRIC:
    case CLR_RAID_ALGO_RIGHT_SYMMETRIC:
        return (pd + 2 + k) % n;
    case CLR_RAID_ALGO_PARITY_0:
        return k + 2;
    case CLR_RAID_ALGO_PARITY_N:
        return k;
    case CLR_RAID_ALGO_ROTATING_N_CONTINUE:
        return (pd + 1 + k) % n;
    case CLR_RAID_ALGO_LEFT_ASYMMETRIC_6:
    case CLR_RAID_ALGO_RIGHT_ASYMMETRIC_6:
        return k >= pd ? k + 1 : k;
    case CLR_RAID_ALGO_LEFT_SYMMETRIC_6:
    case CLR_RAID_ALGO_RIGHT_SYMMETRIC_6:
        return (pd + 1 + k) % (n - 1);
    default: /* PARITY_0_6 */
        return k + 1;
    }
}

/* Inverse of r56_data_disk (md's raid5_compute_blocknr); @i is neither
 * P nor Q. */
static uint32_t r56_data_index(const struct clr_raid_geom *g, uint32_t pd, uint32_t i)
{
    uint32_t n = g->raid_disks;

    if (g->level == CLR_RAID_LEVEL5) {
        switch (g->layout) {
        case CLR_RAID_ALGO_LEFT_ASYMMETRIC:
        case CLR_RAID_ALGO_RIGHT_ASYMMETRIC:
            return i > pd ? i - 1 : i;
        case CLR_RAID_ALGO_LEFT_SYMMETRIC:
        case CLR_RAID_ALGO_RIGHT_SYMMETRIC:
            return (i < pd ? i + n : i) - (pd + 1);
        case CLR_RAID_ALGO_PARITY_0:
            return i - 1;
        default:
            return i;
        }
    }
    switch (g->layout) {
    case CLR_RAID_ALGO_LEFT_ASYMMETRIC:
    case CLR_RAID_ALGO_RIGHT_ASYMMETRIC:
    case CLR_RAID_ALGO_ROTATING_ZERO_RESTART:
    case CLR_RAID_ALGO_ROTATING_N_RESTART:
        if (pd == n - 1)
            return i - 1;
        return i > pd ? i - 2 : i;
    case CLR_RAID_ALGO_LEFT_SYMMETRIC:
    case CLR_RAID_ALGO_RIGHT_SYMMETRIC:
        if (pd == n - 1)
            return i - 1;
        return (i < pd ? i + n : i) - (pd + 2);
    case CLR_RAID_ALGO_PARITY_0:
        return i - 2;
    case CLR_RAID_ALGO_PARITY_N:
        return i;
    case CLR_RAID_ALGO_ROTATING_N_CONTINUE:
        if (pd == 0)
            return i - 1;
        return (i < pd ? i + n : i) - (pd + 1);
    case CLR_RAID_ALGO_LEFT_ASYMMETRIC_6:
    case CLR_RAID_ALGO_RIGHT_ASYMMETRIC_6:
        return i > pd ? i - 1 : i;
    case CLR_RAID_ALGO_LEFT_SYMMETRIC_6:
    case CLR_RAID_ALGO_RIGHT_SYMMETRIC_6:
        return (i < pd ? i + n - 1 : i) - (pd + 1);
    default: /* PARITY_0_6 */
        return i - 1;
    }
}

int clr_raid_stripe_roles(const struct clr_raid_geom *g, uint64_t stripe, struct clr_raid_stripe *st)
{
    uint8_t slot_of[CLR_RAID_MAX_DISKS];
    uint32_t n = g->raid_disks;

    if (!g->pers || !g->pers->has_parity)
        return -EINVAL;
    st->stripe = stripe;
    st->ndata = g->data_disks;
    r56_parity(g, stripe, &st->pd, &st->qd);
    for (uint32_t k = 0; k < g->data_disks; k++) {
        st->data_disk[k] = r56_data_disk(g, st->pd, k);
        st->qexp[k] = (uint8_t)k; /* defined for RAID5 too: no Q there */
    }
    if (g->level != CLR_RAID_LEVEL6)
        return 0;

    /* md's syndrome order (raid6_d0 / raid6_idx_to_slot): DDF layouts use
     * the member index; md's own walk the members from just after Q
     * (from disk 0 when Q is last), numbering data disks as met. */
    if (algo_is_ddf(g->layout)) {
        for (uint32_t i = 0; i < n; i++)
            slot_of[i] = (uint8_t)i;
    } else {
        uint32_t d = st->qd == n - 1 ? 0 : st->qd + 1;
        uint8_t count = 0;

        for (uint32_t j = 0; j < n; j++, d = (d + 1) % n)
            if (d != st->pd && d != st->qd)
                slot_of[d] = count++;
    }
    for (uint32_t k = 0; k < g->data_disks; k++)
        st->qexp[k] = slot_of[st->data_disk[k]];
    return 0;
}

int clr_raid_stripe_block(const struct clr_raid_stripe *st, uint32_t disk)
{
    if (disk == st->pd)
        return (int)st->ndata;
    if (disk == st->qd)
        return (int)st->ndata + 1;
    for (uint32_t k = 0; k < st->ndata; k++)
        if (st->data_disk[k] == disk)
            return (int)k;
    return -ENOENT;
}

static int raid56_map(const struct clr_raid_geom *g, uint64_t ls, struct clr_raid_extent *x)
{
    uint64_t chunk = ls / g->chunk_sectors;
    uint64_t off = ls % g->chunk_sectors;
    uint32_t pd, qd;

    x->stripe = chunk / g->data_disks;
    x->data_index = (uint32_t)(chunk % g->data_disks);
    r56_parity(g, x->stripe, &pd, &qd);
    x->lsector = ls;
    x->ncopies = 1;
    x->copy[0].disk = r56_data_disk(g, pd, x->data_index);
    x->copy[0].sector = x->stripe * g->chunk_sectors + off;
    x->run = g->chunk_sectors - off;
    return 0;
}

static int raid56_unmap(const struct clr_raid_geom *g, uint32_t disk, uint64_t ds, struct clr_raid_phys *p)
{
    uint64_t stripe = ds / g->chunk_sectors;
    uint32_t pd, qd;

    if (ds >= g->used_dev_sectors)
        return 0;
    r56_parity(g, stripe, &pd, &qd);
    p->stripe = stripe;
    if (disk == pd) {
        p->role = CLR_RAID_ROLE_P;
    } else if (disk == qd) {
        p->role = CLR_RAID_ROLE_Q;
    } else {
        p->role = CLR_RAID_ROLE_DATA;
        p->data_index = r56_data_index(g, pd, disk);
        p->lsector = (stripe * g->data_disks + p->data_index) * g->chunk_sectors + ds % g->chunk_sectors;
    }
    return 0;
}

static bool raid56_enough(const struct clr_raid_geom *g, const bool *failed)
{
    uint32_t nfailed = 0;

    for (uint32_t i = 0; i < g->raid_disks; i++)
        nfailed += failed[i];
    return nfailed <= g->raid_disks - g->data_disks;
}

/* ------------------------------------------------------------------ */
/* Personality table and generic entry points                         */
/* ------------------------------------------------------------------ */

static const struct clr_raid_personality personalities[] = {
    { .name = "raid1",
      .level = CLR_RAID_LEVEL1,
      .has_parity = false,
      .setup = raid1_setup,
      .map = raid1_map,
      .unmap = raid1_unmap,
      .enough = raid1_enough },
    { .name = "raid10",
      .level = CLR_RAID_LEVEL10,
      .has_parity = false,
      .setup = raid10_setup,
      .map = raid10_map,
      .unmap = raid10_unmap,
      .enough = raid10_enough },
    { .name = "raid5",
      .level = CLR_RAID_LEVEL5,
      .has_parity = true,
      .setup = raid56_setup,
      .map = raid56_map,
      .unmap = raid56_unmap,
      .enough = raid56_enough },
    { .name = "raid6",
      .level = CLR_RAID_LEVEL6,
      .has_parity = true,
      .setup = raid56_setup,
      .map = raid56_map,
      .unmap = raid56_unmap,
      .enough = raid56_enough },
};

const struct clr_raid_personality *clr_raid_personality_find(int level)
{
    for (size_t i = 0; i < sizeof personalities / sizeof personalities[0]; i++)
        if (personalities[i].level == level)
            return &personalities[i];
    return NULL;
}

int clr_raid_geom_init(struct clr_raid_geom *g, int level, uint32_t layout, uint32_t chunk_sectors,
                       uint32_t raid_disks, uint64_t dev_sectors, struct clr_err *e)
{
    const struct clr_raid_personality *pers = clr_raid_personality_find(level);

    memset(g, 0, sizeof *g);
    g->level = level;
    g->layout = layout;
    g->chunk_sectors = level == CLR_RAID_LEVEL1 ? 0 : chunk_sectors;
    g->raid_disks = raid_disks;
    g->dev_sectors = dev_sectors;
    if (!pers)
        return clr_err_set(e, -EOPNOTSUPP,
                           "md level %d is not supported (clraid runs raid1, "
                           "raid10, raid5 and raid6)",
                           level);
    if (raid_disks > CLR_RAID_MAX_DISKS)
        return clr_err_set(e, -EINVAL, "%u members is more than the %u clraid supports", raid_disks,
                           CLR_RAID_MAX_DISKS);

    int rc = pers->setup(g, e);

    if (rc)
        return rc;
    g->pers = pers;
    return 0;
}

uint64_t clr_raid_array_sectors(const struct clr_raid_geom *g)
{
    return g->array_sectors;
}

int clr_raid_map(const struct clr_raid_geom *g, uint64_t lsector, struct clr_raid_extent *x)
{
    if (!g->pers)
        return -EINVAL;
    if (lsector >= g->array_sectors)
        return -ERANGE;
    x->stripe = 0;
    x->data_index = 0;
    return g->pers->map(g, lsector, x);
}

int clr_raid_unmap(const struct clr_raid_geom *g, uint32_t disk, uint64_t dsector, struct clr_raid_phys *p)
{
    if (!g->pers || disk >= g->raid_disks)
        return -EINVAL;
    memset(p, 0, sizeof *p);
    p->role = CLR_RAID_ROLE_UNUSED;
    return g->pers->unmap(g, disk, dsector, p);
}

uint64_t clr_raid_stripe_sectors(const struct clr_raid_geom *g)
{
    switch (g->level) {
    case CLR_RAID_LEVEL5:
    case CLR_RAID_LEVEL6:
        return (uint64_t)g->chunk_sectors * g->data_disks;
    case CLR_RAID_LEVEL10:
        if (g->raid_disks % g->near_copies)
            return (uint64_t)g->chunk_sectors * g->raid_disks;
        return (uint64_t)g->chunk_sectors * (g->raid_disks / g->near_copies);
    default:
        return 8;
    }
}

bool clr_raid_is_full_stripes(const struct clr_raid_geom *g, uint64_t lsector, uint64_t nsectors)
{
    uint64_t ss = clr_raid_stripe_sectors(g);

    return nsectors && ss && lsector % ss == 0 && nsectors % ss == 0 && lsector < g->array_sectors &&
           nsectors <= g->array_sectors - lsector;
}

int clr_raid_stripe_of(const struct clr_raid_geom *g, uint64_t lsector, uint64_t *stripe, uint64_t *first,
                       uint64_t *nsectors)
{
    uint64_t ss;

    if (!g->pers || !g->pers->has_parity)
        return -EINVAL;
    if (lsector >= g->array_sectors)
        return -ERANGE;
    ss = clr_raid_stripe_sectors(g);
    *stripe = lsector / ss;
    *first = *stripe * ss;
    *nsectors = ss;
    return 0;
}

uint64_t clr_raid_chunk_piece(const struct clr_raid_geom *g, uint64_t lsector, uint64_t nsectors)
{
    uint64_t len;

    if (lsector >= g->array_sectors)
        return 0;
    len = min_u64(nsectors, g->array_sectors - lsector);
    if (g->chunk_sectors)
        len = min_u64(len, g->chunk_sectors - lsector % g->chunk_sectors);
    return len;
}

uint64_t clr_raid_stripe_piece(const struct clr_raid_geom *g, uint64_t lsector, uint64_t nsectors)
{
    uint64_t len;

    if (lsector >= g->array_sectors)
        return 0;
    len = min_u64(nsectors, g->array_sectors - lsector);
    if (g->level != CLR_RAID_LEVEL1) {
        uint64_t ss = clr_raid_stripe_sectors(g);

        len = min_u64(len, ss - lsector % ss);
    }
    return len;
}

const char *clr_raid_algo_name(uint32_t algo)
{
    static const struct {
        uint32_t algo;
        const char *name;
    } names[] = {
        { CLR_RAID_ALGO_LEFT_ASYMMETRIC, "left-asymmetric" },
        { CLR_RAID_ALGO_RIGHT_ASYMMETRIC, "right-asymmetric" },
        { CLR_RAID_ALGO_LEFT_SYMMETRIC, "left-symmetric" },
        { CLR_RAID_ALGO_RIGHT_SYMMETRIC, "right-symmetric" },
        { CLR_RAID_ALGO_PARITY_0, "parity-first" },
        { CLR_RAID_ALGO_PARITY_N, "parity-last" },
        { CLR_RAID_ALGO_ROTATING_ZERO_RESTART, "ddf-zero-restart" },
        { CLR_RAID_ALGO_ROTATING_N_RESTART, "ddf-N-restart" },
        { CLR_RAID_ALGO_ROTATING_N_CONTINUE, "ddf-N-continue" },
        { CLR_RAID_ALGO_LEFT_ASYMMETRIC_6, "left-asymmetric-6" },
        { CLR_RAID_ALGO_RIGHT_ASYMMETRIC_6, "right-asymmetric-6" },
        { CLR_RAID_ALGO_LEFT_SYMMETRIC_6, "left-symmetric-6" },
        { CLR_RAID_ALGO_RIGHT_SYMMETRIC_6, "right-symmetric-6" },
        { CLR_RAID_ALGO_PARITY_0_6, "parity-first-6" },
    };

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].algo == algo)
            return names[i].name;
    return NULL;
}
