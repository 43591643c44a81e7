/* The replicated lockspace (see lock_repl.h for the protocol). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lock/lock_repl.h"
#include "lock/lock_wire.h"

#define REPL_MAX_MEMBERS 256

struct item {
    struct item *next;
    bool is_conf;
    uint32_t nodeid, pid;
    uint8_t *buf;
    size_t len;
    struct clr_repl_addr *addrs; /* members, left, joined back to back */
    size_t nm, nl, nj;
};

struct clr_repl {
    uint32_t my_nodeid, my_pid;
    const struct clr_repl_ops *ops;
    void *arg;
    struct clr_lt *lt;
    struct clr_repl_member mem[REPL_MAX_MEMBERS];
    size_t nmem;
    uint64_t next_inc;
    bool synced, recovering, replaying, stale;
    /* the current CPG view, kept outside the replicated state */
    struct clr_repl_addr view[REPL_MAX_MEMBERS];
    bool asked[REPL_MAX_MEMBERS]; /* sent NEED_STATE since the view began */
    size_t nview;
    uint64_t need_seq;
    bool buffering;
    struct item *bhead, *btail;
};

/* ---- message encoding ---- */

size_t clr_repl_msg_size(const struct clr_repl_msg *m)
{
    return CLR_REPL_MSG_HDR + m->namelen + m->payload_len;
}

long clr_repl_msg_encode(const struct clr_repl_msg *m, uint8_t *buf, size_t len)
{
    size_t need = clr_repl_msg_size(m);

    if (len < need || m->namelen > CLR_LOCK_NAME_MAX)
        return -ENOSPC;
    memset(buf, 0, CLR_REPL_MSG_HDR);
    buf[0] = CLR_REPL_MSG_VERSION;
    buf[1] = m->type;
    clr_wire_put16(buf + 2, (uint16_t)m->flags);
    clr_wire_put32(buf + 4, (uint32_t)m->mode);
    clr_wire_put64(buf + 8, m->lkid);
    clr_wire_put64(buf + 16, m->arg);
    clr_wire_put32(buf + 24, m->target_nodeid);
    clr_wire_put32(buf + 28, m->target_pid);
    memcpy(buf + 32, m->lvb, CLR_LOCK_LVB_LEN);
    buf[64] = m->has_lvb;
    buf[65] = (uint8_t)m->namelen;
    clr_wire_put16(buf + 66, 0);
    if (m->namelen)
        memcpy(buf + CLR_REPL_MSG_HDR, m->name, m->namelen);
    if (m->payload_len)
        memcpy(buf + CLR_REPL_MSG_HDR + m->namelen, m->payload, m->payload_len);
    return (long)need;
}

int clr_repl_msg_decode(struct clr_repl_msg *m, const uint8_t *buf, size_t len)
{
    memset(m, 0, sizeof(*m));
    if (len < CLR_REPL_MSG_HDR || buf[0] != CLR_REPL_MSG_VERSION)
        return -EBADMSG;
    m->type = buf[1];
    if (m->type < CLR_REPL_MSG_REQUEST || m->type > CLR_REPL_MSG_CONFIRM_DEAD)
        return -EBADMSG;
    m->flags = clr_wire_get16(buf + 2);
    m->mode = (int32_t)clr_wire_get32(buf + 4);
    m->lkid = clr_wire_get64(buf + 8);
    m->arg = clr_wire_get64(buf + 16);
    m->target_nodeid = clr_wire_get32(buf + 24);
    m->target_pid = clr_wire_get32(buf + 28);
    memcpy(m->lvb, buf + 32, CLR_LOCK_LVB_LEN);
    m->has_lvb = buf[64] != 0;
    m->namelen = buf[65];
    if (m->namelen > CLR_LOCK_NAME_MAX || CLR_REPL_MSG_HDR + m->namelen > len)
        return -EBADMSG;
    m->name = (const char *)buf + CLR_REPL_MSG_HDR;
    m->payload = buf + CLR_REPL_MSG_HDR + m->namelen;
    m->payload_len = len - CLR_REPL_MSG_HDR - m->namelen;
    return 0;
}

/* ---- snapshot encoding: "CRS1", le64 next_inc, le32 n, members
 * (le32 nodeid, le32 pid, le64 inc, le32 slot, u8 state), table ---- */

#define SNAP_MEMBER 21

