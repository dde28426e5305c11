/* expr.c - the rules expression language: a tokenizer, a precedence
 * climbing parser into a tree, and an evaluator that turns every error
 * into false (see expr.h). */
#include "rules/expr.h"

#include "path/path.h"

#include <ctype.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the tree ---- */

typedef enum {
    E_NULL, E_BOOL, E_NUM, E_STR, E_ARRAY, E_REGEX,
    E_VAR, E_MEMBER, E_CALL, E_UNARY, E_BINARY, E_COND
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
};

void hearth__expr_free(hearth__expr *e) {
    if (!e)
        return;
    hearth__expr_free(e->a);
    hearth__expr_free(e->b2);
    hearth__expr_free(e->c);
    for (size_t i = 0; i < e->nitems; i++)
        hearth__expr_free(e->items[i]);
    hearth__free(e->items);
    hearth__free(e->s);
    if (e->kind == E_REGEX)
        regfree(&e->re);
    hearth__free(e);
}

bool hearth__expr_uses(const hearth__expr *e, const char *name) {
    if (!e)
        return false;
    if (e->kind == E_VAR && !strcmp(e->s, name))
        return true;
    if (hearth__expr_uses(e->a, name) || hearth__expr_uses(e->b2, name) ||
        hearth__expr_uses(e->c, name))
        return true;
    for (size_t i = 0; i < e->nitems; i++)
        if (hearth__expr_uses(e->items[i], name))
            return true;
    return false;
}

/* ---- the parser ---- */

typedef struct parser {
    const char *text, *p;
    hearth_error_t *err;
    int rc;
} parser;

static hearth__expr *fail(parser *ps, const char *at, const char *what) {
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

static hearth__expr *node(parser *ps, ekind kind) {
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
            fail(ps, start, "unterminated string");
            return NULL;
        }
        ps->p++;
        if (c == quote)
            break;
        if (c == '\\') {
            char e = *ps->p;
            if (!e) {
                hearth__buf_free(&b);
                fail(ps, start, "unterminated string");
                return NULL;
            }
            ps->p++;
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
        }
        hearth__buf_addc(&b, c);
    }
    char *s = hearth__buf_detach(&b, NULL);
    if (!s)
        fail(ps, start, "out of memory");
    return s;
}

/* The documented regex subset, as a POSIX extended expression: \d \w \s
 * and their negations become classes, ^ and $ only at the ends. */
