/* clraid array core in cluster mode: several clr_array instances in one
 * process on the SAME member files, the md-cluster protocol on the
 * in-process "local" lock backend (each array is a node). Member files
 * live under /dev/shm (or $TMPDIR). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/resource.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "array/array.h"
#include "format/create_plan.h"
#include "format/md_bitmap.h"
#include "format/md_sb.h"
#include "io/io.h"
#include "raid/layout.h"

#include "array_testlib.h"

#define MAXD 6
#define MAXN 3

struct tarr {
    char dir[256];
    char path[MAXD][TL_PATH_MAX];
    const char *devs[MAXD];
    unsigned n;
    uint64_t dev_bytes;
    uint64_t data_offset; /* sectors */
};

static void quiet_log(void *o, int prio, const char *msg)
{
    (void)prio;
    if (getenv("CLR_TEST_VERBOSE"))
        fprintf(stderr, "  [%s %d] %s\n", (const char *)o, prio, msg);
}

static void mkfiles(struct tarr *t, unsigned n, uint64_t bytes)
{
    struct stat st;

    tl_make_dir(t->dir, sizeof t->dir, "clraid-cluster-test",
                stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/var/tmp");
    t->n = n;
    t->dev_bytes = bytes;
    for (unsigned i = 0; i < n; i++) {
        tl_make_file(t->path[i], t->dir, i, bytes);
        t->devs[i] = t->path[i];
    }
}

static void rmfiles(struct tarr *t)
{
    tl_remove_dir(t->dir);
}

/* An array for @nodes nodes on @nd files of @bytes. */
static void make_array(struct tarr *t, int level, uint32_t layout, unsigned nd, unsigned nodes,
                       uint64_t bytes, uint32_t bm_kib, bool assume_clean)
{
    struct clr_create_params p = { 0 };

    mkfiles(t, nd, bytes);
    p.level = level;
    p.layout = layout;
    p.layout_set = level != 1;
    p.chunk_kib = 64;
    p.bitmap_chunk_kib = bm_kib;
    p.raid_disks = nd;
    p.nodes = nodes;
    strcpy(p.name, "t");
    strcpy(p.cluster_name, "c");
    p.assume_clean = assume_clean;
    for (int i = 0; i < 16; i++)
        p.set_uuid[i] = (uint8_t)rand();
    p.now_sec = (uint64_t)time(NULL);
    tl_write_members(&p, t->path, nd, bytes, NULL, &t->data_offset);
}

/* Eight 1 MiB writes from @a, bytes @first + i, at i * @stride_mib MiB. */
static void write_pattern(struct clr_array *a, uint8_t *buf, int first, unsigned stride_mib)
{
    for (unsigned i = 0; i < 8; i++) {
        memset(buf, first + (int)i, 1 << 20);
        assert_int_equal(clr_array_pwrite(a, buf, 1 << 20, (uint64_t)i * stride_mib << 20, 0), 0);
    }
}

static const char *const node_names[] = { "n0", "n1", "n2", "n3" };

static struct clr_array_config cfg_for(struct tarr *t, unsigned node, const char *lock)
{
    struct clr_array_config c = { 0 };

    c.name = "t";
    c.devices = t->devs;
    c.ndevices = t->n;
    c.lock = lock;
    c.flags = CLR_ARRAY_CLUSTER_LOCAL;
    c.sync_speed_min_kib = 1000000;
    c.sync_speed_max_kib = 10000000;
    c.bitmap_sleep_ms = 60000; /* bits stay dirty: a crash leaves them */
    c.log = quiet_log;
    c.log_opaque = (void *)node_names[node];
    return c;
}

static struct clr_array *start_node(struct tarr *t, unsigned node)
{
    struct clr_array_config c = cfg_for(t, node, "local");
    struct clr_array *a = NULL;
    struct clr_err e = { "" };

    if (clr_array_assemble(&c, &a, &e) != 0)
        fail_msg("assemble: %s", e.msg);
    if (clr_array_run(a, &e) != 0)
        fail_msg("run: %s", e.msg);
    return a;
}

static json_object *jget(json_object *o, const char *path)
{
    char buf[128], *save = NULL;

    snprintf(buf, sizeof buf, "%s", path);
    for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
        if (!json_object_object_get_ex(o, k, &o))
            return NULL;
    return o;
}

static int64_t st_int(struct clr_array *a, const char *path)
{
    json_object *o = clr_array_status_json(a), *x = jget(o, path);
    int64_t v;

    if (!x)
        fail_msg("status has no %s", path);
    v = json_object_get_int64(x);
    json_object_put(o);
    return v;
}

static bool st_bool(struct clr_array *a, const char *path)
{
    json_object *o = clr_array_status_json(a);
    json_object *v = jget(o, path);
    bool b;

    if (!v)
        fail_msg("status has no %s", path);
    b = json_object_get_boolean(v);
    json_object_put(o);
    return b;
}

static bool st_null(struct clr_array *a, const char *path)
{
    json_object *o = clr_array_status_json(a), *x = NULL;
    const char *dot = strrchr(path, '.');
    char parent[128];
    bool present;

    snprintf(parent, sizeof parent, "%.*s", (int)(dot - path), path);
    present = json_object_object_get_ex(jget(o, parent), dot + 1, &x);

    assert_true(present);
    json_object_put(o);
    return x == NULL;
}

static const char *dev_state(struct clr_array *a, unsigned i, char *buf, size_t len)
{
    json_object *o = clr_array_status_json(a), *d = jget(o, "devices"), *x;

    assert_non_null(d);
    x = json_object_array_get_idx(d, i);
    assert_non_null(x);
    snprintf(buf, len, "%s", json_object_get_string(jget(x, "state")));
    json_object_put(o);
    return buf;
}

static void wait_idle(struct clr_array *a)
{
    assert_int_equal(clr_array_wait_sync_idle(a, 60000), 0);
}

static uint64_t check_mismatches(struct clr_array *a)
{
    struct clr_err e;

    wait_idle(a);
    assert_int_equal(clr_array_start_check(a, false, &e), 0);
    wait_idle(a);
    return (uint64_t)st_int(a, "last_check.mismatches");
}

/* Polls @cond for up to @ms. */
#define WAIT_FOR(cond, ms)                                                                                   \
    do {                                                                                                     \
        int _t;                                                                                              \
        for (_t = 0; _t < (ms) && !(cond); _t += 10)                                                         \
            usleep(10000);                                                                                   \
        if (!(cond))                                                                                         \
            fail_msg("timed out waiting for %s", #cond);                                                     \
    } while (0)

static void assert_files_equal(const char *p0, const char *p1, uint64_t data_off, uint64_t bytes)
{
    uint8_t *x = malloc(1 << 20), *y = malloc(1 << 20);

    for (uint64_t off = 0; off < bytes; off += 1 << 20) {
        size_t len = bytes - off < (1 << 20) ? bytes - off : 1 << 20;

        pread_all(p0, x, len, data_off * 512 + off);
        pread_all(p1, y, len, data_off * 512 + off);
        if (memcmp(x, y, len) != 0)
            fail_msg("%s differs from %s in [%" PRIu64 ", +%zu)", p1, p0, off, len);
    }
    free(x);
    free(y);
}

static const char *find_dev_state(struct clr_array *a, const char *path, char *buf, size_t len)
{
    json_object *o = clr_array_status_json(a), *d = jget(o, "devices");

    snprintf(buf, len, "absent");
    for (size_t i = 0; d && i < json_object_array_length(d); i++) {
        json_object *x = json_object_array_get_idx(d, i);

        if (strcmp(json_object_get_string(jget(x, "path")), path) == 0 &&
            (strcmp(buf, "absent") == 0 || strcmp(buf, "removed") == 0))
            snprintf(buf, len, "%s", json_object_get_string(jget(x, "state")));
    }
    json_object_put(o);
    return buf;
}

static bool dev_is(struct clr_array *a, const char *path, const char *state)
{
    char b[32];

    return strcmp(find_dev_state(a, path, b, sizeof b), state) == 0;
}

/* Data areas of two RAID1 members are equal over [0, bytes). */
static void assert_copies_equal(struct tarr *t, uint64_t bytes)
{
    uint8_t *x = malloc(1 << 20), *y = malloc(1 << 20);

    for (uint64_t off = 0; off < bytes; off += 1 << 20) {
        size_t len = bytes - off < (1 << 20) ? bytes - off : 1 << 20;

        pread_all(t->path[0], x, len, t->data_offset * 512 + off);
        for (unsigned i = 1; i < t->n; i++) {
            pread_all(t->path[i], y, len, t->data_offset * 512 + off);
            if (memcmp(x, y, len) != 0)
                fail_msg("copy %u differs from copy 0 in [%" PRIu64 ", +%zu)", i, off, len);
        }
    }
    free(x);
    free(y);
}

/* ---- slots, members, steady-state writes cost no cluster traffic ---- */

static void zero_cost(int level, uint32_t layout, unsigned nd)
{
    struct clr_array *a[MAXN];
    uint64_t ops[MAXN], msgs[MAXN], size;
    uint8_t *buf = aligned_alloc(4096, 65536), *rd = aligned_alloc(4096, 65536);
    struct tarr t;

    make_array(&t, level, layout, nd, 3, 32ull << 20, 512, true);
    for (unsigned i = 0; i < MAXN; i++)
        a[i] = start_node(&t, i);
    size = clr_array_size(a[0]);
    for (unsigned i = 0; i < MAXN; i++) {
        char s[32];

        WAIT_FOR(st_int(a[i], "cluster.members") == MAXN, 5000);
        assert_int_equal(st_int(a[i], "cluster.slot"), i);
        assert_int_equal(st_int(a[i], "bitmap.slot"), i);
        assert_int_equal(st_int(a[i], "cluster.recovered_slots"), 0);
        json_object *o = clr_array_status_json(a[i]);
        snprintf(s, sizeof s, "%s", json_object_get_string(jget(o, "cluster.backend")));
        json_object_put(o);
        assert_string_equal(s, "local");
        wait_idle(a[i]);
    }
    /* the first write of each chunk flushes the bitmap; none takes a lock */
    for (unsigned i = 0; i < MAXN; i++) {
        ops[i] = (uint64_t)st_int(a[i], "counters.lock_ops");
        msgs[i] = (uint64_t)st_int(a[i], "counters.messages");
    }
    for (unsigned r = 0; r < 60; r++) {
        unsigned n = r % MAXN;
        uint64_t off = ((uint64_t)r * 7 * 65536 + n * 4096) % (size - 65536);

        memset(buf, (int)(r + 1), 65536);
        assert_int_equal(clr_array_pwrite(a[n], buf, 65536, off & ~4095ull, 0), 0);
        /* another node reads it back at once */
        assert_int_equal(clr_array_pread(a[(n + 1) % MAXN], rd, 65536, off & ~4095ull), 0);
        assert_memory_equal(buf, rd, 65536);
    }
    for (unsigned i = 0; i < MAXN; i++) {
        assert_int_equal(clr_array_flush(a[i]), 0);
        assert_int_equal((uint64_t)st_int(a[i], "counters.lock_ops"), ops[i]);
        assert_int_equal((uint64_t)st_int(a[i], "counters.messages"), msgs[i]);
        assert_true(st_int(a[i], "counters.writes") >= 20);
    }
    for (unsigned i = 0; i < MAXN; i++)
        assert_int_equal(clr_array_stop(a[i]), 0);
    for (unsigned i = 0; i < MAXN; i++)
        clr_array_free(a[i]);
    free(buf);
    free(rd);
    rmfiles(&t);
}

static void test_zero_cost_raid1(void **s)
{
    (void)s;
    zero_cost(1, 0, 2);
}

static void test_zero_cost_raid10(void **s)
{
    (void)s;
    zero_cost(10, CLR_RAID10_LAYOUT(2, 1, 0), 4);
}

/* ---- a member dies with dirty bits: a survivor takes its slot over ---- */

static void test_takeover(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20), *junk = malloc(1 << 20);
    uint64_t size;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    size = clr_array_size(a);
    write_pattern(a, buf, 0x40, 3);
    assert_true(st_int(a, "bitmap.dirty_chunks") > 0);
    /* a write torn by the crash: one copy got it, the other did not */
    memset(junk, 0xee, 1 << 20);
    pwrite_all(t.path[1], junk, 1 << 20, t.data_offset * 512 + (3ull << 20));
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    WAIT_FOR(st_int(b, "cluster.recovered_slots") == 1, 10000);
    /* a process death is confirmed at once: writes were never held */
    assert_true(st_null(b, "cluster.write_hold"));
    assert_false(st_bool(b, "cluster.writes_held"));
    assert_false(st_null(b, "cluster.last_takeover"));
    assert_int_equal(st_int(b, "cluster.last_takeover.slot"), 0);
    assert_true(st_int(b, "cluster.last_takeover.dirty_chunks") > 0);
    assert_true(st_int(b, "cluster.last_takeover.bytes") > 0);
    WAIT_FOR(st_int(b, "cluster.members") == 1, 5000);
    wait_idle(b);
    assert_true(st_int(b, "last_resync.bytes") > 0);
    /* timestamps (wall-clock ms) to measure the recovery exactly */
    {
        int64_t t0 = st_int(b, "cluster.recovery_started_ms"), now = (int64_t)time(NULL) * 1000;

        assert_true(t0 > now - 60000 && t0 <= now + 1000);
        assert_true(st_int(b, "cluster.last_takeover.at_ms") >= t0);
        WAIT_FOR(!st_null(b, "cluster.read_balancing_restored_ms"), 5000);
        assert_true(st_int(b, "cluster.read_balancing_restored_ms") >= t0);
        assert_true(st_int(b, "last_resync.started_ms") >= t0);
        assert_true(st_int(b, "last_resync.ended_ms") >= st_int(b, "last_resync.started_ms"));
    }
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_copies_equal(&t, size);
    clr_array_free(b);
    free(buf);
    free(junk);
    rmfiles(&t);
}

/* ---- a node that sees a device fail tells the others before the ack ---- */

static void test_device_failure(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 65536), *rd = aligned_alloc(4096, 65536);
    struct clr_md_sb sb;
    struct tarr t;
    char st[32];

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    memset(buf, 0x5a, 65536);
    assert_int_equal(
        clr_io_fault_fail_range(clr_array_member_io(a, t.path[1]), CLR_IO_FAULT_WRITE, 0, 0, EIO), 0);
    assert_int_equal(clr_array_pwrite(a, buf, 65536, 1 << 20, 0), 0);
    /* on the other node already, and in the superblocks */
    assert_string_equal(dev_state(b, 1, st, sizeof st), "faulty");
    assert_string_equal(dev_state(a, 1, st, sizeof st), "faulty");
    {
        uint8_t raw[CLR_MD_SB_AREA_BYTES];
        struct clr_err e;

        pread_all(t.path[0], raw, sizeof raw, 4096);
        assert_int_equal(clr_md_sb_decode(raw, sizeof raw, 0, &sb, &e), 0);
        assert_int_equal(sb.dev_roles[1], CLR_MD_ROLE_FAULTY);
    }
    assert_true(st_int(a, "counters.messages") > 0);
    /* the other node goes on degraded; it reads what the first wrote */
    assert_int_equal(clr_array_pread(b, rd, 65536, 1 << 20), 0);
    assert_memory_equal(buf, rd, 65536);
    assert_int_equal(clr_array_pwrite(b, buf, 65536, 2 << 20, 0), 0);
    {
        json_object *o = clr_array_status_json(b);

        assert_string_equal(json_object_get_string(jget(o, "state")), "degraded");
        json_object_put(o);
    }
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    free(rd);
    rmfiles(&t);
}

