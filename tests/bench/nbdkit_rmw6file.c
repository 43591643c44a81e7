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

#include "nbdkit_files.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
#define NDATA        4
#define NFILES       (NDATA + 2)
#define CHUNK        (256u * 1024)

static struct bench_files files = { "rmw6file", NFILES, { NULL }, { -1, -1, -1, -1, -1, -1 } };
static __thread uint8_t *scratch; /* old data, P, Q: CHUNK each */

/* p ^= a ^ b, 8 bytes at a time as the engine does (a byte loop here
 * cost this baseline 17% of its CPU and made it no ceiling at all) */
static void xor_into(uint8_t *p, const uint8_t *a, const uint8_t *b, uint32_t n)
{
    uint32_t i = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t x, y, z;

        memcpy(&x, p + i, 8);
        memcpy(&y, a + i, 8);
        memcpy(&z, b + i, 8);
        x ^= y ^ z;
        memcpy(p + i, &x, 8);
    }
    for (; i < n; i++)
        p[i] ^= a[i] ^ b[i];
}

static int rmw_config(const char *key, const char *value)
{
    return bench_files_config(&files, key, value);
}

static int rmw_get_ready(void)
{
    return bench_files_open(&files);
}

static void rmw_unload(void)
{
    bench_files_close(&files);
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
    if (fstat(files.fd[0], &st) < 0) {
        nbdkit_error("rmw6file: fstat: %m");
        return -1;
    }
    return (st.st_size / CHUNK) * CHUNK * NDATA;
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
        if (bench_full_io(&files, f, buf, n, d, 0) < 0)
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
        if (bench_full_io(&files, f, old, n, d, 0) < 0 || bench_full_io(&files, NDATA, p, n, d, 0) < 0 ||
            bench_full_io(&files, NDATA + 1, q, n, d, 0) < 0)
            return -1;
        xor_into(p, old, nw, n);
        ec_init_tables(1, 1, &c, tbl);
        gf_vect_mad((int)n, 1, 0, tbl, old, q);
        gf_vect_mad((int)n, 1, 0, tbl, (unsigned char *)nw, q);
        if (bench_full_io(&files, f, (void *)nw, n, d, 1) < 0 ||
            bench_full_io(&files, NDATA, p, n, d, 1) < 0 || bench_full_io(&files, NDATA + 1, q, n, d, 1) < 0)
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
