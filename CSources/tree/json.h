/* json.h - JSON conversion of nodes (internal entry points). */
#ifndef HEARTH_TREE_JSON_H
#define HEARTH_TREE_JSON_H

#include "common/internal.h"

#include <jansson.h>

/* Parses text with jansson (any value, numbers as doubles). */
int hearth__json_load(const char *text, size_t len, json_t **out,
                      hearth_error_t *err);

/* Converts JSON to a node that will be written at `base` (a path shown in
 * messages), `base_depth` keys deep, so that the whole stays within
 * HEARTH_MAX_DEPTH. */
int hearth__node_from_jansson_at(const json_t *json, unsigned flags,
                                 const char *base, unsigned base_depth,
                                 hearth_node_t **out, hearth_error_t *err);
int hearth__node_from_json_at(const char *text, size_t len, unsigned flags,
                              const char *base, unsigned base_depth,
                              hearth_node_t **out, hearth_error_t *err);

/* Appends node as JSON text (HEARTH_JSON_* flags). */
void hearth__node_write_json(hearth__buf *b, const hearth_node_t *n,
                             unsigned flags);
void hearth__json_write_string(hearth__buf *b, const char *s, size_t len);

/* Whether an object node reads back as an array. */
bool hearth__node_is_array(const hearth_node_t *n);

#endif