/* ---- a resync window on one node holds writes there on another ---- */

struct bg_write {
    struct clr_array *a;
    uint8_t *buf; /* NULL: write zeroes (clr_array_zero) */
    uint64_t off;
    atomic_int done;
    int rc;
    int64_t done_ms; /* wall clock when it returned */
};

static void *bg_write_main(void *arg)
{
    struct bg_write *w = arg;
    struct timespec ts;

    if (w->buf)
        w->rc = clr_array_pwrite(w->a, w->buf, 65536, w->off, 0);
    else
        w->rc = clr_array_zero(w->a, 65536, w->off, 0);
    clock_gettime(CLOCK_REALTIME, &ts);
    w->done_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    atomic_store(&w->done, 1);
    return NULL;
}

static void test_window_holds_write(void **s)
{
    struct clr_array *a, *b;
    struct bg_write w = { 0 };
    uint8_t *buf = aligned_alloc(4096, 65536), *rd = aligned_alloc(4096, 65536);
    struct clr_err e;
    pthread_t th;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 100ull << 20, 1024, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    /* a check on a (the window protocol as for a resync), slowly */
    clr_array_set_sync_speed(a, 1000, 12000);
    assert_int_equal(clr_array_start_check(a, false, &e), 0);
    WAIT_FOR(!st_null(b, "cluster.remote_window"), 10000);
    assert_int_equal(st_int(b, "cluster.remote_window.from"), 0);
    assert_int_equal(st_int(b, "cluster.remote_window.lo_bytes"), 0);
    assert_int_equal(st_int(b, "cluster.remote_window.hi_bytes"), 32 << 20);
    /* outside the window: goes through */
    memset(buf, 0x77, 65536);
    assert_int_equal(clr_array_pwrite(b, buf, 65536, 80ull << 20, 0), 0);
    /* inside: held until the window moves past it */
    w.a = b;
    w.buf = buf;
    w.off = 4 << 20;
    pthread_create(&th, NULL, bg_write_main, &w);
    usleep(300000);
    assert_int_equal(atomic_load(&w.done), 0);
    assert_true(st_int(b, "cluster.remote_window.lo_bytes") == 0);
    WAIT_FOR(atomic_load(&w.done) == 1, 30000);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, 0);
    /* released because the window moved on (or the check ended) */
    if (!st_null(b, "cluster.remote_window"))
        assert_true(st_int(b, "cluster.remote_window.lo_bytes") >= (4 << 20) + 65536);
    assert_int_equal(clr_array_pread(a, rd, 65536, 4 << 20), 0);
    assert_memory_equal(buf, rd, 65536);
    clr_array_set_sync_speed(a, 1000000, 10000000);
    wait_idle(a);
    WAIT_FOR(st_null(b, "cluster.remote_window"), 10000);
    assert_int_equal(check_mismatches(b), 0);
    /* writes never waited for a lock or sent a message themselves */
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    free(rd);
    rmfiles(&t);
}

/* ---- a node lost with its whole node: writes wait for the fence ---- */

static void test_lost_node_holds_writes(void **s)
{
    struct clr_array *a, *b;
    struct bg_write w = { 0 }, z = { 0 };
    uint8_t *buf = aligned_alloc(4096, 65536), *wb = aligned_alloc(4096, 65536);
    uint8_t *rd = aligned_alloc(4096, 65536);
    pthread_t tw, tz;
    uint64_t member = 0, size;
    int64_t h0, h1;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    size = clr_array_size(a);
    memset(buf, 0x41, 65536);
    assert_int_equal(clr_array_pwrite(a, buf, 65536, 1 << 20, 0), 0);
    assert_false(st_bool(b, "cluster.writes_held"));
    assert_int_equal(st_int(b, "cluster.unconfirmed"), 0);
    assert_true(st_null(b, "cluster.write_hold"));
    /* a's node drops out (maybe alive behind a partition) */
    assert_int_equal(clr_array_crash_lost(a, &member), 0);
    clr_array_free(a);
    assert_true(member != 0);
    WAIT_FOR(st_bool(b, "cluster.writes_held"), 5000);
    assert_int_equal(st_int(b, "cluster.unconfirmed"), 1);
    h0 = st_int(b, "cluster.write_hold.start_ms");
    assert_true(h0 > 0);
    assert_true(st_null(b, "cluster.write_hold.end_ms"));
    /* a write and a zeroing on b wait: not failed, not acknowledged */
    memset(wb, 0x52, 65536);
    w.a = b;
    w.buf = wb;
    w.off = 4 << 20;
    z.a = b;
    z.off = 1 << 20;
    pthread_create(&tw, NULL, bg_write_main, &w);
    pthread_create(&tz, NULL, bg_write_main, &z);
    WAIT_FOR(st_int(b, "cluster.writes_waiting") == 2, 5000);
    assert_int_equal(atomic_load(&w.done), 0);
    assert_int_equal(atomic_load(&z.done), 0);
    /* reads go on, and see what a acknowledged */
    assert_int_equal(clr_array_pread(b, rd, 65536, 1 << 20), 0);
    assert_memory_equal(buf, rd, 65536);
    /* its bitmap lock is still held: no takeover before the fence */
    assert_int_equal(st_int(b, "cluster.recovered_slots"), 0);
    assert_true(st_bool(b, "cluster.recovering"));
    /* the fence confirms (here: the operator's override) */
    assert_int_equal(clr_array_confirm_dead(b, member + 1000), -ENOENT);
    assert_int_equal(clr_array_confirm_dead(b, member), 0);
    WAIT_FOR(atomic_load(&w.done) == 1 && atomic_load(&z.done) == 1, 10000);
    pthread_join(tw, NULL);
    pthread_join(tz, NULL);
    assert_int_equal(w.rc, 0);
    assert_int_equal(z.rc, 0);
    assert_false(st_bool(b, "cluster.writes_held"));
    assert_int_equal(st_int(b, "cluster.unconfirmed"), 0);
    h1 = st_int(b, "cluster.write_hold.end_ms");
    assert_true(h1 >= h0);
    assert_int_equal(st_int(b, "cluster.write_hold.holds"), 1);
    /* nothing held was acknowledged inside the window */
    assert_true(w.done_ms >= h1);
    assert_true(z.done_ms >= h1);
    /* then the takeover, as after any death */
    WAIT_FOR(st_int(b, "cluster.recovered_slots") == 1, 10000);
    assert_int_equal(st_int(b, "cluster.last_takeover.slot"), 0);
    wait_idle(b);
    assert_int_equal(clr_array_pread(b, rd, 65536, 4 << 20), 0);
    assert_memory_equal(wb, rd, 65536);
    memset(buf, 0, 65536);
    assert_int_equal(clr_array_pread(b, rd, 65536, 1 << 20), 0);
    assert_memory_equal(buf, rd, 65536);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_copies_equal(&t, size);
    clr_array_free(b);
    free(buf);
    free(wb);
    free(rd);
    rmfiles(&t);
}

/* A stop ends writes held at admission: they wait with no time limit,
 * so only the stop's kick can end them; they fail, never complete. */
static void test_stop_ends_held_writes(void **s)
{
    struct clr_array *a, *b;
    struct bg_write w = { 0 };
    uint8_t *wb = aligned_alloc(4096, 65536);
    uint64_t member = 0;
    pthread_t tw;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    assert_int_equal(clr_array_crash_lost(a, &member), 0);
    clr_array_free(a);
    WAIT_FOR(st_bool(b, "cluster.writes_held"), 5000);
    memset(wb, 0x53, 65536);
    w.a = b;
    w.buf = wb;
    w.off = 2 << 20;
    pthread_create(&tw, NULL, bg_write_main, &w);
    WAIT_FOR(st_int(b, "cluster.writes_waiting") == 1, 5000);
    assert_int_equal(atomic_load(&w.done), 0);
    assert_int_equal(clr_array_stop(b), 0);
    pthread_join(tw, NULL);
    assert_int_equal(w.rc, -ESHUTDOWN);
    clr_array_free(b);
    free(wb);
    rmfiles(&t);
}

/* ---- a node leaving with NEEDED chunks hands them over ---- */

static void test_rejoin_after_crash(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20);
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    memset(buf, 0x31, 1 << 20);
    assert_int_equal(clr_array_pwrite(a, buf, 1 << 20, 5 << 20, 0), 0);
    /* alone, it dies; the next node to join finds the slot unowned */
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    b = start_node(&t, 1);
    assert_int_equal(st_int(b, "cluster.slot"), 0); /* lowest free slot */
    wait_idle(b);
    assert_true(st_int(b, "last_resync.bytes") > 0);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(b);
    free(buf);
    rmfiles(&t);
}

/* ---- fail, remove, re-add from one node; the other follows ---- */

static void test_fail_remove_readd(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20), *rd = aligned_alloc(4096, 1 << 20);
    struct clr_err e = { "" };
    uint64_t size;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    size = clr_array_size(a);
    if (clr_array_fail_device(a, t.path[1], &e) != 0)
        fail_msg("fail: %s", e.msg);
    assert_true(dev_is(b, t.path[1], "faulty"));
    /* both nodes write while it is out: both bitmaps remember */
    memset(buf, 0x11, 1 << 20);
    assert_int_equal(clr_array_pwrite(a, buf, 1 << 20, 2 << 20, 0), 0);
    memset(buf, 0x22, 1 << 20);
    assert_int_equal(clr_array_pwrite(b, buf, 1 << 20, 9 << 20, 0), 0);
    if (clr_array_remove_device(a, t.path[1], &e) != 0)
        fail_msg("remove: %s", e.msg);
    assert_true(dev_is(b, t.path[1], "removed"));
    if (clr_array_readd_device(a, t.path[1], &e) != 0)
        fail_msg("re-add: %s", e.msg);
    /* b writes to it at once (not read from it until in sync) */
    assert_true(dev_is(b, t.path[1], "rebuilding"));
    memset(buf, 0x33, 1 << 20);
    assert_int_equal(clr_array_pwrite(b, buf, 1 << 20, 20 << 20, 0), 0);
    wait_idle(a);
    WAIT_FOR(dev_is(a, t.path[1], "in_sync"), 10000);
    WAIT_FOR(dev_is(b, t.path[1], "in_sync"), 10000);
    assert_true(st_int(a, "last_resync.bytes") > 0);
    assert_int_equal(clr_array_pread(b, rd, 1 << 20, 9 << 20), 0);
    memset(buf, 0x22, 1 << 20);
    assert_memory_equal(buf, rd, 1 << 20);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_copies_equal(&t, size);
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    free(rd);
    rmfiles(&t);
}

/* ---- adding a spare: every node must see it (NEWDISK), else roll back ---- */

static void test_add_spare(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20), sbraw[CLR_MD_SB_AREA_BYTES], zero[CLR_MD_SB_AREA_BYTES];
    struct clr_err e = { "" };
    char hidden[400], spare[400];
    uint64_t size;
    struct tarr t;
    int fd;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    size = clr_array_size(a);
    memset(buf, 0x61, 1 << 20);
    assert_int_equal(clr_array_pwrite(a, buf, 1 << 20, 1 << 20, 0), 0);
    if (clr_array_fail_device(a, t.path[1], &e) != 0 || clr_array_remove_device(a, t.path[1], &e) != 0)
        fail_msg("fail/remove: %s", e.msg);
    /* a device only this node sees: refused, its superblock erased */
    snprintf(hidden, sizeof hidden, "%s/only-here", t.dir);
    assert_int_equal(mkdir(hidden, 0700), 0);
    strcat(hidden, "/d9");
    fd = open(hidden, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)t.dev_bytes), 0);
    close(fd);
    assert_int_equal(clr_array_add_device(a, hidden, &e), -ENOENT);
    assert_non_null(strstr(e.msg, "could not see the new device"));
    pread_all(hidden, sbraw, sizeof sbraw, 4096);
    memset(zero, 0, sizeof zero);
    assert_memory_equal(sbraw, zero, sizeof zero);
    assert_true(dev_is(a, hidden, "absent"));
    assert_true(dev_is(b, hidden, "absent"));
    /* one both see (same directory as the members) */
    snprintf(spare, sizeof spare, "%s/d5", t.dir);
    fd = open(spare, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)t.dev_bytes), 0);
    close(fd);
    if (clr_array_add_device(a, spare, &e) != 0)
        fail_msg("add: %s", e.msg);
    WAIT_FOR(!dev_is(b, spare, "absent"), 5000);
    memset(buf, 0x62, 1 << 20);
    assert_int_equal(clr_array_pwrite(b, buf, 1 << 20, 7 << 20, 0), 0);
    wait_idle(a);
    WAIT_FOR(dev_is(a, spare, "in_sync"), 20000);
    WAIT_FOR(dev_is(b, spare, "in_sync"), 10000);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_files_equal(t.path[0], spare, t.data_offset, size);
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    rmfiles(&t);
}

