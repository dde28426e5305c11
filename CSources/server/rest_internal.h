/* rest_internal.h - what the REST API's files share (internal to server/):
 * one parsed request, its parameters, and the answers every method gives. */
#ifndef HEARTH_SERVER_REST_INTERNAL_H
#define HEARTH_SERVER_REST_INTERNAL_H

#include "server/access.h"
#include "server/server.h"

#include <http_parser.h>

#define JSON_TYPE "application/json; charset=utf-8"
#define MSG_BAD_DATA "Invalid data; couldn't parse JSON object, array, or value."
#define MSG_BAD_PATH "Invalid path: Invalid token in path"

typedef struct param {
    char *name;
    char *value;
} param;

/* One parsed request. */
typedef struct rest {
    hearth__server *srv;
    hearth__http_conn *conn;
    const hearth__http_request *req;
    int method;
    char *path; /* decoded, without ".json"; "/" at the root */
    param *params;
    size_t nparams;
    hearth__namespace *ns;
    unsigned json_flags; /* HEARTH_JSON_PRETTY / _EXPORT */
    bool silent;
    bool quiet; /* triggers=off: the admin's write fires no triggers */
    bool want_etag;
    const char *callback; /* JSONP */
    const char *download;
    hearth__principal who; /* what the rules see of the caller */
} rest;

/* ---- parameters and queries (rest_params.c) ---- */

/* Percent-decodes s[0..len) once ('+' is a space when plus_space). NULL on
 * a malformed escape or an embedded NUL. */
char *hearth__rest_url_decode(const char *s, size_t len, bool plus_space);
const char *hearth__rest_param_get(const rest *r, const char *name);
int hearth__rest_parse_params(rest *r, const char *q);
void hearth__rest_free(rest *r);
/* Builds the query of the request's parameters into *out (NULL: none). */
int hearth__rest_build_query(const rest *r, hearth_query_t **out,
                             hearth_error_t *err);

/* ---- replies and ETags (rest_reply.c) ---- */

void hearth__rest_reply_error(hearth__http_conn *conn, int status,
                              const char *message);
void hearth__rest_reply_failure(hearth__http_conn *conn, int code,
                                const hearth_error_t *err);
/* Answers status with a JSON value (taken over; NULL: out of memory, a
 * 503), its keys in their order. */
void hearth__rest_reply_json(hearth__http_conn *conn, int status, json_t *value);
/* JSONP (callback=FN) wraps a body in "FN(...);" after an empty comment. */
void hearth__rest_jsonp_open(const rest *r, hearth__buf *b);
void hearth__rest_jsonp_close(const rest *r, hearth__buf *b);
/* Serializes a value as the request's flags ask (pretty, export, JSONP). */
char *hearth__rest_render(const rest *r, const hearth_node_t *value,
                          size_t *len);
void hearth__rest_reply_value(const rest *r, int status,
                              const hearth_node_t *value, const char *etag);
const hearth_node_t *hearth__rest_value_at(const rest *r);
/* The ETag of the data at the request's path: its hash, or null_etag. */
void hearth__rest_etag_of(const hearth_node_t *n,
                          char out[HEARTH_HASH_SIZE + 16]);
/* Whether the caller may read the data at the request's path. */
bool hearth__rest_may_read_here(const rest *r);
/* Applies if-match: true when the request may go on (else answered). */
bool hearth__rest_check_if_match(const rest *r);
void hearth__rest_deny(const rest *r);

/* ---- the methods (rest_read.c, rest_write.c, rest_rules.c) ---- */

void hearth__rest_get(rest *r);
/* Whether a GET asks for a stream of server-sent events (Accept). */
bool hearth__rest_wants_stream(const hearth__http_request *req);
/* PUT, POST and PATCH; r is left empty when a worker took the request. */
void hearth__rest_write(rest *r);
void hearth__rest_delete(rest *r);
void hearth__rest_rules(rest *r);
/* GET /.cluster/status.json (admin): the cluster as this node sees it. */
void hearth__rest_cluster_status(rest *r);

/* ---- the admin's other settings ---- */

/* Whether the request is the admin's and uses `method` (else answered
 * 401 or 405, naming `what`, such as "the playground"). */
bool hearth__rest_admin_asks(rest *r, int method, const char *what);
/* POST /.settings/playground: a dry run of the rules (rest_playground.c). */
void hearth__rest_playground(rest *r);
/* GET /.settings/namespaces: the namespaces (rest_namespaces.c). */
void hearth__rest_namespaces(rest *r);
/* GET /.settings/usage: the counters of usage.h (rest_usage.c). */
void hearth__rest_usage(rest *r);
/* POST /.settings/stream-ticket: a ticket for one stream (rest_ticket.c). */
void hearth__rest_stream_ticket(rest *r);
/* The caller of a stream opened with ?ticket= (into r->who, the admin);
 * false with *why when the ticket does not open this request. Spends it. */
bool hearth__rest_redeem_ticket(rest *r, const char *ticket, char *why,
                                size_t why_size);
/* /.metrics, /.profile, /.backup and /.inspect/ of namespace ns_name
 * (rest_operator.c):
 * true when r was one (answered). */
bool hearth__rest_operator(rest *r, const char *ns_name);
/* /.settings/triggers and below (triggers.c); sub: what follows
 * "triggers" in the path. */
void hearth__rest_triggers(rest *r, const char *sub);
/* GET NAME/dead (at most max) or POST NAME/retry (retry) where the dead
 * letters are the triggers' remote's, a cluster's (rest_dead.c). */
void hearth__rest_dead_remote(rest *r, const char *name, size_t max,
                              bool retry);
/* GET /.backup and GET /.log (rest_backup.c). */
void hearth__rest_backup(rest *r, const char *ns_name);
void hearth__rest_log(rest *r, const char *ns_name);
/* GET /.inspect/coverage.json (source false) or /.inspect/rules.txt (the
 * text its positions refer to) of namespace ns_name (rest_coverage.c). */
void hearth__rest_coverage(rest *r, const char *ns_name, bool source);
/* GET /.inspect/denials.json (the denials kept) or PUT {"tracing": bool}
 * (rest_coverage.c). */
void hearth__rest_denials(rest *r, const char *ns_name);

#endif
