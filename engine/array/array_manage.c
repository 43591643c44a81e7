/* clraid array core: status and management calls (fail, remove, add,
 * re-add, check/repair, thaw) and the test hook to a member's I/O. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <syslog.h>
#include <time.h>

#include "array/array_internal.h"

static const char *const mstate_names[] = {
    [ARR_M_IN_SYNC] = "in_sync", [ARR_M_REBUILDING] = "rebuilding", [ARR_M_SPARE] = "spare",
    [ARR_M_FAULTY] = "faulty",   [ARR_M_REMOVED] = "removed",
};

/* The member at @path; a live one before a removed one of the same path
 * (a disk replaced in place). */
static struct arr_member *find_locked(struct clr_array *a, const char *path)
{
    struct arr_member *removed = NULL;

    for (unsigned i = 0; i < a->nmem; i++) {
        if (strcmp(a->mem[i]->path, path) != 0)
            continue;
        if (a->mem[i]->state != ARR_M_REMOVED)
            return a->mem[i];
        removed = a->mem[i];
    }
    return removed;
}

/* Closes a removed member's I/O handle so its path can be opened again.
 * Only views taken before it failed can still hold it: client requests
 * (drained here) and sync units (they hold the range lock). Superblock and
 * bitmap writes pick live members only. The struct itself is kept (the
 * sync thread may hold a pointer to it). -EBUSY while frozen: blocked
 * requests would never drain. */
static int detach_removed(struct clr_array *a, struct arr_member *m)
{
    struct arr_range r;

    clr_mutex_lock(&a->lock);
    if (a->frozen) {
        clr_mutex_unlock(&a->lock);
        return -EBUSY;
    }
    a->quiesce++;
    while (a->inflight || a->probing)
        clr_cond_wait(&a->cond, &a->lock);
    clr_mutex_unlock(&a->lock);
    /* sync units took their views under the range lock: wait for them */
    clr_arr_rl_lock(&a->rl, &r, 0, UINT64_MAX / 2);
    clr_io_close(m->io);
    clr_mutex_lock(&a->lock);
    m->io = NULL;
    a->quiesce--;
    pthread_cond_broadcast(&a->cond);
    clr_mutex_unlock(&a->lock);
    clr_arr_rl_unlock(&a->rl, &r);
    return 0;
}

static const char *state_locked(struct clr_array *a)
{
    if (!a->running)
        return "stopped";
    if (a->frozen)
        return "frozen";
    if (a->action == ARR_SYNC_RECOVER)
        return "recovering";
    if (a->action == ARR_SYNC_RESYNC) {
        for (unsigned i = 0; i < a->nmem; i++)
            if (a->mem[i]->state == ARR_M_REBUILDING)
                return "recovering";
        return "resyncing";
    }
    if (a->degraded)
        return "degraded";
    return "active";
}

/* "EIO", "ENODATA", ...: what the policy daemon and operators match on */
static const char *errno_name(int e)
{
    const char *n = strerrorname_np(e);

    return n ? n : "unknown";
}

