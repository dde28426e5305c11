/*
 * budget.h - how much request data the server holds for its clients
 * (internal): request bodies and WebSocket messages being assembled count
 * against one server-wide budget, and each peer (remote address) may hold
 * at most its share, so that no one client, nor a few, can grow the
 * server's memory without bound. Loop thread only.
 */
#ifndef HEARTH_SERVER_BUDGET_H
#define HEARTH_SERVER_BUDGET_H

#include "common/internal.h"

#include <sys/socket.h>

typedef struct hearth__budget hearth__budget;
typedef struct hearth__peer hearth__peer;

/* A budget of total bytes, of which one peer may hold peer_share: 0 and
 * *out, or HEARTH_ENOMEM. */
int hearth__budget_create(size_t total, size_t peer_share,
                          hearth__budget **out);
/* Every peer must have been released. */
void hearth__budget_free(hearth__budget *b);

/* The peer at addr's address (the port is not part of it), shared by its
 * connections: each holds a reference. NULL without memory. */
hearth__peer *hearth__budget_peer(hearth__budget *b,
                                  const struct sockaddr_storage *addr);
void hearth__budget_peer_release(hearth__budget *b, hearth__peer *p);
/* How many connections hold p now. */
size_t hearth__budget_peer_connections(const hearth__peer *p);

/* Counts n more bytes held for p; false (and nothing counted) when that
 * would pass the budget or p's share. */
bool hearth__budget_take(hearth__budget *b, hearth__peer *p, size_t n);
/* Gives back n bytes that hearth__budget_take counted for p. */
void hearth__budget_give(hearth__budget *b, hearth__peer *p, size_t n);

#endif
