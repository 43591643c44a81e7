/* A benchmark baseline, not part of clraid: the least any two-way mirror
 * served by nbdkit can cost.  Every write goes to two files with
 * pwrite(2), one after the other, in nbdkit's own worker thread; reads
 * come from the first file.  No bitmap, no range lock, no request state,
 * no failure handling.  tests/bench/engine.sh runs it as the
 * "twin-file" row: what the RAID1 rows pay beyond it is the engine's
 * own cost (tests/bench/README.md).
 *
 *   nbdkit --unix SOCK ./tests/bench/.libs/nbdkit-twinfile-plugin.so \
 *          file0=A file1=B
 */
#define NBDKIT_API_VERSION 2
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nbdkit-plugin.h>

#include "nbdkit_files.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static struct bench_files files = { "twinfile", 2, { NULL }, { -1, -1 } };

static int twin_config(const char *key, const char *value)
{
    return bench_files_config(&files, key, value);
}

static int twin_get_ready(void)
{
    return bench_files_open(&files);
}

static void twin_unload(void)
{
    bench_files_close(&files);
}

static void *twin_open(int readonly)
{
    (void)readonly;
    return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t twin_get_size(void *h)
{
    struct stat st;

    (void)h;
    if (fstat(files.fd[0], &st) < 0) {
        nbdkit_error("twinfile: fstat: %m");
        return -1;
    }
    return st.st_size;
}

static int twin_pread(void *h, void *buf, uint32_t count, uint64_t off, uint32_t flags)
{
    (void)h;
    (void)flags;
    return bench_full_io(&files, 0, buf, count, off, 0);
}

static int twin_pwrite(void *h, const void *buf, uint32_t count, uint64_t off, uint32_t flags)
{
    (void)h;
    (void)flags;
    if (bench_full_io(&files, 0, (void *)buf, count, off, 1) < 0)
        return -1;
    return bench_full_io(&files, 1, (void *)buf, count, off, 1);
}

static int twin_flush(void *h, uint32_t flags)
{
    (void)h;
    (void)flags;
    for (int i = 0; i < 2; i++) {
        if (fdatasync(files.fd[i]) < 0) {
            nbdkit_error("twinfile: fdatasync: %m");
            return -1;
        }
    }
    return 0;
}

static struct nbdkit_plugin plugin = {
    .name = "twinfile",
    .longname = "clraid benchmark baseline: a mirror of two files with nothing else",
    .config = twin_config,
    .config_help = "file0=<FILE> file1=<FILE>  the two halves of the mirror",
    .get_ready = twin_get_ready,
    .unload = twin_unload,
    .open = twin_open,
    .get_size = twin_get_size,
    .pread = twin_pread,
    .pwrite = twin_pwrite,
    .flush = twin_flush,
};

NBDKIT_REGISTER_PLUGIN(plugin)