json_object *clr_array_status_json(struct clr_array *a)
{
    json_object *o = json_object_new_object(), *devs = json_object_new_array(), *x;
    char uuid[36], layout[32];
    uint64_t dirty, lock_ops, messages, now = clr_arr_now_ms();
    const char *st;

    clr_mutex_lock(&a->bm_lock);
    dirty = clr_bmc_dirty_chunks(&a->bmc);
    clr_mutex_unlock(&a->bm_lock);
    clr_mutex_lock(&a->lock);
    clr_uuid_format_mdadm(a->sb.set_uuid, uuid);
    clr_md_layout_name(a->sb.level, a->sb.layout, layout, sizeof layout);
    st = state_locked(a);
    if (strcmp(st, "active") == 0 && dirty == 0 && a->inflight == 0)
        st = "clean";
    json_object_object_add(o, "name", json_object_new_string(a->name));
    json_object_object_add(o, "uuid", json_object_new_string(uuid));
    json_object_object_add(o, "level", json_object_new_string(a->g.pers->name));
    json_object_object_add(o, "layout", json_object_new_string(layout));
    json_object_object_add(o, "chunk_kib", json_object_new_int64(a->sb.chunksize / 2));
    json_object_object_add(o, "size_bytes", json_object_new_int64((int64_t)a->size_bytes));
    json_object_object_add(o, "events", json_object_new_int64((int64_t)a->sb.events));
    json_object_object_add(o, "state", json_object_new_string(st));
    json_object_object_add(o, "raid_disks", json_object_new_int64(a->g.raid_disks));
    json_object_object_add(o, "redundancy", json_object_new_int64(clr_arr_redundancy_locked(a)));
    for (unsigned i = 0; i < a->nmem; i++) {
        struct arr_member *m = a->mem[i];
        json_object *d = json_object_new_object();
        bool has_role = m->role >= 0 && (m->state == ARR_M_IN_SYNC || m->state == ARR_M_REBUILDING);

        json_object_object_add(d, "path", json_object_new_string(m->path));
        json_object_object_add(d, "dev_number", json_object_new_int64(m->dev_number));
        json_object_object_add(d, "role", has_role ? json_object_new_int(m->role) : NULL);
        /* the role a failed member held: its errors are that role's */
        if (!has_role && m->role >= 0 && m->state == ARR_M_FAULTY)
            json_object_object_add(d, "former_role", json_object_new_int(m->role));
        json_object_object_add(d, "state", json_object_new_string(mstate_names[m->state]));
        json_object_object_add(d, "io_mode", m->io ? json_object_new_string(clr_io_dev_mode(m->io)) : NULL);
        if (m->write_behind && m->state == ARR_M_FAULTY)
            json_object_object_add(d, "write_behind", json_object_new_boolean(true));
        x = json_object_new_object();
        json_object_object_add(x, "media", json_object_new_int64(m->io_errors[ARR_IOERR_MEDIA]));
        json_object_object_add(x, "path", json_object_new_int64(m->io_errors[ARR_IOERR_PATH]));
        json_object_object_add(x, "reservation", json_object_new_int64(m->io_errors[ARR_IOERR_RESV]));
        json_object_object_add(x, "media_on_write", json_object_new_int64(m->media_write_errors));
        json_object_object_add(x, "rewritten", json_object_new_int64(m->rewrites));
        json_object_object_add(x, "last_errno",
                               m->last_errno ? json_object_new_string(errno_name(m->last_errno)) : NULL);
        json_object_object_add(x, "last_ms", m->last_errno ? json_object_new_int64(m->last_error_ms) : NULL);
        json_object_object_add(d, "io_errors", x);
        /* requests in flight and none completed for this long (a hang,
         * once it passes the policy's io_timeout) */
        json_object_object_add(d, "reads", json_object_new_int64((int64_t)atomic_load(&m->n_reads)));
        json_object_object_add(d, "writes", json_object_new_int64((int64_t)atomic_load(&m->n_writes)));
        json_object_object_add(d, "read_bytes", json_object_new_int64((int64_t)atomic_load(&m->read_bytes)));
        json_object_object_add(d, "write_bytes",
                               json_object_new_int64((int64_t)atomic_load(&m->write_bytes)));
        json_object_object_add(d, "stalled_ms",
                               json_object_new_int64(m->io ? (int64_t)clr_io_dev_stall_ms(m->io) : 0));
        if (m->held ||
            (m->state == ARR_M_IN_SYNC && m->suspect_ms && now < m->suspect_ms + a->policy_confirm_ms)) {
            x = json_object_new_object();
            json_object_object_add(x, "held_writes", json_object_new_int64(m->held));
            json_object_object_add(x, "held_for_ms",
                                   m->held ? json_object_new_int64((int64_t)(now - m->held_since_ms)) : NULL);
            json_object_object_add(d, "awaiting_decision", x);
        }
        json_object_array_add(devs, d);
    }
    json_object_object_add(o, "devices", devs);
    x = json_object_new_object();
    json_object_object_add(x, "attached", json_object_new_boolean(a->cl && now < a->policy_until_ms));
    json_object_object_add(x, "confirm_timeout_ms", json_object_new_int64(a->policy_confirm_ms));
    json_object_object_add(x, "holding", json_object_new_boolean(now < a->policy_hold_until_ms));
    json_object_object_add(x, "holds", json_object_new_int64((int64_t)a->policy_holds));
    json_object_object_add(x, "timeouts", json_object_new_int64((int64_t)a->policy_timeouts));
    json_object_object_add(x, "rewrites", json_object_new_int64((int64_t)a->policy_rewrites));
    json_object_object_add(x, "decision",
                           a->policy_decision ? json_object_new_string(a->policy_decision) : NULL);
    json_object_object_add(x, "pending",
                           a->policy_pending ? json_object_new_string(a->policy_pending) : NULL);
    json_object_object_add(o, "policy", x);
    json_object_object_add(o, "sync_action", json_object_new_string(clr_arr_action_name(a->action)));
    if (a->action != ARR_SYNC_IDLE) {
        uint64_t el = clr_arr_now_ns() - a->sync_start_ns;
        uint64_t rate = el ? a->sync_done_sectors * 512ull * 1000000000ull / 1024 / el : 0;
        uint64_t left = a->sync_total > a->sync_pos ? a->sync_total - a->sync_pos : 0;

        x = json_object_new_object();
        json_object_object_add(x, "position_bytes", json_object_new_int64((int64_t)(a->sync_pos * 512)));
        json_object_object_add(x, "total_bytes", json_object_new_int64((int64_t)(a->sync_total * 512)));
        json_object_object_add(x, "rate_kib_s", json_object_new_int64((int64_t)rate));
        json_object_object_add(x, "eta_s", rate ? json_object_new_int64((int64_t)(left / 2 / rate)) : NULL);
        json_object_object_add(o, "sync_progress", x);
    } else {
        json_object_object_add(o, "sync_progress", NULL);
    }
    x = json_object_new_object();
    json_object_object_add(x, "bytes", json_object_new_int64((int64_t)a->last_resync_bytes));
    /* wall-clock ms since the epoch (null: none yet / still running) */
    json_object_object_add(x, "started_ms",
                           a->sync_started_ms ? json_object_new_int64(a->sync_started_ms) : NULL);
    json_object_object_add(x, "ended_ms", a->sync_ended_ms ? json_object_new_int64(a->sync_ended_ms) : NULL);
    json_object_object_add(o, "last_resync", x);
    x = json_object_new_object();
    json_object_object_add(x, "mismatches", json_object_new_int64((int64_t)a->last_check_mismatches));
    json_object_object_add(o, "last_check", x);
    x = json_object_new_object();
    json_object_object_add(x, "dirty_chunks", json_object_new_int64((int64_t)dirty));
    json_object_object_add(x, "chunk_bytes", json_object_new_int64(a->bsb.chunksize));
    json_object_object_add(x, "slot", json_object_new_int64(a->slot));
    json_object_object_add(o, "bitmap", x);
    if (a->frozen) {
        x = json_object_new_object();
        json_object_object_add(x, "blocked_requests", json_object_new_int64((int64_t)a->blocked));
        json_object_object_add(o, "frozen", x);
    } else {
        json_object_object_add(o, "frozen", NULL);
    }
    clr_mutex_unlock(&a->lock);
    lock_ops = messages = 0;
    if (a->clops)
        a->clops->status(a, o, &lock_ops, &messages);
    else
        clr_arr_status_no_cluster(a, o);
    x = json_object_new_object();
    json_object_object_add(x, "reads", json_object_new_int64((int64_t)atomic_load(&a->n_reads)));
    json_object_object_add(x, "writes", json_object_new_int64((int64_t)atomic_load(&a->n_writes)));
    json_object_object_add(x, "bitmap_flushes",
                           json_object_new_int64((int64_t)atomic_load(&a->n_bm_flushes)));
    json_object_object_add(x, "lock_ops", json_object_new_int64((int64_t)lock_ops));
    json_object_object_add(x, "messages", json_object_new_int64((int64_t)messages));
    json_object_object_add(o, "counters", x);
    return o;
}

