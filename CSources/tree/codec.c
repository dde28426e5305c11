/* codec.c - the compact binary form of nodes (see codec.h). */
#include "tree/codec.h"

#include "path/path.h"

#include <math.h>
#include <string.h>

enum { T_NULL, T_FALSE, T_TRUE, T_NUMBER, T_STRING, T_OBJECT, T_PRIORITY = 0x80 };

static void put_varint(hearth__buf *b, uint64_t v) {
    while (v >= 0x80) {
        hearth__buf_addc(b, (char)(v | 0x80));
        v >>= 7;
    }
    hearth__buf_addc(b, (char)v);
}

static void put_bytes(hearth__buf *b, const char *s, size_t len) {
    put_varint(b, len);
    hearth__buf_add(b, s, len);
}

static void encode(const hearth_node_t *n, hearth__buf *b) {
    uint8_t prio = n->priority ? T_PRIORITY : 0;
    switch (n->type) {
    case HEARTH_TYPE_BOOLEAN:
        hearth__buf_addc(b, (char)((n->u.boolean ? T_TRUE : T_FALSE) | prio));
        break;
    case HEARTH_TYPE_NUMBER: {
        hearth__buf_addc(b, (char)(T_NUMBER | prio));
        if (prio)
            encode(n->priority, b);
        uint64_t bits;
        memcpy(&bits, &n->u.number, sizeof bits);
        for (int i = 0; i < 8; i++)
            hearth__buf_addc(b, (char)(bits >> (8 * i)));
        return;
    }
    case HEARTH_TYPE_STRING:
        hearth__buf_addc(b, (char)(T_STRING | prio));
        if (prio)
            encode(n->priority, b);
        put_bytes(b, hearth__node_str(n), n->u.len);
        return;
    case HEARTH_TYPE_OBJECT: {
        hearth__buf_addc(b, (char)(T_OBJECT | prio));
        if (prio)
            encode(n->priority, b);
        const hearth__bt *t = n->u.obj.tree;
        put_varint(b, hearth__bt_count(t));
        hearth__bt_iter it;
        hearth__bt_iter_init(&it, t, 0);
        for (const hearth__entry *e; (e = hearth__bt_iter_next(&it));) {
            put_bytes(b, e->key->s, e->key->len);
            encode(e->node, b);
        }
        return;
    }
    default: /* null, or a placeholder (never stored): null */
        hearth__buf_addc(b, T_NULL);
        return;
    }
    if (prio)
        encode(n->priority, b);
}

void hearth__node_encode(const hearth_node_t *node, hearth__buf *b) {
    encode(node, b);
}

typedef struct reader {
    const unsigned char *p, *end;
} reader;

static bool get_varint(reader *r, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p == r->end)
            return false;
        unsigned char c = *r->p++;
        *v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80))
            return c != 0 || shift == 0; /* no padded forms: one encoding */
    }
    return false;
}

static bool get_bytes(reader *r, const char **s, size_t *len, size_t max) {
    uint64_t n;
    if (!get_varint(r, &n) || n > max || n > (uint64_t)(r->end - r->p))
        return false;
    *s = (const char *)r->p;
    *len = (size_t)n;
    r->p += n;
    return true;
}

static int decode(reader *r, unsigned depth, hearth_node_t **out);

/* A priority: a number or a string, with none of its own. */
static int decode_priority(reader *r, hearth_node_t **out) {
    if (r->p == r->end || (*r->p != T_NUMBER && *r->p != T_STRING))
        return HEARTH_EVALUE;
    return decode(r, HEARTH_MAX_DEPTH, out);
}

