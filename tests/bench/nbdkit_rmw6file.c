/* A benchmark baseline, not part of clraid: the least a RAID6 small write
 * served by nbdkit can cost.  Six files: four data, P and Q, 256 KiB
 * chunks, no rotation.  A write is split at chunk boundaries; for each
 * piece it reads the old data, P and Q, updates P and Q with ISA-L (the
 * same arithmetic as engine/raid/parity.c's read-modify-write) and writes
 * data, P and Q, all with pread/pwrite in nbdkit's worker thread.  No
 * stripe lock (concurrent writes to one stripe would race: fine for a
 * cost ceiling, wrong for data), no bitmap, no failure handling.
 * tests/bench/engine.sh runs it as the "rmw6-file" row, the ceiling of
 * the RAID6 read-modify-write target.
 *
 *   nbdkit --unix SOCK ./tests/bench/.libs/nbdkit-rmw6file-plugin.so \
 *          file0=A file1=B file2=C file3=D file4=P file5=Q
 */
#define NBDKIT_API_VERSION 2
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <isa-l/erasure_code.h>
#include <nbdkit-plugin.h>

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
#define NDATA        4
#define NFILES       (NDATA + 2)
#define CHUNK        (256u * 1024)

static char *path[NFILES];
static int fd[NFILES] = { -1, -1, -1, -1, -1, -1 };
static __thread uint8_t *scratch; /* old data, P, Q: CHUNK each */

static int rmw_config(const char *key, const char *value)
{
    int i = -1;

    if (strlen(key) == 5 && !strncmp(key, "file", 4) && key[4] >= '0' && key[4] < '0' + NFILES)
        i = key[4] - '0';
    if (i < 0) {
        nbdkit_error("rmw6file: unknown parameter %s (give file0= to file5=)", key);
        return -1;
    }
    free(path[i]);
    path[i] = nbdkit_realpath(value);
    return path[i] ? 0 : -1;
}

static int rmw_get_ready(void)
{
    for (int i = 0; i < NFILES; i++) {
        if (!path[i]) {
            nbdkit_error("rmw6file: file%d= is required", i);
            return -1;
        }
        fd[i] = open(path[i], O_RDWR | O_CLOEXEC);
        if (fd[i] < 0) {
            nbdkit_error("rmw6file: %s: %m", path[i]);
            return -1;
        }
    }
    return 0;
}

static void rmw_unload(void)
{
    for (int i = 0; i < NFILES; i++) {
        if (fd[i] >= 0)
            close(fd[i]);
        free(path[i]);
    }
}

static void *rmw_open(int readonly)
{
    (void)readonly;
    return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t rmw_get_size(void *h)
{
    struct stat st;

    (void)h;
    if (fstat(fd[0], &st) < 0) {
        nbdkit_error("rmw6file: fstat: %m");
        return -1;
    }
    return (st.st_size / CHUNK) * CHUNK * NDATA;
}

static int full_io(int f, void *buf, uint32_t count, uint64_t off, int wr)
{
    while (count > 0) {
        ssize_t r = wr ? pwrite(f, buf, count, (off_t)off) : pread(f, buf, count, (off_t)off);

        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            nbdkit_error("rmw6file: %s: %m", wr ? "pwrite" : "pread");
            return -1;
        }
        buf = (char *)buf + r;
        count -= (uint32_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

/* The data file and its offset for logical byte @off. */
static int where(uint64_t off, uint64_t *dev_off)
{
    uint64_t c = off / CHUNK;

    *dev_off = (c / NDATA) * CHUNK + off % CHUNK;
    return (int)(c % NDATA);
}

static int rmw_pread(void *h, void *buf, uint32_t count, uint64_t off, uint32_t flags)
{
    (void)h;
    (void)flags;
    while (count > 0) {
        uint64_t d;
        int f = where(off, &d);
        uint32_t n = CHUNK - (uint32_t)(off % CHUNK);

        if (n > count)
            n = count;
        if (full_io(fd[f], buf, n, d, 0) < 0)
            return -1;
        buf = (char *)buf + n;
        count -= n;
        off += n;
    }
    return 0;
}

static int rmw_pwrite(void *h, const void *buf, uint32_t count, uint64_t off, uint32_t flags)
{
    (void)h;
    (void)flags;
    if (!scratch && posix_memalign((void **)&scratch, 4096, 3 * CHUNK) != 0) {
        nbdkit_error("rmw6file: out of memory");
        return -1;
    }
    while (count > 0) {
        uint64_t d;
        int f = where(off, &d);
        uint32_t n = CHUNK - (uint32_t)(off % CHUNK);
        uint8_t *old = scratch, *p = scratch + CHUNK, *q = scratch + 2 * CHUNK;
        const uint8_t *nw = buf;
        unsigned char c = (unsigned char)(1u << f), tbl[32]; /* g^f in GF(2^8) for f < 8 */

        if (n > count)
            n = count;
        if (full_io(fd[f], old, n, d, 0) < 0 || full_io(fd[NDATA], p, n, d, 0) < 0 ||
            full_io(fd[NDATA + 1], q, n, d, 0) < 0)
            return -1;
        for (uint32_t i = 0; i < n; i++)
            p[i] ^= old[i] ^ nw[i];
        ec_init_tables(1, 1, &c, tbl);
        gf_vect_mad((int)n, 1, 0, tbl, old, q);
        gf_vect_mad((int)n, 1, 0, tbl, (unsigned char *)nw, q);
        if (full_io(fd[f], (void *)nw, n, d, 1) < 0 || full_io(fd[NDATA], p, n, d, 1) < 0 ||
            full_io(fd[NDATA + 1], q, n, d, 1) < 0)
            return -1;
        buf = (const char *)buf + n;
        count -= n;
        off += n;
    }
    return 0;
}

static struct nbdkit_plugin plugin = {
    .name = "rmw6file",
    .longname = "clraid benchmark baseline: RAID6 read-modify-write over six files with nothing else",
    .config = rmw_config,
    .config_help = "file0..file3=<FILE> data, file4=<FILE> P, file5=<FILE> Q",
    .get_ready = rmw_get_ready,
    .unload = rmw_unload,
    .open = rmw_open,
    .get_size = rmw_get_size,
    .pread = rmw_pread,
    .pwrite = rmw_pwrite,
};

NBDKIT_REGISTER_PLUGIN(plugin)
