/*
 * pattern.h - the path patterns of database triggers, as the function SDKs
 * write them (Eventarc's path patterns): segments separated by '/', each a
 * literal key, a literal with '*' globs ("msg-*"), '*' (any one key),
 * "{name}" or "{name=*}" (any one key, captured as params[name]), or, as
 * the last segment only, "**" or "{name=**}" (zero or more keys). An
 * instance (namespace) pattern is one such segment. Internal to triggers/.
 */
#ifndef HEARTH_TRIGGERS_PATTERN_H
#define HEARTH_TRIGGERS_PATTERN_H

#include "path/path.h"

typedef enum hearth__seg_kind {
    HEARTH__SEG_LITERAL, /* the key itself */
    HEARTH__SEG_GLOB,    /* a literal with '*' standing for any characters */
    HEARTH__SEG_ONE,     /* any one key ('*', {x}, {x=*}) */
    HEARTH__SEG_REST     /* zero or more keys ('**', {x=**}); last only */
} hearth__seg_kind;

typedef struct hearth__pattern_seg {
    hearth__seg_kind kind;
    char *text;    /* the literal or glob; NULL for ONE and REST */
    char *capture; /* the param's name, or NULL */
} hearth__pattern_seg;

typedef struct hearth__pattern {
    char *source; /* as given, without leading and trailing '/' */
    hearth__pattern_seg *segs;
    unsigned n;
    bool rest; /* the last segment is REST */
} hearth__pattern;

/* Parses text ("/messages/{id}/original"; "" or "/" is the root). A bad
 * pattern (an empty segment, '{' without its '}', a capture name that is
 * not letters, digits and '_', "**" before the end, a key the database
 * refuses, more than HEARTH_MAX_DEPTH segments) is HEARTH_EINVAL with err
 * naming what was wrong. On success free with hearth__pattern_free. */
int hearth__pattern_parse(const char *text, hearth__pattern *out,
                          hearth_error_t *err);
void hearth__pattern_free(hearth__pattern *p);

/* Whether one key matches seg (LITERAL, GLOB or ONE). */
bool hearth__pattern_seg_matches(const hearth__pattern_seg *seg,
                                 const char *key, size_t len);
/* Whether a one-segment pattern (an instance pattern) matches name. */
bool hearth__pattern_matches_name(const hearth__pattern *p, const char *name);
/* Whether keys [0, n) of path match the pattern's first n segments (a
 * REST segment matches whatever follows). */
bool hearth__pattern_prefix_matches(const hearth__pattern *p,
                                    const hearth__path *path, unsigned n);
/* Whether the whole path matches the pattern. */
bool hearth__pattern_matches(const hearth__pattern *p,
                             const hearth__path *path);

#endif
