/*
 * clraid clustered RAID5/6 rules (see zone.h): pure decisions over the
 * facts the engine and the simulator gather.
 */
#include <string.h>

#include "cluster/zone.h"

#ifdef CLR_ZONE_FAULTS
enum clr_zone_fault clr_zone_fault;
#endif

uint64_t clr_zone_split(const struct clr_zone_geom *g, uint64_t first, uint64_t n)
{
    uint64_t end = (clr_zone_of(g, first) + 1) * g->stripes_per_zone;

    return first + n <= end ? n : end - first;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void clr_zone_lvb_encode(const struct clr_zone_lvb *l, uint8_t buf[32])
{
    memset(buf, 0, 32);
    put32(buf, CLR_ZONE_LVB_MAGIC);
    put32(buf + 4, l->epoch);
    put32(buf + 8, (uint32_t)l->seq);
    put32(buf + 12, (uint32_t)(l->seq >> 32));
    put32(buf + 16, (uint32_t)l->writer);
}

enum clr_zone_lvb_state clr_zone_lvb_decode(const uint8_t buf[32], bool valnotvalid, struct clr_zone_lvb *out)
{
    static const uint8_t zero[32];

    out->seq = 0;
    out->writer = -1;
    out->epoch = 0;
    if (valnotvalid && !CLR_ZONE_FAULT(CLR_ZONE_FAULT_SUSPECT_OK))
        return CLR_ZONE_LVB_SUSPECT;
    if (memcmp(buf, zero, 32) == 0)
        return CLR_ZONE_LVB_NEW;
    if (get32(buf) != CLR_ZONE_LVB_MAGIC)
        return CLR_ZONE_LVB_SUSPECT;
    out->epoch = get32(buf + 4);
    out->seq = (uint64_t)get32(buf + 8) | (uint64_t)get32(buf + 12) << 32;
    out->writer = (int32_t)get32(buf + 16);
    return CLR_ZONE_LVB_VALID;
}

int clr_zone_need(enum clr_zone_op op)
{
    switch (op) {
    case CLR_ZONE_OP_READ:
        return CLR_ZONE_IV;
    case CLR_ZONE_OP_READ_DEGRADED:
        return CLR_ZONE_FAULT(CLR_ZONE_FAULT_DEGRADED_NO_LOCK) ? CLR_ZONE_IV : CLR_ZONE_PR;
    case CLR_ZONE_OP_CHECK:
        return CLR_ZONE_FAULT(CLR_ZONE_FAULT_CHECK_NO_LOCK) ? CLR_ZONE_IV : CLR_ZONE_PR;
    case CLR_ZONE_OP_WRITE:
    case CLR_ZONE_OP_RESYNC:
        return CLR_ZONE_FAULT(CLR_ZONE_FAULT_NO_EX_WRITE) ? CLR_ZONE_PR : CLR_ZONE_EX;
    }
    return CLR_ZONE_EX;
}

static bool hold_over(const struct clr_zone_cache *z, const struct clr_zone_ctx *x)
{
    return x->now >= z->granted_at + x->min_hold;
}

enum clr_zone_admit clr_zone_admit(struct clr_zone_cache *z, const struct clr_zone_ctx *x,
                                   enum clr_zone_op op)
{
    int need = clr_zone_need(op);

    if (need == CLR_ZONE_IV)
        return CLR_ZONE_ADMIT;
    if (z->releasing || z->requesting)
        return CLR_ZONE_WAIT;
    if (z->mode >= need) {
        /* the zone may be in a dead node's log until it is replayed */
        if (z->suspect && x->unrecovered)
            return CLR_ZONE_WAIT;
        /* someone waits and we had our time: let the release drain */
        if (z->blocked && hold_over(z, x))
            return CLR_ZONE_WAIT;
        z->suspect = false;
        return CLR_ZONE_ADMIT;
    }
    if (need > z->want)
        z->want = need;
    if (z->mode == CLR_ZONE_IV)
        return CLR_ZONE_REQUEST;
    /* PR held, EX wanted: no conversion up */
    return z->inflight ? CLR_ZONE_WAIT : CLR_ZONE_DROP;
}

int clr_zone_request_mode(const struct clr_zone_cache *z, enum clr_zone_op op)
{
    int need = clr_zone_need(op);

    return z->want > need ? z->want : need;
}

void clr_zone_granted(struct clr_zone_cache *z, const struct clr_zone_ctx *x, int mode,
                      enum clr_zone_lvb_state lvb)
{
    z->mode = mode;
    if (mode >= z->want)
        z->want = CLR_ZONE_IV;
    z->requesting = false;
    z->releasing = false;
    z->blocked = false;
    z->granted_at = x->now;
    z->suspect = lvb == CLR_ZONE_LVB_SUSPECT;
}

enum clr_zone_release clr_zone_release_step(const struct clr_zone_cache *z, const struct clr_zone_ctx *x)
{
    if (z->mode == CLR_ZONE_IV || z->requesting || !z->blocked)
        return CLR_ZONE_KEEP;
    /* an unusable suspect zone does nothing while held: give it up */
    if (!hold_over(z, x) && !(z->suspect && x->unrecovered && !z->inflight))
        return CLR_ZONE_KEEP;
    if (z->inflight && !CLR_ZONE_FAULT(CLR_ZONE_FAULT_UNDRAINED))
        return CLR_ZONE_DRAIN;
    if (z->logged && !CLR_ZONE_FAULT(CLR_ZONE_FAULT_NO_RETIRE))
        return CLR_ZONE_RETIRE;
    return CLR_ZONE_UNLOCK;
}

bool clr_zone_unlock_writes_lvb(const struct clr_zone_cache *z)
{
    return z->mode == CLR_ZONE_EX && !z->suspect;
}

int clr_zone_log_pick(const uint64_t *gen, const bool *valid, unsigned ncopies)
{
    int best = -1;

    for (unsigned i = 0; i < ncopies; i++) {
        if (!valid[i] && !CLR_ZONE_FAULT(CLR_ZONE_FAULT_TORN_PICK))
            continue;
        if (best < 0 || gen[i] > gen[best])
            best = (int)i;
    }
    return best;
}

unsigned clr_zone_log_next_copy(const uint64_t *gen, const bool *valid, unsigned ncopies)
{
    int cur = clr_zone_log_pick(gen, valid, ncopies);

    return cur < 0 ? 0 : ((unsigned)cur + 1) % ncopies;
}

bool clr_zone_may_issue(bool entry_durable)
{
    return entry_durable || CLR_ZONE_FAULT(CLR_ZONE_FAULT_DATA_BEFORE_LOG);
}

bool clr_zone_log_may_retire(bool write_complete)
{
    return write_complete || CLR_ZONE_FAULT(CLR_ZONE_FAULT_RETIRE_EARLY);
}

enum clr_zone_replay clr_zone_replay_plan(int level, unsigned changed, unsigned changed_missing, bool p_ok,
                                          bool q_ok)
{
    if (level != 6)
        q_ok = false;
    if (!p_ok && !q_ok)
        return CLR_ZONE_REPLAY_NONE;
    if (changed_missing == 0)
        return CLR_ZONE_REPLAY_PARITY;
    return changed == 1 ? CLR_ZONE_REPLAY_REBUILD : CLR_ZONE_REPLAY_REBUILD_LOST;
}

bool clr_zone_replay_q(int level)
{
    return level == 6 && !CLR_ZONE_FAULT(CLR_ZONE_FAULT_REPLAY_RAID6_P);
}

bool clr_zone_recover_needed(uint64_t unrecovered, int slot)
{
    if (slot < 0 || slot > 63)
        return false;
    return ((unrecovered >> slot) & 1) || CLR_ZONE_FAULT(CLR_ZONE_FAULT_RECOVER_TWICE);
}

bool clr_zone_join_may_write(uint64_t unrecovered, int slot)
{
    if (slot < 0 || slot > 63)
        return false;
    return !((unrecovered >> slot) & 1) || CLR_ZONE_FAULT(CLR_ZONE_FAULT_EARLY_JOIN);
}
