/* clraid start: assemble (refusing stale, foreign or missing members with
 * one line), then run nbdkit + the clraid plugin in the background and
 * return once the engine answers on its control socket.  --dry-run makes
 * the same checks, then says what it would start: it writes nothing and
 * starts nothing (ocf/clraid validates its parameters with it). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <json-c/json.h>

#include "array/array.h"
#include "cli/cli.h"
#include "ctl/ctl_client.h"
#include "format/md_sb.h"

#ifndef CLR_NBDKIT_PLUGIN_PATH
#define CLR_NBDKIT_PLUGIN_PATH "/usr/local/lib/nbdkit/plugins/nbdkit-clraid-plugin.so"
#endif
#define START_TIMEOUT_S 60

/* Why a step refused.  'clraid start' exits 1 whatever the reason;
 * --dry-run exits with the reason, so that a caller (ocf/clraid) can tell
 * a configuration that never starts from a node that cannot start it. */
enum {
    START_HELP = -1, /* --help was printed: exit 0 */
    START_OK = 0,
    START_REFUSED = 1, /* not now: already running, stale or busy members, too few in sync */
    START_CONFIG = 2,  /* the arguments, or an array this lock cannot run */
    START_HOST = 3,    /* this node: a member, the run directory, nbdkit or the plugin */
};

/* How clients reach the array: nbdkit's own listeners and TLS. */
enum start_tls {
    TLS_UNSET,
    TLS_OFF,
    TLS_REQUIRE
};

struct start_export {
    const char *spec;                    /* --export as given: unix, or tcp:ADDR:PORT */
    bool tcp;                            /* else NBD on RUN_DIR/NAME.sock */
    char addr[INET6_ADDRSTRLEN];         /* numeric, without brackets */
    char port[6];                        /* 1 to 65535 */
    enum start_tls tls;                  /* --tls */
    const char *psk, *certs;             /* --tls-psk=FILE, --tls-certificates=DIR */
    bool verify_peer;                    /* --tls-verify-peer (certificates only) */
    char *psk_abs, *certs_abs;           /* resolved, for nbdkit */
    char user[256];                      /* the PSK file's first username, for the URI */
    char uri[3 * PATH_MAX + 1024];       /* what a client connects to (escaped) */
    char tlsarg[PATH_MAX + 32];          /* --tls-psk=... or --tls-certificates=... */
    char exportarg[3 * PATH_MAX + 1040]; /* export=URI, for the plugin's status */
};

/* One 'clraid start' request, from its arguments to its run files. */
struct start_req {
    const char *name, *dir, *lock, *plugin, *nbdkit;
    bool buffered, skip_stale, all_dirty, dry_run;
    struct start_export ex;
    char **paths; /* the member arguments, as given */
    char **devs;  /* the same, resolved (realpath) */
    unsigned n;
    char *dirabs;
    char sock[PATH_MAX], ctl[PATH_MAX], pidf[PATH_MAX], log[PATH_MAX];
};

static void start_usage(FILE *f)
{
    fprintf(f, "usage: clraid start NAME DEV... [--run-dir DIR] [--lock local|cpg|dlm] [--buffered]\n"
               "                    [--skip-stale] [--bitmap=normal|all-dirty] [--dry-run]\n"
               "                    [--export unix | --export tcp:ADDR:PORT --tls=require|off\n"
               "                     [--tls-psk=FILE | --tls-certificates=DIR [--tls-verify-peer]]]\n"
               "  Assembles array NAME from its members and serves it over NBD at\n"
               "  RUN_DIR/NAME.sock (default run dir " CLR_RUN_DIR_DEFAULT ").\n"
               "  --export tcp:ADDR:PORT serves NBD over TCP on IP address ADDR\n"
               "  (0.0.0.0: every IPv4 address; [::]: every IPv6 one, IPv6 only)\n"
               "  instead, with nbdkit's TLS: --tls=require\n"
               "  and a pre-shared key file (--tls-psk=FILE, lines USERNAME:HEXKEY,\n"
               "  mode 600) or X.509 certificates (--tls-certificates=DIR with\n"
               "  ca-cert.pem, server-cert.pem, server-key.pem; --tls-verify-peer\n"
               "  asks clients for certificates too).  Plain TCP, which anyone on\n"
               "  the network can read and write, needs --tls=off.\n"
               "  --lock local (default) runs it on this node alone (bitmap slot 0);\n"
               "  --lock cpg or dlm joins the array's cluster (lockspace = array UUID;\n"
               "  clraid-UUID in the kernel DLM with dlm), every node running\n"
               "  'clraid start' on the same shared devices (RAID1, RAID10, and\n"
               "  RAID5/6 under stripe-zone locks with a partial-parity log; one\n"
               "  bitmap slot per node).  Refused while a kernel md-cluster node has\n"
               "  the array assembled.\n"
               "  --skip-stale leaves stale or faulty members out (warning) and starts\n"
               "  degraded if enough remain; re-add them with 'clraid re-add'.\n"
               "  --bitmap=all-dirty holds every bitmap chunk dirty while running: no\n"
               "  bitmap writes on the write path, a full resync after a crash (md\n"
               "  without a bitmap); used to measure what the bitmap costs.\n"
               "  --dry-run makes every check start makes (arguments, members, the\n"
               "  array's shape for this lock, the run directory, nbdkit, the plugin)\n"
               "  without writing or starting anything, and prints 'would start ...'.\n"
               "  It does not join the lockspace (a DLM or corosync that is down\n"
               "  still fails the start).  On a refusal it prints the line start\n"
               "  would print and exits 1 (not now: already running, stale or busy\n"
               "  members, too few in sync), 2 (the arguments, or an array this lock\n"
               "  cannot run) or 3 (this node: a member, the run directory, nbdkit or\n"
               "  the plugin is missing or unusable here).\n"
               "  The nbdkit plugin: CLRAID_NBDKIT_PLUGIN if set; else, run from its\n"
               "  build tree, the plugin built there (.libs/); else the installed one\n"
               "  (" CLR_NBDKIT_PLUGIN_PATH ").\n");
}

