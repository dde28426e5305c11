/* check.h - what the public calls check before anything is queued: paths
 * parsed into an operation's own copy, values written at them, multi-path
 * updates (db/update.c). A refused call changes nothing and names what was
 * wrong. Any thread. Internal to db/. */
#ifndef HEARTH_DB_CHECK_H
#define HEARTH_DB_CHECK_H

#include "db/db.h"
#include "db/handle.h"

/* Copies path into *text and parses it there (segments point into it). */
int hearth__db_parse_path(const char *path, unsigned flags, char **text,
                          hearth__path *parsed, hearth_error_t *err);
/* The same for a location to write to, which may not be under /.info. */
int hearth__db_parse_write_path(const char *path, unsigned flags, char **text,
                                hearth__path *parsed, hearth_error_t *err);
/* Checks one value written at a parsed path (text names it). */
int hearth__db_check_value(const hearth__path *p, const hearth_node_t *value,
                           const char *text, hearth_error_t *err);
/* A write operation with room for nparts parts: 0 and *out, or
 * HEARTH_ENOMEM with *out untouched. */
int hearth__db_write_op_create(size_t nparts, hearth_completion_cb cb,
                               void *ctx, hearth_free_cb ctx_free,
                               hearth__db_op **out);
/* A checked one-part write of value at path (a set), not yet
 * submitted. */
int hearth__db_set_op(const char *path, const hearth_node_t *value,
                      hearth_completion_cb cb, void *ctx,
                      hearth_free_cb ctx_free, hearth__db_op **out,
                      hearth_error_t *err);
/* Frees an operation that was never submitted, without its callbacks;
 * returns rc. */
int hearth__db_drop_op(hearth__db_op *o, int rc);
/* Joins base and a relative path into one owned string ("/" and "a" make
 * "/a", not "//a": the text names the path in messages). */
char *hearth__db_join(const char *base, const char *rel);
/* Submits o; a refusal becomes err. */
int hearth__db_queue(hearth_db_t *db, hearth__db_op *o, hearth_error_t *err);

/* A checked multi-path update of `count` parts below path, not yet
 * submitted (db/update.c). */
int hearth__db_update_op(const char *path, size_t count,
                         const char *const *paths,
                         const hearth_node_t *const *values,
                         hearth_completion_cb cb, void *ctx,
                         hearth_free_cb ctx_free, hearth__db_op **out,
                         hearth_error_t *err);

#endif
