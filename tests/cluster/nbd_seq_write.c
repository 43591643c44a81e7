/*
 * nbd_seq_write: the cluster tests' writer.  Writes COUNT blocks of BS
 * bytes, each filled with PATTERN, at BASE, BASE+BS, ... through one NBD
 * connection, one write in flight at a time, like
 *   qemu-io -c "write -P PATTERN OFF BS" ...
 * and prints qemu-io's line for each acknowledged write, followed by the
 * wall-clock time the acknowledgement arrived, taken here in the client
 * (a reader of the output may lag behind):
 *
 *   wrote 65536/65536 bytes at offset 1048576
 *   acked 1048576 t_ms 1796410597213
 *
 * A failed write prints "write failed: ..." and ends the run (exit 1).
 * CL_PACE_MS=N in the environment: N ms of pause after each acknowledged
 * write, for the writers that run while a test waits for something else
 * (unpaced, three of them kept both CPUs of a CI machine busy; the
 * request is still in flight for as long as the server takes).
 *
 *   usage: nbd_seq_write URI PATTERN BASE BS COUNT
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libnbd.h>

static int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;

    errno = 0;
    *out = strtoull(s, &end, 0);
    return errno || end == s || *end ? -1 : 0;
}

int main(int argc, char **argv)
{
    uint64_t pattern, base, bs, count, pace_ms = 0;
    const char *pace = getenv("CL_PACE_MS");
    struct nbd_handle *nbd;
    char *buf;

    if (argc != 6 || parse_u64(argv[2], &pattern) || pattern > 255 || parse_u64(argv[3], &base) ||
        parse_u64(argv[4], &bs) || bs == 0 || bs > 64u << 20 || parse_u64(argv[5], &count)) {
        fprintf(stderr, "usage: nbd_seq_write URI PATTERN(0-255) BASE BS COUNT\n");
        return 2;
    }
    if (pace && *pace && (parse_u64(pace, &pace_ms) || pace_ms > 10000)) {
        fprintf(stderr, "nbd_seq_write: CL_PACE_MS=%s: expected 0 to 10000 (ms)\n", pace);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* a server killed while we send: say so, do not die of SIGPIPE */
    signal(SIGPIPE, SIG_IGN);
    buf = malloc(bs);
    nbd = nbd_create();
    if (!buf || !nbd) {
        printf("write failed: out of memory\n");
        return 1;
    }
    memset(buf, (int)pattern, bs);
    if (nbd_connect_uri(nbd, argv[1]) == -1) {
        printf("connect failed: %s\n", nbd_get_error());
        return 1;
    }
    for (uint64_t i = 0; i < count; i++) {
        uint64_t off = base + i * bs;
        int64_t t;

        if (nbd_pwrite(nbd, buf, bs, off, 0) == -1) {
            printf("write failed: %s\n", nbd_get_error());
            return 1;
        }
        t = wall_ms();
        printf("wrote %" PRIu64 "/%" PRIu64 " bytes at offset %" PRIu64 "\n", bs, bs, off);
        printf("acked %" PRIu64 " t_ms %" PRId64 "\n", off, t);
        if (pace_ms && i + 1 < count) {
            struct timespec ts = { (time_t)(pace_ms / 1000), (long)(pace_ms % 1000) * 1000000L };

            while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
                ;
        }
    }
    nbd_shutdown(nbd, 0);
    nbd_close(nbd);
    free(buf);
    return 0;
}
