/* realtime_listen.c - a realtime session's reads: listens (value observers
 * whose changes go out as the smallest `d` or `m` push), unlistens, gets,
 * the wire query object, and the read rules that admit them. */
#include "server/realtime_internal.h"

#include "query/query.h"

#include <string.h>

static void listen_free(void *ctx) {
    listen_t *l = ctx;
    l->s->nlistens--;
    json_decref(l->wire_query);
    hearth_node_decref(l->last);
    hearth__free(l->key); /* path and identity with it */
    json_decref(l->tag);
    hearth__realtime_session_release(l->s);
    hearth__free(l);
}

/* ---- the session's listens: a list, and an index by (path, query) ---- */

/* A session holding at most this many listens walks its list; past it,
 * it keeps an index (a walk over 10,000 listens, one cache miss each, was
 * a millisecond of the loop per unlisten, for any peer to repeat). */
#define INDEX_FROM 8

/* A listen's key: "path", NUL, "identity" (no byte of either is a NUL),
 * in one block (hearth__free it); NULL when memory fails. */
static char *listen_key(const char *path, const char *identity,
                        size_t *len) {
    size_t plen = strlen(path), ilen = strlen(identity);
    char *key = hearth__malloc(plen + ilen + 2);
    if (key) {
        memcpy(key, path, plen + 1);
        memcpy(key + plen + 1, identity, ilen + 1);
        *len = plen + 1 + ilen;
    }
    return key;
}

static void index_drop(session *s) {
    hearth__map_free(&s->index);
    s->indexed = false;
}

/* Puts l first among the listens of its key (a client may listen twice
 * alike: the newest is the one found, the older one after it). */
static bool index_add(session *s, listen_t *l) {
    l->same_key = hearth__map_get(&s->index, l->key, l->key_len);
    return hearth__map_put(&s->index, l->key, l->key_len, l) == 0;
}

/* Makes the index anew from the list, oldest first so that the newest
 * of a key comes first; without memory there is none (finding walks the
 * list: slower, still right). */
static void index_build(session *s) {
    index_drop(s);
    s->indexed = true;
    for (hearth__list *n = hearth__list_last(&s->listens); n && s->indexed;
         n = hearth__list_prev(&s->listens, n))
        if (!index_add(s, HEARTH__LISTEN_OF(n)))
            index_drop(s);
}

void hearth__realtime_listen_link(session *s, listen_t *l) {
    hearth__list_push_front(&s->listens, &l->link);
    if (s->indexed) {
        if (!index_add(s, l))
            index_drop(s);
    } else if (s->nlistens > INDEX_FROM) {
        index_build(s);
    }
}

void hearth__realtime_listen_unlink(session *s, listen_t *l) {
    hearth__list_remove(&l->link);
    if (s->indexed) {
        listen_t *first = hearth__map_get(&s->index, l->key, l->key_len);
        if (first == l && l->same_key) /* the next one's key: no growth */
            hearth__map_put(&s->index, l->same_key->key, l->key_len,
                            l->same_key);
        else if (first == l)
            hearth__map_remove(&s->index, l->key, l->key_len);
        for (listen_t *p = first; p && p != l; p = p->same_key)
            if (p->same_key == l)
                p->same_key = l->same_key;
    }
    if (hearth__list_empty(&s->listens)) /* listening again starts small */
        index_drop(s);
}

/* The session's listen of path under the query of that identity (the
 * newest, when the client listened alike twice). */
static listen_t *find_listen(session *s, const char *path,
                             const char *identity) {
    size_t len;
    char *key = listen_key(path, identity, &len);
    listen_t *found = NULL;
    if (key && s->indexed) {
        found = hearth__map_get(&s->index, key, len);
    } else if (key) {
        HEARTH__LIST_EACH_ITEM(l, &s->listens, listen_t, link)
            if (l->key_len == len && memcmp(l->key, key, len) == 0) {
                found = l;
                break;
            }
    }
    hearth__free(key);
    return found;
}

/* Whether the client already holds now: the first value, hashed as the
 * client hashed its cache (the listen's h). The service answers such a
 * listen with ok alone; a reconnecting client then sends no data back. */
static bool client_has(listen_t *l, const hearth_node_t *now) {
    if (!l->has_client_hash)
        return false;
    l->has_client_hash = false; /* later values are changes */
    char mine[HEARTH_HASH_SIZE];
    return !hearth_node_hash(now, mine) && strcmp(mine, l->client_hash) == 0;
}

