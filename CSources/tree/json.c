/* json.c - JSON in (the usual text straight to nodes in json_parse.c; the
 * rest through jansson, validated as Hearth data) and out (text written
 * directly, or jansson values). */
#include "tree/json.h"

#include "path/path.h"
#include "tree/node.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ---- */

typedef struct parse_ctx {
    unsigned flags;
    unsigned max_depth;  /* keys allowed below the value's root */
    const char *base;    /* the location written to, for messages */
    hearth_error_t *err;
    const char *keys[HEARTH_MAX_DEPTH + 2]; /* keys down to the current node */
    size_t key_lens[HEARTH_MAX_DEPTH + 2];
} parse_ctx;

/* "/base/k1/k2" for messages. */
static void where(const parse_ctx *c, unsigned depth, char *buf, size_t size) {
    int used = snprintf(buf, size, "%s", c->base && *c->base ? c->base : "");
    for (unsigned i = 0; i < depth && used >= 0 && (size_t)used < size; i++)
        used += snprintf(buf + used, size - (size_t)used, "/%.*s",
                         (int)c->key_lens[i], c->keys[i]);
    if (!buf[0])
        snprintf(buf, size, "/");
}

static int fail(const parse_ctx *c, unsigned depth, int code,
                const char *what) {
    char loc[256];
    where(c, depth, loc, sizeof loc);
    return hearth__error(c->err, code, loc, "%s at %s", what, loc);
}

static int parse(const json_t *j, parse_ctx *c, unsigned depth,
                 hearth_node_t **out);

static int parse_server_value(const json_t *sv, parse_ctx *c, unsigned depth,
                              hearth_node_t **out);

/* A priority: null, a number, a string, or (where server values are
 * allowed) a server value, resolved with the write as the SDKs allow. */
static int parse_priority(const json_t *j, parse_ctx *c, unsigned depth,
                          hearth_node_t **out) {
    *out = NULL;
    if (!j || json_is_null(j))
        return 0;
    if (json_is_string(j) || json_is_number(j))
        return parse(j, c, depth, out);
    const json_t *sv = json_object_get(j, ".sv");
    if (sv && json_object_size(j) == 1 &&
        (c->flags & HEARTH_JSON_ALLOW_SERVER_VALUES))
        return parse_server_value(sv, c, depth, out);
    return fail(c, depth, HEARTH_EPRIORITY,
                "invalid priority: must be null, a number, a string or a "
                "server value");
}

static hearth_node_t *with_priority(hearth_node_t *n, hearth_node_t *prio) {
    if (!prio || hearth__node_is_empty(n)) {
        hearth_node_decref(prio);
        return n;
    }
    hearth_node_t *result;
    if (n->type == HEARTH_TYPE_OBJECT &&
        atomic_load_explicit(&n->refs, memory_order_relaxed) == 1) {
        hearth_node_decref(n->priority);
        n->priority = prio;
        return n;
    }
    result = hearth__node_leaf_with_priority(n, prio);
    hearth_node_decref(n);
    return result;
}

static int parse_server_value(const json_t *sv, parse_ctx *c, unsigned depth,
                              hearth_node_t **out) {
    if (!(c->flags & HEARTH_JSON_ALLOW_SERVER_VALUES))
        return fail(c, depth, HEARTH_ESERVERVALUE,
                    "server values (\".sv\") are not allowed here");
    if (json_is_string(sv) && strcmp(json_string_value(sv), "timestamp") == 0) {
        *out = hearth_node_server_timestamp();
    } else if (json_is_object(sv) && json_object_size(sv) == 1 &&
               json_is_number(json_object_get(sv, "increment"))) {
        double delta = json_number_value(json_object_get(sv, "increment"));
        *out = hearth_node_server_increment(delta);
    } else {
        return fail(c, depth, HEARTH_ESERVERVALUE,
                    "unknown server value: expected \"timestamp\" or "
                    "{\"increment\": number}");
    }
    return *out ? 0 : fail(c, depth, HEARTH_ENOMEM, "out of memory");
}