static int decode_object(reader *r, unsigned depth, hearth_node_t **out) {
    uint64_t count;
    if (!get_varint(r, &count) || count == 0 ||
        count > (uint64_t)(r->end - r->p) / 2) /* 2 bytes per child at least */
        return HEARTH_EVALUE;
    hearth__entry *entries = hearth__malloc((size_t)count * sizeof *entries);
    if (!entries)
        return HEARTH_ENOMEM;
    size_t n = 0;
    int rc = 0;
    hearth__name prev = {0};
    for (; !rc && n < count; n++) {
        const char *k;
        size_t klen;
        hearth_node_t *child = NULL;
        hearth__name name;
        if (!get_bytes(r, &k, &klen, HEARTH_MAX_KEY_BYTES) ||
            hearth__key_check(k, klen, NULL, NULL))
            rc = HEARTH_EVALUE;
        else if (hearth__name_init(&name, k, klen),
                 n > 0 && hearth__name_compare(&prev, &name) >= 0)
            rc = HEARTH_EVALUE; /* keys come in key order, each once */
        else if (!(rc = decode(r, depth + 1, &child)) && hearth__node_is_empty(child))
            rc = HEARTH_EVALUE; /* objects hold no null children */
        if (rc) {
            hearth_node_decref(child);
            break;
        }
        prev = name;
        entries[n].key = hearth__key_create(&name);
        entries[n].node = child;
        if (!entries[n].key) {
            hearth_node_decref(child);
            rc = HEARTH_ENOMEM;
            break;
        }
    }
    if (rc) {
        for (size_t i = 0; i < n; i++) {
            hearth__key_decref(entries[i].key);
            hearth_node_decref(entries[i].node);
        }
        hearth__free(entries);
        return rc;
    }
    hearth_node_t *obj;
    rc = hearth__node_from_entries(entries, n, &obj);
    if (!rc)
        *out = obj;
    return rc;
}

static int decode(reader *r, unsigned depth, hearth_node_t **out) {
    *out = NULL;
    if (depth > HEARTH_MAX_DEPTH || r->p == r->end)
        return HEARTH_EVALUE;
    unsigned char tag = *r->p++;
    hearth_node_t *prio = NULL;
    if (tag & T_PRIORITY) {
        int rc = decode_priority(r, &prio);
        if (rc)
            return rc;
    }
    hearth_node_t *n = NULL;
    int rc = 0;
    switch (tag & 0x7F) {
    case T_NULL:
        n = prio ? NULL : hearth_node_null();
        rc = prio ? HEARTH_EVALUE : 0; /* null carries no priority */
        break;
    case T_FALSE:
    case T_TRUE:
        n = hearth_node_boolean((tag & 0x7F) == T_TRUE);
        break;
    case T_NUMBER: {
        if (r->end - r->p < 8) {
            rc = HEARTH_EVALUE;
            break;
        }
        uint64_t bits = 0;
        for (int i = 0; i < 8; i++)
            bits |= (uint64_t)r->p[i] << (8 * i);
        r->p += 8;
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v))
            rc = HEARTH_EVALUE;
        else
            n = hearth_node_number(v);
        break;
    }
    case T_STRING: {
        const char *s;
        size_t len;
        if (!get_bytes(r, &s, &len, HEARTH_MAX_STRING_BYTES) ||
            !hearth__utf8_valid(s, len))
            rc = HEARTH_EVALUE;
        else
            n = hearth_node_string(s, len);
        break;
    }
    case T_OBJECT:
        rc = decode_object(r, depth, &n);
        break;
    default:
        rc = HEARTH_EVALUE;
    }
    if (!rc && !n)
        rc = HEARTH_ENOMEM;
    if (!rc && prio) {
        hearth_node_t *with = NULL;
        rc = hearth_node_with_priority(n, prio, &with, NULL);
        hearth_node_decref(n);
        n = with;
    }
    hearth_node_decref(prio);
    if (rc) {
        hearth_node_decref(n);
        return rc;
    }
    *out = n;
    return 0;
}

int hearth__node_decode(const void *data, size_t len, hearth_node_t **out) {
    reader r = {data, (const unsigned char *)data + len};
    hearth_node_t *n;
    int rc = decode(&r, 0, &n);
    if (!rc && r.p != r.end) {
        hearth_node_decref(n);
        rc = HEARTH_EVALUE; /* trailing bytes */
    }
    if (!rc)
        *out = n;
    return rc;
}
