/* rest.c - the REST API's entry: reads the target, the namespace, the
 * parameters and the caller, refuses hopeless writes before their body,
 * and dispatches to the methods (rest_read.c, rest_write.c), the admin's
 * settings (rest_rules.c, rest_playground.c, rest_namespaces.c,
 * rest_usage.c) and the console's files (console.c); errors worded as the service words them. Runs
 * on the server's loop, where database calls apply at once; durable
 * writes are answered after their group commit. */
#include "server/rest_internal.h"

#include "server/console.h"
#include "server/inspect.h"
#include "server/realtime.h"
#include "server/usage.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The answer while this node rebuilds a namespace (hearth__db_unavailable):
 * another node, or this one in a moment, serves it. */
#define UNAVAILABLE "Unavailable: this node is rebuilding the namespace's " \
                    "data from its peers; try again or use another node"

/* ---- dispatch ---- */

/* The namespace: ns=, else a domain name's first label (lower case, as
 * host names compare), else default. */
static const char *namespace_name(const rest *r, char *buf, size_t size) {
    const char *ns = hearth__rest_param_get(r, "ns");
    if (ns)
        return ns;
    const char *host = hearth__http_get_header(r->req, "host");
    if (host && host[0] != '[') {
        size_t len = strcspn(host, ":");
        bool has_letter = false, has_dot = false;
        for (size_t i = 0; i < len; i++) {
            has_dot |= host[i] == '.';
            has_letter |= (host[i] | 32) >= 'a' && (host[i] | 32) <= 'z';
        }
        size_t label = strcspn(host, ".:");
        if (has_dot && has_letter && label < size) {
            for (size_t i = 0; i < label; i++)
                buf[i] = (char)tolower((unsigned char)host[i]);
            buf[label] = '\0';
            return buf;
        }
    }
    return r->srv->default_namespace;
}

static int method_of(const rest *r) {
    int m = r->req->method;
    if (m != HTTP_POST)
        return m;
    const char *o = hearth__http_get_header(r->req, "x-http-method-override");
    if (!o)
        o = hearth__rest_param_get(r, "x-http-method-override");
    if (!o)
        return m;
    if (strcasecmp(o, "PUT") == 0)
        return HTTP_PUT;
    if (strcasecmp(o, "PATCH") == 0)
        return HTTP_PATCH;
    if (strcasecmp(o, "DELETE") == 0)
        return HTTP_DELETE;
    return -1;
}

/* Reads the request's parameters into r; the problem with one (a 400),
 * or NULL. */
