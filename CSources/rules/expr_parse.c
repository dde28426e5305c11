/* expr_parse.c - the rules expression parser: a tokenizer and a precedence
 * climbing parser into a tree; errors name the column and the text. */
#include "rules/expr_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the parser ---- */

hearth__expr *hearth__expr_fail(parser *ps, const char *at, const char *what) {
    if (!ps->rc) {
        ps->rc = HEARTH_EINVAL;
        hearth__error(ps->err, HEARTH_EINVAL, NULL,
                      "%s at column %d: \"%.32s\"", what,
                      (int)(at - ps->text) + 1, at);
        if (ps->err)
            ps->err->column = (int)(at - ps->text) + 1;
    }
    return NULL;
}

hearth__expr *hearth__expr_node(parser *ps, ekind kind) {
    hearth__expr *e = hearth__calloc(1, sizeof *e);
    if (!e && !ps->rc) {
        ps->rc = HEARTH_ENOMEM;
        hearth__error_code(ps->err, HEARTH_ENOMEM);
    }
    if (e)
        e->kind = kind;
    return e;
}

static void skip_space(parser *ps) {
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

/* Consumes op if it comes next (not a prefix of a longer operator). */
static bool accept(parser *ps, const char *op) {
    skip_space(ps);
    size_t n = strlen(op);
    if (strncmp(ps->p, op, n) != 0)
        return false;
    char next = ps->p[n];
    if ((op[0] == '=' || op[0] == '!' || op[0] == '<' || op[0] == '>') &&
        next == '=' && n < 3)
        return false; /* "=" of "==", "!" of "!=", "<" of "<=" ... */
    if ((op[0] == '&' || op[0] == '|') && n == 1)
        return false;
    ps->p += n;
    return true;
}

static hearth__expr *parse_expr(parser *ps);

static char *parse_string(parser *ps) {
    const char *start = ps->p;
    char quote = *ps->p++;
    hearth__buf b;
    hearth__buf_init(&b);
    for (;;) {
        char c = *ps->p;
        if (!c) {
            hearth__buf_free(&b);
            hearth__expr_fail(ps, start, "unterminated string");
            return NULL;
        }
        ps->p++;
        if (c == quote)
            break;
        if (c == '\\') {
            char e = *ps->p;
            if (!e) {
                hearth__buf_free(&b);
                hearth__expr_fail(ps, start, "unterminated string");
                return NULL;
            }
            ps->p++;
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        }
        hearth__buf_addc(&b, c);
    }
    char *s = hearth__buf_detach(&b, NULL);
    if (!s)
        hearth__expr_fail(ps, start, "out of memory");
    return s;
}


static bool ident_char(char c) {
    return isalnum((unsigned char)c) || c == '_' || c == '$';
}

static hearth__expr *parse_list(parser *ps, hearth__expr *e, const char *close) {
    skip_space(ps);
    if (accept(ps, close))
        return e;
    do {
        hearth__expr *item = parse_expr(ps);
        if (!item)
            break;
        hearth__expr **items =
            hearth__realloc(e->items, (e->nitems + 1) * sizeof *items);
        if (!items) {
            hearth__expr_free(item);
            ps->rc = HEARTH_ENOMEM;
            break;
        }
        e->items = items;
        e->items[e->nitems++] = item;
    } while (accept(ps, ","));
    if (!ps->rc && !accept(ps, close))
        hearth__expr_fail(ps, ps->p, close[0] == ')' ? "expected ')'" : "expected ']'");
    if (ps->rc) {
        hearth__expr_free(e);
        return NULL;
    }
    return e;
}

/* Notes e's text, from `from` to where the parser is (denial traces name
 * each sub-expression by it). */
static hearth__expr *spanned(parser *ps, hearth__expr *e, const char *from) {
    if (e) {
        /* Operators are looked for past the space after an operand. */
        const char *to = ps->p;
        while (to > from && isspace((unsigned char)to[-1]))
            to--;
        e->from = (unsigned)(from - ps->text);
        e->to = (unsigned)(to - ps->text);
    }
    return e;
}

static hearth__expr *parse_primary_at(parser *ps, const char *at);

static hearth__expr *parse_primary(parser *ps) {
    skip_space(ps);
    const char *at = ps->p;
    hearth__expr *e = parse_primary_at(ps, at);
    /* A parenthesized expression keeps its own text. */
    return e && *at != '(' ? spanned(ps, e, at) : e;
}

static hearth__expr *parse_primary_at(parser *ps, const char *at) {
    char c = *ps->p;
    hearth__expr *e = NULL;
    if (c == '(') {
        ps->p++;
        e = parse_expr(ps);
        if (e && !accept(ps, ")")) {
            hearth__expr_free(e);
            return hearth__expr_fail(ps, ps->p, "expected ')'");
        }
        return e;
    }
    if (c == '[') {
        ps->p++;
        e = hearth__expr_node(ps, E_ARRAY);
        return e ? parse_list(ps, e, "]") : NULL;
    }
    if (c == '\'' || c == '"') {
        char *s = parse_string(ps);
        if (!s)
            return NULL;
        e = hearth__expr_node(ps, E_STR);
        if (e)
            e->s = s;
        else
            hearth__free(s);
        return e;
    }
    if (c == '/')
        return hearth__expr_parse_regex(ps);
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)ps->p[1]))) {
        char *end;
        double v = strtod(ps->p, &end);
        ps->p = end;
        e = hearth__expr_node(ps, E_NUM);
        if (e)
            e->n = v;
        return e;
    }
    if (ident_char(c) && !isdigit((unsigned char)c)) {
        const char *start = ps->p;
        while (ident_char(*ps->p))
            ps->p++;
        size_t len = (size_t)(ps->p - start);
        if (len == 4 && !strncmp(start, "true", 4)) {
            e = hearth__expr_node(ps, E_BOOL);
            if (e)
                e->b = true;
            return e;
        }
        if (len == 5 && !strncmp(start, "false", 5))
            return hearth__expr_node(ps, E_BOOL);
        if (len == 4 && !strncmp(start, "null", 4))
            return hearth__expr_node(ps, E_NULL);
        static const char *const vars[] = {"auth", "now", "root", "data",
                                           "newData", "query"};
        bool known = start[0] == '$';
        for (size_t i = 0; !known && i < HEARTH__ARRAY_SIZE(vars); i++)
            known = strlen(vars[i]) == len && !strncmp(start, vars[i], len);
        if (!known)
            return hearth__expr_fail(ps, start, "unknown variable");
        e = hearth__expr_node(ps, E_VAR);
        if (e && !(e->s = hearth__strndup(start, len))) {
            hearth__expr_free(e);
            return hearth__expr_fail(ps, start, "out of memory");
        }
        return e;
    }
    return hearth__expr_fail(ps, at, c ? "unexpected text" : "unexpected end");
}

