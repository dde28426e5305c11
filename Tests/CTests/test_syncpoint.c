/* test_syncpoint.c - the client's event engine against the shared
 * scenarios (../shared/conformance/syncPointSpec.json, format in its
 * NOTICE.md): each scenario drives a fresh sync tree through listens,
 * local writes, server data and acknowledgements, and every step must
 * raise exactly the listed events (per registration path, in order; data
 * compared by node hash). The test prints how many scenarios pass; any
 * scenario that fails or cannot run fails the test, with its name. */
#include "test.h"

#include "sync/sync.h"

#include <jansson.h>

typedef struct seen {
    size_t listener; /* which registration */
    char *path;
    hearth_event_type type;
    char *key, *prev;
    char hash[HEARTH_HASH_SIZE];
    char *json;
} seen;

typedef struct recorder {
    seen ev[512];
    size_t n;
} recorder;

typedef struct listener {
    recorder *rec;
    size_t index;
    hearth__reg *reg;
    char *path;
    char *identity;
    long long callback;
} listener;

typedef struct scenario {
    hearth__sync sync;
    recorder rec;
    listener ls[64];
    size_t nls;
    long long tags[64][2]; /* spec tag -> ours */
    size_t ntags;
    int64_t next_write;
    hearth_observer_t next_handle;
    char why[4096];
} scenario;

static void on_event(const hearth_event_t *e, void *ctx) {
    struct listener *l = ctx;
    recorder *r = l->rec;
    if (r->n == HEARTH__ARRAY_SIZE(r->ev))
        return;
    seen *s = &r->ev[r->n++];
    s->listener = l->index;
    s->path = strdup(e->path);
    s->type = e->type;
    s->key = e->key ? strdup(e->key) : NULL;
    s->prev = e->prev_key ? strdup(e->prev_key) : NULL;
    hearth_node_hash(e->node, s->hash);
    s->json = hearth_node_to_json(e->node, HEARTH_JSON_EXPORT, NULL);
}

static void recorder_clear(recorder *r) {
    for (size_t i = 0; i < r->n; i++) {
        free(r->ev[i].path);
        free(r->ev[i].key);
        free(r->ev[i].prev);
        hearth_free(r->ev[i].json);
    }
    r->n = 0;
}

/* "a/b", "/a/b" and "" name locations; events use "/a/b" and "/". */
static void canonical(const char *in, char *out, size_t size) {
    hearth__path p;
    if (hearth__path_parse(in, HEARTH__PATH_ALLOW_PRIORITY, &p, NULL)) {
        snprintf(out, size, "?%s", in);
        return;
    }
    hearth__path_format(&p, p.n, out, size);
    if (!out[0])
        snprintf(out, size, "/");
}

static hearth_node_t *node_of(const json_t *j) {
    char *text = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    hearth_node_t *n = NULL;
    if (text)
        hearth_node_from_json(text, (size_t)-1, 0, &n, NULL);
    free(text);
    return n;
}

static const char *type_name(hearth_event_type t) {
    static const char *names[] = {"child_added", "child_removed",
                                  "child_changed", "child_moved", "value"};
    return names[t];
}

static int query_of(const json_t *params, hearth_query_t **out, char *why,
                    size_t size) {
    *out = NULL;
    if (!params)
        return 0;
    hearth_query_t *q;
    hearth_query_create(&q);
    int rc = 0;
    const json_t *v;
    if ((v = json_object_get(params, "orderByKey")) && json_is_true(v))
        rc = hearth_query_order_by_key(q, NULL);
    if (!rc && (v = json_object_get(params, "orderBy")))
        rc = hearth_query_order_by_child(q, json_string_value(v), NULL);
    static const struct {
        const char *name;
        int (*fn)(hearth_query_t *, const hearth_node_t *, const char *,
                  hearth_error_t *);
    } bounds[] = {{"startAt", hearth_query_start_at},
                  {"startAfter", hearth_query_start_after},
                  {"endAt", hearth_query_end_at},
                  {"endBefore", hearth_query_end_before},
                  {"equalTo", hearth_query_equal_to}};
    for (size_t i = 0; !rc && i < HEARTH__ARRAY_SIZE(bounds); i++) {
        const json_t *b = json_object_get(params, bounds[i].name);
        if (!b)
            continue;
        hearth_node_t *index = node_of(json_object_get(b, "index"));
        const json_t *name = json_object_get(b, "name");
        hearth_error_t err;
        rc = index ? bounds[i].fn(q, index, json_string_value(name), &err)
                   : HEARTH_EINVAL;
        if (rc)
            snprintf(why, size, "%s: %s", bounds[i].name,
                     index ? err.message : "bad index");
        hearth_node_decref(index);
    }
    if (!rc && (v = json_object_get(params, "limitToFirst")))
        rc = hearth_query_limit_to_first(q, (uint32_t)json_integer_value(v),
                                         NULL);
    if (!rc && (v = json_object_get(params, "limitToLast")))
        rc = hearth_query_limit_to_last(q, (uint32_t)json_integer_value(v),
                                        NULL);
    if (rc) {
        if (!why[0])
            snprintf(why, size, "query parameters refused (%d)", rc);
        hearth_query_free(q);
        return rc;
    }
    *out = q;
    return 0;
}