static const char *read_params(rest *r) {
    const char *v;
    if ((v = hearth__rest_param_get(r, "print"))) {
        if (strcmp(v, "pretty") == 0)
            r->json_flags |= HEARTH_JSON_PRETTY;
        else if (strcmp(v, "silent") == 0)
            r->silent = true;
        else
            return "print must be 'pretty' or 'silent'";
    }
    if ((v = hearth__rest_param_get(r, "triggers"))) {
        /* Hearth's: an import or a restore that fires no triggers */
        if (strcmp(v, "off") == 0)
            r->quiet = true;
        else if (strcmp(v, "on") != 0)
            return "triggers must be 'on' or 'off'";
    }
    if ((v = hearth__rest_param_get(r, "format"))) {
        /* Data: "export" adds priorities. The rules: "strict" asks for
         * plain JSON (the Admin SDKs read them so); Hearth answers plain
         * JSON either way. */
        bool rules = strcmp(r->path, "/.settings/rules") == 0;
        if (rules && strcmp(v, "strict") != 0)
            return "format must be 'strict'";
        if (!rules && strcmp(v, "export") != 0)
            return "format must be 'export'";
        if (!rules)
            r->json_flags |= HEARTH_JSON_EXPORT;
    }
    if ((v = hearth__rest_param_get(r, "timeout"))) {
        char *end;
        double t = strtod(v, &end);
        double ms = strcmp(end, "ms") == 0    ? t
                    : strcmp(end, "s") == 0   ? t * 1000
                    : strcmp(end, "min") == 0 ? t * 60000
                                              : -1;
        if (end == v || ms < 0 || ms > 15 * 60000)
            return "timeout must be a duration like 3ms, 3s or 3min, at "
                   "most 15min";
    }
    if ((v = hearth__rest_param_get(r, "writeSizeLimit")) && strcmp(v, "tiny") &&
        strcmp(v, "small") && strcmp(v, "medium") && strcmp(v, "large") &&
        strcmp(v, "unlimited")) {
        return "writeSizeLimit must be tiny, small, medium, large or "
               "unlimited";
    }
    if ((v = hearth__rest_param_get(r, "callback"))) {
        for (const char *c = v; *c; c++)
            if (!((*c | 32) >= 'a' && (*c | 32) <= 'z') &&
                !(*c >= '0' && *c <= '9') && *c != '_' && *c != '.' &&
                *c != '$') {
                return "callback must be a JavaScript name";
            }
        r->callback = v;
    }
    if ((v = hearth__rest_param_get(r, "download"))) {
        /* It becomes a header's value: a decoded CR or LF would start
         * headers of the client's choosing. */
        for (const unsigned char *c = (const unsigned char *)v; *c; c++)
            if (*c < 0x20 || *c == 0x7f || *c == '"' || *c == '\\') {
                return "download must be a file name without control "
                       "characters, quotes or backslashes";
            }
        r->download = v;
    }
    /* Accepted now, enforced with the rules engine: it must at least be
     * JSON (an object, or null for unauthenticated). */
    if ((v = hearth__rest_param_get(r, "auth_variable_override"))) {
        json_t *o = json_loads(v, JSON_DECODE_ANY, NULL);
        bool ok = o && (json_is_object(o) || json_is_null(o));
        json_decref(o);
        if (!ok)
            return "auth_variable_override must be a JSON object or null";
    }
    const char *etag = hearth__http_get_header(r->req, "x-firebase-etag");
    r->want_etag = etag && strcmp(etag, "true") == 0;
    return NULL;
}

static bool check_params(rest *r) {
    const char *problem = read_params(r);
    if (problem)
        hearth__rest_reply_error(r->conn, 400, problem);
    return !problem;
}

/* Who is asking, into r->who; false with *why for a token that does not
 * verify. */
static bool who_is_asking(rest *r, char *why, size_t why_size) {
    const char *ticket = hearth__rest_param_get(r, "ticket");
    if (ticket) /* the admin's stream, without the secret in the URL */
        return hearth__rest_redeem_ticket(r, ticket, why, why_size);
    const char *token = hearth__rest_param_get(r, "auth");
    if (!token)
        token = hearth__rest_param_get(r, "access_token");
    return hearth__principal_of(r->srv, r->req, token,
                                hearth__rest_param_get(r, "auth_variable_override"),
                                &r->who, why, why_size);
}

/* Who is asking: 401 for a token that does not verify. */
static bool identify(rest *r) {
    char why[256];
    if (who_is_asking(r, why, sizeof why))
        return true;
    hearth__rest_reply_error(r->conn, 401, why);
    return false;
}

/* Decodes the target into r->path and r->params; false when malformed. */
static bool read_target(rest *r) {
    const char *target = r->req->target;
    const char *query = strchr(target, '?');
    size_t plen = query ? (size_t)(query - target) : strlen(target);
    r->path = hearth__rest_url_decode(target, plen, false);
    return r->path && !hearth__rest_parse_params(r, query ? query + 1 : NULL);
}

/* Drops a REST path's ".json" ("/" at the root); false when it has none. */
static bool strip_json(rest *r) {
    size_t len = strlen(r->path);
    if (len < 5 || strcmp(r->path + len - 5, ".json") != 0)
        return false;
    r->path[len - 5] = '\0';
    if (!r->path[0]) {
        r->path[0] = '/';
        r->path[1] = '\0';
    }
    return true;
}

