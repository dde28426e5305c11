/* remote_listen.c - the realtime client's listens: one server listen per
 * view of the sync tree, sent, answered, canceled or revoked; and the
 * client's own .info locations. */
#include "client/remote_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- .info ---- */

void hearth__remote_set_info(hearth__remote *r, const char *key, hearth_node_t *value) {
    hearth__path p;
    char text[64];
    snprintf(text, sizeof text, ".info/%s", key);
    if (!value || hearth__path_parse(text, HEARTH__PATH_ALLOW_INFO, &p, NULL)) {
        hearth_node_decref(value);
        return;
    }
    hearth__sync_server_set(&r->sync, &p, value, 0);
    hearth_node_decref(value);
}

bool hearth__remote_is_info(const char *path) { return !strncmp(path, "/.info", 6); }

/* The client's own locations: the sync tree keeps data only where views
 * are, so a new view under .info is given the current values. */
void hearth__remote_publish_info(hearth__remote *r) {
    hearth__remote_set_info(r, "serverTimeOffset", hearth_node_number((double)r->time_offset));
    hearth__remote_set_info(r, "connected", hearth_node_boolean(r->connected));
}


/* ---- listens ---- */

/* The hash of what the server last sent for l's view, when the view holds
 * all of it (for a tagged query, its window): the server answers a listen
 * whose hash matches with ok alone, and the view's cache stands as the
 * server's data (listen complete). Without a complete cache, no hash:
 * the server sends the data. */
static bool cached_hash(const listen_rec *l, char out[HEARTH_HASH_SIZE]) {
    const hearth__sview *sv = hearth__sview_of(l->view);
    if (!sv || !sv->ready || !sv->server.complete)
        return false;
    if (!sv->server.node) {
        out[0] = '\0'; /* nothing there: null's hash */
        return true;
    }
    return hearth_node_hash(sv->server.node, out) == 0;
}

static json_t *listen_body(const listen_rec *l, bool with_hash) {
    json_t *b = json_pack("{s:s}", "p", l->path);
    if (!b)
        return NULL;
    if (l->query) {
        char *q = hearth_query_to_json(l->query);
        json_t *qo = q ? json_loads(q, 0, NULL) : NULL;
        hearth__free(q);
        json_object_set_new(b, "q", qo ? qo : json_object());
        json_object_set_new(b, "t", json_integer(l->tag));
    }
    char hash[HEARTH_HASH_SIZE];
    if (with_hash && cached_hash(l, hash))
        json_object_set_new(b, "h", json_string(hash));
    return b;
}

void hearth__remote_send_listen(hearth__remote *r, listen_rec *l) {
    if (!r->ready || l->sent || hearth__remote_is_info(l->path))
        return;
    json_t *b = listen_body(l, true);
    if (b && !hearth__remote_send_request(r, "q", b, REQ_LISTEN, l))
        l->sent = true;
    json_decref(b);
}


/* The server refused or revoked the listen of view v: each of its
 * registrations gets a cancel event, then its owner drops it. The handles
 * are taken first: a callback may remove observers itself. */
void hearth__remote_cancel_view(hearth__remote *r, hearth__view *v, int status) {
    size_t n = 0;
    for (hearth__reg *g = hearth__reg_first(v); g; g = hearth__reg_next(v, g))
        n++;
    hearth_observer_t *handles = hearth__malloc((n ? n : 1) * sizeof *handles);
    if (!handles)
        return;
    size_t k = 0;
    for (hearth__reg *g = hearth__reg_first(v); g; g = hearth__reg_next(v, g))
        if (!g->removed && !hearth__events_push_cancel(r->sync.events, g, status))
            handles[k++] = g->handle;
    hearth__remote_raise_events(r);
    for (size_t i = 0; i < k; i++) {
        hearth__reg *g = hearth__listeners_find(&r->sync.listeners, handles[i]);
        if (g && !g->removed)
            r->hooks.drop(r->hooks.ctx, g);
    }
    hearth__free(handles);
}