static int need_running(struct clr_array *a, struct clr_err *e)
{
    if (!a->running || a->stopping)
        return clr_err_set(e, -ESHUTDOWN, "'%s' is not running: start it first", a->name);
    return 0;
}

/* The member @path of a running array into *@mp.  Caller holds lock. */
static int running_member_locked(struct clr_array *a, const char *path, struct arr_member **mp,
                                 struct clr_err *e)
{
    int rc = need_running(a, e);

    *mp = rc ? NULL : find_locked(a, path);
    if (!rc && !*mp)
        rc = clr_err_set(e, -ENOENT, "%s is not a member of '%s'", path, a->name);
    return rc;
}

static int mgmt_fail_device(struct clr_array *a, const char *path, struct clr_err *e)
{
    struct arr_member *m;
    int rc;

    clr_mutex_lock(&a->lock);
    rc = running_member_locked(a, path, &m, e);
    if (!rc && m->state == ARR_M_IN_SYNC && !clr_arr_enough_without(a, m->role))
        rc =
            clr_err_set(e, -EBUSY, "%s: failing it would leave '%s' without a full copy of the data; refused",
                        path, a->name);
    if (!rc && (m->state == ARR_M_FAULTY || m->state == ARR_M_REMOVED))
        rc = clr_err_set(e, -EALREADY, "%s is already %s", path, mstate_names[m->state]);
    clr_mutex_unlock(&a->lock);
    if (rc)
        return rc;
    rc = clr_arr_member_failed(a, NULL, m, 0);
    return rc ? clr_err_set(
                    e, -EIO,
                    "%s: marked faulty here, but the failure could not be recorded and announced: array frozen",
                    path)
              : 0;
}

static int mgmt_remove_device(struct clr_array *a, const char *path, struct clr_err *e)
{
    struct arr_member *m;
    uint64_t gen = 0;
    int rc;

    clr_mutex_lock(&a->lock);
    rc = running_member_locked(a, path, &m, e);
    if (!rc && m->state != ARR_M_FAULTY && m->state != ARR_M_SPARE)
        rc = clr_err_set(e, -EBUSY, "%s is %s: fail it first ('clraid fail %s %s')", path,
                         mstate_names[m->state], a->name, path);
    clr_mutex_unlock(&a->lock);
    if (rc)
        return rc;
    /* cluster: every node forgets it first (md: REMOVE, then the kick) */
    rc = arr_cl_send_remove(a, m->dev_number);
    if (rc)
        return clr_err_set(e, rc, "%s: the other nodes did not take the removal (%s): retry", path,
                           strerror(-rc));
    clr_mutex_lock(&a->lock);
    /* The I/O handle stays open until stop: requests that saw the
     * member before it failed may still hold it. */
    m->state = ARR_M_REMOVED;
    m->role = -1;
    m->write_behind = false;
    gen = ++a->state_gen;
    clr_mutex_unlock(&a->lock);
    rc = clr_arr_sb_update(a, gen, false);
    if (rc)
        clr_err_set(
            e, rc,
            "%s: removed here, but the superblock update was not written or announced to every node: %s",
            path, strerror(-rc));
    return rc;
}

/* Copies every bitmap slot region from a live member to @m. */
static int copy_bitmap_area(struct clr_array *a, struct clr_io_dev *to)
{
    uint64_t stride = clr_bitmap_stride_bytes(a->bsb.sync_size, a->bsb.chunksize);
    uint64_t len = stride * clr_bitmap_slots(&a->bsb);
    uint64_t off = (a->sb.super_offset + (uint64_t)(int64_t)a->sb.bitmap_offset) * ARR_SECTOR;
    struct arr_member *src = NULL;
    uint8_t *buf;
    int rc;

    clr_mutex_lock(&a->lock);
    for (unsigned i = 0; i < a->nmem && !src; i++)
        if (a->mem[i]->state == ARR_M_IN_SYNC && a->mem[i]->io)
            src = a->mem[i];
    clr_mutex_unlock(&a->lock);
    if (!src)
        return -ENODEV;
    rc = clr_io_alloc((void **)&buf, len);
    if (rc)
        return rc;
    rc = clr_io_pread(src->io, buf, len, off);
    if (rc == 0)
        rc = clr_io_pwrite(to, buf, len, off, CLR_IO_FUA);
    clr_io_free(buf);
    return rc;
}

