/*
 * server.h - the server's shared state (internal): its loop, the HTTP
 * listener, and the namespaces, each an embedded database on the server's
 * loop with its own data directory and rules document.
 */
#ifndef HEARTH_SERVER_SERVER_H
#define HEARTH_SERVER_SERVER_H

#include "server/keeper.h"
#include "common/list.h"
#include "common/map.h"
#include "db/db.h"
#include "rules/ruleset.h"
#include "server/http.h"
#include "server/metrics.h"
#include "server/ticket.h"

#include <jansson.h>
#include <stdatomic.h>

typedef struct hearth__stream hearth__stream;

/* The last events built for streams (sse.c), shared by all that match. */
typedef struct hearth__sse_memo {
    hearth_node_t *old, *now;
    unsigned flags;
    bool whole;
    hearth__shared_buf *bytes;
} hearth__sse_memo;

/* The last push built for realtime listens (realtime_push.c), framed,
 * shared by every listen it fits. */
typedef struct hearth__push_memo {
    hearth_node_t *old, *now; /* old: NULL when the whole value went */
    char *path;
    json_t *tag;
    hearth__shared_buf *frames;
    size_t counters[2]; /* 1 + the place of the shared / built counts */
} hearth__push_memo;

/* An index that ".indexOn" asked for, built on first use (query/index.h). */
typedef struct hearth__ns_index {
    char *path;  /* the indexed location, "/users" */
    char *child; /* the child path ordered by */
    struct hearth__index *index;
} hearth__ns_index;

/* A namespace open on the server. One whose directory does not exist is a
 * database in memory (empty, default rules) until a write changes it: then
 * its directory and files are made. Namespaces nobody uses close (their
 * files released, their indexes dropped) and open again on demand. */
typedef struct hearth__namespace {
    struct hearth__server *srv; /* its server (the judge's way back) */
    char *name;
    hearth_db_t *db;
    char *dir;
    json_t *rules; /* the rules document {"rules": {...}} */
    struct hearth__ruleset *ruleset; /* rules, compiled: what requests see */
    hearth__ns_index *indexes;
    size_t nindexes;
    int users;          /* sessions and streams: never closed while > 0 */
    uint64_t last_used; /* loop time of the last request or release */
    struct hearth__usage_row *usage; /* its usage row (usage.c), once found */
} hearth__namespace;

typedef struct hearth__server {
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t stop;
    uv_timer_t keepalive;
    hearth__http_server *http;
    char *data_dir;
    char *default_namespace;
    hearth_fsync_mode fsync_mode;
    json_t *rules_override; /* --rules FILE, or NULL */
    int64_t retain_ms;      /* --retain: point-in-time recovery's window */
    struct hearth__inspect *inspect; /* coverage kept, denial traces */
    char *rules_file;       /* watched for changes, or NULL */
    uv_fs_poll_t rules_poll;
    char *auth_secret;      /* HS256 for tokens, or NULL */
    struct hearth__auth_keys *auth_keys; /* RS256/ES256 (auth_keys.h), or NULL */
    bool firebase; /* Firebase ID token rules (config firebase_project) */
    char *auth_audience, *auth_issuer; /* a token's aud / iss, or NULL */
    char *admin_secret;     /* NULL: "owner" is the admin */
    char *cluster_urls, *node; /* cluster mode, or NULL */
    /* the cluster's secret and NATS's credentials and TLS files (copies;
     * hearth__cluster_options says what each is) */
    char *cluster_secret_file;
    bool cluster_insecure;
    char *nats_creds_file, *nats_nkey_file, *nats_user_file, *nats_token_file;
    char *nats_ca_file, *nats_cert_file, *nats_key_file;
    hearth__keeper *keeper; /* where namespaces are kept (keeper.h) */
    char *tls_cert_file, *tls_key_file; /* HTTPS, read again on reload */
    char *public_host; /* the realtime hello's host, or NULL: Host's */
    /* database triggers (server/triggers.c): the engine, made on the
     * loop's thread before the first namespace opens (NULL on a cluster
     * node), and what the config registers at start */
    struct hearth__triggers *triggers;
    char *triggers_file, *triggers_json;
    bool no_triggers; /* --no-triggers */
    uv_timer_t triggers_profile; /* deliveries to the profilers, 10 a s */
    uv_timer_t expiry;      /* ends what expired tokens still hold */
    /* Each namespace has a stable address: sessions and streams keep
     * pointers to theirs (hearth__ns_hold) while the array changes. */
    hearth__namespace **namespaces;
    size_t nnamespaces, namespaces_cap;
    hearth__map namespace_names; /* name -> the namespace, for each request */
    atomic_uint_fast64_t namespace_idle_ms; /* unused this long: closed */
    hearth__list streams; /* server-sent event streams, for keep-alives */
    hearth__list sessions; /* realtime sessions, for rules changes */
    hearth__sse_memo memo;
    hearth__push_memo push_memo;
    struct hearth__usage *usage; /* per namespace (usage.h), or NULL */
    hearth__metrics metrics;    /* GET /.metrics */
    hearth__tickets tickets;    /* the admin's stream tickets (ticket.h) */
    hearth_log_format log_format;
    hearth__list profilers; /* GET /.profile streams */
    hearth__http_server *metrics_http;  /* metrics_port's, or NULL */
    bool stopping;
    uv_sem_t started;
    int start_rc;
    hearth_error_t start_err;
} hearth__server;

