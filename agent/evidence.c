/*
 * clraid policy daemon: evidence values and the decider's facts
 * (agent/evidence.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/evidence.h"

static const char *const err_names[] = {
    [CLR_POL_ERR_NONE] = NULL,   [CLR_POL_ERR_MEDIA] = "media", [CLR_POL_ERR_PATH] = "path",
    [CLR_POL_ERR_HUNG] = "hung", [CLR_POL_ERR_RESV] = "resv",
};

static const char *const probe_names[] = {
    [CLR_POL_PROBE_NOT_RUN] = NULL,
    [CLR_POL_PROBE_PENDING] = "pending",
    [CLR_POL_PROBE_OK] = "ok",
    [CLR_POL_PROBE_FAILED] = "failed",
};

static void say(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int clr_evidence_attr_name(const char *name, char *buf, size_t len)
{
    int n = snprintf(buf, len, "clraid-%s-io", name);

    return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

/* appends; false once it no longer fits */
static bool put(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*at >= len)
        return false;
    va_start(ap, fmt);
    n = vsnprintf(buf + *at, len - *at, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len - *at)
        return false;
    *at += (size_t)n;
    return true;
}

int clr_evidence_format(const struct clr_evidence *e, char *buf, size_t len)
{
    size_t at = 0;
    unsigned nd = e->n_devs < CLR_POL_MAX_DEVS ? e->n_devs : CLR_POL_MAX_DEVS;

    if (!put(buf, len, &at, "n=%u r=%u", e->n_devs, e->redundancy))
        return -ENOSPC;
    for (unsigned d = 0; d < nd; d++)
        if (e->err[d] != CLR_POL_ERR_NONE && e->err[d] <= CLR_POL_ERR_RESV &&
            !put(buf, len, &at, " m%u=%s:%u", d, err_names[e->err[d]], (unsigned)e->errors[d]))
            return -ENOSPC;
    for (unsigned d = 0; d < nd; d++)
        if (e->media_writes[d] && !put(buf, len, &at, " w%u=%u", d, (unsigned)e->media_writes[d]))
            return -ENOSPC;
    for (unsigned d = 0; d < nd; d++)
        if (e->probe[d] != CLR_POL_PROBE_NOT_RUN && e->probe[d] <= CLR_POL_PROBE_FAILED &&
            ((e->probe[d] == CLR_POL_PROBE_FAILED || e->probe[d] == CLR_POL_PROBE_OK) && e->probe_seq[d]
                 ? !put(buf, len, &at, " p%u=%s:%u", d, probe_names[e->probe[d]], (unsigned)e->probe_seq[d])
                 : !put(buf, len, &at, " p%u=%s", d, probe_names[e->probe[d]])))
            return -ENOSPC;
    if (e->frozen && !put(buf, len, &at, " frozen"))
        return -ENOSPC;
    return 0;
}

