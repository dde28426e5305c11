/* server.c - starting and stopping the server, and its namespaces. */
#include "server/server.h"
#include "server/access.h"
#include "server/auth_keys.h"
#include "server/inspect.h"
#include "server/usage.h"
#include "server/log.h"
#include "server/observe.h"

#include "net/tls.h"
#include "rules/jwt.h"

#include "query/index.h"
#include "tree/json.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#define KEEPALIVE_MS 30000
#define MAX_BODY (256u * 1024 * 1024) /* the service's REST write limit */
#define MAX_BACKLOG (8u * 1024 * 1024)
/* Timeouts (as nginx's and the service's: a head within 20 s, a body never
 * silent for a minute, keep-alive 75 s). */
#define HEADER_TIMEOUT_MS 20000
#define BODY_TIMEOUT_MS 60000
#define IDLE_TIMEOUT_MS 75000
/* Request data held at once; one peer may hold a quarter (by default one
 * body of the largest size). */
#define MAX_HELD (1024u * 1024 * 1024)
#define PEER_SHARE_DIVISOR 4
/* Namespaces open at once, in use or not: a bound on memory, since a
 * session or stream may hold one that exists only in memory. */
#define MAX_NAMESPACES 1000
/* Namespaces open with nobody using them (each holds its log and lock
 * open): past this the least recently used close, and any unused for
 * NAMESPACE_IDLE_MS does. */
#define MAX_IDLE_NAMESPACES 64
#define NAMESPACE_IDLE_MS 60000
/* How often expired tokens are looked for, and the rules file for changes
 * (polled: an editor's save replaces the file, which a watch would lose). */
#define EXPIRY_CHECK_MS 1000
#define RULES_POLL_MS 1000

bool hearth__server_has_keys(const hearth__server *srv) {
    return srv->auth_secret || srv->auth_keys;
}

/* ---- namespaces ---- */

static bool valid_namespace(const char *name) {
    return hearth__plain_name(name, 128);
}

static void ns_free(hearth__namespace *ns) {
    hearth__ns_drop_indexes(ns);
    if (ns->db)
        hearth_db_close(ns->db); /* commits; releases its files now if quiet */
    json_decref(ns->rules);
    hearth__ruleset_free(ns->ruleset);
    hearth__free(ns->name);
    hearth__free(ns->dir);
    hearth__free(ns);
}

static bool ns_idle(hearth__namespace *ns) {
    return ns->users == 0 && hearth__db_quiet(ns->db);
}

/* Closes namespaces[i]; the last one takes its place. */
static void ns_forget(hearth__server *srv, size_t i) {
    hearth__inspect_closing(srv, srv->namespaces[i]); /* coverage kept */
    hearth__map_remove_str(&srv->namespace_names, srv->namespaces[i]->name);
    ns_free(srv->namespaces[i]);
    srv->namespaces[i] = srv->namespaces[--srv->nnamespaces];
}

/* Closes the idle namespaces unused for the idle time, then the least
 * recently used idle ones until `room` more namespaces fit both bounds. */
static void close_idle(hearth__server *srv, size_t room) {
    uint64_t now = uv_now(&srv->loop);
    uint64_t idle_ms = atomic_load(&srv->namespace_idle_ms);
    size_t idle = 0;
    for (size_t i = 0; i < srv->nnamespaces;) {
        hearth__namespace *ns = srv->namespaces[i];
        if (!ns_idle(ns)) {
            i++;
        } else if (now - ns->last_used >= idle_ms) {
            ns_forget(srv, i);
        } else {
            idle++;
            i++;
        }
    }
    while (idle && (idle + room > MAX_IDLE_NAMESPACES ||
                    srv->nnamespaces + room > MAX_NAMESPACES)) {
        size_t lru = srv->nnamespaces;
        for (size_t i = 0; i < srv->nnamespaces; i++)
            if (ns_idle(srv->namespaces[i]) &&
                (lru == srv->nnamespaces ||
                 srv->namespaces[i]->last_used < srv->namespaces[lru]->last_used))
                lru = i;
        ns_forget(srv, lru);
        idle--;
    }
}

void hearth__server_close_idle(hearth__server *srv) { close_idle(srv, 0); }

