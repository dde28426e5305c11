/* registry.c - a trigger's registration, checked and parsed. */
#include "triggers/internal.h"

#include <string.h>
#include <unistd.h>

#define TYPE_PREFIX "google.firebase.database.ref.v1."

static const struct {
    const char *name;
    int mask;
} EVENTS[] = {{"written", HEARTH__TRIGGER_WRITTEN},
              {"created", HEARTH__TRIGGER_CREATED},
              {"updated", HEARTH__TRIGGER_UPDATED},
              {"deleted", HEARTH__TRIGGER_DELETED}};

static const char *const TYPES[] = {
    TYPE_PREFIX "written", TYPE_PREFIX "created", TYPE_PREFIX "updated",
    TYPE_PREFIX "deleted"};

static const char *const FIELDS[] = {
    "name",        "ref",          "path",         "event",
    "instance",    "namespace",    "url",          "format",
    "secret",      "max_attempts", "timeout_ms",   "retry_min_ms",
    "retry_max_ms"};

void hearth__trigger_release(hearth__trigger *t) {
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    if (t->q)
        hearth__tqueue_put(t->q);
    hearth__pattern_free(&t->ref);
    hearth__pattern_free(&t->instance);
    hearth__url_free(&t->to);
    hearth__free(t->name);
    hearth__free(t->url);
    hearth__free(t->secret);
    hearth__free(t->origin);
    json_decref(t->spec);
    uv_mutex_destroy(&t->mu);
    uv_cond_destroy(&t->cond);
    hearth__free(t);
}

/* A string member (NULL when absent); false when present but not one. */
static bool string_field(json_t *spec, const char *key, const char **out) {
    json_t *v = json_object_get(spec, key);
    *out = v ? json_string_value(v) : NULL;
    return !v || *out;
}

static int int_field(json_t *spec, const char *key, int lo, int hi, int dflt,
                     int *out, const char *who, hearth_error_t *err) {
    json_t *v = json_object_get(spec, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo ||
        json_integer_value(v) > hi)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "trigger \"%s\": \"%s\" must be an integer "
                             "from %d to %d",
                             who, key, lo, hi);
    *out = (int)json_integer_value(v);
    return 0;
}

/* A registration names only fields it may have. */
static int check_fields(json_t *spec, const char *who, hearth_error_t *err) {
    const char *key;
    json_t *v;
    json_object_foreach(spec, key, v) {
        bool known = false;
        for (size_t i = 0; i < sizeof FIELDS / sizeof *FIELDS; i++)
            known |= strcmp(key, FIELDS[i]) == 0;
        if (!known)
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "trigger \"%s\": unknown field \"%.64s\" "
                                 "(the fields are name, ref, event, "
                                 "instance, url, format, secret, "
                                 "max_attempts, timeout_ms, retry_min_ms, "
                                 "retry_max_ms)",
                                 who, key);
    }
    return 0;
}

/* The event it fires on (written when none), the body's format and
 * whether a secret may sign it. */
static int parse_kind(hearth__trigger *t, const char *event,
                      const char *format, const char *secret, const char *who,
                      hearth_error_t *err) {
    const char *ename = event ? event : "written";
    if (strncmp(ename, TYPE_PREFIX, strlen(TYPE_PREFIX)) == 0)
        ename += strlen(TYPE_PREFIX);
    for (size_t i = 0; i < 4; i++)
        if (strcmp(ename, EVENTS[i].name) == 0) {
            t->mask = EVENTS[i].mask;
            t->type = TYPES[i];
        }
    if (!t->mask)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "trigger \"%s\": unknown event \"%.64s\" (written, "
                             "created, updated or deleted)",
                             who, event);
    if (!format || strcmp(format, "cloudevent") == 0)
        t->format = HEARTH__FORMAT_CLOUDEVENT;
    else if (strcmp(format, "webhook") == 0)
        t->format = HEARTH__FORMAT_WEBHOOK;
    else
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "trigger \"%s\": unknown format \"%.64s\" "
                             "(cloudevent or webhook)",
                             who, format);
    if (secret && t->format != HEARTH__FORMAT_WEBHOOK)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "trigger \"%s\": a secret signs webhooks only "
                             "(\"format\": \"webhook\")",
                             who);
    return 0;
}