/* Gives a vacant role to spare @m, if the array lacks one. Caller holds lock. */
static void place_spare_locked(struct clr_array *a, struct arr_member *m)
{
    for (uint32_t r = 0; r < a->g.raid_disks; r++) {
        if (a->role_mem[r])
            continue;
        m->state = ARR_M_REBUILDING;
        m->role = (int)r;
        m->recovery_offset = 0;
        m->bitmap_recovery = false;
        a->role_mem[r] = m;
        clr_arr_log(a, LOG_NOTICE, "%s: takes role %u, rebuilding", m->path, r);
        clr_arr_sync_kick_locked(a);
        return;
    }
}

/* Opens a device being added or re-added, as the members were opened. */
static int open_member(struct clr_array *a, const char *path, struct clr_io_dev **io, struct clr_err *e)
{
    unsigned fl =
        ((a->flags & CLR_ARRAY_BUFFERED) ? CLR_IO_OPEN_BUFFERED : 0) | (a->cluster ? 0 : CLR_IO_OPEN_EXCL);
    int rc = clr_io_open(a->ctx, path, fl, io);

    if (rc)
        return clr_err_set(e, rc, "%s: cannot open: %s", path, strerror(-rc));
    clr_arr_mem_align_note(a, *io);
    return 0;
}

/* Takes a new member into a->mem (a->lock held); -E2BIG when the array
 * already has as many devices as it can hold. */
static int append_member_locked(struct clr_array *a, struct arr_member *m, const char *path,
                                struct clr_err *e)
{
    if (a->nmem >= ARR_MAX_MEMBERS)
        return clr_err_set(e, -E2BIG, "%s: '%s' has too many devices (%u): remove a faulty one first", path,
                           a->name, (unsigned)ARR_MAX_MEMBERS);
    a->mem[a->nmem++] = m;
    return 0;
}

/* Ends a superblock update made inside our `metadata` (cluster): the
 * update's result, else the announcement's. */
static int sb_update_announced(struct clr_array *a, uint64_t gen)
{
    int rc = clr_arr_sb_update(a, gen, false);
    int mrc = arr_cl_meta_end(a, true);

    return rc ? rc : mrc;
}

/* add: a free device number, and the refusals before anything is opened */
static int add_preflight(struct clr_array *a, const char *path, uint32_t *dn, struct clr_err *e)
{
    bool used[CLR_MD_MAX_DEV_LIMIT] = { false };
    struct arr_member *m;
    int rc;

    clr_mutex_lock(&a->lock);
    rc = need_running(a, e);
    m = rc ? NULL : find_locked(a, path);
    if (m && m->state != ARR_M_REMOVED)
        rc = clr_err_set(e, -EEXIST, "%s is already known to '%s': use 're-add' for a member that left", path,
                         a->name);
    if (!rc && a->nmem >= ARR_MAX_MEMBERS)
        rc = clr_err_set(e, -E2BIG, "'%s' has too many devices", a->name);
    for (unsigned i = 0; i < a->nmem; i++)
        if (a->mem[i]->dev_number < CLR_MD_MAX_DEV_LIMIT)
            used[a->mem[i]->dev_number] = true;
    clr_mutex_unlock(&a->lock);
    if (rc)
        return rc;
    if (m && m->io && (rc = detach_removed(a, m)) != 0)
        return clr_err_set(e, rc, "%s: the array is frozen; thaw it before replacing a member", path);
    for (*dn = 0; *dn < a->sb.max_dev && used[*dn]; (*dn)++)
        ;
    if (*dn >= a->sb.max_dev)
        return clr_err_set(e, -ENOSPC, "'%s' has no free device slot (max_dev %u)", a->name, a->sb.max_dev);
    return 0;
}

/* add: the new device's superblock (a spare of this array), written after
 * the bitmap area: a member is only a member once its bitmap is there */
static int add_write_sb(struct clr_array *a, const char *path, struct clr_io_dev *io, uint32_t dn,
                        uint8_t *buf, struct clr_md_sb *sb, struct clr_err *e)
{
    struct clr_io_dev_info info;
    int rc;

    clr_io_dev_info(io, &info);
    if (info.size / ARR_SECTOR < a->sb.data_offset + a->sb.size)
        return clr_err_set(e, -ENOSPC, "%s: too small (%" PRIu64 " sectors, need %" PRIu64 ")", path,
                           info.size / ARR_SECTOR, a->sb.data_offset + a->sb.size);
    clr_mutex_lock(&a->lock);
    *sb = a->sb;
    clr_mutex_unlock(&a->lock);
    if (getrandom(sb->device_uuid, 16, 0) != 16)
        return clr_err_set(e, -EIO, "cannot read random bytes for the device UUID");
    sb->dev_number = dn;
    sb->data_size = info.size / ARR_SECTOR - sb->data_offset;
    sb->recovery_offset = 0;
    sb->feature_map &= ~(CLR_MD_FEAT_RECOVERY_OFFSET | CLR_MD_FEAT_RECOVERY_BITMAP);
    sb->dev_roles[dn] = CLR_MD_ROLE_SPARE;
    rc = copy_bitmap_area(a, io);
    if (rc == 0)
        rc = clr_md_sb_encode(sb, buf, CLR_MD_SB_AREA_BYTES);
    if (rc == 0)
        rc = clr_io_pwrite(io, buf, CLR_MD_SB_AREA_BYTES, CLR_MD_V12_SB_SECTOR * ARR_SECTOR, CLR_IO_FUA);
    return rc ? clr_err_set(e, rc, "%s: cannot write the superblock: %s", path, strerror(-rc)) : 0;
}