/* The options into @r; the name and the member arguments are left at
 * argv[optind...].  After a bad option the others are still read, for
 * --dry-run only (getopt's messages off), so that its exit code holds
 * wherever --dry-run stands. */
static int start_parse_options(int argc, char **argv, struct start_req *r)
{
    static const struct option opts[] = {
        { "run-dir", required_argument, NULL, 'r' },
        { "lock", required_argument, NULL, 'l' },
        { "buffered", no_argument, NULL, 'b' },
        { "skip-stale", no_argument, NULL, 's' },
        { "bitmap", required_argument, NULL, 'B' },
        { "dry-run", no_argument, NULL, 'n' },
        { "export", required_argument, NULL, 'E' },
        { "tls", required_argument, NULL, 'T' },
        { "tls-psk", required_argument, NULL, 'P' },
        { "tls-certificates", required_argument, NULL, 'C' },
        { "tls-verify-peer", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool bad = false;
    int c;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (bad) {
            r->dry_run |= c == 'n';
            continue;
        }
        switch (c) {
        case 'r':
            r->dir = optarg;
            break;
        case 'l':
            r->lock = optarg;
            break;
        case 'b':
            r->buffered = true;
            break;
        case 's':
            r->skip_stale = true;
            break;
        case 'n':
            r->dry_run = true;
            break;
        case 'B':
            if (strcmp(optarg, "all-dirty") == 0) {
                r->all_dirty = true;
            } else if (strcmp(optarg, "normal") != 0) {
                clr_cli_error("start", "--bitmap=%s: use normal or all-dirty", optarg);
                bad = true;
            }
            break;
        case 'E':
            r->ex.spec = optarg;
            break;
        case 'T':
            if (strcmp(optarg, "require") == 0) {
                r->ex.tls = TLS_REQUIRE;
            } else if (strcmp(optarg, "off") == 0) {
                r->ex.tls = TLS_OFF;
            } else {
                clr_cli_error("start", "--tls=%s: use require (clients must use TLS) or off (plain TCP)%s",
                              optarg,
                              strcmp(optarg, "on") == 0 ? "; 'on' would let clients in without TLS" : "");
                bad = true;
            }
            break;
        case 'P':
            r->ex.psk = optarg;
            break;
        case 'C':
            r->ex.certs = optarg;
            break;
        case 'V':
            r->ex.verify_peer = true;
            break;
        case 'h':
            start_usage(stdout);
            return START_HELP;
        default:
            clr_cli_error("start", "bad option (run 'clraid start --help')");
            bad = true;
            break;
        }
        if (bad)
            opterr = 0;
    }
    return bad ? START_CONFIG : START_OK;
}

/* --export tcp:ADDR:PORT into @ex: ADDR a numeric IPv4 or IPv6 address
 * (IPv6 in brackets), PORT 1 to 65535. */
static int parse_tcp(struct start_export *ex, const char *spec)
{
    const char *a = spec + 4, *colon;
    size_t alen;
    char *end;
    unsigned char bin[16];
    long port;

    if (a[0] == '[') {
        const char *close = strchr(a, ']');

        if (!close || close[1] != ':')
            goto bad;
        alen = (size_t)(close - a - 1);
        a++;
        colon = close + 1;
    } else {
        colon = strchr(a, ':');
        if (!colon)
            goto bad;
        if (strchr(colon + 1, ':')) {
            clr_cli_error("start", "--export %s: put an IPv6 address in brackets: tcp:[ADDR]:PORT", spec);
            return START_CONFIG;
        }
        alen = (size_t)(colon - a);
    }
    if (alen == 0 || alen >= sizeof ex->addr)
        goto bad;
    memcpy(ex->addr, a, alen);
    ex->addr[alen] = '\0';
    if (inet_pton(AF_INET, ex->addr, bin) != 1 && inet_pton(AF_INET6, ex->addr, bin) != 1) {
        clr_cli_error("start",
                      "--export %s: '%s' is not an IP address (give this node's address, or 0.0.0.0 for "
                      "every IPv4 one)",
                      spec, ex->addr);
        return START_CONFIG;
    }
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || port < 1 || port > 65535) {
        clr_cli_error("start", "--export %s: port '%s': use 1 to 65535 (NBD's own is 10809)", spec,
                      colon + 1);
        return START_CONFIG;
    }
    snprintf(ex->port, sizeof ex->port, "%ld", port);
    ex->tcp = true;
    return START_OK;
bad:
    clr_cli_error(
        "start", "--export %s: use unix, tcp:ADDR:PORT or tcp:[IPV6]:PORT (e.g. tcp:192.0.2.10:10809)", spec);
    return START_CONFIG;
}

