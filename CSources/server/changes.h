/* changes.h - the smallest change between two versions of a location, as a
 * client of the service receives it: a put at the deepest single changed
 * location, or a patch of several changed children (internal). */
#ifndef HEARTH_SERVER_CHANGES_H
#define HEARTH_SERVER_CHANGES_H

#include "tree/node.h"

#define HEARTH__PATCH_MAX 64 /* more changed children than this: one put */

typedef struct hearth__change {
    const char *path;          /* relative: "/" or "/a/b" */
    const hearth_node_t *node; /* the new value at path */
    const hearth__key *keys[HEARTH__PATCH_MAX];
    size_t nkeys;              /* 0: replace (put); else patch these children */
} hearth__change;

/* Finds the change turning old into now; false when nothing a client sees
 * changed (with HEARTH_JSON_EXPORT in flags, priorities count). `path` is
 * scratch owned by the caller (hearth__buf_init / _free) that c->path
 * points into. Both versions are walked with hearth__bt_diff, so shared
 * subtrees cost nothing. */
bool hearth__smallest_change(const hearth_node_t *old, const hearth_node_t *now,
                             unsigned flags, hearth__buf *path,
                             hearth__change *c);

#endif
