/* inspect.c - the admin's inspection of a namespace's rules, kept per
 * namespace name (see inspect.h): rulesets kept with their coverage while
 * their namespace is closed, and the denial rings. */
#include "server/inspect.h"

#include "server/log.h"
#include "tree/json.h"

#include <jansson.h>
#include <string.h>
#include <time.h>

/* Rulesets kept for closed namespaces at most (the oldest go first). */
#define KEPT_MAX 256

typedef struct entry {
    char *name;
    hearth__ruleset *kept; /* its namespace is closed; NULL: none */
    uint64_t kept_at;      /* order of keeping, for the oldest */
    bool tracing;
    char *ring[HEARTH__DENIALS_KEPT]; /* JSON objects; NULL: empty */
    size_t next;                      /* where the next one goes */
} entry;

struct hearth__inspect {
    entry *v;
    size_t n, cap;
    size_t ntracing, nkept;
    uint64_t clock;
};

static void entry_clear_ring(entry *e) {
    for (size_t i = 0; i < HEARTH__DENIALS_KEPT; i++) {
        hearth__free(e->ring[i]);
        e->ring[i] = NULL;
    }
    e->next = 0;
}

void hearth__inspect_free(hearth__inspect *in) {
    if (!in)
        return;
    for (size_t i = 0; i < in->n; i++) {
        hearth__free(in->v[i].name);
        hearth__ruleset_free(in->v[i].kept);
        entry_clear_ring(&in->v[i]);
    }
    hearth__free(in->v);
    hearth__free(in);
}

static entry *find(const hearth__inspect *in, const char *name) {
    for (size_t i = 0; in && i < in->n; i++)
        if (!strcmp(in->v[i].name, name))
            return &in->v[i];
    return NULL;
}

/* name's entry, made when missing; NULL without memory. */
static entry *find_or_add(hearth__server *srv, const char *name) {
    if (!srv->inspect && !(srv->inspect = hearth__calloc(1, sizeof *srv->inspect)))
        return NULL;
    hearth__inspect *in = srv->inspect;
    entry *e = find(in, name);
    if (e)
        return e;
    if (in->n == in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 8;
        entry *v = hearth__realloc(in->v, cap * sizeof *v);
        if (!v)
            return NULL;
        in->v = v;
        in->cap = cap;
    }
    e = &in->v[in->n];
    memset(e, 0, sizeof *e);
    if (!(e->name = hearth__strndup(name, strlen(name))))
        return NULL;
    in->n++;
    return e;
}

/* Drops name's entry when it keeps nothing. */
static void tidy(hearth__inspect *in, entry *e) {
    if (e->kept || e->tracing)
        return;
    hearth__free(e->name);
    entry_clear_ring(e);
    *e = in->v[--in->n];
}

static void drop_kept(hearth__inspect *in, entry *e) {
    if (!e->kept)
        return;
    hearth__ruleset_free(e->kept);
    e->kept = NULL;
    in->nkept--;
}

void hearth__inspect_closing(hearth__server *srv, hearth__namespace *ns) {
    if (!ns->ruleset)
        return;
    entry *e = find_or_add(srv, ns->name);
    if (!e)
        return; /* no memory: the counts go, as with new rules */
    hearth__inspect *in = srv->inspect;
    drop_kept(in, e);
    e->kept = ns->ruleset;
    e->kept_at = ++in->clock;
    ns->ruleset = NULL;
    if (++in->nkept <= KEPT_MAX)
        return;
    entry *oldest = NULL;
    for (size_t i = 0; i < in->n; i++)
        if (in->v[i].kept && (!oldest || in->v[i].kept_at < oldest->kept_at))
            oldest = &in->v[i];
    drop_kept(in, oldest);
    tidy(in, oldest);
}

void hearth__inspect_opened(hearth__server *srv, hearth__namespace *ns) {
    entry *e = find(srv->inspect, ns->name);
    if (!e || !e->kept)
        return;
    const char *was = hearth__ruleset_source(e->kept);
    const char *now = ns->ruleset ? hearth__ruleset_source(ns->ruleset) : NULL;
    if (was && now && !strcmp(was, now)) { /* the same rules: same counts */
        hearth__ruleset_free(ns->ruleset);
        ns->ruleset = e->kept;
        e->kept = NULL;
        srv->inspect->nkept--;
    } else {
        drop_kept(srv->inspect, e);
    }
    tidy(srv->inspect, e);
}

int hearth__inspect_set_tracing(hearth__server *srv, const char *name,
                                bool on) {
    entry *e = on ? find_or_add(srv, name) : find(srv->inspect, name);
    if (!e)
        return on ? HEARTH_ENOMEM : 0;
    if (e->tracing != on)
        srv->inspect->ntracing += on ? 1 : (size_t)-1;
    e->tracing = on;
    if (!on) {
        entry_clear_ring(e);
        tidy(srv->inspect, e);
    }
    return 0;
}

bool hearth__inspect_tracing(const hearth__server *srv, const char *name) {
    const entry *e = find(srv->inspect, name);
    return e && e->tracing;
}

