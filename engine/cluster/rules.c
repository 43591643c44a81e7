/*
 * clraid cluster rules (see rules.h): pure decisions over the facts the
 * engine and the simulator gather.
 */
#include <errno.h>
#include <stddef.h>

#include "cluster/rules.h"

#ifdef CLR_RULES_FAULTS
enum clr_rules_fault clr_rules_fault;
#endif

static bool role_holder(enum clr_rules_mstate s)
{
    return s == CLR_RULES_IN_SYNC || s == CLR_RULES_REBUILDING;
}

bool clr_rules_recovered_elsewhere(const struct clr_rules_own *own, const struct clr_rules_sbrole *sb,
                                   uint64_t sb_events, int role)
{
    return role >= 0 && sb->present && own->readable && own->present && sb->role == (uint16_t)role &&
           own->role == (uint16_t)role && !own->recovering && own->events >= sb_events;
}

bool clr_rules_reload(const struct clr_rules_ctx *x, const struct clr_rules_member *mem,
                      const struct clr_rules_sbrole *sb, const struct clr_rules_own *own, unsigned n,
                      struct clr_rules_change *out)
{
    struct clr_rules_ctx c = *x;
    bool changed = false;
    bool by_update = x->type == CLR_RULES_MSG_METADATA_UPDATED && x->sender >= 0;

    for (unsigned i = 0; i < n; i++) {
        out[i].what = 0;
        out[i].role = mem[i].role;
        out[i].rebuilder = mem[i].rebuilder;
        out[i].recovery_offset = mem[i].recovery_offset;
        out[i].why = NULL;
    }
    /* roles first: faulty marks, spares activated elsewhere */
    for (unsigned i = 0; i < n; i++) {
        const struct clr_rules_member *m = &mem[i];
        uint16_t r = sb[i].role;

        if (!sb[i].present || m->state == CLR_RULES_REMOVED)
            continue;
        if (r == CLR_RULES_ROLE_FAULTY && m->state == CLR_RULES_REBUILDING && m->readd_events &&
            x->sb_events <= m->readd_events) {
            /* written before its RE_ADD (the re-adder still holds
             * `metadata` and has not written the role yet, or died
             * before): not a new failure */
            out[i].what |= CLR_RULES_CH_READD_KEPT;
            continue;
        }
        if (r == CLR_RULES_ROLE_FAULTY && m->state != CLR_RULES_FAULTY &&
            !CLR_RULES_FAULT(CLR_RULES_FAULT_SB_NO_FAULTY)) {
            out[i].what |= CLR_RULES_CH_FAULTY;
            out[i].why = "marked faulty by another node";
            if (m->role >= 0 && role_holder(m->state))
                clr_rules_role_set(&c, (unsigned)m->role, false);
            changed = true;
        } else if (r < x->raid_disks && m->state == CLR_RULES_SPARE && !clr_rules_role_taken(&c, r)) {
            out[i].what |= CLR_RULES_CH_ACTIVATE;
            out[i].role = r;
            /* the sender of the update activated it and rebuilds it */
            out[i].rebuilder = x->type == CLR_RULES_MSG_METADATA_UPDATED ? x->sender : -1;
            out[i].why = "takes its role on another node, rebuilding there";
            clr_rules_role_set(&c, r, true);
            changed = true;
        }
    }
    /* then the rebuilds driven elsewhere: checkpoints, completion */
    for (unsigned i = 0; i < n; i++) {
        const struct clr_rules_member *m = &mem[i];
        bool rebuilding = m->state == CLR_RULES_REBUILDING && m->remote_rebuild;
        int role = m->role;

        if (out[i].what & CLR_RULES_CH_FAULTY)
            continue;
        if (out[i].what & CLR_RULES_CH_ACTIVATE) {
            rebuilding = true;
            role = out[i].role;
        }
        if (!own[i].readable || !rebuilding || role < 0 || !sb[i].present || sb[i].role != (uint16_t)role)
            continue;
        if (own[i].recovering && !own[i].bitmap_recovery && own[i].recovery_offset > out[i].recovery_offset) {
            /* its checkpoint moved: only its rebuilder moves it (every
             * other node writes back at most what it saw announced) */
            out[i].what |= CLR_RULES_CH_CHECKPOINT;
            out[i].recovery_offset = own[i].recovery_offset;
            if (out[i].rebuilder < 0 && by_update)
                out[i].rebuilder = x->sender;
        }
        if (clr_rules_recovered_elsewhere(&own[i], &sb[i], x->sb_events, role)) {
            out[i].what |= CLR_RULES_CH_IN_SYNC;
            out[i].why = "in sync (recovered by another node)";
            changed = true;
        }
    }
    return changed;
}

