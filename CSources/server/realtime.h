/* realtime.h - the realtime protocol (v5) over WebSocket (internal). */
#ifndef HEARTH_SERVER_REALTIME_H
#define HEARTH_SERVER_REALTIME_H

#include "server/server.h"

/* Takes over a `/.ws` request: the WebSocket handshake, then a v5 session
 * on namespace ns (or an error answer when the request is no WebSocket). */
void hearth__realtime_accept(hearth__server *srv, hearth__http_conn *conn,
                             const hearth__http_request *req,
                             hearth__namespace *ns);

#endif
