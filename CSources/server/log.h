/*
 * log.h - the server's access and event logs (log_format), to the log
 * function (hearth_set_log, HEARTH_LOG_ACCESS): one
 * line per operation or event, written in one call so that lines of
 * different threads never interleave; text (time, door, type, namespace,
 * path, status, bytes in and out, milliseconds) or one JSON object a line.
 */
#ifndef HEARTH_SERVER_LOG_H
#define HEARTH_SERVER_LOG_H

#include "server/observe.h"

/* An operation's access line (logs on). */
void hearth__log_op(hearth__server *srv, const hearth__op *op);
/* An event of the server's life (start, stop, tls_reload, rules_reload,
 * rules_not_reloaded) with a detail (may be NULL); nothing with logs off.
 * Any thread. */
void hearth__log_event(hearth__server *srv, const char *what,
                       const char *detail);
/* A denial traced (inspect.c): with JSON logs, one line
 * {"time", "log": "denial", "ns", "denial": record} (record: a JSON
 * object's text); nothing otherwise. */
void hearth__log_denial(hearth__server *srv, const char *ns,
                        const char *record);

#endif
