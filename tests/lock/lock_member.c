/*
 * lock_member: one member process of a lock-service test or benchmark.
 *
 *   lock_member [-b BACKEND] LOCKSPACE COMMAND ARGS...
 *
 * Commands (each prints "ok ..." lines that the shell tests grep):
 *   counter FILE N [MARK] N x: EX (VALBLK), check LVB == file, ++, write
 *                         both, EX->NL with VALBLK; prints lvb_mismatch=;
 *                         then, once MARK.digest exists, the table digest
 *                         each time it changes, until MARK.exit exists;
 *                         the lock is held at NL until then
 *   hold NAME MODE        take MODE, print "granted", report BASTs, sleep
 *   yield NAME MODE N     take MODE; on each BAST drop to NL and take it
 *                         again; exit after N BASTs
 *   wait NAME MODE        request MODE (blocking), print events meanwhile
 *   try NAME MODE         NOQUEUE request, print result and microseconds
 *   digest FILE           wait until FILE exists, print the table digest
 *   bench-uncontended N   N x acquire EX + release, print median us
 *   bench-handoff N ROLE  ping-pong EX between two members (ROLE a|b)
 *   bcast-send N          broadcast N messages, print median us
 *   bcast-recv SECONDS    receive broadcasts for SECONDS, print count
 *
 * LOCK_MEMBER_GO=FILE: after joining, wait until FILE exists (a start
 * barrier).  A counter FILE under /dev/ is read and written O_DIRECT.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lock/bcast.h"
#include "lock/lock.h"
#include "lock/lock_internal.h"

#define TMO 30000

static const char *me = "member";

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static const char *ev_name(enum clr_ls_event_type t)
{
    switch (t) {
    case CLR_LS_EV_PREP:
        return "PREP";
    case CLR_LS_EV_MEMBER_FAILED:
        return "MEMBER_FAILED";
    case CLR_LS_EV_DONE:
        return "DONE";
    case CLR_LS_EV_FENCE_TIMEOUT:
        return "FENCE_TIMEOUT";
    case CLR_LS_EV_FREEZE:
        return "FREEZE";
    case CLR_LS_EV_MEMBER_LOST:
        return "MEMBER_LOST";
    }
    return "?";
}

static void on_event(struct clr_ls *ls, const struct clr_ls_event *ev, void *arg)
{
    (void)ls;
    (void)arg;
    printf("%s event %s member=%" PRIu64 " slot=%d our_slot=%d t=%" PRIu64 "\n", me, ev_name(ev->type),
           ev->member, ev->slot, ev->our_slot, now_us());
    fflush(stdout);
}

static volatile int bast_count;
static volatile int bast_mode = -1;

static void on_bast(struct clr_lock *lk, int mode, void *arg)
{
    (void)arg;
    printf("%s bast %s mode=%s\n", me, clr_lock_name(lk), clr_lock_mode_name(mode));
    fflush(stdout);
    bast_mode = mode;
    __atomic_add_fetch(&bast_count, 1, __ATOMIC_SEQ_CST);
}

static int parse_mode(const char *s)
{
    int m = clr_lock_mode_parse(s);

    if (m < 0) {
        fprintf(stderr, "bad mode %s\n", s);
        exit(2);
    }
    return m;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_u64);
    return n ? v[n / 2] : 0;
}

static int cmd_digest(struct clr_ls *ls, const char *file);

static void wait_file(const char *base, const char *suffix)
{
    char path[4096];

    snprintf(path, sizeof(path), "%s%s", base, suffix);
    while (access(path, F_OK) != 0)
        usleep(20000);
}

/* Until MARK.exit exists, print the table digest each time it changes:
 * the replicas converge once every member's last operation has been
 * delivered everywhere, and the test polls for that (at least one line). */
static void digests_until_exit(struct clr_ls *ls, const char *mark)
{
    char path[4096];
    uint64_t last = 0;
    bool printed = false;

    snprintf(path, sizeof(path), "%s.exit", mark);
    for (;;) {
        uint64_t d = clr_ls_debug_digest(ls);

        if (!printed || d != last) {
            printf("%s ok digest=%016" PRIx64 "\n", me, d);
            fflush(stdout);
            last = d;
            printed = true;
        }
        if (access(path, F_OK) == 0)
            break;
        usleep(20000);
    }
}