/* ---- children being gathered (shared with json_parse.c) ---- */

static int compare_entries(const void *a, const void *b) {
    const hearth__entry *ea = a, *eb = b;
    if (ea->sort != eb->sort)
        return ea->sort < eb->sort ? -1 : 1;
    hearth__name na = hearth__key_name(ea->key);
    hearth__name nb = hearth__key_name(eb->key);
    return hearth__name_compare(&na, &nb);
}

void hearth__kids_free(hearth__kids *k) {
    for (size_t i = 0; i < k->n; i++) {
        hearth__key_decref(k->e[i].key);
        hearth_node_decref(k->e[i].node);
    }
    hearth__free(k->e);
    *k = (hearth__kids){0};
}

int hearth__kids_add(hearth__kids *k, const char *key, size_t len,
                     hearth_node_t *child) {
    if (hearth__node_is_empty(child)) {
        hearth_node_decref(child);
        return 0;
    }
    hearth__entry *e = hearth__grow(k->e, &k->cap, k->n + 1, sizeof *e);
    if (!e) {
        hearth_node_decref(child);
        return HEARTH_ENOMEM;
    }
    k->e = e;
    hearth__name name;
    hearth__name_init(&name, key, len);
    hearth__key *kk = hearth__key_create(&name);
    if (!kk) {
        hearth_node_decref(child);
        return HEARTH_ENOMEM;
    }
    k->e[k->n++] = (hearth__entry){kk, child, hearth__name_sort(&name)};
    return 0;
}

int hearth__kids_node(hearth__kids *k, hearth_node_t **out) {
    /* Text written by Hearth (or any sorted source) is in key order
     * already: sort only what is not. */
    size_t i = 1;
    while (i < k->n && compare_entries(&k->e[i - 1], &k->e[i]) < 0)
        i++;
    if (i < k->n) {
        qsort(k->e, k->n, sizeof *k->e, compare_entries);
        for (i = 1; i < k->n; i++)
            if (compare_entries(&k->e[i - 1], &k->e[i]) == 0) {
                hearth__kids_free(k);
                return HEARTH_EJSON; /* a key twice: only raw text has */
            }
    }
    hearth__bt *tree = NULL;
    int rc = hearth__bt_build(k->e, k->n, &tree);
    if (rc) {
        hearth__kids_free(k);
        return rc;
    }
    hearth__free(k->e);
    *k = (hearth__kids){0};
    *out = hearth__node_obj_new(tree, NULL);
    return *out ? 0 : HEARTH_ENOMEM;
}

static int parse_children(const json_t *j, parse_ctx *c, unsigned depth,
                          hearth_node_t **out) {
    hearth__kids kids = {0};
    int rc = 0;
    if (depth + 1 > c->max_depth && (json_is_array(j) ? json_array_size(j)
                                                      : json_object_size(j)))
        return fail(c, depth, HEARTH_EDEPTH,
                    "data nested deeper than 32 levels");
    if (json_is_array(j)) {
        char key[24];
        for (size_t i = 0; !rc && i < json_array_size(j); i++) {
            size_t len = (size_t)snprintf(key, sizeof key, "%zu", i);
            c->keys[depth] = key;
            c->key_lens[depth] = len;
            hearth_node_t *child;
            rc = parse(json_array_get(j, i), c, depth + 1, &child);
            if (!rc)
                rc = hearth__kids_add(&kids, key, len, child);
        }
    } else {
        for (void *it = json_object_iter((json_t *)j); !rc && it;
             it = json_object_iter_next((json_t *)j, it)) {
            const char *key = json_object_iter_key(it);
            size_t len = json_object_iter_key_len(it);
            if (len == 9 && memcmp(key, ".priority", 9) == 0)
                continue;
            /* The location is spelled out only for a key that fails. A
             * token's claims may have any non-empty key (its issuer chose
             * them: firebase.identities has "google.com"). */
            bool claim_key = (c->flags & HEARTH__JSON_CLAIM_KEYS) && len;
            if (!claim_key && hearth__key_check(key, len, NULL, NULL)) {
                char loc[256];
                where(c, depth, loc, sizeof loc);
                rc = hearth__key_check(key, len, loc, c->err);
                break;
            }
            c->keys[depth] = key;
            c->key_lens[depth] = len;
            hearth_node_t *child;
            rc = parse(json_object_iter_value(it), c, depth + 1, &child);
            if (!rc)
                rc = hearth__kids_add(&kids, key, len, child);
        }
    }
    if (rc) {
        hearth__kids_free(&kids);
        return rc == HEARTH_ENOMEM ? fail(c, depth, rc, "out of memory") : rc;
    }
    rc = hearth__kids_node(&kids, out); /* jansson's keys are distinct */
    return rc ? fail(c, depth, rc, "out of memory") : 0;
}