/* add, cluster (doc/architecture.md §4.9): under `metadata`, every node
 * must find the device by its UUID before it becomes a member anywhere.
 * On failure `metadata` is still held when it was taken (*meta). */
static int add_announce(struct clr_array *a, const char *path, const struct clr_md_sb *sb, bool *meta,
                        struct clr_err *e)
{
    int rc = arr_cl_meta_begin(a);

    if (rc)
        return clr_err_set(e, rc, "cannot take the cluster metadata lock: %s", strerror(-rc));
    *meta = true;
    rc = arr_cl_newdisk(a, sb->device_uuid, sb->dev_number);
    if (rc)
        clr_err_set(
            e, rc,
            rc == -ENOENT
                ? "%s: node(s) could not see the new device: add it on every node's configured path first"
                : "%s: the other nodes did not take the new device: %s",
            path, strerror(-rc));
    return rc;
}

static int mgmt_add_device(struct clr_array *a, const char *path, struct clr_err *e)
{
    struct clr_io_dev *io = NULL;
    struct arr_member *m = NULL;
    struct clr_md_sb sb;
    uint8_t *buf = NULL;
    bool meta = false, written = false;
    uint32_t dn = 0;
    uint64_t gen = 0;
    int rc;

    if ((rc = add_preflight(a, path, &dn, e)) != 0 || (rc = open_member(a, path, &io, e)) != 0)
        return rc;
    m = calloc(1, sizeof *m);
    if (!m || !(m->path = strdup(path)) || clr_io_alloc((void **)&buf, CLR_MD_SB_AREA_BYTES)) {
        rc = clr_err_set(e, -ENOMEM, "out of memory");
        goto fail;
    }
    rc = add_write_sb(a, path, io, dn, buf, &sb, e);
    written = rc == 0;
    if (rc == 0 && a->cl)
        rc = add_announce(a, path, &sb, &meta, e);
    if (rc)
        goto fail;
    m->sb = sb;
    m->dev_number = dn;
    m->role = -1;
    m->state = ARR_M_SPARE;
    m->io = io;
    clr_mutex_lock(&a->lock);
    rc = append_member_locked(a, m, path, e);
    if (rc == 0) {
        place_spare_locked(a, m);
        gen = ++a->state_gen;
    }
    clr_mutex_unlock(&a->lock);
    if (rc) {
        m->io = NULL;
        goto fail;
    }
    clr_io_free(buf);
    clr_arr_log(a, LOG_NOTICE, "%s: added as device %u", path, dn);
    rc = sb_update_announced(a, gen); /* cluster: inside our `metadata` */
    if (rc)
        clr_err_set(e, rc,
                    "%s: added, but the superblock update was not written or announced to every node: %s",
                    path, strerror(-rc));
    return rc;
fail:
    if (written) {
        /* nothing of it may stay: erase the superblock we wrote */
        memset(buf, 0, CLR_MD_SB_AREA_BYTES);
        clr_io_pwrite(io, buf, CLR_MD_SB_AREA_BYTES, CLR_MD_V12_SB_SECTOR * ARR_SECTOR, CLR_IO_FUA);
        if (meta)
            arr_cl_meta_end(a, true); /* candidates dropped everywhere */
    }
    clr_io_free(buf);
    if (m)
        free(m->path);
    free(m);
    clr_io_close(io);
    return rc;
}

/* re-add: the refusals, or the last copy coming back (the array thaws:
 * 1).  *m: the member as known here (NULL: not known), *io its handle. */
static int readd_preflight(struct clr_array *a, const char *path, struct arr_member **m,
                           struct clr_io_dev **io, struct clr_err *e)
{
    int rc;

    clr_mutex_lock(&a->lock);
    rc = need_running(a, e);
    *m = rc ? NULL : find_locked(a, path);
    if (!rc && *m && (*m)->state == ARR_M_IN_SYNC) {
        /* The last copy came back: blocked I/O is retried. */
        bool was = a->frozen;

        a->frozen = a->thaw_err = false;
        pthread_cond_broadcast(&a->cond);
        clr_mutex_unlock(&a->lock);
        if (was)
            clr_arr_log(a, LOG_NOTICE, "%s: back, array thawed", path);
        return was ? 1 : clr_err_set(e, -EALREADY, "%s is in sync already", path);
    }
    if (!rc && *m && (*m)->state != ARR_M_FAULTY && (*m)->state != ARR_M_REMOVED)
        rc = clr_err_set(e, -EBUSY, "%s is %s: nothing to re-add", path, mstate_names[(*m)->state]);
    *io = *m ? (*m)->io : NULL;
    clr_mutex_unlock(&a->lock);
    return rc;
}

