/*
 * clraid policy daemon: the CIB read as facts (agent/cib_facts.h).
 * libxml2 and XPath over the whole document; the daemon hands us the CIB
 * as it is after every change, so nothing here keeps state.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "agent/cib_facts.h"

const char *const clr_cib_policy_params[] = {
    "path_failure_action", "last_device_action", "fence_action", "freeze_timeout",
    "confirm_timeout",     "probe_timeout",      "io_timeout",   "error_threshold",
    "error_window",        "max_read_errors",    NULL,
};

static void say(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

/* Pacemaker's booleans (crm_str_to_boolean): true, on, yes, y, 1. */
static bool pcmk_true(const char *v)
{
    return v && (!strcasecmp(v, "true") || !strcasecmp(v, "on") || !strcasecmp(v, "yes") ||
                 !strcasecmp(v, "y") || !strcmp(v, "1"));
}

/* node_state's in_ccm and crmd: "true"/"online" in Pacemaker 2.1.5, the
 * time it joined (a number, "0" for not) in later versions. */
static bool state_up(const char *v)
{
    char *end;
    unsigned long long t;

    if (!v || !*v)
        return false;
    if (!strcmp(v, "true") || !strcmp(v, "online"))
        return true;
    t = strtoull(v, &end, 10);
    return *end == '\0' && t > 0;
}

/* A time: a number with an optional unit (ms, s, m/min, h); no unit
 * means seconds, as Pacemaker's intervals. */
static int parse_ms(const char *v, uint64_t *ms)
{
    char *end;
    unsigned long long n;
    uint64_t mul;

    if (!v || !*v || *v == '-')
        return -EINVAL;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (errno || end == v)
        return -EINVAL;
    while (*end == ' ')
        end++;
    if (!*end || !strcmp(end, "s") || !strcmp(end, "sec"))
        mul = 1000;
    else if (!strcmp(end, "ms") || !strcmp(end, "msec"))
        mul = 1;
    else if (!strcmp(end, "m") || !strcmp(end, "min"))
        mul = 60000;
    else if (!strcmp(end, "h") || !strcmp(end, "hr"))
        mul = 3600000;
    else
        return -EINVAL;
    if (n > UINT64_MAX / mul / 2)
        return -EINVAL;
    *ms = (uint64_t)n * mul;
    return 0;
}

static int parse_u32(const char *v, uint32_t *out)
{
    char *end;
    unsigned long long n;

    if (!v || !*v || *v == '-')
        return -EINVAL;
    errno = 0;
    n = strtoull(v, &end, 10);
    if (errno || *end || n > UINT32_MAX)
        return -EINVAL;
    *out = (uint32_t)n;
    return 0;
}

int clr_cib_policy_param(struct clr_pol_settings *s, const char *name, const char *value, char *err,
                         size_t errlen)
{
    uint64_t *t = NULL;
    uint32_t *u = NULL;

    if (!strcmp(name, "path_failure_action")) {
        if (!strcmp(value, "fence"))
            s->path_failure_action = CLR_POL_PATH_FENCE;
        else if (!strcmp(value, "fail-disk"))
            s->path_failure_action = CLR_POL_PATH_FAIL_DISK;
        else if (!strcmp(value, "ignore"))
            s->path_failure_action = CLR_POL_PATH_IGNORE;
        else
            goto bad_word;
        return 1;
    }
    if (!strcmp(name, "last_device_action")) {
        if (!strcmp(value, "freeze"))
            s->last_device_action = CLR_POL_LAST_FREEZE;
        else if (!strcmp(value, "error"))
            s->last_device_action = CLR_POL_LAST_ERROR;
        else if (!strcmp(value, "fence"))
            s->last_device_action = CLR_POL_LAST_FENCE;
        else
            goto bad_word;
        return 1;
    }
    if (!strcmp(name, "fence_action")) {
        if (!strcmp(value, "reboot"))
            s->fence_action = CLR_POL_FENCE_REBOOT;
        else if (!strcmp(value, "off"))
            s->fence_action = CLR_POL_FENCE_OFF;
        else
            goto bad_word;
        return 1;
    }
    if (!strcmp(name, "freeze_timeout"))
        t = &s->freeze_timeout;
    else if (!strcmp(name, "confirm_timeout"))
        t = &s->confirm_timeout;
    else if (!strcmp(name, "probe_timeout"))
        t = &s->probe_timeout;
    else if (!strcmp(name, "io_timeout"))
        t = &s->io_timeout;
    else if (!strcmp(name, "error_window"))
        t = &s->error_window;
    else if (!strcmp(name, "error_threshold"))
        u = &s->error_threshold;
    else if (!strcmp(name, "max_read_errors"))
        u = &s->max_read_errors;
    else
        return 0;
    if (t && parse_ms(value, t) < 0) {
        say(err, errlen, "%s=%s: give a time such as 15s, 500ms, 2m or 1h", name, value);
        return -EINVAL;
    }
    if (u && parse_u32(value, u) < 0) {
        say(err, errlen, "%s=%s: give a whole number from 0 to 4294967295", name, value);
        return -EINVAL;
    }
    return 1;
bad_word:
    say(err, errlen, "%s=%s: use %s", name, value,
        !strcmp(name, "path_failure_action")  ? "fence, fail-disk or ignore"
        : !strcmp(name, "last_device_action") ? "freeze, error or fence"
                                              : "reboot or off");
    return -EINVAL;
}