static int parse_path(scenario *s, const char *text, hearth__path *p) {
    int rc = hearth__path_parse(text ? text : "", HEARTH__PATH_ALLOW_PRIORITY,
                                p, NULL);
    if (rc)
        snprintf(s->why, sizeof s->why, "bad path \"%s\"", text);
    return rc;
}

static int step_listen(scenario *s, const json_t *step) {
    hearth__path p;
    const char *path = json_string_value(json_object_get(step, "path"));
    if (parse_path(s, path, &p))
        return -1;
    const json_t *params = json_object_get(step, "params");
    hearth_query_t *q;
    if (query_of(params, &q, s->why, sizeof s->why))
        return -1;
    /* The listener trie frees the registration. */
    hearth__reg *owned = hearth__calloc(1, sizeof *owned);
    owned->handle = ++s->next_handle;
    owned->mask = HEARTH_MASK_ALL;
    owned->cb = on_event;
    if (s->nls == HEARTH__ARRAY_SIZE(s->ls)) {
        snprintf(s->why, sizeof s->why, "too many listens");
        hearth__free(owned);
        hearth_query_free(q);
        return -1;
    }
    owned->ctx = &s->ls[s->nls];
    int64_t tag = 0;
    bool created;
    int rc = hearth__sync_listen(&s->sync, &p, q, owned, &tag, &created);
    char *identity = hearth__query_identity(q);
    hearth_query_free(q);
    if (rc) {
        snprintf(s->why, sizeof s->why, "listen failed (%d)", rc);
        hearth__free(identity);
        return -1;
    }
    const json_t *spec_tag = params ? json_object_get(params, "tag") : NULL;
    if (spec_tag && s->ntags < 64) {
        s->tags[s->ntags][0] = json_integer_value(spec_tag);
        s->tags[s->ntags][1] = tag;
        s->ntags++;
    }
    char where[1024];
    canonical(path ? path : "", where, sizeof where);
    s->ls[s->nls] = (listener){&s->rec, s->nls, owned, strdup(where), identity,
                                 json_integer_value(json_object_get(step, "callbackId"))};
    s->nls++;
    return 0;
}

static int step_unlisten(scenario *s, const json_t *step) {
    const char *path = json_string_value(json_object_get(step, "path"));
    char where[1024];
    canonical(path ? path : "", where, sizeof where);
    hearth_query_t *q;
    if (query_of(json_object_get(step, "params"), &q, s->why, sizeof s->why))
        return -1;
    char *identity = hearth__query_identity(q);
    hearth_query_free(q);
    long long cb = json_integer_value(json_object_get(step, "callbackId"));
    for (size_t i = 0; i < s->nls; i++) {
        listener *l = &s->ls[i];
        if (l->reg && strcmp(l->path, where) == 0 &&
            strcmp(l->identity, identity) == 0 && l->callback == cb) {
            bool gone;
            hearth__sync_unlisten(&s->sync, l->reg, &gone);
            l->reg = NULL;
            hearth__free(identity);
            return 0;
        }
    }
    hearth__free(identity);
    snprintf(s->why, sizeof s->why, "unlisten: no registration at %s", where);
    return -1;
}

static int64_t our_tag(scenario *s, const json_t *tag) {
    if (!tag)
        return 0;
    for (size_t i = 0; i < s->ntags; i++)
        if (s->tags[i][0] == json_integer_value(tag))
            return s->tags[i][1];
    return -1;
}

