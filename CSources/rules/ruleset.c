/* ruleset.c - compiling a rules document into a tree of rule nodes, and
 * walking it for reads, writes and validation (see ruleset.h). */
#include "rules/ruleset.h"

#include "rules/locate.h"
#include "tree/json.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* A rule: true, false, or an expression. */
typedef struct rule {
    bool set;
    bool constant;
    hearth__expr *expr;
    char *src; /* the expression as written (for hearth__rule_why) */
    int line, column; /* where the rule's value is written; 0: unknown */
    /* Its coverage counts: behind a pointer, so that a walk over the
     * const tree counts without casting (the loop thread owns them). */
    uint64_t *count; /* evaluations, then one per hearth__expr_result */
} rule;

typedef struct rnode rnode;
struct rnode {
    char *where; /* the rule's location, "/users/$uid" */
    rule read, write, validate;
    char **keys;     /* literal children, in document order */
    rnode **kids;
    size_t nkids;
    char *wild_name; /* "$uid", or NULL */
    rnode *wild;
};

struct hearth__ruleset {
    rnode *root;
    bool counting; /* coverage on (the default) */
    char *source;  /* the text rule positions refer to, or NULL */
};

static void rnode_free(rnode *n) {
    if (!n)
        return;
    hearth__free(n->where);
    hearth__expr_free(n->read.expr);
    hearth__expr_free(n->write.expr);
    hearth__expr_free(n->validate.expr);
    hearth__free(n->read.src);
    hearth__free(n->write.src);
    hearth__free(n->validate.src);
    hearth__free(n->read.count);
    hearth__free(n->write.count);
    hearth__free(n->validate.count);
    for (size_t i = 0; i < n->nkids; i++) {
        hearth__free(n->keys[i]);
        rnode_free(n->kids[i]);
    }
    hearth__free(n->keys);
    hearth__free(n->kids);
    hearth__free(n->wild_name);
    rnode_free(n->wild);
    hearth__free(n);
}

void hearth__ruleset_free(hearth__ruleset *rs) {
    if (!rs)
        return;
    rnode_free(rs->root);
    hearth__free(rs->source);
    hearth__free(rs);
}

/* ---- compiling ---- */

static int compile_rule(const json_t *v, const char *where, const char *kind,
                        const hearth__rule_sites *sites, rule *out,
                        hearth_error_t *err) {
    out->set = true;
    hearth__rule_sites_lookup(sites, where, kind, &out->line, &out->column);
    if (!(out->count = hearth__calloc(4, sizeof *out->count)))
        return hearth__error_code(err, HEARTH_ENOMEM);
    if (json_is_boolean(v)) {
        out->constant = json_is_true(v);
        return 0;
    }
    if (!json_is_string(v))
        return hearth__error(err, HEARTH_EINVAL, where,
                             "%s at %s must be a boolean or an expression",
                             kind, where);
    hearth_error_t inner = {0};
    const char *src = json_string_value(v);
    int rc = hearth__expr_parse(src, &out->expr, &inner);
    if (!rc && !(out->src = hearth__strndup(src, strlen(src))))
        rc = hearth__error_code(&inner, HEARTH_ENOMEM);
    if (rc) {
        hearth__error(err, rc, where, "%s at %s: %s", kind, where,
                      inner.message);
        if (err)
            err->column = inner.column;
    }
    return rc;
}

