/* pattern.c - parsing and matching the triggers' path patterns. */
#include "triggers/pattern.h"

#include "common/internal.h"

#include <string.h>

static bool capture_name_ok(const char *s, size_t len) {
    if (!len)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

static char *dup_len(const char *s, size_t len) {
    return hearth__strndup(s, len);
}

/* One segment s[0..len) into seg; last: whether it ends the pattern. */
static int parse_seg(const char *whole, const char *s, size_t len, bool last,
                     hearth__pattern_seg *seg, hearth_error_t *err) {
    memset(seg, 0, sizeof *seg);
    if (len == 0)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid trigger pattern \"%.200s\": an empty "
                             "segment",
                             whole);
    if (s[0] == '{') {
        if (s[len - 1] != '}')
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "invalid trigger pattern \"%.200s\": '{' "
                                 "without its '}' in \"%.*s\"",
                                 whole, (int)len, s);
        const char *name = s + 1;
        size_t nlen = len - 2;
        const char *eq = memchr(name, '=', nlen);
        size_t cap = eq ? (size_t)(eq - name) : nlen;
        const char *what = eq ? eq + 1 : "*";
        size_t wlen = eq ? nlen - cap - 1 : 1;
        if (!capture_name_ok(name, cap))
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "invalid trigger pattern \"%.200s\": the "
                                 "capture \"%.*s\" must be named with "
                                 "letters, digits and '_'",
                                 whole, (int)len, s);
        if (wlen == 1 && what[0] == '*')
            seg->kind = HEARTH__SEG_ONE;
        else if (wlen == 2 && what[0] == '*' && what[1] == '*')
            seg->kind = HEARTH__SEG_REST;
        else
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "invalid trigger pattern \"%.200s\": a "
                                 "capture is {name}, {name=*} or "
                                 "{name=**}, not \"%.*s\"",
                                 whole, (int)len, s);
        if (!(seg->capture = dup_len(name, cap)))
            return hearth__error_code(err, HEARTH_ENOMEM);
    } else if (memchr(s, '{', len) || memchr(s, '}', len)) {
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid trigger pattern \"%.200s\": '{' and "
                             "'}' must enclose a whole segment (\"%.*s\")",
                             whole, (int)len, s);
    } else if (len == 1 && s[0] == '*') {
        seg->kind = HEARTH__SEG_ONE;
    } else if (len == 2 && s[0] == '*' && s[1] == '*') {
        seg->kind = HEARTH__SEG_REST;
    } else {
        if (memchr(s, '*', len) && memmem(s, len, "**", 2))
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "invalid trigger pattern \"%.200s\": \"**\" "
                                 "stands alone as a segment",
                                 whole);
        hearth_error_t kerr;
        if (hearth__key_check(s, len, NULL, &kerr))
            return hearth__error(err, HEARTH_EINVAL, NULL,
                                 "invalid trigger pattern \"%.200s\": %s",
                                 whole, kerr.message);
        seg->kind = memchr(s, '*', len) ? HEARTH__SEG_GLOB : HEARTH__SEG_LITERAL;
        if (!(seg->text = dup_len(s, len)))
            return hearth__error_code(err, HEARTH_ENOMEM);
    }
    if (seg->kind == HEARTH__SEG_REST && !last)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid trigger pattern \"%.200s\": a "
                             "multi-segment wildcard (**) may only end it",
                             whole);
    return 0;
}

int hearth__pattern_parse(const char *text, hearth__pattern *out,
                          hearth_error_t *err) {
    memset(out, 0, sizeof *out);
    if (!text)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "a trigger needs a path pattern");
    size_t len = strlen(text);
    while (len && text[0] == '/')
        text++, len--;
    while (len && text[len - 1] == '/')
        len--;
    if (!(out->source = dup_len(text, len)))
        return hearth__error_code(err, HEARTH_ENOMEM);
    unsigned nsegs = 0;
    for (size_t i = 0; i < len; i++)
        nsegs += text[i] == '/';
    nsegs += len > 0;
    if (nsegs > HEARTH_MAX_DEPTH) {
        hearth__pattern_free(out);
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "invalid trigger pattern: more than %d segments",
                             HEARTH_MAX_DEPTH);
    }
    if (nsegs && !(out->segs = hearth__calloc(nsegs, sizeof *out->segs))) {
        hearth__pattern_free(out);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    const char *s = out->source;
    for (unsigned i = 0; i < nsegs; i++) {
        const char *slash = strchr(s, '/');
        size_t slen = slash ? (size_t)(slash - s) : strlen(s);
        out->n = i + 1; /* freed with it whatever happens */
        int rc = parse_seg(out->source, s, slen, i + 1 == nsegs,
                           &out->segs[i], err);
        if (rc) {
            hearth__pattern_free(out);
            return rc;
        }
        s += slen + 1;
    }
    out->rest = out->n && out->segs[out->n - 1].kind == HEARTH__SEG_REST;
    return 0;
}

void hearth__pattern_free(hearth__pattern *p) {
    for (unsigned i = 0; i < p->n; i++) {
        hearth__free(p->segs[i].text);
        hearth__free(p->segs[i].capture);
    }
    hearth__free(p->segs);
    hearth__free(p->source);
    memset(p, 0, sizeof *p);
}

/* '*' in glob stands for any run of characters (none included). */
static bool glob_matches(const char *glob, const char *s, size_t len) {
    const char *star = NULL;
    size_t star_at = 0, i = 0;
    while (i < len) {
        if (*glob == '*') {
            star = glob++;
            star_at = i;
        } else if (*glob && *glob == s[i]) {
            glob++;
            i++;
        } else if (star) {
            glob = star + 1;
            i = ++star_at;
        } else {
            return false;
        }
    }
    while (*glob == '*')
        glob++;
    return *glob == '\0';
}

bool hearth__pattern_seg_matches(const hearth__pattern_seg *seg,
                                 const char *key, size_t len) {
    switch (seg->kind) {
    case HEARTH__SEG_LITERAL:
        return strlen(seg->text) == len && memcmp(seg->text, key, len) == 0;
    case HEARTH__SEG_GLOB:
        return glob_matches(seg->text, key, len);
    default:
        return true;
    }
}

bool hearth__pattern_matches_name(const hearth__pattern *p, const char *name) {
    if (p->n == 0)
        return false;
    if (p->rest && p->n == 1)
        return true;
    return p->n == 1 && hearth__pattern_seg_matches(&p->segs[0], name,
                                                    strlen(name));
}

bool hearth__pattern_prefix_matches(const hearth__pattern *p,
                                    const hearth__path *path, unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        if (i >= p->n)
            return false;
        const hearth__pattern_seg *seg = &p->segs[i];
        if (seg->kind == HEARTH__SEG_REST)
            return true;
        if (!hearth__pattern_seg_matches(seg, path->seg[i].s, path->seg[i].len))
            return false;
    }
    return true;
}

bool hearth__pattern_matches(const hearth__pattern *p,
                             const hearth__path *path) {
    unsigned fixed = p->rest ? p->n - 1 : p->n;
    if (p->rest ? path->n < fixed : path->n != fixed)
        return false;
    return hearth__pattern_prefix_matches(p, path, fixed);
}