static int parse(const json_t *j, parse_ctx *c, unsigned depth,
                 hearth_node_t **out) {
    switch (json_typeof(j)) {
    case JSON_NULL:
        *out = hearth_node_null();
        return 0;
    case JSON_TRUE:
    case JSON_FALSE:
        *out = hearth_node_boolean(json_is_true(j));
        break;
    case JSON_INTEGER:
    case JSON_REAL: {
        double v = json_number_value(j);
        if (!isfinite(v))
            return fail(c, depth, HEARTH_ENUMBER,
                        "number is NaN or infinite");
        *out = hearth_node_number(v);
        break;
    }
    case JSON_STRING: {
        size_t len = json_string_length(j);
        if (len > HEARTH_MAX_STRING_BYTES) {
            char what[96];
            snprintf(what, sizeof what,
                     "string of %zu bytes is over the limit of %d bytes", len,
                     HEARTH_MAX_STRING_BYTES);
            return fail(c, depth, HEARTH_ETOOBIG, what);
        }
        *out = hearth_node_string(json_string_value(j), len);
        break;
    }
    case JSON_ARRAY:
        return parse_children(j, c, depth, out);
    case JSON_OBJECT: {
        const json_t *sv = json_object_get(j, ".sv");
        const json_t *value = json_object_get(j, ".value");
        const json_t *prio_json = json_object_get(j, ".priority");
        size_t specials = (sv != NULL) + (value != NULL) + (prio_json != NULL);
        if (sv && value)
            return fail(c, depth, HEARTH_EVALUE,
                        "\".sv\" and \".value\" cannot be used together");
        if ((sv || value) && json_object_size(j) != specials)
            return fail(c, depth, HEARTH_EVALUE,
                        sv ? "\".sv\" may only have \".priority\" beside it"
                           : "\".value\" may only have \".priority\" beside "
                             "it");
        hearth_node_t *prio;
        int rc = parse_priority(prio_json, c, depth, &prio);
        if (rc)
            return rc;
        hearth_node_t *n;
        if (sv)
            rc = parse_server_value(sv, c, depth, &n);
        else if (value && json_is_object(value) &&
                 json_object_get(value, ".sv") == NULL)
            rc = parse_children(value, c, depth, &n);
        else if (value)
            rc = parse(value, c, depth, &n);
        else
            rc = parse_children(j, c, depth, &n);
        if (rc) {
            hearth_node_decref(prio);
            return rc;
        }
        *out = with_priority(n, prio);
        break;
    }
    default:
        return fail(c, depth, HEARTH_EVALUE, "unsupported JSON value");
    }
    return *out ? 0 : fail(c, depth, HEARTH_ENOMEM, "out of memory");
}

/* How many keys deep a value written base_depth keys deep may go. */
static unsigned keys_below(unsigned base_depth) {
    return base_depth >= HEARTH_MAX_DEPTH ? 0 : HEARTH_MAX_DEPTH - base_depth;
}