static int cmd_counter(struct clr_ls *ls, const char *file, long n, const char *mark)
{
    struct clr_lock *lk = clr_lock_create(ls, "counter", NULL, NULL, NULL);
    /* a block device shared by several (virtual) machines: each has its
     * own page cache, so go around it */
    bool dev = strncmp(file, "/dev/", 5) == 0;
    int fd = open(file, O_RDWR | (dev ? O_DIRECT : 0));
    long mismatch = 0, invalid = 0;
    char *buf = NULL;
    int rc;

    if (posix_memalign((void **)&buf, 4096, 4096))
        return 1;

    if (!lk || fd < 0 || clr_lock_sync(lk, CLR_LOCK_NL, 0, TMO)) {
        perror("counter setup");
        return 1;
    }
    for (long i = 0; i < n; i++) {
        long v, lv;
        uint8_t *lvb = clr_lock_lvb(lk);

        rc = clr_lock_sync(lk, CLR_LOCK_EX, CLR_LOCK_F_VALBLK, TMO);
        if (rc) {
            fprintf(stderr, "%s: EX failed: %s\n", me, strerror(-rc));
            return 1;
        }
        memset(buf, 0, 4096);
        if (pread(fd, buf, dev ? 4096 : 31, 0) < 0)
            return 1;
        buf[31] = 0;
        v = strtol(buf, NULL, 10);
        memcpy(&lv, lvb, sizeof(lv));
        if (clr_lock_sb_flags(lk) & CLR_LOCK_SB_VALNOTVALID)
            invalid++;
        else if (lv != v) {
            /* the LVB and the disk disagree: say which iteration and both values */
            printf("%s lvb mismatch at %ld: lvb=%ld disk=%ld t=%" PRIu64 "\n", me, i, lv, v, now_us());
            fflush(stdout);
            mismatch++;
        }
        v++;
        snprintf(buf, 32, "%-20ld\n", v);
        if (pwrite(fd, buf, dev ? 4096 : strlen(buf), 0) < 0)
            return 1;
        memcpy(lvb, &v, sizeof(v));
        rc = clr_lock_sync(lk, CLR_LOCK_NL, CLR_LOCK_F_VALBLK, TMO);
        if (rc) {
            fprintf(stderr, "%s: NL failed: %s\n", me, strerror(-rc));
            return 1;
        }
    }
    printf("%s ok counter done lvb_mismatch=%ld lvb_invalid=%ld\n", me, mismatch, invalid);
    fflush(stdout);
    close(fd);
    free(buf);
    /* With MARK, keep the NL until the test says all are done: a resource
     * on which nobody holds a lock forgets its LVB (the kernel DLM frees
     * it), so a member that finished and unlocked early would hand a late
     * starter an empty LVB. */
    if (mark) {
        wait_file(mark, ".digest");
        digests_until_exit(ls, mark);
    }
    clr_unlock_sync(lk, 0, TMO);
    clr_lock_destroy(lk);
    return mismatch ? 1 : 0;
}

static int cmd_hold(struct clr_ls *ls, const char *name, int mode)
{
    struct clr_lock *lk = clr_lock_create(ls, name, NULL, on_bast, NULL);
    int rc = clr_lock_sync(lk, mode, CLR_LOCK_F_VALBLK, TMO);

    printf("%s %s hold %s %s rc=%d\n", me, rc ? "fail" : "ok", name, clr_lock_mode_name(mode), rc);
    printf("%s granted\n", me);
    fflush(stdout);
    for (;;)
        pause();
    return 0;
}

static int cmd_yield(struct clr_ls *ls, const char *name, int mode, int n)
{
    struct clr_lock *lk = clr_lock_create(ls, name, NULL, on_bast, NULL);
    int seen = 0;

    if (clr_lock_sync(lk, mode, 0, TMO))
        return 1;
    printf("%s granted\n", me);
    fflush(stdout);
    while (seen < n) {
        if (__atomic_load_n(&bast_count, __ATOMIC_SEQ_CST) > seen) {
            seen++;
            clr_lock_sync(lk, CLR_LOCK_NL, 0, TMO);
            usleep(20000);
            if (clr_lock_sync(lk, mode, 0, TMO))
                return 1;
        }
        usleep(1000);
    }
    printf("%s ok yield basts=%d\n", me, seen);
    fflush(stdout);
    clr_unlock_sync(lk, 0, TMO);
    clr_lock_destroy(lk);
    return 0;
}

