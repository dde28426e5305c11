/*
 * expr.h - the rules expression language (internal): parsing a rule's
 * expression once into a tree, and evaluating it against a request.
 *
 * The language is ../shared/reference/rules.md's: literals, the variables
 * auth, now, root, data, newData, query and $wildcards, snapshot methods,
 * string members and methods, regex literals (a documented subset), and
 * the operators with no type coercion. Any error while evaluating (a type
 * mismatch, a missing value) makes the whole expression false: the caller
 * only ever sees true or false.
 */
#ifndef HEARTH_RULES_EXPR_H
#define HEARTH_RULES_EXPR_H

#include "tree/node.h"

typedef struct hearth__expr hearth__expr;

/* Parses text. On error, err names the column (in err->column, 1-based)
 * and the offending text. */
int hearth__expr_parse(const char *text, hearth__expr **out,
                       hearth_error_t *err);
void hearth__expr_free(hearth__expr *e);

/* What an expression sees. Nodes are borrowed for the call. */
typedef struct hearth__expr_env {
    const hearth_node_t *auth;     /* NULL or null: unauthenticated */
    double now;                    /* server time, ms */
    const hearth_node_t *root;     /* the data before the operation */
    const hearth_node_t *new_root; /* after it (writes), else NULL */
    const char *path;              /* the rule's location, "/a/b" */
    const hearth_node_t *query;    /* read rules: the query variable */
    /* $wildcards bound on the way: names ("$uid") and keys. */
    const char *const *wild_names;
    const char *const *wild_keys;
    size_t nwild;
} hearth__expr_env;

/* Whether e reads the variable `name` ("newData", say) anywhere. */
bool hearth__expr_uses(const hearth__expr *e, const char *name);

/* What an expression came to: the rules' coverage counts each kind
 * (an error, such as a type mismatch or a non-boolean result, denies as
 * false does, but is counted apart so that it can be seen). */
typedef enum {
    HEARTH__EXPR_FALSE = 0,
    HEARTH__EXPR_TRUE = 1,
    HEARTH__EXPR_ERROR = 2
} hearth__expr_result;

/* e's result in env. */
hearth__expr_result hearth__expr_result_of(const hearth__expr *e,
                                           const hearth__expr_env *env);

/* e's result in env, each sub-expression's text (in src, the text e was
 * parsed from) and value appended to out as a JSON array
 * ([{"text": "auth.uid", "value": "bob"}, ...]; an error: "value": null,
 * "error": true; a snapshot: its data, small, and "snapshot": its path),
 * in the order they were evaluated, literals left out, at most about 8 KB
 * of them. */
hearth__expr_result hearth__expr_trace(const hearth__expr *e,
                                       const hearth__expr_env *env,
                                       const char *src, hearth__buf *out);

/* Whether e is true in env; any error is false. */
bool hearth__expr_eval(const hearth__expr *e, const hearth__expr_env *env);

#endif
