/* hash.c - the node hash: base64(SHA-1(canonical text)), as the service
 * computes it for compare-and-set and listen hashes. Object hashes are
 * cached in the node the first time they are asked for. */
#include "tree/node.h"

#include "os/os.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_double(hearth__buf *b, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    hearth__buf_printf(b, "%016llx", (unsigned long long)bits);
}

/* "number:<hex>" / "string:<s>" / "boolean:<b>". */
static void add_leaf_text(hearth__buf *b, const hearth_node_t *n) {
    switch (n->type) {
    case HEARTH_TYPE_NUMBER:
        hearth__buf_adds(b, "number:");
        add_double(b, n->u.number);
        break;
    case HEARTH_TYPE_STRING:
        hearth__buf_adds(b, "string:");
        hearth__buf_add(b, hearth__node_str(n), n->u.len);
        break;
    case HEARTH_TYPE_BOOLEAN:
        hearth__buf_adds(b, n->u.boolean ? "boolean:true" : "boolean:false");
        break;
    case HEARTH_TYPE_SERVER_VALUE:
        /* Unresolved placeholders never reach the service's hash; give them
         * a stable text of their own. */
        hearth__buf_adds(b, n->sv == HEARTH__SV_TIMESTAMP
                                ? "object:timestamp"
                                : "object:increment:");
        if (n->sv != HEARTH__SV_TIMESTAMP)
            add_double(b, n->u.number);
        break;
    default:
        break;
    }
}

static void add_priority_prefix(hearth__buf *b, const hearth_node_t *n) {
    if (!n->priority)
        return;
    hearth__buf_adds(b, "priority:");
    add_leaf_text(b, n->priority);
    hearth__buf_addc(b, ':');
}

static int digest(const hearth__buf *text, char out[HEARTH_HASH_SIZE]) {
    unsigned char md[20];
    if (hearth__os_sha1(text->data, text->len, md))
        return HEARTH_ENOMEM;
    hearth__base64(md, sizeof md, out);
    return 0;
}

static int compare_priority_order(const void *a, const void *b) {
    const hearth__entry *ea = a, *eb = b;
    int c = hearth__node_value_compare(hearth__prio(ea->node),
                                       hearth__prio(eb->node));
    if (c)
        return c;
    hearth__name na = hearth__key_name(ea->key), nb = hearth__key_name(eb->key);
    return hearth__name_compare(&na, &nb);
}

static int node_hash(const hearth_node_t *n, char out[HEARTH_HASH_SIZE]);

static int add_child(hearth__buf *b, const hearth__entry *e) {
    char child[HEARTH_HASH_SIZE];
    int rc = node_hash(e->node, child);
    if (rc || !child[0])
        return rc;
    hearth__buf_addc(b, ':');
    hearth__buf_add(b, e->key->s, e->key->len);
    hearth__buf_addc(b, ':');
    hearth__buf_adds(b, child);
    return 0;
}

static int object_hash(const hearth_node_t *n, char out[HEARTH_HASH_SIZE]) {
    hearth__buf b;
    hearth__buf_init(&b);
    add_priority_prefix(&b, n);
    int rc = 0;
    size_t count = hearth__bt_count(n->u.obj.tree);
    hearth__bt_iter it;
    hearth__bt_iter_init(&it, n->u.obj.tree, 0);
    if (n->u.obj.prio_children == 0) {
        /* No child has a priority: priority order is key order. */
        for (const hearth__entry *e; !rc && (e = hearth__bt_iter_next(&it));)
            rc = add_child(&b, e);
    } else {
        hearth__entry *sorted = hearth__malloc(count * sizeof *sorted);
        if (!sorted) {
            rc = HEARTH_ENOMEM;
        } else {
            for (size_t i = 0; i < count; i++)
                sorted[i] = *hearth__bt_iter_next(&it);
            qsort(sorted, count, sizeof *sorted, compare_priority_order);
            for (size_t i = 0; !rc && i < count; i++)
                rc = add_child(&b, &sorted[i]);
            hearth__free(sorted);
        }
    }
    if (!rc && b.failed)
        rc = HEARTH_ENOMEM;
    if (!rc) {
        if (b.len == 0)
            out[0] = '\0';
        else
            rc = digest(&b, out);
    }
    hearth__buf_free(&b);
    return rc;
}

static int node_hash(const hearth_node_t *n, char out[HEARTH_HASH_SIZE]) {
    if (n->type == HEARTH_TYPE_NULL) {
        out[0] = '\0';
        return 0;
    }
    if (n->type == HEARTH_TYPE_OBJECT) {
        hearth_node_t *obj = (hearth_node_t *)n;
        char *cached = atomic_load(&obj->u.obj.hash);
        if (cached) {
            memcpy(out, cached, HEARTH_HASH_SIZE);
            return 0;
        }
        int rc = object_hash(n, out);
        if (rc)
            return rc;
        char *copy = hearth__malloc(HEARTH_HASH_SIZE);
        if (copy) { /* caching is an optimisation: no memory, no cache */
            memcpy(copy, out, HEARTH_HASH_SIZE);
            char *expected = NULL;
            if (!atomic_compare_exchange_strong(&obj->u.obj.hash, &expected,
                                                copy))
                hearth__free(copy);
        }
        return 0;
    }
    hearth__buf b;
    hearth__buf_init(&b);
    add_priority_prefix(&b, n);
    add_leaf_text(&b, n);
    int rc = b.failed ? HEARTH_ENOMEM : digest(&b, out);
    hearth__buf_free(&b);
    return rc;
}

int hearth_node_hash(const hearth_node_t *node, char out[HEARTH_HASH_SIZE]) {
    if (!node || !out)
        return HEARTH_EINVAL;
    return node_hash(node, out);
}

void hearth__thread_prepare(void) {
    /* OpenSSL registers its exit cleanup when it first initializes. Done
     * here, before the program can register a handler that stops what
     * Hearth started (atexit runs handlers last-registered first), the
     * cleanup runs after that handler, so the ending thread's
     * OPENSSL_thread_stop still frees its state; left to the thread's
     * first hash, it could come first and the state would leak. (The
     * options must be ones not yet done: 0 would return at once.) */
    hearth__os_crypto_init();
}

void hearth__thread_cleanup(void) {
    /* Hashing leaves per-thread state in OpenSSL; threads Hearth starts
     * release it before they end. */
    hearth__os_crypto_thread_stop();
}
