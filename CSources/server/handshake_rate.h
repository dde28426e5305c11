/*
 * handshake_rate.h - how many TLS handshakes each remote address may start
 * (internal). A full handshake costs the loop about a millisecond and a
 * half of public-key work, before the peer has proved anything, so one
 * address may start at most HEARTH__HANDSHAKES_PER_S a second after a
 * burst of HEARTH__HANDSHAKE_BURST; past it, its new connections are
 * closed unanswered. Addresses are remembered in a fixed table (the least
 * recently seen of a probe run make room), so the bound costs fixed memory
 * whatever the number of peers. Loop thread only.
 */
#ifndef HEARTH_SERVER_HANDSHAKE_RATE_H
#define HEARTH_SERVER_HANDSHAKE_RATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEARTH__HANDSHAKES_PER_S 20
#define HEARTH__HANDSHAKE_BURST 40

typedef struct hearth__handshake_rate hearth__handshake_rate;

/* 0 and *out, or HEARTH_ENOMEM. */
int hearth__handshake_rate_create(hearth__handshake_rate **out);
void hearth__handshake_rate_free(hearth__handshake_rate *r);

/* Whether the address (len bytes, at most 16) may start a handshake at
 * loop time now_ms, with per_s a second after a burst of burst; if so it
 * is counted. */
bool hearth__handshake_allowed(hearth__handshake_rate *r,
                               const unsigned char *addr, size_t len,
                               uint64_t now_ms, unsigned per_s,
                               unsigned burst);

#endif
