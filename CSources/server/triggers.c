/* triggers.c - the server's side of database triggers (triggers/): the
 * engine made at start with the config's registrations, its tap on each
 * namespace, and the admin's endpoints under /.settings/triggers. */
#include "server/profile.h"
#include "server/rest_internal.h"
#include "triggers/triggers.h"

#include <errno.h>
#include <string.h>

#define MAX_TRIGGERS_FILE (16u << 20)
#define DEAD_LISTED_MAX 1000
#define PROFILE_EVERY_MS 100

/* One delivery attempt as an operation of the profile (door "trigger"). */
static void emit_delivery(void *ctx, const hearth__delivery *d) {
    hearth__server *srv = ctx;
    char status[16];
    snprintf(status, sizeof status, "%d", d->status);
    hearth__op op = {.door = "trigger",
                     .type = "trigger",
                     .ns = d->ns,
                     .path = d->path,
                     .status = d->status > 0 ? status : "error",
                     .bytes_out = d->bytes,
                     .duration_ns = d->duration_ns};
    if (!hearth__list_empty(&srv->profilers))
        hearth__profile_emit(srv, &op);
}

/* The deliverers record their attempts while someone profiles; they go
 * to the profile streams a tenth of a second later at most. */
static void on_profile_tick(uv_timer_t *timer) {
    hearth__server *srv = timer->data;
    hearth__triggers_record(srv->triggers, !hearth__list_empty(&srv->profilers));
    hearth__triggers_drain(srv->triggers, emit_delivery, srv);
}

/* One of the admin's registrations the keeper holds for every node:
 * registered (again), or removed (json NULL). */
static void adopt(hearth__server *srv, const char *name, const char *json,
                  bool removals) {
    if (!json) {
        if (removals)
            hearth__triggers_remove(srv->triggers, name);
        return;
    }
    json_error_t jerr;
    json_t *spec = json_loads(json, 0, &jerr);
    hearth_error_t err;
    int rc = spec ? hearth__triggers_register_one(srv->triggers, name, spec,
                                                  "admin", &err)
                  : hearth__error(&err, HEARTH_EINVAL, NULL, "%s", jerr.text);
    json_decref(spec);
    if (rc)
        hearth__log(HEARTH_LOG_WARNING, "trigger %s from the cluster not "
                    "registered: %s", name, err.message);
}

static void on_kept_at_start(void *ctx, const char *name, const char *json) {
    adopt(ctx, name, json, false); /* a removal: the file's stays */
}

static void on_kept_changed(void *ctx, const char *name, const char *json) {
    adopt(ctx, name, json, true);
}

int hearth__server_triggers_open(hearth__server *srv, hearth_error_t *err) {
    if (srv->no_triggers) /* --no-triggers: none registered, none fire */
        return 0;
    const hearth__triggers_remote *remote = NULL;
    if (srv->keeper->ops->triggers_remote) {
        int rc = srv->keeper->ops->triggers_remote(srv->keeper, &remote, err);
        if (rc)
            return rc;
    }
    char dir[4096], host[300];
    snprintf(dir, sizeof dir, "%s/.triggers", srv->data_dir);
    if (srv->public_host)
        snprintf(host, sizeof host, "%s", srv->public_host);
    else
        snprintf(host, sizeof host, "127.0.0.1:%d", hearth__http_port(srv->http));
    hearth__triggers_options o = {dir, host, "us-central1", remote};
    int rc = hearth__triggers_create(&o, &srv->triggers, err);
    if (!rc) {
        uv_timer_init(&srv->loop, &srv->triggers_profile);
        srv->triggers_profile.data = srv;
        uv_timer_start(&srv->triggers_profile, on_profile_tick,
                       PROFILE_EVERY_MS, PROFILE_EVERY_MS);
    }
    if (!rc && srv->triggers_file) {
        size_t len;
        char *text = hearth__read_file(srv->triggers_file, MAX_TRIGGERS_FILE,
                                       &len);
        if (!text)
            return hearth__error(err, HEARTH_EIO, srv->triggers_file,
                                 "cannot read the triggers file %s: %s",
                                 srv->triggers_file, strerror(errno));
        rc = hearth__triggers_register(srv->triggers, text, len, "file", err);
        hearth__free(text);
        if (rc && err) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            hearth__error(err, rc, srv->triggers_file, "%s: %s",
                          srv->triggers_file, why);
        }
    }
    if (!rc && srv->triggers_json)
        rc = hearth__triggers_register(srv->triggers, srv->triggers_json,
                                       strlen(srv->triggers_json), "functions",
                                       err);
    hearth__keeper *k = srv->keeper;
    if (!rc && k->ops->triggers_each) { /* the admin's, every node's */
        k->ops->triggers_each(k, on_kept_at_start, srv);
        hearth__keeper_follow_triggers(k, on_kept_changed, srv);
    }
    return rc;
}

