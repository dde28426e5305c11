/* realtime_ondisconnect.c - a realtime session's onDisconnect writes:
 * checked and bounded as they are queued (o, om), canceled (oc), and run,
 * judged again, when the connection closes. */
#include "server/realtime_internal.h"

#include "tree/json.h"

#include <string.h>

/* A dry run of a set (merge false) or an update of relative paths (merge
 * true) of valid data, for onDisconnect writes as they are queued. */
static bool may_write(session *s, const char *path, json_t *data, bool merge) {
    if (!merge) {
        hearth_node_t *v = NULL;
        if (hearth_node_from_jansson(data, HEARTH_JSON_ALLOW_SERVER_VALUES, &v, NULL))
            return false;
        bool ok = hearth__ns_may_write(s->ns, &s->who, &path,
                                       (const hearth_node_t *const *)&v, 1);
        hearth_node_decref(v);
        return ok;
    }
    return hearth__ns_may_update(s->ns, &s->who, path, data);
}


/* Whether an onDisconnect write would be accepted when it runs: checked
 * when it is queued, so that the client hears about bad data. */
static bool ondisconnect_data_valid(const char *path, bool merge, json_t *data,
                                    hearth_error_t *err) {
    hearth_node_t *value = NULL;
    if (!merge) {
        int rc = hearth__realtime_put_value(path, data, &value, err);
        hearth_node_decref(value);
        return rc == 0;
    }
    if (!json_is_object(data)) {
        hearth__error(err, HEARTH_EINVAL, path, "an update's d must be an object");
        return false;
    }
    const char *key;
    json_t *v;
    json_object_foreach(data, key, v) {
        hearth__buf b;
        hearth__buf_init(&b);
        hearth__buf_adds(&b, path);
        hearth__buf_addc(&b, '/');
        hearth__buf_adds(&b, key);
        char *full = hearth__buf_detach(&b, NULL);
        bool ok = full && !hearth_validate_path(full, err) &&
                  !hearth__node_from_jansson_at(
                      v, HEARTH_JSON_ALLOW_SERVER_VALUES, full, 0, &value, err);
        if (!full)
            hearth__error(err, HEARTH_ENOMEM, NULL, "out of memory");
        hearth__free(full);
        hearth_node_decref(value);
        value = NULL;
        if (!ok)
            return false;
    }
    return true;
}

/* One onDisconnect write as the cluster keeps it (cluster/cluster.h):
 * {"a": auth, "j": judged, "h": null, "w": [[path, value], ...]}. */
static json_t *od_json(const session *s, const od_op *op) {
    json_t *w = json_array();
    if (!op->merge) {
        json_array_append_new(w, json_pack("[sO]", op->path, op->data));
    } else {
        const char *key;
        json_t *v;
        json_object_foreach(op->data, key, v) {
            json_t *full = json_sprintf("%s/%s", op->path, key);
            json_array_append_new(w, json_pack("[oO]", full, v));
        }
    }
    json_t *a = s->who.auth ? hearth_node_to_jansson(s->who.auth, HEARTH_JSON_EXPORT)
                            : NULL;
    return json_pack("{sosbsnso}", "a", a ? a : json_null(), "j", !s->who.admin,
                     "h", "w", w);
}

/* In a cluster, the session's onDisconnect writes are kept where the
 * namespace's leader runs them should this node die (the cluster's KV,
 * a round trip away, on a worker). A request is answered once the list it
 * changed is kept there; at most one list is on its way per session, and
 * the requests that arrive meanwhile are answered by the next. */
typedef struct od_keeping {
    bool busy;             /* a list is on its way */
    json_int_t *asked;     /* requests the next list answers */
    size_t nasked, cap;
    json_int_t *answering; /* requests the list on its way answers */
    size_t nanswering;
} od_keeping;

/* Requests one session may have waiting for the cluster. */
#define MAX_KEEPING_ASKED 1024

static uint64_t session_key(const session *s) {
    return (uint64_t)(uintptr_t)s;
}

static void keep_send(session *s);

static void keep_done(void *ctx, int rc) {
    (void)rc; /* kept here all the same, and run here if the session ends */
    session *s = ctx;
    od_keeping *k = s->keeping;
    for (size_t i = 0; i < k->nanswering; i++)
        hearth__realtime_reply(s, k->answering[i], "ok", NULL);
    hearth__free(k->answering);
    k->answering = NULL;
    k->nanswering = 0;
    k->busy = false;
    if (k->nasked && s->ws)
        keep_send(s);
    hearth__realtime_session_release(s);
}

static void keep_send(session *s) {
    od_keeping *k = s->keeping;
    json_t *all = json_array();
    HEARTH__LIST_EACH(n, &s->ondisconnect)
        json_array_append_new(all, od_json(s, HEARTH__OD_OF(n)));
    char *text = all ? json_dumps(all, JSON_COMPACT) : NULL;
    json_decref(all);
    k->answering = k->asked;
    k->nanswering = k->nasked;
    k->asked = NULL;
    k->nasked = k->cap = 0;
    k->busy = true;
    s->refs++; /* keep_done releases it */
    if (text) {
        hearth__keeper *keeper = s->srv->keeper;
        keeper->ops->ondisconnect_keep(keeper, s->ns->db, session_key(s),
                                       text, keep_done, s);
    } else {
        keep_done(s, HEARTH_ENOMEM);
    }
    free(text);
}

/* Whether request r may wait for the cluster (answered too_big if not);
 * checked before it changes anything. */