int clr_rules_start_missing(const struct clr_rules_ctx *x, const struct clr_rules_member *m,
                            const struct clr_rules_sbrole *sb, unsigned n)
{
    if (CLR_RULES_FAULT(CLR_RULES_FAULT_START_MISSING))
        return -1;
    for (unsigned i = 0; i < n; i++) {
        if (!sb[i].present || sb[i].role >= x->raid_disks)
            continue;
        if (m[i].state == CLR_RULES_FAULTY || m[i].state == CLR_RULES_REMOVED || !m[i].has_io)
            return (int)i;
    }
    return -1;
}

bool clr_rules_candidate_waits(const struct clr_rules_ctx *x, int adder)
{
    /* a live adder's NEWDISK may still be in flight: its METADATA_UPDATED
     * (commit or roll back) settles it */
    return !x->settle_all && adder >= 0 && !(adder < 64 && (x->dead & (1ull << adder)));
}

bool clr_rules_candidate_taken(const struct clr_rules_candidate *c)
{
    return c->sb_readable && c->uuid_match && c->dev_match && c->sb.present &&
           c->sb.role != CLR_RULES_ROLE_FAULTY;
}

bool clr_rules_orphaned(const struct clr_rules_ctx *x, const struct clr_rules_member *m)
{
    if (m->state != CLR_RULES_REBUILDING || !m->remote_rebuild || !m->has_io)
        return false;
    if (CLR_RULES_FAULT(CLR_RULES_FAULT_ORPHAN_NEVER))
        return false;
    return x->alone || (m->rebuilder >= 0 && m->rebuilder < 64 && (x->dead & (1ull << m->rebuilder)));
}

uint64_t clr_rules_resume_offset(const struct clr_rules_own *own)
{
    return own->readable && own->recovering && !own->bitmap_recovery ? own->recovery_offset : 0;
}

enum clr_rules_owner clr_rules_rebuild_owner(const struct clr_rules_ctx *x, int rebuilder, unsigned slot)
{
    if (rebuilder == (int)slot)
        return CLR_RULES_OWNER_MINE;
    if (CLR_RULES_FAULT(CLR_RULES_FAULT_ORPHAN_NEVER))
        return CLR_RULES_OWNER_OTHER;
    if (x->alone || (rebuilder >= 0 && rebuilder < 64 && (x->dead & (1ull << rebuilder))))
        return CLR_RULES_OWNER_ORPHAN;
    return CLR_RULES_OWNER_OTHER;
}

bool clr_rules_rebuild_done(bool needed_here, bool cluster_busy)
{
    if (CLR_RULES_FAULT(CLR_RULES_FAULT_REBUILD_EARLY))
        return !needed_here;
    return !needed_here && !cluster_busy;
}

int clr_rules_remote_readd(const struct clr_rules_ctx *x, const struct clr_rules_member *m,
                           const struct clr_rules_own *own, bool own_names_it, struct clr_rules_readd *out)
{
    int role = m->role;

    if (role < 0 && own->readable && own_names_it && own->present && own->role < x->raid_disks)
        role = own->role;
    if ((m->state != CLR_RULES_FAULTY && m->state != CLR_RULES_REMOVED) || role < 0 ||
        role >= (int)x->raid_disks || clr_rules_role_taken(x, (unsigned)role))
        return -EINVAL;
    out->role = role;
    out->state = CLR_RULES_FAULT(CLR_RULES_FAULT_READD_NO_WRITE) ? CLR_RULES_FAULTY : CLR_RULES_REBUILDING;
    out->rebuilder = x->sender;
    /* a superblock not newer than this still shows it faulty: a reload
     * outside `metadata` before the re-adder writes must not undo it */
    out->readd_events = x->sb_events;
    return 0;
}

bool clr_rules_in_window(const struct clr_rules_window *w, uint64_t lo, uint64_t hi)
{
    return w->win_from >= 0 && lo < w->win_hi && w->win_lo < hi;
}

enum clr_rules_admit clr_rules_admit(const struct clr_rules_window *w, uint64_t lo, uint64_t hi)
{
    if (!CLR_RULES_FAULT(CLR_RULES_FAULT_IGNORE_WINDOW) && clr_rules_in_window(w, lo, hi))
        return CLR_RULES_WAIT_WINDOW;
    if (!CLR_RULES_FAULT(CLR_RULES_FAULT_IGNORE_HOLD) && w->held)
        return CLR_RULES_WAIT_HOLD;
    return CLR_RULES_ADMIT;
}