/* Step 1b: the export and its TLS options agree with each other. */
static int start_parse_export(struct start_export *ex)
{
    bool tls_opts = ex->tls != TLS_UNSET || ex->psk || ex->certs || ex->verify_peer;

    if (!ex->spec || strcmp(ex->spec, "unix") == 0) {
        if (tls_opts) {
            clr_cli_error("start",
                          "--tls options apply to a TCP export: add --export tcp:ADDR:PORT (the unix "
                          "socket is reached only from this node)");
            return START_CONFIG;
        }
        return START_OK;
    }
    if (strncmp(ex->spec, "tcp:", 4) != 0) {
        clr_cli_error("start", "--export %s: use unix or tcp:ADDR:PORT", ex->spec);
        return START_CONFIG;
    }
    if (parse_tcp(ex, ex->spec))
        return START_CONFIG;
    if (ex->tls == TLS_UNSET) {
        clr_cli_error("start",
                      "--export %s: plain TCP refused: add --tls=require with --tls-psk=FILE or "
                      "--tls-certificates=DIR, or --tls=off to serve it unencrypted",
                      ex->spec);
        return START_CONFIG;
    }
    if (ex->tls == TLS_OFF && (ex->psk || ex->certs || ex->verify_peer)) {
        clr_cli_error("start",
                      "--tls=off with a key or certificates: drop --tls=off to use them (--tls=require)");
        return START_CONFIG;
    }
    if (ex->tls == TLS_REQUIRE && !ex->psk == !ex->certs) {
        clr_cli_error("start", "--tls=require: give one of --tls-psk=FILE or --tls-certificates=DIR");
        return START_CONFIG;
    }
    if (ex->verify_peer && !ex->certs) {
        clr_cli_error("start",
                      "--tls-verify-peer checks client certificates: it needs --tls-certificates=DIR");
        return START_CONFIG;
    }
    return START_OK;
}

/* Step 1: the arguments. */
static int start_parse(int argc, char **argv, struct start_req *r)
{
    int why = start_parse_options(argc, argv, r);

    if (why)
        return why;
    if (argc - optind < 2) {
        clr_cli_error("start", "give the array name and its member devices: clraid start NAME DEV...");
        return START_CONFIG;
    }
    r->name = argv[optind++];
    if (clr_name_check("start", r->name) != 0)
        return START_CONFIG;
    if (strcmp(r->lock, "local") != 0 && strcmp(r->lock, "cpg") != 0 && strcmp(r->lock, "dlm") != 0) {
        clr_cli_error("start", "--lock %s: use local (one node), cpg or dlm (cluster)", r->lock);
        return START_CONFIG;
    }
    r->paths = argv + optind;
    r->n = (unsigned)(argc - optind);
    return start_parse_export(&r->ex);
}

/* Step 2: every member path resolves. */
static int start_resolve_devices(struct start_req *r)
{
    r->devs = calloc(r->n, sizeof *r->devs);
    if (!r->devs)
        return START_REFUSED;
    for (unsigned i = 0; i < r->n; i++) {
        r->devs[i] = realpath(r->paths[i], NULL);
        if (!r->devs[i]) {
            clr_cli_error("start", "%s: %s (check the device path)", r->paths[i], strerror(errno));
            return START_HOST;
        }
    }
    return START_OK;
}

/* Creates @dir (parents 0755, itself 0700) if missing; without @create
 * only checks what it can without creating anything (--dry-run). */
static int make_run_dir(const char *dir, bool create)
{
    char tmp[PATH_MAX];
    struct stat st;

    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            clr_cli_error("start", "%s: not a directory (give another --run-dir)", dir);
            return START_HOST;
        }
        return START_OK;
    }
    if (strlen(dir) >= sizeof tmp) {
        clr_cli_error("start", "%s: run directory path too long", dir);
        return START_CONFIG;
    }
    if (!create)
        return START_OK;
    strcpy(tmp, dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                goto fail;
            *p = '/';
        }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        goto fail;
    return START_OK;