static int compile_node(const json_t *obj, const char *where,
                        const hearth__rule_sites *sites, rnode **out,
                        hearth_error_t *err) {
    if (!json_is_object(obj))
        return hearth__error(err, HEARTH_EINVAL, where,
                             "the rules at %s must be an object", where);
    rnode *n = hearth__calloc(1, sizeof *n);
    if (n && !(n->where = hearth__strndup(where, strlen(where)))) {
        hearth__free(n);
        n = NULL;
    }
    if (!n)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (rc)
            break;
        char here[512];
        snprintf(here, sizeof here, "%s%s%s", where,
                 strcmp(where, "/") ? "/" : "", key);
        if (!strcmp(key, ".read"))
            rc = compile_rule(v, where, ".read", sites, &n->read, err);
        else if (!strcmp(key, ".write"))
            rc = compile_rule(v, where, ".write", sites, &n->write, err);
        else if (!strcmp(key, ".validate"))
            rc = compile_rule(v, where, ".validate", sites, &n->validate, err);
        else if (!strcmp(key, ".indexOn"))
            continue; /* the server's indexes (server.c) */
        else if (key[0] == '.')
            rc = hearth__error(err, HEARTH_EINVAL, where,
                               "unknown rule \"%.64s\" at %s", key, where);
        else if (key[0] == '$') {
            if (n->wild)
                rc = hearth__error(err, HEARTH_EINVAL, where,
                                   "two wildcards at %s (%s and %.64s)", where,
                                   n->wild_name, key);
            else if (!(n->wild_name = hearth__strndup(key, strlen(key))))
                rc = hearth__error_code(err, HEARTH_ENOMEM);
            else
                rc = compile_node(v, here, sites, &n->wild, err);
        } else {
            char **keys = hearth__realloc(n->keys, (n->nkids + 1) * sizeof *keys);
            if (keys)
                n->keys = keys;
            rnode **kids = hearth__realloc(n->kids, (n->nkids + 1) * sizeof *kids);
            if (kids)
                n->kids = kids;
            if (!keys || !kids) {
                rc = hearth__error_code(err, HEARTH_ENOMEM);
                break;
            }
            n->keys[n->nkids] = hearth__strndup(key, strlen(key));
            n->kids[n->nkids] = NULL;
            if (!n->keys[n->nkids]) {
                rc = hearth__error_code(err, HEARTH_ENOMEM);
                break;
            }
            n->nkids++;
            rc = compile_node(v, here, sites, &n->kids[n->nkids - 1], err);
        }
    }
    if (rc) {
        rnode_free(n);
        return rc;
    }
    *out = n;
    return 0;
}

static int compile(const json_t *doc, const char *source, size_t len,
                   hearth__ruleset **out, hearth_error_t *err) {
    const json_t *rules = json_object_get(doc, "rules");
    if (!json_is_object(rules))
        return hearth__error(err, HEARTH_EVALUE, NULL,
                             "a rules document is an object with a \"rules\" "
                             "object");
    hearth__ruleset *rs = hearth__calloc(1, sizeof *rs);
    if (!rs)
        return hearth__error_code(err, HEARTH_ENOMEM);
    rs->counting = true;
    hearth__rule_sites *sites = NULL;
    int rc = 0;
    if (source) {
        rs->source = hearth__strndup(source, len);
        rc = !rs->source ? HEARTH_ENOMEM
             : hearth__rule_sites_find(source, len, &sites) == HEARTH_ENOMEM
                 ? HEARTH_ENOMEM
                 : 0; /* a text the scanner cannot follow: no positions */
        if (rc)
            hearth__error_code(err, rc);
    }
    if (!rc)
        rc = compile_node(rules, "/", sites, &rs->root, err);
    hearth__rule_sites_free(sites);
    if (rc) {
        hearth__ruleset_free(rs);
        return rc;
    }
    *out = rs;
    return 0;
}

int hearth__ruleset_compile(const json_t *doc, hearth__ruleset **out,
                            hearth_error_t *err) {
    return compile(doc, NULL, 0, out, err);
}

int hearth__ruleset_compile_source(const json_t *doc, const char *text,
                                   size_t len, hearth__ruleset **out,
                                   hearth_error_t *err) {
    if (text)
        return compile(doc, text, len, out, err);
    char *dump = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!dump)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = compile(doc, dump, strlen(dump), out, err);
    free(dump);
    return rc;
}

/* ---- walking ---- */

/* Where a walk is: the rule node, the location, the bound wildcards. */
typedef struct walk {
    const hearth__access *a;
    const hearth_node_t *new_root;
    char path[HEARTH_MAX_DEPTH * (HEARTH_MAX_KEY_BYTES + 1) + 2];
    size_t path_len;
    const char *wild_names[HEARTH_MAX_DEPTH + 1];
    const char *wild_keys[HEARTH_MAX_DEPTH + 1];
    size_t nwild;
    hearth__rule_why *why; /* which rule decided, or NULL: not asked */
    bool counting;         /* coverage counts this walk's evaluations */
    hearth__buf *trace;    /* a denial's trace: each rule tried, or NULL */
} walk;

/* Notes r (of kind at n) as the rule that decides, unless one that
 * settles the question was noted already. */
static void note(walk *w, const rnode *n, const char *kind, const rule *r,
                 bool settles) {
    if (!w->why || w->why->settled)
        return;
    w->why->kind = kind;
    w->why->settled = settles;
    snprintf(w->why->path, sizeof w->why->path, "%s", n->where);
    snprintf(w->why->expression, sizeof w->why->expression, "%s",
             r->expr ? r->src : r->constant ? "true" : "false");
}