static hearth__ptree *merge_of(const json_t *data) {
    hearth__ptree *t = NULL;
    CHECK_INT(hearth__ptree_create(&t), 0);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)data, key, value) {
        hearth__path p;
        hearth_node_t *n = node_of(value);
        if (!n || hearth__path_parse(key, HEARTH__PATH_ALLOW_PRIORITY, &p, NULL)) {
            hearth_node_decref(n);
            hearth__ptree_free(t);
            return NULL;
        }
        hearth__spath sp;
        hearth__spath_from(&sp, &p);
        hearth__ptree_set(t, sp.seg, sp.n, n);
        hearth_node_decref(n);
    }
    return t;
}

static int step_write(scenario *s, const json_t *step, const char *type) {
    hearth__path p;
    if (parse_path(s, json_string_value(json_object_get(step, "path")), &p))
        return -1;
    const json_t *data = json_object_get(step, "data");
    int rc;
    if (!strcmp(type, "set") || !strcmp(type, "serverUpdate")) {
        hearth_node_t *n = node_of(data);
        if (!n) {
            snprintf(s->why, sizeof s->why, "bad data");
            return -1;
        }
        if (!strcmp(type, "set")) {
            const json_t *visible = json_object_get(step, "visible");
            rc = hearth__sync_user_set(&s->sync, &p, n, s->next_write++,
                                       !visible || json_is_true(visible));
        } else {
            int64_t tag = our_tag(s, json_object_get(step, "tag"));
            rc = tag < 0 ? HEARTH_ENOTFOUND
                         : hearth__sync_server_set(&s->sync, &p, n, tag);
        }
        hearth_node_decref(n);
    } else {
        hearth__ptree *m = merge_of(data);
        if (!m) {
            snprintf(s->why, sizeof s->why, "bad merge data");
            return -1;
        }
        if (!strcmp(type, "update")) {
            rc = hearth__sync_user_merge(&s->sync, &p, m, s->next_write++);
        } else {
            int64_t tag = our_tag(s, json_object_get(step, "tag"));
            rc = tag < 0 ? HEARTH_ENOTFOUND
                         : hearth__sync_server_merge(&s->sync, &p, m, tag);
            hearth__ptree_free(m);
        }
    }
    if (rc)
        snprintf(s->why, sizeof s->why, "%s failed (%d)", type, rc);
    return rc ? -1 : 0;
}

static bool same_str(const char *a, const json_t *b) {
    if (!b || json_is_null(b))
        return a == NULL;
    return a && json_is_string(b) && strcmp(a, json_string_value(b)) == 0;
}

static int type_rank(hearth_event_type t) {
    switch (t) {
    case HEARTH_EVENT_CHILD_REMOVED: return 0;
    case HEARTH_EVENT_CHILD_ADDED: return 1;
    case HEARTH_EVENT_CHILD_MOVED: return 2;
    case HEARTH_EVENT_CHILD_CHANGED: return 3;
    default: return 4;
    }
}

/* Whether raised event `got` is the expected event e. */
static bool event_matches(const seen *got, const json_t *e) {
    const char *type = json_string_value(json_object_get(e, "type"));
    if (!type || strcmp(type_name(got->type), type))
        return false;
    if (got->type != HEARTH_EVENT_VALUE) {
        if (!same_str(got->key, json_object_get(e, "name")))
            return false;
        if (got->type != HEARTH_EVENT_CHILD_REMOVED &&
            !same_str(got->prev, json_object_get(e, "prevName")))
            return false;
    }
    hearth_node_t *data = node_of(json_object_get(e, "data"));
    char hash[HEARTH_HASH_SIZE] = "";
    if (data)
        hearth_node_hash(data, hash);
    hearth_node_decref(data);
    return strcmp(hash, got->hash) == 0;
}

static void describe(const seen *x, char *out, size_t size) {
    snprintf(out, size, "%s %s prev=%s at %s: %s", type_name(x->type),
             x->key ? x->key : "-", x->prev ? x->prev : "-", x->path,
             x->json ? x->json : "?");
}

/* The expected events come in groups of one path; the raised events must
 * come in the same groups. Within a group each registration's events must
 * follow the type order (removed, added, moved, changed, value), and the
 * raised and expected events must pair up one to one. */