void hearth__server_set_namespace_idle_ms(hearth_server_t *server,
                                          uint64_t ms) {
    atomic_store(&((hearth__server *)server)->namespace_idle_ms, ms);
}

void hearth__ns_hold(hearth__namespace *ns) { ns->users++; }

void hearth__ns_release(hearth__server *srv, hearth__namespace *ns) {
    ns->users--;
    ns->last_used = uv_now(&srv->loop);
}

int hearth__ns_make_dir(const hearth__namespace *ns, hearth_error_t *err) {
    if (mkdir(ns->dir, 0755) && errno != EEXIST)
        return hearth__error(err, HEARTH_EIO, ns->dir, "cannot create %s: %s",
                             ns->dir, strerror(errno));
    return 0;
}

/* Opens the database of ns: from its directory when it exists, else in
 * memory until a write changes it (reading a namespace creates nothing). */
static int open_db(hearth__server *srv, hearth__namespace *ns,
                   hearth_error_t *err) {
    struct stat st;
    bool stored = stat(ns->dir, &st) == 0 || errno != ENOENT;
    if (srv->keeper->ops->stores_every_namespace && !stored) {
        int made = hearth__ns_make_dir(ns, err);
        if (made)
            return made;
        stored = true;
    }
    hearth_db_config_t config = {.size = sizeof config,
                                 .loop = &srv->loop,
                                 .data_dir = stored ? ns->dir : NULL,
                                 .fsync_mode = srv->fsync_mode};
    int rc = srv->keeper->ops->open(srv->keeper, ns->name, &config, &ns->db,
                                    err);
    if (!rc && !stored)
        rc = hearth__db_store_on_write(ns->db, ns->dir, srv->fsync_mode);
    if (rc == HEARTH_ENOMEM)
        hearth__error_code(err, rc);
    if (!rc) {
        hearth__db_set_group_commit(ns->db, true);
        hearth__db_set_retention(ns->db, srv->retain_ms);
        /* Network writes are judged by the rules as they are applied. */
        hearth__db_set_judge(ns->db, hearth__ns_judge, ns);
        hearth__server_triggers_attach(srv, ns);
    }
    return rc;
}

/* A namespace opened: its database and rules. */
static int ns_open(hearth__server *srv, const char *name,
                   hearth__namespace **out, hearth_error_t *err) {
    hearth__namespace *ns = hearth__calloc(1, sizeof *ns);
    size_t dlen = strlen(srv->data_dir) + strlen(name) + 2;
    if (ns) {
        ns->name = hearth__strndup(name, strlen(name));
        ns->dir = hearth__malloc(dlen);
    }
    if (!ns || !ns->name || !ns->dir) {
        if (ns)
            ns_free(ns);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    snprintf(ns->dir, dlen, "%s/%s", srv->data_dir, name);
    ns->srv = srv;
    int rc = open_db(srv, ns, err);
    if (!rc)
        rc = hearth__ns_load_rules(srv, ns, err);
    if (rc) {
        ns_free(ns);
        return rc;
    }
    hearth__inspect_opened(srv, ns); /* the same rules go on counting */
    *out = ns;
    return 0;
}

hearth__namespace *hearth__server_namespace_find(const hearth__server *srv,
                                                const char *name) {
    return hearth__map_get_str(&srv->namespace_names, name);
}

int hearth__server_namespace(hearth__server *srv, const char *name,
                             hearth__namespace **out, hearth_error_t *err) {
    hearth__namespace *open = hearth__server_namespace_find(srv, name);
    if (open) {
        open->last_used = uv_now(&srv->loop);
        *out = open;
        return 0;
    }
    if (!valid_namespace(name))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "Invalid namespace \"%.64s\": use letters, "
                             "digits, '-' and '_'",
                             name);
    close_idle(srv, 1);
    if (srv->nnamespaces >= MAX_NAMESPACES)
        return hearth__error(err, HEARTH_ETOOBIG, NULL,
                             "Too many namespaces in use: this server holds "
                             "at most %d",
                             MAX_NAMESPACES);
    hearth__namespace **n = hearth__grow(srv->namespaces, &srv->namespaces_cap,
                                         srv->nnamespaces + 1, sizeof *n);
    if (!n)
        return hearth__error_code(err, HEARTH_ENOMEM);
    srv->namespaces = n;
    hearth__namespace *ns = NULL;
    int rc = ns_open(srv, name, &ns, err);
    if (rc)
        return rc;
    ns->last_used = uv_now(&srv->loop);
    srv->namespaces[srv->nnamespaces++] = ns;
    if (hearth__map_put_str(&srv->namespace_names, ns->name, ns)) {
        ns_forget(srv, srv->nnamespaces - 1);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    *out = ns;
    return 0;
}

/* ---- lifecycle ---- */

static void on_keepalive(uv_timer_t *t) { hearth__sse_keepalive(t->data); }

/* Each second: what expired tokens still hold ends, so do streams and
 * sessions of namespaces this node may not serve now, and namespaces
 * nobody used for a while close. */
static void on_expiry(uv_timer_t *t) {
    hearth__server *srv = t->data;
    int64_t now = hearth_now_ms();
    hearth__sse_expire(srv, now);
    hearth__realtime_expire(srv, now);
    bool unavailable = false; /* a rare state: the walks only then */
    for (size_t i = 0; i < srv->nnamespaces; i++)
        unavailable |= hearth__db_unavailable(srv->namespaces[i]->db);
    if (unavailable) {
        hearth__sse_close_unavailable(srv);
        hearth__realtime_close_unavailable(srv);
    }
    hearth__server_close_idle(srv);
}

/* The most connections the open-file limit allows while keeping a
 * quarter of it (at least 32) for the namespaces' logs and snapshots, so
 * that accepting a connection never takes the last file. */
static size_t connection_bound(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur > (1u << 20))
        return 1u << 18;
    size_t files = (size_t)rl.rlim_cur;
    size_t reserve = files / 4 > 32 ? files / 4 : 32;
    return files > reserve + 8 ? files - reserve : 8;
}

