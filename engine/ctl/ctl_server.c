/* clraid control socket server (see ctl_server.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/lockrank.h"
#include "ctl/ctl_server.h"

#define MAX_CONNS       16
#define IDLE_TIMEOUT_MS 30000 /* a connection silent this long is dropped */
#define IO_TIMEOUT_MS   10000 /* a reply not taken this long is dropped */
#define POLL_SLICE_MS   250   /* how often threads look at the stop flag */

struct clr_ctl_server {
    char *path;
    int lfd;
    int wake[2];
    pthread_t acceptor;
    clr_ctl_handler_fn fn;
    void *opaque;
    struct clr_mutex lock;
    pthread_cond_t cond;
    unsigned nconns;
    bool stopping;
};

struct conn {
    struct clr_ctl_server *s;
    int fd;
};

static bool stopping(struct clr_ctl_server *s)
{
    bool v;

    clr_mutex_lock(&s->lock);
    v = s->stopping;
    clr_mutex_unlock(&s->lock);
    return v;
}

/* Sends all of @line, giving up after IO_TIMEOUT_MS. */
static int send_line(int fd, const char *line)
{
    size_t len = strlen(line), done = 0;
    int waited = 0;

    while (done < len) {
        ssize_t n = send(fd, line + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        if (waited >= IO_TIMEOUT_MS)
            return -ETIMEDOUT;
        if (poll(&p, 1, POLL_SLICE_MS) < 0 && errno != EINTR)
            return -errno;
        waited += POLL_SLICE_MS;
    }
    return 0;
}

static int send_error(int fd, const char *msg)
{
    char *line = clr_ctl_reply_error(msg);
    int rc = line ? send_line(fd, line) : -ENOMEM;

    free(line);
    return rc;
}

static int handle_line(struct clr_ctl_server *s, int fd, const char *line, size_t len)
{
    struct clr_ctl_request req;
    struct clr_err e = { "" };
    char *reply;
    int rc;

    if (clr_ctl_request_decode(line, len, &req, &e) != 0)
        return send_error(fd, e.msg);
    reply = s->fn(s->opaque, &req);
    clr_ctl_request_free(&req);
    if (!reply)
        return send_error(fd, "out of memory");
    rc = send_line(fd, reply);
    free(reply);
    return rc;
}

static void *conn_thread(void *arg)
{
    struct conn *c = arg;
    struct clr_ctl_server *s = c->s;
    size_t cap = CLR_CTL_MAX_LINE + 1, used = 0;
    char *buf = malloc(cap);
    int idle = 0;

    if (!buf) {
        send_error(c->fd, "out of memory");
        goto out;
    }
    while (!stopping(s)) {
        struct pollfd p = { .fd = c->fd, .events = POLLIN };
        int r = poll(&p, 1, POLL_SLICE_MS);

        if (r < 0 && errno != EINTR)
            break;
        if (r <= 0) {
            idle += POLL_SLICE_MS;
            if (idle >= IDLE_TIMEOUT_MS) {
                send_error(c->fd, "timed out waiting for a complete request line");
                break;
            }
            continue;
        }
        ssize_t n = recv(c->fd, buf + used, cap - used, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            break;
        idle = 0;
        used += (size_t)n;
        char *nl;
        bool bad = false;
        while ((nl = memchr(buf, '\n', used)) != NULL) {
            size_t len = (size_t)(nl - buf);

            if (handle_line(s, c->fd, buf, len) != 0) {
                bad = true;
                break;
            }
            used -= len + 1;
            memmove(buf, nl + 1, used);
        }
        if (bad)
            break;
        if (used == cap) {
            send_error(c->fd, "request line too long (limit 65536 bytes)");
            break;
        }
    }
out:
    free(buf);
    close(c->fd);
    clr_mutex_lock(&s->lock);
    s->nconns--;
    pthread_cond_broadcast(&s->cond);
    clr_mutex_unlock(&s->lock);
    free(c);
    return NULL;
}

static void accept_one(struct clr_ctl_server *s)
{
    struct ucred cred;
    socklen_t clen = sizeof cred;
    pthread_attr_t attr;
    pthread_t t;
    struct conn *c;
    int fd;

    fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || cred.uid != 0) {
        send_error(fd, "permission denied: the control socket is for root only");
        close(fd);
        return;
    }
    clr_mutex_lock(&s->lock);
    if (s->nconns >= MAX_CONNS) {
        clr_mutex_unlock(&s->lock);
        send_error(fd, "too many control connections, try again");
        close(fd);
        return;
    }
    s->nconns++;
    clr_mutex_unlock(&s->lock);
    c = malloc(sizeof *c);
    if (c) {
        c->s = s;
        c->fd = fd;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, conn_thread, c) == 0) {
            pthread_attr_destroy(&attr);
            return;
        }
        pthread_attr_destroy(&attr);
        free(c);
    }
    send_error(fd, "cannot start a connection thread");
    close(fd);
    clr_mutex_lock(&s->lock);
    s->nconns--;
    pthread_cond_broadcast(&s->cond);
    clr_mutex_unlock(&s->lock);
}

