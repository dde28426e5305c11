/* engine.c - the triggers of a server: their registry (added, replaced,
 * removed, the admin's kept in DIR/admin.json) and its life (loop
 * thread). The taps are tap.c's, what the admin sees admin.c's. */
#include "triggers/internal.h"

#include "store/files.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

hearth__trigger *hearth__triggers_find(hearth__triggers *e, const char *name,
                                       size_t *at) {
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->v[i]->name, name) == 0) {
            if (at)
                *at = i;
            return e->v[i];
        }
    return NULL;
}

hearth__trigger *hearth__triggers_live(hearth__triggers *e,
                                       hearth__trigger *t) {
    return t->retired ? hearth__triggers_find(e, t->name, NULL) : t;
}

void hearth__trigger_dropped(hearth__trigger *t, size_t n, int rc) {
    if (atomic_fetch_add(&t->dropped, n) == 0 || rc != HEARTH_ETOOBIG)
        hearth__log(HEARTH_LOG_WARNING,
                "trigger %s: %zu event(s) dropped: %s (its queue "
                "holds %" PRIu64 " bytes)\n",
                t->name, n,
                rc == HEARTH_ETOOBIG ? "the queue is full" : hearth_strerror(rc),
                hearth__spool_bytes(t->spool));
}

const hearth__triggers_remote *hearth__triggers_remote_of(
    const hearth__triggers *e) {
    return e->remote;
}

bool hearth__triggers_has(hearth__triggers *e, const char *name) {
    return hearth__triggers_find(e, name, NULL) != NULL;
}

int hearth__triggers_check(const char *name, json_t *spec,
                           hearth_error_t *err) {
    hearth__trigger *t = NULL;
    int rc = hearth__trigger_parse(name, spec, "admin", &t, err);
    if (!rc)
        hearth__trigger_release(t);
    return rc;
}

uint64_t hearth__trigger_lag(hearth__trigger *t) {
    return hearth__spool_waiting(t->spool) + atomic_load(&t->remote_waiting);
}

/* ---- registry ---- */

static void retire(hearth__trigger *t) {
    hearth__deliverer_stop(t);
    t->retired = true;
    hearth__trigger_release(t);
}

/* The queue and the deliverer of a new trigger. */
static int start(hearth__triggers *e, hearth__trigger *t,
                 hearth_error_t *err) {
    int rc = hearth__tqueue_get(&e->queues, e->dir, t->name, &t->q, err);
    if (rc)
        return rc;
    t->spool = t->q->spool;
    t->dead = t->q->dead;
    t->eng = e;
    if ((rc = hearth__deliverer_start(t)))
        hearth__error(err, rc, NULL, "trigger %s: cannot start its deliverer",
                      t->name);
    return rc;
}

static void save_admin(hearth__triggers *e) {
    if (e->remote) /* a cluster's: the keeper holds them for every node */
        return;
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
    char *text = doc ? json_dumps(doc, JSON_INDENT(2)) : NULL;
    size_t len = strlen(e->dir) + sizeof "/admin.json";
    char *path = hearth__malloc(len);
    if (path)
        snprintf(path, len, "%s/admin.json", e->dir);
    hearth_error_t err;
    if (text && path &&
        hearth__store_write_atomically(path, text, strlen(text), 0600, &err))
        hearth__log(HEARTH_LOG_WARNING, "cannot keep the admin's triggers: %s",
                    err.message);
    json_decref(doc);
    free(text);
    hearth__free(path);
}

/* Adds the parsed triggers (taken over), replacing those of their names. */
static int install_all(hearth__triggers *e, hearth__trigger **fresh, size_t n,
                       hearth_error_t *err) {
    if (e->n + n > e->cap) {
        hearth__trigger **v = hearth__grow(e->v, &e->cap, e->n + n, sizeof *v);
        if (!v)
            return hearth__error_code(err, HEARTH_ENOMEM);
        e->v = v;
    }
    bool admin = false;
    for (size_t i = 0; i < n; i++) {
        hearth__trigger *t = fresh[i];
        size_t at;
        hearth__trigger *old = hearth__triggers_find(e, t->name, &at);
        if (old) { /* stopped: its queue goes to the new one */
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
    hearth__trigger *t = hearth__triggers_find(e, name, &at);
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

int hearth__triggers_create(const hearth__triggers_options *o,
                         hearth__triggers **out, hearth_error_t *err) {
    hearth__triggers *e = hearth__calloc(1, sizeof *e);
    if (!e)
        return hearth__error_code(err, HEARTH_ENOMEM);
    uv_mutex_init(&e->rec_mu);
    e->remote = o->remote;
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
    if (path && !o->remote) {
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
    hearth__map_free(&e->queues); /* empty: every queue was put */
    uv_mutex_destroy(&e->rec_mu);
    hearth__free(e->rec);
    hearth__free(e->dir);
    hearth__free(e->db_host);
    hearth__free(e->location);
    hearth__free(e);
}