static uint8_t *snapshot_encode(const struct clr_repl *r, size_t *lenp)
{
    size_t tlen = clr_lt_encoded_size(r->lt);
    size_t len = 16 + r->nmem * SNAP_MEMBER + tlen;
    uint8_t *buf = malloc(len), *p;

    if (!buf)
        return NULL;
    memcpy(buf, "CRS1", 4);
    clr_wire_put64(buf + 4, r->next_inc);
    clr_wire_put32(buf + 12, (uint32_t)r->nmem);
    p = buf + 16;
    for (size_t i = 0; i < r->nmem; i++, p += SNAP_MEMBER) {
        clr_wire_put32(p, r->mem[i].nodeid);
        clr_wire_put32(p + 4, r->mem[i].pid);
        clr_wire_put64(p + 8, r->mem[i].inc);
        clr_wire_put32(p + 16, (uint32_t)r->mem[i].slot);
        p[20] = (uint8_t)r->mem[i].state;
    }
    clr_lt_encode(r->lt, p, tlen);
    *lenp = len;
    return buf;
}

static int snapshot_decode(struct clr_repl *r, const uint8_t *buf, size_t len)
{
    const uint8_t *p;
    uint32_t n;

    if (len < 16 || memcmp(buf, "CRS1", 4) != 0)
        return -EBADMSG;
    n = clr_wire_get32(buf + 12);
    if (n > REPL_MAX_MEMBERS || len < 16 + (size_t)n * SNAP_MEMBER)
        return -EBADMSG;
    r->next_inc = clr_wire_get64(buf + 4);
    p = buf + 16;
    for (uint32_t i = 0; i < n; i++, p += SNAP_MEMBER) {
        r->mem[i].nodeid = clr_wire_get32(p);
        r->mem[i].pid = clr_wire_get32(p + 4);
        r->mem[i].inc = clr_wire_get64(p + 8);
        r->mem[i].slot = (int)clr_wire_get32(p + 16);
        r->mem[i].state = p[20];
        if (r->mem[i].state < CLR_REPL_M_UNSYNCED || r->mem[i].state > CLR_REPL_M_FAILED)
            return -EBADMSG;
    }
    r->nmem = n;
    return clr_lt_decode(r->lt, p, len - (size_t)(p - buf));
}

/* ---- helpers ---- */

static void emit_effect(void *arg, const struct clr_lt_effect *e)
{
    struct clr_repl *r = arg;

    if (r->synced && !r->replaying && e->owner == clr_repl_my_inc(r))
        r->ops->effect(r->arg, e);
}

static void emit_event(struct clr_repl *r, enum clr_ls_event_type type, const struct clr_repl_member *m)
{
    struct clr_ls_event ev = { .type = type };

    if (r->replaying || !r->synced)
        return;
    if (m) {
        ev.member = m->inc;
        ev.nodeid = m->nodeid;
        ev.pid = m->pid;
        ev.slot = m->slot;
    }
    ev.our_slot = clr_repl_my_slot(r);
    r->ops->event(r->arg, &ev);
}

static struct clr_repl_member *find_proc(struct clr_repl *r, uint32_t nodeid, uint32_t pid, bool failed)
{
    for (size_t i = 0; i < r->nmem; i++) {
        struct clr_repl_member *m = &r->mem[i];

        if (m->nodeid == nodeid && m->pid == pid && (m->state == CLR_REPL_M_FAILED) == failed)
            return m;
    }
    return NULL;
}

static struct clr_repl_member *find_inc(struct clr_repl *r, uint64_t inc)
{
    for (size_t i = 0; i < r->nmem; i++)
        if (r->mem[i].inc == inc)
            return &r->mem[i];
    return NULL;
}

static void member_remove(struct clr_repl *r, struct clr_repl_member *m)
{
    size_t i = (size_t)(m - r->mem);

    memmove(&r->mem[i], &r->mem[i + 1], (r->nmem - i - 1) * sizeof(*m));
    r->nmem--;
}

static int lowest_free_slot(const struct clr_repl *r)
{
    for (int s = 1;; s++) {
        bool used = false;

        for (size_t i = 0; i < r->nmem; i++)
            used |= r->mem[i].slot == s;
        if (!used)
            return s;
    }
}