static int cmd_wait(struct clr_ls *ls, const char *name, int mode)
{
    struct clr_lock *lk = clr_lock_create(ls, name, NULL, NULL, NULL);
    int rc = clr_lock_sync(lk, mode, CLR_LOCK_F_VALBLK, 60000);

    printf("%s %s wait granted rc=%d valnotvalid=%d t=%" PRIu64 "\n", me, rc ? "fail" : "ok", rc,
           !!(clr_lock_sb_flags(lk) & CLR_LOCK_SB_VALNOTVALID), now_us());
    fflush(stdout);
    return rc ? 1 : 0;
}

static int cmd_try(struct clr_ls *ls, const char *name, int mode)
{
    struct clr_lock *lk = clr_lock_create(ls, name, NULL, NULL, NULL);
    uint64_t t0 = now_us();
    int rc = clr_lock_sync(lk, mode, CLR_LOCK_F_NOQUEUE, TMO);

    printf("%s ok try rc=%d us=%" PRIu64 "\n", me, rc, now_us() - t0);
    fflush(stdout);
    return 0;
}

static int cmd_digest(struct clr_ls *ls, const char *file)
{
    while (access(file, F_OK) != 0)
        usleep(20000);
    usleep(200000);
    printf("%s ok digest=%016" PRIx64 "\n", me, clr_ls_debug_digest(ls));
    fflush(stdout);
    return 0;
}

static int cmd_bench_uncontended(struct clr_ls *ls, int n)
{
    struct clr_lock *lk = clr_lock_create(ls, "bench-u", NULL, NULL, NULL);
    uint64_t *acq = calloc((size_t)n, sizeof(uint64_t));
    uint64_t *rel = calloc((size_t)n, sizeof(uint64_t));

    clr_lock_sync(lk, CLR_LOCK_NL, 0, TMO);
    for (int i = 0; i < n; i++) {
        uint64_t t0 = now_us(), t1;

        if (clr_lock_sync(lk, CLR_LOCK_EX, 0, TMO))
            return 1;
        t1 = now_us();
        if (clr_lock_sync(lk, CLR_LOCK_NL, 0, TMO))
            return 1;
        acq[i] = t1 - t0;
        rel[i] = now_us() - t1;
    }
    printf("ok acquire_median_us=%" PRIu64 " release_median_us=%" PRIu64 "\n", median(acq, (size_t)n),
           median(rel, (size_t)n));
    return 0;
}

/* Two members pass EX back and forth through the LVB turn counter. */
static int cmd_bench_handoff(struct clr_ls *ls, int n, const char *role)
{
    struct clr_lock *lk = clr_lock_create(ls, "bench-h", NULL, NULL, NULL);
    uint64_t *lat = calloc((size_t)n, sizeof(uint64_t));
    int mine = role[0] == 'a' ? 0 : 1, got = 0;
    uint64_t t_rel = 0;

    clr_lock_sync(lk, CLR_LOCK_NL, 0, TMO);
    while (got < n) {
        int64_t turn;
        uint64_t t0 = now_us();

        if (clr_lock_sync(lk, CLR_LOCK_EX, CLR_LOCK_F_VALBLK, TMO))
            return 1;
        memcpy(&turn, clr_lock_lvb(lk), sizeof(turn));
        if (turn % 2 == mine) {
            if (t_rel)
                lat[got++] = now_us() - t0;
            turn++;
            memcpy(clr_lock_lvb(lk), &turn, sizeof(turn));
        }
        clr_lock_sync(lk, CLR_LOCK_NL, CLR_LOCK_F_VALBLK, TMO);
        t_rel = 1;
        if (turn >= 2 * (int64_t)n + 2)
            break;
    }
    printf("ok handoff_median_us=%" PRIu64 " rounds=%d\n", median(lat, (size_t)got), got);
    return 0;
}

static volatile int bcast_rx;

static int on_msg(void *arg, const struct clr_bcast_msg *m)
{
    (void)arg;
    if (m->type == 0x7f)
        return -EBADMSG; /* the tests' "unknown" type */
    __atomic_add_fetch(&bcast_rx, 1, __ATOMIC_SEQ_CST);
    return 0;
}

static int cmd_bcast_recv(struct clr_ls *ls, int seconds)
{
    struct clr_bcast *b;
    int rc = clr_bcast_open(ls, on_msg, NULL, TMO, &b);

    if (rc) {
        fprintf(stderr, "bcast_open: %s\n", strerror(-rc));
        return 1;
    }
    printf("%s ready\n", me);
    fflush(stdout);
    for (int i = 0; i < seconds * 10; i++)
        usleep(100000);
    printf("%s ok bcast received=%d\n", me, __atomic_load_n(&bcast_rx, __ATOMIC_SEQ_CST));
    fflush(stdout);
    clr_bcast_close(b);
    return 0;
}

