/* engine.c - the triggers of a server: their registry, the taps on the
 * namespaces' databases that turn committed writes into events, and what
 * the admin and the metrics see of them (loop thread). */
#include "triggers/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SPOOL_MAX_BYTES (1ull << 30) /* a trigger's queue: events past it drop */
#define DEAD_MAX_BYTES (256ull << 20)
#define EVENTS_PER_WRITE_MAX 10000 /* one write's events for one trigger */

struct hearth__triggers {
    char *dir, *db_host, *location;
    hearth__trigger **v; /* registered; retired ones are gone from here */
    size_t n, cap;
    uint64_t next_id;
};

/* An event made from an applied write, waiting for its commit. */
typedef struct pending {
    hearth__trigger *t; /* a reference */
    char *body;
    size_t len;
    uint64_t time_us;
} pending;

/* The tap on one namespace's database. */
typedef struct ns_tap {
    hearth__triggers *eng;
    char *ns;
    pending *v;
    size_t n, cap;
    size_t sealed; /* v[0..sealed) are the commit in flight's */
} ns_tap;

static uint64_t wall_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static hearth__trigger *find(hearth__triggers *e, const char *name,
                             size_t *at) {
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->v[i]->name, name) == 0) {
            if (at)
                *at = i;
            return e->v[i];
        }
    return NULL;
}

/* ---- the spool of an event whose commit held ---- */

/* The trigger an event goes to: its own, or, when that was replaced
 * meanwhile, the new one of its name (NULL: removed). */
static hearth__trigger *live(hearth__triggers *e, hearth__trigger *t) {
    return t->retired ? find(e, t->name, NULL) : t;
}

static void report_drop(hearth__trigger *t, size_t n, int rc) {
    if (atomic_fetch_add(&t->dropped, n) == 0 || rc != HEARTH_ETOOBIG)
        fprintf(stderr,
                "hearth: trigger %s: %zu event(s) dropped: %s (its queue "
                "holds %" PRIu64 " bytes)\n",
                t->name, n,
                rc == HEARTH_ETOOBIG ? "the queue is full" : hearth_strerror(rc),
                hearth__spool_bytes(t->spool));
}

/* Adds p to its trigger's events of this commit. */
static void stage(hearth__triggers *e, const pending *p) {
    hearth__trigger *t = live(e, p->t);
    if (!t)
        return;
    hearth__spool_frame(&t->staged, p->body, p->len, p->time_us);
    t->nstaged++;
}

/* Writes each trigger's staged events to its spool (one write each), and
 * wakes its deliverer. */
static void flush_staged(hearth__triggers *e) {
    for (size_t i = 0; i < e->n; i++) {
        hearth__trigger *t = e->v[i];
        if (!t->nstaged)
            continue;
        int rc = t->staged.failed
                     ? HEARTH_ENOMEM
                     : hearth__spool_append_frames(t->spool, t->staged.data,
                                                   t->staged.len, t->nstaged);
        if (rc) {
            report_drop(t, t->nstaged, rc);
        } else {
            atomic_fetch_add(&t->spooled, t->nstaged);
            hearth__deliverer_kick(t);
        }
        t->staged.len = 0;
        t->staged.failed = false;
        t->nstaged = 0;
    }
}

static void spool_event(hearth__triggers *e, pending *p) {
    stage(e, p);
    flush_staged(e);
}

static void drop_pending(pending *p) {
    hearth__free(p->body);
    hearth__trigger_release(p->t);
}

/* ---- the tap ---- */

/* The CloudEvents one write has built lately, by location and type:
 * triggers that fire for the same change send the same event (one id,
 * as Eventarc sends one event to each of its subscribers), built once. */
#define MEMO_SLOTS 8
typedef struct memo {
    struct {
        char *path;
        const char *type;
        char *body;
        size_t len;
    } slot[MEMO_SLOTS];
    unsigned next;
} memo;

static void memo_clear(memo *m) {
    for (unsigned i = 0; i < MEMO_SLOTS; i++) {
        hearth__free(m->slot[i].path);
        hearth__free(m->slot[i].body);
    }
}

