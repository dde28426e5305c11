/* check.c - checking the arguments of public calls (db/check.h). */
#include "db/check.h"

#include <string.h>

/* Copies path into *text and parses it there (segments point into it). */
int hearth__db_parse_path(const char *path, unsigned flags, char **text,
                          hearth__path *parsed, hearth_error_t *err) {
    if (!path)
        return hearth__error(err, HEARTH_EINVAL, NULL, "path is NULL");
    *text = hearth__strndup(path, strlen(path));
    if (!*text)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = hearth__path_parse(*text, flags | HEARTH__PATH_ALLOW_INFO, parsed,
                                err);
    if (rc) {
        hearth__free(*text);
        *text = NULL;
    }
    return rc;
}

/* The same for a location to write to, which may not be under /.info. */
int hearth__db_parse_write_path(const char *path, unsigned flags, char **text,
                                hearth__path *parsed, hearth_error_t *err) {
    int rc = hearth__db_parse_path(path, flags, text, parsed, err);
    if (!rc && parsed->info) {
        hearth__free(*text);
        *text = NULL;
        rc = hearth__error(err, HEARTH_EREADONLY, path,
                           "cannot write to \"%s\": /.info is read-only", path);
    }
    return rc;
}

/* Checks one value written at a parsed path. */
int hearth__db_check_value(const hearth__path *p, const hearth_node_t *value,
                           const char *text, hearth_error_t *err) {
    if (!value)
        return hearth__error(err, HEARTH_EINVAL, text, "value is NULL");
    if (p->priority) {
        hearth_type t = hearth_node_type(value);
        if ((t != HEARTH_TYPE_NULL && t != HEARTH_TYPE_NUMBER &&
             t != HEARTH_TYPE_STRING && t != HEARTH_TYPE_SERVER_VALUE) ||
            value->priority)
            return hearth__error(err, HEARTH_EPRIORITY, text,
                                 "invalid priority at %s: must be null, a "
                                 "number, a string or a server value",
                                 text);
        return 0;
    }
    if (p->n + (unsigned)hearth__node_depth(value) > HEARTH_MAX_DEPTH)
        return hearth__error(err, HEARTH_EDEPTH, text,
                             "writing at \"%s\" would nest data deeper than "
                             "%d levels",
                             text, HEARTH_MAX_DEPTH);
    return 0;
}

int hearth__db_write_op_create(size_t nparts, hearth_completion_cb cb,
                               void *ctx, hearth_free_cb ctx_free,
                               hearth__db_op **out) {
    hearth__db_op *o;
    if (hearth__db_op_create(OP_WRITE, &o))
        return HEARTH_ENOMEM;
    o->parts = hearth__calloc(nparts ? nparts : 1, sizeof *o->parts);
    if (!o->parts) {
        hearth__free(o);
        return HEARTH_ENOMEM;
    }
    o->nparts = nparts;
    o->done = cb;
    o->ctx = ctx;
    o->ctx_free = ctx_free;
    *out = o;
    return 0;
}

/* Frees a write op that was never submitted, without its callbacks. */
int hearth__db_drop_op(hearth__db_op *o, int rc) {
    o->ctx_free = NULL;
    hearth__db_op_free(o);
    return rc;
}

int hearth__db_set_op(const char *path, const hearth_node_t *value,
                      hearth_completion_cb cb, void *ctx,
                      hearth_free_cb ctx_free, hearth__db_op **out,
                      hearth_error_t *err) {
    hearth__db_op *o;
    if (hearth__db_write_op_create(1, cb, ctx, ctx_free, &o))
        return hearth__error_code(err, HEARTH_ENOMEM);
    hearth__db_write_part *w = &o->parts[0];
    int rc = hearth__db_parse_write_path(path, HEARTH__PATH_ALLOW_PRIORITY,
                                         &w->text, &w->path, err);
    if (!rc)
        rc = hearth__db_check_value(&w->path, value, path, err);
    if (rc)
        return hearth__db_drop_op(o, rc);
    w->value = hearth_node_incref(value);
    *out = o;
    return 0;
}

/* Joins base and a relative path into one owned string ("/" and "a" make
 * "/a", not "//a": the text names the path in messages). */
char *hearth__db_join(const char *base, const char *rel) {
    size_t bl = strlen(base), rl = strlen(rel);
    while (bl && base[bl - 1] == '/')
        bl--;
    char *s = hearth__malloc(bl + rl + 2);
    if (s) {
        memcpy(s, base, bl);
        s[bl] = '/';
        memcpy(s + bl + 1, rel, rl + 1);
    }
    return s;
}
int hearth__db_queue(hearth_db_t *db, hearth__db_op *o, hearth_error_t *err) {
    int rc = hearth__db_submit(db, o);
    return rc ? hearth__error_code(err, rc) : 0;
}