/* Appends rule r (kind, at n) to the trace: where it is written, its
 * result, and its sub-expressions' values (already in values). */
static void trace_rule(walk *w, const rnode *n, const char *kind,
                       const rule *r, hearth__expr_result res,
                       const hearth__buf *values) {
    static const char *const names[] = {"false", "true", "error"};
    hearth__buf *b = w->trace; /* a JSON array being written, "[" first */
    bool first = !b->failed && b->len && b->data[b->len - 1] == '[';
    hearth__buf_adds(b, first ? "{\"rule\":\"" : ",{\"rule\":\"");
    hearth__buf_printf(b, "%s\",\"line\":%d,\"column\":%d,\"path\":", kind,
                       r->line, r->column);
    hearth__json_write_string(b, n->where, strlen(n->where));
    hearth__buf_adds(b, ",\"expression\":");
    const char *src = r->expr ? r->src : r->constant ? "true" : "false";
    hearth__json_write_string(b, src, strlen(src));
    hearth__buf_printf(b, ",\"result\":\"%s\",\"values\":", names[res]);
    if (values && !values->failed && values->len)
        hearth__buf_add(b, values->data, values->len);
    else
        hearth__buf_adds(b, "[]");
    hearth__buf_addc(b, '}');
}

static bool holds(const rnode *n, const char *kind, const rule *r, walk *w) {
    if (!r->set)
        return false;
    hearth__expr_result res;
    hearth__expr_env env = {w->a->auth, w->a->now, w->a->root, w->new_root,
                            w->path, w->a->query, w->wild_names, w->wild_keys,
                            w->nwild};
    if (!r->expr) {
        res = r->constant ? HEARTH__EXPR_TRUE : HEARTH__EXPR_FALSE;
        if (HEARTH__UNLIKELY(w->trace != NULL))
            trace_rule(w, n, kind, r, res, NULL);
    } else if (HEARTH__UNLIKELY(w->trace != NULL)) {
        hearth__buf values;
        hearth__buf_init(&values);
        res = hearth__expr_trace(r->expr, &env, r->src, &values);
        trace_rule(w, n, kind, r, res, &values);
        hearth__buf_free(&values);
    } else {
        res = hearth__expr_result_of(r->expr, &env);
    }
    if (w->counting) { /* two increments: cheap enough to leave on */
        r->count[0]++;
        r->count[1 + res]++;
    }
    return res == HEARTH__EXPR_TRUE;
}

/* The rule node for key below n (a literal before the wildcard), binding
 * the wildcard; NULL when none. */
static const rnode *descend(const rnode *n, const char *key, size_t len,
                            walk *w) {
    for (size_t i = 0; i < n->nkids; i++)
        if (strlen(n->keys[i]) == len && !memcmp(n->keys[i], key, len))
            return n->kids[i];
    if (n->wild) {
        w->wild_names[w->nwild] = n->wild_name;
        w->wild_keys[w->nwild] = key; /* NUL-terminated: see push_key */
        w->nwild++;
        return n->wild;
    }
    return NULL;
}

/* Appends /key to the walk's location; the key's copy there is what the
 * wildcard binds. */
static const char *push_key(walk *w, const char *key, size_t len) {
    if (w->path_len + len + 2 > sizeof w->path)
        return NULL;
    if (w->path_len > 1)
        w->path[w->path_len++] = '/';
    const char *at = w->path + w->path_len;
    memcpy(w->path + w->path_len, key, len);
    w->path_len += len;
    w->path[w->path_len] = '\0';
    return at;
}

static void walk_init(walk *w, const hearth__ruleset *rs,
                      const hearth__access *a, const hearth_node_t *new_root,
                      hearth__rule_why *why) {
    w->why = why;
    /* An explanation is the playground's hypothetical request. */
    w->counting = rs->counting && !why;
    w->trace = NULL;
    if (why)
        memset(why, 0, sizeof *why);
    w->a = a;
    w->new_root = new_root;
    strcpy(w->path, "/");
    w->path_len = 1;
    w->nwild = 0;
}

/* The walk's wildcard keys point into path, which later keys overwrite:
 * keep each bound key in a buffer of its own. */
typedef struct keybuf {
    char s[HEARTH_MAX_DEPTH + 1][HEARTH_MAX_KEY_BYTES + 1];
} keybuf;

