/* index.c - child-value indexes as persistent B+trees of encoded keys.
 *
 * Each entry's key is  RANK VALUE \0 KEYCODE  and its node the child:
 *   RANK     one letter per type in query order: a null, b false, c true,
 *            d number, e string, f object (all objects tie);
 *   VALUE    numbers: 16 hex digits of the double's bits made to sort as
 *            numbers (negatives inverted, positives with the sign bit set,
 *            -0 as 0); strings: their bytes with \0 -> \1\1 and \1 -> \1\2,
 *            so the \0 that ends them sorts before any longer string;
 *   KEYCODE  integer-like keys: 'A', ten digits of the value offset by
 *            2^31, one length digit, the key; other keys: 'B', the key.
 * The tree's own order (UTF-16 code units after integer-like names; none of
 * these start with a digit) is then exactly (index value, key) order. */
#include "query/index.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hearth__index {
    hearth_query_t *q;      /* the child path (bounds and limit unused) */
    hearth_node_t *source;  /* the data the entries describe */
    hearth__bt *tree;
};

/* ---- encoding ---- */

static void encode_value(hearth__buf *b, const hearth_node_t *v) {
    switch (v->type) {
    case HEARTH_TYPE_NULL:
        hearth__buf_addc(b, 'a');
        break;
    case HEARTH_TYPE_BOOLEAN:
        hearth__buf_addc(b, v->u.boolean ? 'c' : 'b');
        break;
    case HEARTH_TYPE_NUMBER: {
        double d = v->u.number == 0 ? 0 : v->u.number; /* -0 is 0 */
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        bits = (bits >> 63) ? ~bits : bits | (1ULL << 63);
        hearth__buf_printf(b, "d%016llx", (unsigned long long)bits);
        break;
    }
    case HEARTH_TYPE_STRING: {
        hearth__buf_addc(b, 'e');
        const char *s = hearth__node_str(v);
        for (size_t i = 0; i < v->u.len; i++) {
            if (s[i] == '\0' || s[i] == '\1') {
                hearth__buf_addc(b, '\1');
                hearth__buf_addc(b, (char)(s[i] + 1));
            } else {
                hearth__buf_addc(b, s[i]);
            }
        }
        break;
    }
    default:
        hearth__buf_addc(b, 'f');
    }
    hearth__buf_addc(b, '\0');
}

static void encode_key(hearth__buf *b, const char *key, size_t len) {
    hearth__name n;
    hearth__name_init(&n, key, len);
    if (n.is_int)
        hearth__buf_printf(b, "A%010lld%c", (long long)n.ival + 2147483648LL,
                           (char)('0' + len));
    else
        hearth__buf_addc(b, 'B');
    hearth__buf_add(b, key, len);
}

/* The original key inside an encoded one. */
static const char *decoded_key(const hearth__key *k, size_t *len) {
    const char *end = memchr(k->s, '\0', k->len);
    const char *code = end + 1;
    size_t skip = code[0] == 'A' ? 12 : 1;
    *len = k->len - (size_t)(code + skip - k->s);
    return code + skip;
}

static int encode_entry(const hearth__index *ix, const hearth__key *key,
                        const hearth_node_t *child, hearth__buf *b) {
    b->len = 0;
    encode_value(b, hearth__query_index_value(ix->q, child));
    encode_key(b, key->s, key->len);
    return b->failed ? HEARTH_ENOMEM : 0;
}

static hearth__name buf_name(const hearth__buf *b) {
    hearth__name n;
    hearth__name_init(&n, b->data, b->len);
    return n;
}

/* ---- building and syncing ---- */

int hearth__index_create(const hearth_query_t *q, hearth__index **out) {
    hearth__index *ix = hearth__calloc(1, sizeof *ix);
    if (!ix || !(ix->q = hearth_query_copy(q))) {
        hearth__free(ix);
        return HEARTH_ENOMEM;
    }
    *out = ix;
    return 0;
}

void hearth__index_free(hearth__index *ix) {
    if (!ix)
        return;
    hearth_query_free(ix->q);
    hearth_node_decref(ix->source);
    hearth__bt_decref(ix->tree);
    hearth__free(ix);
}

size_t hearth__index_size(const hearth__index *ix) {
    return hearth__bt_count(ix->tree);
}

static int put(hearth__index *ix, hearth__buf *b, const hearth__key *key,
               const hearth_node_t *child) {
    int rc = encode_entry(ix, key, child, b);
    if (rc)
        return rc;
    hearth__name name = buf_name(b);
    hearth_node_t *ref = hearth_node_incref(child);
    rc = hearth__bt_put(&ix->tree, &name, NULL, ref, NULL);
    if (rc)
        hearth_node_decref(ref);
    return rc;
}

static int entry_cmp(const void *a, const void *b) {
    hearth__name na = hearth__key_name(((const hearth__entry *)a)->key);
    hearth__name nb = hearth__key_name(((const hearth__entry *)b)->key);
    return hearth__name_compare(&na, &nb);
}

