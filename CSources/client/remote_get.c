/* remote_get.c - the realtime client's one-time reads: from the server
 * when connected (or within a short wait), else from complete cached data,
 * else the SDK's offline error, which describes the query as iOS does. */
#include "client/remote_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- gets ---- */

/* One value of a query's wire parameters as Foundation describes it. */
static void describe_value(hearth__buf *b, const json_t *v) {
    if (json_is_string(v)) {
        const char *t = json_string_value(v);
        bool plain = *t != '\0';
        for (const char *c = t; *c && plain; c++)
            plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                    (*c >= '0' && *c <= '9') || *c == '_';
        hearth__buf_adds(b, plain ? "" : "\"");
        hearth__buf_adds(b, t);
        hearth__buf_adds(b, plain ? "" : "\"");
    } else if (json_is_boolean(v)) {
        hearth__buf_adds(b, json_is_true(v) ? "1" : "0");
    } else if (json_is_null(v)) {
        hearth__buf_adds(b, "<null>");
    } else {
        char *t = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        hearth__buf_adds(b, t ? t : "?");
        free(t);
    }
}

static int compare_keys(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The iOS SDK's description of a query: "FQuerySpec (path: /a, params:
 * {})", the parameters as Foundation prints a dictionary (keys sorted,
 * one "    key = value;" line each). */
static void describe_query(hearth__buf *b, const hearth__path *path,
                           const hearth_query_t *q) {
    char *p = hearth__remote_path_text(path);
    hearth__buf_adds(b, "FQuerySpec (path: ");
    hearth__buf_adds(b, p ? p : "/");
    hearth__buf_adds(b, ", params: {");
    hearth__free(p);
    char *text = q ? hearth_query_to_json(q) : NULL;
    json_t *params = text ? json_loads(text, 0, NULL) : NULL;
    hearth__free(text);
    size_t n = json_object_size(params), k = 0;
    const char **keys = n ? hearth__malloc(n * sizeof *keys) : NULL;
    const char *key;
    json_t *v;
    json_object_foreach(params, key, v) {
        if (keys)
            keys[k++] = key;
    }
    if (keys)
        qsort(keys, k, sizeof *keys, compare_keys);
    for (size_t i = 0; i < k; i++) {
        hearth__buf_adds(b, "\n    ");
        hearth__buf_adds(b, keys[i]);
        hearth__buf_adds(b, " = ");
        describe_value(b, json_object_get(params, keys[i]));
        hearth__buf_adds(b, ";");
    }
    hearth__buf_adds(b, k ? "\n})" : "})");
    hearth__free(keys);
    json_decref(params);
}

int hearth__remote_offline_error(hearth_error_t *err, const hearth__path *path,
                                 const hearth_query_t *q) {
    hearth__buf b;
    hearth__buf_init(&b);
    describe_query(&b, path, q);
    char *spec = hearth__buf_detach(&b, NULL);
    int rc = hearth__error(err, HEARTH_EOFFLINE, NULL,
                           "Unable to get latest value for query %s, %s",
                           spec ? spec : "?", hearth_strerror(HEARTH_EOFFLINE));
    hearth__free(spec);
    return rc;
}


void hearth__remote_get_free(get_rec *g) {
    json_decref(g->body);
    hearth__free(g->path);
    hearth_query_free(g->query);
    hearth__free(g);
}

hearth_node_t *hearth__remote_cached(hearth__remote *r, const hearth__path *path,
                                     const hearth_query_t *q) {
    hearth_node_t *local = hearth__sync_local(&r->sync, path);
    if (!local && r->disk) {
        /* Not listened to now: what the last listen here stored. */
        hearth__path at = *path;
        at.priority = false;
        char *text = hearth__remote_path_text(&at);
        local = text ? hearth__remote_stored_view(r, text, NULL) : NULL;
        hearth__free(text);
    }
    if (!local)
        return NULL;
    hearth_node_t *shown = NULL;
    const hearth_node_t *at = path->priority ? hearth__prio(local) : local;
    if (hearth__query_view_node(q, at, &shown))
        shown = NULL;
    hearth_node_decref(local);
    return shown;
}

void hearth__remote_get_answered(hearth__remote *r, get_rec *g, int status,
                                 json_t *data) {
    hearth__list_remove(&g->link);
    hearth__remote_drop_requests_for(r, g);
    hearth_node_t *value = NULL;
    if (!status && hearth_node_from_jansson(data, 0, &value, NULL))
        status = HEARTH_EREMOTE;
    if (status) {
        /* Fall back on complete cached data, as the SDKs do. */
        hearth__path p;
        if (!hearth__path_parse(g->path, HEARTH__PATH_ALLOW_PRIORITY, &p, NULL) &&
            (value = hearth__remote_cached(r, &p, g->query)))
            status = 0;
    }
    g->done(status, status ? NULL : value, g->arg);
    hearth_node_decref(value);
    hearth__remote_get_free(g);
}

void hearth__remote_send_get(hearth__remote *r, get_rec *g) {
    if (r->ready && !g->sent &&
        hearth__remote_send_request(r, "g", g->body, REQ_GET, g) == 0)
        g->sent = true;
}

void hearth__remote_on_get_timer(uv_timer_t *timer) {
    hearth__remote *r = timer->data;
    uint64_t now = uv_now(r->loop), next = 0;
    HEARTH__LIST_EACH_ITEM(g, &r->gets, get_rec, link) {
        if (!g->sent && g->deadline <= now)
            hearth__remote_get_answered(r, g, HEARTH_EOFFLINE, NULL);
        else if (!g->sent && (!next || g->deadline < next))
            next = g->deadline;
    }
    if (next)
        uv_timer_start(&r->get_timer, hearth__remote_on_get_timer, next - now, 0);
}

int hearth__remote_get(hearth__remote *r, const hearth__path *path,
                       const hearth_query_t *q, hearth__remote_get_done done,
                       void *arg) {
    if (!r->ready) {
        /* Cached data answers at once; else wait a little for the line. */
        hearth_node_t *cached = hearth__remote_cached(r, path, q);
        if (cached || !r->online) {
            done(cached ? 0 : HEARTH_EOFFLINE, cached, arg);
            hearth_node_decref(cached);
            return 0;
        }
    }
    get_rec *g = hearth__calloc(1, sizeof *g);
    char *p = hearth__remote_path_text(path);
    if (!g || !p) {
        hearth__free(g);
        hearth__free(p);
        return HEARTH_ENOMEM;
    }
    g->path = p;
    g->done = done;
    g->arg = arg;
    g->body = json_pack("{s:s}", "p", p);
    if (q && !hearth__query_is_default(q)) {
        g->query = hearth_query_copy(q);
        char *qt = hearth_query_to_json(q);
        json_t *qo = qt ? json_loads(qt, 0, NULL) : NULL;
        hearth__free(qt);
        if (g->body && qo)
            json_object_set_new(g->body, "q", qo);
        else
            json_decref(qo);
    }
    if (!g->body || (q && !hearth__query_is_default(q) && !g->query)) {
        hearth__remote_get_free(g);
        return HEARTH_ENOMEM;
    }
    hearth__list_push_front(&r->gets, &g->link);
    hearth__remote_send_get(r, g);
    if (!g->sent) {
        g->deadline = uv_now(r->loop) + GET_CONNECT_MS;
        if (!uv_is_active((uv_handle_t *)&r->get_timer))
            uv_timer_start(&r->get_timer, hearth__remote_on_get_timer, GET_CONNECT_MS, 0);
    }
    return 0;
}