/* re-add: the device's own superblock, which must be a former member's */
static int readd_read_sb(struct clr_array *a, const char *path, struct clr_io_dev *io, struct clr_md_sb *sb,
                         struct clr_err *e)
{
    struct clr_err de;
    uint8_t *buf = NULL;
    int rc = clr_io_alloc((void **)&buf, CLR_MD_SB_AREA_BYTES);

    if (rc == 0)
        rc = clr_io_pread(io, buf, CLR_MD_SB_AREA_BYTES, CLR_MD_V12_SB_SECTOR * ARR_SECTOR);
    if (rc) {
        clr_err_set(e, rc, "%s: cannot read its superblock: %s", path, strerror(-rc));
    } else if ((rc = clr_md_sb_decode(buf, CLR_MD_SB_AREA_BYTES, 0, sb, &de)) != 0) {
        clr_err_set(e, rc, "%s: %s: add it as a new device instead", path, de.msg);
    } else if (memcmp(sb->set_uuid, a->sb.set_uuid, 16) != 0 || sb->dev_number >= sb->max_dev) {
        rc =
            clr_err_set(e, -EINVAL, "%s: not a former member of '%s': add it as a new device", path, a->name);
    }
    clr_io_free(buf);
    return rc;
}

/* re-add (a->lock held): the member takes its old role back, rebuilding
 * from the bitmap (or fully, if it left half-rebuilt); a member not known
 * here is created.  *gen: the state generation to write. */
static int readd_place_locked(struct clr_array *a, struct arr_member **mp, const char *path,
                              const struct clr_md_sb *sb, struct clr_io_dev *io, int role, uint64_t *gen,
                              struct clr_err *e)
{
    struct arr_member *m = *mp;
    int rc;

    if (role >= (int)a->g.raid_disks || role < 0)
        return clr_err_set(e, -EINVAL, "%s: had no active role: add it as a spare", path);
    if (a->role_mem[role])
        return clr_err_set(e, -EBUSY, "%s: its role %d is taken by %s: add it as a spare instead", path, role,
                           a->role_mem[role]->path);
    if (!m) {
        for (unsigned i = 0; i < a->nmem; i++)
            if (a->mem[i]->dev_number == sb->dev_number ||
                memcmp(a->mem[i]->sb.device_uuid, sb->device_uuid, 16) == 0)
                return clr_err_set(e, -EEXIST, "%s: the same device as %s", path, a->mem[i]->path);
        m = calloc(1, sizeof *m);
        if (!m || !(m->path = strdup(path))) {
            free(m);
            return clr_err_set(e, -ENOMEM, "out of memory");
        }
        if ((rc = append_member_locked(a, m, path, e)) != 0) {
            free(m->path);
            free(m);
            return rc;
        }
        *mp = m;
    }
    m->sb = *sb;
    m->dev_number = sb->dev_number;
    m->io = io;
    m->role = role;
    m->state = ARR_M_REBUILDING;
    m->write_behind = false;
    /* The bitmap covers only what changed since it left in sync; a member
     * that left half-rebuilt needs a full recovery. */
    m->bitmap_recovery =
        !(sb->feature_map & CLR_MD_FEAT_RECOVERY_OFFSET) || (sb->feature_map & CLR_MD_FEAT_RECOVERY_BITMAP);
    m->recovery_offset = 0;
    m->remote_rebuild = false;
    m->bits_gathered = false;
    /* our `metadata` reload: a superblock not newer than this still shows
     * it faulty (a reload outside `metadata` must not undo the re-add) */
    m->readd_events = a->sb.events;
    a->role_mem[role] = m;
    a->frozen = a->thaw_err = false;
    if (a->cl)
        a->sync_hold++; /* the pass must cover the gathered bits */
    pthread_cond_broadcast(&a->cond);
    *gen = ++a->state_gen;
    return 0;
}

static void sync_hold_release(struct clr_array *a)
{
    clr_mutex_lock(&a->lock);
    a->sync_hold--;
    pthread_cond_broadcast(&a->cond);
    clr_mutex_unlock(&a->lock);
}

/* re-add, cluster (doc/architecture.md §4.11), inside our `metadata`:
 * every node writes to it from now on, then every other slot's bits join
 * ours so the pass covers what anyone wrote.  Refused by some node: it is
 * faulty again everywhere.  Releases `metadata`. */