static int addr_cmp(const void *a, const void *b)
{
    const struct clr_repl_addr *x = a, *y = b;

    if (x->nodeid != y->nodeid)
        return x->nodeid < y->nodeid ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return 0;
}

static bool is_me(const struct clr_repl *r, uint32_t nodeid, uint32_t pid)
{
    return nodeid == r->my_nodeid && pid == r->my_pid;
}

/* A failed member is confirmed dead: release its locks, tell the engine. */
static void confirm_dead(struct clr_repl *r, struct clr_repl_member *m)
{
    struct clr_repl_member copy = *m;

    member_remove(r, m);
    /* the event first: the engine hears of the death before any grant
     * the death allows */
    emit_event(r, CLR_LS_EV_MEMBER_FAILED, &copy);
    clr_lt_remove_owner(r->lt, copy.inc, true, emit_effect, r);
}

static void check_done(struct clr_repl *r)
{
    if (!r->recovering)
        return;
    for (size_t i = 0; i < r->nmem; i++)
        if (r->mem[i].state != CLR_REPL_M_LIVE)
            return;
    r->recovering = false;
    emit_event(r, CLR_LS_EV_DONE, NULL);
}

static void begin_change(struct clr_repl *r)
{
    if (!r->recovering) {
        r->recovering = true;
        emit_event(r, CLR_LS_EV_PREP, NULL);
    }
}

static void send_msg(struct clr_repl *r, const struct clr_repl_msg *m)
{
    size_t len = clr_repl_msg_size(m);
    uint8_t *buf = malloc(len);

    if (!buf)
        return;
    clr_repl_msg_encode(m, buf, len);
    r->ops->send(r->arg, buf, len);
    free(buf);
}

/* ---- synced processing ---- */

static void synced_confchg(struct clr_repl *r, const struct clr_repl_addr *members, size_t nm,
                           const struct clr_repl_addr *left, size_t nl, const struct clr_repl_addr *joined,
                           size_t nj)
{
    struct clr_repl_addr sorted[REPL_MAX_MEMBERS];
    bool merge = false;

    if (nl || nj)
        begin_change(r);
    /* Partition merge: the side with the lower lowest member wins. */
    for (size_t i = 0; i < nj; i++)
        merge |= joined[i].reason == CLR_REPL_NODEUP;
    if (merge) {
        struct clr_repl_addr mine = { UINT32_MAX, UINT32_MAX, 0 };
        struct clr_repl_addr theirs = { UINT32_MAX, UINT32_MAX, 0 };

        for (size_t i = 0; i < nm; i++) {
            bool up = false;

            for (size_t k = 0; k < nj; k++)
                up |= joined[k].reason == CLR_REPL_NODEUP && addr_cmp(&joined[k], &members[i]) == 0;
            if (up && addr_cmp(&members[i], &theirs) < 0)
                theirs = members[i];
            if (!up && addr_cmp(&members[i], &mine) < 0)
                mine = members[i];
        }
        if (addr_cmp(&theirs, &mine) < 0) {
            r->stale = true;
            r->ops->stale(r->arg);
            return;
        }
    }
    for (size_t i = 0; i < nl; i++) {
        struct clr_repl_member *m = find_proc(r, left[i].nodeid, left[i].pid, false);
        struct clr_repl_member copy;

        if (!m || is_me(r, left[i].nodeid, left[i].pid))
            continue;
        copy = *m;
        if (m->state == CLR_REPL_M_UNSYNCED) {
            member_remove(r, m);
            continue;
        }
        switch (left[i].reason) {
        case CLR_REPL_LEAVE:
            member_remove(r, m);
            clr_lt_remove_owner(r->lt, copy.inc, false, emit_effect, r);
            break;
        case CLR_REPL_PROCDOWN:
            confirm_dead(r, m);
            break;
        default:
            /* maybe alive behind a partition: hold its locks, and
             * tell the engine it may still be writing */
            m->state = CLR_REPL_M_FAILED;
            emit_event(r, CLR_LS_EV_MEMBER_LOST, m);
            break;
        }
    }
    if (nj) {
        memcpy(sorted, joined, nj * sizeof(*joined));
        qsort(sorted, nj, sizeof(*sorted), addr_cmp);
    }
    for (size_t i = 0; i < nj; i++) {
        struct clr_repl_member *old = find_proc(r, sorted[i].nodeid, sorted[i].pid, true);
        struct clr_repl_member *m;

        if (is_me(r, sorted[i].nodeid, sorted[i].pid) || find_proc(r, sorted[i].nodeid, sorted[i].pid, false))
            continue;
        /* The same process joining afresh has dropped its old locks. */
        if (old && sorted[i].reason == CLR_REPL_JOIN)
            confirm_dead(r, old);
        if (r->nmem >= REPL_MAX_MEMBERS)
            continue;
        m = &r->mem[r->nmem];
        m->nodeid = sorted[i].nodeid;
        m->pid = sorted[i].pid;
        m->inc = r->next_inc++;
        m->state = CLR_REPL_M_UNSYNCED;
        m->slot = 0;
        m->slot = lowest_free_slot(r);
        r->nmem++;
    }
    check_done(r);
}