/* Whether tokens must be signed (a secret or public keys configured). */
bool hearth__server_has_keys(const hearth__server *srv);

/* A rules file is at most this big (the service's limit is 256 KB). */
#define HEARTH__MAX_RULES_FILE (16u * 1024 * 1024)

/* ---- server_rules.c ---- */
/* Loads ns's rules: the keeper's document comes first (a cluster's, set
 * for every node); then --rules FILE; then DATA/NAME/rules.json; then the
 * default (open without token keys, locked with them). */
int hearth__ns_load_rules(hearth__server *srv, hearth__namespace *ns,
                          hearth_error_t *err);
/* The keeper's rules callback (keeper.h), ctx the server. */
void hearth__server_kept_rules(void *ctx, const char *name, const char *text);
/* The rules file's poll callback (uv_fs_poll_t.data: the server). */
void hearth__server_rules_file_changed(uv_fs_poll_t *poll, int status,
                                       const uv_stat_t *prev,
                                       const uv_stat_t *now);
/* Adopts a parsed rules document (taken over) and its compiled form;
 * _source notes where its rules are written in text (the coverage
 * report's positions; NULL: in the document as GET /.settings/rules.json
 * shows it). */
int hearth__ns_set_rules_source(hearth__namespace *ns, json_t *doc,
                                const char *text, size_t len,
                                hearth_error_t *err);
int hearth__ns_set_rules(hearth__namespace *ns, json_t *doc,
                         hearth_error_t *err);

/* The namespace called name if it is open now, else NULL (opens nothing). */
hearth__namespace *hearth__server_namespace_find(const hearth__server *srv,
                                                const char *name);
/* The namespace called name, opened if it is not (creating nothing on
 * disk). Valid while the request is handled; hold it to keep it longer.
 * HEARTH_EINVAL for an invalid name, HEARTH_ETOOBIG when the server holds
 * its maximum of namespaces and all are in use. */
int hearth__server_namespace(hearth__server *srv, const char *name,
                             hearth__namespace **out, hearth_error_t *err);
/* A session or stream keeps ns open until it releases it. */
void hearth__ns_hold(hearth__namespace *ns);
void hearth__ns_release(hearth__server *srv, hearth__namespace *ns);
/* Makes ns's directory (the admin stores rules there before any data). */
int hearth__ns_make_dir(const hearth__namespace *ns, hearth_error_t *err);
/* Closes the namespaces nobody used for the idle time (server loop). */
void hearth__server_close_idle(hearth__server *srv);
/* Test hook: how long an unused namespace stays open (default 60 s). Any
 * thread. */
