/* remote_cache.c - the realtime client's cache on disk: views' server data
 * stored (coalesced) and offered to new views, and pending writes stored
 * until settled and replayed when a client opens. */
#include "client/remote_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the cache on disk ---- */

enum { SAVE_DELAY_MS = 100 }; /* server data is stored at most this late */

/* A view's name in the cache: "PATH|QUERY". */
static char *view_key(const char *path, const hearth_query_t *q) {
    char *identity = hearth__query_identity(q);
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_adds(&b, path);
    hearth__buf_addc(&b, '|');
    hearth__buf_adds(&b, identity ? identity : "default");
    hearth__free(identity);
    return hearth__buf_detach(&b, NULL);
}


static void on_save_timer(uv_timer_t *t) { hearth__remote_save_views(t->data); }

void hearth__remote_schedule_save(hearth__remote *r) {
    if (r->disk && !r->closing && !uv_is_active((uv_handle_t *)&r->save_timer))
        uv_timer_start(&r->save_timer, on_save_timer, SAVE_DELAY_MS, 0);
}

/* The data stored under a view's name (new reference), or NULL. */
static hearth_node_t *stored_data(hearth__remote *r, const char *key) {
    size_t len = 0;
    void *data = key ? hearth__disk_get(r->disk, key, &len) : NULL;
    hearth_node_t *node = NULL;
    if (data && hearth__node_decode(data, len, &node))
        node = NULL; /* damaged: as if nothing were stored */
    hearth__free(data);
    return node;
}

/* Stored data a new view starts from (new reference), or NULL. */
hearth_node_t *hearth__remote_stored_view(hearth__remote *r, const char *path,
                                          const hearth_query_t *q) {
    if (!r->disk)
        return NULL;
    char *key = view_key(path, q);
    hearth_node_t *node = stored_data(r, key);
    hearth__free(key);
    return node;
}

static bool is_stored(hearth__remote *r, const char *key) {
    size_t n = 0;
    char **keys = hearth__disk_views(r->disk, key, &n);
    bool found = false;
    for (size_t i = 0; i < n; i++) {
        found = found || !strcmp(keys[i], key);
        hearth__free(keys[i]);
    }
    hearth__free(keys);
    return found;
}

/* The data at path from a default view stored at path or above it (new
 * reference), or NULL. */
static hearth_node_t *stored_above(hearth__remote *r, const char *text,
                                   const hearth__path *path) {
    hearth__spath sp;
    hearth__spath_from(&sp, path);
    size_t end = 1; /* text[0, end) names the first i keys ("/": none) */
    for (unsigned i = 0; i <= sp.n; i++) {
        char *above = hearth__strndup(text, end);
        hearth_node_t *node = above ? hearth__remote_stored_view(r, above, NULL) : NULL;
        hearth__free(above);
        if (node) {
            hearth_node_t *out =
                hearth_node_incref(hearth__sync_get(node, sp.seg + i, sp.n - i));
            hearth_node_decref(node);
            return out;
        }
        if (i < sp.n) {
            const char *slash = strchr(text + end + (i ? 1 : 0), '/');
            end = slash ? (size_t)(slash - text) : strlen(text);
        }
    }
    return NULL;
}

/* out with the children stored views hold whole at text: the windows of
 * views there ("TEXT|QUERY") and the data of default views just below
 * ("TEXT/KEY|default"). New reference; NULL when out of memory. */
static hearth_node_t *stored_children(hearth__remote *r, const char *text,
                                      hearth_node_t *out) {
    static const char dflt[] = "|default";
    for (int below = 0; below < 2 && out; below++) {
        hearth__buf b;
        hearth__buf_init(&b);
        hearth__buf_adds(&b, strcmp(text, "/") ? text : "");
        hearth__buf_addc(&b, below ? '/' : '|');
        char *prefix = hearth__buf_detach(&b, NULL);
        size_t n = 0, plen = prefix ? strlen(prefix) : 0;
        char **keys = prefix ? hearth__disk_views(r->disk, prefix, &n) : NULL;
        for (size_t i = 0; i < n; i++) {
            const char *rest = keys[i] + plen;
            size_t rlen = strlen(rest), klen = rlen - (sizeof dflt - 1);
            bool child = below && rlen > sizeof dflt - 1 &&
                         !strcmp(rest + klen, dflt) && !memchr(rest, '/', klen);
            bool here = !below && (!strcmp(rest, "default") || rest[0] == '{');
            hearth_node_t *node = out && (child || here) ? stored_data(r, keys[i])
                                                         : NULL;
            hearth_node_t *with = NULL;
            if (node && child) {
                hearth__name name;
                hearth__name_init(&name, rest, klen);
                with = !hearth__node_is_empty(hearth__sync_get(out, &name, 1))
                           ? hearth_node_incref(out)
                           : hearth__sync_update(out, &name, 1, node);
            } else if (node) {
                with = hearth__sync_add_children(out, node);
            }
            if (node) {
                hearth_node_decref(out);
                out = with;
            }
            hearth_node_decref(node);
            hearth__free(keys[i]);
        }
        hearth__free(keys);
        hearth__free(prefix);
    }
    return out;
}

/* The sync tree's question for a new view with nothing complete in
 * memory: what the cache on disk knows at path. A view stored under the
 * same name is applied whole by hearth__remote_observe; else a default
 * view at or above path has it all; else the children stored views hold
 * whole (the view shows them, its value waits for the server). */
