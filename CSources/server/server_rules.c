/* server_rules.c - each namespace's rules document: where it comes from
 * (the keeper's, --rules FILE, the namespace's rules.json, the default),
 * adopting a changed one (from the keeper, or the rules file changing on
 * disk), and the indexes its ".indexOn" asks for. */
#include "server/server.h"

#include "server/log.h"
#include "server/realtime.h"
#include "query/index.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Indexes per namespace: a rule under a $wildcard can ask for one per
 * matching location; past this, queries scan. */
#define MAX_INDEXES 256

/* A new namespace's rules: open as the emulator runs when tokens need no
 * keys (development), locked as the service starts when they do. */
static const char OPEN_RULES[] =
    "{\"rules\": {\".read\": true, \".write\": true}}";
static const char LOCKED_RULES[] =
    "{\"rules\": {\".read\": false, \".write\": false}}";


/* ---- rules documents (stored beside each namespace's data) ---- */

static bool index_lists(const json_t *index_on, const char *child) {
    if (json_is_string(index_on))
        return strcmp(json_string_value(index_on), child) == 0;
    size_t i;
    json_t *v;
    json_array_foreach(index_on, i, v) {
        if (json_is_string(v) && strcmp(json_string_value(v), child) == 0)
            return true;
    }
    return false;
}

/* Walks the rules down the path; a "$wildcard" matches any key. */
static const json_t *rules_at(const json_t *node, const char *const *keys,
                              size_t nkeys) {
    for (size_t i = 0; node && i < nkeys; i++) {
        const json_t *next = json_object_get(node, keys[i]);
        if (!next) {
            const char *k;
            json_t *v;
            json_object_foreach((json_t *)node, k, v) {
                if (k[0] == '$') {
                    next = v;
                    break;
                }
            }
        }
        node = next;
    }
    return node;
}

bool hearth__rules_indexed(const json_t *rules, const char *const *keys,
                           size_t nkeys, const char *child) {
    const json_t *at = rules_at(json_object_get(rules, "rules"), keys, nkeys);
    return at && index_lists(json_object_get(at, ".indexOn"), child);
}

/* ---- indexes ---- */