static void on_value(const hearth_event_t *ev, void *ctx) {
    listen_t *l = ctx;
    if (l->s->ws && !client_has(l, ev->node))
        hearth__realtime_push_change(l, ev->node);
    hearth_node_decref(l->last);
    l->last = hearth_node_incref(ev->node);
}

/* The query of a wire query object (see wire-v5.md); NULL for none. */
static int wire_query(json_t *qo, hearth_query_t **out, hearth_error_t *err) {
    *out = NULL;
    if (!qo || json_is_null(qo) || (json_is_object(qo) && !json_object_size(qo)))
        return 0;
    if (!json_is_object(qo))
        return hearth__error(err, HEARTH_EQUERY, NULL, "q must be an object");
    hearth_query_t *q;
    int rc = hearth_query_create(&q);
    json_t *i = json_object_get(qo, "i");
    if (!rc && json_is_string(i)) {
        const char *by = json_string_value(i);
        rc = strcmp(by, ".key") == 0     ? hearth_query_order_by_key(q, err)
             : strcmp(by, ".value") == 0 ? hearth_query_order_by_value(q, err)
             : strcmp(by, ".priority") == 0
                 ? hearth_query_order_by_priority(q, err)
                 : hearth_query_order_by_child(q, by, err);
    }
    static const char *const ends[2][3] = {{"sp", "sn", "sin"},
                                           {"ep", "en", "ein"}};
    for (int e = 0; !rc && e < 2; e++) {
        json_t *v = json_object_get(qo, ends[e][0]);
        if (!v)
            continue;
        json_t *name = json_object_get(qo, ends[e][1]);
        const char *key = json_string_value(name);
        /* The sentinels the SDKs name (Android's largest is "[MAX_KEY]"),
         * which the builder picks itself. */
        int sentinel = 0;
        if (key && !strcmp(key, "[MIN_NAME]"))
            sentinel = -1;
        else if (key && (!strcmp(key, "[MAX_NAME]") || !strcmp(key, "[MAX_KEY]")))
            sentinel = 1;
        if (sentinel)
            key = NULL;
        json_t *inc = json_object_get(qo, ends[e][2]);
        bool inclusive = !inc || json_is_true(inc);
        /* No key equals a sentinel, so it alone says which bound this is:
         * (v, MAX) to start is startAfter(v), (v, MIN) to end is
         * endBefore(v), whether "sin"/"ein" say so (JS) or are left out
         * (iOS, Android); the other two are startAt / endAt. */
        if (sentinel && q->index != HEARTH__INDEX_KEY)
            inclusive = e == 0 ? sentinel < 0 : sentinel > 0;
        hearth_node_t *value;
        rc = hearth_node_from_jansson(v, 0, &value, err);
        if (rc)
            break;
        rc = e == 0 ? (inclusive ? hearth_query_start_at : hearth_query_start_after)(
                          q, value, key, err)
                    : (inclusive ? hearth_query_end_at : hearth_query_end_before)(
                          q, value, key, err);
        hearth_node_decref(value);
    }
    json_t *l = json_object_get(qo, "l");
    if (!rc && l) {
        json_t *vf = json_object_get(qo, "vf");
        bool last = json_is_string(vf) && strcmp(json_string_value(vf), "r") == 0;
        rc = !json_is_integer(l) || json_integer_value(l) <= 0 ||
                     json_integer_value(l) > UINT32_MAX
                 ? hearth__error(err, HEARTH_EQUERY, NULL, "l must be a positive integer")
             : last ? hearth_query_limit_to_last(q, (uint32_t)json_integer_value(l), err)
                    : hearth_query_limit_to_first(q, (uint32_t)json_integer_value(l), err);
    }
    if (rc) {
        hearth_query_free(q);
        return rc;
    }
    *out = q;
    return 0;
}


/* Whether the session may read a valid path (a malformed one: never). */
bool hearth__realtime_may_read(session *s, const char *path, json_t *wire_q) {
    hearth_node_t *q = s->who.admin ? NULL : hearth__rules_query_variable(wire_q);
    bool ok = hearth__ns_may_read(s->ns, &s->who, path, q);
    hearth_node_decref(q);
    return ok;
}


/* A listen's or get's path and query: answered (invalid_args, else
 * permission_denied) and false unless both are valid and may be read. */