void hearth__server_set_namespace_idle_ms(hearth_server_t *server,
                                          uint64_t ms);

/* Database triggers (server/triggers.c): the engine with the config's
 * registrations (loop thread, at start), its tap on a namespace's
 * database, and its end (after the loop's last turn). */
int hearth__server_triggers_open(hearth__server *srv, hearth_error_t *err);
void hearth__server_triggers_attach(hearth__server *srv,
                                    hearth__namespace *ns);
/* Deliveries end (on stop); commits still to come are spooled. */
void hearth__server_triggers_stop(hearth__server *srv);
void hearth__server_triggers_free(hearth__server *srv);
/* The triggers' lines of GET /.metrics. */
void hearth__server_triggers_metrics(hearth__server *srv, hearth__buf *out);

/* Handles one HTTP request (REST, streaming, rules). */
void hearth__rest_handle(hearth__http_conn *conn,
                         const hearth__http_request *req, void *srv);

/* Before a large body is read (http.h's head handler): 401 for a write
 * the rules refuse whatever its data, or a token that does not verify;
 * else 0. */
int hearth__rest_head(const hearth__http_request *req, void *srv, char *why,
                      size_t why_size);

/* Server-sent events (sse.c). who and query_var (the read rules' query)
 * are kept to check the stream again when the rules change. */
struct hearth__principal;
void hearth__sse_start(hearth__server *srv, hearth__http_conn *conn,
                       hearth__namespace *ns, const char *path,
                       const hearth_query_t *query, unsigned json_flags,
                       const struct hearth__principal *who,
                       const hearth_node_t *query_var);
/* After ns's rules changed: streams the rules no longer let read end with
 * a `cancel` event. */
void hearth__sse_recheck(hearth__server *srv, hearth__namespace *ns);
/* The same for realtime listens (realtime.c): they get a `c` push. */
void hearth__realtime_recheck(hearth__server *srv, hearth__namespace *ns);
void hearth__sse_keepalive(hearth__server *srv);
/* Streams and sessions whose token expired by now_ms: streams end with
 * `auth_revoked`; sessions get `ac`, go on unauthenticated, and lose the
 * listens that needed the token. */
void hearth__sse_expire(hearth__server *srv, int64_t now_ms);
void hearth__realtime_expire(hearth__server *srv, int64_t now_ms);
/* Ends the streams and sessions of namespaces whose data may not be
 * served now (hearth__db_unavailable): their clients reconnect. */
void hearth__sse_close_unavailable(hearth__server *srv);
void hearth__realtime_close_unavailable(hearth__server *srv);
void hearth__sse_close_all(hearth__server *srv);
/* Drops the realtime push kept for sharing (when the server stops). */
void hearth__realtime_forget_pushes(hearth__server *srv);
/* Open streams, and realtime sessions with their listens (the metrics). */
size_t hearth__sse_count(const hearth__server *srv);
void hearth__realtime_count(const hearth__server *srv, size_t *sessions,
                            size_t *listens);
/* GET /.metrics's body (Prometheus text). */
void hearth__metrics_render(hearth__server *srv, hearth__buf *out);
/* The metrics port's only answer. */
void hearth__metrics_handle(hearth__http_conn *conn,
                            const hearth__http_request *req, void *srv);

/* The index of child values at path, created when missing; NULL when the
 * namespace holds its maximum of indexes (queries then scan). */
struct hearth__index *hearth__ns_index_for(hearth__namespace *ns,
                                           const char *path,
                                           const hearth_query_t *q);
/* Drops every index (the rules changed). */
void hearth__ns_drop_indexes(hearth__namespace *ns);

/* ".indexOn" lookup: whether the rules index `child` at path (keys). */
bool hearth__rules_indexed(const json_t *rules, const char *const *keys,
                           size_t nkeys, const char *child);


#endif