/* The HTTP limits of config, defaults where it says 0. */
static int http_limits(const hearth_server_config_t *config,
                       hearth__http_limits *out, hearth_error_t *err) {
    if (config->header_timeout_ms < 0 || config->body_timeout_ms < 0 ||
        config->idle_timeout_ms < 0 || config->max_connections < 0 ||
        config->max_connections_per_address < 0 || config->max_held_bytes < 0)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "timeouts and limits must not be negative");
    size_t bound = connection_bound();
    size_t held = config->max_held_bytes && (uint64_t)config->max_held_bytes < SIZE_MAX
                      ? (size_t)config->max_held_bytes
                      : MAX_HELD;
    *out = (hearth__http_limits){
        .max_body = MAX_BODY,
        .max_backlog = MAX_BACKLOG,
        .header_ms = config->header_timeout_ms ? (uint64_t)config->header_timeout_ms
                                               : HEADER_TIMEOUT_MS,
        .body_ms = config->body_timeout_ms ? (uint64_t)config->body_timeout_ms
                                           : BODY_TIMEOUT_MS,
        .idle_ms = config->idle_timeout_ms ? (uint64_t)config->idle_timeout_ms
                                           : IDLE_TIMEOUT_MS,
        .max_connections = config->max_connections &&
                                   (size_t)config->max_connections < bound
                               ? (size_t)config->max_connections
                               : bound,
        .max_held = held,
        .peer_share = held / PEER_SHARE_DIVISOR,
    };
    size_t share = out->max_connections / PEER_SHARE_DIVISOR;
    out->max_peer_connections =
        config->max_connections_per_address
            ? (size_t)config->max_connections_per_address
            : share > 0 ? share : 1;
    return 0;
}

static void on_http_closed(void *ctx) {
    hearth__server *srv = ctx;
    /* Every connection is gone: the writes they made are applied; closing
     * each database commits and syncs the rest. */
    while (srv->nnamespaces)
        ns_forget(srv, srv->nnamespaces - 1);
    if (srv->keeper)
        srv->keeper->ops->stop(srv->keeper);
    srv->keeper = NULL;
    uv_close((uv_handle_t *)&srv->stop, NULL);
    uv_close((uv_handle_t *)&srv->keepalive, NULL);
    uv_close((uv_handle_t *)&srv->expiry, NULL);
    if (srv->rules_file)
        uv_close((uv_handle_t *)&srv->rules_poll, NULL);
}

