/* locate.c - finding where each rule is written in a rules document's
 * text (see locate.h): a small JSON-with-comments scanner that follows
 * the "rules" object, naming locations as ruleset.c's compile_node does. */
#include "rules/locate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NESTING 256
#define KEY_MAX 512 /* ruleset.c's location buffer: names cut alike */

typedef struct site {
    char *where;
    const char *kind; /* one of KINDS: static */
    int line, column;
    size_t order; /* the later of two equal sites wins */
} site;

struct hearth__rule_sites {
    site *v;
    size_t n, cap;
};

static const char *const KINDS[] = {".read", ".write", ".validate"};

typedef struct scan {
    const char *p, *end, *line_start;
    int line;
    hearth__rule_sites *out;
    int rc; /* the first failure */
} scan;

static int fail(scan *s, int rc) {
    if (!s->rc)
        s->rc = rc;
    return s->rc;
}

/* The current position's column: characters (not UTF-8 continuation
 * bytes) since the line began, 1-based. */
static int column_here(const scan *s) {
    int col = 1;
    for (const char *q = s->line_start; q < s->p; q++)
        col += ((unsigned char)*q & 0xC0) != 0x80;
    return col;
}

static void newline(scan *s) {
    s->line++;
    s->line_start = s->p + 1;
}

/* Skips white space and comments. */
static void skip_space(scan *s) {
    while (s->p < s->end) {
        char c = *s->p;
        if (c == '\n') {
            newline(s);
            s->p++;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            s->p++;
        } else if (c == '/' && s->p + 1 < s->end && s->p[1] == '/') {
            while (s->p < s->end && *s->p != '\n')
                s->p++;
        } else if (c == '/' && s->p + 1 < s->end && s->p[1] == '*') {
            s->p += 2;
            while (s->p + 1 < s->end && !(s->p[0] == '*' && s->p[1] == '/')) {
                if (*s->p == '\n')
                    newline(s);
                s->p++;
            }
            s->p = s->p + 2 <= s->end ? s->p + 2 : s->end;
        } else {
            return;
        }
    }
}

/* A string at s->p, its value into key (cut at KEY_MAX - 1 bytes; *exact
 * false when cut or holding an escape this scanner does not decode). */
static int read_string(scan *s, char key[KEY_MAX], bool *exact) {
    if (s->p >= s->end || *s->p != '"')
        return fail(s, HEARTH_EINVAL);
    s->p++;
    size_t n = 0;
    *exact = true;
    while (s->p < s->end && *s->p != '"') {
        char c = *s->p++;
        if (c == '\n')
            return fail(s, HEARTH_EINVAL); /* JSON strings hold none */
        if (c == '\\') {
            if (s->p >= s->end)
                return fail(s, HEARTH_EINVAL);
            char e = *s->p++;
            const char *simple = strchr("\"\\/bfnrt", e);
            if (!simple || e == 'u') {
                *exact = false; /* \u: such a key gets no position */
                continue;
            }
            static const char out[] = "\"\\/\b\f\n\r\t";
            c = out[simple - "\"\\/bfnrt"];
        }
        if (n + 1 < KEY_MAX)
            key[n++] = c;
        else
            *exact = false;
    }
    if (s->p >= s->end)
        return fail(s, HEARTH_EINVAL);
    s->p++;
    key[n] = '\0';
    return 0;
}

static int add_site(scan *s, const char *where, const char *kind, int line,
                    int column) {
    hearth__rule_sites *o = s->out;
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 16;
        site *v = hearth__realloc(o->v, cap * sizeof *v);
        if (!v)
            return fail(s, HEARTH_ENOMEM);
        o->v = v;
        o->cap = cap;
    }
    char *w = hearth__strndup(where, strlen(where));
    if (!w)
        return fail(s, HEARTH_ENOMEM);
    o->v[o->n] = (site){w, kind, line, column, o->n};
    o->n++;
    return 0;
}

/* Which rule kind key names, or NULL. */
static const char *kind_of(const char *key) {
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(KINDS); i++)
        if (!strcmp(key, KINDS[i]))
            return KINDS[i];
    return NULL;
}

/* One value at s->p. `where` is the rules' location when the value is a
 * rules object (NULL: not rules), `top` whether it is the document. */