fail:
    clr_cli_error("start", "cannot create the run directory %s: %s", dir, strerror(errno));
    return START_HOST;
}

/* Step 3: the run directory (created, unless --dry-run) and the paths of
 * NAME.sock, .ctl, .pid and .log in it. */
static int start_resolve_run_files(struct start_req *r)
{
    int why = make_run_dir(r->dir, !r->dry_run);

    if (why)
        return why;
    r->dirabs = realpath(r->dir, NULL);
    /* --dry-run: start would create it; the paths are checked as given. */
    if (!r->dirabs && errno == ENOENT && r->dry_run)
        r->dirabs = strdup(r->dir);
    if (!r->dirabs) {
        clr_cli_error("start", "%s: %s", r->dir, strerror(errno));
        return START_HOST;
    }
    r->dir = r->dirabs;
    if (clr_run_path("start", r->sock, sizeof r->sock, r->dir, r->name, ".sock") ||
        clr_run_path("start", r->ctl, sizeof r->ctl, r->dir, r->name, ".ctl") ||
        clr_run_path("start", r->pidf, sizeof r->pidf, r->dir, r->name, ".pid") ||
        clr_run_path("start", r->log, sizeof r->log, r->dir, r->name, ".log"))
        return START_CONFIG;
    return START_OK;
}

/* A key file only its owner may read: @what names it in the message. */
static int check_private(const char *path, const char *what)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        clr_cli_error("start", "%s %s: %s", what, path, strerror(errno));
        return START_HOST;
    }
    if (!S_ISREG(st.st_mode)) {
        clr_cli_error("start", "%s %s: not a regular file", what, path);
        return START_HOST;
    }
    if (st.st_mode & 077) {
        clr_cli_error("start", "%s %s is readable by others: chmod 600 %s", what, path, path);
        return START_HOST;
    }
    if (access(path, R_OK) != 0) {
        clr_cli_error("start", "%s %s: %s", what, path, strerror(errno));
        return START_HOST;
    }
    return START_OK;
}

/* The PSK file: lines USERNAME:HEXKEY (GnuTLS's format, which psktool
 * writes); the first username goes into the URI start prints.  The file
 * is this node's: what is wrong with it is this node's problem
 * (START_HOST), as a missing file is. */
static int check_psk(struct start_export *ex)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    unsigned lineno = 0, keys = 0;
    int why = check_private(ex->psk_abs, "--tls-psk");
    FILE *f;

    if (why)
        return why;
    f = fopen(ex->psk_abs, "re");
    if (!f) {
        clr_cli_error("start", "--tls-psk %s: %s", ex->psk_abs, strerror(errno));
        return START_HOST;
    }
    while ((got = getline(&line, &cap, f)) >= 0) {
        size_t n = strcspn(line, "\r\n"), ulen = strcspn(line, ":"), hex;

        lineno++;
        line[n] = '\0';
        if (n == 0)
            continue;
        hex = ulen < n ? strspn(line + ulen + 1, "0123456789abcdefABCDEF") : 0;
        if (ulen == 0 || ulen >= n || hex == 0 || hex % 2 || ulen + 1 + hex != n) {
            clr_cli_error("start",
                          "--tls-psk %s line %u: expected USERNAME:HEXKEY (make one with 'psktool -u USER "
                          "-p FILE')",
                          ex->psk_abs, lineno);
            why = START_HOST;
            break;
        }
        if (ulen >= sizeof ex->user) {
            clr_cli_error("start", "--tls-psk %s line %u: a username of more than %zu characters",
                          ex->psk_abs, lineno, sizeof ex->user - 1);
            why = START_HOST;
            break;
        }
        if (keys++ == 0) {
            memcpy(ex->user, line, ulen);
            ex->user[ulen] = '\0';
        }
    }
    free(line);
    fclose(f);
    if (!why && !keys) {
        clr_cli_error("start", "--tls-psk %s: no key in it (make one with 'psktool -u USER -p FILE')",
                      ex->psk_abs);
        why = START_HOST;
    }
    return why;
}

/* The certificates directory: what nbdkit's server side loads from it. */
static int check_certs(const struct start_export *ex)
{
    static const char *const need[] = { "ca-cert.pem", "server-cert.pem" };
    char path[PATH_MAX + 32];
    struct stat st;

    if (stat(ex->certs_abs, &st) != 0 || !S_ISDIR(st.st_mode)) {
        clr_cli_error("start", "--tls-certificates %s: not a directory", ex->certs_abs);
        return START_HOST;
    }
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", ex->certs_abs, need[i]);
        if (access(path, R_OK) != 0) {
            clr_cli_error("start",
                          "--tls-certificates %s: %s: %s (the directory needs ca-cert.pem, server-cert.pem "
                          "and server-key.pem)",
                          ex->certs_abs, need[i], strerror(errno));
            return START_HOST;
        }
    }
    snprintf(path, sizeof path, "%s/server-key.pem", ex->certs_abs);
    return check_private(path, "--tls-certificates key");
}