static const rnode *step(const rnode *n, walk *w, keybuf *kb,
                         const hearth__name *seg) {
    if (!push_key(w, seg->s, seg->len))
        return NULL;
    memcpy(kb->s[w->nwild], seg->s, seg->len);
    kb->s[w->nwild][seg->len] = '\0';
    return descend(n, kb->s[w->nwild], seg->len, w);
}

static bool read_walk(const hearth__ruleset *rs, const hearth__path *path,
                      const hearth__access *a, hearth__rule_why *why,
                      hearth__buf *trace) {
    walk w;
    keybuf kb;
    walk_init(&w, rs, a, NULL, why);
    if (trace) { /* a denial traced again: counted once, when it happened */
        w.trace = trace;
        w.counting = false;
    }
    const rnode *n = rs->root;
    for (unsigned i = 0; n; i++) {
        bool granted = holds(n, ".read", &n->read, &w);
        if (n->read.set) /* a refusal is the deepest .read tried */
            note(&w, n, ".read", &n->read, granted);
        if (granted)
            return true; /* a grant covers everything below */
        if (i == path->n)
            break;
        n = step(n, &w, &kb, &path->seg[i]);
    }
    return false;
}

bool hearth__ruleset_explain_read(const hearth__ruleset *rs,
                                  const hearth__path *path,
                                  const hearth__access *a,
                                  hearth__rule_why *why) {
    return read_walk(rs, path, a, why, NULL);
}

bool hearth__ruleset_can_read(const hearth__ruleset *rs,
                              const hearth__path *path,
                              const hearth__access *a) {
    return hearth__ruleset_explain_read(rs, path, a, NULL);
}

/* Every .validate on the new data below n (at w's location) passes. */
static bool valid_below(const rnode *n, walk *w, keybuf *kb,
                        const hearth_node_t *data) {
    if (hearth_node_is_null(data))
        return true; /* deletions are not validated */
    if (n->validate.set && !holds(n, ".validate", &n->validate, w)) {
        note(w, n, ".validate", &n->validate, true);
        return false;
    }
    size_t count = hearth_node_child_count(data);
    size_t path_len = w->path_len, nwild = w->nwild;
    for (size_t i = 0; i < count; i++) {
        const char *key;
        const hearth_node_t *child = hearth_node_child_at(data, i, &key);
        hearth__name name;
        hearth__name_init(&name, key, strlen(key));
        const rnode *k = step(n, w, kb, &name);
        bool ok = !k || valid_below(k, w, kb, child);
        w->path_len = path_len;
        w->path[path_len] = '\0';
        w->nwild = nwild;
        if (!ok)
            return false;
    }
    return true;
}

static bool can_write_one(const hearth__ruleset *rs, const hearth__path *path,
                          const hearth_node_t *new_root,
                          const hearth__access *a, hearth__rule_why *why,
                          hearth__buf *trace) {
    walk w;
    keybuf kb;
    walk_init(&w, rs, a, new_root, why);
    if (trace) {
        w.trace = trace;
        w.counting = false;
    }
    const rnode *n = rs->root;
    bool granted = false;
    /* Down to the target: a .write anywhere on the way grants; each
     * .validate on the way must hold for the new data there. */
    const hearth_node_t *here = new_root;
    for (unsigned i = 0;; i++) {
        if (!granted && n->write.set) {
            /* The grant, else the deepest .write tried; a failing
             * .validate below replaces it. */
            granted = holds(n, ".write", &n->write, &w);
            note(&w, n, ".write", &n->write, false);
        }
        if (i == path->n)
            break;
        if (n->validate.set && !hearth_node_is_null(here) &&
            !holds(n, ".validate", &n->validate, &w)) {
            note(&w, n, ".validate", &n->validate, true);
            return false;
        }
        const rnode *next = step(n, &w, &kb, &path->seg[i]);
        here = hearth__node_child(here, &path->seg[i]);
        if (!next)
            return granted; /* no rules below: nothing more to check */
        n = next;
    }
    if (!granted)
        return false;
    return valid_below(n, &w, &kb, here);
}

bool hearth__ruleset_explain_write(const hearth__ruleset *rs,
                                   const hearth__path *const *paths, size_t n,
                                   const hearth_node_t *new_root,
                                   const hearth__access *a,
                                   hearth__rule_why *why) {
    for (size_t i = 0; i < n; i++)
        if (!can_write_one(rs, paths[i], new_root, a, why, NULL))
            return false;
    return true;
}

