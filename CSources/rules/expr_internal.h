/* expr_internal.h - what the rules expression language's files share
 * (internal to rules/): the tree's shape, and the parser's state and
 * helpers that the regex literals use too. */
#ifndef HEARTH_RULES_EXPR_INTERNAL_H
#define HEARTH_RULES_EXPR_INTERNAL_H

#include "rules/expr.h"

#include <regex.h>

/* ---- the tree ---- */

typedef enum {
    E_NULL, E_BOOL, E_NUM, E_STR, E_ARRAY, E_REGEX,
    E_VAR, E_MEMBER, E_CALL, E_UNARY, E_BINARY, E_COND,
    E_INDEX /* a[b2]: a child of auth or query by a string or a number */
} ekind;

struct hearth__expr {
    ekind kind;
    char op[4];              /* unary and binary operators */
    bool b;
    double n;
    char *s;                 /* string literal, variable or member name */
    hearth__expr *a, *b2, *c;
    hearth__expr **items;    /* call arguments, array items */
    size_t nitems;
    regex_t re;              /* E_REGEX, compiled once */
    unsigned from, to;       /* its text in the source: [from, to) */
};


typedef struct parser {
    const char *text, *p;
    hearth_error_t *err;
    int rc;
} parser;

/* Records the first parse error, at `at` (its column and text); NULL. */
hearth__expr *hearth__expr_fail(parser *ps, const char *at, const char *what);
/* A new tree node of kind (NULL, recorded, when out of memory). */
hearth__expr *hearth__expr_node(parser *ps, ekind kind);
/* A regex literal at ps->p ('/'), through its flags (expr_regex.c). */
hearth__expr *hearth__expr_parse_regex(parser *ps);

#endif