static int check_events(scenario *s, const json_t *want) {
    size_t nw = json_array_size(want), n = s->rec.n;
    char text[1024];
    if (nw != n) {
        snprintf(s->why, sizeof s->why, "%zu events raised, %zu expected", n,
                 nw);
        for (size_t j = 0; j < n; j++) {
            describe(&s->rec.ev[j], text, sizeof text);
            fprintf(stderr, "    raised: %s\n", text);
        }
        return -1;
    }
    bool *used = calloc(nw + 1, 1);
    int rc = 0;
    for (size_t start = 0; !rc && start < nw;) {
        char where[1024], other[1024];
        canonical(json_string_value(json_object_get(json_array_get(want, start),
                                                    "path")),
                  where, sizeof where);
        size_t end = start + 1;
        while (end < nw) {
            canonical(json_string_value(json_object_get(json_array_get(want, end),
                                                        "path")),
                      other, sizeof other);
            if (strcmp(other, where))
                break;
            end++;
        }
        for (size_t j = start; !rc && j < end; j++) {
            const seen *got = &s->rec.ev[j];
            describe(got, text, sizeof text);
            if (strcmp(got->path, where)) {
                snprintf(s->why, sizeof s->why,
                         "event %zu: expected one at %s, raised %s", j, where,
                         text);
                rc = -1;
                break;
            }
            for (size_t k = start; k < j; k++)
                if (s->rec.ev[k].listener == got->listener &&
                    type_rank(s->rec.ev[k].type) > type_rank(got->type)) {
                    snprintf(s->why, sizeof s->why,
                             "event %zu out of type order: %s", j, text);
                    rc = -1;
                }
            size_t m = start;
            while (m < end && (used[m] || !event_matches(got, json_array_get(want, m))))
                m++;
            if (!rc && m == end) {
                snprintf(s->why, sizeof s->why, "unexpected event %zu: %s", j,
                         text);
                rc = -1;
            } else if (!rc) {
                used[m] = true;
            }
        }
        start = end;
    }
    free(used);
    return rc;
}

static int run_step(scenario *s, const json_t *step) {
    const char *type = json_string_value(json_object_get(step, "type"));
    if (!type) {
        snprintf(s->why, sizeof s->why, "step without a type");
        return -1;
    }
    int rc;
    if (!strcmp(type, "suppressWarning"))
        return 0;
    if (!strcmp(type, "listen"))
        rc = step_listen(s, step);
    else if (!strcmp(type, "unlisten"))
        rc = step_unlisten(s, step);
    else if (!strcmp(type, "set") || !strcmp(type, "update") ||
             !strcmp(type, "serverUpdate") || !strcmp(type, "serverMerge"))
        rc = step_write(s, step, type);
    else if (!strcmp(type, "ackUserWrite")) {
        rc = hearth__sync_ack(&s->sync,
                              json_integer_value(json_object_get(step, "writeId")),
                              json_is_true(json_object_get(step, "revert")));
        if (rc)
            snprintf(s->why, sizeof s->why, "ack failed (%d)", rc);
    } else {
        snprintf(s->why, sizeof s->why, "unknown step type %s", type);
        return -1;
    }
    if (rc)
        return -1;
    hearth__events_raise(s->sync.events);
    rc = check_events(s, json_object_get(step, "events"));
    recorder_clear(&s->rec);
    return rc;
}

/* Runs one scenario; on failure fills why (with the step number). */
static bool run_scenario(const json_t *spec, char *why, size_t size) {
    scenario *s = calloc(1, sizeof *s);
    hearth__sync_init(&s->sync);
    const json_t *steps = json_object_get(spec, "steps");
    bool ok = json_array_size(steps) > 0;
    if (!ok)
        snprintf(why, size, "no steps");
    for (size_t i = 0; ok && i < json_array_size(steps); i++) {
        if (run_step(s, json_array_get(steps, i))) {
            snprintf(why, size, "step %zu: %s", i, s->why);
            ok = false;
        }
    }
    recorder_clear(&s->rec);
    hearth__sync_destroy(&s->sync);
    for (size_t i = 0; i < s->nls; i++) {
        free(s->ls[i].path);
        hearth__free(s->ls[i].identity);
    }
    free(s);
    return ok;
}

/* The scenarios, read once by the runner before it forks a child per
 * scenario (a global, so never counted as a leak). */
static json_t *spec_root;

static int spec_count(size_t *n) {
    if (!spec_root)
        spec_root = shared_json_array("conformance/syncPointSpec.json");
    *n = spec_root ? json_array_size(spec_root) : 0;
    return spec_root ? 0 : -1;
}