static hearth__expr *parse_regex(parser *ps) {
    const char *start = ps->p++;
    hearth__buf b;
    hearth__buf_init(&b);
    bool in_class = false;
    const char *body = ps->p;
    for (;;) {
        char c = *ps->p;
        if (!c || c == '\n') {
            hearth__buf_free(&b);
            return fail(ps, start, "unterminated regular expression");
        }
        ps->p++;
        if (c == '/' && !in_class)
            break;
        if (c == '\\') {
            char e = *ps->p;
            if (!e) {
                hearth__buf_free(&b);
                return fail(ps, start, "unterminated regular expression");
            }
            ps->p++;
            static const struct {
                char esc;
                const char *out, *inside;
            } classes[] = {{'d', "[0-9]", "0-9"},
                           {'D', "[^0-9]", NULL},
                           {'w', "[A-Za-z0-9_]", "A-Za-z0-9_"},
                           {'W', "[^A-Za-z0-9_]", NULL},
                           {'s', "[ \t\r\n\v\f]", " \t\r\n\v\f"},
                           {'S', "[^ \t\r\n\v\f]", NULL}};
            bool done = false;
            for (size_t i = 0; i < HEARTH__ARRAY_SIZE(classes) && !done; i++)
                if (classes[i].esc == e) {
                    if (in_class && !classes[i].inside) {
                        hearth__buf_free(&b);
                        return fail(ps, ps->p - 2,
                                    "a negated class inside brackets is not "
                                    "supported");
                    }
                    hearth__buf_adds(&b, in_class ? classes[i].inside
                                                  : classes[i].out);
                    done = true;
                }
            if (!done) {
                /* An escaped character stands for itself. */
                if (in_class || isalnum((unsigned char)e)) {
                    hearth__buf_addc(&b, e);
                } else {
                    hearth__buf_addc(&b, '\\');
                    hearth__buf_addc(&b, e);
                }
            }
            continue;
        }
        if (!in_class && c == '^' && ps->p - 1 != body) {
            hearth__buf_free(&b);
            return fail(ps, ps->p - 1, "^ is only allowed first");
        }
        if (!in_class && c == '$' && *ps->p != '/') {
            hearth__buf_free(&b);
            return fail(ps, ps->p - 1, "$ is only allowed last");
        }
        if (c == '[')
            in_class = true;
        else if (c == ']')
            in_class = false;
        hearth__buf_addc(&b, c);
    }
    bool icase = false;
    while (isalpha((unsigned char)*ps->p)) {
        if (*ps->p != 'i') {
            hearth__buf_free(&b);
            return fail(ps, ps->p, "only the i flag is supported");
        }
        icase = true;
        ps->p++;
    }
    char *pattern = hearth__buf_detach(&b, NULL);
    hearth__expr *e = pattern ? node(ps, E_REGEX) : NULL;
    if (e && regcomp(&e->re, pattern, REG_EXTENDED | REG_NOSUB |
                                          (icase ? REG_ICASE : 0)) != 0) {
        e->kind = E_NULL; /* nothing compiled to free */
        hearth__expr_free(e);
        e = NULL;
        fail(ps, start, "invalid regular expression");
    }
    hearth__free(pattern);
    return e;
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
        fail(ps, ps->p, close[0] == ')' ? "expected ')'" : "expected ']'");
    if (ps->rc) {
        hearth__expr_free(e);
        return NULL;
    }
    return e;
}

static hearth__expr *parse_primary(parser *ps) {
    skip_space(ps);
    const char *at = ps->p;
    char c = *ps->p;
    hearth__expr *e = NULL;
    if (c == '(') {
        ps->p++;
        e = parse_expr(ps);
        if (e && !accept(ps, ")")) {
            hearth__expr_free(e);
            return fail(ps, ps->p, "expected ')'");
        }
        return e;
    }
    if (c == '[') {
        ps->p++;
        e = node(ps, E_ARRAY);
        return e ? parse_list(ps, e, "]") : NULL;
    }
    if (c == '\'' || c == '"') {
        char *s = parse_string(ps);
        if (!s)
            return NULL;
        e = node(ps, E_STR);
        if (e)
            e->s = s;
        else
            hearth__free(s);
        return e;
    }
    if (c == '/')
        return parse_regex(ps);
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)ps->p[1]))) {
        char *end;
        double v = strtod(ps->p, &end);
        ps->p = end;
        e = node(ps, E_NUM);
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
            e = node(ps, E_BOOL);
            if (e)
                e->b = true;
            return e;
        }
        if (len == 5 && !strncmp(start, "false", 5))
            return node(ps, E_BOOL);
        if (len == 4 && !strncmp(start, "null", 4))
            return node(ps, E_NULL);
        static const char *const vars[] = {"auth", "now", "root", "data",
                                           "newData", "query"};
        bool known = start[0] == '$';
        for (size_t i = 0; !known && i < HEARTH__ARRAY_SIZE(vars); i++)
            known = strlen(vars[i]) == len && !strncmp(start, vars[i], len);
        if (!known)
            return fail(ps, start, "unknown variable");
        e = node(ps, E_VAR);
        if (e && !(e->s = hearth__strndup(start, len))) {
            hearth__expr_free(e);
            return fail(ps, start, "out of memory");
        }
        return e;
    }
    return fail(ps, at, c ? "unexpected text" : "unexpected end");
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
                return fail(ps, start, "expected a name after '.'");
            }
            hearth__expr *m = node(ps, E_MEMBER);
            if (!m || !(m->s = hearth__strndup(start, (size_t)(ps->p - start)))) {
                hearth__expr_free(m);
                hearth__expr_free(e);
                return NULL;
            }
            m->a = e;
            e = m;
        } else if (accept(ps, "(")) {
            if (e->kind != E_MEMBER) {
                hearth__expr_free(e);
                return fail(ps, ps->p - 1, "only methods can be called");
            }
            hearth__expr *call = node(ps, E_CALL);
            if (!call) {
                hearth__expr_free(e);
                return NULL;
            }
            call->a = e;
            e = parse_list(ps, call, ")");
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
    ps->p++;
    hearth__expr *operand = parse_unary(ps);
    hearth__expr *e = operand ? node(ps, E_UNARY) : NULL;
    if (!e) {
        hearth__expr_free(operand);
        return NULL;
    }
    e->op[0] = op; /* "!" or "-" */
    e->a = operand;
    return e;
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
        hearth__expr *e = right ? node(ps, E_BINARY) : NULL;
        if (!e) {
            hearth__expr_free(left);
            hearth__expr_free(right);
            return NULL;
        }
        /* === and !== mean what == and != mean: no coercion either way. */
        snprintf(e->op, sizeof e->op, "%.2s", op);
        e->a = left;
        e->b2 = right;
        left = e;
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
        return fail(ps, ps->p, "expected ':'");
    }
    hearth__expr *no = yes ? parse_expr(ps) : NULL;
    hearth__expr *e = no ? node(ps, E_COND) : NULL;
    if (!e) {
        hearth__expr_free(cond);
        hearth__expr_free(yes);
        hearth__expr_free(no);
        return NULL;
    }
    e->a = cond;
    e->b2 = yes;
    e->c = no;
    return e;
}

