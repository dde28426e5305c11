/* log.c - access and event logs, one line each to the log function
 * (hearth_set_log, HEARTH_LOG_ACCESS; the CLI's writes them to stderr):
 * text (fields separated by spaces) or JSON (see log.h). */
#include "server/log.h"

#include "tree/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Now as 2026-11-24T03:22:26.123Z. */
static void timestamp(char out[32]) {
    int64_t ms = hearth_now_ms();
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}

/* A line to the log function, whole (hearth_log_stderr writes it in one
 * write, so lines of threads never interleave). */
static void emit(hearth__buf *b) {
    hearth__buf_addc(b, '\0');
    if (!b->failed)
        hearth__log_line(HEARTH_LOG_ACCESS, b->data);
    hearth__buf_free(b);
}

/* s for a text log: control characters and spaces shown as '?' and '_'
 * so that a line stays one line of space-separated fields. */
static void add_field(hearth__buf *b, const char *s) {
    if (!*s)
        s = "-";
    for (; *s; s++)
        hearth__buf_addc(b, (unsigned char)*s < 0x20 || *s == 0x7f ? '?'
                            : *s == ' '                            ? '_'
                                                                   : *s);
}

static void add_json_field(hearth__buf *b, const char *name, const char *v) {
    hearth__buf_printf(b, ",\"%s\":", name);
    hearth__json_write_string(b, v, strlen(v));
}

void hearth__log_op(hearth__server *srv, const hearth__op *op) {
    if (!hearth__log_on())
        return;
    char when[32];
    timestamp(when);
    hearth__buf b;
    hearth__buf_init(&b);
    double ms = (double)op->duration_ns / 1e6;
    if (srv->log_format == HEARTH_LOG_JSON) {
        hearth__buf_printf(&b, "{\"time\":\"%s\",\"log\":\"access\"", when);
        add_json_field(&b, "door", op->door);
        add_json_field(&b, "type", op->type);
        add_json_field(&b, "ns", op->ns);
        add_json_field(&b, "path", op->path);
        add_json_field(&b, "status", op->status);
        hearth__buf_printf(&b,
                           ",\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64
                           ",\"ms\":%.3f}",
                           op->bytes_in, op->bytes_out, ms);
    } else {
        const char *fields[] = {when, op->door, op->type, op->ns, op->path,
                                op->status};
        for (size_t i = 0; i < HEARTH__ARRAY_SIZE(fields); i++) {
            add_field(&b, fields[i]);
            hearth__buf_addc(&b, ' ');
        }
        hearth__buf_printf(&b, "in=%" PRIu64 " out=%" PRIu64 " %.3fms",
                           op->bytes_in, op->bytes_out, ms);
    }
    emit(&b);
}

void hearth__log_denial(hearth__server *srv, const char *ns,
                        const char *record) {
    if (srv->log_format != HEARTH_LOG_JSON)
        return;
    char when[32];
    timestamp(when);
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__buf_printf(&b, "{\"time\":\"%s\",\"log\":\"denial\"", when);
    add_json_field(&b, "ns", ns);
    hearth__buf_adds(&b, ",\"denial\":");
    hearth__buf_adds(&b, record);
    hearth__buf_addc(&b, '}');
    emit(&b);
}

void hearth__log_event(hearth__server *srv, const char *what,
                       const char *detail) {
    if (srv->log_format == HEARTH_LOG_OFF || !hearth__log_on())
        return;
    char when[32];
    timestamp(when);
    hearth__buf b;
    hearth__buf_init(&b);
    if (srv->log_format == HEARTH_LOG_JSON) {
        hearth__buf_printf(&b, "{\"time\":\"%s\",\"log\":\"event\"", when);
        add_json_field(&b, "event", what);
        if (detail)
            add_json_field(&b, "detail", detail);
        hearth__buf_addc(&b, '}');
    } else {
        hearth__buf_printf(&b, "%s event %s", when, what);
        if (detail) {
            hearth__buf_addc(&b, ' ');
            hearth__buf_adds(&b, detail); /* ours, one line */
        }
    }
    emit(&b);
}