static xmlXPathObjectPtr xp(xmlXPathContextPtr c, xmlNodePtr at, const char *expr)
{
    xmlXPathObjectPtr o;

    c->node = at;
    o = xmlXPathEvalExpression((const xmlChar *)expr, c);
    if (o && o->type != XPATH_NODESET) {
        xmlXPathFreeObject(o);
        return NULL;
    }
    return o;
}

static int count(xmlXPathObjectPtr o)
{
    return o && o->nodesetval ? o->nodesetval->nodeNr : 0;
}

static const char *attr(xmlNodePtr n, const char *name)
{
    xmlAttrPtr a = xmlHasProp(n, (const xmlChar *)name);

    return a && a->children && a->children->content ? (const char *)a->children->content : NULL;
}

/* The value of the first nvpair named @name under @at (XPath @expr
 * selects the nvpairs), or NULL. */
static const char *nvpair(xmlXPathContextPtr c, xmlNodePtr at, const char *expr, const char *name)
{
    xmlXPathObjectPtr o = xp(c, at, expr);
    const char *v = NULL;

    for (int i = 0; i < count(o) && !v; i++) {
        const char *nm = attr(o->nodesetval->nodeTab[i], "name");

        if (nm && !strcmp(nm, name))
            v = attr(o->nodesetval->nodeTab[i], "value");
    }
    xmlXPathFreeObject(o);
    return v;
}

static void read_nodes(xmlXPathContextPtr c, xmlNodePtr root, struct clr_cib_facts *f)
{
    xmlXPathObjectPtr o = xp(c, root, "configuration/nodes/node");

    for (int i = 0; i < count(o); i++) {
        xmlNodePtr n = o->nodesetval->nodeTab[i];
        struct clr_cib_node *cn;
        const char *t;

        if (f->n_nodes == CLR_POL_MAX_NODES) {
            f->nodes_dropped++;
            continue;
        }
        t = attr(n, "type");
        if (t && strcmp(t, "member") && strcmp(t, "normal"))
            continue; /* remote and guest nodes run no engine */
        cn = &f->node[f->n_nodes++];
        copy(cn->name, sizeof(cn->name), attr(n, "uname"));
        copy(cn->id, sizeof(cn->id), attr(n, "id"));
        cn->standby = pcmk_true(nvpair(c, n, "instance_attributes/nvpair", "standby"));
        cn->maintenance = pcmk_true(nvpair(c, n, "instance_attributes/nvpair", "maintenance"));
    }
    xmlXPathFreeObject(o);
    o = xp(c, root, "status/node_state");
    for (int i = 0; i < count(o); i++) {
        xmlNodePtr n = o->nodesetval->nodeTab[i];
        const char *id = attr(n, "id");
        const char *join = attr(n, "join");

        for (unsigned k = 0; id && k < f->n_nodes; k++) {
            struct clr_cib_node *cn = &f->node[k];

            if (strcmp(cn->id, id))
                continue;
            cn->in_ccm = state_up(attr(n, "in_ccm"));
            cn->online = state_up(attr(n, "crmd"));
            cn->member = cn->in_ccm && cn->online && join && !strcmp(join, "member");
        }
    }
    xmlXPathFreeObject(o);
}

/* Every node's evidence attribute for @a (agent/evidence.h): transient
 * node attributes live in the status section, under the node's
 * node_state. */
static void read_evidence(xmlXPathContextPtr c, xmlNodePtr p, const struct clr_cib_facts *f,
                          struct clr_cib_array *a)
{
    char want[CLR_CIB_NAME_MAX + 16], want_p[CLR_CIB_NAME_MAX + 16], want_d[CLR_CIB_NAME_MAX + 16];
    xmlXPathObjectPtr o;
    xmlNodePtr root = p;

    if (!a->name[0])
        return;
    snprintf(want, sizeof(want), "clraid-%s-io", a->name);
    snprintf(want_p, sizeof(want_p), "clraid-%s-pending", a->name);
    snprintf(want_d, sizeof(want_d), "clraid-%s-decision", a->name);
    while (root->parent && root->parent->type == XML_ELEMENT_NODE)
        root = root->parent;
    o = xp(c, root, "status/node_state");
    for (int i = 0; i < count(o); i++) {
        xmlNodePtr n = o->nodesetval->nodeTab[i];
        const char *id = attr(n, "id"), *v;

        for (unsigned k = 0; id && k < f->n_nodes; k++) {
            if (strcmp(f->node[k].id, id))
                continue;
            v = nvpair(c, n, "transient_attributes/instance_attributes/nvpair", want);
            copy(a->io[k], sizeof(a->io[k]), v);
            v = nvpair(c, n, "transient_attributes/instance_attributes/nvpair", want_p);
            copy(a->pending[k], sizeof(a->pending[k]), v);
            v = nvpair(c, n, "transient_attributes/instance_attributes/nvpair", want_d);
            copy(a->decision[k], sizeof(a->decision[k]), v);
        }
    }
    xmlXPathFreeObject(o);
}

