/* access.c - principals and rule checks for requests (see access.h). */
#include "server/access.h"

#include "rules/jwt.h"
#include "server/auth_keys.h"
#include "rules/ruleset.h"
#include "server/inspect.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <string.h>
#include <strings.h>

/* The admin's credential: the configured secret (compared in constant
 * time). The emulator's well-known "owner" only in emulator mode (no keys
 * configured): a server that checks signatures has no admin over the
 * network without an admin secret. */
static bool is_admin_credential(const hearth__server *srv, const char *token) {
    if (!srv->admin_secret)
        return !hearth__server_has_keys(srv) && !strcmp(token, "owner");
    size_t a = strlen(token), b = strlen(srv->admin_secret);
    return a == b && CRYPTO_memcmp(token, srv->admin_secret, a) == 0;
}

bool hearth__principal_of_token(const hearth__server *srv, const char *token,
                                hearth__principal *out, bool *expired,
                                char *why, size_t why_size) {
    memset(out, 0, sizeof *out);
    out->door = "realtime";
    *expired = false;
    if (is_admin_credential(srv, token)) {
        out->admin = true;
        return true;
    }
    /* With keys, tokens must be signed with one of them; else the
     * emulator's unsigned tokens. */
    hearth__jwt_keys keys = {srv->auth_secret,
                             srv->auth_secret ? strlen(srv->auth_secret) : 0,
                             !hearth__server_has_keys(srv), srv->auth_audience,
                             srv->auth_issuer, hearth__auth_keys_file_set(srv->auth_keys)};
    hearth__jwt_checks checks = {hearth__auth_keys_url_set(srv->auth_keys),
                                 srv->firebase, false};
    hearth_error_t err = {0};
    if (hearth__jwt_verify_checked(token, strlen(token), &keys, &checks,
                                   (double)hearth_now_ms(), &out->auth, &err)) {
        snprintf(why, why_size, "%s", err.message);
        *expired = strstr(err.message, "expired") != NULL;
        /* Keys may have rotated since the last fetch. */
        if (checks.unknown_kid)
            hearth__auth_keys_unknown_kid(srv->auth_keys);
        return false;
    }
    /* Held streams and sessions end when the token does. */
    const hearth_node_t *exp = NULL;
    if (!hearth_node_get(out->auth, "token/exp", &exp, NULL) && exp &&
        hearth_node_type(exp) == HEARTH_TYPE_NUMBER)
        out->expires_ms = (int64_t)(hearth_node_number_value(exp) * 1000);
    return true;
}

bool hearth__principal_of(const hearth__server *srv,
                          const hearth__http_request *req, const char *token,
                          const char *override, hearth__principal *out,
                          char *why, size_t why_size) {
    memset(out, 0, sizeof *out);
    out->door = "rest";
    const char *header = hearth__http_get_header(req, "authorization");
    if (header && !strncasecmp(header, "Bearer ", 7)) {
        if (is_admin_credential(srv, header + 7))
            out->admin = true;
        else if (!token)
            token = header + 7;
    }
    if (out->admin) {
        if (override) {
            /* An admin asking to be evaluated as a given user. */
            hearth_node_t *as = NULL;
            if (hearth_node_from_json(override, (size_t)-1, 0, &as, NULL)) {
                snprintf(why, why_size, "auth_variable_override is not valid data");
                return false;
            }
            out->admin = false;
            out->auth = hearth_node_is_null(as) ? NULL : as;
            if (!out->auth)
                hearth_node_decref(as);
        }
        return true;
    }
    if (!token)
        return true; /* unauthenticated */
    bool expired;
    bool ok = hearth__principal_of_token(srv, token, out, &expired, why,
                                         why_size);
    out->door = "rest";
    return ok;
}

void hearth__principal_clear(hearth__principal *p) {
    hearth_node_decref(p->auth);
    p->auth = NULL;
    p->expires_ms = 0;
}

/* A read check; a real refusal (not the playground's question, nor a
 * look that refuses nothing) is traced when the admin asked. */
static bool read_check(hearth__namespace *ns, const hearth__principal *p,
                       const char *path, const hearth_node_t *query,
                       hearth__rule_why *why, bool refusal_traced) {
    if (why)
        memset(why, 0, sizeof *why);
    if (p->admin)
        return true;
    hearth__path parsed;
    /* A node's .priority is read with the node. */
    if (!ns->ruleset ||
        hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &parsed, NULL))
        return false;
    hearth__access a = {p->auth, (double)hearth_now_ms(),
                        hearth__db_root(ns->db), query};
    bool ok = hearth__ruleset_explain_read(ns->ruleset, &parsed, &a, why);
    if (!ok && refusal_traced)
        hearth__inspect_read_denied(ns->srv, ns, p, path, query);
    return ok;
}