int hearth__expr_parse(const char *text, hearth__expr **out,
                       hearth_error_t *err) {
    parser ps = {text, text, err, 0};
    hearth__expr *e = parse_expr(&ps);
    skip_space(&ps);
    if (e && *ps.p) {
        hearth__expr_free(e);
        e = fail(&ps, ps.p, "unexpected text");
    }
    if (!e)
        return ps.rc ? ps.rc : HEARTH_EINVAL;
    *out = e;
    return 0;
}

/* ---- values ---- */

typedef enum { V_ERR, V_NULL, V_BOOL, V_NUM, V_STR, V_SNAP, V_NODE, V_REGEX, V_LIST } vkind;

typedef struct val {
    vkind k;
    bool b;
    double n;
    char *s;                   /* V_STR (owned); V_SNAP: its path (owned) */
    const hearth_node_t *node; /* V_SNAP: the tree it reads; V_NODE */
    const hearth__expr *e;     /* V_REGEX: the literal; V_LIST: the array */
} val;

static val verr(void) { return (val){.k = V_ERR}; }
static val vbool(bool b) { return (val){.k = V_BOOL, .b = b}; }
static val vnum(double n) { return isfinite(n) ? (val){.k = V_NUM, .n = n} : verr(); }
static val vstr_own(char *s) { return s ? (val){.k = V_STR, .s = s} : verr(); }
static val vstr(const char *s, size_t len) { return vstr_own(hearth__strndup(s, len)); }
static val vsnap(const hearth_node_t *root, char *path) {
    return path ? (val){.k = V_SNAP, .node = root, .s = path} : verr();
}

static void vfree(val *v) {
    hearth__free(v->s);
    v->s = NULL;
}

/* A leaf as a primitive value; objects stay nodes (auth, query). */
static val from_node(const hearth_node_t *n, bool objects_ok) {
    size_t len;
    switch (hearth_node_type(n)) {
    case HEARTH_TYPE_NULL:
        return (val){.k = V_NULL};
    case HEARTH_TYPE_BOOLEAN:
        return vbool(hearth_node_boolean_value(n));
    case HEARTH_TYPE_NUMBER:
        return vnum(hearth_node_number_value(n));
    case HEARTH_TYPE_STRING: {
        const char *s = hearth_node_string_value(n, &len);
        return vstr(s, len);
    }
    case HEARTH_TYPE_OBJECT:
        return objects_ok ? (val){.k = V_NODE, .node = n} : verr();
    default:
        return verr();
    }
}

