/*
 * ticket.h - stream tickets: short-lived, single-use stand-ins for the
 * admin's credential on one event stream. The console's EventSource
 * cannot send an Authorization header, and a credential in a URL is
 * written to every reverse proxy's access log; a ticket in the URL is
 * worth nothing once used or 30 s old, and only opens the stream of the
 * namespace and path it was minted for (rest_ticket.c mints them for the
 * admin, POST /.settings/stream-ticket). The table is fixed in size: no
 * allocation, and minting past it forgets the ticket closest to expiry.
 * Loop thread only.
 */
#ifndef HEARTH_SERVER_TICKET_H
#define HEARTH_SERVER_TICKET_H

#include <stdbool.h>
#include <stdint.h>

#define HEARTH__TICKETS 32
#define HEARTH__TICKET_TTL_MS 30000
#define HEARTH__TICKET_BYTES 16
/* A ticket as text: hex, NUL-terminated. */
#define HEARTH__TICKET_TEXT (2 * HEARTH__TICKET_BYTES + 1)

typedef struct hearth__ticket {
    unsigned char secret[HEARTH__TICKET_BYTES];
    unsigned char bound[32]; /* SHA-256 of namespace, NUL, path */
    uint64_t expires_ms;     /* wall clock; 0: a free slot */
} hearth__ticket;

typedef struct hearth__tickets {
    hearth__ticket slot[HEARTH__TICKETS];
} hearth__tickets;

/* A new ticket for the stream of path in namespace ns, valid until
 * now_ms + HEARTH__TICKET_TTL_MS, written to out. 0, or HEARTH_EIO when
 * no randomness could be had (nothing is minted). */
int hearth__ticket_mint(hearth__tickets *t, const char *ns, const char *path,
                        uint64_t now_ms, char out[HEARTH__TICKET_TEXT]);

/* Whether text is a live ticket minted for ns and path; a ticket that
 * matches text is spent whatever the answer (single use: a replay, a
 * late use or a use elsewhere all burn it). */
bool hearth__ticket_redeem(hearth__tickets *t, const char *text,
                           const char *ns, const char *path, uint64_t now_ms);

#endif
