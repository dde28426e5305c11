/*
 * ondisconnect.h - the onDisconnect writes a server has accepted from this
 * client (internal), kept so that the client can show them itself when
 * its connection drops, as the server runs them then.
 *
 * The server cancels an operation when a cancel names its path or a path
 * above it; the record does the same, so what the client shows is what
 * the server will write. Values are kept as sent (server values
 * unresolved). Loop thread only.
 */
#ifndef HEARTH_CLIENT_ONDISCONNECT_H
#define HEARTH_CLIENT_ONDISCONNECT_H

#include "common/internal.h"

#include <jansson.h>

/* One location an accepted operation writes. */
typedef struct hearth__od_entry {
    char *op_path;         /* the operation's path (what a cancel matches) */
    char *path;            /* the location written */
    hearth_node_t *value;
} hearth__od_entry;

typedef struct hearth__od_list {
    hearth__od_entry *e;
    size_t n, cap;
} hearth__od_list;

/* Records an accepted operation: action "o" (body {p, d}), "om" (body
 * {p, d: {relative path: value}}) or "oc" (body {p}: forgets the
 * operations at or below p). Failure-atomic: on error nothing changes. */
int hearth__od_accepted(hearth__od_list *l, const char *action,
                        const json_t *body);
/* Forgets everything (after the list was applied, and at close). */
void hearth__od_clear(hearth__od_list *l);

#endif