static void on_stop(uv_async_t *a) {
    hearth__server *srv = a->data;
    if (srv->stopping)
        return;
    srv->stopping = true;
    uv_timer_stop(&srv->keepalive);
    uv_timer_stop(&srv->expiry);
    if (srv->rules_file)
        uv_fs_poll_stop(&srv->rules_poll);
    hearth__auth_keys_stop(srv->auth_keys);
    hearth__sse_close_all(srv);
    hearth__realtime_forget_pushes(srv);
    hearth__server_triggers_stop(srv);
    if (srv->metrics_http)
        hearth__http_close(srv->metrics_http, NULL, NULL);
    hearth__log_event(srv, "stop", NULL);
    hearth__http_close(srv->http, on_http_closed, srv);
}

/* The server's thread. Namespaces are databases on this loop, so they are
 * opened here: the default one first, reporting to hearth_server_start. */
static void run(void *arg) {
    hearth__server *srv = arg;
    hearth__namespace *ns;
    srv->start_rc = srv->cluster_urls
                        ? hearth__keeper_cluster(srv, &srv->keeper,
                                                 &srv->start_err)
                        : hearth__keeper_local(&srv->keeper, &srv->start_err);
    if (srv->keeper)
        hearth__keeper_follow_rules(srv->keeper, hearth__server_kept_rules, srv);
    if (!srv->start_rc)
        srv->start_rc = hearth__server_triggers_open(srv, &srv->start_err);
    if (!srv->start_rc)
        srv->start_rc = hearth__server_namespace(
            srv, srv->default_namespace, &ns, &srv->start_err);
    uv_sem_post(&srv->started);
    if (srv->start_rc)
        on_stop(&srv->stop);
    else
        hearth__log_event(srv, "start", srv->data_dir);
    uv_run(&srv->loop, UV_RUN_DEFAULT);
    hearth__server_triggers_free(srv);
    hearth__thread_cleanup();
}

static void free_server(hearth__server *srv) {
    json_decref(srv->rules_override);
    hearth__free(srv->rules_file);
    hearth__free(srv->auth_secret);
    hearth__free(srv->admin_secret);
    hearth__free(srv->cluster_urls);
    hearth__free(srv->node);
    hearth__free(srv->cluster_secret_file);
    hearth__free(srv->nats_creds_file);
    hearth__free(srv->nats_nkey_file);
    hearth__free(srv->nats_user_file);
    hearth__free(srv->nats_token_file);
    hearth__free(srv->nats_ca_file);
    hearth__free(srv->nats_cert_file);
    hearth__free(srv->nats_key_file);
    hearth__free(srv->tls_cert_file);
    hearth__free(srv->tls_key_file);
    hearth__free(srv->public_host);
    hearth__free(srv->triggers_file);
    hearth__free(srv->triggers_json);
    hearth__free(srv->auth_audience);
    hearth__free(srv->auth_issuer);
    hearth__auth_keys_free(srv->auth_keys);
    hearth__free(srv->namespaces);
    hearth__map_free(&srv->namespace_names);
    hearth__usage_free(srv->usage);
    hearth__inspect_free(srv->inspect);
    hearth__metrics_free(&srv->metrics);
    hearth__free(srv->data_dir);
    hearth__free(srv->default_namespace);
    hearth__free(srv);
}

/* The struct of version 0.2, the first with a size: what size 0 means. */
#define CONFIG_SIZE_0_2 HEARTH__END_OF(hearth_server_config_t, max_held_bytes)

/* The caller's config, of whatever version, as this library's struct
 * with its defaults filled in, checked, and its HTTP limits. */