/* Byte offset of slot @slot's bits (after its bitmap superblock) on @path. */
static uint64_t slot_bits_off(const char *path, unsigned slot, uint64_t *nbytes)
{
    uint8_t raw[CLR_MD_SB_AREA_BYTES], braw[CLR_BITMAP_SB_BYTES];
    struct clr_md_sb sb;
    struct clr_bitmap_sb b;
    struct clr_err e;

    pread_all(path, raw, sizeof raw, 4096);
    assert_int_equal(clr_md_sb_decode(raw, sizeof raw, 0, &sb, &e), 0);
    pread_all(path, braw, sizeof braw, (sb.super_offset + (uint64_t)(int64_t)sb.bitmap_offset) * 512);
    assert_int_equal(clr_bitmap_sb_decode(braw, sizeof braw, sb.set_uuid, &b, &e), 0);
    *nbytes = (clr_bitmap_bits(b.sync_size, b.chunksize) + 7) / 8;
    return clr_bitmap_slot_offset(&sb, &b, slot) + CLR_BITMAP_SB_BYTES;
}

static uint16_t disk_role(const char *path, unsigned dev)
{
    uint8_t raw[CLR_MD_SB_AREA_BYTES];
    struct clr_md_sb sb;
    struct clr_err e;

    pread_all(path, raw, sizeof raw, 4096);
    assert_int_equal(clr_md_sb_decode(raw, sizeof raw, 0, &sb, &e), 0);
    return sb.dev_roles[dev];
}

/* ---- a takeover reads the union of the dead node's bits on all members ---- */

static void test_takeover_partial_bitmap(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20), *junk = malloc(1 << 20), *zero;
    uint64_t size, off, nb;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    size = clr_array_size(a);
    memset(buf, 0x41, 1 << 20);
    assert_int_equal(clr_array_pwrite(a, buf, 1 << 20, 3ull << 20, 0), 0);
    /* its bitmap write reached only the second member; a torn write left
     * the second copy different */
    off = slot_bits_off(t.path[0], 0, &nb);
    zero = calloc(1, nb);
    pwrite_all(t.path[0], zero, nb, off);
    memset(junk, 0xee, 1 << 20);
    pwrite_all(t.path[1], junk, 1 << 20, t.data_offset * 512 + (3ull << 20));
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    WAIT_FOR(st_int(b, "cluster.recovered_slots") == 1, 10000);
    assert_true(st_int(b, "cluster.last_takeover.dirty_chunks") > 0);
    wait_idle(b);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_copies_equal(&t, size);
    clr_array_free(b);
    free(zero);
    free(buf);
    free(junk);
    rmfiles(&t);
}

/* ---- write-behind: a device another node failed is still written here ---- */

static void test_write_behind(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 65536), *rd = aligned_alloc(4096, 65536), *raw = malloc(65536);
    struct clr_err e = { "" };
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    /* only a's path to d1 breaks */
    assert_int_equal(
        clr_io_fault_fail_range(clr_array_member_io(a, t.path[1]), CLR_IO_FAULT_WRITE, 0, 0, EIO), 0);
    memset(buf, 0x5a, 65536);
    assert_int_equal(clr_array_pwrite(a, buf, 65536, 1 << 20, 0), 0);
    assert_true(dev_is(b, t.path[1], "faulty"));
    assert_int_equal(disk_role(t.path[0], 1), CLR_MD_ROLE_FAULTY);
    {
        json_object *o = clr_array_status_json(b), *x = json_object_array_get_idx(jget(o, "devices"), 1);
        json_object *oa = clr_array_status_json(a), *xa = json_object_array_get_idx(jget(oa, "devices"), 1);

        assert_non_null(jget(x, "write_behind"));
        assert_null(jget(xa, "write_behind"));
        json_object_put(o);
        json_object_put(oa);
    }
    /* b keeps d1 current (best effort) ... */
    memset(buf, 0x6b, 65536);
    assert_int_equal(clr_array_pwrite(b, buf, 65536, 2 << 20, 0), 0);
    pread_all(t.path[1], raw, 65536, t.data_offset * 512 + (2 << 20));
    assert_memory_equal(buf, raw, 65536);
    /* ... but never reads it */
    memset(raw, 0xee, 65536);
    pwrite_all(t.path[1], raw, 65536, t.data_offset * 512 + (2 << 20));
    for (int i = 0; i < 8; i++) {
        assert_int_equal(clr_array_pread(b, rd, 65536, 2 << 20), 0);
        assert_memory_equal(buf, rd, 65536);
    }
    /* a, which saw the failure, does not write it */
    memset(buf, 0x7c, 65536);
    pwrite_all(t.path[1], raw, 65536, t.data_offset * 512 + (4 << 20));
    assert_int_equal(clr_array_pwrite(a, buf, 65536, 4 << 20, 0), 0);
    pread_all(t.path[1], rd, 65536, t.data_offset * 512 + (4 << 20));
    assert_memory_equal(raw, rd, 65536);
    /* removed: b stops too */
    if (clr_array_remove_device(a, t.path[1], &e) != 0)
        fail_msg("remove: %s", e.msg);
    assert_true(dev_is(b, t.path[1], "removed"));
    memset(buf, 0x8d, 65536);
    assert_int_equal(clr_array_pwrite(b, buf, 65536, 4 << 20, 0), 0);
    pread_all(t.path[1], rd, 65536, t.data_offset * 512 + (4 << 20));
    assert_memory_equal(raw, rd, 65536);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    free(rd);
    free(raw);
    rmfiles(&t);
}

/* ---- a failure the cluster was not told of is never acked ---- */

static void test_unannounced_failure_not_acked(void **s)
{
    struct clr_array *a, *b;
    struct bg_write w = { 0 };
    uint8_t *buf = aligned_alloc(4096, 65536);
    struct clr_err e = { "" };
    pthread_t th;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    /* b cannot re-read any superblock: it refuses METADATA_UPDATED */
    for (unsigned i = 0; i < 2; i++)
        assert_int_equal(
            clr_io_fault_fail_range(clr_array_member_io(b, t.path[i]), CLR_IO_FAULT_READ, 4096, 4096, EIO),
            0);
    assert_int_equal(
        clr_io_fault_fail_range(clr_array_member_io(a, t.path[1]), CLR_IO_FAULT_WRITE, 0, 0, EIO), 0);
    memset(buf, 0x5a, 65536);
    w.a = a;
    w.buf = buf;
    w.off = 1 << 20;
    pthread_create(&th, NULL, bg_write_main, &w);
    assert_int_equal(clr_array_wait_frozen(a, 10000, 1), 0);
    usleep(200000);
    assert_int_equal(atomic_load(&w.done), 0);
    assert_int_equal(clr_array_thaw_error(a, &e), 0);
    WAIT_FOR(atomic_load(&w.done) == 1, 10000);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, -EIO);
    for (unsigned i = 0; i < 2; i++)
        clr_io_fault_clear(clr_array_member_io(b, t.path[i]));
    clr_array_stop(a);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    rmfiles(&t);
}

/* ---- a re-add not taken everywhere is rolled back ---- */

static void test_readd_rollback(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20);
    struct clr_err e = { "" };
    uint64_t off, nb;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    if (clr_array_fail_device(a, t.path[1], &e) != 0)
        fail_msg("fail: %s", e.msg);
    memset(buf, 0x22, 1 << 20);
    assert_int_equal(clr_array_pwrite(b, buf, 1 << 20, 9 << 20, 0), 0);
    /* a cannot read b's bitmap slot: gathering the bitmaps fails */
    off = slot_bits_off(t.path[0], 1, &nb);
    assert_int_equal(
        clr_io_fault_fail_range(clr_array_member_io(a, t.path[0]), CLR_IO_FAULT_READ, off - 256, 4096, EIO),
        0);
    assert_int_not_equal(clr_array_readd_device(a, t.path[1], &e), 0);
    assert_non_null(strstr(e.msg, "rolled back"));
    assert_true(dev_is(a, t.path[1], "faulty"));
    WAIT_FOR(dev_is(b, t.path[1], "faulty"), 5000);
    assert_int_equal(disk_role(t.path[0], 1), CLR_MD_ROLE_FAULTY);
    /* the fault gone, the re-add works */
    clr_io_fault_clear(clr_array_member_io(a, t.path[0]));
    if (clr_array_readd_device(a, t.path[1], &e) != 0)
        fail_msg("re-add: %s", e.msg);
    wait_idle(a);
    WAIT_FOR(dev_is(a, t.path[1], "in_sync"), 10000);
    WAIT_FOR(dev_is(b, t.path[1], "in_sync"), 10000);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_copies_equal(&t, clr_array_size(a));
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    rmfiles(&t);
}

/* ---- the node rebuilding a spare dies: a survivor resumes the rebuild ---- */

static void test_rebuild_resumes(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20);
    struct clr_err e = { "" };
    char spare[400];
    uint64_t size;
    struct tarr t;
    int fd;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 64ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    size = clr_array_size(a);
    write_pattern(b, buf, 0x30, 7);
    if (clr_array_fail_device(a, t.path[1], &e) != 0 || clr_array_remove_device(a, t.path[1], &e) != 0)
        fail_msg("fail/remove: %s", e.msg);
    snprintf(spare, sizeof spare, "%s/d5", t.dir);
    fd = open(spare, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)t.dev_bytes), 0);
    close(fd);
    clr_array_set_sync_speed(a, 1000, 4000); /* slow: it dies half way */
    if (clr_array_add_device(a, spare, &e) != 0)
        fail_msg("add: %s", e.msg);
    WAIT_FOR(dev_is(b, spare, "rebuilding"), 5000);
    usleep(700000);
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    WAIT_FOR(dev_is(b, spare, "in_sync"), 60000);
    wait_idle(b);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_files_equal(t.path[0], spare, t.data_offset, size);
    clr_array_free(b);
    free(buf);
    rmfiles(&t);
}

/* ---- no write is acked before the others stopped reading a failed leg ---- */

static void test_ack_waits_for_announcement(void **s)
{
    struct clr_array *a, *b;
    struct bg_write x = { 0 }, y = { 0 };
    uint8_t *bx = aligned_alloc(4096, 65536), *by = aligned_alloc(4096, 65536),
            *rd = aligned_alloc(4096, 65536);
    pthread_t tx, ty;
    struct timespec t0, t1;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    memset(bx, 0x11, 65536);
    memset(by, 0x22, 65536);
    /* warm the bitmap: no flush in the timed writes */
    assert_int_equal(clr_array_pwrite(a, bx, 65536, 1 << 20, 0), 0);
    assert_int_equal(clr_array_pwrite(a, by, 65536, 3 << 20, 0), 0);
    /* b is slow to process METADATA_UPDATED (its superblock reads) */
    clr_io_fault_delay(clr_array_member_io(b, t.path[0]), 800);
    clr_io_fault_delay(clr_array_member_io(b, t.path[1]), 800);
    assert_int_equal(
        clr_io_fault_fail_range(clr_array_member_io(a, t.path[1]), CLR_IO_FAULT_WRITE, 0, 0, EIO), 0);
    x = (struct bg_write){ .a = a, .buf = bx, .off = 1 << 20 };
    pthread_create(&tx, NULL, bg_write_main, &x);
    WAIT_FOR(dev_is(a, t.path[1], "faulty"), 5000);
    /* Y is issued after the failure, without a leg to d1: still not acked
     * before b stopped reading d1 */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    y = (struct bg_write){ .a = a, .buf = by, .off = 3 << 20 };
    pthread_create(&ty, NULL, bg_write_main, &y);
    pthread_join(ty, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(y.rc, 0);
    assert_true(dev_is(b, t.path[1], "faulty"));
    pthread_join(tx, NULL);
    assert_int_equal(x.rc, 0);
    assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 200);
    clr_io_fault_delay(clr_array_member_io(b, t.path[0]), 0);
    clr_io_fault_delay(clr_array_member_io(b, t.path[1]), 0);
    assert_int_equal(clr_array_pread(b, rd, 65536, 3 << 20), 0);
    assert_memory_equal(by, rd, 65536);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(bx);
    free(by);
    free(rd);
    rmfiles(&t);
}

/* ---- a policy daemon attached: errors wait for its decision ---- */

/* devices[i].awaiting_decision.KEY, -1 if absent */
static int64_t held_int(struct clr_array *a, unsigned i, const char *key)
{
    json_object *o = clr_array_status_json(a), *x = json_object_array_get_idx(jget(o, "devices"), i);
    int64_t v = -1;

    if (x && (x = jget(x, "awaiting_decision")) && (x = jget(x, key)))
        v = json_object_get_int64(x);
    json_object_put(o);
    return v;
}

/* devices[i].KEY, -1 if absent */
static int64_t dev_int(struct clr_array *a, unsigned i, const char *key)
{
    json_object *o = clr_array_status_json(a), *x = json_object_array_get_idx(jget(o, "devices"), i);
    int64_t v = -1;

    if (x && (x = jget(x, key)))
        v = json_object_get_int64(x);
    json_object_put(o);
    return v;
}

