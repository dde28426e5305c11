/* changes.c - the smallest put or patch between two versions. */
#include "server/changes.h"

typedef struct differing_ctx {
    hearth__change *c;
    size_t n;
} differing_ctx;

/* A replaced child counts only if its value differs. */
static int note_difference(const hearth__key *key, const hearth_node_t *old,
                           const hearth_node_t *now, void *ctx) {
    differing_ctx *d = ctx;
    if (old && now && hearth_node_equal(old, now))
        return 0;
    if (d->n < HEARTH__PATCH_MAX)
        d->c->keys[d->n] = key;
    return ++d->n > HEARTH__PATCH_MAX; /* past the max: no need to go on */
}

bool hearth__smallest_change(const hearth_node_t *old, const hearth_node_t *now,
                             unsigned flags, hearth__buf *path,
                             hearth__change *c) {
    path->len = 0;
    for (;;) {
        bool objects = old->type == HEARTH_TYPE_OBJECT &&
                       now->type == HEARTH_TYPE_OBJECT &&
                       !(flags & HEARTH_JSON_EXPORT &&
                         !hearth_node_equal(hearth__prio(old), hearth__prio(now)));
        size_t n = 0;
        if (objects) {
            differing_ctx d = {c, 0};
            hearth__bt_diff(old->u.obj.tree, now->u.obj.tree, note_difference, &d);
            n = d.n;
            if (n == 0)
                return false; /* nothing the client can see changed */
        }
        if (!objects || n > HEARTH__PATCH_MAX) {
            c->nkeys = 0;
            break;
        }
        if (n == 1) { /* one child changed: look deeper */
            hearth__name name = hearth__key_name(c->keys[0]);
            hearth__buf_addc(path, '/');
            hearth__buf_add(path, c->keys[0]->s, c->keys[0]->len);
            old = hearth__node_child(old, &name);
            now = hearth__node_child(now, &name);
            continue;
        }
        c->nkeys = n;
        break;
    }
    if (!path->len || path->failed) {
        path->failed = false;
        path->len = 0;
        hearth__buf_addc(path, '/');
    }
    c->path = path->data;
    c->node = now;
    return !path->failed;
}
