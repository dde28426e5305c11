/* rng.c - a small generator for what needs spread, not secrecy (reconnect
 * jitter): splitmix64, seeded from the system's generator. Not rand():
 * that one is unseeded unless the host app seeded it (every process would
 * draw the same delays), and each draw would take from the app's own
 * sequence. */
#include "common/internal.h"
#include "os/os.h"

#include <stdint.h>

void hearth__rng_seed(hearth__rng *g) {
    if (hearth__os_random(&g->state, sizeof g->state))
        /* No entropy: where this state lives differs between processes
         * (address space layout), which is spread enough for jitter. */
        g->state = (uint64_t)(uintptr_t)g ^ 0x9e3779b97f4a7c15ULL;
}

uint64_t hearth__rng_next(hearth__rng *g) {
    uint64_t z = (g->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t hearth__rng_below(hearth__rng *g, uint64_t n) {
    return n ? hearth__rng_next(g) % n : 0; /* bias below 2^-40 for delays */
}