static void test_policy_hold(void **s)
{
    struct clr_array *a, *b;
    struct bg_write x = { 0 };
    uint8_t *bx = aligned_alloc(4096, 65536), *rd = aligned_alloc(4096, 65536);
    struct clr_err e = { "" };
    pthread_t tx;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    memset(bx, 0x3c, 65536);
    assert_int_equal(clr_array_pwrite(a, bx, 65536, 1 << 20, 0), 0);
    /* a lease without a confirm time, or one without a cluster, is refused */
    assert_int_equal(clr_array_policy(a, 1000, 0, false, NULL, NULL, &e), -EINVAL);
    assert_int_equal(clr_array_policy(a, 60000, 60000, false, "row 3 fence: fence n2", "fence n2", &e), 0);
    assert_true(st_bool(a, "policy.attached"));
    {
        json_object *o = clr_array_status_json(a);

        assert_string_equal(json_object_get_string(jget(o, "policy.decision")), "row 3 fence: fence n2");
        assert_string_equal(json_object_get_string(jget(o, "policy.pending")), "fence n2");
        json_object_put(o);
    }
    assert_int_equal(clr_array_policy(a, 60000, 60000, false, "row 3 fence: fence n2", NULL, &e), 0);
    {
        json_object *o = clr_array_status_json(a);

        assert_null(jget(o, "policy.pending"));
        json_object_put(o);
    }
    assert_false(st_bool(b, "policy.attached"));
    /* reads that fail on d1 here are read from d0: nothing fails */
    assert_int_equal(clr_io_fault_fail_range(clr_array_member_io(a, t.path[1]), CLR_IO_FAULT_READ, 0, 0, EIO),
                     0);
    for (unsigned i = 0; i < 8; i++) {
        assert_int_equal(clr_array_pread(a, rd, 65536, 1 << 20), 0);
        assert_memory_equal(bx, rd, 65536);
    }
    assert_true(dev_is(a, t.path[1], "in_sync"));
    /* a write that fails on d1 waits for the decision, unacknowledged;
     * at 8 MiB it dirties a new bitmap chunk, whose flush fails on d1
     * first (that failure waits too) */
    assert_int_equal(
        clr_io_fault_fail_range(clr_array_member_io(a, t.path[1]), CLR_IO_FAULT_WRITE, 0, 0, EIO), 0);
    memset(bx, 0x4d, 65536);
    x = (struct bg_write){ .a = a, .buf = bx, .off = 8 << 20 };
    pthread_create(&tx, NULL, bg_write_main, &x);
    WAIT_FOR(held_int(a, 1, "held_writes") == 1, 5000);
    assert_false(atomic_load(&x.done));
    assert_true(dev_is(a, t.path[1], "in_sync"));
    assert_true(dev_is(b, t.path[1], "in_sync"));
    assert_int_equal(st_int(a, "policy.holds"), 1);
    /* the decision, taken on the other node: fail the disk cluster-wide */
    assert_int_equal(clr_array_fail_device(b, t.path[1], &e), 0);
    pthread_join(tx, NULL);
    assert_int_equal(x.rc, 0);
    assert_true(dev_is(a, t.path[1], "faulty"));
    assert_int_equal(held_int(a, 1, "held_writes"), -1);
    assert_int_equal(st_int(a, "policy.timeouts"), 0);
    assert_int_equal(clr_array_pread(b, rd, 65536, 8 << 20), 0);
    assert_memory_equal(bx, rd, 65536);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(bx);
    free(rd);
    rmfiles(&t);
}

/* A write that fails on both members is held on the first, with both
 * errors counted (the daemon must see a node that lost every member);
 * a stop ends the hold, and the write is not acknowledged. */