static hearth_node_t *stored_for_view(void *ctx, const hearth__path *path,
                                      const hearth_query_t *q,
                                      bool *complete) {
    hearth__remote *r = ctx;
    if (!r->disk || path->info || path->priority)
        return NULL;
    char *text = hearth__remote_path_text(path);
    char *exact = text ? view_key(text, q) : NULL;
    hearth_node_t *out = NULL;
    if (exact && !is_stored(r, exact)) {
        out = stored_above(r, text, path);
        *complete = out != NULL;
        if (!out)
            out = stored_children(r, text, hearth_node_null());
    }
    hearth__free(exact);
    hearth__free(text);
    return out;
}


/* ---- the cache on disk: storing and replaying ---- */

/* Stores the server data of every view that has it complete, then prunes
 * what no view holds past the bound. */
void hearth__remote_save_views(hearth__remote *r) {
    if (!r->disk)
        return;
    size_t n = 0;
    HEARTH__LIST_EACH(q, &r->listens)
        n++;
    char **keys = hearth__calloc(n ? n : 1, sizeof *keys);
    size_t k = 0;
    HEARTH__LIST_EACH_ITEM(l, &r->listens, listen_rec, link) {
        if (!keys)
            break;
        const hearth__sview *sv = hearth__sview_of(l->view);
        if (hearth__remote_is_info(l->path) || !sv || !sv->ready)
            continue;
        char *key = view_key(l->path, l->query);
        if (!key)
            continue;
        keys[k++] = key;
        if (!sv->server.complete)
            continue;
        hearth__buf b;
        hearth__buf_init(&b);
        hearth__node_encode(sv->server.node, &b);
        if (!b.failed)
            hearth__disk_put(r->disk, key, b.data, b.len);
        hearth__buf_free(&b);
    }
    hearth__disk_prune(r->disk, (const char *const *)keys, k);
    for (size_t i = 0; i < k; i++)
        hearth__free(keys[i]);
    hearth__free(keys);
}

/* A stored pending write, laid over the data again and queued to send. */
static void replay_write(int64_t id, const char *action, const char *body,
                         void *ctx) {
    hearth__remote *r = ctx;
    json_t *b = json_loads(body, 0, NULL);
    const char *path = json_string_value(json_object_get(b, "p"));
    json_t *data = json_object_get(b, "d");
    write_rec *w = hearth__calloc(1, sizeof *w);
    hearth__path p;
    int rc = b && path && data && w &&
                     !hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &p, NULL)
                 ? 0
                 : HEARTH_EINVAL;
    if (!rc && !strcmp(action, "p")) {
        hearth_node_t *value = NULL, *local = NULL;
        rc = hearth_node_from_jansson(data, HEARTH_JSON_ALLOW_SERVER_VALUES, &value, NULL);
        if (!rc && !(local = hearth__remote_estimate(r, &p, value)))
            rc = HEARTH_ENOMEM;
        if (!rc)
            rc = hearth__sync_user_set(&r->sync, &p, local, id, true);
        hearth_node_decref(value);
        hearth_node_decref(local);
        if (w)
            w->action = "p";
    } else if (!rc && !strcmp(action, "m") && json_is_object(data)) {
        hearth__ptree *merge = NULL;
        const char *key;
        json_t *v;
        rc = hearth__ptree_create(&merge);
        json_object_foreach(data, key, v) {
            hearth__path at;
            hearth_node_t *value = NULL, *local = NULL;
            if (!rc && (hearth__path_parse(key, HEARTH__PATH_ALLOW_PRIORITY, &at, NULL) ||
                        hearth_node_from_jansson(v, HEARTH_JSON_ALLOW_SERVER_VALUES,
                                                 &value, NULL)))
                rc = HEARTH_EINVAL;
            if (!rc && !(local = hearth__remote_estimate(r, &at, value)))
                rc = HEARTH_ENOMEM;
            hearth__spath sp;
            if (!rc) {
                hearth__spath_from(&sp, &at);
                rc = hearth__ptree_set(merge, sp.seg, sp.n, local);
            }
            hearth_node_decref(value);
            hearth_node_decref(local);
        }
        if (!rc)
            rc = hearth__sync_user_merge(&r->sync, &p, merge, id);
        else
            hearth__ptree_free(merge);
        if (w)
            w->action = "m";
    } else if (!rc) {
        rc = HEARTH_EINVAL;
    }
    if (rc) {
        /* Unreadable: it can never be sent; drop it rather than block
         * the writes behind it. */
        hearth__log(HEARTH_LOG_ERROR, "dropping an unreadable stored write %lld",
                (long long)id);
        hearth__disk_write_remove(r->disk, id);
        json_decref(b);
        hearth__free(w);
        return;
    }
    w->id = id;
    w->body = b;
    if (id >= r->next_write)
        r->next_write = id + 1;
    hearth__remote_enqueue_write(r, w);
}

int hearth__remote_use_disk(hearth__remote *r, hearth__disk *disk) {
    r->disk = disk;
    r->sync.stored = stored_for_view;
    r->sync.stored_ctx = r;
    hearth__disk_writes(disk, replay_write, r);
    hearth__remote_raise_events(r);
    return 0;
}
