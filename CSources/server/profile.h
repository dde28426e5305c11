/*
 * profile.h - GET /.profile (admin): a stream of every operation the
 * server handles, one JSON object a line, for `hearth profile` (as the
 * service's database:profile). While nobody profiles, the server pays one
 * branch per operation (srv->profilers is empty).
 */
#ifndef HEARTH_SERVER_PROFILE_H
#define HEARTH_SERVER_PROFILE_H

#include "server/observe.h"

typedef struct hearth__profiler {
    hearth__server *srv;
    hearth__http_conn *conn;
    hearth__list link; /* in the server's profilers */
} hearth__profiler;

/* Answers the request on conn with the operations stream (until the
 * client goes or the server stops). */
void hearth__profile_start(hearth__server *srv, hearth__http_conn *conn);
/* Sends op to every profiler (none: never called). */
void hearth__profile_emit(hearth__server *srv, const hearth__op *op);

#endif
