/* json_parse.c - JSON text straight to nodes, for the usual data.
 *
 * Going through jansson builds a whole jansson tree (hash tables, a value
 * per member) only to read it once and free it: about half the time of a
 * parse. This parser builds nodes as it reads. It takes only the plain
 * case: members whose keys are valid names (no ".priority", ".value" or
 * ".sv"), strings within the limit, finite numbers, within the depth
 * limit. Anything else, and any malformed text, gives up
 * (HEARTH__JSON_UNUSUAL) so the caller parses through jansson, which
 * yields the same node and names what is wrong: one place decides every
 * error and every special member. */
#include "tree/json.h"

#include "path/path.h"
#include "tree/node.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef hearth__json_reader reader;

#define UNUSUAL HEARTH__JSON_UNUSUAL

static int value(reader *r, unsigned depth, hearth_node_t **out);

static void skip_space(reader *r) {
    while (r->p < r->end &&
           (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

static bool take(reader *r, char c) {
    skip_space(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return true;
    }
    return false;
}

static bool literal(reader *r, const char *word, size_t len) {
    if ((size_t)(r->end - r->p) < len || memcmp(r->p, word, len) != 0)
        return false;
    r->p += len;
    return true;
}

static int hex4(const char *s, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return UNUSUAL;
    }
    *out = v;
    return 0;
}

/* Room for `more` bytes after the first `at` of the scratch buffer. */
static bool room(reader *r, size_t at, size_t more) {
    if (at + more <= r->scratch_cap)
        return true;
    size_t cap = (at + more) * 2;
    char *b = hearth__realloc(r->scratch, cap);
    if (!b)
        return false;
    r->scratch = b;
    r->scratch_cap = cap;
    return true;
}

/* One \uXXXX escape (a surrogate pair as one) at r->p, after the "\u",
 * appended to the scratch buffer at *at as UTF-8. */
static int unicode_escape(reader *r, size_t *at) {
    uint32_t cp;
    if (r->end - r->p < 4 || hex4(r->p, &cp) || !room(r, *at, 4))
        return UNUSUAL;
    r->p += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return UNUSUAL; /* a lone low surrogate */
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t low;
        if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
            hex4(r->p + 2, &low) || low < 0xDC00 || low > 0xDFFF)
            return UNUSUAL;
        r->p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    char *o = r->scratch + *at;
    if (cp < 0x80) {
        o[0] = (char)cp;
        *at += 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        *at += 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        *at += 3;
    } else {
        o[0] = (char)(0xF0 | cp >> 18);
        o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (char)(0x80 | (cp & 0x3F));
        *at += 4;
    }
    return 0;
}

/* The rest of a string with escapes (r->p at the first backslash),
 * decoded into the scratch buffer. */
static int escaped_string(reader *r, const char *start, const char **s,
                          size_t *len) {
    size_t at = (size_t)(r->p - start);
    if (!room(r, 0, at + 64))
        return UNUSUAL;
    memcpy(r->scratch, start, at);
    while (r->p < r->end) {
        unsigned char c = (unsigned char)*r->p++;
        if (c == '"') {
            *s = r->scratch;
            *len = at;
            return 0;
        }
        if (c < 0x20 || !room(r, at, 1))
            return UNUSUAL;
        if (c != '\\') {
            r->scratch[at++] = (char)c;
            continue;
        }
        if (r->p == r->end)
            return UNUSUAL;
        char e = *r->p++;
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *k = e ? strchr(from, e) : NULL;
        if (k)
            r->scratch[at++] = to[k - from];
        else if (e != 'u' || unicode_escape(r, &at))
            return UNUSUAL;
    }
    return UNUSUAL;
}

/* A string at r->p (after its opening quote): *s points into the text
 * when it has no escapes, else into the scratch buffer. */
static int string(reader *r, const char **s, size_t *len) {
    const char *start = r->p;
    bool high = false;
    unsigned char c = 0;
    while (r->p < r->end) {
        c = (unsigned char)*r->p;
        if (c == '"' || c == '\\' || c < 0x20)
            break;
        high |= c >= 0x80;
        r->p++;
    }
    if (r->p == r->end || c < 0x20)
        return UNUSUAL;
    int rc = 0;
    if (c == '"') {
        *s = start;
        *len = (size_t)(r->p - start);
        r->p++;
    } else {
        rc = escaped_string(r, start, s, len);
        high = true; /* escapes may have made any bytes */
    }
    return rc || (high && !hearth__utf8_valid(*s, *len)) ? UNUSUAL : 0;
}

/* A number as JSON spells it; integers of up to 15 digits exactly, the
 * rest as strtod reads them (jansson's way too), in the C locale's
 * spelling. */
static int number(reader *r, double *out) {
    const char *start = r->p, *q = r->p;
    bool negative = q < r->end && *q == '-';
    q += negative;
    const char *digits = q;
    while (q < r->end && *q >= '0' && *q <= '9')
        q++;
    size_t ndigits = (size_t)(q - digits);
    if (!ndigits || (ndigits > 1 && *digits == '0'))
        return UNUSUAL;
    bool integer = q == r->end || (*q != '.' && *q != 'e' && *q != 'E');
    if (integer && ndigits <= 15) {
        uint64_t v = 0;
        for (const char *d = digits; d < q; d++)
            v = v * 10 + (uint64_t)(*d - '0');
        *out = negative ? -(double)v : (double)v;
        r->p = q;
        return 0;
    }
    if (q < r->end && *q == '.') {
        const char *f = ++q;
        while (q < r->end && *q >= '0' && *q <= '9')
            q++;
        if (q == f)
            return UNUSUAL;
    }
    if (q < r->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < r->end && (*q == '+' || *q == '-'))
            q++;
        const char *x = q;
        while (q < r->end && *q >= '0' && *q <= '9')
            q++;
        if (q == x)
            return UNUSUAL;
    }
    char buf[64];
    size_t len = (size_t)(q - start);
    if (len >= sizeof buf || strcmp(localeconv()->decimal_point, ".") != 0)
        return UNUSUAL;
    memcpy(buf, start, len);
    buf[len] = '\0';
    double v = strtod(buf, NULL);
    if (!isfinite(v))
        return UNUSUAL; /* jansson: an overflow */
    *out = v;
    r->p = q;
    return 0;
}