/* A write the rules refuse whatever its data (a .write on the way that
 * reads no newData and is false, none that could grant): 401 before its
 * body is read. Anything else goes on to be read and checked in full. */
static int refuse_write_early(rest *r, char *why, size_t why_size) {
    r->method = method_of(r);
    if (r->method != HTTP_PUT && r->method != HTTP_POST &&
        r->method != HTTP_PATCH)
        return 0;
    char nsbuf[130];
    hearth_error_t err;
    hearth__path path;
    if (read_params(r) || strcmp(r->path, "/.settings/rules") == 0 ||
        hearth_validate_path(r->path, NULL) ||
        hearth__path_parse(r->path, 0, &path, NULL) ||
        hearth__server_namespace(r->srv, namespace_name(r, nsbuf, sizeof nsbuf),
                                 &r->ns, &err))
        return 0; /* the full handler answers these */
    if (!who_is_asking(r, why, why_size))
        return 401;
    if (r->who.admin || !r->ns->ruleset)
        return 0;
    hearth__access a = {r->who.auth, (double)hearth_now_ms(),
                        hearth__db_root(r->ns->db), NULL};
    /* A push or an update writes below the path. */
    bool below = r->method != HTTP_PUT;
    if (hearth__ruleset_write_early(r->ns->ruleset, &path, below, &a) !=
        HEARTH__WRITE_DENIED)
        return 0;
    /* Traced (when asked) against the data as it is: the .write rules that
     * refused read no newData. */
    const hearth__path *pp = &path;
    hearth__inspect_write_denied(r->srv, r->ns, "rest", r->who.auth, &pp, 1,
                                 a.root, a.root, a.now);
    snprintf(why, why_size, "Permission denied");
    return 401;
}

/* The admin's endpoints under /.settings/ (none is data: keys hold no
 * dots). */
static void settings(rest *r) {
    const char *name = r->path + 11;
    if (!strcmp(name, "rules"))
        hearth__rest_rules(r);
    else if (!strcmp(name, "playground"))
        hearth__rest_playground(r);
    else if (!strcmp(name, "namespaces"))
        hearth__rest_namespaces(r);
    else if (!strcmp(name, "usage"))
        hearth__rest_usage(r);
    else if (!strcmp(name, "stream-ticket"))
        hearth__rest_stream_ticket(r);
    else if (!strncmp(name, "triggers", 8) && (!name[8] || name[8] == '/'))
        hearth__rest_triggers(r, name + 8);
    else
        hearth__rest_reply_error(r->conn, 404, "Not found: the settings are "
                                 "rules, playground, namespaces, usage, "
                                 "stream-ticket and triggers");
}

int hearth__rest_head(const hearth__http_request *req, void *ctx, char *why,
                      size_t why_size) {
    rest r = {.srv = ctx, .req = req};
    int status = read_target(&r) && strip_json(&r)
                     ? refuse_write_early(&r, why, why_size)
                     : 0;
    hearth__rest_free(&r);
    return status;
}

/* The requests answered before any namespace's data: the CORS preflight,
 * the realtime upgrade, the console and the operator's endpoints. True
 * when r was one of them (answered). */
static bool route_special(rest *r) {
    hearth__http_conn *conn = r->conn;
    if (r->method == HTTP_OPTIONS) { /* CORS preflight */
        hearth__http_respond(
            conn, 200, NULL,
            "Access-Control-Allow-Methods: GET, PUT, POST, PATCH, DELETE\r\n"
            "Access-Control-Allow-Headers: Content-Type, Authorization, "
            "X-Firebase-ETag, If-Match, If-None-Match\r\n",
            "", 0);
        return true;
    }
    char nsbuf[130];
    if (strcmp(r->path, "/.ws") == 0) { /* the realtime protocol */
        hearth_error_t err;
        if (hearth__server_namespace(r->srv, namespace_name(r, nsbuf, sizeof nsbuf),
                                     &r->ns, &err))
            hearth__rest_reply_error(conn, 400, err.message);
        else if (hearth__db_unavailable(r->ns->db))
            hearth__rest_reply_error(conn, 503, UNAVAILABLE);
        else {
            hearth__usage_count_request(r->srv, r->ns, conn, r->req,
                                        HEARTH__USAGE_NONE);
            hearth__realtime_accept(r->srv, conn, r->req, r->ns);
        }
        return true;
    }
    /* The operator's endpoints are under "/." (the namespace's name is
     * worked out only for them: not twice for every request). */
    return hearth__console_serve(conn, r->req, r->path) ||
           (strncmp(r->path, "/.", 2) == 0 &&
            hearth__rest_operator(r, namespace_name(r, nsbuf, sizeof nsbuf)));
}