static const char *spec_name(size_t i) {
    const json_t *spec = json_array_get(spec_root, i);
    const char *name = json_string_value(json_object_get(spec, "name"));
    return name ? name : "(unnamed)";
}

static void spec_run(size_t i) {
    char why[4608] = "";
    if (!run_scenario(json_array_get(spec_root, i), why, sizeof why)) {
        fprintf(stderr, "  scenario %zu \"%s\": %s\n", i, spec_name(i), why);
        test_failures++;
    }
}

const test_table syncpoint_spec_table = {
    "conformance_sync_point_spec", spec_count, spec_name, spec_run,
};

/* ---- random operations, events checked against the data ---- */

typedef struct model {
    hearth_node_t *children; /* the view as its child events built it */
    int values;
    int mismatches;
    hearth_node_t *batch;    /* keys given an event in this batch */
    int repeats;             /* a key given two of added/removed/changed */
} model;

/* One batch raises at most one of added, removed, changed per child. */
static void note_key(model *m, const char *key) {
    if (!hearth_node_is_null(hearth_node_child(m->batch, key)))
        m->repeats++;
    hearth_node_set_child_new(&m->batch, key, hearth_node_boolean(true), NULL);
}

static void apply_event(const hearth_event_t *e, void *ctx) {
    model *m = ctx;
    switch (e->type) {
    case HEARTH_EVENT_CHILD_ADDED:
    case HEARTH_EVENT_CHILD_CHANGED:
        note_key(m, e->key);
        hearth_node_set_child_new(&m->children, e->key,
                                  hearth_node_incref(e->node), NULL);
        break;
    case HEARTH_EVENT_CHILD_REMOVED:
        note_key(m, e->key);
        hearth_node_set(&m->children, e->key, hearth__node_empty(), NULL);
        break;
    case HEARTH_EVENT_VALUE: {
        /* The children the events built are the value's. */
        hearth_node_t *bare = NULL;
        hearth_node_with_priority(e->node, hearth__node_empty(), &bare, NULL);
        if (!hearth_node_is_null(e->node) && hearth_node_type(e->node) != HEARTH_TYPE_OBJECT)
            break; /* a leaf: no children */
        if (!hearth_node_equal(bare, m->children))
            m->mismatches++;
        hearth_node_decref(bare);
        m->values++;
        break;
    }
    default:
        break;
    }
}

static uint64_t rng = 0x2545F4914F6CDD1DULL;
static unsigned roll(unsigned n) {
    return (unsigned)(test_rand(&rng) % n);
}

/* An object of up to 40 of 60 keys with small values. */
static hearth_node_t *random_object(void) {
    hearth_node_t *o = hearth_node_null();
    unsigned n = roll(41);
    for (unsigned i = 0; i < n; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%02u", roll(60));
        hearth_node_set_child_new(&o, key, hearth_node_number(roll(5)), NULL);
    }
    return o;
}

