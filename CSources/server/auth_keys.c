/* auth_keys.c - token keys from a file and a URL, kept current (see
 * auth_keys.h). The loop owns the key sets; a fetch runs on a thread of
 * its own and hands its outcome back through a mutex-guarded slot and a
 * uv_async wake-up, as does a reload asked from another thread. */
#include "server/auth_keys.h"
#include "os/os.h"

#include "net/https_get.h"
#include "server/log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

enum {
    MAX_KEYS_BYTES = 1 << 20,         /* Google's document is ~4 kB */
    FETCH_DEADLINE_MS = 10 * 1000,    /* a whole fetch, connect to last byte */
    UNKNOWN_KID_GAP_MS = 5 * 1000,    /* unknown kids refetch at most this often */
    MIN_REFRESH_MS = 2 * 1000,        /* even with max-age=0 or no-cache */
    DEFAULT_REFRESH_MS = 3600 * 1000, /* no max-age */
    MAX_REFRESH_MS = 24 * 3600 * 1000,
    EARLY_MS_MAX = 300 * 1000,        /* refresh this long before max-age ends */
    RETRY_MIN_MS = 2 * 1000,          /* after a failure, doubling */
    RETRY_MAX_MS = 300 * 1000,
    FILE_POLL_MS = 1000,
};

/* A fetch's outcome, from its thread to the loop. */
typedef struct fetched {
    int rc;
    hearth__jwt_keyset *set; /* rc 0: the new set (taken over) */
    int64_t max_age_s;       /* -1: none said */
    char why[320];
} fetched;

struct hearth__auth_keys {
    hearth__server *srv;
    char *file, *url;
    int cancel[2]; /* a byte written to [1] stops a fetch in flight */
    /* ---- the loop's ---- */
    hearth__jwt_keyset *file_set, *url_set;
    uv_timer_t refresh;
    uv_async_t wake;
    uv_fs_poll_t poll;
    bool started, stopped, in_flight;
    uv_thread_t thread;
    uint64_t last_fetch_ms; /* uv_now of the last fetch's start, 0: none */
    uint64_t first_delay_ms; /* the first fetch's (made before the loop) */
    unsigned failures;       /* fetches failed in a row */
    /* ---- shared with other threads, under lock ---- */
    uv_mutex_t lock;
    bool closed;               /* the wake-up is gone */
    bool result_ready;
    fetched result;
    hearth__jwt_keyset *pending_file; /* a reload's set for the loop */
    bool refetch_asked;
    size_t file_count, url_count;
    char url_kids[256];
    char file_error[320], url_error[320]; /* "": none */
    int64_t file_loaded_at, url_fetched_at, url_next_at; /* wall ms, 0: never */
    uint64_t fetch_ok, fetch_failed, file_ok, file_failed;
    uint64_t unknown_kid, unknown_kid_fetches;
};