static int parse_into(hearth__trigger *t, json_t *spec, const char *who,
                      hearth_error_t *err) {
    int rc = check_fields(spec, who, err);
    if (rc)
        return rc;
    const char *ref, *path, *event, *instance, *ns, *url, *format, *secret;
    if (!string_field(spec, "ref", &ref) || !string_field(spec, "path", &path) ||
        !string_field(spec, "event", &event) ||
        !string_field(spec, "instance", &instance) ||
        !string_field(spec, "namespace", &ns) ||
        !string_field(spec, "url", &url) ||
        !string_field(spec, "format", &format) ||
        !string_field(spec, "secret", &secret))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "trigger \"%s\": ref, event, instance, url, "
                             "format and secret must be strings",
                             who);
    if (!ref)
        ref = path;
    if (!ref)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "trigger \"%s\": no \"ref\" (the path pattern, "
                             "such as \"/messages/{id}\")",
                             who);
    if (!instance)
        instance = ns ? ns : "*";
    if (!url)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "trigger \"%s\": no \"url\" (the endpoint that "
                             "receives its events)",
                             who);
    hearth_error_t perr;
    rc = hearth__pattern_parse(ref, &t->ref, &perr);
    if (!rc && (rc = hearth__pattern_parse(instance, &t->instance, &perr)) == 0 &&
        (t->instance.n != 1 || t->instance.segs[0].capture)) {
        rc = HEARTH_EINVAL;
        snprintf(perr.message, sizeof perr.message,
                 "the instance pattern \"%.64s\" must be one name, with '*' "
                 "for any characters",
                 instance);
    }
    if (rc)
        return hearth__error(err, rc, NULL, "trigger \"%s\": %s", who,
                             perr.message);
    if ((rc = parse_kind(t, event, format, secret, who, err)))
        return rc;
    if ((rc = hearth__url_parse(url, HEARTH__URL_HTTP | HEARTH__URL_HTTPS,
                                 "URL", &t->to, &perr)))
        return hearth__error(err, rc, NULL, "trigger \"%s\": %s", who,
                             perr.message);
    if ((rc = int_field(spec, "max_attempts", 1, 1000, 20, &t->max_attempts,
                        who, err)) ||
        (rc = int_field(spec, "timeout_ms", 100, 3600000, 60000,
                        &t->timeout_ms, who, err)) ||
        (rc = int_field(spec, "retry_min_ms", 1, 3600000, 100,
                        &t->retry_min_ms, who, err)) ||
        (rc = int_field(spec, "retry_max_ms", 1, 3600000, 30000,
                        &t->retry_max_ms, who, err)))
        return rc;
    if (t->retry_max_ms < t->retry_min_ms)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "trigger \"%s\": retry_max_ms is less than "
                             "retry_min_ms",
                             who);
    t->url = hearth__strndup(url, strlen(url));
    t->secret = secret ? hearth__strndup(secret, strlen(secret)) : NULL;
    t->spec = json_deep_copy(spec);
    if (!t->url || (secret && !t->secret) || !t->spec)
        return hearth__error_code(err, HEARTH_ENOMEM);
    if (secret)
        json_object_set_new(t->spec, "secret", json_string("(hidden)"));
    return 0;
}

int hearth__trigger_parse(const char *name, json_t *spec, const char *origin,
                          hearth__trigger **out, hearth_error_t *err) {
    if (!json_is_object(spec))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "a trigger's registration must be a JSON object");
    const char *given = json_string_value(json_object_get(spec, "name"));
    if (json_object_get(spec, "name") && !given)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "a trigger's \"name\" must be a string");
    if (name && given && strcmp(name, given) != 0)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "the trigger's \"name\" (\"%.64s\") differs from "
                             "the one in the URL (\"%.64s\")",
                             given, name);
    if (!name)
        name = given;
    if (!name || !hearth__plain_name(name, 64))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "a trigger needs a \"name\" of 1 to 64 letters, "
                             "digits, '-' and '_' (got \"%.64s\")",
                             name ? name : "");
    hearth__trigger *t = hearth__calloc(1, sizeof *t);
    if (!t)
        return hearth__error_code(err, HEARTH_ENOMEM);
    atomic_init(&t->refs, 1);
    uv_mutex_init(&t->mu);
    uv_cond_init(&t->cond);
    t->stop_pipe[0] = t->stop_pipe[1] = -1;
    t->name = hearth__strndup(name, strlen(name));
    t->origin = hearth__strndup(origin, strlen(origin));
    int rc = t->name && t->origin ? parse_into(t, spec, name, err)
                                  : hearth__error_code(err, HEARTH_ENOMEM);
    if (!rc && !json_object_get(t->spec, "name"))
        json_object_set_new(t->spec, "name", json_string(name));
    if (rc) {
        hearth__trigger_release(t);
        return rc;
    }
    *out = t;
    return 0;
}