static int read_config(const hearth_server_config_t *caller,
                       hearth_server_config_t *config,
                       hearth__http_limits *limits, hearth_error_t *err) {
    int rc = hearth__config_read(caller, CONFIG_SIZE_0_2, config,
                                 sizeof *config, "hearth_server_config_t", err);
    if (rc)
        return rc;
    if (!config->host)
        config->host = "127.0.0.1";
    if (!config->data_dir)
        config->data_dir = "./hearth-data";
    if (!config->default_namespace)
        config->default_namespace = "default";
    if (!valid_namespace(config->default_namespace))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid default namespace \"%s\"",
                             config->default_namespace);
    if (!config->tls_cert_file != !config->tls_key_file)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "TLS needs both a certificate file and a key "
                             "file (only the %s is given)",
                             config->tls_cert_file ? "certificate" : "key");
    if (config->log_format < HEARTH_LOG_OFF || config->log_format > HEARTH_LOG_JSON)
        return hearth__error(err, HEARTH_EINVAL, NULL, "unknown log format %d",
                             (int)config->log_format);
    /* Refused before anything is made or bound. */
    if (config->cluster) {
        int rc = hearth__keeper_cluster_check(config, err);
        if (rc)
            return rc;
    }
    if (config->retain_ms < 0)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "retain_ms must be 0 or more, not %lld",
                             (long long)config->retain_ms);
    if (config->metrics_port < 0 || config->metrics_port > 65535)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid metrics port %d",
                             config->metrics_port);
    if (config->auth_secret && !*config->auth_secret)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "the auth secret must not be empty");
    if (config->admin_secret && strlen(config->admin_secret) < 16)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "the admin secret must be at least 16 characters");
    if (config->port < 0 || config->port > 65535)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid port %d",
                             config->port);
    const char *ph = config->public_host;
    if (ph && (!*ph || strlen(ph) > 255 || ph[strcspn(ph, " /?#@\\\"")] ||
               !hearth__utf8_valid(ph, strlen(ph))))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid public host \"%.64s\" (a host name or "
                             "address, with an optional :port)",
                             ph);
    for (const char *c = ph; c && *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7F)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "invalid public host (a control character)");
    return http_limits(config, limits, err) ? HEARTH_EINVAL : 0;
}

/* *dst = a copy of src (NULL stays NULL); false when memory runs out. */
static bool copy_string(char **dst, const char *src) {
    return !src || (*dst = hearth__strndup(src, strlen(src))) != NULL;
}

/* The server's struct with the config's settings and strings copied (the
 * caller's may go once hearth_server_start returns), in a data directory
 * that exists. */