static void synced_msg(struct clr_repl *r, uint32_t nodeid, uint32_t pid, const struct clr_repl_msg *m)
{
    struct clr_repl_member *snd = find_proc(r, nodeid, pid, false);
    const uint8_t *lvb = m->has_lvb ? m->lvb : NULL;

    switch (m->type) {
    case CLR_REPL_MSG_REQUEST:
    case CLR_REPL_MSG_CONVERT:
    case CLR_REPL_MSG_UNLOCK:
    case CLR_REPL_MSG_CANCEL:
        if (!snd || snd->state != CLR_REPL_M_LIVE)
            return; /* from a member we do not (or no longer) trust */
        if (m->type == CLR_REPL_MSG_REQUEST)
            clr_lt_request(r->lt, snd->inc, m->lkid, m->name, m->namelen, m->mode, m->flags, emit_effect, r);
        else if (m->type == CLR_REPL_MSG_CONVERT)
            clr_lt_convert(r->lt, snd->inc, m->lkid, m->mode, m->flags, lvb, emit_effect, r);
        else if (m->type == CLR_REPL_MSG_UNLOCK)
            clr_lt_unlock(r->lt, snd->inc, m->lkid, m->flags, lvb, emit_effect, r);
        else /* -EBUSY: the grant won the race, the owner knows */
            clr_lt_cancel(r->lt, snd->inc, m->lkid, emit_effect, r);
        break;
    case CLR_REPL_MSG_NEED_STATE: {
        const struct clr_repl_member *des = NULL;

        for (size_t i = 0; i < r->nmem; i++)
            if (r->mem[i].state == CLR_REPL_M_LIVE && (!des || r->mem[i].inc < des->inc))
                des = &r->mem[i];
        if (!r->replaying && des && is_me(r, des->nodeid, des->pid)) {
            struct clr_repl_msg st = { .type = CLR_REPL_MSG_STATE };
            size_t len;
            uint8_t *snap = snapshot_encode(r, &len);

            if (!snap)
                return;
            st.arg = m->arg;
            st.target_nodeid = nodeid;
            st.target_pid = pid;
            st.payload = snap;
            st.payload_len = len;
            send_msg(r, &st);
            free(snap);
        }
        break;
    }
    case CLR_REPL_MSG_STATE: {
        struct clr_repl_member *t = find_proc(r, m->target_nodeid, m->target_pid, false);

        if (t && t->state == CLR_REPL_M_UNSYNCED)
            t->state = CLR_REPL_M_LIVE;
        check_done(r);
        break;
    }
    case CLR_REPL_MSG_CONFIRM_DEAD: {
        struct clr_repl_member *d = find_inc(r, m->arg);

        if (d && d->state == CLR_REPL_M_FAILED) {
            confirm_dead(r, d);
            check_done(r);
        }
        break;
    }
    }
}

/* ---- buffering while we wait for the state ---- */

static void buffer_free(struct clr_repl *r)
{
    while (r->bhead) {
        struct item *it = r->bhead;

        r->bhead = it->next;
        free(it->buf);
        free(it->addrs);
        free(it);
    }
    r->btail = NULL;
    r->buffering = false;
}

static void buffer_push(struct clr_repl *r, struct item *it)
{
    it->next = NULL;
    if (r->btail)
        r->btail->next = it;
    else
        r->bhead = it;
    r->btail = it;
}