static void test_policy_hold_counts_every_leg(void **s)
{
    struct clr_array *a, *b;
    struct bg_write x = { 0 };
    uint8_t *bx = aligned_alloc(4096, 65536);
    struct clr_err e = { "" };
    pthread_t tx;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    memset(bx, 0x7a, 65536);
    assert_int_equal(clr_array_pwrite(a, bx, 65536, 1 << 20, 0), 0);
    assert_int_equal(clr_array_policy(a, 60000, 60000, false, NULL, NULL, &e), 0);
    for (unsigned i = 0; i < 2; i++)
        assert_int_equal(
            clr_io_fault_fail_range(clr_array_member_io(a, t.path[i]), CLR_IO_FAULT_WRITE, 0, 0, ENODEV), 0);
    x = (struct bg_write){ .a = a, .buf = bx, .off = 1 << 20 };
    pthread_create(&tx, NULL, bg_write_main, &x);
    WAIT_FOR(held_int(a, 0, "held_writes") == 1 || held_int(a, 1, "held_writes") == 1, 5000);
    {
        json_object *o = clr_array_status_json(a), *d = jget(o, "devices");

        for (unsigned i = 0; i < 2; i++)
            assert_true(json_object_get_int64(jget(json_object_array_get_idx(d, i), "io_errors.path")) >= 1);
        json_object_put(o);
    }
    assert_false(atomic_load(&x.done));
    assert_int_equal(clr_array_stop(a), 0);
    pthread_join(tx, NULL);
    assert_int_not_equal(x.rc, 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(bx);
    rmfiles(&t);
}

/* No decision within confirm_timeout: the member fails as md fails it;
 * while the daemon renews its hold, the write keeps waiting. */
static void test_policy_hold_timeout(void **s)
{
    struct clr_array *a, *b;
    struct bg_write x = { 0 };
    uint8_t *bx = aligned_alloc(4096, 65536), *rd = aligned_alloc(4096, 65536);
    struct clr_err e = { "" };
    pthread_t tx;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    memset(bx, 0x5e, 65536);
    assert_int_equal(clr_array_pwrite(a, bx, 65536, 1 << 20, 0), 0);
    /* confirm_timeout 200 ms, the hold renewed for a minute */
    assert_int_equal(clr_array_policy(a, 200, 60000, true, NULL, NULL, &e), 0);
    assert_true(st_bool(a, "policy.holding"));
    assert_int_equal(
        clr_io_fault_fail_range(clr_array_member_io(a, t.path[1]), CLR_IO_FAULT_WRITE, 0, 0, EIO), 0);
    memset(bx, 0x6f, 65536);
    x = (struct bg_write){ .a = a, .buf = bx, .off = 1 << 20 };
    pthread_create(&tx, NULL, bg_write_main, &x);
    /* still held well past confirm_timeout, waiting, not spinning: the
     * process used far less CPU than the hold took */
    {
        struct rusage r0, r1;
        struct timespec w0, w1;
        int64_t cpu_ms, wall_ms;

        getrusage(RUSAGE_SELF, &r0);
        clock_gettime(CLOCK_MONOTONIC, &w0);
        WAIT_FOR(held_int(a, 1, "held_for_ms") > 1500, 5000);
        getrusage(RUSAGE_SELF, &r1);
        clock_gettime(CLOCK_MONOTONIC, &w1);
        cpu_ms =
            (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec + r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) * 1000 +
            (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1000;
        wall_ms = (w1.tv_sec - w0.tv_sec) * 1000 + (w1.tv_nsec - w0.tv_nsec) / 1000000;
        if (cpu_ms * 2 > wall_ms)
            fail_msg("a held write burned %lld ms of CPU in %lld ms", (long long)cpu_ms, (long long)wall_ms);
    }
    assert_false(atomic_load(&x.done));
    /* the daemon stops holding (its decision went away): after
     * confirm_timeout the member fails, as md's would */
    assert_int_equal(clr_array_policy(a, 200, 60000, false, NULL, NULL, &e), 0);
    pthread_join(tx, NULL);
    assert_int_equal(x.rc, 0);
    assert_int_equal(st_int(a, "policy.timeouts"), 1);
    assert_true(dev_is(a, t.path[1], "faulty"));
    WAIT_FOR(dev_is(b, t.path[1], "faulty"), 5000);
    assert_int_equal(clr_array_pread(b, rd, 65536, 1 << 20), 0);
    assert_memory_equal(bx, rd, 65536);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(bx);
    free(rd);
    rmfiles(&t);
}

/* Row 7: a write refused with EBADE (a reservation conflict: this node
 * has been fenced) is held with no timeout and never fails the member;
 * a stop request ends the hold, the write unacknowledged. */
static void test_policy_hold_reservation(void **s)
{
    struct clr_array *a, *b;
    struct bg_write x = { 0 };
    uint8_t *bx = aligned_alloc(4096, 65536);
    struct clr_err e = { "" };
    pthread_t tx;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    memset(bx, 0x1e, 65536);
    assert_int_equal(clr_array_pwrite(a, bx, 65536, 1 << 20, 0), 0);
    /* confirm_timeout 200 ms: any other error would fail the member soon */
    assert_int_equal(clr_array_policy(a, 200, 60000, false, NULL, NULL, &e), 0);
    assert_int_equal(
        clr_io_fault_fail_range(clr_array_member_io(a, t.path[1]), CLR_IO_FAULT_WRITE, 0, 0, EBADE), 0);
    x = (struct bg_write){ .a = a, .buf = bx, .off = 1 << 20 };
    pthread_create(&tx, NULL, bg_write_main, &x);
    WAIT_FOR(held_int(a, 1, "held_for_ms") > 1500, 5000);
    assert_false(atomic_load(&x.done));
    assert_int_equal(st_int(a, "policy.timeouts"), 0);
    assert_true(dev_is(a, t.path[1], "in_sync"));
    assert_true(dev_is(b, t.path[1], "in_sync"));
    assert_true(dev_int(a, 1, "io_errors.reservation") >= 1);
    clr_array_stop_requested(a);
    pthread_join(tx, NULL);
    assert_int_not_equal(x.rc, 0);
    assert_true(dev_is(a, t.path[1], "in_sync"));
    assert_int_equal(clr_array_stop(a), 0);
    assert_true(dev_is(b, t.path[1], "in_sync"));
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(bx);
    rmfiles(&t);
}

/* Row 1: a media error on a read is served by the other copy and the
 * sectors are rewritten onto the bad one from it (a resync of their
 * bitmap chunk, under the cluster's resync window), then read back; the
 * member stays in sync on every node.  A media error on a write is
 * counted as such (the daemon fails the disk for it). */
static void test_policy_rewrite(void **s)
{
    struct clr_array *a, *b;
    struct bg_write x = { 0 };
    uint8_t *bx = aligned_alloc(4096, 65536), *rd = aligned_alloc(4096, 65536);
    struct clr_io_fault_stats fs;
    struct clr_err e = { "" };
    struct clr_io_dev *d1;
    uint64_t bad = (1ull << 20) + 8192;
    unsigned tries = 0;
    pthread_t tx;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    memset(bx, 0x91, 65536);
    assert_int_equal(clr_array_pwrite(a, bx, 65536, 1 << 20, 0), 0);
    wait_idle(a);
    assert_int_equal(clr_array_policy(a, 60000, 60000, false, NULL, NULL, &e), 0);
    d1 = clr_array_member_io(a, t.path[1]);
    /* a latent sector error on d1: reads fail with ENODATA until written */
    assert_int_equal(clr_io_fault_fail_range(d1, CLR_IO_FAULT_READ | CLR_IO_FAULT_HEAL_ON_WRITE,
                                             t.data_offset * 512 + bad, 4096, ENODATA),
                     0);
    /* reads spread over both copies: read until one went to d1 */
    do {
        assert_int_equal(clr_array_pread(a, rd, 65536, 1 << 20), 0);
        assert_memory_equal(bx, rd, 65536);
        clr_io_fault_stats(d1, &fs);
    } while (fs.read_errors == 0 && ++tries < 200);
    assert_int_equal(fs.read_errors, 1);
    WAIT_FOR(st_int(a, "policy.rewrites") >= 1, 5000);
    WAIT_FOR(dev_int(a, 1, "io_errors.rewritten") == 1, 10000);
    /* healed: d1 reads back the data, straight from the file */
    pread_all(t.path[1], rd, 65536, t.data_offset * 512 + (1 << 20));
    assert_memory_equal(bx, rd, 65536);
    assert_true(dev_is(a, t.path[1], "in_sync"));
    assert_true(dev_is(b, t.path[1], "in_sync"));
    assert_int_equal(st_int(a, "policy.holds"), 0);
    assert_int_equal(clr_array_pread(b, rd, 65536, 1 << 20), 0);
    assert_memory_equal(bx, rd, 65536);
    /* a media error on a write: held for the decision, counted as such */
    assert_int_equal(clr_io_fault_fail_range(d1, CLR_IO_FAULT_WRITE, 0, 0, ENODATA), 0);
    memset(bx, 0xa2, 65536);
    x = (struct bg_write){ .a = a, .buf = bx, .off = 1 << 20 };
    pthread_create(&tx, NULL, bg_write_main, &x);
    WAIT_FOR(held_int(a, 1, "held_writes") == 1, 5000);
    assert_true(dev_int(a, 1, "io_errors.media_on_write") >= 1);
    assert_int_equal(clr_array_fail_device(b, t.path[1], &e), 0);
    pthread_join(tx, NULL);
    assert_int_equal(x.rc, 0);
    assert_int_equal(clr_array_pread(b, rd, 65536, 1 << 20), 0);
    assert_memory_equal(bx, rd, 65536);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(bx);
    free(rd);
    rmfiles(&t);
}

/* ---- re-add while another node writes without a pause ---- */

struct loader {
    struct clr_array *a;
    unsigned id;
    atomic_int *stop;
    uint64_t n;
    int rc;
    uint64_t lo, span; /* bytes it writes in (span 0: the whole array) */
};

static void *loader_main(void *arg)
{
    struct loader *l = arg;
    uint8_t *buf = aligned_alloc(4096, 65536);
    uint64_t size = l->span ? l->span : clr_array_size(l->a);

    while (!atomic_load(l->stop) && l->rc == 0) {
        uint64_t off = l->lo + ((l->n * 13 + l->id * 5) % (size / 65536)) * 65536;

        memset(buf, (int)(l->id * 16 + (l->n & 15)), 65536);
        l->rc = clr_array_pwrite(l->a, buf, 65536, off, 0);
        l->n++;
    }
    free(buf);
    return NULL;
}

static void test_readd_under_load(void **s)
{
    struct clr_array *a, *b;
    struct loader ld[4];
    pthread_t th[4];
    atomic_int stop = 0;
    struct clr_err e = { "" };
    struct timespec t0, t1;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    if (clr_array_fail_device(a, t.path[1], &e) != 0 || clr_array_remove_device(a, t.path[1], &e) != 0)
        fail_msg("fail/remove: %s", e.msg);
    for (unsigned i = 0; i < 4; i++) {
        ld[i] = (struct loader){ .a = b, .id = i, .stop = &stop };
        pthread_create(&th[i], NULL, loader_main, &ld[i]);
    }
    usleep(200000);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (clr_array_readd_device(a, t.path[1], &e) != 0)
        fail_msg("re-add: %s", e.msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    usleep(300000);
    atomic_store(&stop, 1);
    for (unsigned i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(ld[i].rc, 0);
    }
    /* the receiver's drain waited for the writes in flight, not for a gap */
    assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 10000);
    wait_idle(a);
    WAIT_FOR(dev_is(a, t.path[1], "in_sync"), 20000);
    WAIT_FOR(dev_is(b, t.path[1], "in_sync"), 10000);
    wait_idle(a);
    wait_idle(b);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_copies_equal(&t, clr_array_size(a));
    clr_array_free(a);
    clr_array_free(b);
    rmfiles(&t);
}

/* RAID10 far and offset layouts in a cluster: the engine resyncs mirrors
 * in logical sectors whatever the layout, so the resync window covers
 * them as it covers near copies.  A member fails and is re-added while
 * both nodes write (each its own half); the re-added member catches up
 * and every copy agrees; then a node dies mid-write and the survivor's
 * takeover resync leaves every copy agreeing again. */
static void far_layout_cluster(uint32_t layout)
{
    struct clr_array *a, *b;
    struct loader ld[4];
    pthread_t th[4];
    atomic_int stop = 0;
    struct clr_err e = { "" };
    struct tarr t;
    uint64_t half;

    make_array(&t, 10, layout, 4, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    half = clr_array_size(a) / 2;
    if (clr_array_fail_device(a, t.path[1], &e) != 0 || clr_array_remove_device(a, t.path[1], &e) != 0)
        fail_msg("fail/remove: %s", e.msg);
    for (unsigned i = 0; i < 4; i++) {
        ld[i] = (struct loader){
            .a = i < 2 ? a : b, .id = i, .stop = &stop, .lo = i < 2 ? 0 : half, .span = half
        };
        pthread_create(&th[i], NULL, loader_main, &ld[i]);
    }
    usleep(200000);
    if (clr_array_readd_device(a, t.path[1], &e) != 0)
        fail_msg("re-add: %s", e.msg);
    usleep(300000);
    atomic_store(&stop, 1);
    for (unsigned i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(ld[i].rc, 0);
    }
    WAIT_FOR(dev_is(a, t.path[1], "in_sync"), 20000);
    WAIT_FOR(dev_is(b, t.path[1], "in_sync"), 10000);
    wait_idle(a);
    wait_idle(b);
    assert_int_equal(check_mismatches(b), 0);

    /* node 0 dies with writes in flight in its half */
    stop = 0;
    for (unsigned i = 0; i < 2; i++) {
        ld[i] = (struct loader){ .a = a, .id = i, .stop = &stop, .lo = 0, .span = half };
        pthread_create(&th[i], NULL, loader_main, &ld[i]);
    }
    usleep(200000);
    assert_int_equal(clr_array_crash(a), 0);
    atomic_store(&stop, 1);
    for (unsigned i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    clr_array_free(a);
    WAIT_FOR(st_int(b, "cluster.recovered_slots") == 1, 10000);
    wait_idle(b);
    assert_true(st_int(b, "last_resync.bytes") > 0);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(b);
    rmfiles(&t);
}

static void test_far2_cluster(void **s)
{
    (void)s;
    far_layout_cluster(0x201); /* f2 */
}

static void test_offset2_cluster(void **s)
{
    (void)s;
    far_layout_cluster(0x10201); /* o2 */
}

/* Clustered RAID5/6: recovery onto a spare under zone locks.  A member
 * fails and goes; a spare is added; the rebuild (EX of each stripe's zone)
 * runs while both nodes write their own half, then every chunk each node
 * last wrote reads back from both, check finds 0 mismatches, and the
 * rebuilt member alone can be lost: the data still reads back. */
struct pattern_writer {
    struct clr_array *a;
    uint64_t lo, n; /* 64 KiB blocks [lo, lo + n) */
    uint8_t *last;  /* value last written in each block (0: never) */
    atomic_int *stop;
    unsigned rounds;
    int rc;
};

static void *pattern_main(void *arg)
{
    struct pattern_writer *w = arg;
    uint8_t *buf = aligned_alloc(4096, 65536);

    for (uint64_t i = 0; w->rc == 0 && (!atomic_load(w->stop) || i < w->n); i++) {
        uint64_t b = (i * 7) % w->n;
        uint8_t v = (uint8_t)(1 + (i + w->lo) % 250);

        memset(buf, v, 65536);
        w->rc = clr_array_pwrite(w->a, buf, 65536, (w->lo + b) * 65536, 0);
        if (w->rc == 0)
            w->last[b] = v;
        w->rounds++;
    }
    free(buf);
    return NULL;
}

static void parity_spare_cluster(int level, unsigned nd)
{
    struct clr_array *a, *b, *n[2];
    struct pattern_writer w[2];
    pthread_t th[2];
    atomic_int stop = 0;
    struct clr_err e = { "" };
    uint8_t *rd = aligned_alloc(4096, 65536);
    char spare[400];
    uint64_t half;
    struct tarr t;
    int fd;

    make_array(&t, level, 2, nd, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    n[0] = a;
    n[1] = b;
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    half = clr_array_size(a) / 65536 / 2;
    if (clr_array_fail_device(a, t.path[1], &e) != 0 || clr_array_remove_device(a, t.path[1], &e) != 0)
        fail_msg("fail/remove: %s", e.msg);
    for (unsigned i = 0; i < 2; i++) {
        w[i] = (struct pattern_writer){ .a = n[i], .lo = i * half, .n = half, .stop = &stop };
        w[i].last = calloc(half, 1);
        pthread_create(&th[i], NULL, pattern_main, &w[i]);
    }
    snprintf(spare, sizeof spare, "%s/d7", t.dir);
    fd = open(spare, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)t.dev_bytes), 0);
    close(fd);
    if (clr_array_add_device(a, spare, &e) != 0)
        fail_msg("add: %s", e.msg);
    WAIT_FOR(dev_is(a, spare, "in_sync"), 30000);
    WAIT_FOR(dev_is(b, spare, "in_sync"), 10000);
    atomic_store(&stop, 1);
    for (unsigned i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].rc, 0);
    }
    printf("  raid%d: %u + %u writes while the spare was rebuilt\n", level, w[0].rounds, w[1].rounds);
    wait_idle(a);
    wait_idle(b);
    assert_int_equal(check_mismatches(b), 0);
    /* the rebuilt member's data is right: fail another member, read all */
    if (clr_array_fail_device(b, t.path[2], &e) != 0)
        fail_msg("fail: %s", e.msg);
    WAIT_FOR(dev_is(a, t.path[2], "faulty"), 5000);
    for (unsigned i = 0; i < 2; i++)
        for (uint64_t k = 0; k < half; k++) {
            uint8_t want = w[i].last[k];

            if (!want)
                continue;
            assert_int_equal(clr_array_pread(n[1 - i], rd, 65536, (w[i].lo + k) * 65536), 0);
            if (rd[0] != want || rd[65535] != want)
                fail_msg("block %" PRIu64 " reads 0x%02x, last written 0x%02x", w[i].lo + k, rd[0], want);
        }
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(w[0].last);
    free(w[1].last);
    free(rd);
    rmfiles(&t);
}

static void test_raid5_spare_cluster(void **s)
{
    (void)s;
    parity_spare_cluster(5, 4);
}

static void test_raid6_spare_cluster(void **s)
{
    (void)s;
    parity_spare_cluster(6, 5);
}

/* ---- a node restarting while a survivor takes its old slot over ---- */

static bool slot_has_bits(const char *path, unsigned slot)
{
    uint64_t nb, off = slot_bits_off(path, slot, &nb);
    uint8_t *bits = malloc(nb);
    bool any = false;

    pread_all(path, bits, nb, off);
    for (uint64_t i = 0; i < nb && !any; i++)
        any = bits[i] != 0;
    free(bits);
    return any;
}

static void test_rejoin_during_takeover(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20);
    struct tarr t;
    int64_t ops0;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    memset(buf, 0x51, 1 << 20);
    assert_int_equal(clr_array_pwrite(a, buf, 1 << 20, 3 << 20, 0), 0);
    assert_true(slot_has_bits(t.path[0], 0));
    /* b's takeover is slow: a restarts, loads its bits, and its join waits
     * for the slot lock while b merges them and clears the slot */
    clr_io_fault_delay(clr_array_member_io(b, t.path[0]), 500);
    clr_io_fault_delay(clr_array_member_io(b, t.path[1]), 500);
    ops0 = st_int(b, "counters.lock_ops");
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    /* b holds slot 0's lock, reading its bits: its takeover made its second
     * lock call, which take_slot() (engine/cluster/mdc.c) makes once the
     * first has grabbed the slot lock */
    WAIT_FOR(st_int(b, "counters.lock_ops") >= ops0 + 2, 10000);
    a = start_node(&t, 0);
    assert_int_equal(st_int(a, "cluster.slot"), 0);
    assert_int_equal(st_int(b, "cluster.recovered_slots"), 1);
    clr_io_fault_delay(clr_array_member_io(b, t.path[0]), 0);
    clr_io_fault_delay(clr_array_member_io(b, t.path[1]), 0);
    /* what a holds in memory is on disk again */
    assert_true(st_int(a, "bitmap.dirty_chunks") > 0);
    assert_true(slot_has_bits(t.path[0], 0));
    assert_true(slot_has_bits(t.path[1], 0));
    wait_idle(a);
    wait_idle(b);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    rmfiles(&t);
}

/* ---- refusals: a bad lock backend, and plain local ---- */

static void test_refusals(void **s)
{
    struct clr_array *a = NULL;
    struct clr_err e = { "" };
    struct clr_array_config c;
    struct tarr t;

    (void)s;
    make_array(&t, 10, CLR_RAID10_LAYOUT(1, 2, 0), 2, 2, 16ull << 20, 512, true);
    c = cfg_for(&t, 0, "local");
    c.lock = "bogus";
    assert_int_equal(clr_array_assemble(&c, &a, &e), -EINVAL);
    /* plain local: single node, slot 0, no cluster traffic */
    c.lock = "local";
    c.flags = 0;
    assert_int_equal(clr_array_assemble(&c, &a, &e), 0);
    assert_int_equal(clr_array_run(a, &e), 0);
    assert_int_equal(st_int(a, "cluster.slot"), 0);
    assert_int_equal(st_int(a, "cluster.members"), 1);
    assert_int_equal(st_int(a, "cluster.recovered_slots"), 0);
    assert_int_equal(st_int(a, "counters.lock_ops"), 0);
    clr_array_free(a);
    rmfiles(&t);

    /* more nodes than the bitmap has slots */
    make_array(&t, 1, 0, 2, 1, 16ull << 20, 512, true);
    {
        struct clr_array *x = start_node(&t, 0), *y = NULL;

        c = cfg_for(&t, 1, "local");
        assert_int_equal(clr_array_assemble(&c, &y, &e), 0);
        assert_int_not_equal(clr_array_run(y, &e), 0);
        assert_non_null(strstr(e.msg, "created for 1 nodes"));
        clr_array_free(y);
        clr_array_free(x);
    }
    rmfiles(&t);
}

/* ---- clustered RAID5/6: stripe-zone locks ---- */

struct zw {
    struct clr_array *a;
    uint64_t base;  /* first byte of the stripe(s) written */
    unsigned which; /* 0/1: the first or second chunk of the stripe */
    unsigned n;
    uint32_t seed;
    uint8_t last[32]; /* last byte written per block (two 64 KiB chunks) */
    int rc;
};

/* Random 4 KiB writes into one 64 KiB chunk of a stripe, the other
 * writer into the next chunk: the same parity rows, so each write's
 * read-modify-write of parity meets the other node's. */
static void *zw_main(void *arg)
{
    struct zw *w = arg;
    uint8_t *b = aligned_alloc(4096, 4096);

    for (unsigned i = 0; i < w->n && w->rc == 0; i++) {
        unsigned blk = rand_r(&w->seed) % 16 + 16 * w->which;
        uint8_t v = (uint8_t)(1 + rand_r(&w->seed) % 250);

        memset(b, v, 4096);
        w->rc = clr_array_pwrite(w->a, b, 4096, w->base + (uint64_t)blk * 4096, 0);
        if (w->rc == 0)
            w->last[blk] = v;
    }
    free(b);
    return NULL;
}

/* Three nodes on one RAID@level: disjoint writers stay quiet once their
 * zones are granted; two nodes writing the same stripes at once keep
 * parity right (without zone locks their read-modify-writes race and
 * `check` finds mismatches); every node reads what was written. */
