/*
 * cpg_rtt: corosync's own CPG round trip, the yardstick for the lock
 * benchmark: multicast 64 bytes in agreed order, wait for our own delivery.
 *   cpg_rtt N   prints "ok cpg_rtt_median_us=... p99_us=..."
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <corosync/cpg.h>

static volatile int delivered;

static void deliver(cpg_handle_t h, const struct cpg_name *g, uint32_t nodeid, uint32_t pid, void *msg,
                    size_t len)
{
    (void)h;
    (void)g;
    (void)nodeid;
    (void)msg;
    (void)len;
    if (pid == (uint32_t)getpid())
        delivered++;
}

static volatile int joined;

static void confchg(cpg_handle_t h, const struct cpg_name *g, const struct cpg_address *m, size_t nm,
                    const struct cpg_address *l, size_t nl, const struct cpg_address *j, size_t nj)
{
    (void)h;
    (void)g;
    (void)m;
    (void)nm;
    (void)l;
    (void)nl;
    (void)j;
    (void)nj;
    joined = 1;
}

static uint64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    cpg_callbacks_t cb = { .cpg_deliver_fn = deliver, .cpg_confchg_fn = confchg };
    struct cpg_name g = { .length = 10, .value = "clraid-rtt" };
    int n = argc > 1 ? atoi(argv[1]) : 2000, fd;
    uint64_t *lat = calloc((size_t)n, sizeof(uint64_t));
    cpg_handle_t h;
    char buf[64] = { 0 };
    struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };

    if (!lat || cpg_initialize(&h, &cb) != CS_OK || cpg_join(h, &g) != CS_OK) {
        fprintf(stderr, "cpg_rtt: cannot reach corosync\n");
        return 1;
    }
    cpg_fd_get(h, &fd);
    while (!joined)
        cpg_dispatch(h, CS_DISPATCH_ONE);
    for (int i = 0; i < n; i++) {
        int want = delivered + 1;
        uint64_t t0 = now_us();

        while (cpg_mcast_joined(h, CPG_TYPE_AGREED, &iov, 1) == CS_ERR_TRY_AGAIN)
            usleep(100);
        while (delivered < want) {
            struct pollfd p = { .fd = fd, .events = POLLIN };

            poll(&p, 1, 1000);
            cpg_dispatch(h, CS_DISPATCH_ALL);
        }
        lat[i] = now_us() - t0;
    }
    qsort(lat, (size_t)n, sizeof(*lat), cmp);
    printf("ok cpg_rtt_median_us=%" PRIu64 " p99_us=%" PRIu64 "\n", lat[n / 2], lat[(size_t)n * 99 / 100]);
    cpg_leave(h, &g);
    cpg_finalize(h);
    return 0;
}
