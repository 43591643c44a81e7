/*
 * The replicated lockspace behind the cpg backend, as a pure state machine:
 * the lock table plus the member map (who is in, their incarnation, slot,
 * whether they have the state yet, who failed and awaits confirmation).
 *
 * Inputs are exactly what corosync CPG gives every member in the same
 * agreed order (messages and configuration changes), plus this member's
 * quorum state.  Outputs go through struct clr_repl_ops.  No I/O, no clock:
 * the glue in lock_cpg.c feeds it, and unit tests feed it scripted
 * partitions and joins.
 *
 * Protocol summary:
 *  - lock operations are multicast; every synced member applies them to
 *    its table; the owner of a lock is the sender's current incarnation;
 *  - a member without state multicasts NEED_STATE after each configuration
 *    change; the lowest synced member answers, at the delivery of that
 *    NEED_STATE, with STATE (the state exactly at that point); the joiner
 *    buffers everything after its NEED_STATE and replays it on top;
 *  - if every member of a configuration asked for state, nobody has any:
 *    they all start from an empty table (first start of the group);
 *  - LEAVE releases a member's locks; PROCDOWN releases them and marks
 *    PW/EX LVBs not valid; any other loss (NODEDOWN) keeps them until
 *    CONFIRM_DEAD (fencer, administrator) or until the same process
 *    rejoins with JOIN (it went through the stale path, dropping its locks);
 *    such a member is reported MEMBER_LOST at once (and to a joiner that
 *    finds it failed in the state), MEMBER_FAILED once confirmed, and DONE
 *    waits until no member is failed;
 *  - on a partition merge (NODEUP) the side whose lowest member id is
 *    higher goes stale: it drops all its locks and rejoins from scratch.
 */
#ifndef CLRAID_LOCK_LOCK_REPL_H
#define CLRAID_LOCK_LOCK_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lock/lock.h"
#include "lock/lock_table.h"

/** CPG reasons (same values as corosync's cpg_reason_t). */
enum clr_repl_reason {
    CLR_REPL_JOIN = 1,
    CLR_REPL_LEAVE = 2,
    CLR_REPL_NODEDOWN = 3,
    CLR_REPL_NODEUP = 4,
    CLR_REPL_PROCDOWN = 5,
};

/** One CPG member address. */
struct clr_repl_addr {
    uint32_t nodeid, pid, reason;
};

/** Message types on the wire. */
enum clr_repl_msg_type {
    CLR_REPL_MSG_REQUEST = 1,
    CLR_REPL_MSG_CONVERT,
    CLR_REPL_MSG_UNLOCK,
    CLR_REPL_MSG_CANCEL,
    CLR_REPL_MSG_NEED_STATE,
    CLR_REPL_MSG_STATE,
    CLR_REPL_MSG_CONFIRM_DEAD,
};

#define CLR_REPL_MSG_VERSION 1
/** Fixed part of every message; a name or state blob follows. */
#define CLR_REPL_MSG_HDR 68

/** A decoded message.  name/payload point into the received buffer. */
struct clr_repl_msg {
    uint8_t type;
    uint32_t flags; /**< lock request flags */
    int mode;
    uint64_t lkid;
    uint64_t arg;                       /**< NEED_STATE/STATE: seq; CONFIRM_DEAD: member */
    uint32_t target_nodeid, target_pid; /**< STATE: who it is for */
    bool has_lvb;
    uint8_t lvb[CLR_LOCK_LVB_LEN];
    const char *name;
    size_t namelen;
    const uint8_t *payload;
    size_t payload_len;
};

/** Bytes needed to encode @m. */
size_t clr_repl_msg_size(const struct clr_repl_msg *m);
/** Encode @m (header + name or payload). @return bytes or -ENOSPC. */
long clr_repl_msg_encode(const struct clr_repl_msg *m, uint8_t *buf, size_t len);
/** Decode; pointers refer into @buf. @return 0 or -EBADMSG. */
int clr_repl_msg_decode(struct clr_repl_msg *m, const uint8_t *buf, size_t len);

/** Member states in the map. */
enum clr_repl_mstate {
    CLR_REPL_M_UNSYNCED = 1, /**< joined, waiting for state */
    CLR_REPL_M_LIVE,         /**< synced member */
    CLR_REPL_M_FAILED,       /**< lost, locks held until confirmed dead */
};

/** A member as the replicated map knows it. */
struct clr_repl_member {
    uint32_t nodeid, pid;
    uint64_t inc; /**< incarnation: the lock owner id, unique per join */
    int slot;     /**< 1-based, lowest free at join */
    enum clr_repl_mstate state;
};

/** Outputs of the state machine. */
struct clr_repl_ops {
    /** Multicast @len bytes in agreed order (may be deferred). */
    void (*send)(void *arg, const uint8_t *buf, size_t len);
    /** A lock-table effect for one of our locks. */
    void (*effect)(void *arg, const struct clr_lt_effect *e);
    /** A membership event for the engine. */
    void (*event)(void *arg, const struct clr_ls_event *ev);
    /** We are synced (first time, or after a rejoin). */
    void (*synced)(void *arg);
    /** We lost a partition merge: drop everything, leave, rejoin. */
    void (*stale)(void *arg);
};

struct clr_repl;

/** New replica for the process (nodeid, pid); not synced yet. */
struct clr_repl *clr_repl_new(uint32_t nodeid, uint32_t pid, const struct clr_repl_ops *ops, void *arg);
void clr_repl_free(struct clr_repl *r);

/** Forget everything (after leaving the group): unsynced, empty table. */
void clr_repl_reset(struct clr_repl *r);

/** A configuration change, as delivered by CPG. */
void clr_repl_confchg(struct clr_repl *r, const struct clr_repl_addr *members, size_t nmembers,
                      const struct clr_repl_addr *left, size_t nleft, const struct clr_repl_addr *joined,
                      size_t njoined);

/** A message delivered by CPG from (nodeid, pid). */
void clr_repl_deliver(struct clr_repl *r, uint32_t nodeid, uint32_t pid, const uint8_t *buf, size_t len);

/** Do we have the state (may we submit lock operations)? */
bool clr_repl_synced(const struct clr_repl *r);
/** Our incarnation (valid when synced). */
uint64_t clr_repl_my_inc(const struct clr_repl *r);
/** Our slot (valid when synced). */
int clr_repl_my_slot(const struct clr_repl *r);
/** The member map: up to @max entries copied, @return the count. */
size_t clr_repl_members(const struct clr_repl *r, struct clr_repl_member *out, size_t max);
/** The replica's lock table (read only). */
const struct clr_lt *clr_repl_table(const struct clr_repl *r);
/** Digest of the whole replicated state (map + table). */
uint64_t clr_repl_digest(const struct clr_repl *r);

#endif