static void zones_shared(int level, unsigned nd)
{
    struct clr_array *a[MAXN];
    uint8_t *buf = aligned_alloc(4096, 65536), *rd = aligned_alloc(4096, 65536);
    uint64_t size, zone_bytes, ops0[MAXN];
    unsigned seed = (unsigned)rand(); /* from the run's seed (printed) */
    struct tarr t;

    make_array(&t, level, 2, nd, 3, 32ull << 20, 512, true);
    for (unsigned i = 0; i < MAXN; i++)
        a[i] = start_node(&t, i);
    for (unsigned i = 0; i < MAXN; i++) {
        WAIT_FOR(st_int(a[i], "cluster.members") == MAXN, 5000);
        wait_idle(a[i]);
    }
    size = clr_array_size(a[0]);
    zone_bytes =
        (uint64_t)st_int(a[0], "cluster.zones.stripes_per_zone") * 64 * 1024 * (nd - (unsigned)(level - 4));
    assert_true(zone_bytes >= 1 << 20 && 4 * zone_bytes <= size);

    /* disjoint: node i writes in zone i only; after the first grant of
     * each, 300 more writes each take no lock operation */
    for (unsigned i = 0; i < MAXN; i++) {
        memset(buf, 0x10 + (int)i, 65536);
        assert_int_equal(clr_array_pwrite(a[i], buf, 65536, i * zone_bytes, 0), 0);
        ops0[i] = (uint64_t)st_int(a[i], "counters.lock_ops");
        assert_true(st_int(a[i], "cluster.zones.held_ex") >= 1);
    }
    for (unsigned r = 0; r < 300; r++)
        for (unsigned i = 0; i < MAXN; i++) {
            uint64_t off = i * zone_bytes + ((uint64_t)rand() % (zone_bytes / 4096 - 16)) * 4096;

            memset(buf, (int)(r + i), 4096);
            assert_int_equal(clr_array_pwrite(a[i], buf, 4096, off, 0), 0);
        }
    for (unsigned i = 0; i < MAXN; i++) {
        printf("  node %u: lock ops %" PRIu64 " -> %" PRId64 " over 300 disjoint writes\n", i, ops0[i],
               st_int(a[i], "counters.lock_ops"));
        assert_int_equal((uint64_t)st_int(a[i], "counters.lock_ops"), ops0[i]);
    }

    /* shared: nodes 0 and 1 write the same stripes, one after the other;
     * node 2 reads every write back at once (a fault-free read, no lock) */
    uint64_t base = 3 * zone_bytes;

    for (unsigned r = 0; r < 40; r++) {
        unsigned n = r % 2;
        uint64_t off = base + (uint64_t)(r % 8) * 4096 * 17;

        memset(buf, (int)(0x80 + r), 4096);
        assert_int_equal(clr_array_pwrite(a[n], buf, 4096, off, 0), 0);
        assert_int_equal(clr_array_pread(a[2], rd, 4096, off), 0);
        assert_memory_equal(buf, rd, 4096);
    }
    assert_true(st_int(a[0], "cluster.zones.blocking_callbacks") > 0);
    assert_true(st_int(a[1], "cluster.zones.releases") > 0);

    /* at once: both write random blocks of the same two stripes */
    {
        struct zw w[2] = { { .a = a[0], .base = base, .which = 0, .n = 150, .seed = seed },
                           { .a = a[1], .base = base, .which = 1, .n = 150, .seed = seed + 1 } };
        pthread_t th[2];

        /* known start: zero the 32 blocks */
        memset(buf, 0, 4096);
        for (unsigned blk = 0; blk < 32; blk++)
            assert_int_equal(clr_array_pwrite(a[2], buf, 4096, base + (uint64_t)blk * 4096, 0), 0);
        /* completions 2 ms late on every member: each write's read and
         * write phases last long enough for the other node's to overlap */
        for (unsigned i = 0; i < 2; i++)
            for (unsigned d = 0; d < nd; d++)
                clr_io_fault_delay(clr_array_member_io(a[i], t.path[d]), 2);
        for (unsigned i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&th[i], NULL, zw_main, &w[i]), 0);
        for (unsigned i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        for (unsigned i = 0; i < 2; i++)
            for (unsigned d = 0; d < nd; d++)
                clr_io_fault_delay(clr_array_member_io(a[i], t.path[d]), 0);
        assert_int_equal(w[0].rc, 0);
        assert_int_equal(w[1].rc, 0);
        for (unsigned blk = 0; blk < 32; blk++) {
            uint8_t want = w[blk / 16].last[blk];

            for (unsigned k = 0; k < MAXN; k++) {
                assert_int_equal(clr_array_pread(a[k], rd, 4096, base + (uint64_t)blk * 4096), 0);
                if (rd[0] != want || rd[4095] != want)
                    fail_msg("node %u block %u reads %u, last written %u", k, blk, rd[0], want);
            }
        }
        printf("  shared stripes: 2 x 150 concurrent writes; node 0: %" PRId64 " grants, %" PRId64
               " blocking callbacks, longest wait %" PRId64 " ms, mean grant %" PRId64 " ms\n",
               st_int(a[0], "cluster.zones.grants"), st_int(a[0], "cluster.zones.blocking_callbacks"),
               st_int(a[0], "cluster.zones.wait_ms_max"), st_int(a[0], "cluster.zones.grant_ms_mean"));
    }
    /* parity right everywhere: a check (PR on every zone) from node 2 */
    assert_int_equal(check_mismatches(a[2]), 0);
    for (unsigned i = 0; i < MAXN; i++)
        assert_int_equal(clr_array_stop(a[i]), 0);
    for (unsigned i = 0; i < MAXN; i++)
        clr_array_free(a[i]);
    free(buf);
    free(rd);
    rmfiles(&t);
}

static void test_zones_raid5(void **s)
{
    (void)s;
    zones_shared(5, 4);
}

static void test_zones_raid6(void **s)
{
    (void)s;
    zones_shared(6, 5);
}

/* A node dies with writes in its zones: the survivor gets them with a
 * suspect LVB, takes the dead node's bitmap over and resyncs; parity is
 * right and the data the dead node acknowledged reads back. */
static void test_zones_takeover(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20), *rd = aligned_alloc(4096, 1 << 20);
    struct tarr t;

    (void)s;
    make_array(&t, 5, 2, 4, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    write_pattern(a, buf, 0x40, 3);
    assert_true(st_int(a, "bitmap.dirty_chunks") > 0);
    assert_true(st_int(a, "cluster.zones.held_ex") > 0);
    /* parity torn by the crash: stripe 0's parity (left-symmetric: the
     * last member) half written; only the takeover's resync repairs it */
    memset(rd, 0xee, 4096);
    pwrite_all(t.path[3], rd, 4096, t.data_offset * 512);
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    WAIT_FOR(st_int(b, "cluster.recovered_slots") == 1, 10000);
    wait_idle(b);
    assert_true(st_int(b, "last_resync.bytes") > 0);
    /* b writes where a held EX: granted (suspect LVB) once recovered */
    memset(buf, 0x77, 65536);
    assert_int_equal(clr_array_pwrite(b, buf, 65536, 1 << 20, 0), 0);
    assert_true(st_int(b, "cluster.zones.suspect_grants") >= 1);
    for (unsigned i = 0; i < 8; i++) {
        assert_int_equal(clr_array_pread(b, rd, 65536, (uint64_t)i * 3 << 20), 0);
        assert_int_equal(rd[0], 0x40 + i);
        assert_int_equal(rd[65535], 0x40 + i);
    }
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(b);
    free(buf);
    free(rd);
    rmfiles(&t);
}

/* The write hole, closed by the partial-parity log.  Stripe 0 holds
 * 0x11 0x22 0x33 in its three data chunks; member 1 fails (RAID6: 1 and
 * 2), so chunk 1 lives only in the parity.  Node 0 writes 4 KiB of chunk
 * 0; then its parity rows are torn (garbage on disk, as if the node died
 * between the data and the parity writes), and node 0 dies.  A resync
 * cannot repair that stripe (chunk 1 would be rebuilt from the torn
 * parity); node 1's replay of node 0's log makes parity := partial parity
 * + the new chunk 0, and chunk 1 reads back. */
static void plog_write_hole(int level, unsigned nd)
{
    /* left-symmetric, stripe 0: RAID5 P on 3, data on 0 1 2; RAID6 P on
     * 4, Q on 0, data on 1 2 3 (md's raid6 layout 2) */
    const unsigned d5[3] = { 0, 1, 2 }, d6[3] = { 1, 2, 3 };
    const unsigned *dd = level == 6 ? d6 : d5;
    int pd = level == 6 ? 4 : 3, qd = level == 6 ? 0 : -1;
    struct clr_array *a, *b;
    size_t chunk = 64 << 10;
    uint8_t *buf = aligned_alloc(4096, 3 * chunk), *rd = aligned_alloc(4096, chunk);
    struct clr_err e = { "" };
    struct tarr t;

    make_array(&t, level, 2, nd, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    memset(buf, 0x11, chunk);
    memset(buf + chunk, 0x22, chunk);
    memset(buf + 2 * chunk, 0x33, chunk);
    assert_int_equal(clr_array_pwrite(a, buf, 3 * chunk, 0, 0), 0);
    /* chunk 1 (RAID6: chunks 1 and 2) now only in the parity */
    for (unsigned k = 1; k <= (level == 6 ? 2u : 1u); k++) {
        if (clr_array_fail_device(b, t.path[dd[k]], &e) != 0)
            fail_msg("fail: %s", e.msg);
        WAIT_FOR(dev_is(a, t.path[dd[k]], "faulty"), 5000);
    }
    memset(buf, 0x55, 4096);
    assert_int_equal(clr_array_pwrite(a, buf, 4096, 0, 0), 0);
    assert_true(st_int(a, "cluster.zones.parity_log.entries_logged") >= 1);
    /* the data landed, the parity rows did not: garbage */
    memset(rd, 0xee, 4096);
    pwrite_all(t.path[pd], rd, 4096, t.data_offset * 512);
    if (qd >= 0)
        pwrite_all(t.path[qd], rd, 4096, t.data_offset * 512);
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    WAIT_FOR(st_int(b, "cluster.recovered_slots") == 1, 10000);
    wait_idle(b);
    assert_true(st_int(b, "cluster.zones.parity_log.replayed_entries") >= 1);
    assert_int_equal(clr_array_pread(b, rd, 4096, 0), 0);
    assert_int_equal(rd[0], 0x55);
    assert_int_equal(rd[4095], 0x55);
    for (unsigned k = 1; k < 3; k++) {
        assert_int_equal(clr_array_pread(b, rd, chunk, k * chunk), 0);
        for (size_t i = 0; i < chunk; i++)
            if (rd[i] != 0x11 * (k + 1))
                fail_msg("chunk %u byte %zu reads 0x%02x, not 0x%02x: the write hole", k, i, rd[i],
                         0x11 * (k + 1));
    }
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(b);
    free(buf);
    free(rd);
    rmfiles(&t);
}

static void test_plog_write_hole_raid5(void **s)
{
    (void)s;
    plog_write_hole(5, 4);
}

static void test_plog_write_hole_raid6(void **s)
{
    (void)s;
    plog_write_hole(6, 5);
}

/* RAID5 on 4 members, stripe 0 (left-symmetric: data on 0 1 2, P on 3)
 * holding 0x11 0x22 0x33, written by @a. */
#define PL_CHUNK (64u << 10)

static void plog_fill_stripe0(struct clr_array *a, uint8_t *buf)
{
    memset(buf, 0x11, PL_CHUNK);
    memset(buf + PL_CHUNK, 0x22, PL_CHUNK);
    memset(buf + 2 * PL_CHUNK, 0x33, PL_CHUNK);
    assert_int_equal(clr_array_pwrite(a, buf, 3 * PL_CHUNK, 0, 0), 0);
}

/* Two nodes on a fresh RAID5 of 4 members, stripe 0 filled by node 0. */
static void plog_two_nodes(struct tarr *t, struct clr_array **a, struct clr_array **b, uint8_t *buf)
{
    make_array(t, 5, 2, 4, 2, 32ull << 20, 512, true);
    *a = start_node(t, 0);
    *b = start_node(t, 1);
    WAIT_FOR(st_int(*b, "cluster.members") == 2, 5000);
    plog_fill_stripe0(*a, buf);
}

/* 4 KiB of @v at the start of chunk @k of stripe 0, written by @a. */
static void plog_put(struct clr_array *a, uint8_t *buf, unsigned k, int v)
{
    memset(buf, v, 4096);
    assert_int_equal(clr_array_pwrite(a, buf, 4096, (uint64_t)k * PL_CHUNK, 0), 0);
}

/* Node @node started with every member but @skip (failed). */
static struct clr_array *plog_start_without(struct tarr *t, unsigned node, unsigned skip)
{
    struct clr_array_config c = cfg_for(t, node, "local");
    const char *devs[8];
    struct clr_array *a = NULL;
    struct clr_err e = { "" };
    unsigned n = 0;

    for (unsigned i = 0; i < t->n; i++)
        if (i != skip)
            devs[n++] = t->devs[i];
    c.devices = devs;
    c.ndevices = n;
    if (clr_array_assemble(&c, &a, &e) != 0 || clr_array_run(a, &e) != 0)
        fail_msg("start: %s", e.msg);
    return a;
}

/* Chunk @k of stripe 0 reads @want in every byte, from @a. */
static void plog_expect(struct clr_array *a, uint8_t *rd, unsigned k, unsigned len, uint8_t want)
{
    assert_int_equal(clr_array_pread(a, rd, len, (uint64_t)k * PL_CHUNK), 0);
    for (unsigned i = 0; i < len; i++)
        if (rd[i] != want)
            fail_msg("chunk %u byte %u reads 0x%02x, not 0x%02x", k, i, rd[i], want);
}

/* Retirement.  Node 0 logs a write to chunk 0 of stripe 0; node 1 then
 * writes chunk 1 of the same stripe, so node 0 gives the zone up, and
 * its log must stop naming the stripe first.  Member 2 has failed: if
 * node 0's log still named the stripe when it dies, the replay would
 * rebuild parity from chunk 1's old value (in the partial parity) and
 * chunk 2, reconstructed from that parity, would read wrong. */
static void test_plog_retire_on_handoff(void **s)
{
    int64_t retired;
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 3 * PL_CHUNK), *rd = aligned_alloc(4096, PL_CHUNK);
    struct clr_err e = { "" };
    struct tarr t;

    (void)s;
    plog_two_nodes(&t, &a, &b, buf);
    if (clr_array_fail_device(b, t.path[2], &e) != 0)
        fail_msg("fail: %s", e.msg);
    WAIT_FOR(dev_is(a, t.path[2], "faulty"), 5000);
    plog_put(a, buf, 0, 0x55);
    plog_put(b, buf, 1, 0x66);
    assert_true(st_int(a, "cluster.zones.releases") >= 1);
    retired = st_int(a, "cluster.zones.retire_rounds");
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    WAIT_FOR(st_int(b, "cluster.recovered_slots") == 1, 10000);
    wait_idle(b);
    plog_expect(b, rd, 0, 4096, 0x55);
    plog_expect(b, rd, 1, 4096, 0x66);
    plog_expect(b, rd, 2, PL_CHUNK, 0x33);
    assert_int_equal(st_int(b, "cluster.zones.parity_log.replayed_entries"), 0);
    assert_true(retired >= 1);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(b);
    free(buf);
    free(rd);
    rmfiles(&t);
}

