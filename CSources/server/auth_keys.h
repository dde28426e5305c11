/*
 * auth_keys.h - the server's public keys for RS256/ES256 tokens, kept
 * current by themselves: a file (config auth_keys_file), read again when it
 * changes and on hearth_server_reload_auth_keys (SIGHUP), and a URL
 * (auth_keys_url, or Google's for firebase_project), fetched over HTTPS on
 * a thread of its own, again before its Cache-Control max-age runs out,
 * and at most once per UNKNOWN_KID_GAP when a token names a key id no set
 * knows. A file that does not parse or a fetch that fails keeps the last
 * good set (said once on stderr or in the log, counted in /.metrics); only
 * a good one replaces it. The sets are swapped on the server's loop, where
 * every token is verified, so no verification sees one being freed.
 */
#ifndef HEARTH_SERVER_AUTH_KEYS_H
#define HEARTH_SERVER_AUTH_KEYS_H

#include "rules/jwt.h"
#include "server/server.h"

typedef struct hearth__auth_keys hearth__auth_keys;

/* Google's certificates for Firebase Auth ID tokens (kid -> PEM). */
#define HEARTH__FIREBASE_KEYS_URL                                              \
    "https://www.googleapis.com/robot/v1/metadata/x509/"                       \
    "securetoken@system.gserviceaccount.com"

/* The token settings of config on srv (before its loop runs): with
 * firebase_project, the issuer, audience and key URL it implies (an
 * auth_audience or auth_issuer that differs is an error); then the key
 * file, read now (one that cannot be used fails the start, named), and
 * the URL's first fetch, made now on the caller's thread within the fetch
 * deadline (a failure does not fail the start: the server retries, and
 * hearth_server_auth_keys_status says so). Sets srv->auth_keys (NULL when
 * neither a file nor a URL is configured), srv->firebase, and the
 * audience and issuer. */
int hearth__auth_keys_open(hearth__server *srv,
                           const hearth_server_config_t *config,
                           hearth_error_t *err);
/* Starts the watch, the refresh timer and the wake-up on srv's loop
 * (before it runs, on the thread that made it). */
void hearth__auth_keys_start(hearth__auth_keys *ak);
/* On the loop, when the server stops: cancels a fetch in flight (waiting
 * for its thread) and closes the handles. */
void hearth__auth_keys_stop(hearth__auth_keys *ak);
/* After the loop has ended (or when it never started). NULL is fine. */
void hearth__auth_keys_free(hearth__auth_keys *ak);

/* The file's set and the URL's last good set (NULL: none). Loop only. */
const hearth__jwt_keyset *hearth__auth_keys_file_set(const hearth__auth_keys *ak);
const hearth__jwt_keyset *hearth__auth_keys_url_set(const hearth__auth_keys *ak);
/* A token named a kid no set knows (loop): fetches the URL again unless
 * it did within UNKNOWN_KID_GAP or a fetch is in flight. */
void hearth__auth_keys_unknown_kid(hearth__auth_keys *ak);

/* Reads the file again now, on the caller's thread, and asks the loop to
 * fetch the URL again; any thread. A file that cannot be used is an error
 * naming it, and the keys in force stay. */
int hearth__auth_keys_reload(hearth__auth_keys *ak, hearth_error_t *err);
/* The state as JSON text (hearth_free it): for the start banner. Any
 * thread. */
char *hearth__auth_keys_status(hearth__auth_keys *ak);
/* Its counters and gauges for GET /.metrics (loop). NULL writes nothing. */
void hearth__auth_keys_metrics(hearth__auth_keys *ak, hearth__buf *out);

#endif