static hearth__expr *parse_postfix(parser *ps) {
    hearth__expr *e = parse_primary(ps);
    while (e) {
        if (accept(ps, ".")) {
            skip_space(ps);
            const char *start = ps->p;
            while (ident_char(*ps->p))
                ps->p++;
            if (ps->p == start) {
                hearth__expr_free(e);
                return hearth__expr_fail(ps, start, "expected a name after '.'");
            }
            hearth__expr *m = hearth__expr_node(ps, E_MEMBER);
            if (!m || !(m->s = hearth__strndup(start, (size_t)(ps->p - start)))) {
                hearth__expr_free(m);
                hearth__expr_free(e);
                return NULL;
            }
            m->a = e;
            e = spanned(ps, m, ps->text + e->from);
        } else if (accept(ps, "[")) {
            /* auth.token.firebase.identities['google.com'][0]: keys that
             * are not names. */
            const char *from = ps->text + e->from;
            hearth__expr *ix = hearth__expr_node(ps, E_INDEX);
            if (!ix) {
                hearth__expr_free(e);
                return NULL;
            }
            ix->a = e;
            e = ix;
            if (!(ix->b2 = parse_expr(ps))) {
                hearth__expr_free(e);
                return NULL;
            }
            if (!accept(ps, "]")) {
                hearth__expr_free(e);
                return hearth__expr_fail(ps, ps->p, "expected ']'");
            }
            e = spanned(ps, ix, from);
        } else if (accept(ps, "(")) {
            if (e->kind != E_MEMBER) {
                hearth__expr_free(e);
                return hearth__expr_fail(ps, ps->p - 1, "only methods can be called");
            }
            hearth__expr *call = hearth__expr_node(ps, E_CALL);
            if (!call) {
                hearth__expr_free(e);
                return NULL;
            }
            call->a = e;
            const char *from = ps->text + e->from;
            e = spanned(ps, parse_list(ps, call, ")"), from);
        } else {
            break;
        }
    }
    return e;
}

