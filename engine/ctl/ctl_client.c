/* clraid control socket client (see ctl_client.h). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl_client.h"

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for @events on @fd until @deadline; 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, long long deadline)
{
    for (;;) {
        long long left = deadline - now_ms();
        struct pollfd p = { .fd = fd, .events = events };
        int r;

        if (left <= 0)
            return -ETIMEDOUT;
        r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -errno;
    }
}

int clr_ctl_call_raw(const char *path, const char *line, int timeout_ms, char **reply, struct clr_err *e)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    long long deadline = now_ms() + timeout_ms;
    size_t len = strlen(line), done = 0, cap = CLR_CTL_MAX_LINE + 1, used = 0;
    char *buf = NULL, *nl;
    int fd, rc;

    *reply = NULL;
    if (strlen(path) >= sizeof sa.sun_path)
        return clr_err_set(e, -ENAMETOOLONG, "%s: socket path too long", path);
    strcpy(sa.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return clr_err_set(e, -errno, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
        rc = -errno;
        if (rc == -ENOENT || rc == -ECONNREFUSED)
            clr_err_set(e, rc, "%s: no engine is listening (is the array started?)", path);
        else if (rc == -EACCES || rc == -EPERM)
            clr_err_set(e, rc, "%s: permission denied (the control socket is for root: use sudo)", path);
        else
            clr_err_set(e, rc, "%s: cannot connect: %s", path, strerror(-rc));
        goto out;
    }
    while (done < len) {
        ssize_t n = send(fd, line + done, len - done, MSG_NOSIGNAL);

        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            rc = clr_err_set(e, -errno, "%s: send: %s", path, strerror(errno));
            goto out;
        }
        if ((rc = wait_fd(fd, POLLOUT, deadline)) != 0) {
            clr_err_set(e, rc, "%s: the engine does not answer (timed out)", path);
            goto out;
        }
    }
    buf = malloc(cap);
    if (!buf) {
        rc = clr_err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    for (;;) {
        ssize_t n = recv(fd, buf + used, cap - used, 0);

        if (n > 0) {
            used += (size_t)n;
            if ((nl = memchr(buf, '\n', used)) != NULL) {
                *nl = '\0';
                *reply = buf;
                buf = NULL;
                rc = 0;
                goto out;
            }
            if (used == cap) {
                rc = clr_err_set(e, -EPROTO, "%s: reply too long", path);
                goto out;
            }
            continue;
        }
        if (n == 0) {
            rc = clr_err_set(e, -EPROTO, "%s: the engine closed the connection without a reply", path);
            goto out;
        }
        if (errno != EAGAIN && errno != EINTR) {
            rc = clr_err_set(e, -errno, "%s: recv: %s", path, strerror(errno));
            goto out;
        }
        if ((rc = wait_fd(fd, POLLIN, deadline)) != 0) {
            clr_err_set(e, rc, "%s: the engine does not answer (timed out)", path);
            goto out;
        }
    }
out:
    free(buf);
    close(fd);
    return rc;
}

int clr_ctl_call(const char *path, const char *cmd, json_object *args, int timeout_ms, json_object **result,
                 struct clr_err *e)
{
    char *line = clr_ctl_request_encode(cmd, args), *reply = NULL;
    int rc;

    *result = NULL;
    if (!line)
        return clr_err_set(e, -ENOMEM, "out of memory");
    rc = clr_ctl_call_raw(path, line, timeout_ms, &reply, e);
    free(line);
    if (rc)
        return rc;
    rc = clr_ctl_reply_decode(reply, strlen(reply), result, e);
    free(reply);
    return rc;
}
