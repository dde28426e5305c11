/* budget.c - the server-wide budget of held request data and each peer's
 * share of it (see budget.h): peers in a map by address. */
#include "server/budget.h"

#include "common/map.h"

#include <netinet/in.h>
#include <string.h>

struct hearth__peer {
    unsigned char addr[16]; /* its key in the map */
    size_t addr_len;
    size_t refs;
    size_t held;
};

struct hearth__budget {
    size_t total, used, peer_share;
    hearth__map peers; /* address bytes -> the peer */
};

int hearth__budget_create(size_t total, size_t peer_share,
                          hearth__budget **out) {
    hearth__budget *b = hearth__calloc(1, sizeof *b);
    if (!b)
        return HEARTH_ENOMEM;
    b->total = total;
    b->peer_share = peer_share;
    *out = b;
    return 0;
}

void hearth__budget_free(hearth__budget *b) {
    if (b)
        hearth__map_free(&b->peers);
    hearth__free(b);
}

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

hearth__peer *hearth__budget_peer(hearth__budget *b,
                                  const struct sockaddr_storage *addr) {
    unsigned char key[16];
    size_t len = address_of(addr, key);
    hearth__peer *p = hearth__map_get(&b->peers, key, len);
    if (p) {
        p->refs++;
        return p;
    }
    p = hearth__calloc(1, sizeof *p);
    if (!p)
        return NULL;
    memcpy(p->addr, key, len);
    p->addr_len = len;
    p->refs = 1;
    if (hearth__map_put(&b->peers, p->addr, len, p)) {
        hearth__free(p);
        return NULL;
    }
    return p;
}

void hearth__budget_peer_release(hearth__budget *b, hearth__peer *p) {
    if (!p || --p->refs > 0)
        return;
    hearth__map_remove(&b->peers, p->addr, p->addr_len);
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