static void test_random_operations_keep_events_consistent(void) {
    for (int round = 0; round < 30; round++) {
        hearth__sync s;
        hearth__sync_init(&s);
        model m = {hearth_node_null(), 0, 0, hearth_node_null(), 0};
        hearth__path list;
        hearth__path_parse("/l", 0, &list, NULL);
        hearth__reg *reg = hearth__calloc(1, sizeof *reg);
        reg->handle = 1;
        reg->mask = HEARTH_MASK_ALL;
        reg->cb = apply_event;
        reg->ctx = &m;
        /* The default view, or a window over the list. */
        hearth_query_t *q = NULL;
        if (round % 3) {
            hearth_query_create(&q);
            if (round % 3 == 1) {
                hearth_query_order_by_key(q, NULL);
                hearth_query_limit_to_first(q, 20, NULL);
            } else {
                hearth_query_order_by_value(q, NULL);
                hearth_query_limit_to_last(q, 25, NULL);
            }
        }
        int64_t tag;
        bool created;
        CHECK_INT(hearth__sync_listen(&s, &list, q, reg, &tag, &created), 0);
        hearth_query_free(q);
        int64_t next_id = 0, acked = 0;
        for (int step = 0; step < 60; step++) {
            char child[16];
            snprintf(child, sizeof child, "/l/k%02u", roll(60));
            hearth__path one;
            hearth__path_parse(child, 0, &one, NULL);
            hearth_node_t *v = roll(3) ? hearth_node_number(roll(5)) : hearth_node_null();
            hearth_node_t *obj = random_object();
            switch (roll(6)) {
            case 0:
                /* Untagged data, or the window's own (tagged) data. */
                hearth__sync_server_set(&s, &list, obj, tag && roll(2) ? tag : 0);
                break;
            case 1: hearth__sync_server_set(&s, &one, v, 0); break;
            case 2: hearth__sync_user_set(&s, &list, obj, next_id++, true); break;
            case 3: hearth__sync_user_set(&s, &one, v, next_id++, true); break;
            case 4: {
                hearth__ptree *merge = NULL;
                CHECK_INT(hearth__ptree_create(&merge), 0);
                size_t count = hearth_node_child_count(obj);
                for (size_t i = 0; i < count; i++) {
                    const char *k;
                    const hearth_node_t *c = hearth_node_child_at(obj, i, &k);
                    hearth__name name;
                    hearth__name_init(&name, k, strlen(k));
                    hearth__ptree_set(merge, &name, 1, c);
                }
                if (roll(2)) {
                    hearth__sync_server_merge(&s, &list, merge, 0);
                    hearth__ptree_free(merge);
                } else {
                    hearth__sync_user_merge(&s, &list, merge, next_id++);
                }
                break;
            }
            default:
                if (acked < next_id)
                    hearth__sync_ack(&s, acked++, roll(2));
            }
            hearth_node_decref(v);
            hearth_node_decref(obj);
            hearth__events_raise(s.events);
            hearth_node_decref(m.batch);
            m.batch = hearth_node_null();
        }
        CHECK_INT(m.mismatches, 0);
        CHECK_INT(m.repeats, 0);
        CHECK(m.values > 0);
        hearth__sync_destroy(&s);
        hearth_node_decref(m.children);
    }
}

/* A view's child changes folded by key (sync/filter.c), past the count
 * at which they are found through an index: 64 children added, every
 * other one removed again (nothing is left of it: the last change moves
 * into its place, which the index follows), the rest changed, each
 * found by its key afterwards. */
static void test_child_changes_fold_by_key(void) {
    enum { N = 64 };
    hearth__changes cs = {0};
    hearth__key *keys[N];
    hearth_node_t *one = node_from("1"), *two = node_from("2");
    for (int i = 0; i < N; i++) {
        char text[16];
        snprintf(text, sizeof text, "k%d", i);
        hearth__name name;
        hearth__name_init(&name, text, strlen(text));
        keys[i] = hearth__key_create(&name);
        CHECK(keys[i] != NULL);
        hearth__changes_track(&cs, HEARTH_EVENT_CHILD_ADDED, keys[i], one, NULL);
    }
    for (int i = 0; i < N; i += 2)
        hearth__changes_track(&cs, HEARTH_EVENT_CHILD_REMOVED, keys[i], one,
                              NULL);
    for (int i = 1; i < N; i += 2)
        hearth__changes_track(&cs, HEARTH_EVENT_CHILD_CHANGED, keys[i], two,
                              one);
    CHECK(!cs.failed);
    CHECK_INT(cs.n, N / 2);
    for (size_t i = 0; i < cs.n; i++) {
        int k = atoi(cs.c[i].key->s + 1);
        CHECK(k % 2 == 1);
        /* added, then changed: still an addition, of the new value */
        CHECK_INT(cs.c[i].type, HEARTH_EVENT_CHILD_ADDED);
        CHECK(cs.c[i].node == two);
    }
    /* a removed one added again is an addition; a kept one removed goes */
    hearth__changes_track(&cs, HEARTH_EVENT_CHILD_ADDED, keys[0], two, NULL);
    hearth__changes_track(&cs, HEARTH_EVENT_CHILD_REMOVED, keys[1], two, NULL);
    CHECK_INT(cs.n, N / 2);
    bool found0 = false, found1 = false;
    for (size_t i = 0; i < cs.n; i++) {
        found0 |= cs.c[i].key == keys[0];
        found1 |= cs.c[i].key == keys[1];
    }
    CHECK(found0 && !found1);
    hearth__changes_clear(&cs);
    for (int i = 0; i < N; i++)
        hearth__key_decref(keys[i]);
    hearth_node_decref(one);
    hearth_node_decref(two);
}

const test_case sync_random_tests[] = {
    {"sync_random_operations_keep_events_consistent",
     test_random_operations_keep_events_consistent},
    {"sync_child_changes_fold_by_key", test_child_changes_fold_by_key},
    {NULL, NULL},
};