/* @in into @out for a URI: what RFC 3986 leaves unreserved, and '/', as
 * is; every other byte %XX (a space, '&', '#', '%', '@' in a path or a
 * username).  @out holds 3 bytes per byte of @in. */
static const char *uri_escape(char *out, size_t size, const char *in)
{
    static const char hexd[] = "0123456789ABCDEF";
    size_t k = 0;

    for (const unsigned char *p = (const unsigned char *)in; *p && k + 4 <= size; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~/", *p)) {
            out[k++] = (char)*p;
        } else {
            out[k++] = '%';
            out[k++] = hexd[*p >> 4];
            out[k++] = hexd[*p & 15];
        }
    }
    out[k] = '\0';
    return out;
}

/* Step 3b: the TLS files, and the URI clients connect to. */
static int start_resolve_export(struct start_req *r)
{
    struct start_export *ex = &r->ex;
    bool v6 = strchr(ex->addr, ':') != NULL;
    int why = START_OK;
    char path[3 * PATH_MAX + 1], user[3 * sizeof ex->user + 1];

    if (!ex->tcp) {
        snprintf(ex->uri, sizeof ex->uri, "nbd+unix:///?socket=%s", uri_escape(path, sizeof path, r->sock));
    } else if (ex->tls == TLS_OFF) {
        snprintf(ex->uri, sizeof ex->uri, "nbd://%s%s%s:%s/", v6 ? "[" : "", ex->addr, v6 ? "]" : "",
                 ex->port);
    } else if (ex->psk) {
        ex->psk_abs = realpath(ex->psk, NULL);
        if (!ex->psk_abs) {
            clr_cli_error("start", "--tls-psk %s: %s", ex->psk, strerror(errno));
            return START_HOST;
        }
        why = check_psk(ex);
        snprintf(ex->uri, sizeof ex->uri, "nbds://%s@%s%s%s:%s/?tls-psk-file=%s",
                 uri_escape(user, sizeof user, ex->user), v6 ? "[" : "", ex->addr, v6 ? "]" : "", ex->port,
                 uri_escape(path, sizeof path, ex->psk_abs));
        snprintf(ex->tlsarg, sizeof ex->tlsarg, "--tls-psk=%s", ex->psk_abs);
    } else {
        ex->certs_abs = realpath(ex->certs, NULL);
        if (!ex->certs_abs) {
            clr_cli_error("start", "--tls-certificates %s: %s", ex->certs, strerror(errno));
            return START_HOST;
        }
        why = check_certs(ex);
        snprintf(ex->uri, sizeof ex->uri, "nbds://%s%s%s:%s/", v6 ? "[" : "", ex->addr, v6 ? "]" : "",
                 ex->port);
        snprintf(ex->tlsarg, sizeof ex->tlsarg, "--tls-certificates=%s", ex->certs_abs);
    }
    snprintf(ex->exportarg, sizeof ex->exportarg, "export=%s", ex->uri);
    return why;
}

/* Step 4: no engine of this name runs; an engine that was killed left
 * sockets and a pid file nobody serves any more (removed, unless
 * --dry-run). */
static int start_check_not_running(const struct start_req *r)
{
    pid_t pid = clr_run_pid(r->dir, r->name);

    if (pid) {
        clr_cli_error("start", "array '%s' is already running (pid %ld): stop it first with 'clraid stop %s'",
                      r->name, (long)pid, r->name);
        return START_REFUSED;
    }
    if (!r->dry_run) {
        unlink(r->sock);
        unlink(r->ctl);
        unlink(r->pidf);
    }
    return START_OK;
}

/* The assembly's warnings (a member --skip-stale leaves out) on stderr. */
static void precheck_log(void *opaque, int prio, const char *msg)
{
    (void)opaque;
    if (prio <= 4)
        fprintf(stderr, "clraid start: warning: %s\n", msg);
}

/* The reason class of an assembly refusal, from its errno (engine/array:
 * the members, then the array's shape for the lock backend). */
static int precheck_class(int rc)
{
    switch (rc) {
    case -EOPNOTSUPP: /* a level or layout this lock backend cannot run */
        return START_CONFIG;
    case -EBUSY:  /* a kernel md-cluster node runs the array */
    case -ESTALE: /* a stale member (without --skip-stale) */
    case -ENODEV: /* too few members in sync */
    case -ENOMEM:
        return START_REFUSED;
    default: /* a member missing, unreadable, foreign or corrupt here */
        return START_HOST;
    }
}