/* The node a snapshot stands for (borrowed), NULL for a bad path. */
static const hearth_node_t *snap_node(const val *v) {
    const hearth_node_t *n = NULL;
    if (hearth_node_get(v->node, v->s, &n, NULL))
        return NULL;
    return n;
}

static char *join_path(const char *base, const char *rel) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_adds(&b, base);
    if (!(base[0] == '/' && base[1] == '\0'))
        hearth__buf_addc(&b, '/');
    while (*rel == '/')
        rel++;
    hearth__buf_adds(&b, rel);
    return hearth__buf_detach(&b, NULL);
}

/* ---- evaluation ---- */

typedef struct evalctx {
    const hearth__expr_env *env;
} evalctx;

static val eval(evalctx *x, const hearth__expr *e);

static size_t utf16_length(const char *s) {
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if ((*p & 0xC0) != 0x80)
            n += *p >= 0xF0 ? 2 : 1; /* astral characters are two units */
    return n;
}

static val string_method(const char *name, val *self, val *args, size_t n) {
    const char *s = self->s;
    if (!strcmp(name, "toLowerCase") || !strcmp(name, "toUpperCase")) {
        if (n)
            return verr();
        char *out = hearth__strndup(s, strlen(s));
        for (char *p = out; p && *p; p++)
            *p = (char)(name[2] == 'L' ? tolower((unsigned char)*p)
                                       : toupper((unsigned char)*p));
        return vstr_own(out);
    }
    if (!strcmp(name, "matches")) {
        if (n != 1 || args[0].k != V_REGEX)
            return verr();
        return vbool(regexec(&args[0].e->re, s, 0, NULL, 0) == 0);
    }
    if (!strcmp(name, "replace")) {
        if (n != 2 || args[0].k != V_STR || args[1].k != V_STR || !args[0].s[0])
            return verr();
        hearth__buf b;
        hearth__buf_init(&b);
        size_t flen = strlen(args[0].s);
        for (const char *p = s; *p;) {
            if (!strncmp(p, args[0].s, flen)) {
                hearth__buf_adds(&b, args[1].s);
                p += flen;
            } else {
                hearth__buf_addc(&b, *p++);
            }
        }
        return vstr_own(hearth__buf_detach(&b, NULL));
    }
    if (n != 1 || args[0].k != V_STR)
        return verr();
    const char *t = args[0].s;
    size_t sl = strlen(s), tl = strlen(t);
    if (!strcmp(name, "contains"))
        return vbool(strstr(s, t) != NULL);
    if (!strcmp(name, "beginsWith"))
        return vbool(sl >= tl && !strncmp(s, t, tl));
    if (!strcmp(name, "endsWith"))
        return vbool(sl >= tl && !strcmp(s + sl - tl, t));
    return verr();
}