static bool read_request(session *s, json_int_t r, json_t *b,
                         const char **path, hearth_query_t **q) {
    *path = json_string_value(json_object_get(b, "p"));
    hearth_error_t err = {0};
    *q = NULL;
    if (!*path || wire_query(json_object_get(b, "q"), q, &err) ||
        hearth_validate_path(*path, &err)) {
        hearth_query_free(*q);
        hearth__realtime_reply(s, r, "invalid_args", json_string(*path ? err.message : "p is missing"));
        return false;
    }
    if (!hearth__realtime_may_read(s, *path, json_object_get(b, "q"))) {
        hearth_query_free(*q);
        hearth__realtime_deny(s, r);
        return false;
    }
    return true;
}

void hearth__realtime_listen(session *s, json_int_t r, json_t *b) {
    const char *path;
    hearth_query_t *q;
    hearth_error_t err = {0};
    if (!read_request(s, r, b, &path, &q))
        return;
    if (s->nlistens >= MAX_LISTENS) {
        hearth_query_free(q);
        hearth__realtime_reply(s, r, "too_many_listens",
              json_sprintf("This connection holds %d listens, the most it may",
                           MAX_LISTENS));
        return;
    }
    listen_t *l = hearth__calloc(1, sizeof *l);
    if (l) {
        s->nlistens++; /* listen_free counts it out */
        l->s = s;
        json_t *wq = json_object_get(b, "q");
        l->wire_query = wq ? json_incref(wq) : NULL;
        char *identity = hearth__query_identity(q);
        l->key = identity ? listen_key(path, identity, &l->key_len) : NULL;
        hearth__free(identity);
        if (l->key) {
            l->path = l->key;
            l->identity = l->key + strlen(path) + 1;
        }
        json_t *tag = json_object_get(b, "t");
        l->tag = tag && !json_is_null(tag) ? json_incref(tag) : NULL;
        l->filtered = !hearth__query_loads_all(q);
        const char *h = json_string_value(json_object_get(b, "h"));
        /* An empty h is what every client holding nothing sends (the
         * hash of its empty cache), so it proves nothing: such a listen
         * gets its data, null included, as the protocol describes. A
         * longer one than ours is no hash of ours. */
        if (h && *h && strlen(h) < HEARTH_HASH_SIZE) {
            strcpy(l->client_hash, h);
            l->has_client_hash = true;
        }
    }
    if (!l || !l->key) {
        if (l) {
            s->refs++; /* listen_free releases one */
            listen_free(l);
        }
        hearth_query_free(q);
        hearth__realtime_reply(s, r, "unavailable", json_string("out of memory"));
        return;
    }
    s->refs++;
    /* The data goes out (raised now, on the loop) before the ok. */
    int rc = hearth_db_observe(s->ns->db, path, q, HEARTH_MASK_VALUE, on_value, l,
                               listen_free, &l->handle, &err);
    hearth_query_free(q);
    if (rc) {
        listen_free(l);
        hearth__realtime_reply(s, r, "invalid_args", json_string(err.message));
        return;
    }
    hearth__realtime_listen_link(s, l);
    hearth__realtime_reply(s, r, "ok", NULL);
}

void hearth__realtime_unlisten(session *s, json_int_t r, json_t *b) {
    const char *path = json_string_value(json_object_get(b, "p"));
    hearth_error_t err = {0};
    hearth_query_t *q = NULL;
    if (!path || wire_query(json_object_get(b, "q"), &q, &err)) {
        hearth__realtime_reply(s, r, "invalid_args", json_string(path ? err.message : "p is missing"));
        return;
    }
    char *identity = hearth__query_identity(q);
    hearth_query_free(q);
    listen_t *l = identity ? find_listen(s, path, identity) : NULL;
    if (l) {
        hearth__realtime_listen_unlink(s, l);
        hearth_db_remove_observer(s->ns->db, l->handle); /* frees l */
    }
    hearth__free(identity);
    hearth__realtime_reply(s, r, "ok", NULL);
}


void hearth__realtime_get(session *s, json_int_t r, json_t *b) {
    const char *path;
    hearth_query_t *q;
    hearth_error_t err = {0};
    hearth_node_t *value;
    if (!read_request(s, r, b, &path, &q))
        return;
    if (hearth_db_get(s->ns->db, path, q, &value, &err)) {
        hearth_query_free(q);
        hearth__realtime_reply(s, r, "invalid_args", json_string(err.message));
        return;
    }
    hearth_query_free(q);
    hearth__realtime_reply(s, r, "ok", hearth_node_to_jansson(value, HEARTH_JSON_EXPORT));
    hearth_node_decref(value);
}