static int readd_announce(struct clr_array *a, struct arr_member *m, int role, uint64_t gen, const char *path,
                          bool *rolled_back, struct clr_err *e)
{
    int rc = arr_cl_readd(a, m->dev_number);

    *rolled_back = rc != 0;
    if (rc) {
        clr_mutex_lock(&a->lock);
        if (a->role_mem[role] == m)
            a->role_mem[role] = NULL;
        m->state = ARR_M_FAULTY;
        m->bitmap_recovery = false;
        m->faulty_gen = gen = ++a->state_gen;
        clr_arr_recompute_locked(a);
        a->sync_hold--;
        pthread_cond_broadcast(&a->cond);
        clr_mutex_unlock(&a->lock);
        clr_arr_bm_set_degraded(a);
        clr_arr_sb_update(a, gen, false);
        arr_cl_meta_end(a, true);
        return clr_err_set(e, rc, "%s: re-add not taken by every node (%s): rolled back, it stays faulty",
                           path, strerror(-rc));
    }
    /* clustered RAID5/6: its partial-parity logs predate its failure;
     * wiped before the pass can mark it in sync (a failure is logged) */
    clr_arr_plog_wipe(a->plog, m);
    clr_mutex_lock(&a->lock);
    if (m->state == ARR_M_REBUILDING && m->bitmap_recovery)
        m->bits_gathered = true; /* the pass may mark it in sync */
    clr_mutex_unlock(&a->lock);
    clr_arr_log(a, LOG_NOTICE, "%s: re-added in role %d, resyncing the bitmap's dirty chunks", path, role);
    rc = sb_update_announced(a, gen);
    sync_hold_release(a);
    return rc;
}

static int mgmt_readd_device(struct clr_array *a, const char *path, struct clr_err *e)
{
    struct arr_member *m;
    struct clr_md_sb sb;
    struct clr_io_dev *io = NULL;
    uint64_t gen = 0;
    bool fresh = false;
    int rc, role;

    rc = readd_preflight(a, path, &m, &io, e);
    if (rc)
        return rc > 0 ? 0 : rc;
    if (!io) {
        if ((rc = open_member(a, path, &io, e)) != 0)
            return rc;
        fresh = true;
    }
    rc = readd_read_sb(a, path, io, &sb, e);
    /* md under `metadata` until the role is written: another node's
     * update in between would re-read FAULTY and undo it */
    if (rc == 0 && a->cl && (rc = arr_cl_meta_begin(a)) != 0)
        clr_err_set(e, rc, "cannot take the cluster metadata lock: %s", strerror(-rc));
    if (rc) {
        if (fresh)
            clr_io_close(io);
        return rc;
    }
    role = m && m->role >= 0 ? m->role : sb.dev_roles[sb.dev_number];
    clr_mutex_lock(&a->lock);
    rc = readd_place_locked(a, &m, path, &sb, io, role, &gen, e);
    clr_mutex_unlock(&a->lock);
    if (rc) {
        arr_cl_meta_end(a, false);
        if (fresh)
            clr_io_close(io);
        return rc;
    }
    if (a->cl) {
        bool rolled_back;

        rc = readd_announce(a, m, role, gen, path, &rolled_back, e);
        if (rolled_back)
            return rc; /* the message is said */
    } else {
        clr_arr_log(a, LOG_NOTICE, "%s: re-added in role %d, resyncing the bitmap's dirty chunks", path,
                    role);
        rc = clr_arr_sb_update(a, gen, false);
    }
    clr_arr_bm_flush(a);
    if (rc)
        clr_err_set(e, rc,
                    "%s: re-added, but the superblock update was not written or announced to every node: %s",
                    path, strerror(-rc));
    return rc;
}

int clr_array_start_check(struct clr_array *a, bool repair, struct clr_err *e)
{
    int rc;

    clr_mutex_lock(&a->lock);
    rc = need_running(a, e);
    if (!rc && (a->action != ARR_SYNC_IDLE || a->requested != ARR_SYNC_IDLE))
        rc = clr_err_set(e, -EBUSY, "'%s' is busy with %s: wait for it to finish", a->name,
                         clr_arr_action_name(a->action != ARR_SYNC_IDLE ? a->action : a->requested));
    if (!rc) {
        a->requested = repair ? ARR_SYNC_REPAIR : ARR_SYNC_CHECK;
        pthread_cond_broadcast(&a->cond);
    }
    clr_mutex_unlock(&a->lock);
    return rc;
}

int clr_array_thaw_error(struct clr_array *a, struct clr_err *e)
{
    int rc = 0;

    clr_mutex_lock(&a->lock);
    if (!a->frozen) {
        rc = clr_err_set(e, -EINVAL, "'%s' is not frozen", a->name);
    } else {
        a->thaw_err = true;
        clr_arr_log(a, LOG_WARNING, "thawed with errors: %" PRIu64 " blocked requests fail with EIO",
                    a->blocked);
        pthread_cond_broadcast(&a->cond);
    }
    clr_mutex_unlock(&a->lock);
    return rc;
}

struct clr_io_dev *clr_array_member_io(struct clr_array *a, const char *path)
{
    struct arr_member *m;
    struct clr_io_dev *io;

    clr_mutex_lock(&a->lock);
    m = find_locked(a, path);
    io = m ? m->io : NULL;
    clr_mutex_unlock(&a->lock);
    return io;
}

static bool busy_locked(struct clr_array *a)
{
    if (a->action != ARR_SYNC_IDLE || a->requested != ARR_SYNC_IDLE || a->resync_pending)
        return true;
    for (unsigned i = 0; i < a->nmem; i++)
        if (a->mem[i]->state == ARR_M_REBUILDING && a->mem[i]->io && !a->mem[i]->remote_rebuild)
            return true;
    return false;
}

int clr_array_wait_sync_idle(struct clr_array *a, unsigned timeout_ms)
{
    struct timespec ts;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    clr_mutex_lock(&a->lock);
    while (a->running && !a->frozen && busy_locked(a) && rc == 0)
        rc = -clr_cond_timedwait(&a->cond, &a->lock, &ts);
    if (rc == 0 && a->running && busy_locked(a))
        rc = -EBUSY;
    clr_mutex_unlock(&a->lock);
    return rc;
}

