/* rest_rules.c - the REST rules endpoint (/.settings/rules): the admin
 * reads the rules or replaces them, durably, and what they no longer let
 * read ends at once. */
#include "server/rest_internal.h"

#include "os/os.h"
#include "server/realtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- rules endpoint ---- */

/* 400 {"error": why} and, for a JSON syntax error, where: "line" and
 * "column" of the text sent (the console puts the cursor there). */
static void reply_parse_error(rest *r, const hearth_error_t *err) {
    json_t *out = json_pack("{s:s}", "error", err->message);
    if (out && err->line > 0) {
        json_object_set_new(out, "line", json_integer(err->line));
        json_object_set_new(out, "column", json_integer(err->column));
    }
    hearth__rest_reply_json(r->conn, 400, out);
}

/* The keeper stores the rules (a namespace's file here, or the cluster
 * for every node) and has them adopted before it answers, so the admin's
 * next read sees them; what they no longer let read ends then. */
static void on_saved(void *ctx, int rc) {
    hearth__http_conn *conn = ctx;
    if (rc == HEARTH_EIO || rc == HEARTH_ENOSPC)
        hearth__rest_reply_error(conn, 500, "Storage failure: rules not saved");
    else if (rc) {
        char why[160];
        snprintf(why, sizeof why, "Rules not saved: %s; the rules in force "
                 "stay", hearth_strerror(rc));
        hearth__rest_reply_error(conn, 503, why);
    } else
        hearth__http_respond(conn, 200, JSON_TYPE, NULL,
                             "{\"status\":\"ok\"}", 15);
}

void hearth__rest_rules(rest *r) {
    if (!r->who.admin) {
        hearth__rest_reply_error(r->conn, 401, "Permission denied: the rules are for the "
                                  "admin (Authorization: Bearer owner)");
        return;
    }
    if (r->method == HTTP_GET) {
        char *text = json_dumps(r->ns->rules, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (!text) {
            hearth__rest_reply_error(r->conn, 503, "Server out of memory");
            return;
        }
        hearth__http_respond(r->conn, 200, JSON_TYPE, NULL, text, strlen(text));
        free(text);
        return;
    }
    if (r->method != HTTP_PUT) {
        hearth__rest_reply_error(r->conn, 405, "Rules can be read (GET) or replaced (PUT)");
        return;
    }
    json_t *doc;
    hearth_error_t err;
    if (hearth__rules_parse(r->req->body, r->req->body_len, &doc, &err)) {
        reply_parse_error(r, &err);
        return;
    }
    json_decref(doc); /* checked: the keeper's callback adopts it */
    hearth__keeper *k = r->srv->keeper;
    k->ops->rules_put(k, r->ns->name, r->ns->dir, r->req->body,
                      r->req->body_len, on_saved, r->conn);
}

void hearth__rest_cluster_status(rest *r) {
    if (!r->who.admin) {
        hearth__rest_reply_error(r->conn, 401, "Permission denied: the cluster's "
                                  "status is for the admin");
        return;
    }
    bool none;
    char *text = r->srv->keeper->ops->status(r->srv->keeper, &none);
    if (none) {
        hearth__rest_reply_error(r->conn, 404, "Not found: this server is not "
                                  "in a cluster (hearth serve --cluster)");
        return;
    }
    if (!text) {
        hearth__rest_reply_error(r->conn, 503, "Server out of memory");
        return;
    }
    hearth__http_respond(r->conn, 200, JSON_TYPE, NULL, text, strlen(text));
    free(text);
}
