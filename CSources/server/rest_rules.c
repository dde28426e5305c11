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

/* In a cluster the rules are every node's: kept in the cluster, adopted
 * by each node as the change reaches it (this one first, before the
 * answer), never only in this node's files (cluster/rules.c). */
typedef struct shared_rules {
    hearth__http_conn *conn;
} shared_rules;

static void on_shared(void *ctx, int rc) {
    shared_rules *s = ctx;
    if (rc)
        hearth__rest_reply_error(s->conn, 503, "Rules not saved: the cluster "
                                 "did not take them; the rules in force stay");
    else
        hearth__http_respond(s->conn, 200, JSON_TYPE, NULL,
                             "{\"status\":\"ok\"}", 15);
    hearth__free(s);
}

static void share_rules(rest *r) {
    shared_rules *s = hearth__calloc(1, sizeof *s);
    char *text = s ? hearth__strndup(r->req->body, r->req->body_len) : NULL;
    if (!text) {
        hearth__free(s);
        hearth__rest_reply_error(r->conn, 503, "Server out of memory");
        return;
    }
    s->conn = r->conn;
    hearth__cluster_rules_put(r->srv->cluster, r->ns->name, text, on_shared, s);
    hearth__free(text);
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
    if (r->srv->cluster) {
        json_decref(doc);
        share_rules(r);
        return;
    }
    /* Durable first: the file is replaced whole, then adopted. The admin
     * may set a namespace's rules before it holds any data. */
    if (hearth__ns_make_dir(r->ns, &err)) {
        json_decref(doc);
        hearth__rest_reply_error(r->conn, 500, "Storage failure: rules not saved");
        return;
    }
    char path[1024], tmp[1040];
    snprintf(path, sizeof path, "%s/rules.json", r->ns->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(r->req->body, 1, r->req->body_len, f) ==
                       r->req->body_len;
    if (f)
        ok = fflush(f) == 0 && hearth__os_sync(fileno(f)) == 0 && ok;
    if (f)
        fclose(f);
    if (!ok || rename(tmp, path)) {
        json_decref(doc);
        hearth__rest_reply_error(r->conn, 500, "Storage failure: rules not saved");
        return;
    }
    if (hearth__ns_set_rules(r->ns, doc, &err)) {
        hearth__rest_reply_error(r->conn, 400, err.message); /* not reached: parsed */
        return;
    }
    hearth__ns_drop_indexes(r->ns);
    /* What the new rules no longer let read ends now. */
    hearth__sse_recheck(r->srv, r->ns);
    hearth__realtime_recheck(r->srv, r->ns);
    hearth__http_respond(r->conn, 200, JSON_TYPE, NULL, "{\"status\":\"ok\"}",
                         15);
}

void hearth__rest_cluster_status(rest *r) {
    if (!r->who.admin) {
        hearth__rest_reply_error(r->conn, 401, "Permission denied: the cluster's "
                                  "status is for the admin");
        return;
    }
    if (!r->srv->cluster) {
        hearth__rest_reply_error(r->conn, 404, "Not found: this server is not "
                                  "in a cluster (hearth serve --cluster)");
        return;
    }
    char *text = hearth__cluster_status(r->srv->cluster);
    if (!text) {
        hearth__rest_reply_error(r->conn, 503, "Server out of memory");
        return;
    }
    hearth__http_respond(r->conn, 200, JSON_TYPE, NULL, text, strlen(text));
    free(text);
}