struct hearth__index *hearth__ns_index_for(hearth__namespace *ns,
                                           const char *path,
                                           const hearth_query_t *q) {
    for (size_t i = 0; i < ns->nindexes; i++)
        if (strcmp(ns->indexes[i].path, path) == 0 &&
            strcmp(ns->indexes[i].child, q->child_path) == 0)
            return ns->indexes[i].index;
    if (ns->nindexes == MAX_INDEXES)
        return NULL;
    hearth__ns_index *grown =
        hearth__realloc(ns->indexes, (ns->nindexes + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    ns->indexes = grown;
    hearth__ns_index entry = {
        hearth__strndup(path, strlen(path)),
        hearth__strndup(q->child_path, strlen(q->child_path)), NULL};
    if (!entry.path || !entry.child || hearth__index_create(q, &entry.index)) {
        hearth__free(entry.path);
        hearth__free(entry.child);
        return NULL;
    }
    ns->indexes[ns->nindexes++] = entry;
    return entry.index;
}

void hearth__ns_drop_indexes(hearth__namespace *ns) {
    for (size_t i = 0; i < ns->nindexes; i++) {
        hearth__free(ns->indexes[i].path);
        hearth__free(ns->indexes[i].child);
        hearth__index_free(ns->indexes[i].index);
    }
    hearth__free(ns->indexes);
    ns->indexes = NULL;
    ns->nindexes = 0;
}

int hearth__ns_set_rules_source(hearth__namespace *ns, json_t *doc,
                                const char *text, size_t len,
                                hearth_error_t *err) {
    hearth__ruleset *rs;
    int rc = hearth__ruleset_compile_source(doc, text, len, &rs, err);
    if (rc) {
        json_decref(doc);
        return rc;
    }
    json_decref(ns->rules);
    hearth__ruleset_free(ns->ruleset);
    ns->rules = doc;
    ns->ruleset = rs;
    return 0;
}

int hearth__ns_set_rules(hearth__namespace *ns, json_t *doc,
                         hearth_error_t *err) {
    return hearth__ns_set_rules_source(ns, doc, NULL, 0, err);
}

/* Adopts the rules document text for ns. */
static int set_rules_text(hearth__namespace *ns, const char *text,
                          hearth_error_t *err) {
    json_t *doc = NULL;
    int rc = hearth__rules_parse(text, strlen(text), &doc, err);
    return rc ? rc
              : hearth__ns_set_rules_source(ns, doc, text, strlen(text), err);
}

/* The document the keeper holds comes first (a cluster's, set for every
 * node); then --rules FILE; then DATA/NAME/rules.json; then the
 * default. */
int hearth__ns_load_rules(hearth__server *srv, hearth__namespace *ns,
                          hearth_error_t *err) {
    const char *kept = srv->keeper->ops->rules_of(srv->keeper, ns->name);
    if (kept)
        return set_rules_text(ns, kept, err);
    if (srv->rules_override)
        return hearth__ns_set_rules(ns, json_incref(srv->rules_override), err);
    char path[1024];
    snprintf(path, sizeof path, "%s/rules.json", ns->dir);
    size_t len;
    char *text = hearth__read_file(path, HEARTH__MAX_RULES_FILE, &len);
    if (!text && errno != ENOENT) /* stored but unreadable: never open up */
        return hearth__error(err, HEARTH_EIO, path, "cannot read rules %s: %s",
                             path, strerror(errno));
    json_t *doc = NULL;
    const char *def = hearth__server_has_keys(srv) ? LOCKED_RULES : OPEN_RULES;
    const char *source = text ? text : def; /* none stored: default */
    size_t source_len = text ? len : strlen(def);
    int rc = hearth__rules_parse(source, source_len, &doc, err);
    if (!rc)
        rc = hearth__ns_set_rules_source(ns, doc, source, source_len, err);
    hearth__free(text);
    return rc;
}

/* A namespace's rules changed in its keeper (set by the admin here, or
 * through another node of a cluster, or removed there): adopted where it
 * is open here; what they no longer let read ends. A namespace not open
 * here takes them when it opens. */
void hearth__server_kept_rules(void *ctx, const char *name, const char *text) {
    hearth__server *srv = ctx;
    for (size_t i = 0; i < srv->nnamespaces; i++) {
        hearth__namespace *ns = srv->namespaces[i];
        if (strcmp(ns->name, name) != 0)
            continue;
        hearth_error_t err;
        if (text ? set_rules_text(ns, text, &err) : hearth__ns_load_rules(srv, ns, &err)) {
            hearth__log(HEARTH_LOG_WARNING, "rules of %s not taken: %s; the rules "
                    "in force stay", name, err.message);
            return;
        }
        hearth__ns_drop_indexes(ns);
        hearth__sse_recheck(srv, ns);
        hearth__realtime_recheck(srv, ns);
        return;
    }
}

/* The rules file changed: every namespace takes the new document, and
 * what it no longer allows ends; a document that does not check leaves
 * the rules in force. */
/* What happened to the rules file: the line it always was on stderr, or
 * with logs on, an event among them (one JSON line in json). */
static void rules_note(hearth__server *srv, const char *event,
                       const char *text) {
    if (srv->log_format == HEARTH_LOG_OFF)
        hearth__log(HEARTH_LOG_WARNING, "%s", text);
    else
        hearth__log_event(srv, event, text);
}

void hearth__server_rules_file_changed(uv_fs_poll_t *poll, int status,
                                      const uv_stat_t *prev,
                                      const uv_stat_t *now) {
    (void)prev;
    (void)now;
    hearth__server *srv = poll->data;
    char note[600];
    if (status < 0) {
        snprintf(note, sizeof note, "rules file %s: %s; the rules in force stay",
                 srv->rules_file, uv_strerror(status));
        rules_note(srv, "rules_not_reloaded", note);
        return;
    }
    size_t len;
    char *text = hearth__read_file(srv->rules_file, HEARTH__MAX_RULES_FILE, &len);
    json_t *doc = NULL;
    hearth_error_t err;
    int rc = text ? hearth__rules_parse(text, len, &doc, &err)
                  : hearth__error(&err, HEARTH_EIO, NULL, "cannot read it: %s",
                                  strerror(errno));
    hearth__free(text);
    if (rc) {
        snprintf(note, sizeof note,
                 "rules file %s not reloaded: %s; the rules in force stay",
                 srv->rules_file, err.message);
        rules_note(srv, "rules_not_reloaded", note);
        return;
    }
    for (size_t i = 0; i < srv->nnamespaces; i++) {
        hearth__namespace *ns = srv->namespaces[i];
        if (srv->keeper->ops->rules_of(srv->keeper, ns->name))
            continue; /* the keeper's document comes first */
        if (hearth__ns_set_rules(ns, json_incref(doc), &err))
            continue; /* not reached: checked by hearth__rules_parse */
        hearth__ns_drop_indexes(ns);
        hearth__sse_recheck(srv, ns);
        hearth__realtime_recheck(srv, ns);
    }
    json_decref(srv->rules_override);
    srv->rules_override = doc;
    snprintf(note, sizeof note, "rules reloaded from %s", srv->rules_file);
    rules_note(srv, "rules_reload", note);
}
