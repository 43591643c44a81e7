/* clraid array core: assembly (read and judge every member, write nothing)
 * and the plain accessors. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array/array_internal.h"

struct probe {
    const char *path;
    struct stat st;
    uint64_t sectors;
    uint32_t lbs; /* logical block size */
    struct clr_md_sb sb;
    struct clr_bitmap_sb bsb;
    uint8_t *region; /* this slot's bitmap region; every
                                     * slot's, one after another, when
                                     * nregions > 1 */
    uint32_t nregions;
    int role;
    bool excluded; /* stale or faulty, left out (SKIP_STALE) */
};

static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;

    while (done < len) {
        ssize_t r = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -EIO;
        done += (size_t)r;
    }
    return 0;
}

/* Reads one member's superblock and this slot's bitmap region (@all: the
 * regions of every slot, @slot being 0). */
static int probe_member(struct probe *p, uint32_t slot, bool all, struct clr_err *e)
{
    uint8_t buf[CLR_MD_SB_AREA_BYTES];
    struct clr_err de;
    uint64_t stride, off;
    int fd, rc;

    fd = open(p->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return clr_err_set(e, -errno, "%s: cannot open: %s", p->path, strerror(errno));
    if (fstat(fd, &p->st) < 0) {
        rc = clr_err_set(e, -errno, "%s: cannot stat: %s", p->path, strerror(errno));
        goto out;
    }
    if (S_ISBLK(p->st.st_mode)) {
        uint64_t bytes;

        if (ioctl(fd, BLKGETSIZE64, &bytes) < 0) {
            rc = clr_err_set(e, -errno, "%s: cannot get size: %s", p->path, strerror(errno));
            goto out;
        }
        int ss = 0;

        p->sectors = bytes / ARR_SECTOR;
        p->lbs = ioctl(fd, BLKSSZGET, &ss) == 0 && ss > 0 ? (uint32_t)ss : ARR_SECTOR;
    } else if (S_ISREG(p->st.st_mode)) {
        p->sectors = (uint64_t)p->st.st_size / ARR_SECTOR;
        p->lbs = ARR_SECTOR; /* run() asks the I/O layer for the real one */
    } else {
        rc = clr_err_set(e, -EINVAL, "%s: not a block device or regular file", p->path);
        goto out;
    }
    rc = read_full(fd, buf, sizeof buf, CLR_MD_V12_SB_SECTOR * ARR_SECTOR);
    if (rc) {
        clr_err_set(e, rc, "%s: cannot read the superblock: %s (is the device too small?)", p->path,
                    strerror(-rc));
        goto out;
    }
    rc = clr_md_sb_decode(buf, sizeof buf, p->sectors, &p->sb, &de);
    if (rc) {
        clr_err_set(e, rc, "%s: not a usable md member: %s", p->path, de.msg);
        goto out;
    }
    if (!(p->sb.feature_map & CLR_MD_FEAT_BITMAP_OFFSET)) {
        rc = clr_err_set(e, -EPROTO,
                         "%s: the array has no write-intent bitmap; recreate it with clraid create", p->path);
        goto out;
    }
    off = (p->sb.super_offset + (uint64_t)(int64_t)p->sb.bitmap_offset) * ARR_SECTOR;
    rc = read_full(fd, buf, CLR_BITMAP_SB_BYTES, off);
    if (rc == 0)
        rc = clr_bitmap_sb_decode(buf, CLR_BITMAP_SB_BYTES, p->sb.set_uuid, &p->bsb, &de);
    else
        snprintf(de.msg, sizeof de.msg, "%s", strerror(-rc));
    if (rc) {
        clr_err_set(e, rc, "%s: bad bitmap: %s", p->path, de.msg);
        goto out;
    }
    if (slot >= clr_bitmap_slots(&p->bsb)) {
        rc = clr_err_set(e, -ERANGE, "%s: bitmap has %u slots, this node needs slot %u", p->path,
                         clr_bitmap_slots(&p->bsb), slot);
        goto out;
    }
    rc = clr_bitmap_check_fits(&p->sb, &p->bsb, &de);
    if (rc) {
        clr_err_set(e, rc, "%s: bad bitmap: %s", p->path, de.msg);
        goto out;
    }
    stride = clr_bitmap_stride_bytes(p->bsb.sync_size, p->bsb.chunksize);
    p->nregions = all ? clr_bitmap_slots(&p->bsb) : 1;
    p->region = aligned_alloc(CLR_IO_ALIGN,
                              (stride * p->nregions + CLR_IO_ALIGN - 1) & ~(uint64_t)(CLR_IO_ALIGN - 1));
    if (!p->region) {
        rc = clr_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    rc = read_full(fd, p->region, stride * p->nregions, clr_bitmap_slot_offset(&p->sb, &p->bsb, slot));
    if (rc)
        clr_err_set(e, rc, "%s: cannot read bitmap slot %u: %s", p->path, slot, strerror(-rc));
out:
    close(fd);
    return rc;
}

static bool same_geometry(const struct clr_md_sb *x, const struct clr_md_sb *y)
{
    return x->level == y->level && x->layout == y->layout && x->chunksize == y->chunksize &&
           x->raid_disks == y->raid_disks && x->size == y->size;
}

static void free_probes(struct probe *p, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        free(p[i].region);
    free(p);
}

/* Which array UUID most of the given devices carry. */
static unsigned majority(const struct probe *p, unsigned n)
{
    unsigned best = 0, bestc = 0;

    for (unsigned i = 0; i < n; i++) {
        unsigned c = 0;

        for (unsigned j = 0; j < n; j++)
            c += memcmp(p[i].sb.set_uuid, p[j].sb.set_uuid, 16) == 0;
        if (c > bestc) {
            bestc = c;
            best = i;
        }
    }
    return best;
}

/* A stale or faulty member: refused, or with CLR_ARRAY_SKIP_STALE left out
 * (never opened for writing) so the array can start degraded, as mdadm
 * --assemble --run does. Returns 0 when the member was left out. */
static int leave_out(struct probe *m, const struct clr_array_config *cfg, const char *why, uint64_t events,
                     uint64_t maxev, struct clr_err *e)
{
    char line[sizeof e->msg];

    snprintf(line, sizeof line,
             "%s: %s (events %" PRIu64 ", array at %" PRIu64
             "): start without it (or with --skip-stale), then re-add it with 'clraid re-add %s %s'",
             m->path, why, events, maxev, cfg->name ? cfg->name : "NAME", m->path);
    if (!(cfg->flags & CLR_ARRAY_SKIP_STALE))
        return clr_err_set(e, -ESTALE, "%s", line);
    m->excluded = true;
    m->role = -1;
    if (cfg->log) {
        char msg[sizeof e->msg + 32];

        snprintf(msg, sizeof msg, "left out %s", line);
        cfg->log(cfg->log_opaque, 4, msg);
    }
    return 0;
}

static int judge(struct probe *p, unsigned n, const struct clr_array_config *cfg, unsigned *freshest,
                 struct clr_err *e)
{
    const char *name = cfg->name ? cfg->name : "clraid";
    const struct probe *ref = &p[majority(p, n)];
    char u1[36], u2[36];
    uint64_t maxev = 0;
    unsigned f = 0;

    for (unsigned i = 0; i < n; i++) {
        if (memcmp(p[i].sb.set_uuid, ref->sb.set_uuid, 16) != 0) {
            clr_uuid_format_mdadm(p[i].sb.set_uuid, u1);
            clr_uuid_format_mdadm(ref->sb.set_uuid, u2);
            return clr_err_set(e, -EINVAL,
                               "%s: belongs to another array (UUID %s, not %s): leave it out of '%s'",
                               p[i].path, u1, u2, name);
        }
        for (unsigned j = 0; j < i; j++) {
            bool same_node = p[i].st.st_dev == p[j].st.st_dev && p[i].st.st_ino == p[j].st.st_ino;
            bool same_blk = S_ISBLK(p[i].st.st_mode) && p[i].st.st_rdev == p[j].st.st_rdev;

            if (same_node || same_blk || memcmp(p[i].sb.device_uuid, p[j].sb.device_uuid, 16) == 0)
                return clr_err_set(e, -EINVAL, "%s and %s are the same member: give each device once",
                                   p[j].path, p[i].path);
        }
        if (!same_geometry(&p[i].sb, &ref->sb))
            return clr_err_set(
                e, -EINVAL,
                "%s: geometry differs from %s (level/layout/chunk/size): the member is corrupt; leave it out and re-add it",
                p[i].path, ref->path);
        if (p[i].sb.events > maxev) {
            maxev = p[i].sb.events;
            f = i;
        }
    }
    *freshest = f;
    for (unsigned i = 0; i < n; i++) {
        const struct clr_md_sb *fs = &p[f].sb;
        uint16_t r;

        if (p[i].sb.events + 1 < maxev) {
            int rc = leave_out(&p[i], cfg, "stale member", p[i].sb.events, maxev, e);

            if (rc)
                return rc;
            continue;
        }
        if (p[i].sb.dev_number >= fs->max_dev)
            return clr_err_set(
                e, -EINVAL,
                "%s: device number %u is unknown to the array: leave it out and add it as a new device",
                p[i].path, p[i].sb.dev_number);
        r = fs->dev_roles[p[i].sb.dev_number];
        if (r == CLR_MD_ROLE_FAULTY) {
            int rc = leave_out(&p[i], cfg, "marked faulty in the array", p[i].sb.events, maxev, e);

            if (rc)
                return rc;
            continue;
        }
        if (r < CLR_MD_ROLE_MAX && r >= fs->raid_disks)
            return clr_err_set(e, -EINVAL, "%s: role %u beyond the array's %u devices: the member is corrupt",
                               p[i].path, r, fs->raid_disks);
        p[i].role = r < CLR_MD_ROLE_MAX ? r : -1;
        for (unsigned j = 0; j < i; j++)
            if (p[i].role >= 0 && !p[j].excluded && p[i].role == p[j].role)
                return clr_err_set(e, -EINVAL, "%s and %s both claim role %d: leave the wrong one out",
                                   p[j].path, p[i].path, p[i].role);
    }
    return 0;
}

static bool member_recovering(const struct clr_md_sb *sb)
{
    return (sb->feature_map & CLR_MD_FEAT_RECOVERY_OFFSET) && sb->recovery_offset != CLR_MD_MAX_SECTOR;
}

static int build(struct clr_array *a, struct probe *p, unsigned n, unsigned f, struct clr_err *e)
{
    bool failed[CLR_RAID_MAX_DISKS];
    struct clr_err ge;
    unsigned have = 0;
    int rc;

    a->sb = p[f].sb;
    rc = clr_raid_geom_init(&a->g, a->sb.level, a->sb.layout, a->sb.chunksize, a->sb.raid_disks, a->sb.size,
                            &ge);
    if (rc)
        return clr_err_set(e, rc, "%s: %s", p[f].path, ge.msg);
    a->ops = a->g.pers->has_parity ? &clr_arr_parity_ops : &clr_arr_mirror_ops;
    a->size_bytes = a->g.array_sectors * ARR_SECTOR;
    a->bsb = p[f].bsb;
    a->sync_sectors = a->bsb.sync_size;
    if (a->sync_sectors != clr_md_sync_sectors(&a->sb))
        return clr_err_set(
            e, -EINVAL, "%s: bitmap covers %" PRIu64 " sectors, the array %" PRIu64 ": the bitmap is corrupt",
            p[f].path, a->sync_sectors, clr_md_sync_sectors(&a->sb));
    a->bm_off = clr_bitmap_slot_offset(&a->sb, &a->bsb, a->slot);
    {
        uint64_t nbits = clr_bitmap_bits(a->bsb.sync_size, a->bsb.chunksize);

        a->bm_write_bytes =
            (CLR_BITMAP_SB_BYTES + (nbits + 7) / 8 + CLR_IO_ALIGN - 1) & ~(uint64_t)(CLR_IO_ALIGN - 1);
    }
    for (uint32_t r = 0; r < a->g.raid_disks; r++)
        failed[r] = true;
    for (unsigned i = 0; i < n; i++) {
        struct arr_member *m;

        if (p[i].excluded)
            continue;
        m = calloc(1, sizeof *m);

        if (!m || !(m->path = strdup(p[i].path))) {
            free(m);
            return clr_err_set(e, -ENOMEM, "out of memory");
        }
        m->sb = p[i].sb;
        m->dev_number = p[i].sb.dev_number;
        if (p[i].lbs > a->lbs)
            a->lbs = p[i].lbs;
        m->role = p[i].role;
        if (m->role < 0) {
            m->state = ARR_M_SPARE;
        } else if (member_recovering(&p[i].sb)) {
            m->state = ARR_M_REBUILDING;
            m->recovery_offset = p[i].sb.recovery_offset;
            m->bitmap_recovery = p[i].sb.feature_map & CLR_MD_FEAT_RECOVERY_BITMAP;
            if (a->cluster) {
                /* another node may be rebuilding or re-adding it right
                 * now (we do not know which): written, never read, never
                 * recovered here unless its rebuilder is gone or we are
                 * alone (array_cluster.c) */
                m->remote_rebuild = true;
                m->rebuilder = -1;
            }
        } else {
            m->state = ARR_M_IN_SYNC;
            failed[m->role] = false;
            have++;
        }
        if (m->role >= 0)
            a->role_mem[m->role] = m;
        a->mem[a->nmem++] = m;
    }
    if (!a->g.pers->enough(&a->g, failed))
        return clr_err_set(e, -ENODEV,
                           "'%s' has %u of %u members in sync, too few for %s: give the missing devices",
                           a->name, have, a->g.raid_disks, a->g.pers->name);
    return 0;
}

static int check_config(const struct clr_array_config *cfg, struct clr_err *e)
{
    if (!cfg || !cfg->devices || cfg->ndevices == 0)
        return clr_err_set(e, -EINVAL, "no member devices given");
    if (cfg->ndevices > ARR_MAX_MEMBERS)
        return clr_err_set(e, -E2BIG, "too many devices (%u, at most %u)", cfg->ndevices, ARR_MAX_MEMBERS);
    if (cfg->lock && strcmp(cfg->lock, "local") != 0 && strcmp(cfg->lock, "cpg") != 0 &&
        strcmp(cfg->lock, "dlm") != 0)
        return clr_err_set(e, -EINVAL, "lock backend '%s' is unknown: use local, cpg or dlm", cfg->lock);
    return 0;
}

/* The bitmap counters, loaded with the union of the bits on every in-sync
 * copy (any may hold the newest).  Alone on a clustered array, the union
 * takes in every slot with a valid bitmap superblock too: a node that
 * crashed left its writes in flight dirty in its own slot only, and nobody
 * else will resync them (the kernel's md-cluster join merges the free
 * slots the same way, without clearing them: so do we). */
static int load_bitmap(struct clr_array *a, const struct probe *p, unsigned n, struct clr_err *e)
{
    size_t nbytes = (clr_bitmap_bits(a->bsb.sync_size, a->bsb.chunksize) + 7) / 8;
    uint64_t stride = clr_bitmap_stride_bytes(a->bsb.sync_size, a->bsb.chunksize);
    uint8_t *u;
    int rc = clr_bmc_init(&a->bmc, a->sync_sectors, a->bsb.chunksize / ARR_SECTOR, 0);

    if (rc)
        return clr_err_set(e, rc, "cannot set up bitmap counters: %s", strerror(-rc));
    u = calloc(1, nbytes + 1);
    if (!u)
        return clr_err_set(e, -ENOMEM, "out of memory");
    for (unsigned i = 0; i < n; i++) {
        if (p[i].role < 0)
            continue;
        for (uint32_t r = 0; r < p[i].nregions; r++) {
            const uint8_t *reg = p[i].region + r * stride;
            struct clr_bitmap_sb rb;
            struct clr_err de;

            if (r != a->slot &&
                clr_bitmap_sb_decode(reg, CLR_BITMAP_SB_BYTES, p[i].sb.set_uuid, &rb, &de) != 0)
                continue;
            for (size_t b = 0; b < nbytes; b++)
                u[b] |= reg[CLR_BITMAP_SB_BYTES + b];
        }
    }
    clr_bmc_load(&a->bmc, u, nbytes);
    free(u);
    return 0;
}

/* The array's locks, ranked (engine/common/lockrank.h). */
static void init_locks(struct clr_array *a)
{
    clr_mutex_init(&a->lock, CLR_RANK_ARRAY, "a->lock");
    pthread_cond_init(&a->cond, NULL);
    clr_mutex_init(&a->meta_lock, CLR_RANK_META, "a->meta_lock");
    clr_mutex_init(&a->mgmt_lock, CLR_RANK_MGMT, "a->mgmt_lock");
    clr_mutex_init(&a->bm_lock, CLR_RANK_BM, "a->bm_lock");
    pthread_cond_init(&a->bm_cond, NULL);
    clr_arr_rl_init(&a->rl);
}

static void take_config(struct clr_array *a, const struct clr_array_config *cfg)
{
    a->log = cfg->log;
    a->log_opaque = cfg->log_opaque;
    a->flags = cfg->flags;
    a->stripe_cache_kib = cfg->stripe_cache_kib ? cfg->stripe_cache_kib : 16384;
    a->speed_min_kib = cfg->sync_speed_min_kib ? cfg->sync_speed_min_kib : 1000;
    a->speed_max_kib = cfg->sync_speed_max_kib ? cfg->sync_speed_max_kib : 200000;
}

int clr_array_assemble(const struct clr_array_config *cfg, struct clr_array **out, struct clr_err *e)
{
    struct clr_array *a = NULL;
    struct probe *p = NULL;
    unsigned f = 0;
    int rc;

    *out = NULL;
    rc = check_config(cfg, e);
    if (rc)
        return rc;
    p = calloc(cfg->ndevices, sizeof *p);
    a = calloc(1, sizeof *a);
    if (!p || !a || !(a->name = strdup(cfg->name ? cfg->name : "clraid")) ||
        !(a->lock_backend = strdup(cfg->lock ? cfg->lock : "local"))) {
        rc = clr_err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    a->cluster = strcmp(a->lock_backend, "local") != 0 || (cfg->flags & CLR_ARRAY_CLUSTER_LOCAL);
    a->slot = 0; /* cluster: the lock service gives it at run */
    for (unsigned i = 0; i < cfg->ndevices && rc == 0; i++) {
        p[i].path = cfg->devices[i];
        /* One node alone (lock "local") on a clustered array: like a
         * kernel md-cluster node that joins, it takes in the bits of
         * every slot (nodes that crashed left them dirty): load_bitmap. */
        rc = probe_member(&p[i], a->slot, !a->cluster, e);
    }
    if (rc == 0)
        rc = judge(p, cfg->ndevices, cfg, &f, e);
    if (rc)
        goto fail;
    take_config(a, cfg);
    rc = build(a, p, cfg->ndevices, f, e);
    if (rc == 0)
        rc = clr_arr_cl_check_config(a, e);
    if (rc)
        goto fail;
    a->bitmap_sleep_ms = cfg->bitmap_sleep_ms
                             ? cfg->bitmap_sleep_ms
                             : (a->bsb.daemon_sleep ? a->bsb.daemon_sleep : CLR_BITMAP_DEFAULT_SLEEP) * 1000;
    rc = load_bitmap(a, p, cfg->ndevices, e);
    if (rc)
        goto fail;
    init_locks(a);
    a->stopped = true;
    free_probes(p, cfg->ndevices);
    *out = a;
    return 0;
fail:
    if (p)
        free_probes(p, cfg->ndevices);
    if (a) {
        for (unsigned i = 0; i < a->nmem; i++) {
            free(a->mem[i]->path);
            free(a->mem[i]);
        }
        clr_bmc_free(&a->bmc);
        free(a->lock_backend);
        free(a->name);
        free(a);
    }
    return rc;
}

void clr_array_free(struct clr_array *a)
{
    if (!a)
        return;
    clr_array_stop(a);
    for (unsigned i = 0; i < a->nmem; i++) {
        free(a->mem[i]->path);
        free(a->mem[i]);
    }
    clr_bmc_free(&a->bmc);
    clr_arr_rl_destroy(&a->rl);
    clr_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->cond);
    clr_mutex_destroy(&a->meta_lock);
    clr_mutex_destroy(&a->mgmt_lock);
    clr_mutex_destroy(&a->bm_lock);
    pthread_cond_destroy(&a->bm_cond);
    arr_cl_free(a);
    free(a->lock_backend);
    free(a->policy_decision);
    free(a->policy_pending);
    free(a->name);
    free(a);
}

uint64_t clr_array_size(const struct clr_array *a)
{
    return a->size_bytes;
}

void clr_array_block_sizes(const struct clr_array *a, uint32_t *minimum, uint32_t *preferred,
                           uint32_t *maximum)
{
    uint64_t pref = clr_raid_stripe_sectors(&a->g) * ARR_SECTOR;

    if (a->g.level == CLR_RAID_LEVEL10)
        pref = (uint64_t)a->g.chunk_sectors * ARR_SECTOR;
    if (pref > 32u << 20)
        pref = 32u << 20;
    *minimum = a->lbs ? a->lbs : ARR_SECTOR;
    *preferred = (uint32_t)pref;
    *maximum = 32u << 20;
}
