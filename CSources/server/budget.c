/* budget.c - the server-wide budget of held request data and each peer's
 * share of it (see budget.h): peers in a small hash table by address. */
#include "server/budget.h"

#include <netinet/in.h>
#include <string.h>

#define BUCKETS 256

struct hearth__peer {
    hearth__peer *next;
    unsigned char addr[16];
    size_t addr_len;
    size_t refs;
    size_t held;
};

struct hearth__budget {
    size_t total, used, peer_share;
    hearth__peer *buckets[BUCKETS];
};

hearth__budget *hearth__budget_create(size_t total, size_t peer_share) {
    hearth__budget *b = hearth__calloc(1, sizeof *b);
    if (b) {
        b->total = total;
        b->peer_share = peer_share;
    }
    return b;
}

void hearth__budget_free(hearth__budget *b) { hearth__free(b); }

/* The address bytes of addr (4 for IPv4, 16 for IPv6). */
static size_t address_of(const struct sockaddr_storage *addr,
                         unsigned char out[16]) {
    if (addr->ss_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
        return 16;
    }
    if (addr->ss_family == AF_INET) {
        memcpy(out, &((const struct sockaddr_in *)addr)->sin_addr, 4);
        return 4;
    }
    return 0; /* unknown: all such peers share one entry */
}

static hearth__peer **bucket_of(hearth__budget *b, const unsigned char *addr,
                                size_t len) {
    return &b->buckets[hearth__fnv1a(HEARTH__FNV_SEED, addr, len) % BUCKETS];
}

hearth__peer *hearth__budget_peer(hearth__budget *b,
                                  const struct sockaddr_storage *addr) {
    unsigned char key[16];
    size_t len = address_of(addr, key);
    hearth__peer **head = bucket_of(b, key, len);
    for (hearth__peer *p = *head; p; p = p->next)
        if (p->addr_len == len && !memcmp(p->addr, key, len)) {
            p->refs++;
            return p;
        }
    hearth__peer *p = hearth__calloc(1, sizeof *p);
    if (!p)
        return NULL;
    memcpy(p->addr, key, len);
    p->addr_len = len;
    p->refs = 1;
    p->next = *head;
    *head = p;
    return p;
}

void hearth__budget_peer_release(hearth__budget *b, hearth__peer *p) {
    if (!p || --p->refs > 0)
        return;
    hearth__peer **at = bucket_of(b, p->addr, p->addr_len);
    while (*at != p)
        at = &(*at)->next;
    *at = p->next;
    b->used -= p->held; /* not reached: connections give back first */
    hearth__free(p);
}

size_t hearth__budget_peer_connections(const hearth__peer *p) {
    return p->refs;
}

bool hearth__budget_take(hearth__budget *b, hearth__peer *p, size_t n) {
    if (n > b->total - b->used || n > b->peer_share - p->held)
        return false;
    b->used += n;
    p->held += n;
    return true;
}

void hearth__budget_give(hearth__budget *b, hearth__peer *p, size_t n) {
    b->used -= n;
    p->held -= n;
}