static int cmd_bcast_send(struct clr_ls *ls, int n, int type)
{
    struct clr_bcast *b;
    uint64_t *lat = calloc((size_t)n, sizeof(uint64_t));
    int rc = clr_bcast_open(ls, on_msg, NULL, TMO, &b), fails = 0;
    int last_err = 0;

    if (rc) {
        fprintf(stderr, "bcast_open: %s\n", strerror(-rc));
        return 1;
    }
    for (int i = 0; i < n; i++) {
        struct clr_bcast_msg m = { .type = (uint8_t)type };
        struct clr_bcast_result res;
        uint64_t t0 = now_us();

        m.payload[0] = (uint8_t)i;
        rc = clr_bcast_send(b, &m, &res);
        lat[i] = now_us() - t0;
        if (rc) {
            fails++;
            last_err = rc;
        }
        if (i == n - 1)
            printf("%s ok bcast last refused=%u rc=%d\n", me, res.refused, rc);
    }
    printf("%s ok bcast sent=%d fails=%d last_err=%d median_us=%" PRIu64 "\n", me, n, fails, last_err,
           median(lat, (size_t)n));
    fflush(stdout);
    clr_bcast_close(b);
    return 0;
}

int main(int argc, char **argv)
{
    struct clr_ls_config cfg = { .backend = "cpg", .event = on_event };
    struct clr_ls *ls;
    int opt, rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    clr_lock_cluster_backends();
    while ((opt = getopt(argc, argv, "b:n:")) != -1) {
        if (opt == 'b')
            cfg.backend = optarg;
        else if (opt == 'n')
            me = optarg;
    }
    if (argc - optind < 2) {
        fprintf(stderr, "usage: lock_member [-b backend] [-n label] LS CMD ARGS\n");
        return 2;
    }
    cfg.name = argv[optind];
    cfg.fence_timeout_ms = 5000;
    rc = clr_ls_open(&cfg, &ls);
    if (rc) {
        fprintf(stderr, "%s: open %s: %s\n", me, cfg.name, strerror(-rc));
        return 1;
    }
    printf("%s joined member=%" PRIu64 " slot=%d\n", me, clr_ls_member_id(ls), clr_ls_our_slot(ls));
    fflush(stdout);
    clr_ls_start_dispatch_thread(ls);
    /* a start barrier for members on several machines */
    if (getenv("LOCK_MEMBER_GO"))
        wait_file(getenv("LOCK_MEMBER_GO"), "");
    argv += optind + 1;
    argc -= optind + 1;
    if (!strcmp(argv[0], "counter") && (argc == 3 || argc == 4))
        rc = cmd_counter(ls, argv[1], atol(argv[2]), argc == 4 ? argv[3] : NULL);
    else if (!strcmp(argv[0], "hold") && argc == 3)
        rc = cmd_hold(ls, argv[1], parse_mode(argv[2]));
    else if (!strcmp(argv[0], "yield") && argc == 4)
        rc = cmd_yield(ls, argv[1], parse_mode(argv[2]), atoi(argv[3]));
    else if (!strcmp(argv[0], "wait") && argc == 3)
        rc = cmd_wait(ls, argv[1], parse_mode(argv[2]));
    else if (!strcmp(argv[0], "try") && argc == 3)
        rc = cmd_try(ls, argv[1], parse_mode(argv[2]));
    else if (!strcmp(argv[0], "digest") && argc == 2)
        rc = cmd_digest(ls, argv[1]);
    else if (!strcmp(argv[0], "bench-uncontended") && argc == 2)
        rc = cmd_bench_uncontended(ls, atoi(argv[1]));
    else if (!strcmp(argv[0], "bench-handoff") && argc == 3)
        rc = cmd_bench_handoff(ls, atoi(argv[1]), argv[2]);
    else if (!strcmp(argv[0], "bcast-send") && argc >= 2)
        rc = cmd_bcast_send(ls, atoi(argv[1]), argc > 2 ? atoi(argv[2]) : 1);
    else if (!strcmp(argv[0], "bcast-recv") && argc == 2)
        rc = cmd_bcast_recv(ls, atoi(argv[1]));
    else {
        fprintf(stderr, "unknown command\n");
        rc = 2;
    }
    clr_ls_close(ls);
    return rc;
}