static hearth__expr *parse_unary(parser *ps) {
    skip_space(ps);
    char op = *ps->p;
    if ((op != '!' || ps->p[1] == '=') && op != '-')
        return parse_postfix(ps);
    const char *from = ps->p++;
    hearth__expr *operand = parse_unary(ps);
    hearth__expr *e = operand ? hearth__expr_node(ps, E_UNARY) : NULL;
    if (!e) {
        hearth__expr_free(operand);
        return NULL;
    }
    e->op[0] = op; /* "!" or "-" */
    e->a = operand;
    return spanned(ps, e, from);
}

/* Binary operators by precedence, loosest first. */
static const char *const levels[][5] = {
    {"||", NULL}, {"&&", NULL}, {"===", "!==", "==", "!=", NULL},
    {"<=", ">=", "<", ">", NULL}, {"+", "-", NULL}, {"*", "/", "%", NULL},
};

static hearth__expr *parse_level(parser *ps, size_t level) {
    if (level == HEARTH__ARRAY_SIZE(levels))
        return parse_unary(ps);
    hearth__expr *left = parse_level(ps, level + 1);
    while (left) {
        const char *op = NULL;
        for (size_t i = 0; levels[level][i] && !op; i++)
            if (accept(ps, levels[level][i]))
                op = levels[level][i];
        if (!op)
            break;
        hearth__expr *right = parse_level(ps, level + 1);
        hearth__expr *e = right ? hearth__expr_node(ps, E_BINARY) : NULL;
        if (!e) {
            hearth__expr_free(left);
            hearth__expr_free(right);
            return NULL;
        }
        /* === and !== mean what == and != mean: no coercion either way. */
        snprintf(e->op, sizeof e->op, "%.2s", op);
        e->a = left;
        e->b2 = right;
        left = spanned(ps, e, ps->text + left->from);
    }
    return left;
}

static hearth__expr *parse_expr(parser *ps) {
    hearth__expr *cond = parse_level(ps, 0);
    if (!cond || !accept(ps, "?"))
        return cond;
    hearth__expr *yes = parse_expr(ps);
    if (yes && !accept(ps, ":")) {
        hearth__expr_free(cond);
        hearth__expr_free(yes);
        return hearth__expr_fail(ps, ps->p, "expected ':'");
    }
    hearth__expr *no = yes ? parse_expr(ps) : NULL;
    hearth__expr *e = no ? hearth__expr_node(ps, E_COND) : NULL;
    if (!e) {
        hearth__expr_free(cond);
        hearth__expr_free(yes);
        hearth__expr_free(no);
        return NULL;
    }
    e->a = cond;
    e->b2 = yes;
    e->c = no;
    return spanned(ps, e, ps->text + cond->from);
}

int hearth__expr_parse(const char *text, hearth__expr **out,
                       hearth_error_t *err) {
    parser ps = {text, text, err, 0};
    hearth__expr *e = parse_expr(&ps);
    skip_space(&ps);
    if (e && *ps.p) {
        hearth__expr_free(e);
        e = hearth__expr_fail(&ps, ps.p, "unexpected text");
    }
    if (!e)
        return ps.rc ? ps.rc : HEARTH_EINVAL;
    *out = e;
    return 0;
}