/* Step 5: assembles and frees at once: the same checks the plugin makes,
 * but with the refusal printed here, before anything runs.
 * clr_array_assemble() reads every member, writes nothing and runs the
 * cluster shape check (engine/array/array_cluster.c); the array is freed
 * without running, or kept in *@keep for the --dry-run summary. */
static int start_precheck(const struct start_req *r, struct clr_array **keep)
{
    struct clr_array_config cfg = {
        .name = r->name,
        .devices = (const char *const *)r->devs,
        .ndevices = r->n,
        .lock = r->lock,
        .flags = (r->buffered ? CLR_ARRAY_BUFFERED : 0) | (r->skip_stale ? CLR_ARRAY_SKIP_STALE : 0),
        .log = precheck_log,
    };
    struct clr_array *a = NULL;
    struct clr_err e = { "" };
    int rc = clr_array_assemble(&cfg, &a, &e);

    if (rc) {
        clr_cli_error("start", "%s", e.msg[0] ? e.msg : strerror(-rc));
        return precheck_class(rc);
    }
    if (keep)
        *keep = a;
    else
        clr_array_free(a);
    return START_OK;
}

/* True if execvp() would find @prog (a path, or a name in PATH). */
static bool can_exec(const char *prog)
{
    const char *p = getenv("PATH");
    char buf[PATH_MAX];

    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0;
    if (!p || !*p)
        p = "/bin:/usr/bin";
    for (;;) {
        size_t n = strcspn(p, ":");
        int len = snprintf(buf, sizeof buf, "%.*s/%s", (int)n, n ? p : ".", prog);

        if (len > 0 && (size_t)len < sizeof buf && access(buf, X_OK) == 0)
            return true;
        if (!p[n])
            return false;
        p += n + 1;
    }
}

/* Step 6: the engine's parts: the plugin, and (--dry-run, where start
 * would only learn it from the engine's failure) the nbdkit command. */
/* The plugin: CLRAID_NBDKIT_PLUGIN; else, for a clraid run from its build
 * tree (config.status next to it), the plugin built there (libtool puts
 * it in .libs/); else the installed one. */
static const char *plugin_path(void)
{
    static char buf[PATH_MAX + 64];
    const char *env = getenv("CLRAID_NBDKIT_PLUGIN");
    char self[PATH_MAX];
    ssize_t n;
    char *slash;

    if (env && *env)
        return env;
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return CLR_NBDKIT_PLUGIN_PATH;
    self[n] = '\0';
    slash = strrchr(self, '/');
    if (!slash)
        return CLR_NBDKIT_PLUGIN_PATH;
    *slash = '\0';
    snprintf(buf, sizeof buf, "%s/config.status", self);
    if (access(buf, F_OK) != 0)
        return CLR_NBDKIT_PLUGIN_PATH;
    snprintf(buf, sizeof buf, "%s/.libs/nbdkit-clraid-plugin.so", self);
    return access(buf, R_OK) == 0 ? buf : CLR_NBDKIT_PLUGIN_PATH;
}

static int start_check_engine(struct start_req *r)
{
    r->plugin = plugin_path();
    if (access(r->plugin, R_OK) != 0) {
        clr_cli_error("start", "nbdkit plugin %s: %s (install clraid or set CLRAID_NBDKIT_PLUGIN)", r->plugin,
                      strerror(errno));
        return START_HOST;
    }
    r->nbdkit = getenv("CLRAID_NBDKIT");
    if (!r->nbdkit || !*r->nbdkit)
        r->nbdkit = "nbdkit";
    if (r->dry_run && !can_exec(r->nbdkit)) {
        clr_cli_error("start", "cannot run %s: %s (install nbdkit or set CLRAID_NBDKIT)", r->nbdkit,
                      strerror(strchr(r->nbdkit, '/') ? errno : ENOENT));
        return START_HOST;
    }
    return START_OK;
}

/* The array's number of members (raid_disks) from @path's superblock,
 * which the assembly has checked; 0 if it cannot be read again. */
static unsigned raid_disks_of(const char *path)
{
    uint8_t buf[CLR_MD_SB_AREA_BYTES];
    struct clr_md_sb sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc = fd < 0 ? -errno : clr_pread_full(fd, buf, sizeof buf, CLR_MD_V12_SB_SECTOR * 512);

    if (fd >= 0)
        close(fd);
    if (rc || clr_md_sb_decode(buf, sizeof buf, 0, &sb, NULL) != 0)
        return 0;
    return sb.raid_disks;
}