/* Whether a container opened at r->p (just after its bracket) has
 * members, for the depth limit (empty ones are allowed anywhere). */
static bool empty_next(reader *r, char close) {
    skip_space(r);
    return r->p < r->end && *r->p == close;
}

static int array(reader *r, unsigned depth, hearth_node_t **out) {
    if (empty_next(r, ']')) {
        r->p++;
        *out = hearth_node_null();
        return 0;
    }
    if (depth + 1 > r->max_depth)
        return UNUSUAL;
    hearth__kids kids = {0};
    int rc = 0;
    for (size_t i = 0; !rc; i++) {
        hearth_node_t *child;
        rc = value(r, depth + 1, &child);
        if (rc)
            break;
        char key[24];
        int len = snprintf(key, sizeof key, "%zu", i);
        rc = hearth__kids_add(&kids, key, (size_t)len, child) ? UNUSUAL : 0;
        if (!rc && !take(r, ','))
            break;
    }
    if (rc || !take(r, ']')) {
        hearth__kids_free(&kids);
        return UNUSUAL;
    }
    return hearth__kids_node(&kids, out) ? UNUSUAL : 0;
}

static int member(reader *r, unsigned depth, hearth__kids *kids) {
    const char *key;
    size_t len;
    if (!take(r, '"'))
        return UNUSUAL;
    const char *start = r->p;
    /* Special members and bad keys are the full parser's to judge; so is
     * a key with escapes (decoded into the scratch buffer, which the value
     * may reuse). */
    if (string(r, &key, &len) || key != start || (len && key[0] == '.') ||
        hearth__key_check(key, len, NULL, NULL) || !take(r, ':'))
        return UNUSUAL;
    hearth_node_t *child;
    if (value(r, depth + 1, &child))
        return UNUSUAL;
    /* An empty member would not be kept, so a key given twice could go
     * unseen ({"a":1,"a":null} is null in jansson, where the last wins). */
    if (hearth__node_is_empty(child)) {
        hearth_node_decref(child);
        return UNUSUAL;
    }
    return hearth__kids_add(kids, key, len, child) ? UNUSUAL : 0;
}

static int object(reader *r, unsigned depth, hearth_node_t **out) {
    if (empty_next(r, '}')) {
        r->p++;
        *out = hearth_node_null();
        return 0;
    }
    if (depth + 1 > r->max_depth)
        return UNUSUAL;
    hearth__kids kids = {0};
    int rc;
    do
        rc = member(r, depth, &kids);
    while (!rc && take(r, ','));
    if (rc || !take(r, '}')) {
        hearth__kids_free(&kids);
        return UNUSUAL;
    }
    return hearth__kids_node(&kids, out) ? UNUSUAL : 0;
}

static int value(reader *r, unsigned depth, hearth_node_t **out) {
    skip_space(r);
    if (r->p == r->end)
        return UNUSUAL;
    char c = *r->p;
    if (c == '{' || c == '[') {
        r->p++;
        return c == '{' ? object(r, depth, out) : array(r, depth, out);
    }
    if (c == '"') {
        r->p++;
        const char *s;
        size_t len;
        if (string(r, &s, &len) || len > HEARTH_MAX_STRING_BYTES)
            return UNUSUAL;
        *out = hearth_node_string(s, len);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        double v;
        if (number(r, &v))
            return UNUSUAL;
        *out = hearth_node_number(v);
    } else if (literal(r, "true", 4) || literal(r, "false", 5)) {
        *out = hearth_node_boolean(c == 't');
    } else if (literal(r, "null", 4)) {
        *out = hearth_node_null();
    } else {
        return UNUSUAL;
    }
    return *out ? 0 : UNUSUAL;
}

int hearth__json_parse_plain(const char *text, size_t len, unsigned max_depth,
                             hearth_node_t **out) {
    reader r;
    hearth__json_reader_init(&r, text, len);
    hearth_node_t *n;
    int rc = hearth__json_read_value(&r, max_depth, &n);
    bool rest = !hearth__json_read_end(&r); /* text after the value */
    hearth__json_reader_done(&r);
    if (rc)
        return UNUSUAL;
    if (rest) {
        hearth_node_decref(n);
        return UNUSUAL;
    }
    *out = n;
    return 0;
}

/* ---- the reader for formats made of JSON values ---- */

void hearth__json_reader_init(reader *r, const char *text, size_t len) {
    *r = (reader){.p = text, .end = text + len};
}

void hearth__json_reader_done(reader *r) {
    hearth__free(r->scratch);
    r->scratch = NULL;
    r->scratch_cap = 0;
}

bool hearth__json_read_char(reader *r, char c) {
    return take(r, c);
}

bool hearth__json_read_end(reader *r) {
    skip_space(r);
    return r->p == r->end;
}

int hearth__json_read_string(reader *r, const char **s, size_t *len) {
    return take(r, '"') ? string(r, s, len) : UNUSUAL;
}

int hearth__json_read_value(reader *r, unsigned max_depth,
                            hearth_node_t **out) {
    r->max_depth = max_depth;
    return value(r, 0, out) ? UNUSUAL : 0;
}
