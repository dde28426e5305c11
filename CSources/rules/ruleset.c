/* ruleset.c - compiling a rules document into a tree of rule nodes, and
 * walking it for reads, writes and validation (see ruleset.h). */
#include "rules/ruleset.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* A rule: true, false, or an expression. */
typedef struct rule {
    bool set;
    bool constant;
    hearth__expr *expr;
    char *src; /* the expression as written (for hearth__rule_why) */
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
    hearth__free(rs);
}

/* ---- compiling ---- */

static int compile_rule(const json_t *v, const char *where, const char *kind,
                        rule *out, hearth_error_t *err) {
    out->set = true;
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

static int compile_node(const json_t *obj, const char *where, rnode **out,
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
            rc = compile_rule(v, where, ".read", &n->read, err);
        else if (!strcmp(key, ".write"))
            rc = compile_rule(v, where, ".write", &n->write, err);
        else if (!strcmp(key, ".validate"))
            rc = compile_rule(v, where, ".validate", &n->validate, err);
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
                rc = compile_node(v, here, &n->wild, err);
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
            rc = compile_node(v, here, &n->kids[n->nkids - 1], err);
        }
    }
    if (rc) {
        rnode_free(n);
        return rc;
    }
    *out = n;
    return 0;
}

int hearth__ruleset_compile(const json_t *doc, hearth__ruleset **out,
                            hearth_error_t *err) {
    const json_t *rules = json_object_get(doc, "rules");
    if (!json_is_object(rules))
        return hearth__error(err, HEARTH_EVALUE, NULL,
                             "a rules document is an object with a \"rules\" "
                             "object");
    hearth__ruleset *rs = hearth__calloc(1, sizeof *rs);
    if (!rs)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int rc = compile_node(rules, "/", &rs->root, err);
    if (rc) {
        hearth__free(rs);
        return rc;
    }
    *out = rs;
    return 0;
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

static bool holds(const rule *r, walk *w) {
    if (!r->set)
        return false;
    if (!r->expr)
        return r->constant;
    hearth__expr_env env = {w->a->auth, w->a->now, w->a->root, w->new_root,
                            w->path, w->a->query, w->wild_names, w->wild_keys,
                            w->nwild};
    return hearth__expr_eval(r->expr, &env);
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

static void walk_init(walk *w, const hearth__access *a,
                      const hearth_node_t *new_root, hearth__rule_why *why) {
    w->why = why;
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

bool hearth__ruleset_explain_read(const hearth__ruleset *rs,
                                  const hearth__path *path,
                                  const hearth__access *a,
                                  hearth__rule_why *why) {
    walk w;
    keybuf kb;
    walk_init(&w, a, NULL, why);
    const rnode *n = rs->root;
    for (unsigned i = 0; n; i++) {
        bool granted = holds(&n->read, &w);
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
    if (n->validate.set && !holds(&n->validate, w)) {
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
                          const hearth__access *a, hearth__rule_why *why) {
    walk w;
    keybuf kb;
    walk_init(&w, a, new_root, why);
    const rnode *n = rs->root;
    bool granted = false;
    /* Down to the target: a .write anywhere on the way grants; each
     * .validate on the way must hold for the new data there. */
    const hearth_node_t *here = new_root;
    for (unsigned i = 0;; i++) {
        if (!granted && n->write.set) {
            /* The grant, else the deepest .write tried; a failing
             * .validate below replaces it. */
            granted = holds(&n->write, &w);
            note(&w, n, ".write", &n->write, false);
        }
        if (i == path->n)
            break;
        if (n->validate.set && !hearth_node_is_null(here) &&
            !holds(&n->validate, &w)) {
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
        if (!can_write_one(rs, paths[i], new_root, a, why))
            return false;
    return true;
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
    walk_init(&w, a, NULL, NULL);
    const rnode *n = rs->root;
    for (unsigned i = 0;; i++) {
        const rule *r = &n->write;
        if (r->set && r->expr && hearth__expr_uses(r->expr, "newData"))
            return HEARTH__WRITE_UNDECIDED;
        if (holds(r, &w))
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