/* A copy of the body memoized for (path, type), or NULL. */
static char *memo_find(const memo *m, const char *path, const char *type,
                       size_t *len) {
    for (unsigned i = 0; m && i < MEMO_SLOTS; i++)
        if (m->slot[i].type == type && strcmp(m->slot[i].path, path) == 0) {
            *len = m->slot[i].len;
            return hearth__strndup(m->slot[i].body, m->slot[i].len);
        }
    return NULL;
}

static void memo_keep(memo *m, const char *path, const char *type,
                      const char *body, size_t len) {
    if (!m)
        return;
    unsigned i = m->next++ % MEMO_SLOTS;
    char *p = hearth__strndup(path, strlen(path));
    char *b = hearth__strndup(body, len);
    if (!p || !b) {
        hearth__free(p);
        hearth__free(b);
        return;
    }
    hearth__free(m->slot[i].path);
    hearth__free(m->slot[i].body);
    m->slot[i].path = p;
    m->slot[i].type = type;
    m->slot[i].body = b;
    m->slot[i].len = len;
}

typedef struct firing {
    ns_tap *tap;
    hearth__trigger *t;
    bool judged;
    const hearth_node_t *auth;
    int64_t now_ms;
    bool durable_later;
    memo *memo; /* NULL when one trigger only may fire */
} firing;

/* The event's body for t: a CloudEvent (memoized), or a webhook. */
static char *build(firing *f, const char *path, const hearth_node_t *before,
                   const hearth_node_t *after, size_t *len) {
    hearth__trigger *t = f->t;
    hearth__triggers *e = f->tap->eng;
    char *body = t->format == HEARTH__FORMAT_CLOUDEVENT
                     ? memo_find(f->memo, path, t->type, len)
                     : NULL;
    if (body)
        return body;
    char id[64];
    snprintf(id, sizeof id, "%" PRIx64 "-%" PRIu64, wall_us(), e->next_id++);
    hearth__trigger_change c = {id,    f->tap->ns, path,    before,
                                after, f->judged,  f->auth, f->now_ms};
    if (t->format != HEARTH__FORMAT_CLOUDEVENT)
        return hearth__trigger_webhook(&c, t->name, &t->ref, len);
    body = hearth__trigger_cloudevent(&c, t->type, e->db_host, e->location,
                                      len);
    if (body)
        memo_keep(f->memo, path, t->type, body, *len);
    return body;
}

static int fire(void *ctx, const char *path, const hearth_node_t *before,
                const hearth_node_t *after) {
    firing *f = ctx;
    ns_tap *tap = f->tap;
    hearth__trigger *t = f->t;
    if (!(hearth__trigger_change_kind(before, after) & t->mask))
        return 0;
    pending p = {t, NULL, 0, (uint64_t)f->now_ms * 1000u};
    p.body = build(f, path, before, after, &p.len);
    if (!p.body) {
        atomic_fetch_add(&t->dropped, 1);
        return 0;
    }
    atomic_fetch_add(&t->refs, 1);
    if (!f->durable_later) { /* in memory: the write stands now */
        spool_event(tap->eng, &p);
        drop_pending(&p);
        return 0;
    }
    if (tap->n == tap->cap) {
        size_t cap = tap->cap ? tap->cap * 2 : 16;
        pending *v = hearth__realloc(tap->v, cap * sizeof *v);
        if (!v) {
            atomic_fetch_add(&t->dropped, 1);
            drop_pending(&p);
            return 0;
        }
        tap->v = v;
        tap->cap = cap;
    }
    tap->v[tap->n++] = p;
    return 0;
}

static void on_applied(void *ctx, const hearth_node_t *old_root,
                       const hearth_node_t *new_root,
                       const hearth__path *const *paths, size_t n, bool judged,
                       const hearth_node_t *auth, bool durable_later) {
    ns_tap *tap = ctx;
    hearth__triggers *e = tap->eng;
    size_t here = 0;
    for (size_t i = 0; i < e->n && here < 2; i++)
        here += hearth__pattern_matches_name(&e->v[i]->instance, tap->ns);
    memo m = {0};
    int64_t now = hearth_now_ms();
    for (size_t i = 0; i < e->n; i++) {
        hearth__trigger *t = e->v[i];
        if (!hearth__pattern_matches_name(&t->instance, tap->ns))
            continue;
        firing f = {tap, t,   judged, auth, now, durable_later,
                    here > 1 ? &m : NULL};
        bool more = false;
        hearth__trigger_locations(&t->ref, old_root, new_root, paths, n,
                                  EVENTS_PER_WRITE_MAX, &more, fire, &f);
        if (more && atomic_fetch_add(&t->dropped, 1) == 0)
            fprintf(stderr,
                    "hearth: trigger %s: a write in %s changed more than %d "
                    "matching locations; the events past them are dropped\n",
                    t->name, tap->ns, EVENTS_PER_WRITE_MAX);
    }
    memo_clear(&m);
}