bool hearth__ruleset_trace_read(const hearth__ruleset *rs,
                                const hearth__path *path,
                                const hearth__access *a, hearth__buf *out) {
    hearth__buf_addc(out, '[');
    bool ok = read_walk(rs, path, a, NULL, out);
    hearth__buf_addc(out, ']');
    return ok;
}

bool hearth__ruleset_trace_write(const hearth__ruleset *rs,
                                 const hearth__path *const *paths, size_t n,
                                 const hearth_node_t *new_root,
                                 const hearth__access *a, hearth__buf *out) {
    hearth__buf_addc(out, '[');
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++)
        ok = can_write_one(rs, paths[i], new_root, a, NULL, out);
    hearth__buf_addc(out, ']');
    return ok;
}

bool hearth__ruleset_can_write(const hearth__ruleset *rs,
                               const hearth__path *const *paths, size_t n,
                               const hearth_node_t *new_root,
                               const hearth__access *a) {
    return hearth__ruleset_explain_write(rs, paths, n, new_root, a, NULL);
}

/* Whether any .write rule lies at or under n. */
static bool writes_under(const rnode *n) {
    if (n->write.set || (n->wild && writes_under(n->wild)))
        return true;
    for (size_t i = 0; i < n->nkids; i++)
        if (writes_under(n->kids[i]))
            return true;
    return false;
}

hearth__early_write hearth__ruleset_write_early(const hearth__ruleset *rs,
                                                const hearth__path *path,
                                                bool below,
                                                const hearth__access *a) {
    walk w;
    keybuf kb;
    walk_init(&w, rs, a, NULL, NULL);
    const rnode *n = rs->root;
    for (unsigned i = 0;; i++) {
        const rule *r = &n->write;
        if (r->set && r->expr && hearth__expr_uses(r->expr, "newData"))
            return HEARTH__WRITE_UNDECIDED;
        if (holds(n, ".write", r, &w))
            return HEARTH__WRITE_MAY;
        if (i == path->n)
            break;
        n = step(n, &w, &kb, &path->seg[i]);
        if (!n)
            return HEARTH__WRITE_DENIED; /* no rules further down */
    }
    bool under = false;
    for (size_t i = 0; below && !under && i < n->nkids; i++)
        under = writes_under(n->kids[i]);
    if (below && n->wild)
        under = under || writes_under(n->wild);
    return under ? HEARTH__WRITE_UNDECIDED : HEARTH__WRITE_DENIED;
}

/* ---- coverage ---- */

void hearth__ruleset_set_counting(hearth__ruleset *rs, bool on) {
    rs->counting = on;
}

const char *hearth__ruleset_source(const hearth__ruleset *rs) {
    return rs->source;
}

typedef struct cov_list {
    hearth__rule_coverage *v;
    size_t n, cap;
    bool failed;
} cov_list;

static void cov_add(cov_list *l, const rnode *n, const char *kind,
                    const rule *r) {
    if (!r->set || l->failed)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        hearth__rule_coverage *v = hearth__realloc(l->v, cap * sizeof *v);
        if (!v) {
            l->failed = true;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (hearth__rule_coverage){
        r->line, r->column, kind, n->where,
        r->expr ? r->src : r->constant ? "true" : "false",
        r->count[0], r->count[1 + HEARTH__EXPR_TRUE],
        r->count[1 + HEARTH__EXPR_FALSE], r->count[1 + HEARTH__EXPR_ERROR]};
}

static void cov_walk(cov_list *l, const rnode *n) {
    cov_add(l, n, ".read", &n->read);
    cov_add(l, n, ".write", &n->write);
    cov_add(l, n, ".validate", &n->validate);
    for (size_t i = 0; i < n->nkids; i++)
        cov_walk(l, n->kids[i]);
    if (n->wild)
        cov_walk(l, n->wild);
}

static int by_position(const void *a, const void *b) {
    const hearth__rule_coverage *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->column != y->column)
        return x->column < y->column ? -1 : 1;
    int c = strcmp(x->where, y->where);
    return c ? c : strcmp(x->kind, y->kind);
}

int hearth__ruleset_coverage(const hearth__ruleset *rs,
                             hearth__rule_coverage **out, size_t *n) {
    cov_list l = {0};
    cov_walk(&l, rs->root);
    if (l.failed) {
        hearth__free(l.v);
        return HEARTH_ENOMEM;
    }
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, by_position);
    *out = l.v;
    *n = l.n;
    return 0;
}
