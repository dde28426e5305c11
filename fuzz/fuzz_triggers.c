/* fuzz_triggers.c - libFuzzer target for the triggers' parsers: the input
 * is a registration (JSON), and its first line alone a path pattern and a
 * URL. A registration is accepted or refused with a message, never
 * anything else; an accepted pattern matches the path made from it (each
 * wildcard replaced by a key), and the CloudEvent built for that path is
 * valid JSON naming it. */
#include "hearth.h"

#include "triggers/internal.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The path the pattern's segments name: "k" for each wildcard, and for
 * each '*' of a glob. */
static void concrete(const hearth__pattern *p, char *out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < p->n && n + 2 < size; i++) {
        const hearth__pattern_seg *s = &p->segs[i];
        const char *key = s->text ? s->text : "*";
        out[n++] = '/';
        for (; *key && n + 2 < size; key++)
            out[n++] = *key == '*' ? 'k' : *key;
        out[n] = '\0';
    }
    if (!out[0])
        strcpy(out, "/");
}

static void pattern_round_trip(const char *text) {
    hearth__pattern p;
    hearth_error_t err;
    if (hearth__pattern_parse(text, &p, &err)) {
        if (!err.message[0])
            abort(); /* refused without saying why */
        return;
    }
    static char path[1 << 16];
    concrete(&p, path, sizeof path);
    hearth__path parsed;
    if (strlen(path) < sizeof path - 2 &&
        !hearth__path_parse(path, 0, &parsed, NULL)) {
        if (!hearth__pattern_matches(&p, &parsed))
            abort();
        hearth_node_t *after = hearth_node_number(1);
        hearth__trigger_change c = {"id", "ns", path, hearth_node_null(), after,
                                    false, NULL, 0};
        size_t len;
        char *ev = hearth__trigger_cloudevent(
            &c, "google.firebase.database.ref.v1.written", "h", "l", &len);
        json_t *v = ev ? json_loadb(ev, len, 0, NULL) : NULL;
        if (ev && !v)
            abort(); /* not JSON */
        json_decref(v);
        hearth__free(ev);
        hearth_node_decref(after);
    }
    hearth__pattern_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    size_t line = strcspn(text, "\n");
    char *first = strndup(text, line);
    if (first) {
        pattern_round_trip(first);
        hearth__url u;
        hearth_error_t err;
        if (!hearth__url_parse(first, HEARTH__URL_HTTP | HEARTH__URL_HTTPS,
                               "URL", &u, &err)) {
            /* what a request is made of: a host, a port, a path */
            if (!u.host[0] || !u.port[0] || u.path[0] != '/' ||
                strpbrk(u.host, " \r\n") || strpbrk(u.path, " \r\n"))
                abort();
            hearth__url_free(&u);
        } else if (!err.message[0]) {
            abort();
        }
        free(first);
    }
    json_t *spec = json_loadb(text, size, 0, NULL);
    if (spec) {
        hearth__trigger *t = NULL;
        hearth_error_t err;
        memset(&err, 0, sizeof err);
        if (!hearth__trigger_parse(NULL, spec, "fuzz", &t, &err))
            hearth__trigger_release(t);
        else if (!err.message[0])
            abort();
        json_decref(spec);
    }
    free(text);
    return 0;
}