static void on_sealed(void *ctx) {
    ns_tap *tap = ctx;
    tap->sealed = tap->n;
}

static void on_settled(void *ctx, int rc) {
    ns_tap *tap = ctx;
    size_t upto = rc ? tap->n : tap->sealed; /* failed: all are undone */
    tap->sealed = 0;
    if (!upto)
        return;
    for (size_t i = 0; i < upto; i++) {
        if (!rc)
            stage(tap->eng, &tap->v[i]);
        drop_pending(&tap->v[i]);
    }
    if (!rc)
        flush_staged(tap->eng);
    memmove(tap->v, tap->v + upto, (tap->n - upto) * sizeof *tap->v);
    tap->n -= upto;
}

static void tap_free(void *ctx) {
    ns_tap *tap = ctx;
    for (size_t i = 0; i < tap->n; i++)
        drop_pending(&tap->v[i]);
    hearth__free(tap->v);
    hearth__free(tap->ns);
    hearth__free(tap);
}

static const hearth__db_tap TAP = {on_applied, on_sealed, on_settled};

void hearth__triggers_attach(hearth__triggers *e, const char *ns,
                             hearth_db_t *db) {
    ns_tap *tap = hearth__calloc(1, sizeof *tap);
    if (tap)
        tap->ns = hearth__strndup(ns, strlen(ns));
    if (!tap || !tap->ns) {
        fprintf(stderr, "hearth: no memory to watch namespace %s for "
                        "triggers\n", ns);
        hearth__free(tap);
        return;
    }
    tap->eng = e;
    hearth__db_set_tap(db, &TAP, tap, tap_free);
}

/* ---- registry ---- */

static void retire(hearth__trigger *t) {
    hearth__deliverer_stop(t);
    t->retired = true;
    hearth__trigger_release(t);
}

/* The spools and the deliverer of a new trigger. */
static int start(hearth__triggers *e, hearth__trigger *t,
                 hearth_error_t *err) {
    if (mkdir(e->dir, 0755) && errno != EEXIST) /* made on first need */
        return hearth__error(err, HEARTH_EIO, e->dir, "cannot create %s: %s",
                             e->dir, strerror(errno));
    size_t len = strlen(e->dir) + strlen(t->name) + 16;
    char *dir = hearth__malloc(len), *dead = hearth__malloc(len);
    int rc = dir && dead ? 0 : hearth__error_code(err, HEARTH_ENOMEM);
    if (!rc) {
        snprintf(dir, len, "%s/%s", e->dir, t->name);
        snprintf(dead, len, "%s/%s/dead", e->dir, t->name);
        rc = hearth__spool_open(dir, SPOOL_MAX_BYTES, &t->spool, err);
    }
    if (!rc)
        rc = hearth__spool_open(dead, DEAD_MAX_BYTES, &t->dead, err);
    if (!rc && (rc = hearth__deliverer_start(t)))
        hearth__error(err, rc, NULL, "trigger %s: cannot start its deliverer",
                      t->name);
    hearth__free(dir);
    hearth__free(dead);
    return rc;
}

static void save_admin(hearth__triggers *e) {
    json_t *list = json_array();
    for (size_t i = 0; list && i < e->n; i++)
        if (strcmp(e->v[i]->origin, "admin") == 0) {
            json_t *spec = json_deep_copy(e->v[i]->spec);
            if (spec && e->v[i]->secret)
                json_object_set_new(spec, "secret",
                                    json_string(e->v[i]->secret));
            json_array_append_new(list, spec);
        }
    json_t *doc = json_pack("{s:o}", "triggers", list);
    size_t len = strlen(e->dir) + 32;
    char *path = hearth__malloc(len), *tmp = hearth__malloc(len);
    if (doc && path && tmp) {
        snprintf(path, len, "%s/admin.json", e->dir);
        snprintf(tmp, len, "%s/admin.json.tmp", e->dir);
        if (json_dump_file(doc, tmp, JSON_INDENT(2)) || rename(tmp, path))
            fprintf(stderr, "hearth: cannot keep the admin's triggers in %s: "
                            "%s\n", path, strerror(errno));
    }
    json_decref(doc);
    hearth__free(path);
    hearth__free(tmp);
}