static void read_array(xmlXPathContextPtr c, xmlNodePtr p, struct clr_cib_facts *f)
{
    struct clr_cib_array *a;
    xmlXPathObjectPtr o;
    const char *why = NULL;

    if (f->n_arrays == CLR_CIB_MAX_ARRAYS) {
        f->arrays_dropped++;
        return;
    }
    a = &f->array[f->n_arrays++];
    memset(a, 0, sizeof(*a));
    copy(a->rsc, sizeof(a->rsc), attr(p, "id"));
    a->cloned = p->parent && p->parent->name &&
                (!xmlStrcmp(p->parent->name, (const xmlChar *)"clone") ||
                 !xmlStrcmp(p->parent->name, (const xmlChar *)"master"));
    clr_policy_settings_default(&a->settings);
    o = xp(c, p, "instance_attributes/nvpair");
    for (int i = 0; i < count(o); i++) {
        const char *nm = attr(o->nodesetval->nodeTab[i], "name");
        const char *v = attr(o->nodesetval->nodeTab[i], "value");
        char e[CLR_CIB_ERR_MAX];

        if (!nm || !v)
            continue;
        if (!strcmp(nm, "name")) {
            copy(a->name, sizeof(a->name), v);
            continue;
        }
        if (!strcmp(nm, "run_dir")) {
            copy(a->run_dir, sizeof(a->run_dir), v);
            continue;
        }
        if (clr_cib_policy_param(&a->settings, nm, v, e, sizeof(e)) < 0 && !a->error[0])
            copy(a->error, sizeof(a->error), e);
    }
    xmlXPathFreeObject(o);
    if (!a->run_dir[0])
        copy(a->run_dir, sizeof(a->run_dir), "/run/clraid"); /* the agent's default */
    read_evidence(c, p, f, a);
    if (!a->error[0] && clr_policy_settings_check(&a->settings, &why) < 0)
        copy(a->error, sizeof(a->error), why);
    if (a->error[0])
        clr_policy_settings_default(&a->settings);
}

int clr_cib_facts_read(xmlNodePtr root, struct clr_cib_facts *out, char *err, size_t errlen)
{
    xmlXPathContextPtr c;
    xmlXPathObjectPtr o;
    const char *v;

    memset(out, 0, sizeof(*out));
    if (!root || root->type != XML_ELEMENT_NODE || xmlStrcmp(root->name, (const xmlChar *)"cib")) {
        say(err, errlen, "not a CIB: the root element is <%s>, not <cib>",
            root && root->name ? (const char *)root->name : "");
        return -EINVAL;
    }
    /* every path below is relative to <cib>: @root need not be its
     * document's root element */
    c = xmlXPathNewContext(root->doc);
    if (!c) {
        say(err, errlen, "out of memory reading the CIB");
        return -ENOMEM;
    }
    out->have_quorum = pcmk_true(attr(root, "have-quorum"));
    copy(out->dc_uuid, sizeof(out->dc_uuid), attr(root, "dc-uuid"));
    v = nvpair(c, root, "configuration/crm_config/cluster_property_set/nvpair", "stonith-enabled");
    out->stonith_enabled = !v || pcmk_true(v);
    o = xp(c, root, "configuration/resources//primitive[@class='stonith']");
    out->fence_devices = (unsigned)count(o);
    xmlXPathFreeObject(o);
    read_nodes(c, root, out);
    o = xp(c, root, "configuration/resources//primitive[@class='ocf'][@provider='clraid'][@type='clraid']");
    for (int i = 0; i < count(o); i++)
        read_array(c, o->nodesetval->nodeTab[i], out);
    xmlXPathFreeObject(o);
    xmlXPathFreeContext(c);
    return 0;
}

int clr_cib_facts_parse(const char *xml, size_t len, struct clr_cib_facts *out, char *err, size_t errlen)
{
    xmlDocPtr doc;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!xml || len > (size_t)INT32_MAX) {
        say(err, errlen, "no CIB to read");
        return -EINVAL;
    }
    doc = xmlReadMemory(xml, (int)len, "cib.xml", NULL,
                        XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!doc) {
        say(err, errlen, "the CIB is not well-formed XML");
        return -EINVAL;
    }
    rc = clr_cib_facts_read(xmlDocGetRootElement(doc), out, err, errlen);
    xmlFreeDoc(doc);
    return rc;
}

const struct clr_cib_node *clr_cib_node_find(const struct clr_cib_facts *f, const char *name)
{
    for (unsigned i = 0; i < f->n_nodes; i++)
        if (!strcmp(f->node[i].name, name))
            return &f->node[i];
    return NULL;
}