int hearth__node_from_jansson_at(const json_t *json, unsigned flags,
                                 const char *base, unsigned base_depth,
                                 hearth_node_t **out, hearth_error_t *err) {
    if (!json)
        return hearth__error(err, HEARTH_EINVAL, NULL, "JSON value is NULL");
    parse_ctx c = {.flags = flags,
                   .max_depth = keys_below(base_depth),
                   .base = base,
                   .err = err};
    hearth_node_t *n;
    int rc = parse(json, &c, 0, &n);
    if (!rc)
        *out = n; /* nothing is written on failure */
    return rc;
}

int hearth_node_from_jansson(const json_t *json, unsigned flags,
                             hearth_node_t **out, hearth_error_t *err) {
    return hearth__node_from_jansson_at(json, flags, "", 0, out, err);
}

int hearth__json_load(const char *text, size_t len, json_t **out,
                      hearth_error_t *err) {
    if (!text)
        return hearth__error(err, HEARTH_EINVAL, NULL, "JSON text is NULL");
    if (len == (size_t)-1)
        len = strlen(text);
    json_error_t jerr;
    json_t *json = json_loadb(text, len,
                              JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL |
                                  JSON_ALLOW_NUL,
                              &jerr);
    if (!json) {
        hearth__error(err, HEARTH_EJSON, NULL,
                      "invalid JSON at line %d, column %d: %s", jerr.line,
                      jerr.column, jerr.text);
        if (err) {
            err->line = jerr.line;
            err->column = jerr.column;
        }
        return HEARTH_EJSON;
    }
    *out = json;
    return 0;
}

int hearth__node_from_json_at(const char *text, size_t len, unsigned flags,
                              const char *base, unsigned base_depth,
                              hearth_node_t **out, hearth_error_t *err) {
    /* The usual text goes straight to nodes; the rest (special members,
     * errors) through jansson, which names what is wrong. */
    if (text) {
        if (len == (size_t)-1)
            len = strlen(text);
        if (!hearth__json_parse_plain(text, len, keys_below(base_depth), out))
            return 0;
    }
    json_t *json;
    int rc = hearth__json_load(text, len, &json, err);
    if (rc)
        return rc;
    rc = hearth__node_from_jansson_at(json, flags, base, base_depth, out, err);
    json_decref(json);
    return rc;
}

int hearth_node_from_json(const char *text, size_t len, unsigned flags,
                          hearth_node_t **out, hearth_error_t *err) {
    return hearth__node_from_json_at(text, len, flags, "", 0, out, err);
}

/* ---- writing text ---- */

void hearth__json_write_string(hearth__buf *b, const char *s, size_t len) {
    static const char hex[] = "0123456789abcdef";
    if (!hearth__buf_reserve(b, len + 2))
        return;
    hearth__buf_addc(b, '"');
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        hearth__buf_add(b, s + start, i - start);
        start = i + 1;
        char esc[7] = {'\\', 0};
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
        }
        hearth__buf_add(b, esc, esc[1] == 'u' ? 6 : 2);
    }
    hearth__buf_add(b, s + start, len - start);
    hearth__buf_addc(b, '"');
}

static void write_number(hearth__buf *b, double v) {
    char num[32];
    size_t len = hearth__format_number(v, num);
    hearth__buf_add(b, num, len);
}

typedef struct writer {
    hearth__buf *b;
    bool export_format;
    bool pretty;
} writer;

static void newline(writer *w, unsigned indent) {
    if (!w->pretty)
        return;
    hearth__buf_addc(w->b, '\n');
    for (unsigned i = 0; i < indent; i++)
        hearth__buf_add(w->b, "  ", 2);
}

static void write_node(writer *w, const hearth_node_t *n, unsigned indent);