/* Adds the parsed triggers (taken over), replacing those of their names. */
static int install_all(hearth__triggers *e, hearth__trigger **fresh, size_t n,
                       hearth_error_t *err) {
    if (e->n + n > e->cap) {
        size_t cap = (e->n + n) * 2;
        hearth__trigger **v = hearth__realloc(e->v, cap * sizeof *v);
        if (!v)
            return hearth__error_code(err, HEARTH_ENOMEM);
        e->v = v;
        e->cap = cap;
    }
    bool admin = false;
    for (size_t i = 0; i < n; i++) {
        hearth__trigger *t = fresh[i];
        size_t at;
        hearth__trigger *old = find(e, t->name, &at);
        if (old) { /* its spool is closed before the new one opens it */
            retire(old);
            e->v[at] = e->v[--e->n];
        }
        admin |= strcmp(t->origin, "admin") == 0 ||
                 (old && strcmp(old->origin, "admin") == 0);
        int rc = start(e, t, err);
        if (rc) {
            for (size_t k = i; k < n; k++)
                hearth__trigger_release(fresh[k]);
            return rc;
        }
        e->v[e->n++] = t;
    }
    if (admin)
        save_admin(e);
    return 0;
}

int hearth__triggers_register_one(hearth__triggers *e, const char *name,
                                  json_t *spec, const char *origin,
                                  hearth_error_t *err) {
    hearth__trigger *t;
    int rc = hearth__trigger_parse(name, spec, origin, &t, err);
    return rc ? rc : install_all(e, &t, 1, err);
}

int hearth__triggers_register(hearth__triggers *e, const char *json,
                              size_t len, const char *origin,
                              hearth_error_t *err) {
    json_error_t jerr;
    json_t *doc = json_loadb(json, len, 0, &jerr);
    if (!doc)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "triggers: invalid JSON at line %d: %s", jerr.line,
                             jerr.text);
    json_t *list = json_is_object(doc) ? json_object_get(doc, "triggers") : doc;
    if (json_is_object(doc) && json_object_size(doc) != 1)
        list = NULL;
    if (!json_is_array(list)) {
        json_decref(doc);
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "triggers: expected {\"triggers\": [...]} or an "
                             "array of registrations");
    }
    size_t n = json_array_size(list);
    hearth__trigger **fresh = hearth__calloc(n ? n : 1, sizeof *fresh);
    int rc = fresh ? 0 : hearth__error_code(err, HEARTH_ENOMEM);
    size_t parsed = 0;
    for (; !rc && parsed < n; parsed++) {
        rc = hearth__trigger_parse(NULL, json_array_get(list, parsed), origin,
                                   &fresh[parsed], err);
        for (size_t k = 0; !rc && k < parsed; k++)
            if (strcmp(fresh[k]->name, fresh[parsed]->name) == 0) {
                hearth__trigger_release(fresh[parsed]);
                rc = hearth__error(err, HEARTH_EINVAL, NULL,
                                   "triggers: two are named \"%s\"",
                                   fresh[k]->name);
            }
        if (rc)
            break;
    }
    if (rc) {
        for (size_t k = 0; k < parsed; k++)
            hearth__trigger_release(fresh[k]);
    } else {
        rc = install_all(e, fresh, n, err);
    }
    hearth__free(fresh);
    json_decref(doc);
    return rc;
}

int hearth__triggers_remove(hearth__triggers *e, const char *name) {
    size_t at;
    hearth__trigger *t = find(e, name, &at);
    if (!t)
        return HEARTH_ENOTFOUND;
    bool admin = strcmp(t->origin, "admin") == 0;
    e->v[at] = e->v[--e->n];
    retire(t);
    if (admin)
        save_admin(e);
    return 0;
}

/* ---- life ---- */

