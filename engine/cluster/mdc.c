/*
 * clraid cluster protocol core (see mdc.h): md-cluster's join, takeover,
 * resync window, metadata, NEWDISK, remove and re-add sequences over a
 * host interface.  No threads, clocks or I/O here: the engine and the
 * simulator run this same code.
 *
 * Concurrency: m->mu guards the state and is never held across a host
 * call (a simulator coroutine may yield inside one).  Lock objects are
 * claimed (claim()/release()) so two callers never have operations
 * pending on the same resource at once; a claimant that finds it taken
 * polls with host pause().
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "common/lockrank.h"
#include "cluster/mdc.h"
#include "lock/lock.h"
#include "lock/lock_wire.h"

#define RES_RESYNC   "resync"
#define RES_META     "metadata"
#define RES_NONEWDEV "no-new-dev"

/* Claim bits for named resources (slot bitmaps use slot_claims). */
enum {
    C_RESYNC = 1u << 0,
    C_META = 1u << 1,
    C_NONEWDEV = 1u << 2,
    C_EXTENT = 1u << 3 /* announcing our dirty extent */
};

_Static_assert(CLR_RULES_MSG_METADATA_UPDATED == CLR_MDC_METADATA_UPDATED,
               "rules.h names METADATA_UPDATED by number");

#define CLAIM_POLL_MS    2
#define TAKEOVER_POLL_MS 50
#define JOIN_SLOT_POLLS  600 /* 30 s of TAKEOVER_POLL_MS */

/* ---- messages and LVB ---- */

static const char *const msg_names[] = {
    [CLR_MDC_METADATA_UPDATED] = "METADATA_UPDATED",
    [CLR_MDC_RESYNCING] = "RESYNCING",
    [CLR_MDC_NEWDISK] = "NEWDISK",
    [CLR_MDC_REMOVE] = "REMOVE",
    [CLR_MDC_RE_ADD] = "RE_ADD",
    [CLR_MDC_BITMAP_NEEDS_SYNC] = "BITMAP_NEEDS_SYNC",
    [CLR_MDC_TAKEOVER] = "TAKEOVER",
};

const char *clr_mdc_msg_name(int type)
{
    if (type < 0 || (size_t)type >= sizeof(msg_names) / sizeof(msg_names[0]) || !msg_names[type])
        return "?";
    return msg_names[type];
}

void clr_mdc_msg_encode(const struct clr_mdc_msg *m, struct clr_bcast_msg *out)
{
    uint8_t *p = out->payload;

    memset(out, 0, sizeof(*out));
    out->type = (uint8_t)m->type;
    switch (m->type) {
    case CLR_MDC_METADATA_UPDATED:
    case CLR_MDC_REMOVE:
    case CLR_MDC_RE_ADD:
        clr_wire_put32(p, m->dev_number);
        break;
    case CLR_MDC_RESYNCING:
        clr_wire_put64(p, m->lo);
        clr_wire_put64(p + 8, m->hi);
        clr_wire_put64(p + 16, m->dirty_lo);
        break;
    case CLR_MDC_NEWDISK:
        memcpy(p, m->uuid, 16);
        clr_wire_put32(p + 16, m->dev_number);
        break;
    case CLR_MDC_TAKEOVER:
        clr_wire_put64(p, m->lo);
        clr_wire_put64(p + 8, m->hi);
        clr_wire_put32(p + 16, m->slot);
        break;
    case CLR_MDC_BITMAP_NEEDS_SYNC:
        break;
    }
}

int clr_mdc_msg_decode(const struct clr_bcast_msg *in, struct clr_mdc_msg *out)
{
    const uint8_t *p = in->payload;

    memset(out, 0, sizeof(*out));
    if (in->sender_slot == 0)
        return -EBADMSG;
    out->sender = (int)in->sender_slot - 1;
    out->type = (enum clr_mdc_msg_type)in->type;
    switch (in->type) {
    case CLR_MDC_METADATA_UPDATED:
    case CLR_MDC_REMOVE:
    case CLR_MDC_RE_ADD:
        out->dev_number = clr_wire_get32(p);
        return 0;
    case CLR_MDC_RESYNCING:
        out->lo = clr_wire_get64(p);
        out->hi = clr_wire_get64(p + 8);
        out->dirty_lo = clr_wire_get64(p + 16);
        return 0;
    case CLR_MDC_NEWDISK:
        memcpy(out->uuid, p, 16);
        out->dev_number = clr_wire_get32(p + 16);
        return 0;
    case CLR_MDC_TAKEOVER:
        out->lo = clr_wire_get64(p);
        out->hi = clr_wire_get64(p + 8);
        out->slot = clr_wire_get32(p + 16);
        return 0;
    case CLR_MDC_BITMAP_NEEDS_SYNC:
        return 0;
    default:
        return -EPROTO;
    }
}

void clr_mdc_lvb_encode(const struct clr_mdc_lvb *v, uint8_t out[32])
{
    clr_wire_put64(out, v->win_lo);
    clr_wire_put64(out + 8, v->win_hi);
    clr_wire_put64(out + 16, v->dirty_lo);
    clr_wire_put64(out + 24, v->dirty_hi);
}