static val snapshot_method(evalctx *x, const char *name, val *self, val *args,
                           size_t n) {
    (void)x;
    const hearth_node_t *node = snap_node(self);
    if (!node)
        return verr();
    if (!strcmp(name, "val"))
        return n ? verr() : from_node(node, false);
    if (!strcmp(name, "exists"))
        return n ? verr() : vbool(!hearth_node_is_null(node));
    if (!strcmp(name, "getPriority"))
        return n ? verr() : from_node(hearth_node_priority(node), false);
    if (!strcmp(name, "isNumber"))
        return vbool(!n && hearth_node_type(node) == HEARTH_TYPE_NUMBER);
    if (!strcmp(name, "isString"))
        return vbool(!n && hearth_node_type(node) == HEARTH_TYPE_STRING);
    if (!strcmp(name, "isBoolean"))
        return vbool(!n && hearth_node_type(node) == HEARTH_TYPE_BOOLEAN);
    if (!strcmp(name, "parent")) {
        if (n || !strcmp(self->s, "/"))
            return verr();
        char *p = hearth__strndup(self->s, strlen(self->s));
        char *slash = p ? strrchr(p, '/') : NULL;
        if (slash)
            slash == p ? (void)(p[1] = '\0') : (void)(*slash = '\0');
        return vsnap(self->node, p);
    }
    if (!strcmp(name, "hasChildren")) {
        if (n == 0)
            return vbool(hearth_node_child_count(node) > 0);
        if (n != 1 || args[0].k != V_LIST)
            return verr();
        const hearth__expr *list = args[0].e;
        for (size_t i = 0; i < list->nitems; i++) {
            const hearth__expr *item = list->items[i];
            if (item->kind != E_STR)
                return verr();
            const hearth_node_t *c = NULL;
            if (hearth_node_get(node, item->s, &c, NULL) || hearth_node_is_null(c))
                return vbool(false);
        }
        return vbool(true);
    }
    if (n != 1 || args[0].k != V_STR)
        return verr();
    if (!strcmp(name, "child"))
        return vsnap(self->node, join_path(self->s, args[0].s));
    if (!strcmp(name, "hasChild")) {
        const hearth_node_t *c = NULL;
        if (hearth_node_get(node, args[0].s, &c, NULL))
            return verr();
        return vbool(!hearth_node_is_null(c));
    }
    return verr();
}

static val eval_call(evalctx *x, const hearth__expr *e) {
    const hearth__expr *callee = e->a; /* E_MEMBER */
    val self = eval(x, callee->a);
    val args[4];
    size_t n = e->nitems;
    if (self.k == V_ERR || n > HEARTH__ARRAY_SIZE(args)) {
        vfree(&self);
        return verr();
    }
    bool bad = false;
    for (size_t i = 0; i < n; i++) {
        args[i] = eval(x, e->items[i]);
        bad = bad || args[i].k == V_ERR;
    }
    val out = verr();
    if (!bad && self.k == V_STR)
        out = string_method(callee->s, &self, args, n);
    else if (!bad && self.k == V_SNAP)
        out = snapshot_method(x, callee->s, &self, args, n);
    for (size_t i = 0; i < n; i++)
        vfree(&args[i]);
    vfree(&self);
    return out;
}

static val eval_member(evalctx *x, const hearth__expr *e) {
    val obj = eval(x, e->a);
    val out = verr();
    if (obj.k == V_STR && !strcmp(e->s, "length"))
        out = vnum((double)utf16_length(obj.s));
    else if (obj.k == V_NODE)
        out = from_node(hearth_node_child(obj.node, e->s), true);
    vfree(&obj);
    return out;
}

static val eval_var(evalctx *x, const hearth__expr *e) {
    const hearth__expr_env *env = x->env;
    const char *name = e->s;
    if (name[0] == '$') {
        for (size_t i = env->nwild; i-- > 0;)
            if (!strcmp(env->wild_names[i], name))
                return vstr(env->wild_keys[i], strlen(env->wild_keys[i]));
        return verr();
    }
    if (!strcmp(name, "auth"))
        return env->auth && !hearth_node_is_null(env->auth)
                   ? (val){.k = V_NODE, .node = env->auth}
                   : (val){.k = V_NULL};
    if (!strcmp(name, "now"))
        return vnum(env->now);
    if (!strcmp(name, "root"))
        return vsnap(env->root, hearth__strndup("/", 1));
    if (!strcmp(name, "data"))
        return vsnap(env->root, hearth__strndup(env->path, strlen(env->path)));
    if (!strcmp(name, "newData"))
        return vsnap(env->new_root ? env->new_root : env->root,
                     hearth__strndup(env->path, strlen(env->path)));
    if (!strcmp(name, "query"))
        return env->query ? (val){.k = V_NODE, .node = env->query} : verr();
    return verr();
}