int hearth__triggers_new(const hearth__triggers_options *o,
                         hearth__triggers **out, hearth_error_t *err) {
    hearth__triggers *e = hearth__calloc(1, sizeof *e);
    if (!e)
        return hearth__error_code(err, HEARTH_ENOMEM);
    e->dir = hearth__strndup(o->dir, strlen(o->dir));
    e->db_host = hearth__strndup(o->db_host, strlen(o->db_host));
    e->location = hearth__strndup(o->location, strlen(o->location));
    if (!e->dir || !e->db_host || !e->location) {
        hearth__triggers_free(e);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    size_t plen = strlen(o->dir) + 16;
    char *path = hearth__malloc(plen);
    size_t len = 0;
    char *text = NULL;
    if (path) {
        snprintf(path, plen, "%s/admin.json", o->dir);
        text = hearth__read_file(path, 16u << 20, &len);
    }
    int rc = 0;
    if (text) {
        rc = hearth__triggers_register(e, text, len, "admin", err);
        if (rc && err) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            hearth__error(err, rc, path, "%s: %s", path, why);
        }
    }
    hearth__free(text);
    hearth__free(path);
    if (rc) {
        hearth__triggers_free(e);
        return rc;
    }
    *out = e;
    return 0;
}

void hearth__triggers_stop(hearth__triggers *e) {
    for (size_t i = 0; i < e->n; i++) {
        hearth__deliverer_stop(e->v[i]);
        hearth__spool_sync(e->v[i]->spool);
    }
}

void hearth__triggers_free(hearth__triggers *e) {
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++)
        retire(e->v[i]);
    hearth__free(e->v);
    hearth__free(e->dir);
    hearth__free(e->db_host);
    hearth__free(e->location);
    hearth__free(e);
}

/* ---- what the admin sees ---- */

json_t *hearth__triggers_describe(hearth__triggers *e) {
    json_t *list = json_array();
    for (size_t i = 0; list && i < e->n; i++) {
        hearth__trigger *t = e->v[i];
        json_t *spec = json_deep_copy(t->spec);
        uv_mutex_lock(&t->mu);
        json_t *err = t->last_error[0] ? json_string(t->last_error) : json_null();
        uv_mutex_unlock(&t->mu);
        json_t *stats = json_pack(
            "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "spooled",
            (json_int_t)atomic_load(&t->spooled), "delivered",
            (json_int_t)atomic_load(&t->delivered), "failed",
            (json_int_t)atomic_load(&t->failed), "retried",
            (json_int_t)atomic_load(&t->retried), "dead",
            (json_int_t)atomic_load(&t->dead_count), "dropped",
            (json_int_t)atomic_load(&t->dropped), "lag",
            (json_int_t)hearth__spool_waiting(t->spool), "dead_letters",
            (json_int_t)hearth__spool_waiting(t->dead), "last_error", err);
        if (spec && stats) {
            json_object_set_new(spec, "origin", json_string(t->origin));
            json_object_set_new(spec, "stats", stats);
            json_array_append_new(list, spec);
        } else {
            json_decref(spec);
            json_decref(stats);
        }
    }
    return json_pack("{s:o}", "triggers", list);
}

static int list_one(void *ctx, const char *data, size_t len, uint64_t t) {
    (void)t;
    json_t *v = json_loadb(data, len, 0, NULL);
    json_array_append_new(ctx, v ? v : json_stringn(data, len));
    return 0;
}

json_t *hearth__triggers_dead(hearth__triggers *e, const char *name,
                              size_t max) {
    hearth__trigger *t = find(e, name, NULL);
    if (!t)
        return NULL;
    json_t *list = json_array();
    if (list)
        hearth__spool_list(t->dead, max, list_one, list);
    return list;
}

int hearth__triggers_retry_dead(hearth__triggers *e, const char *name,
                                size_t *n) {
    hearth__trigger *t = find(e, name, NULL);
    *n = 0;
    if (!t)
        return HEARTH_ENOTFOUND;
    hearth__buf b;
    hearth__buf_init(&b);
    uint64_t made;
    int rc = 0;
    while (!rc && hearth__spool_peek(t->dead, &b, &made) == 0) {
        rc = hearth__spool_append(t->spool, b.data, b.len, made);
        if (!rc) {
            hearth__spool_advance(t->dead);
            atomic_fetch_add(&t->spooled, 1);
            (*n)++;
        }
    }
    hearth__buf_free(&b);
    if (*n)
        hearth__deliverer_kick(t);
    return rc;
}