/* a decimal number of at most @max, the whole of [s, end) */
static int number(const char *s, const char *end, unsigned long max, unsigned long *out)
{
    unsigned long v = 0;

    if (s == end || end - s > 10)
        return -EINVAL;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

static int lookup(const char *const *names, unsigned n, const char *s, size_t len)
{
    for (unsigned i = 0; i < n; i++)
        if (names[i] && strlen(names[i]) == len && !strncmp(names[i], s, len))
            return (int)i;
    return -1;
}

int clr_evidence_parse(const char *s, struct clr_evidence *e, char *err, size_t errlen)
{
    bool have_n = false, have_r = false;
    unsigned long v;

    memset(e, 0, sizeof(*e));
    if (!s) {
        say(err, errlen, "no value");
        return -EINVAL;
    }
    while (*s) {
        const char *tok, *end, *eq;
        size_t len;

        while (*s == ' ')
            s++;
        if (!*s)
            break;
        tok = s;
        end = strchr(s, ' ');
        if (!end)
            end = s + strlen(s);
        s = end;
        len = (size_t)(end - tok);
        eq = memchr(tok, '=', len);
        if (!eq) {
            if (len == 6 && !strncmp(tok, "frozen", 6))
                e->frozen = true;
            continue; /* a flag a newer daemon added */
        }
        if (eq - tok == 1 && (tok[0] == 'n' || tok[0] == 'r')) {
            if (number(eq + 1, end, CLR_POL_MAX_DEVS, &v) < 0) {
                say(err, errlen, "%.*s: want a number from 0 to %d", (int)len, tok, CLR_POL_MAX_DEVS);
                return -EINVAL;
            }
            if (tok[0] == 'n') {
                e->n_devs = (unsigned)v;
                have_n = true;
            } else {
                e->redundancy = (unsigned)v;
                have_r = true;
            }
            continue;
        }
        if (tok[0] == 'w' && eq > tok + 1) {
            unsigned long d;

            if (number(tok + 1, eq, CLR_POL_MAX_DEVS - 1, &d) < 0 || number(eq + 1, end, 65535, &v) < 0) {
                say(err, errlen, "%.*s: want wI=COUNT, I a member role from 0 to %d", (int)len, tok,
                    CLR_POL_MAX_DEVS - 1);
                return -EINVAL;
            }
            e->media_writes[d] = (uint16_t)v;
            continue;
        }
        if ((tok[0] == 'm' || tok[0] == 'p') && eq > tok + 1) {
            unsigned long d;
            const char *colon;
            int k;

            if (number(tok + 1, eq, CLR_POL_MAX_DEVS - 1, &d) < 0) {
                say(err, errlen, "%.*s: not a member role from 0 to %d", (int)len, tok, CLR_POL_MAX_DEVS - 1);
                return -EINVAL;
            }
            if (tok[0] == 'p') {
                colon = memchr(eq + 1, ':', (size_t)(end - eq - 1));
                k = lookup(probe_names, CLR_POL_PROBE_FAILED + 1, eq + 1,
                           (size_t)((colon ? colon : end) - eq - 1));
                if (k < 0 || (colon && ((k != CLR_POL_PROBE_FAILED && k != CLR_POL_PROBE_OK) ||
                                        number(colon + 1, end, 65535, &v) < 0))) {
                    say(err, errlen, "%.*s: a probe is pending, ok[:SEQ] or failed[:SEQ]", (int)len, tok);
                    return -EINVAL;
                }
                e->probe[d] = (uint8_t)k;
                e->probe_seq[d] = colon ? (uint16_t)v : 0;
                continue;
            }
            colon = memchr(eq + 1, ':', (size_t)(end - eq - 1));
            k = colon ? lookup(err_names, CLR_POL_ERR_RESV + 1, eq + 1, (size_t)(colon - eq - 1)) : -1;
            if (k < 0 || number(colon + 1, end, 65535, &v) < 0) {
                say(err, errlen, "%.*s: want mI=CLASS:COUNT, CLASS media, path, hung or resv", (int)len, tok);
                return -EINVAL;
            }
            e->err[d] = (uint8_t)k;
            e->errors[d] = (uint16_t)v;
            continue;
        }
        /* a key a newer daemon added: skipped */
    }
    if (!have_n || !have_r) {
        say(err, errlen, "no %s", have_n ? "r=REDUNDANCY" : "n=MEMBERS");
        return -EINVAL;
    }
    for (unsigned d = e->n_devs; d < CLR_POL_MAX_DEVS; d++)
        if (e->err[d] || e->probe[d] || e->media_writes[d]) {
            say(err, errlen, "role %u is past n=%u", d, e->n_devs);
            return -EINVAL;
        }
    return 0;
}

/* ---- the error window ------------------------------------------------ */

void clr_ev_hist_init(struct clr_ev_hist *h, uint64_t count, uint64_t last_ms)
{
    memset(h, 0, sizeof(*h));
    if (count) {
        h->n = 1;
        h->t[0] = last_ms;
        h->count[0] = count;
    }
}

void clr_ev_hist_add(struct clr_ev_hist *h, uint64_t now_ms, uint64_t count)
{
    uint64_t last = h->n ? h->count[h->n - 1] : h->base;

    if (count == last)
        return;
    if (count < last) { /* the engine restarted: its count with it */
        clr_ev_hist_init(h, count, now_ms);
        return;
    }
    if (h->n == CLR_EV_HIST_MAX) {
        /* merge the two oldest into the later one's time: those errors
         * now look newer, so a window counts them longer, never shorter */
        memmove(&h->t[0], &h->t[1], (CLR_EV_HIST_MAX - 1) * sizeof(h->t[0]));
        memmove(&h->count[0], &h->count[1], (CLR_EV_HIST_MAX - 1) * sizeof(h->count[0]));
        h->n--;
    }
    h->t[h->n] = now_ms;
    h->count[h->n] = count;
    h->n++;
}

uint16_t clr_ev_hist_window(const struct clr_ev_hist *h, uint64_t now_ms, uint64_t window_ms)
{
    uint64_t since = now_ms > window_ms ? now_ms - window_ms : 0;
    uint64_t before = h->base, now = h->n ? h->count[h->n - 1] : h->base;

    /* the count as it was at `since`: the last sample at or before it */
    for (unsigned i = 0; i < h->n && h->t[i] <= since; i++)
        before = h->count[i];
    if (now - before > 65535)
        return 65535;
    return (uint16_t)(now - before);
}

/* ---- the decider's facts --------------------------------------------- */

static void add_bad(char *bad, size_t badlen, const char *node, const char *why)
{
    size_t at;

    if (!bad || !badlen)
        return;
    at = strlen(bad);
    if (at + 1 < badlen)
        snprintf(bad + at, badlen - at, "%s%s: %s", at ? "; " : "", node, why);
}

/* corosync node ids are numbers; the CIB keeps them as text */
static unsigned long node_id(const char *id)
{
    char *end;
    unsigned long v = strtoul(id, &end, 10);

    return *id && !*end ? v : 0;
}

int clr_evidence_facts(const struct clr_cib_facts *cf, unsigned ai, const char *self, uint64_t now_ms,
                       struct clr_ev_state *st, struct clr_pol_facts *out, char *bad, size_t badlen)
{
    const struct clr_cib_array *a = &cf->array[ai];
    unsigned active = 0, me = CLR_POL_MAX_NODES, lowest = CLR_POL_MAX_NODES;
    unsigned long lowest_id = 0;
    uint64_t reported = 0;
    bool frozen = false;

    memset(out, 0, sizeof(*out));
    if (bad && badlen)
        bad[0] = '\0';
    out->n_nodes = cf->n_nodes;
    out->quorate = cf->have_quorum;
    out->redundancy = CLR_POL_MAX_DEVS;
    for (unsigned n = 0; n < cf->n_nodes; n++) {
        const struct clr_cib_node *cn = &cf->node[n];
        struct clr_pol_node *pn = &out->node[n];
        struct clr_evidence e;
        char why[CLR_CIB_ERR_MAX];

        pn->id = (uint32_t)node_id(cn->id);
        pn->online = cn->member;
        if (!strcmp(cn->name, self))
            me = n;
        if (!a->io[n][0])
            continue;
        if (clr_evidence_parse(a->io[n], &e, why, sizeof(why)) < 0) {
            add_bad(bad, badlen, cn->name, why);
            continue;
        }
        /* a node that is not a member publishes nothing we can use: its
         * attributes are left from before it left */
        if (!cn->member)
            continue;
        pn->active = true;
        active++;
        if (lowest == CLR_POL_MAX_NODES || node_id(cn->id) < lowest_id) {
            lowest = n;
            lowest_id = node_id(cn->id);
        }
        if (e.n_devs > out->n_devs)
            out->n_devs = e.n_devs;
        if (e.redundancy < out->redundancy)
            out->redundancy = e.redundancy;
        frozen |= e.frozen;
        for (unsigned d = 0; d < e.n_devs; d++) {
            pn->err[d] = e.err[d];
            pn->errors[d] = e.errors[d];
            pn->probe[d] = e.probe[d];
            if (e.err[d] != CLR_POL_ERR_NONE)
                reported |= 1ull << d;
            if (e.err[d] == CLR_POL_ERR_MEDIA && e.errors[d] > out->dev[d].read_errors)
                out->dev[d].read_errors = e.errors[d];
            if (e.media_writes[d])
                out->dev[d].media_on_write = true;
        }
    }
    if (me == CLR_POL_MAX_NODES)
        return -ENOENT;
    out->self = me;
    if (!active) {
        memset(st, 0, sizeof(*st));
        return -ENODATA;
    }
    /* The DC decides if it runs the array (its clraid-policyd runs only
     * where an array does); else the lowest node id that runs it. */
    {
        unsigned dc = CLR_POL_MAX_NODES;

        for (unsigned n = 0; cf->dc_uuid[0] && n < cf->n_nodes; n++)
            if (!strcmp(cf->dc_uuid, cf->node[n].id) && out->node[n].active)
                dc = n;
        if (dc == CLR_POL_MAX_NODES)
            dc = lowest;
        out->decider = dc == me;
    }
    for (unsigned d = 0; d < out->n_devs; d++) {
        if (!(reported & (1ull << d))) {
            st->first_report_ms[d] = 0;
            continue;
        }
        if (!st->first_report_ms[d])
            st->first_report_ms[d] = now_ms ? now_ms : 1;
        out->dev[d].since_report_ms = now_ms - st->first_report_ms[d];
    }
    if (frozen && !st->freeze_ms)
        st->freeze_ms = now_ms ? now_ms : 1;
    else if (!frozen)
        st->freeze_ms = 0;
    out->frozen = frozen;
    out->since_freeze_ms = frozen ? now_ms - st->freeze_ms : 0;
    return 0;
}
