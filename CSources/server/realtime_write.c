/* realtime_write.c - a realtime session's writes: puts (with
 * compare-and-set on a hash) and merges, judged by the rules as the
 * session's identity when applied, answered `ok` after their commit. */
#include "server/realtime_internal.h"

#include "tree/json.h"

#include <stdlib.h>
#include <string.h>

/* The session's writes, judged as who it is now (the admin: not judged). */
int hearth__realtime_judged_set(session *s, const char *path, const hearth_node_t *value,
                                hearth_completion_cb cb, void *ctx, hearth_free_cb ctx_free,
                                hearth_error_t *err) {
    hearth__db_caller caller;
    return hearth__db_set_as(s->ns->db, hearth__principal_caller(&s->who, &caller),
                             path, value, cb, ctx, ctx_free, err);
}

int hearth__realtime_judged_update(session *s, const char *path, json_t *data,
                                   hearth_completion_cb cb, void *ctx,
                                   hearth_free_cb ctx_free, hearth_error_t *err) {
    /* The message is parsed already: its object becomes the parts as it
     * is, not written out and parsed again. */
    hearth__update_parts u;
    hearth__db_caller caller;
    int rc = hearth__update_parts_from_json(path, data, &u, err);
    if (!rc)
        rc = hearth__db_update_parts_as(
            s->ns->db, hearth__principal_caller(&s->who, &caller), path, &u,
            cb, ctx, ctx_free, err);
    hearth__update_parts_free(&u);
    return rc;
}


/* A write awaiting its commit answers its request then. */
typedef struct pending {
    session *s;
    json_int_t r;
} pending;

static void on_written(int status, void *ctx) {
    pending *p = ctx;
    hearth__observe_realtime_write(p->s->srv,
                                   status == HEARTH_EDENIED ? "permission_denied"
                                   : status                 ? "unavailable"
                                                            : "ok");
    if (!p->s->ws)
        return;
    if (status == HEARTH_EDENIED)
        hearth__realtime_deny(p->s, p->r);
    else if (status == HEARTH_EDATASTALE) /* a cluster's leader saw newer data */
        hearth__realtime_reply(p->s, p->r, "datastale", json_string("hash mismatch"));
    else
        hearth__realtime_reply(p->s, p->r, status ? "unavailable" : "ok",
              status ? json_string(hearth_strerror(status)) : NULL);
}

static void pending_free(void *ctx) {
    pending *p = ctx;
    hearth__realtime_session_release(p->s);
    hearth__free(p);
}

static pending *new_pending(session *s, json_int_t r) {
    pending *p = hearth__malloc(sizeof *p);
    if (p) {
        p->s = s;
        p->r = r;
        s->refs++;
    }
    return p;
}

/* A write refused before it was queued: its callbacks will never run. */
static void write_refused(session *s, pending *p, json_int_t r,
                          const hearth_error_t *err) {
    if (p)
        pending_free(p); /* the connection still holds the session */
    hearth__realtime_reply(s, r, err->code == HEARTH_ENOMEM ? "unavailable" : "invalid_args",
          json_string(err->message));
}

/* A put's value, checked as the write will be: path and data both valid. */
int hearth__realtime_put_value(const char *path, json_t *data, hearth_node_t **out,
                               hearth_error_t *err) {
    hearth__path p;
    int rc = hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &p, err);
    return rc ? rc
              : hearth__node_from_jansson_at(data, HEARTH_JSON_ALLOW_SERVER_VALUES,
                                             path, p.n, out, err);
}

/* Compare-and-set's condition: whether the data at path still has the
 * hash the client saw. A mismatch pushes the current data (the client
 * reruns its transaction on it) and answers datastale. Both tell what the
 * data is, so only a reader may ask. Answers and returns false when the
 * write must not go on. */
static bool hash_matches(session *s, json_int_t r, const char *path,
                         const char *hash) {
    if (!hearth__realtime_may_read(s, path, NULL)) {
        hearth__realtime_deny(s, r);
        return false;
    }
    const hearth_node_t *current;
    char have[HEARTH_HASH_SIZE] = "";
    hearth_error_t err = {0};
    if (hearth_node_get(hearth__db_root(s->ns->db), path, &current, &err) ||
        hearth_node_hash(current, have)) {
        hearth__realtime_reply(s, r, "invalid_args", json_string(err.message));
        return false;
    }
    if (strcmp(have, hash) == 0)
        return true;
    hearth__realtime_push_data(s, path, current, NULL);
    hearth__realtime_reply(s, r, "datastale", json_string("hash mismatch"));
    return false;
}

void hearth__realtime_put(session *s, json_int_t r, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    json_t *data = json_object_get(b, "d");
    json_t *hash = json_object_get(b, "h");
    hearth_error_t err = {0};
    hearth_node_t *value = NULL;
    if (!path || !data || (hash && !json_is_string(hash))) {
        hearth__realtime_reply(s, r, "invalid_args",
              json_string("p and d are required; h must be a string"));
        return;
    }
    if (hearth__realtime_put_value(path, data, &value, &err)) {
        hearth__realtime_reply(s, r, "invalid_args", json_string(err.message));
        return;
    }
    /* Compare-and-set: atomic, since nothing else runs on the loop. */
    if (hash && !hash_matches(s, r, path, json_string_value(hash))) {
        hearth_node_decref(value);
        return;
    }
    pending *pd = new_pending(s, r);
    hearth__db_caller caller;
    /* The hash goes with the write too: a cluster's leader checks it again
     * as it orders the write (on one server it holds, as just seen). */
    int rc = pd ? hearth__db_set_if_as(s->ns->db,
                                       hearth__principal_caller(&s->who, &caller),
                                       hash ? json_string_value(hash) : NULL, path,
                                       value, on_written, pd, pending_free, &err)
                : hearth__error_code(&err, HEARTH_ENOMEM);
    hearth_node_decref(value);
    if (rc)
        write_refused(s, pd, r, &err);
}

void hearth__realtime_merge(session *s, json_int_t r, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    json_t *data = json_object_get(b, "d");
    if (!path || !json_is_object(data)) {
        hearth__realtime_reply(s, r, "invalid_args", json_string("p and an object d are required"));
        return;
    }
    hearth_error_t err = {0};
    pending *pd = new_pending(s, r);
    int rc = pd ? hearth__realtime_judged_update(s, path, data, on_written, pd, pending_free, &err)
                : hearth__error_code(&err, HEARTH_ENOMEM);
    if (rc)
        write_refused(s, pd, r, &err);
}