/* A line on stderr, or in the event log when logs are on. */
static void note(hearth__auth_keys *ak, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(hearth__auth_keys *ak, const char *event, const char *fmt, ...) {
    char text[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (ak->srv->log_format == HEARTH_LOG_OFF)
        hearth__log(HEARTH_LOG_WARNING, "%s", text);
    else
        hearth__log_event(ak->srv, event, text);
}

/* ---- fetching (on the fetch's thread, or before the loop runs) ---- */

static void fetch_now(hearth__auth_keys *ak, fetched *f) {
    memset(f, 0, sizeof *f);
    hearth__https_limits limits = {MAX_KEYS_BYTES, FETCH_DEADLINE_MS, ak->cancel[0]};
    hearth__https_result r;
    f->rc = hearth__https_get(ak->url, &limits, &r);
    f->max_age_s = r.max_age_s;
    if (f->rc) {
        snprintf(f->why, sizeof f->why, "%s", r.error);
    } else {
        hearth_error_t err;
        f->rc = hearth__jwt_keyset_parse(r.body, r.len, &f->set, &err);
        if (f->rc)
            snprintf(f->why, sizeof f->why, "not a key set: %s", err.message);
    }
    hearth__https_result_free(&r);
}

static void fetch_thread(void *arg) {
    hearth__auth_keys *ak = arg;
    fetched f;
    fetch_now(ak, &f);
    uv_mutex_lock(&ak->lock);
    ak->result = f;
    ak->result_ready = true;
    uv_mutex_unlock(&ak->lock);
    /* The loop joins this thread before it closes the wake-up. */
    uv_async_send(&ak->wake);
}

/* When to fetch again: before max-age runs out (by a tenth of it, at most
 * EARLY_MS_MAX), else after a failure with a doubling back-off. */
static uint64_t next_delay_ms(const hearth__auth_keys *ak, const fetched *f) {
    if (f->rc) {
        uint64_t d = RETRY_MIN_MS;
        for (unsigned i = 1; i < ak->failures && d < RETRY_MAX_MS; i++)
            d *= 2;
        return d < RETRY_MAX_MS ? d : RETRY_MAX_MS;
    }
    if (f->max_age_s < 0)
        return DEFAULT_REFRESH_MS;
    uint64_t age = f->max_age_s > MAX_REFRESH_MS / 1000 ? MAX_REFRESH_MS
                                                       : (uint64_t)f->max_age_s * 1000;
    uint64_t early = age / 10 < EARLY_MS_MAX ? age / 10 : EARLY_MS_MAX;
    if (early < 1000)
        early = 1000;
    uint64_t d = age > early ? age - early : 0;
    return d < MIN_REFRESH_MS ? MIN_REFRESH_MS : d;
}

/* The kids of set, comma-separated, into out. */
static void kids_of(const hearth__jwt_keyset *set, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < hearth__jwt_keyset_count(set) && used < size; i++) {
        const char *kid = hearth__jwt_keyset_kid(set, i);
        int n = snprintf(out + used, size - used, "%s%s", i ? "," : "",
                         kid ? kid : "(none)");
        used += n > 0 ? (size_t)n : 0;
    }
}

static void on_refresh(uv_timer_t *t);

/* Adopts a fetch's outcome: a good set replaces the last; a failure keeps
 * it, said once per run of failures. Arms the next fetch. */
static void adopt(hearth__auth_keys *ak, fetched *f) {
    hearth__jwt_keyset *old = NULL;
    bool recovered = false, first_failure = false;
    size_t count;
    if (!f->rc)
        ak->failures = 0;
    else
        ak->failures++;
    uint64_t delay = next_delay_ms(ak, f);
    uv_mutex_lock(&ak->lock);
    if (!f->rc) {
        old = ak->url_set;
        ak->url_set = f->set;
        f->set = NULL;
        ak->url_count = hearth__jwt_keyset_count(ak->url_set);
        kids_of(ak->url_set, ak->url_kids, sizeof ak->url_kids);
        recovered = ak->url_error[0] != '\0';
        ak->url_error[0] = '\0';
        ak->url_fetched_at = hearth_now_ms();
        ak->fetch_ok++;
    } else {
        first_failure = ak->failures == 1;
        snprintf(ak->url_error, sizeof ak->url_error, "%s", f->why);
        ak->fetch_failed++;
    }
    count = ak->url_count;
    ak->url_next_at = hearth_now_ms() + (int64_t)delay;
    uv_mutex_unlock(&ak->lock);
    hearth__jwt_keyset_free(old);
    if (recovered)
        note(ak, "auth_keys_fetched", "token keys fetched again from %s (%zu keys)",
             ak->url, count);
    if (first_failure)
        note(ak, "auth_keys_fetch_failed",
             "token keys from %s: %s; %s; retrying in %llu s (backing off "
             "to %d s)", ak->url, f->why,
             count ? "the last good keys stay in force" : "no keys yet",
             (unsigned long long)(delay / 1000), RETRY_MAX_MS / 1000);
    if (ak->started && !ak->stopped)
        uv_timer_start(&ak->refresh, on_refresh, delay, 0);
    else
        ak->first_delay_ms = delay;
}

static void start_fetch(hearth__auth_keys *ak) {
    if (!ak->url || ak->in_flight || ak->stopped)
        return;
    ak->in_flight = true;
    ak->last_fetch_ms = uv_now(&ak->srv->loop);
    if (uv_thread_create(&ak->thread, fetch_thread, ak)) {
        ak->in_flight = false;
        fetched f = {.rc = HEARTH_ELOOP, .max_age_s = -1};
        snprintf(f.why, sizeof f.why, "cannot start a thread to fetch");
        adopt(ak, &f);
    }
}

/* ---- the loop's side ---- */

static void on_refresh(uv_timer_t *t) { start_fetch(t->data); }


/* A fetch's outcome, a reload's file, a reload's refetch. */
static void on_wake(uv_async_t *a) {
    hearth__auth_keys *ak = a->data;
    uv_mutex_lock(&ak->lock);
    bool ready = ak->result_ready, refetch = ak->refetch_asked;
    fetched f = ak->result;
    hearth__jwt_keyset *file_set = ak->pending_file;
    ak->result_ready = ak->refetch_asked = false;
    ak->pending_file = NULL;
    memset(&ak->result, 0, sizeof ak->result);
    uv_mutex_unlock(&ak->lock);
    if (file_set) {
        hearth__jwt_keyset_free(ak->file_set);
        ak->file_set = file_set;
    }
    if (ready) {
        uv_thread_join(&ak->thread);
        ak->in_flight = false;
        adopt(ak, &f);
        hearth__jwt_keyset_free(f.set); /* only when not adopted */
    }
    if (refetch)
        start_fetch(ak);
}

/* Reads and parses the file (any thread): 0 with *out, or the error. */
static int read_file(hearth__auth_keys *ak, hearth__jwt_keyset **out,
                     hearth_error_t *err) {
    int rc = hearth__jwt_keyset_load(ak->file, out, err);
    uv_mutex_lock(&ak->lock);
    if (rc) {
        ak->file_failed++;
        snprintf(ak->file_error, sizeof ak->file_error, "%s", err->message);
    } else {
        ak->file_ok++;
        ak->file_error[0] = '\0';
        ak->file_count = hearth__jwt_keyset_count(*out);
        ak->file_loaded_at = hearth_now_ms();
    }
    uv_mutex_unlock(&ak->lock);
    return rc;
}

static void on_file_changed(uv_fs_poll_t *p, int status, const uv_stat_t *prev,
                            const uv_stat_t *now) {
    HEARTH__UNUSED(prev);
    HEARTH__UNUSED(now);
    hearth__auth_keys *ak = p->data;
    hearth__jwt_keyset *set = NULL;
    hearth_error_t err;
    int rc = status < 0 ? hearth__error(&err, HEARTH_EIO, NULL, "key file %s: %s",
                                        ak->file, uv_strerror(status))
                        : read_file(ak, &set, &err);
    if (rc) {
        note(ak, "auth_keys_not_reloaded", "%s; the keys in force stay", err.message);
        return;
    }
    hearth__jwt_keyset_free(ak->file_set);
    ak->file_set = set;
    note(ak, "auth_keys_reload", "token keys reloaded from %s (%zu keys)", ak->file,
         hearth__jwt_keyset_count(set));
}

const hearth__jwt_keyset *hearth__auth_keys_file_set(const hearth__auth_keys *ak) {
    return ak ? ak->file_set : NULL;
}

const hearth__jwt_keyset *hearth__auth_keys_url_set(const hearth__auth_keys *ak) {
    return ak ? ak->url_set : NULL;
}

void hearth__auth_keys_unknown_kid(hearth__auth_keys *ak) {
    if (!ak)
        return;
    uint64_t now = uv_now(&ak->srv->loop);
    bool go = ak->url && !ak->in_flight && !ak->stopped &&
              (!ak->last_fetch_ms || now - ak->last_fetch_ms >= UNKNOWN_KID_GAP_MS);
    uv_mutex_lock(&ak->lock);
    ak->unknown_kid++;
    ak->unknown_kid_fetches += go;
    uv_mutex_unlock(&ak->lock);
    if (go)
        start_fetch(ak);
}

/* ---- life ---- */

/* The firebase_project settings: issuer, audience, key URL. */
static int firebase_settings(hearth__server *srv, const hearth_server_config_t *c,
                             const char **url, hearth_error_t *err) {
    const char *id = c->firebase_project;
    size_t len = strlen(id);
    if (!len || len > 128 || id[strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-")])
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid Firebase project id \"%.64s\" (lower-case "
                             "letters, digits and '-')", id);
    char issuer[200];
    snprintf(issuer, sizeof issuer, "https://securetoken.google.com/%s", id);
    if (c->auth_issuer && strcmp(c->auth_issuer, issuer))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "the auth issuer \"%.64s\" is not the Firebase "
                             "project's (%s)", c->auth_issuer, issuer);
    if (c->auth_audience && strcmp(c->auth_audience, id))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "the auth audience \"%.64s\" is not the Firebase "
                             "project id (%s)", c->auth_audience, id);
    char *iss = hearth__strndup(issuer, strlen(issuer)), *aud = hearth__strndup(id, len);
    if (!iss || !aud) {
        hearth__free(iss);
        hearth__free(aud);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    hearth__free(srv->auth_issuer);
    hearth__free(srv->auth_audience);
    srv->auth_issuer = iss;
    srv->auth_audience = aud;
    srv->firebase = true;
    if (!*url)
        *url = HEARTH__FIREBASE_KEYS_URL;
    return 0;
}

int hearth__auth_keys_open(hearth__server *srv, const hearth_server_config_t *config,
                           hearth_error_t *err) {
    const char *url = config->auth_keys_url;
    int rc = config->firebase_project ? firebase_settings(srv, config, &url, err) : 0;
    if (rc)
        return rc;
    if (url && (rc = hearth__https_url_check(url, err))) {
        char why[sizeof err->message];
        snprintf(why, sizeof why, "%s", err ? err->message : "");
        return hearth__error(err, rc, NULL, "auth keys URL: %s", why);
    }
    if (!url && !config->auth_keys_file)
        return 0;
    hearth__auth_keys *ak = hearth__calloc(1, sizeof *ak);
    if (!ak)
        return hearth__error_code(err, HEARTH_ENOMEM);
    ak->srv = srv;
    ak->cancel[0] = ak->cancel[1] = -1;
    uv_mutex_init(&ak->lock);
    srv->auth_keys = ak; /* freed with the server from here on */
    if ((config->auth_keys_file &&
         !(ak->file = hearth__strndup(config->auth_keys_file,
                                      strlen(config->auth_keys_file)))) ||
        (url && !(ak->url = hearth__strndup(url, strlen(url)))))
        return hearth__error_code(err, HEARTH_ENOMEM);
    if (hearth__os_pipe(ak->cancel))
        return hearth__error(err, HEARTH_EIO, NULL, "pipe: %s", strerror(errno));
    if (ak->file && (rc = read_file(ak, &ak->file_set, err)))
        return rc;
    if (ak->url) {
        fetched f;
        fetch_now(ak, &f);
        adopt(ak, &f);
        hearth__jwt_keyset_free(f.set);
    }
    return 0;
}

void hearth__auth_keys_start(hearth__auth_keys *ak) {
    if (!ak)
        return;
    uv_loop_t *loop = &ak->srv->loop;
    uv_async_init(loop, &ak->wake, on_wake);
    ak->wake.data = ak;
    uv_timer_init(loop, &ak->refresh);
    ak->refresh.data = ak;
    ak->started = true;
    if (ak->url) {
        ak->last_fetch_ms = uv_now(loop);
        uv_timer_start(&ak->refresh, on_refresh, ak->first_delay_ms, 0);
    }
    if (ak->file) {
        uv_fs_poll_init(loop, &ak->poll);
        ak->poll.data = ak;
        uv_fs_poll_start(&ak->poll, on_file_changed, ak->file, FILE_POLL_MS);
    }
}

void hearth__auth_keys_stop(hearth__auth_keys *ak) {
    if (!ak || !ak->started || ak->stopped)
        return;
    ak->stopped = true;
    uv_mutex_lock(&ak->lock);
    ak->closed = true;
    uv_mutex_unlock(&ak->lock);
    if (ak->in_flight) {
        ssize_t n = write(ak->cancel[1], "x", 1);
        HEARTH__UNUSED(n); /* a full pipe is a byte already there */
        uv_thread_join(&ak->thread);
        ak->in_flight = false;
    }
    uv_timer_stop(&ak->refresh);
    uv_close((uv_handle_t *)&ak->refresh, NULL);
    uv_close((uv_handle_t *)&ak->wake, NULL);
    if (ak->file) {
        uv_fs_poll_stop(&ak->poll);
        uv_close((uv_handle_t *)&ak->poll, NULL);
    }
}

void hearth__auth_keys_free(hearth__auth_keys *ak) {
    if (!ak)
        return;
    for (int i = 0; i < 2; i++)
        if (ak->cancel[i] >= 0)
            close(ak->cancel[i]);
    hearth__jwt_keyset_free(ak->file_set);
    hearth__jwt_keyset_free(ak->url_set);
    hearth__jwt_keyset_free(ak->result.set);
    hearth__jwt_keyset_free(ak->pending_file);
    uv_mutex_destroy(&ak->lock);
    hearth__free(ak->file);
    hearth__free(ak->url);
    hearth__free(ak);
}

int hearth__auth_keys_reload(hearth__auth_keys *ak, hearth_error_t *err) {
    hearth__jwt_keyset *set = NULL;
    int rc = ak->file ? read_file(ak, &set, err) : 0;
    if (rc)
        note(ak, "auth_keys_not_reloaded", "%s; the keys in force stay", err->message);
    uv_mutex_lock(&ak->lock);
    bool open = !ak->closed;
    if (open && set) {
        hearth__jwt_keyset_free(ak->pending_file);
        ak->pending_file = set;
        set = NULL;
    }
    ak->refetch_asked |= open && ak->url;
    if (open)
        uv_async_send(&ak->wake);
    uv_mutex_unlock(&ak->lock);
    hearth__jwt_keyset_free(set);
    return rc;
}

/* ---- what it says ---- */

char *hearth__auth_keys_status(hearth__auth_keys *ak) {
    json_t *doc = json_object(), *file = NULL, *url = NULL;
    if (ak) {
        uv_mutex_lock(&ak->lock);
        int64_t now = hearth_now_ms();
        if (ak->file)
            file = json_pack("{s:s,s:I,s:s?}", "path", ak->file, "keys",
                             (json_int_t)ak->file_count, "error",
                             ak->file_error[0] ? ak->file_error : NULL);
        if (ak->url)
            url = json_pack("{s:s,s:I,s:s,s:I,s:I,s:s?,s:I}", "url", ak->url, "keys",
                            (json_int_t)ak->url_count, "kids", ak->url_kids,
                            "fetched_ms_ago",
                            (json_int_t)(ak->url_fetched_at ? now - ak->url_fetched_at : -1),
                            "next_fetch_ms", (json_int_t)(ak->url_next_at - now),
                            "error", ak->url_error[0] ? ak->url_error : NULL,
                            "failures", (json_int_t)ak->fetch_failed);
        uv_mutex_unlock(&ak->lock);
        json_object_set_new(doc, "firebase", json_boolean(ak->srv->firebase));
    }
    json_object_set_new(doc, "file", file ? file : json_null());
    json_object_set_new(doc, "url", url ? url : json_null());
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    char *out = text ? hearth__strndup(text, strlen(text)) : NULL;
    free(text); /* jansson's allocation */
    return out;
}

void hearth__auth_keys_metrics(hearth__auth_keys *ak, hearth__buf *out) {
    if (!ak)
        return;
    uv_mutex_lock(&ak->lock);
    hearth__buf_printf(
        out,
        "# HELP hearth_auth_keys Public keys for RS256/ES256 tokens in force, by "
        "source (file, url).\n# TYPE hearth_auth_keys gauge\n"
        "hearth_auth_keys{source=\"file\"} %zu\nhearth_auth_keys{source=\"url\"} %zu\n"
        "# HELP hearth_auth_keys_fetches_total Fetches of the key URL, by result "
        "(a failed one keeps the last good keys).\n"
        "# TYPE hearth_auth_keys_fetches_total counter\n"
        "hearth_auth_keys_fetches_total{result=\"ok\"} %llu\n"
        "hearth_auth_keys_fetches_total{result=\"failed\"} %llu\n"
        "# HELP hearth_auth_keys_file_reads_total Reads of the key file, by result "
        "(a failed one keeps the keys in force).\n"
        "# TYPE hearth_auth_keys_file_reads_total counter\n"
        "hearth_auth_keys_file_reads_total{result=\"ok\"} %llu\n"
        "hearth_auth_keys_file_reads_total{result=\"failed\"} %llu\n"
        "# HELP hearth_auth_keys_unknown_kid_total Tokens naming a key id no key "
        "set knows, and the fetches they started (at most one per %d s).\n"
        "# TYPE hearth_auth_keys_unknown_kid_total counter\n"
        "hearth_auth_keys_unknown_kid_total{fetched=\"yes\"} %llu\n"
        "hearth_auth_keys_unknown_kid_total{fetched=\"no\"} %llu\n"
        "# HELP hearth_auth_keys_fetch_failing Whether the last fetch of the key "
        "URL failed (the last good keys are in force).\n"
        "# TYPE hearth_auth_keys_fetch_failing gauge\n"
        "hearth_auth_keys_fetch_failing %d\n",
        ak->file_count, ak->url_count, (unsigned long long)ak->fetch_ok,
        (unsigned long long)ak->fetch_failed, (unsigned long long)ak->file_ok,
        (unsigned long long)ak->file_failed, UNKNOWN_KID_GAP_MS / 1000,
        (unsigned long long)ak->unknown_kid_fetches,
        (unsigned long long)(ak->unknown_kid - ak->unknown_kid_fetches),
        ak->url_error[0] != '\0');
    uv_mutex_unlock(&ak->lock);
}