/* ---- metrics ---- */

void hearth__triggers_metrics(hearth__triggers *e, hearth__buf *out) {
    static const struct {
        const char *name, *help, *type;
        size_t offset;
    } C[] = {
        {"hearth_trigger_events_total", "Events queued for delivery.",
         "counter", offsetof(hearth__trigger, spooled)},
        {"hearth_trigger_delivered_total", "Events their endpoint took (2xx).",
         "counter", offsetof(hearth__trigger, delivered)},
        {"hearth_trigger_failed_total",
         "Delivery attempts that failed (refused, timed out, not 2xx).",
         "counter", offsetof(hearth__trigger, failed)},
        {"hearth_trigger_retried_total", "Delivery attempts made again.",
         "counter", offsetof(hearth__trigger, retried)},
        {"hearth_trigger_dead_total",
         "Events kept aside as dead letters after their last attempt.",
         "counter", offsetof(hearth__trigger, dead_count)},
        {"hearth_trigger_dropped_total",
         "Events lost: the queue full, or no memory to build them.", "counter",
         offsetof(hearth__trigger, dropped)},
    };
    if (!e->n)
        return;
    for (size_t c = 0; c < sizeof C / sizeof *C; c++) {
        hearth__buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", C[c].name,
                           C[c].help, C[c].name, C[c].type);
        for (size_t i = 0; i < e->n; i++) {
            atomic_uint_fast64_t *v =
                (atomic_uint_fast64_t *)((char *)e->v[i] + C[c].offset);
            hearth__buf_printf(out, "%s{trigger=\"%s\"} %llu\n", C[c].name,
                               e->v[i]->name,
                               (unsigned long long)atomic_load(v));
        }
    }
    hearth__buf_adds(out, "# HELP hearth_trigger_lag Events waiting for "
                          "delivery.\n# TYPE hearth_trigger_lag gauge\n");
    for (size_t i = 0; i < e->n; i++)
        hearth__buf_printf(out, "hearth_trigger_lag{trigger=\"%s\"} %llu\n",
                           e->v[i]->name,
                           (unsigned long long)hearth__spool_waiting(e->v[i]->spool));
    hearth__buf_adds(out, "# HELP hearth_trigger_dead_letters Dead letters "
                          "kept.\n# TYPE hearth_trigger_dead_letters gauge\n");
    for (size_t i = 0; i < e->n; i++)
        hearth__buf_printf(out,
                           "hearth_trigger_dead_letters{trigger=\"%s\"} %llu\n",
                           e->v[i]->name,
                           (unsigned long long)hearth__spool_waiting(e->v[i]->dead));
    hearth__buf_adds(out,
                     "# HELP hearth_trigger_delivery_seconds From a write's "
                     "commit to its endpoint's answer.\n# TYPE "
                     "hearth_trigger_delivery_seconds histogram\n");
    for (size_t i = 0; i < e->n; i++) {
        hearth__histogram *h = &e->v[i]->latency;
        uint64_t cum = 0;
        for (size_t b = 0; b <= HEARTH__HIST_BUCKETS; b++) {
            cum += atomic_load_explicit(&h->counts[b], memory_order_relaxed);
            if (b < HEARTH__HIST_BUCKETS)
                hearth__buf_printf(out,
                                   "hearth_trigger_delivery_seconds_bucket{"
                                   "trigger=\"%s\",le=\"%g\"} %llu\n",
                                   e->v[i]->name,
                                   (double)hearth__hist_bounds_us[b] / 1e6,
                                   (unsigned long long)cum);
            else
                hearth__buf_printf(out,
                                   "hearth_trigger_delivery_seconds_bucket{"
                                   "trigger=\"%s\",le=\"+Inf\"} %llu\n",
                                   e->v[i]->name, (unsigned long long)cum);
        }
        hearth__buf_printf(
            out,
            "hearth_trigger_delivery_seconds_sum{trigger=\"%s\"} %.9f\n"
            "hearth_trigger_delivery_seconds_count{trigger=\"%s\"} %llu\n",
            e->v[i]->name,
            (double)atomic_load_explicit(&h->sum_ns, memory_order_relaxed) / 1e9,
            e->v[i]->name, (unsigned long long)cum);
    }
}