/* src into dst (size bytes), cut when longer: without snprintf, whose
 * format parsing cost more than the copy on every request. */
static void copy_cut(char *dst, size_t size, const char *src) {
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* A namespace's REST request: the namespace opened and the caller
 * identified, then the cluster's status, the settings, or the data. */
static void route_data(rest *r) {
    hearth__http_conn *conn = r->conn;
    if (!strip_json(r)) {
        hearth__rest_reply_error(conn, 404, "Not found: REST paths end in .json");
        return;
    }
    char nsbuf[130];
    hearth_error_t err;
    if (hearth__server_namespace(r->srv, namespace_name(r, nsbuf, sizeof nsbuf),
                                 &r->ns, &err)) {
        hearth__rest_reply_error(conn,
                    err.code == HEARTH_EINVAL    ? 400
                    : err.code == HEARTH_ETOOBIG ? 503
                                                 : 500,
                    err.message);
        return;
    }
    hearth__http_note *note = hearth__http_note_of(conn);
    copy_cut(note->ns, sizeof note->ns, r->ns->name);
    copy_cut(note->path, sizeof note->path, r->path);
    if (!check_params(r) || !identify(r))
        return;
    if (strcmp(r->path, "/.cluster/status") == 0) {
        hearth__rest_cluster_status(r);
        return;
    }
    if (hearth__db_unavailable(r->ns->db)) {
        hearth__rest_reply_error(conn, 503, UNAVAILABLE);
        return;
    }
    if (strncmp(r->path, "/.settings/", 11) == 0) {
        settings(r);
        return;
    }
    if (hearth_validate_path(r->path, NULL)) {
        hearth__rest_reply_error(conn, 400, MSG_BAD_PATH);
        return;
    }
    hearth__usage_count_request(r->srv, r->ns, conn, r->req,
                                r->method != HTTP_GET ? HEARTH__USAGE_WRITE
                                : hearth__rest_wants_stream(r->req)
                                    ? HEARTH__USAGE_LISTEN
                                    : HEARTH__USAGE_READ);
    if (r->quiet && r->method != HTTP_GET && !r->who.admin) {
        hearth__rest_reply_error(conn, 403, "Permission denied: only the "
                                            "admin writes with triggers=off");
        return;
    }
    switch (r->method) {
    case HTTP_GET:
        hearth__rest_get(r);
        break;
    case HTTP_PUT:
    case HTTP_POST:
    case HTTP_PATCH:
        hearth__rest_write(r);
        break;
    case HTTP_DELETE:
        hearth__rest_delete(r);
        break;
    default:
        hearth__rest_reply_error(conn, 405, "Method not allowed");
    }
}

void hearth__rest_handle(hearth__http_conn *conn,
                         const hearth__http_request *req, void *ctx) {
    rest r = {.srv = ctx, .conn = conn, .req = req};
    if (!read_target(&r))
        hearth__rest_reply_error(conn, 400, MSG_BAD_PATH);
    else if ((r.method = method_of(&r)) < 0)
        hearth__rest_reply_error(conn, 400, "x-http-method-override must be "
                                            "PUT, PATCH or DELETE");
    else if (!route_special(&r))
        route_data(&r);
    hearth__rest_free(&r);
}