void hearth__server_triggers_attach(hearth__server *srv,
                                    hearth__namespace *ns) {
    if (srv->triggers)
        hearth__triggers_attach(srv->triggers, ns->name, ns->db);
}

void hearth__server_triggers_stop(hearth__server *srv) {
    if (!srv->triggers)
        return;
    hearth__triggers_stop(srv->triggers);
    uv_close((uv_handle_t *)&srv->triggers_profile, NULL);
}

void hearth__server_triggers_metrics(hearth__server *srv, hearth__buf *out) {
    if (srv->triggers)
        hearth__triggers_metrics(srv->triggers, out);
}

void hearth__server_triggers_free(hearth__server *srv) {
    hearth__triggers_free(srv->triggers);
    srv->triggers = NULL;
}

/* A registration's change kept for every node (the cluster's): the
 * keeper's callback has registered or removed it here before this
 * runs, so the answer shows it. */
typedef struct kept_reply {
    hearth__http_conn *conn;
    hearth__server *srv;
    bool removal;
} kept_reply;

static void on_kept(void *ctx, int rc) {
    kept_reply *k = ctx;
    if (rc) {
        char why[160];
        snprintf(why, sizeof why, "Trigger not saved: %s; the registrations "
                 "in force stay", hearth_strerror(rc));
        hearth__rest_reply_error(k->conn, 503, why);
    } else if (k->removal) {
        hearth__rest_reply_json(k->conn, 200, json_null());
    } else {
        hearth__rest_reply_json(k->conn, 200,
                                hearth__triggers_describe(k->srv->triggers));
    }
    hearth__free(k);
}

/* PUT or DELETE of NAME where the keeper keeps the admin's registrations
 * for every node: checked here, then stored (each node registers it as
 * the change reaches it). */
static void put_for_every_node(rest *r, const char *name) {
    hearth__http_conn *conn = r->conn;
    hearth__triggers *t = r->srv->triggers;
    hearth_error_t err;
    char *text = NULL;
    if (r->method == HTTP_DELETE) {
        if (!hearth__triggers_has(t, name)) {
            hearth__rest_reply_error(conn, 404, "Not found: no such trigger");
            return;
        }
    } else {
        json_error_t jerr;
        json_t *spec = json_loadb(r->req->body, r->req->body_len, 0, &jerr);
        int rc = spec ? hearth__triggers_check(name, spec, &err)
                      : hearth__error(&err, HEARTH_EINVAL, NULL, "%s",
                                      MSG_BAD_DATA);
        if (!rc && !json_object_get(spec, "name"))
            json_object_set_new(spec, "name", json_string(name));
        text = rc ? NULL : json_dumps(spec, JSON_COMPACT);
        json_decref(spec);
        if (rc) {
            hearth__rest_reply_error(conn, 400, err.message);
            return;
        }
    }
    kept_reply *k = hearth__calloc(1, sizeof *k);
    if (!k || (r->method == HTTP_PUT && !text)) {
        hearth__free(k);
        free(text);
        hearth__rest_reply_error(conn, 503, "Server out of memory");
        return;
    }
    *k = (kept_reply){conn, r->srv, r->method == HTTP_DELETE};
    hearth__keeper *keeper = r->srv->keeper;
    keeper->ops->triggers_put(keeper, name, text, on_kept, k);
    free(text);
}

