/* json.h - JSON conversion of nodes (internal entry points). */
#ifndef HEARTH_TREE_JSON_H
#define HEARTH_TREE_JSON_H

#include "common/internal.h"
#include "tree/children.h"

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

/* Children being gathered for an object node, in any order. */
typedef struct hearth__kids {
    hearth__entry *e;
    size_t n, cap;
} hearth__kids;

/* Adds key -> child unless child is empty (null); takes over child. */
int hearth__kids_add(hearth__kids *k, const char *key, size_t len,
                     hearth_node_t *child);
void hearth__kids_free(hearth__kids *k);
/* The object node of the children (null when none); k is emptied either
 * way. HEARTH_EJSON when a key came twice. */
int hearth__kids_node(hearth__kids *k, hearth_node_t **out);

/* Parses the usual JSON (keys that are plain names, no ".priority",
 * ".value" or ".sv", within max_depth keys and the size limits) straight
 * into a node, with no jansson values between. HEARTH__JSON_UNUSUAL when
 * the text is anything else, malformed included, or memory ran out: the
 * caller then takes the full path through jansson, which gives the same
 * nodes and names what is wrong. Nothing is left allocated then. */
#define HEARTH__JSON_UNUSUAL 1
/* A flag of hearth_node_from_jansson beside the public ones: object keys
 * need only be non-empty (a verified token's claims as the rules' auth,
 * which keeps their keys as the issuer wrote them). */
#define HEARTH__JSON_CLAIM_KEYS 0x100u
int hearth__json_parse_plain(const char *text, size_t len, unsigned max_depth,
                             hearth_node_t **out);

/* A reader of the usual JSON for formats made of JSON values (a log
 * record's [[path, value], ...]): the same rules as
 * hearth__json_parse_plain, one token or value at a time. Each read gives
 * HEARTH__JSON_UNUSUAL (or false) when the text is not what was asked or
 * not plain, and the caller then takes the full path through jansson. */
typedef struct hearth__json_reader {
    const char *p, *end;
    unsigned max_depth;
    char *scratch; /* decoded strings with escapes */
    size_t scratch_cap;
} hearth__json_reader;

void hearth__json_reader_init(hearth__json_reader *r, const char *text,
                              size_t len);
void hearth__json_reader_done(hearth__json_reader *r);
/* Takes c after any space. */
bool hearth__json_read_char(hearth__json_reader *r, char c);
/* Whether only space is left. */
bool hearth__json_read_end(hearth__json_reader *r);
/* A string: *s points into the text, or (with escapes) into the reader's
 * scratch buffer until its next read. */
int hearth__json_read_string(hearth__json_reader *r, const char **s,
                             size_t *len);
/* A plain value within max_depth keys: a new reference in *out. */
int hearth__json_read_value(hearth__json_reader *r, unsigned max_depth,
                            hearth_node_t **out);

/* Appends node as JSON text (HEARTH_JSON_* flags). */
void hearth__node_write_json(hearth__buf *b, const hearth_node_t *n,
                             unsigned flags);
void hearth__json_write_string(hearth__buf *b, const char *s, size_t len);

/* Whether an object node reads back as an array. */
bool hearth__node_is_array(const hearth_node_t *n);

#endif
