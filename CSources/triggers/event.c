/* event.c - the locations a write fires and the events sent for them. */
#include "triggers/event.h"

#include "common/internal.h"
#include "tree/json.h"

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

/* ---- events ----
 * Written as text straight from the nodes (hearth__node_write_json), not
 * through jansson: built on the loop, per trigger per changed location,
 * where a jansson round trip cost 26 us an event and 10 triggers cut
 * writes to a fifth. */

/* Whether n reads as a JSON object (not a leaf, not an array): what the
 * SDKs merge a delta into. */
static bool plain_object(const hearth_node_t *n) {
    return hearth__node_is_obj(n) && !hearth__node_is_array(n);
}

static void write_delta(hearth__buf *b, const hearth_node_t *before,
                        const hearth_node_t *after);

typedef struct delta_ctx {
    hearth__buf *b;
    bool first;
} delta_ctx;

static int delta_child(const hearth__key *key, const hearth_node_t *old,
                       const hearth_node_t *now, void *ctx) {
    delta_ctx *d = ctx;
    if (old && now && hearth_node_equal(old, now))
        return 0;
    if (!d->first)
        hearth__buf_addc(d->b, ',');
    d->first = false;
    hearth__json_write_string(d->b, key->s, key->len);
    hearth__buf_addc(d->b, ':');
    if (!now)
        hearth__buf_adds(d->b, "null");
    else if (old)
        write_delta(d->b, old, now);
    else
        hearth__node_write_json(d->b, now, 0);
    return 0;
}

/* What, deep-merged into before (a null member removing its key), gives
 * after: the members that differ, recursively where both are objects
 * (found with hearth__bt_diff, which skips what the versions share). A
 * member that turns from a non-object into an object is sent whole; the
 * SDKs' merge expects an object there, a limit of the format. */
static void write_delta(hearth__buf *b, const hearth_node_t *before,
                        const hearth_node_t *after) {
    if (!plain_object(before) || !plain_object(after)) {
        hearth__node_write_json(b, after, 0);
        return;
    }
    delta_ctx d = {b, true};
    hearth__buf_addc(b, '{');
    hearth__bt_diff(before->u.obj.tree, after->u.obj.tree, delta_child, &d);
    hearth__buf_addc(b, '}');
}

/* RFC 3339 in UTC with milliseconds, as the service writes "time". */
static void format_time(int64_t ms, char out[80]) {
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    snprintf(out, 80, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(ms % 1000));
}

/* The writer as the events name it: admin, app_user (with its uid) or
 * unauthenticated. */
static const char *auth_type(const hearth__trigger_change *c,
                             const hearth_node_t **uid) {
    *uid = NULL;
    if (!c->judged)
        return "admin";
    if (!c->auth || hearth_node_is_null(c->auth))
        return "unauthenticated";
    hearth__name name;
    hearth__name_init(&name, "uid", 3);
    const hearth_node_t *u = hearth__node_child(c->auth, &name);
    if (hearth_node_type(u) == HEARTH_TYPE_STRING)
        *uid = u;
    return "app_user";
}

/* "name":"value", (a JSON string member and its comma). */
static void member(hearth__buf *b, const char *name, const char *value,
                   size_t len) {
    hearth__buf_addc(b, '"');
    hearth__buf_adds(b, name);
    hearth__buf_adds(b, "\":");
    hearth__json_write_string(b, value, len);
    hearth__buf_addc(b, ',');
}

static void smember(hearth__buf *b, const char *name, const char *value) {
    member(b, name, value, strlen(value));
}

static char *finish(hearth__buf *b, size_t *len) {
    if (b->failed) {
        hearth__buf_free(b);
        return NULL;
    }
    return hearth__buf_detach(b, len);
}