/* /.settings/triggers[/NAME[/dead|/retry]] (the admin's):
 *   GET    /.settings/triggers.json            every trigger, its counters
 *   PUT    /.settings/triggers/NAME.json       register (add or replace)
 *   DELETE /.settings/triggers/NAME.json       remove
 *   GET    /.settings/triggers/NAME/dead.json  its dead letters
 *   POST   /.settings/triggers/NAME/retry.json dead letters queued again */
void hearth__rest_triggers(rest *r, const char *sub) {
    hearth__http_conn *conn = r->conn;
    if (!r->who.admin) {
        hearth__rest_reply_error(conn, 401, "Permission denied: triggers are "
                                            "for the admin");
        return;
    }
    if (!r->srv->triggers) {
        hearth__rest_reply_error(conn, 501, "Triggers are off on this server "
                                            "(hearth serve --no-triggers)");
        return;
    }
    hearth__triggers *t = r->srv->triggers;
    if (!*sub) {
        if (hearth__rest_admin_asks(r, HTTP_GET, "the list of triggers"))
            hearth__rest_reply_json(conn, 200, hearth__triggers_describe(t));
        return;
    }
    char name[80];
    const char *end = strchr(sub + 1, '/');
    size_t nlen = end ? (size_t)(end - sub - 1) : strlen(sub + 1);
    if (sub[0] != '/' || nlen == 0 || nlen >= sizeof name) {
        hearth__rest_reply_error(conn, 404, "Not found: a trigger's name is "
                                            "1 to 64 characters");
        return;
    }
    memcpy(name, sub + 1, nlen);
    name[nlen] = '\0';
    const char *what = end ? end : "";
    hearth_error_t err;
    hearth__keeper *k = r->srv->keeper;
    if (!*what && k->ops->triggers_put &&
        (r->method == HTTP_PUT || r->method == HTTP_DELETE)) {
        put_for_every_node(r, name);
        return;
    }
    if (!*what && r->method == HTTP_PUT) {
        json_error_t jerr;
        json_t *spec = json_loadb(r->req->body, r->req->body_len, 0, &jerr);
        int rc = spec ? hearth__triggers_register_one(t, name, spec, "admin",
                                                      &err)
                      : hearth__error(&err, HEARTH_EINVAL, NULL, "%s",
                                      MSG_BAD_DATA);
        json_decref(spec);
        if (rc)
            hearth__rest_reply_error(conn, rc == HEARTH_EINVAL ? 400 : 500,
                                     err.message);
        else
            hearth__rest_reply_json(conn, 200, hearth__triggers_describe(t));
    } else if (!*what && r->method == HTTP_DELETE) {
        if (hearth__triggers_remove(t, name))
            hearth__rest_reply_error(conn, 404, "Not found: no such trigger");
        else
            hearth__rest_reply_json(conn, 200, json_null());
    } else if (hearth__triggers_remote_of(t) &&
               ((!strcmp(what, "/dead") && r->method == HTTP_GET) ||
                (!strcmp(what, "/retry") && r->method == HTTP_POST))) {
        if (hearth__triggers_has(t, name))
            hearth__rest_dead_remote(r, name, DEAD_LISTED_MAX,
                                     r->method == HTTP_POST);
        else
            hearth__rest_reply_error(conn, 404, "Not found: no such trigger");
    } else if (!strcmp(what, "/dead") && r->method == HTTP_GET) {
        json_t *dead = hearth__triggers_dead(t, name, DEAD_LISTED_MAX);
        if (dead)
            hearth__rest_reply_json(conn, 200, dead);
        else
            hearth__rest_reply_error(conn, 404, "Not found: no such trigger");
    } else if (!strcmp(what, "/retry") && r->method == HTTP_POST) {
        size_t n;
        int rc = hearth__triggers_retry_dead(t, name, &n);
        if (rc == HEARTH_ENOTFOUND)
            hearth__rest_reply_error(conn, 404, "Not found: no such trigger");
        else if (rc)
            hearth__rest_reply_error(conn, 500, hearth_strerror(rc));
        else
            hearth__rest_reply_json(conn, 200,
                                    json_pack("{s:I}", "requeued", (json_int_t)n));
    } else {
        hearth__rest_reply_error(conn, 405,
                                 "Triggers: GET the list; PUT or DELETE "
                                 "/.settings/triggers/NAME; GET "
                                 "NAME/dead; POST NAME/retry");
    }
}