char *hearth__inspect_denials_json(const hearth__server *srv,
                                   const char *name) {
    const entry *e = find(srv->inspect, name);
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_printf(&b, "{\"tracing\":%s,\"denials\":[",
                       e && e->tracing ? "true" : "false");
    size_t written = 0;
    for (size_t i = 0; e && i < HEARTH__DENIALS_KEPT; i++) {
        const char *d = e->ring[(e->next + i) % HEARTH__DENIALS_KEPT];
        if (!d)
            continue;
        if (written++)
            hearth__buf_addc(&b, ',');
        hearth__buf_adds(&b, d);
    }
    hearth__buf_adds(&b, "]}");
    return hearth__buf_detach(&b, NULL);
}

/* The ring of ns when it traces, else NULL: the cost when off. */
static entry *tracing_entry(hearth__server *srv, const hearth__namespace *ns) {
    if (!srv->inspect || !srv->inspect->ntracing)
        return NULL;
    entry *e = find(srv->inspect, ns->name);
    return e && e->tracing ? e : NULL;
}

/* Keeps one denial: {"time", "door", "op", "paths", "identity", "rules"},
 * in the ring and, with JSON logs, as a log line. */
static void keep(hearth__server *srv, const hearth__namespace *ns, entry *e,
                 const char *door,
                 const char *op, const char *const *paths, size_t n,
                 const hearth_node_t *auth, hearth__buf *trace) {
    int64_t ms = hearth_now_ms();
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    char when[32];
    gmtime_r(&s, &tm);
    size_t len = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + len, sizeof when - len, ".%03dZ", (int)(ms % 1000));
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_printf(&b, "{\"time\":\"%s\",\"door\":", when);
    const char *d = door ? door : "unknown";
    hearth__json_write_string(&b, d, strlen(d));
    hearth__buf_printf(&b, ",\"op\":\"%s\",\"paths\":[", op);
    for (size_t i = 0; i < n; i++) {
        if (i)
            hearth__buf_addc(&b, ',');
        hearth__json_write_string(&b, paths[i], strlen(paths[i]));
    }
    /* Who: the rules' auth (uid and claims; the token itself is never
     * kept), or null for nobody. */
    hearth__buf_adds(&b, "],\"identity\":");
    if (auth && !hearth_node_is_null(auth))
        hearth__node_write_json(&b, auth, 0);
    else
        hearth__buf_adds(&b, "null");
    hearth__buf_adds(&b, ",\"rules\":");
    if (!trace->failed && trace->len)
        hearth__buf_add(&b, trace->data, trace->len);
    else
        hearth__buf_adds(&b, "[]");
    hearth__buf_addc(&b, '}');
    char *text = hearth__buf_detach(&b, NULL);
    if (!text)
        return;
    hearth__log_denial(srv, ns->name, text);
    hearth__free(e->ring[e->next]);
    e->ring[e->next] = text;
    e->next = (e->next + 1) % HEARTH__DENIALS_KEPT;
}

void hearth__inspect_read_denied(hearth__server *srv, hearth__namespace *ns,
                                 const hearth__principal *p, const char *path,
                                 const hearth_node_t *query) {
    entry *e = tracing_entry(srv, ns);
    hearth__path parsed;
    if (!e || !ns->ruleset ||
        hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &parsed, NULL))
        return;
    hearth__access a = {p->auth, (double)hearth_now_ms(),
                        hearth__db_root(ns->db), query};
    hearth__buf trace;
    hearth__buf_init(&trace);
    hearth__ruleset_trace_read(ns->ruleset, &parsed, &a, &trace);
    keep(srv, ns, e, p->door, "read", &path, 1, p->auth, &trace);
    hearth__buf_free(&trace);
}

void hearth__inspect_write_denied(hearth__server *srv, hearth__namespace *ns,
                                  const char *door, const hearth_node_t *auth,
                                  const hearth__path *const *paths, size_t n,
                                  const hearth_node_t *old_root,
                                  const hearth_node_t *new_root, double now) {
    entry *e = tracing_entry(srv, ns);
    if (!e || !ns->ruleset || n > 64)
        return;
    hearth__access a = {auth, now, old_root, NULL};
    hearth__buf trace;
    hearth__buf_init(&trace);
    hearth__ruleset_trace_write(ns->ruleset, paths, n, new_root, &a, &trace);
    char *texts[64];
    size_t k = 0;
    for (; k < n; k++) {
        hearth__buf p;
        hearth__buf_init(&p);
        for (unsigned i = 0; i < paths[k]->n; i++) {
            hearth__buf_addc(&p, '/');
            hearth__buf_add(&p, paths[k]->seg[i].s, paths[k]->seg[i].len);
        }
        if (!p.len)
            hearth__buf_addc(&p, '/');
        if (!(texts[k] = hearth__buf_detach(&p, NULL)))
            break;
    }
    if (k == n)
        keep(srv, ns, e, door, "write", (const char *const *)texts, n, auth,
             &trace);
    for (size_t i = 0; i < k; i++)
        hearth__free(texts[i]);
    hearth__buf_free(&trace);
}