/* Keys "0", "1", ... with maxKey < 2 * count read back as an array. */
bool hearth__node_is_array(const hearth_node_t *n) {
    size_t count = hearth__bt_count(n->u.obj.tree);
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, n->u.obj.tree, 0);
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));) {
        const hearth__key *k = e->key;
        if (!k->is_int || k->s[0] == '-' || (k->s[0] == '0' && k->len > 1))
            return false;
    }
    /* Integer keys sort numerically, so the last one is the largest. */
    const hearth__entry *last = hearth__bt_at(n->u.obj.tree, count - 1);
    return (size_t)last->key->ival < 2 * count;
}

bool hearth_node_is_array(const hearth_node_t *node) {
    return node && hearth_node_type(node) == HEARTH_TYPE_OBJECT &&
           hearth__node_is_array(node);
}

static void write_array(writer *w, const hearth_node_t *n, unsigned indent) {
    hearth__buf_addc(w->b, '[');
    size_t next = 0;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, n->u.obj.tree, 0);
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));) {
        for (; next <= (size_t)e->key->ival; next++) {
            if (next)
                hearth__buf_addc(w->b, ',');
            newline(w, indent + 1);
            if (next < (size_t)e->key->ival)
                hearth__buf_add(w->b, "null", 4);
        }
        write_node(w, e->node, indent + 1);
    }
    newline(w, indent);
    hearth__buf_addc(w->b, ']');
}

static void write_member_key(writer *w, const char *key, size_t len,
                             bool first, unsigned indent) {
    if (!first)
        hearth__buf_addc(w->b, ',');
    newline(w, indent);
    hearth__json_write_string(w->b, key, len);
    hearth__buf_add(w->b, ": ", w->pretty ? 2 : 1);
}

static void write_object(writer *w, const hearth_node_t *n, unsigned indent) {
    hearth__buf_addc(w->b, '{');
    bool first = true;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, n->u.obj.tree, 0);
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));) {
        write_member_key(w, e->key->s, e->key->len, first, indent + 1);
        write_node(w, e->node, indent + 1);
        first = false;
    }
    if (w->export_format && n->priority) {
        write_member_key(w, ".priority", 9, first, indent + 1);
        write_node(w, n->priority, indent + 1);
    }
    newline(w, indent);
    hearth__buf_addc(w->b, '}');
}

static void write_leaf(writer *w, const hearth_node_t *n, unsigned indent) {
    switch (n->type) {
    case HEARTH_TYPE_BOOLEAN:
        hearth__buf_adds(w->b, n->u.boolean ? "true" : "false");
        break;
    case HEARTH_TYPE_NUMBER:
        write_number(w->b, n->u.number);
        break;
    case HEARTH_TYPE_STRING:
        hearth__json_write_string(w->b, hearth__node_str(n), n->u.len);
        break;
    case HEARTH_TYPE_SERVER_VALUE:
        hearth__buf_addc(w->b, '{');
        write_member_key(w, ".sv", 3, true, indent + 1);
        if (n->sv == HEARTH__SV_TIMESTAMP) {
            hearth__buf_adds(w->b, "\"timestamp\"");
        } else {
            hearth__buf_addc(w->b, '{');
            write_member_key(w, "increment", 9, true, indent + 2);
            write_number(w->b, n->u.number);
            newline(w, indent + 1);
            hearth__buf_addc(w->b, '}');
        }
        newline(w, indent);
        hearth__buf_addc(w->b, '}');
        break;
    default:
        hearth__buf_add(w->b, "null", 4);
    }
}

static void write_node(writer *w, const hearth_node_t *n, unsigned indent) {
    if (n->type == HEARTH_TYPE_OBJECT) {
        if (!w->export_format && hearth__node_is_array(n))
            write_array(w, n, indent);
        else
            write_object(w, n, indent);
    } else if (w->export_format && n->priority) {
        hearth__buf_addc(w->b, '{');
        write_member_key(w, ".value", 6, true, indent + 1);
        write_leaf(w, n, indent + 1);
        write_member_key(w, ".priority", 9, false, indent + 1);
        write_node(w, n->priority, indent + 1);
        newline(w, indent);
        hearth__buf_addc(w->b, '}');
    } else {
        write_leaf(w, n, indent);
    }
}