bool hearth__ns_explain_read(hearth__namespace *ns, const hearth__principal *p,
                             const char *path, const hearth_node_t *query,
                             hearth__rule_why *why) {
    return read_check(ns, p, path, query, why, why == NULL);
}

bool hearth__ns_may_see(hearth__namespace *ns, const hearth__principal *p,
                        const char *path) {
    return read_check(ns, p, path, NULL, NULL, false);
}

bool hearth__ns_may_read(hearth__namespace *ns, const hearth__principal *p,
                         const char *path, const hearth_node_t *query) {
    return hearth__ns_explain_read(ns, p, path, query, NULL);
}

bool hearth__ns_judge(void *ctx, const hearth_node_t *auth, const char *door,
                      const hearth__path *const *paths, size_t n,
                      const hearth_node_t *old_root,
                      const hearth_node_t *new_root, double now) {
    hearth__namespace *ns = ctx;
    hearth__access a = {auth, now, old_root, NULL};
    bool ok = ns->ruleset &&
              hearth__ruleset_can_write(ns->ruleset, paths, n, new_root, &a);
    if (!ok) /* traced when the admin asked (inspect.c), else nothing */
        hearth__inspect_write_denied(ns->srv, ns, door, auth, paths, n,
                                     old_root, new_root, now);
    return ok;
}

bool hearth__ns_explain_write(hearth__namespace *ns,
                              const hearth__principal *p,
                              const char *const *paths,
                              const hearth_node_t *const *values, size_t n,
                              hearth__rule_why *why) {
    if (why)
        memset(why, 0, sizeof *why);
    if (p->admin)
        return true;
    if (n > 64)
        return false;
    const hearth_node_t *root = hearth__db_root(ns->db);
    hearth_node_t *after = hearth_node_incref(root);
    hearth__path parsed[64];
    const hearth__path *ptrs[64];
    int64_t now = hearth_now_ms();
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        ok = !hearth__path_parse(paths[i], HEARTH__PATH_ALLOW_PRIORITY, &parsed[i], NULL);
        ptrs[i] = &parsed[i];
        const hearth_node_t *existing = NULL;
        hearth_node_t *resolved = NULL;
        if (ok)
            ok = !hearth_node_get(root, paths[i], &existing, NULL) &&
                 !hearth__node_resolve_sv(values[i], existing, now, &resolved) &&
                 !hearth_node_set(&after, paths[i], resolved, NULL);
        hearth_node_decref(resolved);
    }
    hearth__access a = {p->auth, (double)now, root, NULL};
    ok = ok && ns->ruleset &&
         hearth__ruleset_explain_write(ns->ruleset, ptrs, n, after, &a, why);
    hearth_node_decref(after);
    return ok;
}

bool hearth__ns_may_write(hearth__namespace *ns, const hearth__principal *p,
                          const char *const *paths,
                          const hearth_node_t *const *values, size_t n) {
    return hearth__ns_explain_write(ns, p, paths, values, n, NULL);
}

bool hearth__ns_explain_update(hearth__namespace *ns,
                               const hearth__principal *p, const char *base,
                               json_t *obj, hearth__rule_why *why) {
    if (why)
        memset(why, 0, sizeof *why);
    if (p->admin)
        return true;
    hearth__update_parts u;
    bool ok = !hearth__update_parts_from_json(base, obj, &u, NULL) && u.n <= 64;
    char *paths[64];
    size_t k = 0;
    for (; ok && k < u.n; k++) {
        hearth__buf b;
        hearth__buf_init(&b);
        hearth__buf_printf(&b, "%s/%s", strcmp(base, "/") ? base : "", u.paths[k]);
        ok = (paths[k] = hearth__buf_detach(&b, NULL)) != NULL;
    }
    /* Malformed parts are refused here too (hearth__ns_may_write parses
     * every path): nothing unjudged passes. */
    ok = ok && hearth__ns_explain_write(ns, p, (const char *const *)paths,
                                        (const hearth_node_t *const *)u.values,
                                        u.n, why);
    for (size_t i = 0; i < k; i++)
        hearth__free(paths[i]);
    hearth__update_parts_free(&u);
    return ok;
}

bool hearth__ns_may_update(hearth__namespace *ns, const hearth__principal *p,
                           const char *base, json_t *obj) {
    return hearth__ns_explain_update(ns, p, base, obj, NULL);
}