void clr_mdc_lvb_decode(struct clr_mdc_lvb *v, const uint8_t in[32])
{
    v->win_lo = clr_wire_get64(in);
    v->win_hi = clr_wire_get64(in + 8);
    v->dirty_lo = clr_wire_get64(in + 16);
    v->dirty_hi = clr_wire_get64(in + 24);
}

void clr_mdc_bitmap_res(unsigned slot, char *buf, size_t len)
{
    /* (slots are < CLR_MDC_MAX_SLOTS: the modulo only bounds the length) */
    snprintf(buf, len, "bitmap%04u", slot % 10000u);
}

/* ---- helpers ---- */

static void mlog(struct clr_mdc *m, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void mlog(struct clr_mdc *m, int prio, const char *fmt, ...)
{
    char buf[256];
    va_list ap;

    if (!m->h.log)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    m->h.log(m->h.arg, prio, buf);
}

static bool overlaps(uint64_t lo, uint64_t hi, uint64_t a, uint64_t b)
{
    return lo < b && a < hi;
}

static bool ext_empty(uint64_t lo, uint64_t hi)
{
    return hi == 0 || lo >= hi;
}

static void ext_union(uint64_t *dlo, uint64_t *dhi, uint64_t lo, uint64_t hi)
{
    if (ext_empty(lo, hi))
        return;
    if (ext_empty(*dlo, *dhi)) {
        *dlo = lo;
        *dhi = hi;
        return;
    }
    if (lo < *dlo)
        *dlo = lo;
    if (hi > *dhi)
        *dhi = hi;
}

static uint64_t nchunks(const struct clr_mdc *m)
{
    return (m->c.sync_sectors + m->c.chunk_sectors - 1) / m->c.chunk_sectors;
}

/* Set chunks in @bits and their sector extent [*lo, *hi). */
static uint64_t bits_extent(const struct clr_mdc *m, const uint8_t *bits, uint64_t *lo, uint64_t *hi)
{
    uint64_t n = nchunks(m), cnt = 0, first = 0, last = 0;

    for (uint64_t k = 0; k < n; k++) {
        if (!(bits[k / 8] & (1u << (k % 8))))
            continue;
        if (!cnt)
            first = k;
        last = k;
        cnt++;
    }
    *lo = *hi = 0;
    if (cnt) {
        *lo = first * m->c.chunk_sectors;
        *hi = (last + 1) * m->c.chunk_sectors;
        if (*hi > m->c.sync_sectors)
            *hi = m->c.sync_sectors;
    }
    return cnt;
}

static void changed_locked(struct clr_mdc *m)
{
    if (m->h.changed)
        m->h.changed(m->h.arg);
}

/* Exclusive use of a lock object: wait (pause) while another caller of
 * this node has an operation on it. */
static int claim(struct clr_mdc *m, uint64_t *mask, uint64_t bit)
{
    for (;;) {
        clr_mutex_lock(&m->mu);
        if (!(*mask & bit)) {
            *mask |= bit;
            clr_mutex_unlock(&m->mu);
            return 0;
        }
        clr_mutex_unlock(&m->mu);
        int r = m->h.pause(m->h.arg, CLAIM_POLL_MS);

        if (r == -ESHUTDOWN)
            return r;
    }
}

static void release(struct clr_mdc *m, uint64_t *mask, uint64_t bit)
{
    clr_mutex_lock(&m->mu);
    *mask &= ~bit;
    clr_mutex_unlock(&m->mu);
}

/* Broadcast; a refusal by any node is an error (-EREMOTEIO) for the
 * messages whose effect every node must have applied. */
static int send_msg(struct clr_mdc *m, const struct clr_mdc_msg *msg)
{
    unsigned refused = 0;
    int r = m->h.send(m->h.arg, msg, &refused);

    clr_mutex_lock(&m->mu);
    if (!r)
        m->msgs_sent++;
    clr_mutex_unlock(&m->mu);
    if (r)
        mlog(m, LOG_ERR, "cluster: broadcast %s failed: %s", clr_mdc_msg_name(msg->type), strerror(-r));
    else if (refused) {
        mlog(m, LOG_WARNING, "cluster: %u node(s) refused %s", refused, clr_mdc_msg_name(msg->type));
        switch (msg->type) {
        case CLR_MDC_TAKEOVER:
        case CLR_MDC_BITMAP_NEEDS_SYNC:
        case CLR_MDC_NEWDISK: /* the no-new-dev try-lock gives the answer */
            break;
        default:
            r = -EREMOTEIO;
        }
    }
    return r;
}

/* Publish our window and dirty extent in our bitmap lock's LVB (PW->PW
 * re-conversion writes it back to the resource). */
static int publish(struct clr_mdc *m)
{
    struct clr_mdc_lvb v;
    uint8_t lvb[32];
    char res[16];
    int r;

    clr_mdc_bitmap_res(m->c.slot, res, sizeof(res));
    r = claim(m, &m->slot_claims, 1ull << m->c.slot);
    if (r)
        return r;
    clr_mutex_lock(&m->mu);
    v.win_lo = m->my_win_lo;
    v.win_hi = m->my_win_hi;
    v.dirty_lo = m->my_dirty_lo;
    v.dirty_hi = m->my_dirty_hi;
    clr_mutex_unlock(&m->mu);
    clr_mdc_lvb_encode(&v, lvb);
    r = m->h.lock(m->h.arg, res, CLR_LOCK_PW, CLR_LOCK_F_VALBLK, lvb);
    release(m, &m->slot_claims, 1ull << m->c.slot);
    if (r)
        mlog(m, LOG_ERR, "cluster: publishing resync state in %s failed: %s", res, strerror(-r));
    return r;
}

static int retake_nonewdev(struct clr_mdc *m);

/* ---- life cycle ---- */

int clr_mdc_init(struct clr_mdc *m, const struct clr_mdc_config *c, const struct clr_mdc_host *h)
{
    if (!c || !h || c->nodes == 0 || c->nodes > CLR_MDC_MAX_SLOTS || c->slot >= c->nodes ||
        c->chunk_sectors == 0 || c->sync_sectors == 0 || !h->lock || !h->unlock || !h->send ||
        !h->bitmap_read || !h->bitmap_clear || !h->bitmap_merge || !h->pause || !h->drain)
        return -EINVAL;
    memset(m, 0, sizeof(*m));
    clr_mutex_init(&m->mu, CLR_RANK_MDC, "mdc mu");
    m->h = *h;
    m->c = *c;
    if (!m->c.window_sectors)
        m->c.window_sectors = 65536;
    m->bm_bytes = (size_t)((nchunks(m) + 7) / 8);
    m->join_bits = malloc(m->bm_bytes);
    m->take_bits = malloc(m->bm_bytes);
    m->gather_bits = malloc(m->bm_bytes);
    if (!m->join_bits || !m->take_bits || !m->gather_bits) {
        clr_mdc_destroy(m);
        return -ENOMEM;
    }
    m->win_from = -1;
    m->last_taken_slot = -1;
    return 0;
}

void clr_mdc_destroy(struct clr_mdc *m)
{
    free(m->join_bits);
    free(m->take_bits);
    free(m->gather_bits);
    m->join_bits = m->take_bits = m->gather_bits = NULL;
    clr_mutex_destroy(&m->mu);
}

/* Read slot @j's bits while holding its lock PW: merge them into ours. */
static int merge_slot(struct clr_mdc *m, unsigned j, uint8_t *bits, uint64_t *cnt, uint64_t *lo, uint64_t *hi)
{
    int r = m->h.bitmap_read(m->h.arg, j, bits, m->bm_bytes);

    if (r) {
        mlog(m, LOG_ERR, "cluster: reading the bitmap of slot %u failed: %s", j, strerror(-r));
        return r;
    }
    *cnt = bits_extent(m, bits, lo, hi);
    if (!*cnt)
        return 0;
    r = m->h.bitmap_merge(m->h.arg, bits, m->bm_bytes);
    if (r)
        mlog(m, LOG_ERR, "cluster: merging the bitmap of slot %u failed: %s", j, strerror(-r));
    return r;
}

int clr_mdc_join(struct clr_mdc *m)
{
    uint64_t lo = 0, hi = 0, dlo = 0, dhi = 0, cnt, total = 0;
    uint8_t lvb[32] = { 0 };
    uint8_t *bits;
    char res[16];
    int r;

    bits = m->join_bits;
    memset(bits, 0, m->bm_bytes);
    /* The lockspace gave us the slot, so another holder of its lock can
     * only be a survivor taking over our previous incarnation's bits:
     * wait for it to finish.  EX first: a joiner reading our LVB waits
     * until we published a fresh one. */
    clr_mdc_bitmap_res(m->c.slot, res, sizeof(res));
    for (unsigned tries = 0;; tries++) {
        r = m->h.lock(m->h.arg, res, CLR_LOCK_EX, CLR_LOCK_F_NOQUEUE | CLR_LOCK_F_VALBLK, lvb);
        if (r != -EAGAIN)
            break;
        if (tries >= JOIN_SLOT_POLLS || m->h.pause(m->h.arg, TAKEOVER_POLL_MS)) {
            mlog(m, LOG_ERR, "cluster: bitmap slot %u stays locked by another node", m->c.slot);
            r = -EBUSY;
            break;
        }
    }
    if (r)
        goto out;
    /* Our own bits (the host loaded them as NEEDED): we announce them. */
    r = m->h.bitmap_read(m->h.arg, m->c.slot, bits, m->bm_bytes);
    if (r == 0 && m->h.log_replay)
        r = m->h.log_replay(m->h.arg, m->c.slot);
    if (r)
        goto fail;
    total = bits_extent(m, bits, &dlo, &dhi);
    {
        struct clr_mdc_lvb v = { 0, 0, dlo, dhi };

        clr_mdc_lvb_encode(&v, lvb);
        r = m->h.lock(m->h.arg, res, CLR_LOCK_PW, CLR_LOCK_F_VALBLK, lvb);
    }
    if (!r)
        r = m->h.lock(m->h.arg, RES_NONEWDEV, CLR_LOCK_CR, 0, NULL);
    if (!r)
        r = m->h.lock(m->h.arg, RES_RESYNC, CLR_LOCK_NL, 0, NULL);
    if (r)
        goto fail;

    for (unsigned j = 0; j < m->c.nodes; j++) {
        struct clr_mdc_lvb v;
        uint64_t seq0;

        if (j == m->c.slot)
            continue;
        clr_mdc_bitmap_res(j, res, sizeof(res));
        memset(lvb, 0, sizeof(lvb));
        r = m->h.lock(m->h.arg, res, CLR_LOCK_PW, CLR_LOCK_F_NOQUEUE | CLR_LOCK_F_VALBLK, lvb);
        if (!r) {
            /* No live owner: resync what it left dirty (its bits stay). */
            r = merge_slot(m, j, bits, &cnt, &lo, &hi);
            if (r == 0 && m->h.log_replay)
                r = m->h.log_replay(m->h.arg, j);
            m->h.unlock(m->h.arg, res);
            if (r)
                goto fail;
            if (cnt) {
                mlog(m, LOG_NOTICE,
                     "cluster: slot %u has no owner and %" PRIu64 " dirty chunk(s): resyncing them", j, cnt);
                ext_union(&dlo, &dhi, lo, hi);
                total += cnt;
            }
            continue;
        }
        if (r != -EAGAIN)
            goto fail;
        /* A live owner: learn its resync window and dirty extent, unless
         * a message from it arrived meanwhile (it is newer: an owner
         * publishes its LVB before it broadcasts). */
        clr_mutex_lock(&m->mu);
        seq0 = m->rx_seq[j] + m->about_seq[j];
        clr_mutex_unlock(&m->mu);
        memset(lvb, 0, sizeof(lvb));
        r = m->h.lock(m->h.arg, res, CLR_LOCK_CR, CLR_LOCK_F_VALBLK, lvb);
        if (r)
            goto fail;
        m->h.unlock(m->h.arg, res);
        clr_mdc_lvb_decode(&v, lvb);
        clr_mutex_lock(&m->mu);
        if (m->rx_seq[j] + m->about_seq[j] != seq0) {
            clr_mutex_unlock(&m->mu);
            continue;
        }
        if (v.win_hi && v.win_lo < v.win_hi) {
            m->win_from = (int)j;
            m->win_lo = v.win_lo;
            m->win_hi = v.win_hi;
        }
        if (!ext_empty(v.dirty_lo, v.dirty_hi)) {
            m->dirty_lo[j] = v.dirty_lo;
            m->dirty_hi[j] = v.dirty_hi;
        }
        changed_locked(m);
        clr_mutex_unlock(&m->mu);
    }

    clr_mutex_lock(&m->mu);
    m->my_dirty_lo = dlo;
    m->my_dirty_hi = dhi;
    m->joined = true;
    clr_mutex_unlock(&m->mu);
    r = publish(m);
    if (r)
        goto fail;
    {
        /* Always: survivors waiting to take our slot over stop waiting. */
        struct clr_mdc_msg msg = { .type = CLR_MDC_TAKEOVER, .lo = dlo, .hi = dhi, .slot = m->c.slot };

        r = send_msg(m, &msg);
        if (r)
            goto fail;
    }
    if (total && m->h.want_resync)
        m->h.want_resync(m->h.arg);
    mlog(m, LOG_INFO, "cluster: joined as slot %u of %u (%" PRIu64 " dirty chunk(s))", m->c.slot, m->c.nodes,
         total);
    return 0;

fail:
    clr_mutex_lock(&m->mu);
    m->joined = false;
    clr_mutex_unlock(&m->mu);
    m->h.unlock(m->h.arg, RES_RESYNC);
    m->h.unlock(m->h.arg, RES_NONEWDEV);
    clr_mdc_bitmap_res(m->c.slot, res, sizeof(res));
    m->h.unlock(m->h.arg, res);
out:
    return r;
}

int clr_mdc_leave(struct clr_mdc *m, bool unclean)
{
    char res[16];
    bool joined;
    int r = 0;

    clr_mutex_lock(&m->mu);
    joined = m->joined;
    m->leaving = true;
    clr_mutex_unlock(&m->mu);
    if (CLR_RULES_FAULT(CLR_RULES_FAULT_LEAVE_NO_SYNC))
        unclean = false;
    if (joined && unclean) {
        struct clr_mdc_msg msg = { .type = CLR_MDC_BITMAP_NEEDS_SYNC };

        r = send_msg(m, &msg);
    }
    m->h.unlock(m->h.arg, RES_RESYNC);
    m->h.unlock(m->h.arg, RES_META);
    m->h.unlock(m->h.arg, RES_NONEWDEV);
    clr_mdc_bitmap_res(m->c.slot, res, sizeof(res));
    m->h.unlock(m->h.arg, res);
    clr_mutex_lock(&m->mu);
    m->joined = false;
    m->resync_locked = false;
    clr_mutex_unlock(&m->mu);
    return r;
}

/* ---- membership ---- */

void clr_mdc_on_prep(struct clr_mdc *m)
{
    clr_mutex_lock(&m->mu);
    m->recovering = true;
    changed_locked(m);
    clr_mutex_unlock(&m->mu);
}

void clr_mdc_on_member_lost(struct clr_mdc *m, unsigned slot)
{
    clr_mutex_lock(&m->mu);
    if (slot < CLR_MDC_MAX_SLOTS && slot != m->c.slot) {
        if (!m->lost)
            m->holds++;
        m->lost |= 1ull << slot;
    }
    changed_locked(m);
    clr_mutex_unlock(&m->mu);
}

void clr_mdc_on_member_failed(struct clr_mdc *m, unsigned slot)
{
    clr_mutex_lock(&m->mu);
    if (slot < m->c.nodes && slot != m->c.slot)
        m->pending |= 1ull << slot;
    if (slot < CLR_MDC_MAX_SLOTS)
        m->lost &= ~(1ull << slot);
    changed_locked(m);
    clr_mutex_unlock(&m->mu);
}

void clr_mdc_on_done(struct clr_mdc *m)
{
    clr_mutex_lock(&m->mu);
    m->recovering = false;
    m->lost = 0;
    changed_locked(m);
    clr_mutex_unlock(&m->mu);
}

bool clr_mdc_recovery_pending(struct clr_mdc *m)
{
    bool p;

    clr_mutex_lock(&m->mu);
    p = m->pending != 0;
    clr_mutex_unlock(&m->mu);
    return p;
}

/* Slot @s is dealt with: out of the queue, its window and extent gone. */
static void slot_done_locked(struct clr_mdc *m, unsigned s)
{
    m->pending &= ~(1ull << s);
    if (m->win_from == (int)s) {
        m->win_from = -1;
        m->win_lo = m->win_hi = 0;
    }
    m->dirty_lo[s] = m->dirty_hi[s] = 0;
    changed_locked(m);
}

static int take_slot(struct clr_mdc *m, unsigned s, uint8_t *bits)
{
    uint64_t cnt = 0, lo = 0, hi = 0;
    uint8_t lvb[32] = { 0 };
    char res[16];
    int r;

    clr_mdc_bitmap_res(s, res, sizeof(res));
    r = claim(m, &m->slot_claims, 1ull << s);
    if (r)
        return r;
    r = m->h.lock(m->h.arg, res, CLR_LOCK_PW, CLR_LOCK_F_NOQUEUE | CLR_LOCK_F_VALBLK, lvb);
    if (r) {
        release(m, &m->slot_claims, 1ull << s);
        return r; /* -EAGAIN: owner not gone yet, or another node holds it */
    }
    /* The departed owner's window and extent must not be read as a live
     * owner's by a joiner that finds the lock busy (with us). */
    memset(lvb, 0, sizeof(lvb));
    r = m->h.lock(m->h.arg, res, CLR_LOCK_PW, CLR_LOCK_F_VALBLK, lvb);
    if (r)
        goto out;
    r = claim(m, &m->claims, C_EXTENT);
    if (r)
        goto out;
    r = merge_slot(m, s, bits, &cnt, &lo, &hi);
    if (r == 0 && m->h.log_replay)
        r = m->h.log_replay(m->h.arg, s);
    if (r) {
        release(m, &m->claims, C_EXTENT);
        goto out;
    }
    if (cnt) {
        struct clr_mdc_msg msg = { .type = CLR_MDC_TAKEOVER, .lo = lo, .hi = hi, .slot = s };
        int cr = m->h.bitmap_clear(m->h.arg, s);

        /* Not clearing is safe: the bits are in ours too (resync twice). */
        if (cr)
            mlog(m, LOG_WARNING, "cluster: clearing the bitmap of slot %u failed: %s", s, strerror(-cr));
        clr_mutex_lock(&m->mu);
        ext_union(&m->my_dirty_lo, &m->my_dirty_hi, lo, hi);
        m->recovered_slots++;
        m->last_taken_slot = (int)s;
        m->last_taken_chunks = cnt;
        clr_mutex_unlock(&m->mu);
        mlog(m, LOG_NOTICE,
             "cluster: took over slot %u: %" PRIu64 " dirty chunk(s) in sectors [%" PRIu64 ", %" PRIu64 ")",
             s, cnt, lo, hi);
        /* Announce everything we still need, as it is now (our own
         * resync may already have done some of it). */
        if (m->h.needed_extent && !m->h.needed_extent(m->h.arg, &lo, &hi)) {
            msg.lo = lo;
            msg.hi = hi;
        }
        publish(m);
        /* Failure to announce is safe too: the others keep polling the
         * slot, get its lock after us and find it clean. */
        send_msg(m, &msg);
        if (m->h.want_resync)
            m->h.want_resync(m->h.arg);
    }
    release(m, &m->claims, C_EXTENT);
    clr_mutex_lock(&m->mu);
    slot_done_locked(m, s);
    clr_mutex_unlock(&m->mu);
out:
    m->h.unlock(m->h.arg, res);
    release(m, &m->slot_claims, 1ull << s);
    /* The dead node may have marked a member Faulty on disk and died
     * before its METADATA_UPDATED went out, or after a NEWDISK we
     * answered: re-read the superblock, and answer "no" again. */
    if (!r && m->h.reload_sb) {
        struct clr_mdc_rx none = { -1, -1 };

        r = m->h.reload_sb(m->h.arg, CLR_MDC_ANY_DEV, &none);
    }
    if (!r)
        r = retake_nonewdev(m);
    return r;
}

int clr_mdc_recover(struct clr_mdc *m)
{
    uint8_t *bits = m->take_bits;
    int r = 0;

    memset(bits, 0, m->bm_bytes);
    for (;;) {
        uint64_t p;
        unsigned s;

        clr_mutex_lock(&m->mu);
        p = m->pending;
        clr_mutex_unlock(&m->mu);
        if (!p)
            break;
        s = 63u - (unsigned)__builtin_clzll(p);
        r = take_slot(m, s, bits);
        if (r == -EAGAIN) {
            r = m->h.pause(m->h.arg, TAKEOVER_POLL_MS);
            if (r == -ESHUTDOWN)
                break;
            r = 0;
            continue;
        }
        if (r)
            break;
    }
    return r;
}

/* ---- our resync ---- */

int clr_mdc_resync_begin(struct clr_mdc *m, uint64_t dirty_lo, uint64_t dirty_hi)
{
    int r = claim(m, &m->claims, C_RESYNC);

    if (r)
        return r;
    r = m->h.lock(m->h.arg, RES_RESYNC, CLR_LOCK_EX, 0, NULL);
    if (r) {
        release(m, &m->claims, C_RESYNC);
        return r;
    }
    clr_mutex_lock(&m->mu);
    m->resync_locked = true;
    m->my_win_lo = m->my_win_hi = 0;
    m->my_dirty_lo = dirty_lo;
    m->my_dirty_hi = dirty_hi;
    clr_mutex_unlock(&m->mu);
    publish(m);
    return 0; /* the claim on `resync` is kept until clr_mdc_resync_end */
}

int clr_mdc_resync_window(struct clr_mdc *m, uint64_t lo, uint64_t hi, uint64_t end, uint64_t dirty_lo)
{
    struct clr_mdc_msg msg = { .type = CLR_MDC_RESYNCING };
    uint64_t nlo = lo, nhi;
    int r;

    clr_mutex_lock(&m->mu);
    if (m->my_win_hi && lo >= m->my_win_lo && hi <= m->my_win_hi) {
        clr_mutex_unlock(&m->mu);
        return 0;
    }
    clr_mutex_unlock(&m->mu);
    nhi = lo + m->c.window_sectors;
    if (nhi > end)
        nhi = end;
    if (nhi < hi)
        nhi = hi;
    r = claim(m, &m->claims, C_EXTENT);
    if (r)
        return r;
    {
        uint64_t qlo, qhi;

        if (m->h.needed_extent && !m->h.needed_extent(m->h.arg, &qlo, &qhi))
            dirty_lo = ext_empty(qlo, qhi) ? UINT64_MAX : qlo;
    }
    clr_mutex_lock(&m->mu);
    m->my_win_lo = nlo;
    m->my_win_hi = nhi;
    if (dirty_lo != UINT64_MAX)
        m->my_dirty_lo = dirty_lo;
    clr_mutex_unlock(&m->mu);
    r = publish(m);
    if (!r) {
        msg.lo = nlo;
        msg.hi = nhi;
        msg.dirty_lo = dirty_lo;
        /* Every node has drained its writes in the window once this
         * returns. */
        r = send_msg(m, &msg);
    }
    release(m, &m->claims, C_EXTENT);
    return r;
}

int clr_mdc_resync_end(struct clr_mdc *m, uint64_t dirty_lo, uint64_t dirty_hi)
{
    struct clr_mdc_msg msg = { .type = CLR_MDC_RESYNCING };
    int r, r2, cr;

    cr = claim(m, &m->claims, C_EXTENT);
    if (!cr && m->h.needed_extent) {
        uint64_t qlo, qhi;

        if (!m->h.needed_extent(m->h.arg, &qlo, &qhi)) {
            dirty_lo = qlo;
            dirty_hi = qhi;
        }
    }
    clr_mutex_lock(&m->mu);
    m->my_win_lo = m->my_win_hi = 0;
    if (ext_empty(dirty_lo, dirty_hi))
        dirty_lo = dirty_hi = 0;
    m->my_dirty_lo = dirty_lo;
    m->my_dirty_hi = dirty_hi;
    clr_mutex_unlock(&m->mu);
    r = publish(m);
    msg.dirty_lo = dirty_hi ? dirty_lo : UINT64_MAX;
    r2 = send_msg(m, &msg);
    if (!r)
        r = r2;
    if (!cr)
        release(m, &m->claims, C_EXTENT);
    r2 = m->h.lock(m->h.arg, RES_RESYNC, CLR_LOCK_NL, 0, NULL);
    if (!r)
        r = r2;
    clr_mutex_lock(&m->mu);
    m->resync_locked = false;
    m->claims &= ~(uint64_t)C_RESYNC;
    clr_mutex_unlock(&m->mu);
    return r;
}

/* ---- receiving ---- */

/* Back to no-new-dev CR if a NEWDISK we found left us at NL. */
static int retake_nonewdev(struct clr_mdc *m)
{
    bool dropped;
    int r;

    clr_mutex_lock(&m->mu);
    dropped = m->nonewdev_dropped;
    clr_mutex_unlock(&m->mu);
    if (!dropped)
        return 0;
    r = claim(m, &m->claims, C_NONEWDEV);
    if (r)
        return r;
    r = m->h.lock(m->h.arg, RES_NONEWDEV, CLR_LOCK_CR, 0, NULL);
    clr_mutex_lock(&m->mu);
    if (!r)
        m->nonewdev_dropped = false;
    m->claims &= ~(uint64_t)C_NONEWDEV;
    clr_mutex_unlock(&m->mu);
    if (r)
        mlog(m, LOG_ERR, "cluster: re-taking no-new-dev failed: %s", strerror(-r));
    return r;
}

int clr_mdc_receive(struct clr_mdc *m, const struct clr_bcast_msg *raw)
{
    struct clr_mdc_msg msg;
    int r = clr_mdc_msg_decode(raw, &msg);
    struct clr_mdc_rx rx = { msg.sender, (int)msg.type };
    unsigned s;

    if (r) {
        mlog(m, LOG_WARNING, "cluster: ignoring a message of unknown type %u from slot %u", raw->type,
             raw->sender_slot);
        return r;
    }
    if (msg.sender < 0 || (unsigned)msg.sender >= m->c.nodes || (unsigned)msg.sender == m->c.slot) {
        mlog(m, LOG_WARNING, "cluster: ignoring %s from invalid slot %d", clr_mdc_msg_name(msg.type),
             msg.sender);
        return -EBADMSG;
    }
    s = (unsigned)msg.sender;
    clr_mutex_lock(&m->mu);
    m->msgs_received++;
    m->rx_seq[s]++;
    clr_mutex_unlock(&m->mu);

    switch (msg.type) {
    case CLR_MDC_RESYNCING:
        clr_mutex_lock(&m->mu);
        if (msg.hi && msg.lo < msg.hi) {
            m->win_from = (int)s;
            m->win_lo = msg.lo;
            m->win_hi = msg.hi;
        } else if (m->win_from == (int)s) {
            m->win_from = -1;
            m->win_lo = m->win_hi = 0;
        }
        m->dirty_lo[s] = msg.dirty_lo;
        if (ext_empty(m->dirty_lo[s], m->dirty_hi[s]))
            m->dirty_lo[s] = m->dirty_hi[s] = 0;
        changed_locked(m);
        clr_mutex_unlock(&m->mu);
        /* Writes already issued inside the window finish before we ack. */
        if (msg.hi && msg.lo < msg.hi && !CLR_RULES_FAULT(CLR_RULES_FAULT_NO_DRAIN))
            return m->h.drain(m->h.arg, msg.lo, msg.hi);
        return 0;

    case CLR_MDC_TAKEOVER:
        if (msg.slot >= m->c.nodes)
            return -EBADMSG;
        if (msg.slot == m->c.slot) {
            bool joined;

            clr_mutex_lock(&m->mu);
            joined = m->joined;
            clr_mutex_unlock(&m->mu);
            if (!joined)
                return 0; /* our previous incarnation's bits: fine */
            mlog(m, LOG_CRIT, "cluster: slot %u claims to have taken over our slot %u", s, m->c.slot);
            return -EBADMSG;
        }
        clr_mutex_lock(&m->mu);
        if (msg.slot != s) {
            m->about_seq[msg.slot]++;
            slot_done_locked(m, msg.slot);
            ext_union(&m->dirty_lo[s], &m->dirty_hi[s], msg.lo, msg.hi);
        } else {
            /* a node (re)joined: its previous incarnation's window is
             * gone, its extent is what it announces */
            if (m->win_from == (int)s) {
                m->win_from = -1;
                m->win_lo = m->win_hi = 0;
            }
            m->dirty_lo[s] = ext_empty(msg.lo, msg.hi) ? 0 : msg.lo;
            m->dirty_hi[s] = ext_empty(msg.lo, msg.hi) ? 0 : msg.hi;
        }
        m->pending &= ~(1ull << msg.slot);
        changed_locked(m);
        clr_mutex_unlock(&m->mu);
        /* A dead node (or a rejoining one's previous incarnation) may have
         * failed a member on disk without announcing it. */
        return m->h.reload_sb ? m->h.reload_sb(m->h.arg, CLR_MDC_ANY_DEV, &rx) : 0;

    case CLR_MDC_METADATA_UPDATED:
        retake_nonewdev(m);
        return m->h.reload_sb ? m->h.reload_sb(m->h.arg, msg.dev_number, &rx) : 0;

    case CLR_MDC_NEWDISK:
        r = m->h.find_disk ? m->h.find_disk(m->h.arg, msg.uuid, msg.dev_number, &rx) : -ENOENT;
        if (r) {
            mlog(m, LOG_WARNING, "cluster: slot %u adds device %u, which this node cannot find", s,
                 msg.dev_number);
            /* Holding CR is the answer: re-take it if an earlier NEWDISK
             * (whose adder died before METADATA_UPDATED) left us at NL. */
            return retake_nonewdev(m);
        }
        r = claim(m, &m->claims, C_NONEWDEV);
        if (r)
            return r;
        r = m->h.lock(m->h.arg, RES_NONEWDEV, CLR_LOCK_NL, 0, NULL);
        clr_mutex_lock(&m->mu);
        if (!r)
            m->nonewdev_dropped = true;
        m->claims &= ~(uint64_t)C_NONEWDEV;
        clr_mutex_unlock(&m->mu);
        return r;

    case CLR_MDC_REMOVE:
        return m->h.remote_remove ? m->h.remote_remove(m->h.arg, msg.dev_number, &rx) : 0;

    case CLR_MDC_RE_ADD:
        return m->h.remote_readd ? m->h.remote_readd(m->h.arg, msg.dev_number, &rx) : 0;

    case CLR_MDC_BITMAP_NEEDS_SYNC:
        clr_mutex_lock(&m->mu);
        m->pending |= 1ull << s;
        changed_locked(m);
        clr_mutex_unlock(&m->mu);
        return 0;
    }
    return -EPROTO;
}

/* ---- superblock changes initiated here ---- */

int clr_mdc_meta_begin(struct clr_mdc *m)
{
    int r = claim(m, &m->claims, C_META);

    if (r)
        return r;
    r = m->h.lock(m->h.arg, RES_META, CLR_LOCK_EX, 0, NULL);
    if (r)
        release(m, &m->claims, C_META);
    return r;
}

int clr_mdc_meta_end(struct clr_mdc *m, uint32_t good_dev, bool send)
{
    int r = 0, r2;

    if (send) {
        struct clr_mdc_msg msg = { .type = CLR_MDC_METADATA_UPDATED, .dev_number = good_dev };

        r = send_msg(m, &msg);
    }
    r2 = m->h.lock(m->h.arg, RES_META, CLR_LOCK_NL, 0, NULL);
    release(m, &m->claims, C_META);
    return r ? r : r2;
}

int clr_mdc_newdisk(struct clr_mdc *m, const uint8_t uuid[16], uint32_t dev_number)
{
    struct clr_mdc_msg msg = { .type = CLR_MDC_NEWDISK, .dev_number = dev_number };
    int r;

    memcpy(msg.uuid, uuid, 16);
    r = send_msg(m, &msg);
    if (r)
        return r;
    r = claim(m, &m->claims, C_NONEWDEV);
    if (r)
        return r;
    /* Granted only if every other node dropped its CR: all found it. */
    r = m->h.lock(m->h.arg, RES_NONEWDEV, CLR_LOCK_EX, CLR_LOCK_F_NOQUEUE, NULL);
    if (r == -EAGAIN && CLR_RULES_FAULT(CLR_RULES_FAULT_NEWDISK_IGNORE))
        r = 0;
    if (!r)
        r = m->h.lock(m->h.arg, RES_NONEWDEV, CLR_LOCK_CR, 0, NULL);
    else if (r == -EAGAIN)
        r = -ENOENT;
    release(m, &m->claims, C_NONEWDEV);
    return r;
}

int clr_mdc_send_remove(struct clr_mdc *m, uint32_t dev_number)
{
    struct clr_mdc_msg msg = { .type = CLR_MDC_REMOVE, .dev_number = dev_number };

    return send_msg(m, &msg);
}

int clr_mdc_send_readd(struct clr_mdc *m, uint32_t dev_number)
{
    struct clr_mdc_msg msg = { .type = CLR_MDC_RE_ADD, .dev_number = dev_number };

    return send_msg(m, &msg);
}

int clr_mdc_gather_bitmaps(struct clr_mdc *m)
{
    uint8_t *bits = m->gather_bits;
    int r = 0;

    memset(bits, 0, m->bm_bytes);
    for (unsigned j = 0; j < m->c.nodes && !r; j++) {
        uint64_t cnt, lo, hi;

        if (j != m->c.slot)
            r = merge_slot(m, j, bits, &cnt, &lo, &hi);
    }
    return r;
}

/* ---- data path queries ---- */

/* The admission facts (m->mu held). */
static struct clr_rules_window window_locked(const struct clr_mdc *m)
{
    struct clr_rules_window w = { m->lost != 0, m->win_from, m->win_lo, m->win_hi };

    return w;
}

bool clr_mdc_write_blocked(struct clr_mdc *m, uint64_t lo, uint64_t hi)
{
    struct clr_rules_window w;

    clr_mutex_lock(&m->mu);
    w = window_locked(m);
    clr_mutex_unlock(&m->mu);
    return clr_rules_in_window(&w, lo, hi);
}

enum clr_rules_admit clr_mdc_admit(struct clr_mdc *m, uint64_t lo, uint64_t hi)
{
    struct clr_rules_window w;

    clr_mutex_lock(&m->mu);
    w = window_locked(m);
    clr_mutex_unlock(&m->mu);
    return clr_rules_admit(&w, lo, hi);
}

bool clr_mdc_writes_held(struct clr_mdc *m)
{
    bool b;

    clr_mutex_lock(&m->mu);
    b = m->lost != 0;
    clr_mutex_unlock(&m->mu);
    return b;
}

bool clr_mdc_read_first(struct clr_mdc *m, uint64_t lo, uint64_t hi)
{
    bool b;

    clr_mutex_lock(&m->mu);
    b = m->recovering || m->pending || (m->win_from >= 0 && overlaps(lo, hi, m->win_lo, m->win_hi));
    if (CLR_RULES_FAULT(CLR_RULES_FAULT_BALANCE_RECOVERY))
        b = false;
    for (unsigned s = 0; s < m->c.nodes && !b; s++)
        b = s != m->c.slot && !ext_empty(m->dirty_lo[s], m->dirty_hi[s]) &&
            overlaps(lo, hi, m->dirty_lo[s], m->dirty_hi[s]);
    clr_mutex_unlock(&m->mu);
    return b;
}

void clr_mdc_stats(struct clr_mdc *m, struct clr_mdc_stats *st)
{
    clr_mutex_lock(&m->mu);
    st->slot = m->c.slot;
    st->recovered_slots = m->recovered_slots;
    st->msgs_sent = m->msgs_sent;
    st->msgs_received = m->msgs_received;
    st->recovering = m->recovering;
    st->pending = m->pending;
    st->win_from = m->win_from;
    st->win_lo = m->win_lo;
    st->win_hi = m->win_hi;
    st->last_taken_slot = m->last_taken_slot;
    st->last_taken_chunks = m->last_taken_chunks;
    st->lost = m->lost;
    st->holds = m->holds;
    clr_mutex_unlock(&m->mu);
}
