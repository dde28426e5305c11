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
 * namespace's leader runs them should this node die (NULL list: forgot). */
static void keep_in_cluster(session *s) {
    json_t *all = json_array();
    for (od_op *op = s->ondisconnect; op; op = op->next)
        json_array_append_new(all, od_json(s, op));
    char *text = all ? json_dumps(all, JSON_COMPACT) : NULL;
    hearth__cluster_ondisconnect_keep(s->ns->db, (uint64_t)(uintptr_t)s, text);
    free(text);
    json_decref(all);
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
    if (strcmp(a, "oc") == 0) {
        /* Cancel what was set at path or below. */
        hearth__path cancel, at;
        hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &cancel, NULL);
        for (od_op **p = &s->ondisconnect; *p;) {
            od_op *op = *p;
            hearth__path_parse(op->path, HEARTH__PATH_ALLOW_PRIORITY, &at, NULL);
            if (hearth__path_is_prefix(&cancel, &at)) {
                *p = op->next;
                od_free(s, op);
            } else {
                p = &op->next;
            }
        }
        keep_in_cluster(s);
        hearth__realtime_reply(s, r, "ok", NULL);
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
    od_op **tail = &s->ondisconnect;
    while (*tail)
        tail = &(*tail)->next;
    *tail = op;
    keep_in_cluster(s);
    hearth__realtime_reply(s, r, "ok", NULL);
}

/* Runs the onDisconnect writes, in the order they were asked for. Each
 * is judged again as it runs, as the service does: against the data and
 * rules of that moment, as the identity the session has then (a session
 * that signed out writes as nobody). */
void hearth__realtime_run_ondisconnect(session *s) {
    if (s->ondisconnect)
        hearth__cluster_ondisconnect_keep(s->ns->db, (uint64_t)(uintptr_t)s,
                                          NULL); /* run here */
    while (s->ondisconnect) {
        od_op *op = s->ondisconnect;
        s->ondisconnect = op->next;
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