/* The listen the server names by path and query (`c` carries no tag). */
listen_rec *hearth__remote_find_listen(hearth__remote *r, const char *path,
                                       json_t *query) {
    hearth__path want, have;
    if (hearth__path_parse(path, 0, &want, NULL))
        return NULL;
    HEARTH__LIST_EACH_ITEM(l, &r->listens, listen_rec, link) {
        if (hearth__path_parse(l->path, 0, &have, NULL) ||
            !hearth__remote_same_path(&want, &have))
            continue;
        json_t *body = listen_body(l, false);
        json_t *mine = json_object_get(body, "q");
        bool same = (!mine || json_object_size(mine) == 0)
                        ? (!query || json_object_size(query) == 0)
                        : query && json_equal(mine, query);
        json_decref(body);
        if (same)
            return l;
    }
    return NULL;
}

void hearth__remote_listen_done(hearth__remote *r, listen_rec *l, const char *status) {
    hearth__path p;
    if (strcmp(status, "ok") != 0) {
        /* Refused (rules): the registrations end; nothing more arrives. */
        if (hearth__remote_logging)
            hearth__log(HEARTH_LOG_WARNING, "listen at %s refused: %s", l->path,
                    status);
        hearth__remote_cancel_view(r, l->view, hearth__remote_status_code(status));
        return;
    }
    if (!hearth__path_parse(l->path, 0, &p, NULL))
        hearth__sync_listen_complete(&r->sync, &p, l->tag);
    hearth__remote_raise_events(r);
    hearth__remote_schedule_save(r);
}

int hearth__remote_observe(hearth__remote *r, const hearth__path *path,
                           const hearth_query_t *q, hearth__reg *reg) {
    int64_t tag;
    bool created;
    int rc = hearth__sync_listen(&r->sync, path, q, reg, &tag, &created);
    if (rc)
        return rc;
    if (created) {
        listen_rec *l = hearth__calloc(1, sizeof *l);
        char *text = hearth__remote_path_text(path);
        hearth_query_t *copy =
            hearth__query_is_default(q) ? NULL : hearth_query_copy(q);
        if (!l || !text || (!hearth__query_is_default(q) && !copy)) {
            hearth__free(l);
            hearth__free(text);
            hearth_query_free(copy);
            bool gone;
            hearth__sync_unlisten(&r->sync, reg, &gone);
            return HEARTH_ENOMEM;
        }
        *l = (listen_rec){reg->view, text, copy, tag, false, {0}};
        hearth__list_push_front(&r->listens, &l->link);
        if (hearth__remote_is_info(text))
            hearth__remote_publish_info(r);
        /* What the server sent last time, from disk, until it answers;
         * the listen carries its hash, so unchanged data is not sent. */
        hearth_node_t *stored = hearth__remote_is_info(text) ? NULL : hearth__remote_stored_view(r, text, copy);
        if (stored) {
            hearth__sync_server_set(&r->sync, path, stored, tag);
            hearth_node_decref(stored);
        }
        hearth__remote_send_listen(r, l);
    }
    hearth__remote_raise_events(r);
    return 0;
}

void hearth__remote_listen_free(listen_rec *l) {
    hearth__free(l->path);
    hearth_query_free(l->query);
    hearth__free(l);
}

void hearth__remote_unobserve(hearth__remote *r, hearth__reg *reg) {
    hearth__view *v = reg->view;
    bool gone;
    hearth__sync_unlisten(&r->sync, reg, &gone);
    if (!gone)
        return;
    HEARTH__LIST_EACH_ITEM(l, &r->listens, listen_rec, link) {
        if (l->view != v)
            continue;
        hearth__list_remove(&l->link);
        hearth__remote_drop_requests_for(r, l);
        if (r->ready && !hearth__remote_is_info(l->path)) {
            json_t *b = listen_body(l, false);
            if (b)
                hearth__remote_send_request(r, "n", b, REQ_PLAIN, NULL);
            json_decref(b);
        }
        hearth__remote_listen_free(l);
        return;
    }
}

hearth__listeners *hearth__remote_listeners(hearth__remote *r) {
    return &r->sync.listeners;
}