/* All entries at once: encode, sort, bulk-build. */
static int rebuild(hearth__index *ix, const hearth_node_t *node) {
    hearth__bt_decref(ix->tree);
    ix->tree = NULL;
    size_t n = hearth_node_child_count(node);
    if (!n)
        return 0;
    hearth__entry *entries = hearth__calloc(n, sizeof *entries);
    hearth__buf b;
    hearth__buf_init(&b);
    int rc = entries ? 0 : HEARTH_ENOMEM;
    size_t made = 0;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, node->u.obj.tree, 0);
    for (const hearth__entry *e; !rc && (e = hearth__bt_iter_next(&it));) {
        rc = encode_entry(ix, e->key, e->node, &b);
        if (!rc) {
            hearth__name name = buf_name(&b);
            hearth__key *k = hearth__key_create(&name);
            if (!k)
                rc = HEARTH_ENOMEM;
            else
                entries[made++] = (hearth__entry){k, hearth_node_incref(e->node), 0};
        }
    }
    hearth__buf_free(&b);
    if (!rc) {
        if (made > 1)
            qsort(entries, made, sizeof *entries, entry_cmp);
        rc = hearth__bt_build(entries, made, &ix->tree);
    }
    if (rc)
        for (size_t i = 0; i < made; i++) {
            hearth__key_decref(entries[i].key);
            hearth_node_decref(entries[i].node);
        }
    hearth__free(entries);
    return rc;
}

typedef struct sync_ctx {
    hearth__index *ix;
    hearth__buf b;
    int rc;
} sync_ctx;

static int sync_child(const hearth__key *key, const hearth_node_t *old,
                      const hearth_node_t *now, void *ctx) {
    sync_ctx *s = ctx;
    if (old) {
        s->rc = encode_entry(s->ix, key, old, &s->b);
        if (!s->rc) {
            hearth__name name = buf_name(&s->b);
            s->rc = hearth__bt_remove(&s->ix->tree, &name);
        }
    }
    if (!s->rc && now)
        s->rc = put(s->ix, &s->b, key, now);
    return s->rc;
}

int hearth__index_sync(hearth__index *ix, const hearth_node_t *node) {
    if (ix->source == node)
        return 0;
    int rc;
    if (ix->source && ix->source->type == HEARTH_TYPE_OBJECT &&
        node->type == HEARTH_TYPE_OBJECT) {
        /* Only what the two versions do not share. */
        sync_ctx s = {ix, {0}, 0};
        hearth__buf_init(&s.b);
        hearth__bt_diff(ix->source->u.obj.tree, node->u.obj.tree, sync_child,
                        &s);
        hearth__buf_free(&s.b);
        rc = s.rc;
        if (rc) /* half-applied: start again from scratch */
            rc = rebuild(ix, node);
    } else {
        rc = rebuild(ix, node);
    }
    hearth_node_decref(ix->source);
    ix->source = NULL;
    if (rc) {
        hearth__bt_decref(ix->tree);
        ix->tree = NULL;
        return rc;
    }
    ix->source = hearth_node_incref(node);
    return 0;
}

/* ---- queries ---- */

/* The rank of a bound: the first entry after it (exclusive start, or
 * inclusive end) or at it. */
static int bound_rank(const hearth__index *ix, const hearth__bound *bd,
                      bool start, size_t *out) {
    hearth__buf b;
    hearth__buf_init(&b);
    encode_value(&b, bd->value);
    if (bd->name)
        encode_key(&b, bd->name->s, bd->name->len);
    else if (bd->sentinel == HEARTH__NAME_MAX)
        hearth__buf_addc(&b, '\x7f'); /* after every key code */
    if (b.failed) {
        hearth__buf_free(&b);
        return HEARTH_ENOMEM;
    }
    hearth__name name = buf_name(&b);
    bool found;
    size_t r = hearth__bt_rank(ix->tree, &name, &found);
    hearth__buf_free(&b);
    bool past = start ? !bd->inclusive : bd->inclusive;
    *out = found && past ? r + 1 : r;
    return 0;
}

int hearth__index_view(const hearth__index *ix, const hearth_query_t *q,
                       const hearth_node_t *node, hearth_node_t **out) {
    if (hearth__query_loads_all(q) || node->type != HEARTH_TYPE_OBJECT)
        return hearth__query_view_node(q, node, out);
    size_t from = 0, to = hearth__bt_count(ix->tree);
    int rc = 0;
    if (q->start.set)
        rc = bound_rank(ix, &q->start, true, &from);
    if (!rc && q->end.set)
        rc = bound_rank(ix, &q->end, false, &to);
    if (rc)
        return rc;
    if (to < from)
        to = from;
    if (q->limit && to - from > q->limit) {
        if (q->limit_from == 'l')
            to = from + q->limit;
        else
            from = to - q->limit;
    }
    /* The window's children, back in key order for the result node. */
    size_t n = to - from;
    hearth__entry *entries = n ? hearth__malloc(n * sizeof *entries) : NULL;
    if (n && !entries)
        return HEARTH_ENOMEM;
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, ix->tree, from);
    size_t made = 0;
    for (; made < n; made++) {
        const hearth__entry *e = hearth__bt_iter_next(&it);
        size_t klen;
        const char *k = decoded_key(e->key, &klen);
        hearth__name name;
        hearth__name_init(&name, k, klen);
        hearth__key *key = hearth__key_create(&name);
        if (!key)
            break;
        entries[made] = (hearth__entry){key, hearth_node_incref(e->node), 0};
    }
    if (made < n) {
        for (size_t i = 0; i < made; i++) {
            hearth__key_decref(entries[i].key);
            hearth_node_decref(entries[i].node);
        }
        hearth__free(entries);
        return HEARTH_ENOMEM;
    }
    return hearth__node_from_entries(entries, made, out);
}