static bool keep_room(session *s, json_int_t r) {
    if (!s->srv->keeper->ops->ondisconnect_keep)
        return true; /* kept here only */
    if (!s->keeping)
        s->keeping = hearth__calloc(1, sizeof *s->keeping);
    if (s->keeping && s->keeping->nasked < MAX_KEEPING_ASKED)
        return true;
    hearth__realtime_reply(s, r, "too_big",
          s->keeping ? json_sprintf("at most %d onDisconnect requests of a "
                                    "connection wait for the cluster",
                                    MAX_KEEPING_ASKED)
                     : json_string("out of memory"));
    return false;
}

/* Answers request r now, or once the list it changed is kept. */
static void keep_then_reply(session *s, json_int_t r) {
    od_keeping *k = s->keeping;
    if (!k) {
        hearth__realtime_reply(s, r, "ok", NULL);
        return;
    }
    if (k->nasked == k->cap) { /* below MAX_KEEPING_ASKED: keep_room */
        size_t cap = k->cap ? 2 * k->cap : 4;
        json_int_t *grown = hearth__realloc(k->asked, cap * sizeof *grown);
        if (!grown) {
            hearth__realtime_reply(s, r, "ok", NULL); /* kept here at least */
            return;
        }
        k->asked = grown;
        k->cap = cap;
    }
    k->asked[k->nasked++] = r;
    if (!k->busy)
        keep_send(s);
}

void hearth__realtime_ondisconnect_free(session *s) {
    if (!s->keeping)
        return;
    hearth__free(s->keeping->asked);
    hearth__free(s->keeping->answering);
    hearth__free(s->keeping);
    s->keeping = NULL;
}

static void od_free(session *s, od_op *op) {
    s->nondisconnect--;
    s->ondisconnect_bytes -= op->bytes;
    hearth__free(op->path);
    json_decref(op->data);
    hearth__free(op);
}

void hearth__realtime_ondisconnect(session *s, json_int_t r, const char *a, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    if (!path || hearth_validate_path(path, NULL)) {
        hearth__realtime_reply(s, r, "invalid_args", json_string("a valid p is required"));
        return;
    }
    if (!keep_room(s, r))
        return;
    if (strcmp(a, "oc") == 0) {
        /* Cancel what was set at path or below. */
        hearth__path cancel, at;
        hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &cancel, NULL);
        HEARTH__LIST_EACH_SAFE(n, &s->ondisconnect) {
            od_op *op = HEARTH__OD_OF(n);
            hearth__path_parse(op->path, HEARTH__PATH_ALLOW_PRIORITY, &at, NULL);
            if (hearth__path_is_prefix(&cancel, &at)) {
                hearth__list_remove(&op->link);
                od_free(s, op);
            }
        }
        keep_then_reply(s, r);
        return;
    }
    json_t *data = json_object_get(b, "d");
    hearth_error_t err = {0};
    if (data && !ondisconnect_data_valid(path, strcmp(a, "om") == 0, data, &err)) {
        hearth__realtime_reply(s, r, "invalid_args", json_string(err.message));
        return;
    }
    if (data && !may_write(s, path, data, strcmp(a, "om") == 0)) {
        hearth__realtime_deny(s, r); /* checked as queued, against the data now */
        return;
    }
    size_t bytes = data ? json_dumpb(data, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY) : 0;
    if (s->nondisconnect >= MAX_ONDISCONNECT ||
        bytes > MAX_ONDISCONNECT_BYTES - s->ondisconnect_bytes) {
        hearth__realtime_reply(s, r, "too_big",
              json_sprintf("This connection holds %zu onDisconnect writes "
                           "(%zu bytes); at most %d of %u bytes in all",
                           s->nondisconnect, s->ondisconnect_bytes,
                           MAX_ONDISCONNECT, MAX_ONDISCONNECT_BYTES));
        return;
    }
    od_op *op = hearth__calloc(1, sizeof *op);
    if (!data || !op || !(op->path = hearth__strndup(path, strlen(path)))) {
        hearth__free(op);
        hearth__realtime_reply(s, r, data ? "unavailable" : "invalid_args",
              json_string(data ? "out of memory" : "d is required"));
        return;
    }
    op->merge = strcmp(a, "om") == 0;
    op->data = json_incref(data);
    op->bytes = bytes;
    s->nondisconnect++;
    s->ondisconnect_bytes += bytes;
    hearth__list_push_back(&s->ondisconnect, &op->link);
    keep_then_reply(s, r);
}

/* Runs the onDisconnect writes, in the order they were asked for. Each
 * is judged again as it runs, as the service does: against the data and
 * rules of that moment, as the identity the session has then (a session
 * that signed out writes as nobody). */
void hearth__realtime_run_ondisconnect(session *s) {
    if (s->keeping) /* run here: forgotten there, after any list on its way */
        s->srv->keeper->ops->ondisconnect_keep(s->srv->keeper, s->ns->db,
                                               session_key(s), NULL, NULL,
                                               NULL);
    for (hearth__list *n; (n = hearth__list_pop_front(&s->ondisconnect));) {
        od_op *op = HEARTH__OD_OF(n);
        if (op->merge) {
            hearth__realtime_judged_update(s, op->path, op->data, NULL, NULL, NULL, NULL);
        } else {
            hearth_node_t *value;
            if (!hearth__realtime_put_value(op->path, op->data, &value, NULL)) {
                hearth__realtime_judged_set(s, op->path, value, NULL, NULL, NULL, NULL);
                hearth_node_decref(value);
            }
        }
        od_free(s, op);
    }
}
