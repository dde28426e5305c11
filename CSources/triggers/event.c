/* event.c - the locations a write fires and the events sent for them. */
#include "triggers/event.h"

#include "common/internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int hearth__trigger_change_kind(const hearth_node_t *before,
                                const hearth_node_t *after) {
    bool had = !hearth_node_is_null(before), has = !hearth_node_is_null(after);
    if (had && has)
        return hearth_node_equal(before, after) ? 0 : HEARTH__TRIGGER_UPDATED;
    return had ? HEARTH__TRIGGER_DELETED : has ? HEARTH__TRIGGER_CREATED : 0;
}

/* ---- locations ---- */

typedef struct location {
    char *path;
    const hearth_node_t *before, *after;
} location;

typedef struct found {
    const hearth__pattern *p;
    location *v;
    size_t n, cap, max;
    bool more;
    bool failed; /* no memory */
    hearth__buf path;
} found;

static void add_location(found *f, const hearth_node_t *before,
                         const hearth_node_t *after) {
    if (f->n == f->max) {
        f->more = true;
        return;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        location *v = hearth__realloc(f->v, cap * sizeof *v);
        if (!v) {
            f->failed = true;
            return;
        }
        f->v = v;
        f->cap = cap;
    }
    const char *text = f->path.len ? f->path.data : "/";
    size_t len = f->path.len ? f->path.len : 1;
    char *copy = hearth__strndup(text, len);
    if (!copy) {
        f->failed = true;
        return;
    }
    f->v[f->n++] = (location){copy, before, after};
}

static void walk(found *f, unsigned i, unsigned end, const hearth_node_t *old,
                 const hearth_node_t *now);

typedef struct step {
    found *f;
    unsigned i, end;
} step;

/* One child key of a wildcard segment: matched, then walked. */
static void walk_child(step *s, const char *key, size_t klen,
                       const hearth_node_t *old, const hearth_node_t *now) {
    found *f = s->f;
    if (f->failed || f->more ||
        !hearth__pattern_seg_matches(&f->p->segs[s->i], key, klen))
        return;
    size_t mark = f->path.len;
    hearth__buf_addc(&f->path, '/');
    hearth__buf_add(&f->path, key, klen);
    if (f->path.failed)
        f->failed = true;
    else
        walk(f, s->i + 1, s->end, old ? old : hearth__node_empty(),
             now ? now : hearth__node_empty());
    f->path.len = mark;
}

static int diff_child(const hearth__key *key, const hearth_node_t *old,
                      const hearth_node_t *now, void *ctx) {
    walk_child(ctx, key->s, key->len, old, now);
    return 0;
}

typedef struct one_side {
    step *s;
    bool old; /* the children are the old side's */
} one_side;

static int side_child(const char *key, const hearth_node_t *child, void *ctx) {
    one_side *o = ctx;
    walk_child(o->s, key, strlen(key), o->old ? child : NULL,
               o->old ? NULL : child);
    return 0;
}

/* Below path (f->path), segments i..end of the pattern still to match. */
static void walk(found *f, unsigned i, unsigned end, const hearth_node_t *old,
                 const hearth_node_t *now) {
    if (f->failed || f->more || old == now || hearth_node_equal(old, now))
        return;
    if (i == end) {
        add_location(f, old, now);
        return;
    }
    const hearth__pattern_seg *seg = &f->p->segs[i];
    if (seg->kind == HEARTH__SEG_LITERAL) {
        hearth__name name;
        hearth__name_init(&name, seg->text, strlen(seg->text));
        step s = {f, i, end};
        walk_child(&s, seg->text, strlen(seg->text),
                   hearth__node_child(old, &name), hearth__node_child(now, &name));
        return;
    }
    step s = {f, i, end};
    if (hearth__node_is_obj(old) && hearth__node_is_obj(now)) {
        hearth__bt_diff(old->u.obj.tree, now->u.obj.tree, diff_child, &s);
        return;
    }
    if (hearth__node_is_obj(old)) {
        one_side o = {&s, true};
        hearth_node_foreach_child(old, side_child, &o);
    }
    if (hearth__node_is_obj(now)) {
        one_side o = {&s, false};
        hearth_node_foreach_child(now, side_child, &o);
    }
}