/* --dry-run's answer: one line, what start would serve. */
static int start_report_dry_run(const struct start_req *r, struct clr_array *a)
{
    json_object *st = clr_array_status_json(a), *devs = clr_json_path(st, "devices");
    json_object *level = clr_json_path(st, "level"), *uuid = clr_json_path(st, "uuid");
    size_t ndev = devs ? json_object_array_length(devs) : 0;
    unsigned in_sync = 0, spares = 0, members = 0;
    char spare_note[32] = "";

    for (size_t i = 0; i < ndev; i++) {
        json_object *d = json_object_array_get_idx(devs, i);
        json_object *s = clr_json_path(d, "state"), *path = clr_json_path(d, "path");
        const char *state = s ? json_object_get_string(s) : "";

        if (strcmp(state, "in_sync") == 0) {
            in_sync++;
            if (!members && path)
                members = raid_disks_of(json_object_get_string(path));
        }
        spares += strcmp(state, "spare") == 0;
    }
    if (spares)
        snprintf(spare_note, sizeof spare_note, ", %u spare%s", spares, spares == 1 ? "" : "s");
    printf("would start array '%s' (%s, UUID %s, %llu MiB, %u of %u members in sync%s%s, lock %s): "
           "%s\n",
           r->name, level ? json_object_get_string(level) : "?", uuid ? json_object_get_string(uuid) : "?",
           (unsigned long long)(clr_array_size(a) >> 20), in_sync, members,
           in_sync < members ? ": degraded" : "", spare_note, r->lock, r->ex.uri);
    json_object_put(st);
    return START_OK;
}

static void copy_line(char *out, size_t size, const char *s)
{
    size_t n = strlen(s);

    if (n >= size)
        n = size - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

/* The line of @log that best says why the engine failed: the last one
 * with "error", else the last non-empty one; nbdkit's prefix removed. */
static void last_error_line(const char *log, char *out, size_t size)
{
    char line[1024];
    FILE *f = fopen(log, "re");
    bool have_err = false;

    copy_line(out, size, "no message");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *err = strstr(line, "error: ");
        if (err) {
            copy_line(out, size, err + 7);
            have_err = true;
        } else if (!have_err && line[0] && !strstr(line, "debug: ")) {
            copy_line(out, size, line);
        }
    }
    fclose(f);
}

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* nbdkit in the foreground dies with its parent (PR_SET_PDEATHSIG), and in
 * the background it drops stderr; so a small monitor process, in its own
 * session, is the parent: it runs nbdkit -f with stderr in the log, waits
 * for it and notes how it ended. Returns the monitor's pid. */
static pid_t spawn(char **argv, const char *log)
{
    pid_t mon = fork();

    if (mon < 0) {
        clr_cli_error("start", "fork: %s", strerror(errno));
        return -1;
    }
    if (mon == 0) {
        int in = open("/dev/null", O_RDONLY);
        int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0600);
        int status;
        pid_t pid;

        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
            _exit(127);
        setsid();
        signal(SIGHUP, SIG_IGN);
        signal(SIGINT, SIG_IGN);
        pid = fork();
        if (pid == 0) {
            signal(SIGHUP, SIG_DFL);
            signal(SIGINT, SIG_DFL);
            execvp(argv[0], argv);
            fprintf(stderr, "nbdkit: error: cannot run %s: %s (install nbdkit or set CLRAID_NBDKIT)\n",
                    argv[0], strerror(errno));
            _exit(127);
        }
        if (pid < 0)
            _exit(127);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (WIFSIGNALED(status))
            fprintf(stderr, "clraid: engine pid %ld killed by signal %d\n", (long)pid, WTERMSIG(status));
        else if (WEXITSTATUS(status))
            fprintf(stderr, "clraid: engine pid %ld exited with status %d\n", (long)pid, WEXITSTATUS(status));
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
    }
    return mon;
}

/* nbdkit's command line: the plugin and its parameters, one device= per
 * member; argv[kdev..k) are allocated here. */
struct engine_cmd {
    char **argv;
    unsigned kdev, k;
    char namearg[128], dirarg[PATH_MAX + 16], lockarg[64];
};