int clr_array_wait_frozen(struct clr_array *a, unsigned timeout_ms, uint64_t min_blocked)
{
    for (unsigned t = 0; t < timeout_ms; t += 5) {
        bool ok;

        clr_mutex_lock(&a->lock);
        ok = a->frozen && a->blocked >= min_blocked;
        clr_mutex_unlock(&a->lock);
        if (ok)
            return 0;
        struct timespec ts = { 0, 5000000 };
        nanosleep(&ts, NULL);
    }
    return -ETIMEDOUT;
}

void clr_array_set_sync_speed(struct clr_array *a, uint32_t min_kib, uint32_t max_kib)
{
    clr_mutex_lock(&a->lock);
    if (min_kib)
        a->speed_min_kib = min_kib;
    if (max_kib)
        a->speed_max_kib = max_kib;
    clr_mutex_unlock(&a->lock);
}

/* Management calls run one at a time (never against a stopping array). */
static int under_mgmt(struct clr_array *a, int (*op)(struct clr_array *, const char *, struct clr_err *),
                      const char *path, struct clr_err *e)
{
    int rc;

    clr_mutex_lock(&a->mgmt_lock);
    clr_arr_nowait_enter(a);
    rc = op(a, path, e);
    clr_arr_nowait_exit(a);
    clr_mutex_unlock(&a->mgmt_lock);
    return rc;
}

json_object *clr_array_probe_device(struct clr_array *a, const char *path, struct clr_err *e)
{
    struct arr_member *m;
    json_object *o;
    uint64_t t0;
    int rc;

    clr_mutex_lock(&a->lock);
    rc = running_member_locked(a, path, &m, e);
    if (!rc && (m->state == ARR_M_REMOVED || !m->io))
        rc = clr_err_set(e, -ENOENT, "%s was removed from '%s': nothing to probe", path, a->name);
    if (!rc)
        a->probing++;
    clr_mutex_unlock(&a->lock);
    if (rc)
        return NULL;
    t0 = clr_arr_now_ns();
    rc = clr_arr_bm_probe(a, m);
    o = json_object_new_object();
    json_object_object_add(o, "ok", json_object_new_boolean(rc == 0));
    json_object_object_add(o, "errno", rc ? json_object_new_string(errno_name(-rc)) : NULL);
    json_object_object_add(o, "ms", json_object_new_int64((int64_t)((clr_arr_now_ns() - t0) / 1000000)));
    clr_arr_log(a, rc ? LOG_WARNING : LOG_INFO, "%s: probe %s%s", path, rc ? "failed: " : "passed",
                rc ? errno_name(-rc) : "");
    clr_mutex_lock(&a->lock);
    a->probing--;
    pthread_cond_broadcast(&a->cond);
    clr_mutex_unlock(&a->lock);
    return o;
}

int clr_array_policy(struct clr_array *a, uint32_t confirm_ms, uint32_t lease_ms, bool hold,
                     const char *decision, const char *pending, struct clr_err *e)
{
    uint64_t now = clr_arr_now_ms();

    if (confirm_ms && !lease_ms)
        return clr_err_set(e, -EINVAL, "policy: a lease (args.lease_ms) is required with confirm_ms");
    clr_mutex_lock(&a->lock);
    if (!a->cl) {
        clr_mutex_unlock(&a->lock);
        return clr_err_set(
            e, -EOPNOTSUPP,
            "policy: '%s' runs no cluster protocol (--lock local): its member failures stay md's", a->name);
    }
    if (!confirm_ms) {
        a->policy_until_ms = a->policy_hold_until_ms = 0;
        decision = pending = NULL;
    } else {
        if (now >= a->policy_until_ms)
            clr_arr_log(a, LOG_NOTICE,
                        "policy daemon attached: a write error waits up to %u ms for its decision",
                        confirm_ms);
        a->policy_confirm_ms = confirm_ms;
        a->policy_until_ms = now + lease_ms;
        a->policy_hold_until_ms = hold ? now + lease_ms : 0;
    }
    for (unsigned i = 0; i < 2; i++) {
        char **dst = i ? &a->policy_pending : &a->policy_decision;
        const char *src = i ? pending : decision;

        if (src && *src && (!*dst || strcmp(*dst, src))) {
            char *copy = strdup(src);

            if (copy) {
                free(*dst);
                *dst = copy;
            }
        } else if (!src || !*src) {
            free(*dst);
            *dst = NULL;
        }
    }
    pthread_cond_broadcast(&a->cond);
    clr_mutex_unlock(&a->lock);
    return 0;
}

int clr_array_fail_device(struct clr_array *a, const char *path, struct clr_err *e)
{
    return under_mgmt(a, mgmt_fail_device, path, e);
}

int clr_array_remove_device(struct clr_array *a, const char *path, struct clr_err *e)
{
    return under_mgmt(a, mgmt_remove_device, path, e);
}

int clr_array_add_device(struct clr_array *a, const char *path, struct clr_err *e)
{
    return under_mgmt(a, mgmt_add_device, path, e);
}

int clr_array_readd_device(struct clr_array *a, const char *path, struct clr_err *e)
{
    return under_mgmt(a, mgmt_readd_device, path, e);
}