static void buffer_msg(struct clr_repl *r, uint32_t nodeid, uint32_t pid, const uint8_t *buf, size_t len)
{
    struct item *it = calloc(1, sizeof(*it));

    if (!it || !(it->buf = malloc(len ? len : 1))) {
        free(it);
        return;
    }
    memcpy(it->buf, buf, len);
    it->len = len;
    it->nodeid = nodeid;
    it->pid = pid;
    buffer_push(r, it);
}

static void buffer_conf(struct clr_repl *r, const struct clr_repl_addr *members, size_t nm,
                        const struct clr_repl_addr *left, size_t nl, const struct clr_repl_addr *joined,
                        size_t nj)
{
    struct item *it = calloc(1, sizeof(*it));
    size_t n = nm + nl + nj;

    if (!it || !(it->addrs = calloc(n ? n : 1, sizeof(*it->addrs)))) {
        free(it);
        return;
    }
    it->is_conf = true;
    if (nm)
        memcpy(it->addrs, members, nm * sizeof(*members));
    if (nl)
        memcpy(it->addrs + nm, left, nl * sizeof(*left));
    if (nj)
        memcpy(it->addrs + nm + nl, joined, nj * sizeof(*joined));
    it->nm = nm;
    it->nl = nl;
    it->nj = nj;
    buffer_push(r, it);
}

static void bootstrap(struct clr_repl *r)
{
    struct clr_repl_addr sorted[REPL_MAX_MEMBERS];

    memcpy(sorted, r->view, r->nview * sizeof(*sorted));
    qsort(sorted, r->nview, sizeof(*sorted), addr_cmp);
    clr_lt_decode(r->lt, (const uint8_t *)"CLT1\0\0\0\0", 8);
    r->nmem = 0;
    r->next_inc = 1;
    for (size_t i = 0; i < r->nview; i++) {
        struct clr_repl_member *m = &r->mem[r->nmem++];

        m->nodeid = sorted[i].nodeid;
        m->pid = sorted[i].pid;
        m->inc = r->next_inc++;
        m->slot = (int)i + 1;
        m->state = CLR_REPL_M_LIVE;
    }
    buffer_free(r);
    r->synced = true;
    r->recovering = false;
    r->ops->synced(r->arg);
    emit_event(r, CLR_LS_EV_DONE, NULL);
}

/* STATE for us: load it, replay what came after our NEED_STATE. */
static void load_state(struct clr_repl *r, const struct clr_repl_msg *m)
{
    struct item *it;
    struct clr_repl_msg bm;

    for (it = r->bhead; it; it = it->next) {
        if (!it->is_conf && is_me(r, it->nodeid, it->pid) &&
            clr_repl_msg_decode(&bm, it->buf, it->len) == 0 && bm.type == CLR_REPL_MSG_NEED_STATE &&
            bm.arg == m->arg)
            break;
    }
    if (!it || snapshot_decode(r, m->payload, m->payload_len) != 0)
        return; /* not ours to use: wait for another */
    r->synced = true;
    r->replaying = true;
    for (it = it->next; it; it = it->next) {
        if (it->is_conf)
            synced_confchg(r, it->addrs, it->nm, it->addrs + it->nm, it->nl, it->addrs + it->nm + it->nl,
                           it->nj);
        else if (clr_repl_msg_decode(&bm, it->buf, it->len) == 0)
            synced_msg(r, it->nodeid, it->pid, &bm);
        if (r->stale)
            break;
    }
    r->replaying = false;
    buffer_free(r);
    if (r->stale)
        return;
    r->recovering = true; /* so that we report DONE with our slot */
    r->ops->synced(r->arg);
    /* Members the state (or the replay) shows failed and unconfirmed are
     * lost for us too: each later gets MEMBER_FAILED, and DONE waits for
     * that (check_done). */
    for (size_t i = 0; i < r->nmem; i++)
        if (r->mem[i].state == CLR_REPL_M_FAILED)
            emit_event(r, CLR_LS_EV_MEMBER_LOST, &r->mem[i]);
}

/* ---- public entry points ---- */

struct clr_repl *clr_repl_new(uint32_t nodeid, uint32_t pid, const struct clr_repl_ops *ops, void *arg)
{
    struct clr_repl *r = calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    r->lt = clr_lt_new();
    if (!r->lt) {
        free(r);
        return NULL;
    }
    r->my_nodeid = nodeid;
    r->my_pid = pid;
    r->ops = ops;
    r->arg = arg;
    return r;
}

