/* handshake_rate.c - a token bucket per remote address, in a fixed table
 * (handshake_rate.h says why). */
#include "server/handshake_rate.h"

#include "common/internal.h"

#include <string.h>

#define SLOTS 4096 /* a power of two */
#define PROBES 8   /* slots looked at per address */

typedef struct slot {
    unsigned char addr[16];
    uint8_t len;      /* 0: free */
    double tokens;    /* handshakes it may start now */
    uint64_t seen_ms; /* when tokens was last brought up to date */
} slot;

struct hearth__handshake_rate {
    slot slots[SLOTS];
};

int hearth__handshake_rate_create(hearth__handshake_rate **out) {
    hearth__handshake_rate *r = hearth__calloc(1, sizeof *r);
    if (!r)
        return HEARTH_ENOMEM;
    *out = r;
    return 0;
}

void hearth__handshake_rate_free(hearth__handshake_rate *r) { hearth__free(r); }

/* The slot of addr: its own, else a free one, else the least recently
 * seen of its probe run (that address starts again with a full burst,
 * which costs at most one burst per eviction). */
static slot *slot_of(hearth__handshake_rate *r, const unsigned char *addr,
                     size_t len, bool *fresh) {
    size_t at = (size_t)hearth__fnv1a(HEARTH__FNV_SEED, addr, len);
    slot *oldest = NULL;
    for (size_t i = 0; i < PROBES; i++) {
        slot *s = &r->slots[(at + i) & (SLOTS - 1)];
        if (s->len == len && memcmp(s->addr, addr, len) == 0) {
            *fresh = false;
            return s;
        }
        if (!s->len) {
            oldest = s;
            break;
        }
        if (!oldest || s->seen_ms < oldest->seen_ms)
            oldest = s;
    }
    *fresh = true;
    return oldest;
}

bool hearth__handshake_allowed(hearth__handshake_rate *r,
                               const unsigned char *addr, size_t len,
                               uint64_t now_ms, unsigned per_s,
                               unsigned burst) {
    if (len > 16)
        len = 16;
    bool fresh;
    slot *s = slot_of(r, addr, len, &fresh);
    if (fresh) {
        memcpy(s->addr, addr, len);
        s->len = (uint8_t)len;
        s->tokens = burst;
    } else if (now_ms > s->seen_ms) {
        s->tokens += (double)(now_ms - s->seen_ms) * per_s / 1000.0;
        if (s->tokens > burst)
            s->tokens = burst;
    }
    s->seen_ms = now_ms;
    if (s->tokens < 1)
        return false;
    s->tokens -= 1;
    return true;
}