/* A clean stop empties the log: node 0 logs a write to stripe 0 and
 * stops; node 1 writes another chunk of the stripe with member 2
 * failed; node 0 starts again and replays its own log at join, which
 * must be empty (a stale entry would rewrite parity from chunk 1's old
 * value).  Then node 0 crashes alone with a torn parity: restarted, it
 * replays its own log and the chunk on the failed member reads back. */
static void test_plog_own_log(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 3 * PL_CHUNK), *rd = aligned_alloc(4096, PL_CHUNK);
    struct clr_err e = { "" };
    struct tarr t;

    (void)s;
    plog_two_nodes(&t, &a, &b, buf);
    plog_put(a, buf, 0, 0x55);
    assert_int_equal(clr_array_stop(a), 0);
    clr_array_free(a);
    if (clr_array_fail_device(b, t.path[2], &e) != 0)
        fail_msg("fail: %s", e.msg);
    plog_put(b, buf, 1, 0x66);
    a = plog_start_without(&t, 0, 2);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    plog_expect(a, rd, 2, PL_CHUNK, 0x33);
    plog_expect(b, rd, 2, PL_CHUNK, 0x33);
    assert_int_equal(st_int(a, "cluster.zones.parity_log.replayed_entries"), 0);

    /* alone: node 1 stops, node 0 writes, its parity tears, it dies */
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(b);
    wait_idle(a); /* b left dirty chunks: a took them over */
    plog_put(a, buf, 0, 0x77);
    memset(rd, 0xee, 4096);
    pwrite_all(t.path[3], rd, 4096, t.data_offset * 512);
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    a = plog_start_without(&t, 0, 2);
    assert_true(st_int(a, "cluster.zones.parity_log.replayed_entries") >= 1);
    wait_idle(a);
    plog_expect(a, rd, 0, 4096, 0x77);
    plog_expect(a, rd, 1, 4096, 0x66);
    plog_expect(a, rd, 2, PL_CHUNK, 0x33);
    assert_int_equal(clr_array_stop(a), 0);
    clr_array_free(a);
    free(buf);
    free(rd);
    rmfiles(&t);
}

/* A member re-added after a failure must not bring its old log headers
 * back.  Node 0 logs a write to chunk 0 of stripe 0 on member 3 (P); the
 * member fails and node 0 writes chunk 1 (no log: no parity member); the
 * member is re-added and rebuilt.  Then member 2 fails and node 0 dies:
 * a replay of the old header would rebuild parity from chunk 1's old
 * value, and chunk 2 would read 0x77.  The rebuild wiped the member's
 * logs first. */
static void test_plog_readd_forgets_old_log(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 3 * PL_CHUNK), *rd = aligned_alloc(4096, PL_CHUNK);
    struct clr_err e = { "" };
    struct tarr t;

    (void)s;
    plog_two_nodes(&t, &a, &b, buf);
    plog_put(a, buf, 0, 0x55);
    if (clr_array_fail_device(b, t.path[3], &e) != 0 || clr_array_remove_device(b, t.path[3], &e) != 0)
        fail_msg("fail/remove: %s", e.msg);
    WAIT_FOR(!dev_is(a, t.path[3], "in_sync"), 5000);
    plog_put(a, buf, 1, 0x66);
    if (clr_array_readd_device(a, t.path[3], &e) != 0)
        fail_msg("re-add: %s", e.msg);
    WAIT_FOR(dev_is(a, t.path[3], "in_sync"), 20000);
    WAIT_FOR(dev_is(b, t.path[3], "in_sync"), 10000);
    wait_idle(a);
    wait_idle(b);
    if (clr_array_fail_device(b, t.path[2], &e) != 0)
        fail_msg("fail: %s", e.msg);
    WAIT_FOR(dev_is(a, t.path[2], "faulty"), 5000);
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    WAIT_FOR(st_int(b, "cluster.recovered_slots") == 1, 10000);
    wait_idle(b);
    plog_expect(b, rd, 0, 4096, 0x55);
    plog_expect(b, rd, 1, 4096, 0x66);
    plog_expect(b, rd, 2, PL_CHUNK, 0x33);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(b);
    free(buf);
    free(rd);
    rmfiles(&t);
}

/* ---- helpers for the rebuild-ownership tests ---- */

static const char *st_str(struct clr_array *a, const char *path, char *buf, size_t len)
{
    json_object *o = clr_array_status_json(a), *x = jget(o, path);

    snprintf(buf, len, "%s", x ? json_object_get_string(x) : "");
    json_object_put(o);
    return buf;
}

static bool action_is(struct clr_array *a, const char *act)
{
    char b[32];

    return strcmp(st_str(a, "sync_action", b, sizeof b), act) == 0;
}

/* A node given the first member and @extra (a spare that replaced the
 * second one). */
static struct clr_array *start_node_with(struct tarr *t, unsigned node, const char *extra)
{
    struct clr_array_config c = cfg_for(t, node, "local");
    const char *devs[2] = { t->devs[0], extra };
    struct clr_array *a = NULL;
    struct clr_err e = { "" };

    c.devices = devs;
    c.ndevices = 2;
    if (clr_array_assemble(&c, &a, &e) != 0)
        fail_msg("assemble: %s", e.msg);
    if (clr_array_run(a, &e) != 0)
        fail_msg("run: %s", e.msg);
    return a;
}

static void mkspare(struct tarr *t, char *spare, size_t len)
{
    int fd;

    snprintf(spare, len, "%s/d5", t->dir);
    fd = open(spare, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)t->dev_bytes), 0);
    close(fd);
}

/* On @a: fail and remove member 1, add a new spare (its path in @spare)
 * and rebuild it at most @speed_max KiB/s. */
static void replace_with_spare(struct tarr *t, struct clr_array *a, char *spare, size_t len,
                               uint32_t speed_max)
{
    struct clr_err e = { "" };

    if (clr_array_fail_device(a, t->path[1], &e) != 0 || clr_array_remove_device(a, t->path[1], &e) != 0)
        fail_msg("fail/remove: %s", e.msg);
    mkspare(t, spare, len);
    clr_array_set_sync_speed(a, 1000, speed_max);
    if (clr_array_add_device(a, spare, &e) != 0)
        fail_msg("add: %s", e.msg);
}

/* ---- a node starting during another node's re-add does not declare the
 * member in sync: only the re-adder (which gathered every slot's bits and
 * holds `resync`) does ---- */