static int compare(const val *a, const val *b, bool *ok) {
    *ok = a->k == b->k && (a->k == V_NUM || a->k == V_STR);
    if (!*ok)
        return 0;
    if (a->k == V_NUM)
        return a->n < b->n ? -1 : a->n > b->n;
    return strcmp(a->s, b->s);
}

static bool equal(const val *a, const val *b) {
    if (a->k != b->k)
        return false;
    switch (a->k) {
    case V_NULL:
        return true;
    case V_BOOL:
        return a->b == b->b;
    case V_NUM:
        return a->n == b->n;
    case V_STR:
        return !strcmp(a->s, b->s);
    default:
        return false;
    }
}

static val eval_binary(evalctx *x, const hearth__expr *e) {
    const char *op = e->op;
    val a = eval(x, e->a);
    if (a.k == V_ERR)
        return a;
    if (!strcmp(op, "&&") || !strcmp(op, "||")) {
        if (a.k != V_BOOL) {
            vfree(&a);
            return verr();
        }
        if (a.b == (op[0] == '|'))
            return a; /* decided: the right side is not evaluated */
        val b = eval(x, e->b2);
        if (b.k != V_BOOL) {
            vfree(&b);
            return verr();
        }
        return b;
    }
    val b = eval(x, e->b2);
    val out = verr();
    if (b.k == V_ERR) {
        vfree(&a);
        return b;
    }
    if (!strcmp(op, "==") || !strcmp(op, "!=")) {
        out = vbool(equal(&a, &b) == (op[0] == '='));
    } else if (op[0] == '<' || op[0] == '>') {
        bool ok;
        int c = compare(&a, &b, &ok);
        if (ok)
            out = vbool(op[0] == '<' ? (op[1] ? c <= 0 : c < 0)
                                     : (op[1] ? c >= 0 : c > 0));
    } else if (!strcmp(op, "+") && a.k == V_STR && b.k == V_STR) {
        hearth__buf buf;
        hearth__buf_init(&buf);
        hearth__buf_adds(&buf, a.s);
        hearth__buf_adds(&buf, b.s);
        out = vstr_own(hearth__buf_detach(&buf, NULL));
    } else if (a.k == V_NUM && b.k == V_NUM) {
        switch (op[0]) {
        case '+': out = vnum(a.n + b.n); break;
        case '-': out = vnum(a.n - b.n); break;
        case '*': out = vnum(a.n * b.n); break;
        case '/': out = vnum(a.n / b.n); break;
        case '%': out = vnum(fmod(a.n, b.n)); break;
        }
    }
    vfree(&a);
    vfree(&b);
    return out;
}

static val eval(evalctx *x, const hearth__expr *e) {
    switch (e->kind) {
    case E_NULL:
        return (val){.k = V_NULL};
    case E_BOOL:
        return vbool(e->b);
    case E_NUM:
        return vnum(e->n);
    case E_STR:
        return vstr(e->s, strlen(e->s));
    case E_ARRAY:
        return (val){.k = V_LIST, .e = e};
    case E_REGEX:
        return (val){.k = V_REGEX, .e = e};
    case E_VAR:
        return eval_var(x, e);
    case E_MEMBER:
        return eval_member(x, e);
    case E_CALL:
        return eval_call(x, e);
    case E_UNARY: {
        val a = eval(x, e->a);
        val out = e->op[0] == '!' ? (a.k == V_BOOL ? vbool(!a.b) : verr())
                                  : (a.k == V_NUM ? vnum(-a.n) : verr());
        vfree(&a);
        return out;
    }
    case E_BINARY:
        return eval_binary(x, e);
    case E_COND: {
        val c = eval(x, e->a);
        if (c.k != V_BOOL) {
            vfree(&c);
            return verr();
        }
        return eval(x, c.b ? e->b2 : e->c);
    }
    }
    return verr();
}

bool hearth__expr_eval(const hearth__expr *e, const hearth__expr_env *env) {
    evalctx x = {env};
    val v = eval(&x, e);
    bool yes = v.k == V_BOOL && v.b;
    vfree(&v);
    return yes;
}