static int engine_cmd_build(const struct start_req *r, struct engine_cmd *c)
{
    c->argv = calloc(32 + r->n, sizeof *c->argv);
    if (!c->argv)
        return START_REFUSED;
    snprintf(c->namearg, sizeof c->namearg, "name=%s", r->name);
    snprintf(c->dirarg, sizeof c->dirarg, "run_dir=%s", r->dir);
    snprintf(c->lockarg, sizeof c->lockarg, "lock=%s", r->lock);
    c->argv[c->k++] = (char *)r->nbdkit;
    c->argv[c->k++] = (char *)"--foreground";
    c->argv[c->k++] = (char *)"--log=stderr";
    if (getenv("CLRAID_NBDKIT_VERBOSE"))
        c->argv[c->k++] = (char *)"--verbose";
    if (r->ex.tcp) {
        c->argv[c->k++] = (char *)"--ipaddr";
        c->argv[c->k++] = (char *)r->ex.addr;
        c->argv[c->k++] = (char *)"--port";
        c->argv[c->k++] = (char *)r->ex.port;
        c->argv[c->k++] = (char *)(r->ex.tls == TLS_OFF ? "--tls=off" : "--tls=require");
        if (r->ex.tlsarg[0])
            c->argv[c->k++] = (char *)r->ex.tlsarg;
        if (r->ex.verify_peer)
            c->argv[c->k++] = (char *)"--tls-verify-peer";
    } else {
        c->argv[c->k++] = (char *)"--unix";
        c->argv[c->k++] = (char *)r->sock;
    }
    c->argv[c->k++] = (char *)"--pidfile";
    c->argv[c->k++] = (char *)r->pidf;
    c->argv[c->k++] = (char *)r->plugin;
    c->argv[c->k++] = c->namearg;
    c->argv[c->k++] = c->dirarg;
    c->argv[c->k++] = c->lockarg;
    c->argv[c->k++] = (char *)(r->buffered ? "buffered=true" : "buffered=false");
    c->argv[c->k++] = (char *)(r->skip_stale ? "skip_stale=true" : "skip_stale=false");
    c->argv[c->k++] = (char *)(r->all_dirty ? "bitmap=all-dirty" : "bitmap=normal");
    c->argv[c->k++] = (char *)r->ex.exportarg;
    c->kdev = c->k;
    for (unsigned i = 0; i < r->n; i++) {
        c->argv[c->k] = malloc(strlen(r->devs[i]) + 8);
        if (!c->argv[c->k])
            return START_REFUSED;
        sprintf(c->argv[c->k++], "device=%s", r->devs[i]);
    }
    c->argv[c->k] = NULL;
    return START_OK;
}

static void engine_cmd_free(struct engine_cmd *c)
{
    if (c->argv)
        for (unsigned i = c->kdev; c->kdev && i < c->k; i++)
            free(c->argv[i]);
    free(c->argv);
}

/* Waits until the engine (monitor @pid) answers on its control socket;
 * stops it if it does not answer in time. */
static int start_wait_engine(const struct start_req *r, pid_t pid)
{
    long long deadline = now_ms() + START_TIMEOUT_S * 1000LL;
    char msg[1024];

    for (;;) {
        struct clr_err e = { "" };
        json_object *st = NULL;
        int status;

        if (waitpid(pid, &status, WNOHANG) == pid) {
            last_error_line(r->log, msg, sizeof msg);
            clr_cli_error("start", "%s: the engine failed to start: %s (log: %s)", r->name, msg, r->log);
            return START_REFUSED;
        }
        if (access(r->ctl, F_OK) == 0 && clr_ctl_call(r->ctl, "status", NULL, 2000, &st, &e) == 0) {
            json_object *state = clr_json_path(st, "state");

            printf("started array '%s' (%s): %s (pid %ld)\n", r->name,
                   state ? json_object_get_string(state) : "?", r->ex.uri,
                   (long)clr_run_pid(r->dir, r->name));
            json_object_put(st);
            return START_OK;
        }
        if (now_ms() > deadline) {
            kill(-pid, SIGTERM); /* the monitor's session: it and nbdkit */
            clr_cli_error("start", "%s: the engine did not answer within %d s; stopped it (log: %s)", r->name,
                          START_TIMEOUT_S, r->log);
            return START_REFUSED;
        }
        usleep(50 * 1000);
    }
}

/* Step 7 (start): run the engine in the background and wait for it. */
static int start_engine(const struct start_req *r)
{
    struct engine_cmd c = { 0 };
    int why = engine_cmd_build(r, &c);

    if (!why) {
        pid_t pid = spawn(c.argv, r->log);

        why = pid < 0 ? START_REFUSED : start_wait_engine(r, pid);
    }
    engine_cmd_free(&c);
    return why;
}

int clr_cmd_start(int argc, char **argv)
{
    struct start_req r = { .dir = CLR_RUN_DIR_DEFAULT, .lock = "local" };
    struct clr_array *a = NULL;
    int why = start_parse(argc, argv, &r);

    if (why == START_HELP)
        return 0;
    if (!why)
        why = start_resolve_devices(&r);
    if (!why)
        why = start_resolve_run_files(&r);
    if (!why)
        why = start_resolve_export(&r);
    if (!why)
        why = start_check_not_running(&r);
    if (!why)
        why = start_precheck(&r, r.dry_run ? &a : NULL);
    if (!why)
        why = start_check_engine(&r);
    if (!why)
        why = r.dry_run ? start_report_dry_run(&r, a) : start_engine(&r);
    clr_array_free(a);
    for (unsigned i = 0; r.devs && i < r.n; i++)
        free(r.devs[i]);
    free(r.devs);
    free(r.dirabs);
    free(r.ex.psk_abs);
    free(r.ex.certs_abs);
    if (r.dry_run)
        return why;
    return why ? 1 : 0;
}