static void path_text(hearth__buf *b, const hearth__path *p, unsigned upto) {
    b->len = 0;
    for (unsigned i = 0; i < upto; i++) {
        hearth__buf_addc(b, '/');
        hearth__buf_add(b, p->seg[i].s, p->seg[i].len);
    }
}

static int by_path(const void *a, const void *b) {
    return strcmp(((const location *)a)->path, ((const location *)b)->path);
}

static void one_path(found *f, const hearth__path *w,
                     const hearth_node_t *old_root,
                     const hearth_node_t *new_root) {
    const hearth__pattern *p = f->p;
    unsigned fixed = p->rest ? p->n - 1 : p->n;
    if (w->n >= fixed) { /* at or below a location: that location fires */
        if (!hearth__pattern_prefix_matches(p, w, fixed))
            return;
        hearth__path at = *w;
        at.priority = false;
        at.n = p->rest ? w->n : fixed;
        const hearth_node_t *before = hearth__node_at(old_root, &at);
        const hearth_node_t *after = hearth__node_at(new_root, &at);
        if (before == after || hearth_node_equal(before, after))
            return;
        path_text(&f->path, &at, at.n);
        if (f->path.failed)
            f->failed = true;
        else
            add_location(f, before, after);
        return;
    }
    /* above: every matching location below it that changed */
    if (!hearth__pattern_prefix_matches(p, w, w->n))
        return;
    hearth__path at = *w;
    at.priority = false;
    path_text(&f->path, &at, at.n);
    if (f->path.failed) {
        f->failed = true;
        return;
    }
    walk(f, w->n, fixed, hearth__node_at(old_root, &at),
         hearth__node_at(new_root, &at));
}

int hearth__trigger_locations(const hearth__pattern *p,
                              const hearth_node_t *old_root,
                              const hearth_node_t *new_root,
                              const hearth__path *const *paths, size_t n,
                              size_t max, bool *more, hearth__location_cb cb,
                              void *ctx) {
    found f = {.p = p, .max = max};
    hearth__buf_init(&f.path);
    for (size_t i = 0; i < n && !f.failed; i++)
        one_path(&f, paths[i], old_root, new_root);
    int rc = f.failed ? HEARTH_ENOMEM : 0;
    if (!rc && n > 1 && f.n > 1) { /* the parts of an update may share one */
        qsort(f.v, f.n, sizeof *f.v, by_path);
        size_t kept = 1;
        for (size_t i = 1; i < f.n; i++) {
            if (strcmp(f.v[i].path, f.v[kept - 1].path) == 0)
                hearth__free(f.v[i].path);
            else
                f.v[kept++] = f.v[i];
        }
        f.n = kept;
    } else if (!rc && f.n > 1) {
        qsort(f.v, f.n, sizeof *f.v, by_path);
    }
    for (size_t i = 0; !rc && i < f.n; i++)
        rc = cb(ctx, f.v[i].path, f.v[i].before, f.v[i].after);
    for (size_t i = 0; i < f.n; i++)
        hearth__free(f.v[i].path);
    hearth__free(f.v);
    hearth__buf_free(&f.path);
    if (more)
        *more = f.more;
    return rc;
}

/* ---- events ---- */

/* What, deep-merged into before (a null member removing its key), gives
 * after: the members that differ, recursively where both are objects.
 * (A member that turns from a non-object into an object is sent whole;
 * the SDKs' merge expects an object there, a limit of the format.) */
static json_t *delta_of(json_t *before, json_t *after) {
    if (!json_is_object(before) || !json_is_object(after))
        return json_incref(after);
    json_t *d = json_object();
    if (!d)
        return NULL;
    const char *key;
    json_t *b;
    json_object_foreach(before, key, b) {
        if (!json_object_get(after, key) &&
            json_object_set_new(d, key, json_null())) {
            json_decref(d);
            return NULL;
        }
    }
    json_t *a;
    json_object_foreach(after, key, a) {
        b = json_object_get(before, key);
        if (b && json_equal(a, b))
            continue;
        json_t *sub = b ? delta_of(b, a) : json_incref(a);
        if (!sub || json_object_set_new(d, key, sub)) {
            json_decref(d);
            return NULL;
        }
    }
    return d;
}

/* RFC 3339 in UTC with milliseconds, as the service writes "time". */
static void format_time(int64_t ms, char out[40]) {
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 40 - n, ".%03dZ", (int)(ms % 1000));
}

/* The writer as the events name it: admin, app_user (with its uid) or
 * unauthenticated. */
