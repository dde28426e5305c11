/* realtime_push.c - a listen's changes as v5 pushes: the smallest one (a
 * `d` at the deepest changed location, or an `m` of several changed
 * children; filtered queries get whole values, their windows move),
 * built, serialized and framed once for every listen it fits.
 *
 * Listens of one location (with the same query and tag, or none) are
 * raised one after another with the same new value and usually hold the
 * same previous one: their pushes are byte for byte the same. The last
 * push made is kept (srv->push_memo) with what it was made from, so the
 * next listen it fits shares its frames (hearth__shared_buf) instead of
 * building, serializing, framing and copying its own. Which listens are
 * raised at all (the rules, each query's window) is decided before: a
 * listen only ever gets the push of its own path, tag and values. */
#include "server/realtime_internal.h"

#include "server/changes.h"
#include "tree/json.h"

#include <stdlib.h>
#include <string.h>

/* listen path + relative change path ("/" means the listen path). */
static char *join_path(const char *base, const char *rel) {
    size_t blen = strlen(base);
    while (blen > 1 && base[blen - 1] == '/')
        blen--;
    if (strcmp(rel, "/") == 0)
        return hearth__strndup(base, blen);
    size_t rlen = strlen(rel);
    char *p = hearth__malloc(blen + rlen + 1);
    if (p) {
        size_t skip = blen == 1 && base[0] == '/'; /* "/" + "/a" is "/a" */
        memcpy(p, base, blen - skip);
        memcpy(p + blen - skip, rel, rlen + 1);
    }
    return p;
}

/* An `m` push: the changed children of c.node at path. */
static json_t *merge_msg(const char *path, const hearth__change *c) {
    json_t *merge = json_object();
    for (size_t i = 0; merge && i < c->nkeys; i++) {
        hearth__name name = hearth__key_name(c->keys[i]);
        json_object_set_new(merge, c->keys[i]->s,
                            hearth_node_to_jansson(
                                hearth__node_child(c->node, &name),
                                HEARTH_JSON_EXPORT));
    }
    json_t *body = json_pack("{s:s,s:o}", "p", path, "d", merge);
    return json_pack("{s:s,s:{s:s,s:o}}", "t", "d", "d", "a", "m", "b", body);
}

/* The push from old (NULL: none, the whole value goes) to now, as a
 * message; NULL when nothing changed (or out of memory). */
static json_t *change_msg(const listen_t *l, const hearth_node_t *old,
                          const hearth_node_t *now) {
    if (!old)
        return hearth__realtime_data_msg(l->path, now, l->tag);
    hearth__buf scratch;
    hearth__buf_init(&scratch);
    hearth__change c;
    json_t *msg = NULL;
    if (hearth__smallest_change(old, now, HEARTH_JSON_EXPORT, &scratch, &c)) {
        char *path = join_path(l->path, c.path);
        if (!path)
            msg = hearth__realtime_data_msg(l->path, now, l->tag);
        else if (!c.nkeys)
            msg = hearth__realtime_data_msg(path, c.node, l->tag);
        else
            msg = merge_msg(path, &c);
        hearth__free(path);
    }
    hearth__buf_free(&scratch);
    return msg;
}

static int add_frame(void *out, const char *piece, size_t len) {
    hearth__ws_frame_text(out, piece, len);
    return 0;
}

/* msg (taken) serialized and framed, in v5 pieces when long; an empty
 * buffer for no message. NULL: out of memory. */
static hearth__shared_buf *frames_of(json_t *msg) {
    char *text = msg ? json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    bool failed = msg && !text;
    json_decref(msg);
    hearth__buf out;
    hearth__buf_init(&out);
    if (text)
        hearth__v5_send(text, strlen(text), SIZE_MAX, add_frame, &out);
    free(text);
    hearth__shared_buf *frames =
        out.failed || failed
            ? NULL
            : hearth__shared_buf_create(out.data ? out.data : "", out.len);
    hearth__buf_free(&out);
    return frames;
}

static void memo_clear(hearth__push_memo *m) {
    hearth_node_decref(m->old);
    hearth_node_decref(m->now);
    hearth__free(m->path);
    json_decref(m->tag);
    hearth__shared_buf_release(m->frames);
    m->old = m->now = NULL;
    m->path = NULL;
    m->tag = NULL;
    m->frames = NULL;
}

void hearth__realtime_forget_pushes(hearth__server *srv) {
    memo_clear(&srv->push_memo);
}

static bool memo_fits(const hearth__push_memo *m, const listen_t *l,
                      const hearth_node_t *old, const hearth_node_t *now) {
    return m->frames && m->now == now && m->old == old &&
           strcmp(m->path, l->path) == 0 &&
           (m->tag == l->tag || (m->tag && l->tag && json_equal(m->tag, l->tag)));
}

/* The frames of l's push to now: the last ones made when they fit (else
 * *built). */
static hearth__shared_buf *frames_for(listen_t *l, const hearth_node_t *now,
                                      bool *built) {
    hearth__push_memo *m = &l->s->srv->push_memo;
    const hearth_node_t *old = l->filtered ? NULL : l->last;
    *built = !memo_fits(m, l, old, now);
    if (!*built)
        return m->frames;
    char *path = hearth__strndup(l->path, strlen(l->path));
    hearth__shared_buf *frames = path ? frames_of(change_msg(l, old, now)) : NULL;
    if (!frames) {
        hearth__free(path);
        return NULL;
    }
    memo_clear(m);
    m->old = old ? hearth_node_incref(old) : NULL;
    m->now = hearth_node_incref(now);
    m->path = path;
    m->tag = l->tag ? json_incref(l->tag) : NULL;
    m->frames = frames;
    return frames;
}

/* Counts a push in hearth_realtime_pushes_total, by how it was made: an
 * operator (and a test) sees how much a fan-out shares. */
static void count_push(hearth__server *srv, bool built) {
    static const char *const keys[2] = {
        "hearth_realtime_pushes_total{how=\"shared\"}",
        "hearth_realtime_pushes_total{how=\"built\"}"};
    size_t *at = &srv->push_memo.counters[built];
    if (!*at)
        *at = hearth__metrics_add(&srv->metrics, keys[built], 0);
    if (*at)
        srv->metrics.counters[*at - 1].value++;
}

void hearth__realtime_push_change(listen_t *l, const hearth_node_t *now) {
    bool built;
    hearth__shared_buf *frames = frames_for(l, now, &built);
    if (!frames || !frames->len || !l->s->ws)
        return;
    count_push(l->s->srv, built);
    hearth__ws_send_shared(l->s->ws, frames);
}
