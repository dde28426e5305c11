/*
 * access.h - who a request is, and whether a namespace's rules let it
 * read or write (the REST door; the realtime and streaming doors follow).
 */
#ifndef HEARTH_SERVER_ACCESS_H
#define HEARTH_SERVER_ACCESS_H

#include "server/server.h"

typedef struct hearth__principal {
    bool admin;          /* the admin credential: the rules do not apply */
    hearth_node_t *auth; /* the rules' auth, NULL when unauthenticated */
    int64_t expires_ms;  /* the token's exp (Unix ms); 0: never */
    const char *door;    /* "rest" or "realtime" (static): denial traces */
} hearth__principal;

/* Whether a principal's token has expired at now_ms. */
static inline bool hearth__principal_expired(const hearth__principal *p,
                                             int64_t now_ms) {
    return p->expires_ms > 0 && now_ms >= p->expires_ms;
}

/* From the Authorization header or the auth= / access_token= parameter,
 * and auth_variable_override (an admin evaluated as that user). false
 * with *why when a token does not verify. */
bool hearth__principal_of(const hearth__server *srv,
                          const hearth__http_request *req, const char *token,
                          const char *override, hearth__principal *out,
                          char *why, size_t why_size);
/* A token (realtime auth) as the server's principal: the admin
 * credential ("owner", or the configured admin secret) is the admin. false with *why (and *expired) when it does not verify. */
bool hearth__principal_of_token(const hearth__server *srv, const char *token,
                                hearth__principal *out, bool *expired,
                                char *why, size_t why_size);
void hearth__principal_clear(hearth__principal *p);

/* Who a principal's writes are judged as: NULL for the admin (the rules
 * do not apply), else *buf filled with its auth. */
static inline const hearth__db_caller *
hearth__principal_caller(const hearth__principal *p, hearth__db_caller *buf) {
    if (p->admin)
        return NULL;
    *buf = (hearth__db_caller){.auth = p->auth, .door = p->door};
    return buf;
}

/* The judge of every network write of a namespace (hearth__db_set_judge,
 * ctx the namespace): its rules as they are when the write is applied. */
bool hearth__ns_judge(void *ctx, const hearth_node_t *auth, const char *door,
                      const hearth__path *const *paths, size_t n,
                      const hearth_node_t *old_root,
                      const hearth_node_t *new_root, double now);

bool hearth__ns_may_read(hearth__namespace *ns, const hearth__principal *p,
                         const char *path, const hearth_node_t *query);
/* The same for what the caller is shown beside an answer (a write's
 * echo): a refusal there refuses nothing, so it is not traced. */
bool hearth__ns_may_see(hearth__namespace *ns, const hearth__principal *p,
                        const char *path);
/* A dry run of a write of n (path, value) parts as one operation (for
 * onDisconnect writes as they are queued; the write itself is judged
 * again when applied); values may hold server values (resolved as the
 * write would be). Malformed parts are refused. */
bool hearth__ns_may_write(hearth__namespace *ns, const hearth__principal *p,
                          const char *const *paths,
                          const hearth_node_t *const *values, size_t n);

/* The same for an update: obj maps paths relative to base to values (as
 * JSON). Malformed parts are refused (callers validate first, to answer
 * them as malformed). */
struct json_t;
bool hearth__ns_may_update(hearth__namespace *ns, const hearth__principal *p,
                           const char *base, struct json_t *obj);

/* The rules playground: the same three checks, saying in *why (NULL: not
 * asked) which rule decided (rules/ruleset.h); nothing is written. */
struct hearth__rule_why;
bool hearth__ns_explain_read(hearth__namespace *ns, const hearth__principal *p,
                             const char *path, const hearth_node_t *query,
                             struct hearth__rule_why *why);
bool hearth__ns_explain_write(hearth__namespace *ns,
                              const hearth__principal *p,
                              const char *const *paths,
                              const hearth_node_t *const *values, size_t n,
                              struct hearth__rule_why *why);
bool hearth__ns_explain_update(hearth__namespace *ns,
                               const hearth__principal *p, const char *base,
                               struct json_t *obj,
                               struct hearth__rule_why *why);

#endif
