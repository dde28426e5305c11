/*
 * path.h - parsing and validating keys and paths.
 *
 * A path is keys joined by '/'; empty segments (leading, trailing, repeated
 * slashes) are ignored. Segments are borrowed views into the parsed string,
 * which must outlive the hearth__path.
 */
#ifndef HEARTH_PATH_PATH_H
#define HEARTH_PATH_PATH_H

#include "path/key.h"

enum {
    HEARTH__PATH_ALLOW_PRIORITY = 0x1, /* may end in ".priority" */
    HEARTH__PATH_ALLOW_INFO = 0x2,     /* may start with ".info" */
};

typedef struct hearth__path {
    unsigned n;       /* keys, not counting a final .priority */
    bool priority;    /* ended in ".priority" */
    bool info;        /* started with ".info" (seg[0] is ".info") */
    hearth__name seg[HEARTH_MAX_DEPTH];
} hearth__path;

int hearth__path_parse(const char *s, unsigned flags, hearth__path *out,
                       hearth_error_t *err);

/* Checks one key; `where` (may be NULL) names the location for messages. */
int hearth__key_check(const char *s, size_t len, const char *where,
                      hearth_error_t *err);

/* Checks a query bound's tie-breaking key: the characters of a key, but
 * longer. The SDKs turn startAfter / endBefore with a key into a bound
 * at its neighbour, padded to 786 UTF-16 units (up to 2,358 bytes): no
 * stored key, and never stored. */
#define HEARTH__MAX_BOUND_KEY_BYTES 4096
int hearth__bound_key_check(const char *s, size_t len, hearth_error_t *err);

/* Writes "/a/b" for the first `upto` segments (truncated to size). */
void hearth__path_format(const hearth__path *p, unsigned upto, char *buf,
                         size_t size);

/* Whether a is a prefix of (or equal to) b, segment by segment. */
bool hearth__path_is_prefix(const hearth__path *a, const hearth__path *b);

#endif
