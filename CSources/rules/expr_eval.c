/* expr_eval.c - the rules expression evaluator: values, variables,
 * snapshot and string methods, operators without type coercion; any error
 * makes the whole expression false. */
#include "rules/expr_internal.h"

#include "path/path.h"
#include "tree/json.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    /* Tracing (a denial's trace; NULL: off, one branch per node): each
     * sub-expression's text in src and value, appended to trace. */
    hearth__buf *trace;
    const char *src;
    size_t ntrace;
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

/* obj[key]: a child of an object value (auth, query) by a string, or by
 * a whole number for an array's items; anything else is an error. */
static val eval_index(evalctx *x, const hearth__expr *e) {
    val obj = eval(x, e->a), key = eval(x, e->b2);
    val out = verr();
    char digits[32];
    const char *name = key.k == V_STR ? key.s : NULL;
    if (key.k == V_NUM && key.n >= 0 && key.n < 1e15 && key.n == (double)(int64_t)key.n) {
        snprintf(digits, sizeof digits, "%lld", (long long)key.n);
        name = digits;
    }
    if (obj.k == V_NODE && name)
        out = from_node(hearth_node_child(obj.node, name), true);
    vfree(&obj);
    vfree(&key);
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

static val eval_node(evalctx *x, const hearth__expr *e) {
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
    case E_INDEX:
        return eval_index(x, e);
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

/* A trace's cap: a denial's record stays small whatever the rules. */
#define TRACE_MAX_BYTES 8192
#define TRACE_VALUE_MAX 256

/* Appends {"text": e's source, "value": v} to the trace (literals left
 * out: their value is their text). */
static void trace_value(evalctx *x, const hearth__expr *e, const val *v) {
    if (e->kind <= E_REGEX || x->trace->len > TRACE_MAX_BYTES ||
        e->to <= e->from || e->to > strlen(x->src))
        return;
    hearth__buf *b = x->trace;
    hearth__buf_adds(b, x->ntrace++ ? ",{\"text\":" : "{\"text\":");
    hearth__json_write_string(b, x->src + e->from, e->to - e->from);
    hearth__buf_adds(b, ",\"value\":");
    switch (v->k) {
    case V_ERR:
        hearth__buf_adds(b, "null,\"error\":true");
        break;
    case V_NULL:
        hearth__buf_adds(b, "null");
        break;
    case V_BOOL:
        hearth__buf_adds(b, v->b ? "true" : "false");
        break;
    case V_NUM:
        hearth__buf_printf(b, "%.17g", v->n);
        break;
    case V_STR:
        hearth__json_write_string(b, v->s, strnlen(v->s, TRACE_VALUE_MAX));
        break;
    case V_SNAP: { /* a snapshot: where, and what is there (small) */
        const hearth_node_t *n = snap_node(v);
        hearth__buf node;
        hearth__buf_init(&node);
        if (n)
            hearth__node_write_json(&node, n, 0);
        if (!node.failed && node.len && node.len <= TRACE_VALUE_MAX)
            hearth__buf_add(b, node.data, node.len);
        else
            hearth__buf_printf(b, "\"(%zu bytes)\"", node.len);
        hearth__buf_free(&node);
        hearth__buf_adds(b, ",\"snapshot\":");
        hearth__json_write_string(b, v->s, strlen(v->s));
        break;
    }
    case V_NODE: { /* auth or query: its members (auth holds no token) */
        hearth__buf node;
        hearth__buf_init(&node);
        hearth__node_write_json(&node, v->node, 0);
        if (!node.failed && node.len <= TRACE_VALUE_MAX)
            hearth__buf_add(b, node.data, node.len);
        else
            hearth__buf_printf(b, "\"(%zu bytes)\"", node.len);
        hearth__buf_free(&node);
        break;
    }
    default:
        hearth__buf_adds(b, "null");
    }
    hearth__buf_addc(b, '}');
}

static val eval(evalctx *x, const hearth__expr *e) {
    val v = eval_node(x, e);
    if (HEARTH__UNLIKELY(x->trace != NULL))
        trace_value(x, e, &v);
    return v;
}

static hearth__expr_result result_of(val *v) {
    hearth__expr_result res = v->k != V_BOOL ? HEARTH__EXPR_ERROR
                              : v->b         ? HEARTH__EXPR_TRUE
                                             : HEARTH__EXPR_FALSE;
    vfree(v);
    return res;
}

hearth__expr_result hearth__expr_trace(const hearth__expr *e,
                                       const hearth__expr_env *env,
                                       const char *src, hearth__buf *out) {
    evalctx x = {env, out, src, 0};
    hearth__buf_addc(out, '[');
    val v = eval(&x, e);
    hearth__buf_addc(out, ']');
    return result_of(&v);
}

hearth__expr_result hearth__expr_result_of(const hearth__expr *e,
                                           const hearth__expr_env *env) {
    evalctx x = {env, NULL, NULL, 0};
    val v = eval(&x, e);
    return result_of(&v);
}

bool hearth__expr_eval(const hearth__expr *e, const hearth__expr_env *env) {
    return hearth__expr_result_of(e, env) == HEARTH__EXPR_TRUE;
}