char *hearth__trigger_cloudevent(const hearth__trigger_change *c,
                                 const char *type, const char *db_host,
                                 const char *location, size_t *len) {
    const char *ref = c->path[0] == '/' ? c->path + 1 : c->path;
    char when[80];
    format_time(c->time_ms, when);
    const hearth_node_t *uid;
    const char *atype = auth_type(c, &uid);
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_adds(&b, "{\"specversion\":\"1.0\",");
    smember(&b, "id", c->id);
    /* location and the namespace are plain names: nothing to escape */
    hearth__buf_adds(&b, "\"source\":\"//firebasedatabase.googleapis.com/"
                         "projects/_/locations/");
    hearth__buf_adds(&b, location);
    hearth__buf_adds(&b, "/instances/");
    hearth__buf_adds(&b, c->ns);
    hearth__buf_adds(&b, "\",");
    smember(&b, "type", type);
    smember(&b, "time", when);
    hearth__buf_adds(&b, "\"subject\":");
    size_t subject_len = strlen(ref) + 5;
    char *subject = hearth__malloc(subject_len + 1);
    if (subject) {
        memcpy(subject, "refs/", 5);
        memcpy(subject + 5, ref, subject_len - 5 + 1);
        hearth__json_write_string(&b, subject, subject_len);
        hearth__free(subject);
    } else {
        b.failed = true;
    }
    hearth__buf_addc(&b, ',');
    smember(&b, "datacontenttype", "application/json");
    smember(&b, "firebasedatabasehost", db_host);
    smember(&b, "instance", c->ns);
    smember(&b, "ref", ref);
    smember(&b, "location", location);
    smember(&b, "authtype", atype);
    if (uid)
        member(&b, "authid", hearth__node_str(uid), uid->u.len);
    hearth__buf_adds(&b, "\"data\":{\"@type\":\"type.googleapis.com/"
                         "google.events.firebase.database.v1."
                         "ReferenceEventData\",\"data\":");
    hearth__node_write_json(&b, c->before, 0);
    hearth__buf_adds(&b, ",\"delta\":");
    write_delta(&b, c->before, c->after);
    hearth__buf_adds(&b, "}}");
    return finish(&b, len);
}

/* The pattern's captures in path ("/messages/m1") as a JSON object. */
static void write_params(hearth__buf *b, const hearth__pattern *p,
                         const char *path) {
    hearth__path parsed;
    hearth__buf_addc(b, '{');
    bool first = true;
    for (unsigned i = 0;
         !hearth__path_parse(path, 0, &parsed, NULL) && i < p->n && i < parsed.n;
         i++) {
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
        if (!first)
            hearth__buf_addc(b, ',');
        first = false;
        hearth__json_write_string(b, seg->capture, strlen(seg->capture));
        hearth__buf_addc(b, ':');
        hearth__json_write_string(b, v.data ? v.data : "", v.len);
        b->failed |= v.failed;
        hearth__buf_free(&v);
    }
    hearth__buf_addc(b, '}');
}

char *hearth__trigger_webhook(const hearth__trigger_change *c,
                              const char *trigger, const hearth__pattern *p,
                              size_t *len) {
    static const char *const kinds[] = {"", "created", "updated", "", "deleted"};
    int kind = hearth__trigger_change_kind(c->before, c->after);
    char when[80];
    format_time(c->time_ms, when);
    const hearth_node_t *uid;
    const char *atype = auth_type(c, &uid);
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_addc(&b, '{');
    smember(&b, "id", c->id);
    smember(&b, "time", when);
    smember(&b, "trigger", trigger);
    smember(&b, "event", kinds[kind]);
    smember(&b, "namespace", c->ns);
    smember(&b, "path", c->path);
    hearth__buf_adds(&b, "\"params\":");
    write_params(&b, p, c->path);
    hearth__buf_adds(&b, ",\"before\":");
    hearth__node_write_json(&b, c->before, 0);
    hearth__buf_adds(&b, ",\"after\":");
    hearth__node_write_json(&b, c->after, 0);
    hearth__buf_adds(&b, ",\"auth\":{");
    smember(&b, "type", atype);
    if (uid)
        member(&b, "uid", hearth__node_str(uid), uid->u.len);
    b.len--; /* the last member's comma */
    hearth__buf_adds(&b, "}}");
    return finish(&b, len);
}