void hearth__node_write_json(hearth__buf *b, const hearth_node_t *n,
                             unsigned flags) {
    writer w = {b, (flags & HEARTH_JSON_EXPORT) != 0,
                (flags & HEARTH_JSON_PRETTY) != 0};
    write_node(&w, n, 0);
}

char *hearth_node_to_json(const hearth_node_t *node, unsigned flags,
                          size_t *len) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__node_write_json(&b, node, flags);
    return hearth__buf_detach(&b, len);
}

/* ---- jansson values ---- */

/* Integral values as integers, as REST prints them (hearth__format_number:
 * past 2^53 its shortest digits padded with zeros), up to what jansson's
 * integers hold; a client reading 1e17 or 9007199254740992.0 would take
 * it for a floating-point value (Android: a Double, not a Long). */
static json_t *number_json(double v) {
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        return json_integer((json_int_t)v);
    if (v == floor(v) && fabs(v) < 9223372036854775808.0) {
        char text[32];
        hearth__format_number(v, text);
        errno = 0;
        long long n = strtoll(text, NULL, 10);
        return json_integer(errno ? (json_int_t)v : (json_int_t)n);
    }
    return json_real(v);
}

static json_t *to_jansson(const hearth_node_t *n, bool export_format);

static json_t *leaf_json(const hearth_node_t *n) {
    switch (n->type) {
    case HEARTH_TYPE_BOOLEAN:
        return json_boolean(n->u.boolean);
    case HEARTH_TYPE_NUMBER:
        return number_json(n->u.number);
    case HEARTH_TYPE_STRING:
        return json_stringn_nocheck(hearth__node_str(n), n->u.len);
    case HEARTH_TYPE_SERVER_VALUE:
        if (n->sv == HEARTH__SV_TIMESTAMP)
            return json_pack("{s:s}", ".sv", "timestamp");
        return json_pack("{s:{s:o}}", ".sv", "increment",
                         number_json(n->u.number));
    default:
        return json_null();
    }
}

static json_t *children_json(const hearth_node_t *n, bool export_format) {
    bool array = !export_format && hearth__node_is_array(n);
    json_t *out = array ? json_array() : json_object();
    if (!out)
        return NULL;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, n->u.obj.tree, 0);
    for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));) {
        json_t *child = to_jansson(e->node, export_format);
        if (!child)
            goto fail;
        if (array) {
            while (json_array_size(out) < (size_t)e->key->ival)
                if (json_array_append_new(out, json_null()))
                    goto fail_child;
            if (json_array_append_new(out, child))
                goto fail;
        } else if (json_object_setn_new_nocheck(out, e->key->s, e->key->len,
                                                child)) {
            goto fail;
        }
        continue;
    fail_child:
        json_decref(child);
        goto fail;
    }
    if (export_format && n->priority) {
        json_t *p = leaf_json(n->priority);
        if (!p || json_object_set_new_nocheck(out, ".priority", p))
            goto fail;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

static json_t *to_jansson(const hearth_node_t *n, bool export_format) {
    if (n->type == HEARTH_TYPE_OBJECT)
        return children_json(n, export_format);
    json_t *leaf = leaf_json(n);
    if (!leaf || !export_format || !n->priority)
        return leaf;
    json_t *p = leaf_json(n->priority);
    json_t *wrapped = p ? json_pack("{s:o,s:o}", ".value", leaf, ".priority", p)
                        : NULL;
    if (!wrapped && !p)
        json_decref(leaf);
    return wrapped;
}

json_t *hearth_node_to_jansson(const hearth_node_t *node, unsigned flags) {
    return to_jansson(node, (flags & HEARTH_JSON_EXPORT) != 0);
}