static void *accept_thread(void *arg)
{
    struct clr_ctl_server *s = arg;

    for (;;) {
        struct pollfd p[2] = { { .fd = s->lfd, .events = POLLIN }, { .fd = s->wake[0], .events = POLLIN } };

        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break;
        if (p[0].revents & POLLIN)
            accept_one(s);
    }
    return NULL;
}

int clr_ctl_server_start(const char *path, clr_ctl_handler_fn fn, void *opaque, struct clr_ctl_server **out,
                         struct clr_err *e)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct clr_ctl_server *s;
    struct stat st;
    int rc;

    *out = NULL;
    if (strlen(path) >= sizeof sa.sun_path)
        return clr_err_set(e, -ENAMETOOLONG, "%s: control socket path too long (use a shorter --run-dir)",
                           path);
    strcpy(sa.sun_path, path);
    s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        free(s);
        return clr_err_set(e, -ENOMEM, "out of memory");
    }
    s->fn = fn;
    s->opaque = opaque;
    s->lfd = -1;
    s->wake[0] = s->wake[1] = -1;
    clr_mutex_init(&s->lock, CLR_RANK_CTL, "ctl server lock");
    pthread_cond_init(&s->cond, NULL);
    if (pipe2(s->wake, O_CLOEXEC) != 0) {
        rc = clr_err_set(e, -errno, "pipe: %s", strerror(errno));
        goto fail;
    }
    s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->lfd < 0) {
        rc = clr_err_set(e, -errno, "socket: %s", strerror(errno));
        goto fail;
    }
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(path);
    if (bind(s->lfd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        rc = clr_err_set(e, -errno, "%s: cannot create the control socket: %s", path, strerror(errno));
        goto fail;
    }
    /* The run directory is 0700 and peers are checked too; this is the
     * documented mode. */
    if (chmod(path, 0600) != 0 || listen(s->lfd, MAX_CONNS) != 0) {
        rc = clr_err_set(e, -errno, "%s: %s", path, strerror(errno));
        unlink(path);
        goto fail;
    }
    rc = -pthread_create(&s->acceptor, NULL, accept_thread, s);
    if (rc) {
        clr_err_set(e, rc, "cannot start the control thread: %s", strerror(-rc));
        unlink(path);
        goto fail;
    }
    *out = s;
    return 0;
fail:
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->wake[0] >= 0) {
        close(s->wake[0]);
        close(s->wake[1]);
    }
    free(s->path);
    free(s);
    return rc;
}

void clr_ctl_server_stop(struct clr_ctl_server *s)
{
    struct timespec deadline;
    char b = 1;

    if (!s)
        return;
    clr_mutex_lock(&s->lock);
    s->stopping = true;
    clr_mutex_unlock(&s->lock);
    if (write(s->wake[1], &b, 1) != 1) {
        /* The pipe cannot be full; nothing else to do. */
    }
    pthread_join(s->acceptor, NULL);
    close(s->lfd);
    unlink(s->path);
    /* Connection threads notice the flag within a poll slice, unless a
     * handler is stuck in the core; never wait for that forever. */
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 5;
    clr_mutex_lock(&s->lock);
    while (s->nconns > 0)
        if (clr_cond_timedwait(&s->cond, &s->lock, &deadline) == ETIMEDOUT)
            break;
    bool leak = s->nconns > 0;
    clr_mutex_unlock(&s->lock);
    close(s->wake[0]);
    close(s->wake[1]);
    if (leak)
        return; /* a thread still points at @s: leak it rather than crash */
    pthread_cond_destroy(&s->cond);
    clr_mutex_destroy(&s->lock);
    free(s->path);
    free(s);
}