static int value(scan *s, const char *where, bool top, int depth);

static int object(scan *s, const char *where, bool top, int depth) {
    s->p++; /* '{' */
    skip_space(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return 0;
    }
    for (;;) {
        char key[KEY_MAX];
        bool exact;
        skip_space(s);
        if (read_string(s, key, &exact))
            return s->rc;
        skip_space(s);
        if (s->p >= s->end || *s->p != ':')
            return fail(s, HEARTH_EINVAL);
        s->p++;
        skip_space(s);
        const char *kind = where && exact ? kind_of(key) : NULL;
        if (kind && add_site(s, where, kind, s->line, column_here(s)))
            return s->rc;
        char here[KEY_MAX];
        const char *child = NULL;
        if (top && !strcmp(key, "rules"))
            child = "/";
        else if (where && exact && key[0] != '.') {
            /* A location too long for ruleset.c's buffer gets none. */
            int k = snprintf(here, sizeof here, "%s%s%s", where,
                             strcmp(where, "/") ? "/" : "", key);
            child = k > 0 && (size_t)k < sizeof here ? here : NULL;
        }
        if (value(s, child, false, depth + 1))
            return s->rc;
        skip_space(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return 0;
        }
        return fail(s, HEARTH_EINVAL);
    }
}

static int value(scan *s, const char *where, bool top, int depth) {
    if (depth > MAX_NESTING)
        return fail(s, HEARTH_EINVAL);
    skip_space(s);
    if (s->p >= s->end)
        return fail(s, HEARTH_EINVAL);
    char c = *s->p;
    if (c == '{')
        return object(s, where, top, depth);
    if (c == '"') {
        char ignored[KEY_MAX];
        bool exact;
        return read_string(s, ignored, &exact);
    }
    if (c == '[') {
        s->p++;
        skip_space(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return 0;
        }
        for (;;) {
            if (value(s, NULL, false, depth + 1))
                return s->rc;
            skip_space(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                continue;
            }
            if (s->p < s->end && *s->p == ']') {
                s->p++;
                return 0;
            }
            return fail(s, HEARTH_EINVAL);
        }
    }
    /* A number, true, false or null: up to the next delimiter. */
    const char *start = s->p;
    while (s->p < s->end && !strchr(",}] \t\r\n/", *s->p))
        s->p++;
    return s->p == start ? fail(s, HEARTH_EINVAL) : 0;
}

static int by_where_kind(const void *a, const void *b) {
    const site *x = a, *y = b;
    int c = strcmp(x->where, y->where);
    if (!c)
        c = strcmp(x->kind, y->kind);
    if (!c)
        c = x->order < y->order ? -1 : x->order > y->order;
    return c;
}

void hearth__rule_sites_free(hearth__rule_sites *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        hearth__free(s->v[i].where);
    hearth__free(s->v);
    hearth__free(s);
}

int hearth__rule_sites_find(const char *text, size_t len,
                            hearth__rule_sites **out) {
    hearth__rule_sites *o = hearth__calloc(1, sizeof *o);
    if (!o)
        return HEARTH_ENOMEM;
    scan s = {text, text + len, text, 1, o, 0};
    if (!value(&s, NULL, true, 0)) {
        skip_space(&s);
        if (s.p != s.end)
            fail(&s, HEARTH_EINVAL);
    }
    if (s.rc) {
        hearth__rule_sites_free(o);
        return s.rc;
    }
    if (o->n)
        qsort(o->v, o->n, sizeof *o->v, by_where_kind);
    *out = o;
    return 0;
}

bool hearth__rule_sites_lookup(const hearth__rule_sites *s, const char *where,
                               const char *kind, int *line, int *column) {
    *line = *column = 0;
    if (!s)
        return false;
    /* The last site ordered at or before (where, kind, any order). */
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->v[mid].where, where);
        if (!c)
            c = strcmp(s->v[mid].kind, kind);
        if (c <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || strcmp(s->v[lo - 1].where, where) ||
        strcmp(s->v[lo - 1].kind, kind))
        return false;
    *line = s->v[lo - 1].line;
    *column = s->v[lo - 1].column;
    return true;
}