static void test_start_during_readd(void **s)
{
    struct clr_array *a, *b, *c;
    uint8_t *buf = aligned_alloc(4096, 1 << 20), *rd = aligned_alloc(4096, 1 << 20);
    struct clr_err e = { "" };
    struct tarr t;
    bool saw = false;

    (void)s;
    make_array(&t, 1, 0, 2, 3, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    if (clr_array_fail_device(a, t.path[1], &e) != 0)
        fail_msg("fail: %s", e.msg);
    /* lots written while it is out: the re-add's pass takes seconds */
    for (unsigned i = 0; i < 24; i++) {
        memset(buf, 0x40 + (int)i, 1 << 20);
        assert_int_equal(clr_array_pwrite(i & 1 ? b : a, buf, 1 << 20, (uint64_t)i << 20, 0), 0);
    }
    clr_array_set_sync_speed(a, 1000, 3000);
    if (clr_array_readd_device(a, t.path[1], &e) != 0)
        fail_msg("re-add: %s", e.msg);
    /* on disk it is rebuilding now: c starts and must not call it in sync */
    c = start_node(&t, 2);
    WAIT_FOR(st_int(c, "cluster.members") == 3, 5000);
    for (int i = 0; i < 100 && !dev_is(a, t.path[1], "in_sync"); i++) {
        saw = true;
        assert_false(dev_is(c, t.path[1], "in_sync"));
        assert_false(dev_is(b, t.path[1], "in_sync"));
        /* c reads what was written while d1 was out */
        memset(buf, 0x40 + (i % 24), 1 << 20);
        assert_int_equal(clr_array_pread(c, rd, 1 << 20, (uint64_t)(i % 24) << 20), 0);
        assert_memory_equal(buf, rd, 1 << 20);
        usleep(20000);
    }
    assert_true(saw);
    clr_array_set_sync_speed(a, 1000000, 10000000);
    wait_idle(a);
    WAIT_FOR(dev_is(a, t.path[1], "in_sync"), 30000);
    WAIT_FOR(dev_is(b, t.path[1], "in_sync"), 10000);
    WAIT_FOR(dev_is(c, t.path[1], "in_sync"), 10000);
    assert_int_equal(check_mismatches(c), 0);
    assert_int_equal(clr_array_stop(c), 0);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_copies_equal(&t, clr_array_size(a));
    clr_array_free(a);
    clr_array_free(b);
    clr_array_free(c);
    free(buf);
    free(rd);
    rmfiles(&t);
}

/* ---- a node that assembled while a member was faulty, and runs after
 * another node re-added it, must not run without it: refused (-ESTALE),
 * and a second assembly takes it (doc/architecture.md §4.3).  A node
 * given no path for an in-sync member is refused the same way. ---- */
static void test_start_missing_member(void **s)
{
    struct clr_array *a, *b = NULL;
    struct clr_err e = { "" };
    uint8_t *buf = aligned_alloc(4096, 1 << 20), *rd = aligned_alloc(4096, 1 << 20);
    struct clr_array_config c;
    struct tarr t;
    char st[32];

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    /* without the path of an in-sync member */
    c = cfg_for(&t, 1, "local");
    c.ndevices = 1;
    assert_int_equal(clr_array_assemble(&c, &b, &e), 0);
    assert_int_equal(clr_array_run(b, &e), -ESTALE);
    assert_non_null(strstr(e.msg, "does not run it"));
    clr_array_free(b);
    b = NULL;
    /* assembled while d1 is faulty, run after a re-add elsewhere */
    if (clr_array_fail_device(a, t.path[1], &e) != 0)
        fail_msg("fail: %s", e.msg);
    memset(buf, 0x5a, 1 << 20);
    assert_int_equal(clr_array_pwrite(a, buf, 1 << 20, 3 << 20, 0), 0);
    c = cfg_for(&t, 1, "local");
    c.flags |= CLR_ARRAY_SKIP_STALE;
    e.msg[0] = 0;
    assert_int_equal(clr_array_assemble(&c, &b, &e), 0);
    if (clr_array_readd_device(a, t.path[1], &e) != 0)
        fail_msg("re-add: %s", e.msg);
    e.msg[0] = 0;
    assert_int_equal(clr_array_run(b, &e), -ESTALE);
    assert_non_null(strstr(e.msg, "device 1 holds role 1"));
    clr_array_free(b);
    b = NULL;
    assert_int_equal(clr_array_assemble(&c, &b, &e), 0);
    if (clr_array_run(b, &e) != 0)
        fail_msg("run again: %s", e.msg);
    assert_non_null(find_dev_state(b, t.path[1], st, sizeof st));
    /* b writes it from now on: once a says in sync, so does b */
    memset(buf, 0x6b, 1 << 20);
    assert_int_equal(clr_array_pwrite(b, buf, 1 << 20, 4 << 20, 0), 0);
    wait_idle(a);
    WAIT_FOR(dev_is(a, t.path[1], "in_sync"), 30000);
    WAIT_FOR(dev_is(b, t.path[1], "in_sync"), 10000);
    assert_int_equal(clr_array_pread(b, rd, 1 << 20, 4 << 20), 0);
    assert_memory_equal(buf, rd, 1 << 20);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_int_equal(clr_array_stop(a), 0);
    assert_copies_equal(&t, clr_array_size(a));
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    free(rd);
    rmfiles(&t);
}

/* ---- a reload outside `metadata` in the middle of a re-add (a takeover
 * after a death) does not take the member's old FAULTY role ---- */

struct readd_arg {
    struct clr_array *a;
    const char *path;
    atomic_int done;
    int rc;
    struct clr_err e;
};

static void *readd_main(void *arg)
{
    struct readd_arg *r = arg;

    r->rc = clr_array_readd_device(r->a, r->path, &r->e);
    atomic_store(&r->done, 1);
    return NULL;
}

static void test_takeover_during_readd(void **s)
{
    struct clr_array *a, *b, *c;
    struct clr_err e = { "" };
    uint8_t *buf = aligned_alloc(4096, 1 << 20);
    struct readd_arg ra = { 0 };
    struct tarr t;
    pthread_t th;

    (void)s;
    make_array(&t, 1, 0, 2, 3, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    c = start_node(&t, 2);
    WAIT_FOR(st_int(b, "cluster.members") == 3, 5000);
    if (clr_array_fail_device(a, t.path[1], &e) != 0)
        fail_msg("fail: %s", e.msg);
    memset(buf, 0x17, 1 << 20);
    assert_int_equal(clr_array_pwrite(b, buf, 1 << 20, 5 << 20, 0), 0);
    memset(buf, 0x18, 1 << 20);
    assert_int_equal(clr_array_pwrite(c, buf, 1 << 20, 6 << 20, 0), 0);
    /* a gathers the bitmaps slowly: the window between RE_ADD and its
     * superblock write is wide */
    clr_io_fault_delay(clr_array_member_io(a, t.path[0]), 400);
    ra.a = a;
    ra.path = t.path[1];
    pthread_create(&th, NULL, readd_main, &ra);
    WAIT_FOR(dev_is(b, t.path[1], "rebuilding"), 10000);
    assert_int_equal(disk_role(t.path[0], 1), CLR_MD_ROLE_FAULTY);
    /* c dies now: b takes its slot over and re-reads the superblock */
    assert_int_equal(clr_array_crash(c), 0);
    WAIT_FOR(st_int(b, "cluster.recovered_slots") == 1 || atomic_load(&ra.done), 20000);
    assert_false(dev_is(b, t.path[1], "faulty"));
    /* b keeps writing it */
    memset(buf, 0x19, 1 << 20);
    assert_int_equal(clr_array_pwrite(b, buf, 1 << 20, 7 << 20, 0), 0);
    clr_io_fault_delay(clr_array_member_io(a, t.path[0]), 0);
    pthread_join(th, NULL);
    if (ra.rc != 0)
        fail_msg("re-add: %s", ra.e.msg);
    wait_idle(a);
    WAIT_FOR(dev_is(a, t.path[1], "in_sync"), 20000);
    WAIT_FOR(dev_is(b, t.path[1], "in_sync"), 10000);
    memset(buf, 0x1a, 1 << 20);
    assert_int_equal(clr_array_pwrite(b, buf, 1 << 20, 8 << 20, 0), 0);
    wait_idle(a);
    wait_idle(b);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_copies_equal(&t, clr_array_size(a));
    clr_array_free(a);
    clr_array_free(b);
    clr_array_free(c);
    free(buf);
    rmfiles(&t);
}

/* ---- a spare whose own superblock is still the pre-activation one is
 * never taken as recovered ---- */

static void test_spare_preactivation_sb(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20), raw[CLR_MD_SB_AREA_BYTES];
    struct clr_err e = { "" };
    struct clr_md_sb sb;
    char spare[400];
    uint64_t size;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    size = clr_array_size(a);
    write_pattern(b, buf, 0x50, 3);
    replace_with_spare(&t, a, spare, sizeof spare, 3000);
    WAIT_FOR(dev_is(b, spare, "rebuilding"), 5000);
    /* b is slow from now on: the spare's superblock is put back to what it
     * was before its activation (as a reload racing the activating write
     * would see it) before b re-reads anything */
    clr_io_fault_delay(clr_array_member_io(b, t.path[0]), 150);
    clr_io_fault_delay(clr_array_member_io(b, spare), 150);
    assert_int_equal(clr_array_crash(a), 0);
    pread_all(spare, raw, sizeof raw, 4096);
    assert_int_equal(clr_md_sb_decode(raw, sizeof raw, 0, &sb, &e), 0);
    sb.feature_map &= ~(CLR_MD_FEAT_RECOVERY_OFFSET | CLR_MD_FEAT_RECOVERY_BITMAP);
    sb.recovery_offset = 0;
    sb.dev_roles[sb.dev_number] = CLR_MD_ROLE_SPARE;
    assert_int_equal(clr_md_sb_encode(&sb, raw, sizeof raw), 0);
    pwrite_all(spare, raw, sizeof raw, 4096);
    clr_io_fault_delay(clr_array_member_io(b, t.path[0]), 0);
    clr_io_fault_delay(clr_array_member_io(b, spare), 0);
    WAIT_FOR(dev_is(b, spare, "in_sync"), 60000);
    wait_idle(b);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_files_equal(t.path[0], spare, t.data_offset, size);
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    rmfiles(&t);
}

/* ---- a write-behind leg that fails is not acked before every node
 * processed the failure that made it write-behind ---- */

static void test_write_behind_leg_fails(void **s)
{
    struct clr_array *a, *b, *c;
    struct bg_write x = { 0 };
    uint8_t *bx = aligned_alloc(4096, 65536), *by = aligned_alloc(4096, 65536);
    pthread_t tx;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 3, 32ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    c = start_node(&t, 2);
    WAIT_FOR(st_int(b, "cluster.members") == 3, 5000);
    memset(bx, 0x11, 65536);
    memset(by, 0x22, 65536);
    /* warm the bitmaps */
    assert_int_equal(clr_array_pwrite(a, bx, 65536, 1 << 20, 0), 0);
    assert_int_equal(clr_array_pwrite(c, by, 65536, 3 << 20, 0), 0);
    /* b processes METADATA_UPDATED slowly; a's and c's paths to d1 break */
    clr_io_fault_delay(clr_array_member_io(b, t.path[0]), 1000);
    clr_io_fault_delay(clr_array_member_io(b, t.path[1]), 1000);
    assert_int_equal(
        clr_io_fault_fail_range(clr_array_member_io(a, t.path[1]), CLR_IO_FAULT_WRITE, 0, 0, EIO), 0);
    assert_int_equal(
        clr_io_fault_fail_range(clr_array_member_io(c, t.path[1]), CLR_IO_FAULT_WRITE, 0, 0, EIO), 0);
    x = (struct bg_write){ .a = a, .buf = bx, .off = 1 << 20 };
    pthread_create(&tx, NULL, bg_write_main, &x);
    /* c processed a's update: d1 is write-behind there */
    WAIT_FOR(dev_is(c, t.path[1], "faulty"), 10000);
    assert_true(dev_is(b, t.path[1], "in_sync"));
    /* its write-behind leg fails: acked only once b stopped reading d1 */
    assert_int_equal(clr_array_pwrite(c, by, 65536, 3 << 20, 0), 0);
    assert_true(dev_is(b, t.path[1], "faulty"));
    pthread_join(tx, NULL);
    assert_int_equal(x.rc, 0);
    clr_io_fault_delay(clr_array_member_io(b, t.path[0]), 0);
    clr_io_fault_delay(clr_array_member_io(b, t.path[1]), 0);
    /* c does not write d1 any more */
    {
        json_object *o = clr_array_status_json(c), *d = json_object_array_get_idx(jget(o, "devices"), 1);

        assert_null(jget(d, "write_behind"));
        json_object_put(o);
    }
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_int_equal(clr_array_stop(c), 0);
    clr_array_free(a);
    clr_array_free(b);
    clr_array_free(c);
    free(bx);
    free(by);
    rmfiles(&t);
}

/* ---- the node rebuilding a spare stops cleanly: a survivor resumes ---- */

static void test_rebuild_resumes_after_clean_stop(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20);
    char spare[400];
    uint64_t size;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 64ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    size = clr_array_size(a);
    write_pattern(b, buf, 0x30, 7);
    replace_with_spare(&t, a, spare, sizeof spare, 4000);
    WAIT_FOR(dev_is(b, spare, "rebuilding"), 5000);
    usleep(700000);
    assert_int_equal(clr_array_stop(a), 0);
    clr_array_free(a);
    WAIT_FOR(dev_is(b, spare, "in_sync"), 60000);
    wait_idle(b);
    assert_int_equal(check_mismatches(b), 0);
    /* the rebuilder comes back: nothing left to do */
    a = start_node_with(&t, 0, spare);
    WAIT_FOR(dev_is(a, spare, "in_sync"), 10000);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_files_equal(t.path[0], spare, t.data_offset, size);
    clr_array_free(a);
    clr_array_free(b);
    free(buf);
    rmfiles(&t);
}

/* ---- a node that does not know who rebuilds a member does not start a
 * second rebuild when some other node dies; alone, it takes it over ---- */

static void test_no_duplicate_rebuild(void **s)
{
    struct clr_array *a, *b, *c;
    uint8_t *buf = aligned_alloc(4096, 1 << 20);
    char spare[400];
    uint64_t size;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 3, 64ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    size = clr_array_size(a);
    write_pattern(b, buf, 0x60, 7);
    replace_with_spare(&t, a, spare, sizeof spare, 6000);
    WAIT_FOR(dev_is(b, spare, "rebuilding"), 5000);
    /* c starts during the rebuild: it does not know a drives it */
    c = start_node_with(&t, 2, spare);
    WAIT_FOR(st_int(c, "cluster.members") == 3, 5000);
    assert_true(dev_is(c, spare, "rebuilding"));
    assert_false(action_is(c, "recover"));
    /* b dies: c must not start a rebuild of its own */
    assert_int_equal(clr_array_crash(b), 0);
    WAIT_FOR(st_int(c, "cluster.recovered_slots") == 1 || st_int(a, "cluster.recovered_slots") == 1, 10000);
    for (int i = 0; i < 100 && !dev_is(a, spare, "in_sync"); i++) {
        assert_false(action_is(c, "recover"));
        usleep(20000);
    }
    clr_array_set_sync_speed(a, 1000000, 10000000);
    wait_idle(a);
    WAIT_FOR(dev_is(a, spare, "in_sync"), 60000);
    WAIT_FOR(dev_is(c, spare, "in_sync"), 10000);
    assert_int_equal(check_mismatches(c), 0);
    assert_int_equal(clr_array_stop(a), 0);
    assert_int_equal(clr_array_stop(c), 0);
    assert_files_equal(t.path[0], spare, t.data_offset, size);
    clr_array_free(a);
    clr_array_free(b);
    clr_array_free(c);
    free(buf);
    rmfiles(&t);
}

/* ---- alone with a member rebuilt elsewhere (its rebuilder unknown): the
 * rebuild is taken over here ---- */

static void test_alone_adopts_rebuild(void **s)
{
    struct clr_array *a, *b;
    uint8_t *buf = aligned_alloc(4096, 1 << 20);
    char spare[400];
    uint64_t size;
    struct tarr t;

    (void)s;
    make_array(&t, 1, 0, 2, 2, 64ull << 20, 512, true);
    a = start_node(&t, 0);
    b = start_node(&t, 1);
    WAIT_FOR(st_int(b, "cluster.members") == 2, 5000);
    size = clr_array_size(a);
    write_pattern(b, buf, 0x70, 7);
    assert_int_equal(clr_array_stop(b), 0);
    clr_array_free(b);
    replace_with_spare(&t, a, spare, sizeof spare, 4000);
    usleep(700000);
    /* every node goes: the member is half rebuilt on disk */
    assert_int_equal(clr_array_crash(a), 0);
    clr_array_free(a);
    b = start_node_with(&t, 1, spare);
    WAIT_FOR(dev_is(b, spare, "in_sync"), 60000);
    wait_idle(b);
    assert_int_equal(check_mismatches(b), 0);
    assert_int_equal(clr_array_stop(b), 0);
    assert_files_equal(t.path[0], spare, t.data_offset, size);
    clr_array_free(b);
    free(buf);
    rmfiles(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_zero_cost_raid1),
        cmocka_unit_test(test_zero_cost_raid10),
        cmocka_unit_test(test_zones_raid5),
        cmocka_unit_test(test_zones_raid6),
        cmocka_unit_test(test_zones_takeover),
        cmocka_unit_test(test_plog_write_hole_raid5),
        cmocka_unit_test(test_plog_write_hole_raid6),
        cmocka_unit_test(test_plog_retire_on_handoff),
        cmocka_unit_test(test_plog_own_log),
        cmocka_unit_test(test_plog_readd_forgets_old_log),
        cmocka_unit_test(test_device_failure),
        cmocka_unit_test(test_takeover),
        cmocka_unit_test(test_lost_node_holds_writes),
        cmocka_unit_test(test_stop_ends_held_writes),
        cmocka_unit_test(test_rejoin_after_crash),
        cmocka_unit_test(test_window_holds_write),
        cmocka_unit_test(test_fail_remove_readd),
        cmocka_unit_test(test_add_spare),
        cmocka_unit_test(test_takeover_partial_bitmap),
        cmocka_unit_test(test_write_behind),
        cmocka_unit_test(test_unannounced_failure_not_acked),
        cmocka_unit_test(test_readd_rollback),
        cmocka_unit_test(test_rebuild_resumes),
        cmocka_unit_test(test_ack_waits_for_announcement),
        cmocka_unit_test(test_policy_hold),
        cmocka_unit_test(test_policy_hold_timeout),
        cmocka_unit_test(test_policy_hold_counts_every_leg),
        cmocka_unit_test(test_policy_rewrite),
        cmocka_unit_test(test_policy_hold_reservation),
        cmocka_unit_test(test_readd_under_load),
        cmocka_unit_test(test_far2_cluster),
        cmocka_unit_test(test_raid5_spare_cluster),
        cmocka_unit_test(test_raid6_spare_cluster),
        cmocka_unit_test(test_offset2_cluster),
        cmocka_unit_test(test_rejoin_during_takeover),
        cmocka_unit_test(test_start_during_readd),
        cmocka_unit_test(test_start_missing_member),
        cmocka_unit_test(test_takeover_during_readd),
        cmocka_unit_test(test_spare_preactivation_sb),
        cmocka_unit_test(test_write_behind_leg_fails),
        cmocka_unit_test(test_rebuild_resumes_after_clean_stop),
        cmocka_unit_test(test_no_duplicate_rebuild),
        cmocka_unit_test(test_alone_adopts_rebuild),
    };

    tl_seed((unsigned)time(NULL));
    if (getenv("CLR_TEST_FILTER"))
        cmocka_set_test_filter(getenv("CLR_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