static const char *auth_type(const hearth__trigger_change *c,
                             const char **uid) {
    *uid = NULL;
    if (!c->judged)
        return "admin";
    if (!c->auth || hearth_node_is_null(c->auth))
        return "unauthenticated";
    hearth__name name;
    hearth__name_init(&name, "uid", 3);
    const hearth_node_t *u = hearth__node_child(c->auth, &name);
    *uid = hearth_node_type(u) == HEARTH_TYPE_STRING ? hearth__node_str(u)
                                                     : NULL;
    return "app_user";
}

static char *dump(json_t *v, size_t *len) {
    char *text = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *out = hearth__strndup(text, n); /* the project's allocator */
    free(text);
    if (out && len)
        *len = n;
    return out;
}

char *hearth__trigger_cloudevent(const hearth__trigger_change *c,
                                 const char *type, const char *db_host,
                                 const char *location, size_t *len) {
    json_t *before = hearth_node_to_jansson(c->before, 0);
    json_t *after = hearth_node_to_jansson(c->after, 0);
    json_t *delta = before && after ? delta_of(before, after) : NULL;
    const char *ref = c->path[0] == '/' ? c->path + 1 : c->path;
    char when[40], source[512];
    format_time(c->time_ms, when);
    snprintf(source, sizeof source,
             "//firebasedatabase.googleapis.com/projects/_/locations/%s/"
             "instances/%s",
             location, c->ns);
    const char *uid;
    const char *atype = auth_type(c, &uid);
    json_t *ev = NULL;
    if (before && delta)
        ev = json_pack(
            "{s:s, s:s, s:s, s:s, s:s, s:s+, s:s, s:s, s:s, s:s, s:s, s:s, "
            "s:{s:s, s:O, s:O}}",
            "specversion", "1.0", "id", c->id, "source", source, "type", type,
            "time", when, "subject", "refs/", ref, "datacontenttype",
            "application/json", "firebasedatabasehost", db_host, "instance",
            c->ns, "ref", ref, "location", location, "authtype", atype, "data",
            "@type",
            "type.googleapis.com/google.events.firebase.database.v1."
            "ReferenceEventData",
            "data", before, "delta", delta);
    if (ev && uid && json_object_set_new(ev, "authid", json_string(uid))) {
        json_decref(ev);
        ev = NULL;
    }
    json_decref(before);
    json_decref(after);
    json_decref(delta);
    return dump(ev, len);
}

/* The pattern's captures in path ("/messages/m1"). */
static json_t *params_of(const hearth__pattern *p, const char *path) {
    json_t *params = json_object();
    hearth__path parsed;
    if (!params || hearth__path_parse(path, 0, &parsed, NULL))
        return params;
    for (unsigned i = 0; i < p->n && i < parsed.n; i++) {
        const hearth__pattern_seg *seg = &p->segs[i];
        if (!seg->capture)
            continue;
        hearth__buf v;
        hearth__buf_init(&v);
        unsigned last = seg->kind == HEARTH__SEG_REST ? parsed.n : i + 1;
        for (unsigned k = i; k < last; k++) {
            if (k > i)
                hearth__buf_addc(&v, '/');
            hearth__buf_add(&v, parsed.seg[k].s, parsed.seg[k].len);
        }
        json_object_set_new(params, seg->capture,
                            json_stringn(v.data ? v.data : "", v.len));
        hearth__buf_free(&v);
    }
    return params;
}

char *hearth__trigger_webhook(const hearth__trigger_change *c,
                              const char *trigger, const hearth__pattern *p,
                              size_t *len) {
    static const char *const kinds[] = {"", "created", "updated", "", "deleted"};
    int kind = hearth__trigger_change_kind(c->before, c->after);
    char when[40];
    format_time(c->time_ms, when);
    const char *uid;
    const char *atype = auth_type(c, &uid);
    json_t *auth = uid ? json_pack("{s:s, s:s}", "type", atype, "uid", uid)
                       : json_pack("{s:s}", "type", atype);
    json_t *ev = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o}",
                           "id", c->id, "time", when, "trigger", trigger,
                           "event", kinds[kind], "namespace", c->ns, "path",
                           c->path, "params", params_of(p, c->path), "before",
                           hearth_node_to_jansson(c->before, 0), "after",
                           hearth_node_to_jansson(c->after, 0), "auth", auth);
    return dump(ev, len);
}