void clr_repl_free(struct clr_repl *r)
{
    if (!r)
        return;
    buffer_free(r);
    clr_lt_free(r->lt);
    free(r);
}

void clr_repl_reset(struct clr_repl *r)
{
    buffer_free(r);
    clr_lt_decode(r->lt, (const uint8_t *)"CLT1\0\0\0\0", 8);
    r->nmem = 0;
    r->nview = 0;
    r->synced = r->recovering = r->replaying = r->stale = false;
}

void clr_repl_confchg(struct clr_repl *r, const struct clr_repl_addr *members, size_t nmembers,
                      const struct clr_repl_addr *left, size_t nleft, const struct clr_repl_addr *joined,
                      size_t njoined)
{
    if (r->stale || nmembers > REPL_MAX_MEMBERS)
        return;
    if (nmembers)
        memcpy(r->view, members, nmembers * sizeof(*members));
    r->nview = nmembers;
    memset(r->asked, 0, sizeof(r->asked));
    if (r->synced) {
        synced_confchg(r, members, nmembers, left, nleft, joined, njoined);
        return;
    }
    if (r->buffering)
        buffer_conf(r, members, nmembers, left, nleft, joined, njoined);
    for (size_t i = 0; i < nmembers; i++) {
        if (is_me(r, members[i].nodeid, members[i].pid)) {
            struct clr_repl_msg m = { .type = CLR_REPL_MSG_NEED_STATE };

            m.arg = ++r->need_seq;
            send_msg(r, &m);
            break;
        }
    }
}

void clr_repl_deliver(struct clr_repl *r, uint32_t nodeid, uint32_t pid, const uint8_t *buf, size_t len)
{
    struct clr_repl_msg m;
    bool all = true;

    if (r->stale || clr_repl_msg_decode(&m, buf, len) != 0)
        return;
    if (r->synced) {
        synced_msg(r, nodeid, pid, &m);
        return;
    }
    if (m.type == CLR_REPL_MSG_STATE) {
        if (is_me(r, m.target_nodeid, m.target_pid) && r->buffering) {
            load_state(r, &m);
            if (r->synced && !r->stale)
                synced_msg(r, nodeid, pid, &m);
            return;
        }
    }
    if (m.type == CLR_REPL_MSG_NEED_STATE && is_me(r, nodeid, pid))
        r->buffering = true;
    if (r->buffering)
        buffer_msg(r, nodeid, pid, buf, len);
    if (m.type != CLR_REPL_MSG_NEED_STATE)
        return;
    for (size_t i = 0; i < r->nview; i++) {
        if (r->view[i].nodeid == nodeid && r->view[i].pid == pid)
            r->asked[i] = true;
        all &= r->asked[i];
    }
    /* nobody in this configuration has a state: start from nothing */
    if (all && r->nview > 0)
        bootstrap(r);
}

bool clr_repl_synced(const struct clr_repl *r)
{
    return r->synced && !r->stale;
}

uint64_t clr_repl_my_inc(const struct clr_repl *r)
{
    for (size_t i = 0; i < r->nmem; i++)
        if (r->mem[i].nodeid == r->my_nodeid && r->mem[i].pid == r->my_pid &&
            r->mem[i].state != CLR_REPL_M_FAILED)
            return r->mem[i].inc;
    return 0;
}

int clr_repl_my_slot(const struct clr_repl *r)
{
    for (size_t i = 0; i < r->nmem; i++)
        if (r->mem[i].nodeid == r->my_nodeid && r->mem[i].pid == r->my_pid &&
            r->mem[i].state != CLR_REPL_M_FAILED)
            return r->mem[i].slot;
    return 0;
}

size_t clr_repl_members(const struct clr_repl *r, struct clr_repl_member *out, size_t max)
{
    for (size_t i = 0; i < r->nmem && i < max; i++)
        out[i] = r->mem[i];
    return r->nmem;
}

const struct clr_lt *clr_repl_table(const struct clr_repl *r)
{
    return r->lt;
}

uint64_t clr_repl_digest(const struct clr_repl *r)
{
    size_t len;
    uint8_t *snap = snapshot_encode(r, &len);
    uint64_t h = 0xcbf29ce484222325ULL;

    if (!snap)
        return 0;
    for (size_t i = 0; i < len; i++)
        h = (h ^ snap[i]) * 0x100000001b3ULL;
    free(snap);
    return h;
}