static int new_server(const hearth_server_config_t *config,
                      hearth__server **out, hearth_error_t *err) {
    const char *dir = config->data_dir;
    if (mkdir(dir, 0755) && errno != EEXIST)
        return hearth__error(err, HEARTH_EIO, dir,
                             "cannot create data directory %s: %s", dir,
                             strerror(errno));
    hearth__server *srv = hearth__calloc(1, sizeof *srv);
    if (!srv)
        return hearth__error_code(err, HEARTH_ENOMEM);
    srv->fsync_mode = config->fsync_mode;
    srv->retain_ms = config->retain_ms;
    srv->no_triggers = config->no_triggers;
    srv->log_format = config->log_format;
    srv->cluster_insecure = config->cluster_insecure;
    atomic_init(&srv->namespace_idle_ms, NAMESPACE_IDLE_MS);
    const char *node = config->cluster && !config->node ? "" : config->node;
    if (!copy_string(&srv->data_dir, dir) ||
        !copy_string(&srv->default_namespace, config->default_namespace) ||
        !copy_string(&srv->auth_secret, config->auth_secret) ||
        !copy_string(&srv->admin_secret, config->admin_secret) ||
        !copy_string(&srv->rules_file, config->rules_file) ||
        !copy_string(&srv->auth_audience, config->auth_audience) ||
        !copy_string(&srv->auth_issuer, config->auth_issuer) ||
        !copy_string(&srv->cluster_urls, config->cluster) ||
        (config->cluster && !copy_string(&srv->node, node)) ||
        !copy_string(&srv->cluster_secret_file, config->cluster_secret_file) ||
        !copy_string(&srv->nats_creds_file, config->nats_creds_file) ||
        !copy_string(&srv->nats_nkey_file, config->nats_nkey_file) ||
        !copy_string(&srv->nats_user_file, config->nats_user_file) ||
        !copy_string(&srv->nats_token_file, config->nats_token_file) ||
        !copy_string(&srv->nats_ca_file, config->nats_ca_file) ||
        !copy_string(&srv->nats_cert_file, config->nats_cert_file) ||
        !copy_string(&srv->nats_key_file, config->nats_key_file) ||
        !copy_string(&srv->tls_cert_file, config->tls_cert_file) ||
        !copy_string(&srv->tls_key_file, config->tls_key_file) ||
        !copy_string(&srv->public_host, config->public_host) ||
        !copy_string(&srv->triggers_file, config->triggers_file) ||
        !copy_string(&srv->triggers_json, config->triggers_json)) {
        free_server(srv);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    *out = srv;
    return 0;
}

/* The token keys and the rules file the config names, read now so that a
 * bad file fails the start, naming it. */
static int load_keys_and_rules(hearth__server *srv,
                               const hearth_server_config_t *config,
                               hearth_error_t *err) {
    int keys_rc = hearth__auth_keys_open(srv, config, err);
    if (keys_rc)
        return keys_rc;
    if (!config->rules_file)
        return 0;
    size_t len;
    char *text = hearth__read_file(config->rules_file, HEARTH__MAX_RULES_FILE, &len);
    int rc = text ? hearth__rules_parse(text, len, &srv->rules_override, err)
                  : hearth__error(err, HEARTH_EIO, config->rules_file,
                                  "cannot read rules file %s: %s",
                                  config->rules_file, strerror(errno));
    hearth__free(text);
    return rc;
}

/* The loop and its listeners: the port (with TLS when configured) and the
 * metrics port. On failure the loop is closed again. */
static int open_listeners(hearth__server *srv,
                          const hearth_server_config_t *config,
                          const hearth__http_limits *limits,
                          hearth_error_t *err) {
    hearth__tls_config *tls = NULL;
    int rc = config->tls_cert_file
                 ? hearth__tls_config_load(config->tls_cert_file,
                                           config->tls_key_file, &tls, err)
                 : 0;
    if (rc)
        return rc;
    if (uv_loop_init(&srv->loop)) {
        hearth__tls_config_free(tls);
        return hearth__error_code(err, HEARTH_ELOOP);
    }
    rc = hearth__http_listen(&srv->loop, config->host, config->port, limits,
                             hearth__rest_handle, srv, &srv->http, err);
    if (rc) {
        hearth__tls_config_free(tls);
        uv_run(&srv->loop, UV_RUN_DEFAULT); /* lets the listener close */
        uv_loop_close(&srv->loop);
        return rc;
    }
    hearth__http_set_tls(srv->http, tls);
    hearth__http_set_head_handler(srv->http, hearth__rest_head);
    hearth__http_set_observer(srv->http, hearth__observe_http);
    if (config->metrics_port &&
        (rc = hearth__http_listen(&srv->loop, "127.0.0.1", config->metrics_port,
                                  limits, hearth__metrics_handle, srv,
                                  &srv->metrics_http, err))) {
        hearth__http_close(srv->http, NULL, NULL);
        uv_run(&srv->loop, UV_RUN_DEFAULT); /* lets both close */
        uv_loop_close(&srv->loop);
        return rc;
    }
    return 0;
}

/* The loop's own handles: stop, keep-alive pings, token expiry, and the
 * rules file's watch. */
static void start_handles(hearth__server *srv) {
    uv_async_init(&srv->loop, &srv->stop, on_stop);
    srv->stop.data = srv;
    uv_timer_init(&srv->loop, &srv->keepalive);
    srv->keepalive.data = srv;
    uv_timer_start(&srv->keepalive, on_keepalive, KEEPALIVE_MS, KEEPALIVE_MS);
    uv_timer_init(&srv->loop, &srv->expiry);
    srv->expiry.data = srv;
    uv_timer_start(&srv->expiry, on_expiry, EXPIRY_CHECK_MS, EXPIRY_CHECK_MS);
    hearth__auth_keys_start(srv->auth_keys);
    if (srv->rules_file) {
        uv_fs_poll_init(&srv->loop, &srv->rules_poll);
        srv->rules_poll.data = srv;
        uv_fs_poll_start(&srv->rules_poll, hearth__server_rules_file_changed, srv->rules_file,
                         RULES_POLL_MS);
    }
}

/* Starts the loop's thread and waits until it has opened the default
 * namespace, so a damaged data directory is reported at start rather than
 * on the first request. On failure the loop is closed and srv freed. */
static int run_thread(hearth__server *srv, hearth_error_t *err) {
    uv_sem_init(&srv->started, 0);
    hearth__thread_prepare();
    if (uv_thread_create(&srv->thread, run, srv)) {
        on_stop(&srv->stop);
        uv_run(&srv->loop, UV_RUN_DEFAULT);
        uv_loop_close(&srv->loop);
        uv_sem_destroy(&srv->started);
        free_server(srv);
        return hearth__error_code(err, HEARTH_ELOOP);
    }
    uv_sem_wait(&srv->started);
    uv_sem_destroy(&srv->started);
    int rc = srv->start_rc;
    if (rc) {
        if (err)
            *err = srv->start_err;
        uv_thread_join(&srv->thread);
        uv_loop_close(&srv->loop);
        free_server(srv);
    }
    return rc;
}

int hearth_server_start(const hearth_server_config_t *caller_config,
                        hearth_server_t **out, hearth_error_t *err) {
    if (!caller_config || !out)
        return hearth__error(err, HEARTH_EINVAL, NULL, "invalid argument");
    hearth_server_config_t config;
    hearth__http_limits limits;
    int rc = read_config(caller_config, &config, &limits, err);
    if (rc)
        return rc;
    /* A client that goes away before its reply would otherwise kill the
     * whole process with SIGPIPE on the next write: failed writes must be
     * errors. Left alone if the program chose a disposition itself. */
    struct sigaction pipe_action;
    if (sigaction(SIGPIPE, NULL, &pipe_action) == 0 &&
        pipe_action.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
    hearth__server *srv = NULL;
    if ((rc = new_server(&config, &srv, err)))
        return rc;
    if ((rc = load_keys_and_rules(srv, &config, err)) ||
        (rc = open_listeners(srv, &config, &limits, err))) {
        free_server(srv);
        return rc;
    }
    start_handles(srv);
    if ((rc = run_thread(srv, err)))
        return rc;
    *out = (hearth_server_t *)srv;
    return 0;
}

int hearth_server_metrics_port(const hearth_server_t *server) {
    const hearth__server *srv = (const hearth__server *)server;
    return srv->metrics_http ? hearth__http_port(srv->metrics_http) : 0;
}

int hearth_server_port(const hearth_server_t *server) {
    return hearth__http_port(((const hearth__server *)server)->http);
}

int hearth_server_reload_tls(hearth_server_t *server, hearth_error_t *err) {
    hearth__server *srv = (hearth__server *)server;
    if (!srv || !srv->tls_cert_file)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "the server was started without TLS");
    hearth__tls_config *tls;
    int rc = hearth__tls_config_load(srv->tls_cert_file, srv->tls_key_file,
                                     &tls, err);
    if (rc)
        return rc;
    hearth__http_set_tls(srv->http, tls);
    /* (From the caller's thread: the log line is one write, never torn.) */
    hearth__log_event(srv, "tls_reload", srv->tls_cert_file);
    return 0;
}

int hearth_server_reload_auth_keys(hearth_server_t *server, hearth_error_t *err) {
    hearth__server *srv = (hearth__server *)server;
    if (!srv)
        return hearth__error(err, HEARTH_EINVAL, NULL, "no server");
    return srv->auth_keys ? hearth__auth_keys_reload(srv->auth_keys, err) : 0;
}

char *hearth_server_auth_keys_status(hearth_server_t *server) {
    return server ? hearth__auth_keys_status(((hearth__server *)server)->auth_keys)
                  : NULL;
}

int hearth_server_stop(hearth_server_t *server) {
    if (!server)
        return HEARTH_EINVAL;
    hearth__server *srv = (hearth__server *)server;
    uv_async_send(&srv->stop);
    uv_thread_join(&srv->thread);
    int rc = uv_loop_close(&srv->loop) ? HEARTH_ELOOP : 0;
    free_server(srv);
    return rc;
}
