/* disk.c - the client's cache file (SQLite): pending writes, and server
 * data by view with least-recently-used pruning. */
#include "client/disk.h"

#include "store/files.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct hearth__disk {
    sqlite3 *db;
    char *path;
    size_t bound;
    uint64_t clock;       /* recency of use, counting up */
    size_t data_bytes;    /* stored server data */
    size_t write_bytes;   /* stored pending writes */
    sqlite3_stmt *write_add, *write_remove, *put, *get, *touch;
};

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;" /* survives the process dying, not power */
    "CREATE TABLE IF NOT EXISTS writes("
    "  id INTEGER PRIMARY KEY, action TEXT NOT NULL, body TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS views("
    "  view TEXT PRIMARY KEY, data BLOB NOT NULL, used INTEGER NOT NULL);";

/* The offset basis caches were named with before 0.3: FNV-1a's, a digit
 * short. Their files are moved to the right name when opened. */
#define OLD_NAME_BASIS 1469598103934665603ULL

/* The file for url: its safe characters and a hash, so that two URLs
 * never share a file. */
static char *file_for(const char *dir, const char *url, uint64_t basis) {
    uint64_t h = hearth__fnv1a(basis, url, strlen(url));
    char name[96];
    size_t n = 0;
    for (const char *p = url; *p && n < 60; p++) {
        char c = *p;
        bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '-';
        name[n++] = safe ? c : '_';
    }
    snprintf(name + n, sizeof name - n, "-%016llx.sqlite",
             (unsigned long long)h);
    size_t len = strlen(dir) + strlen(name) + 2;
    char *path = hearth__malloc(len);
    if (path)
        snprintf(path, len, "%s/%s", dir, name);
    return path;
}

/* Moves a cache made under the old name to path (when path is not there
 * yet): its WAL and shared memory first, the database last, so that a
 * crash in between leaves the database under the old name, to be moved
 * again, never a database without its WAL. */
static void move_old_cache(const char *dir, const char *url, const char *path) {
    struct stat st;
    if (stat(path, &st) == 0 || errno != ENOENT)
        return;
    char *old = file_for(dir, url, OLD_NAME_BASIS);
    if (old && stat(old, &st) == 0) {
        static const char *const parts[] = {"-wal", "-shm"};
        char from[4200], to[4200];
        bool moved = true;
        for (size_t i = 0; moved && i < HEARTH__ARRAY_SIZE(parts); i++) {
            snprintf(from, sizeof from, "%s%s", old, parts[i]);
            snprintf(to, sizeof to, "%s%s", path, parts[i]);
            moved = rename(from, to) == 0 || errno == ENOENT;
        }
        if (!moved || rename(old, path))
            hearth__log(HEARTH_LOG_WARNING, "the cache %s could not be renamed to "
                    "%s (%s); starting a new one", old, path,
                    strerror(errno));
    }
    hearth__free(old);
}

static void finalize_all(hearth__disk *d) {
    sqlite3_stmt *all[] = {d->write_add, d->write_remove, d->put, d->get,
                           d->touch};
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(all); i++)
        sqlite3_finalize(all[i]);
    d->write_add = d->write_remove = d->put = d->get = d->touch = NULL;
}

static int prepare(hearth__disk *d) {
    struct {
        sqlite3_stmt **stmt;
        const char *sql;
    } all[] = {
        {&d->write_add, "INSERT OR REPLACE INTO writes VALUES (?, ?, ?)"},
        {&d->write_remove, "DELETE FROM writes WHERE id = ?"},
        {&d->put, "INSERT OR REPLACE INTO views VALUES (?, ?, ?)"},
        {&d->get, "SELECT data FROM views WHERE view = ?"},
        {&d->touch, "UPDATE views SET used = ? WHERE view = ?"},
    };
    for (size_t i = 0; i < HEARTH__ARRAY_SIZE(all); i++)
        if (sqlite3_prepare_v2(d->db, all[i].sql, -1, all[i].stmt, NULL) !=
            SQLITE_OK)
            return sqlite3_errcode(d->db);
    return SQLITE_OK;
}

static int64_t query_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *s;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* Opens path and checks it is a healthy cache: SQLITE_OK or the error. */
static int open_file(hearth__disk *d, const char *path) {
    int rc = sqlite3_open_v2(path, &d->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(d->db, 500);
        rc = sqlite3_exec(d->db, schema, NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK) {
        sqlite3_stmt *s;
        rc = sqlite3_prepare_v2(d->db, "PRAGMA quick_check(writes)", -1, &s, NULL);
        if (rc == SQLITE_OK) {
            rc = sqlite3_step(s) == SQLITE_ROW &&
                         strcmp((const char *)sqlite3_column_text(s, 0), "ok") == 0
                     ? SQLITE_OK
                     : SQLITE_CORRUPT;
            sqlite3_finalize(s);
        }
    }
    if (rc == SQLITE_OK)
        rc = prepare(d);
    if (rc == SQLITE_OK) {
        d->data_bytes = (size_t)query_int(
            d->db, "SELECT COALESCE(SUM(LENGTH(data)), 0) FROM views");
        d->write_bytes = (size_t)query_int(
            d->db, "SELECT COALESCE(SUM(LENGTH(body)), 0) FROM writes");
        d->clock = (uint64_t)query_int(d->db, "SELECT COALESCE(MAX(used), 0) FROM views");
    }
    return rc;
}

static void close_file(hearth__disk *d) {
    finalize_all(d);
    sqlite3_close(d->db);
    d->db = NULL;
}

/* The pending writes still readable in a damaged file. */
typedef struct salvage {
    struct salvaged {
        int64_t id;
        char *action, *body; /* NULL when memory failed */
    } *w;
    size_t n, cap;
} salvage;

static void salvage_writes(const char *path, salvage *s) {
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT id, action, body FROM writes ORDER BY id",
                               -1, &st, NULL) == SQLITE_OK) {
            while (sqlite3_step(st) == SQLITE_ROW) {
                struct salvaged *w = hearth__grow(s->w, &s->cap, s->n + 1,
                                                  sizeof *w);
                if (!w)
                    break;
                s->w = w;
                const char *a = (const char *)sqlite3_column_text(st, 1);
                const char *b = (const char *)sqlite3_column_text(st, 2);
                if (!a || !b)
                    continue;
                s->w[s->n++] = (struct salvaged){
                    sqlite3_column_int64(st, 0), hearth__strndup(a, strlen(a)),
                    hearth__strndup(b, strlen(b))};
            }
            sqlite3_finalize(st);
        }
        sqlite3_close(db);
    }
}

int hearth__disk_check_bound(size_t bound, hearth_error_t *err) {
    if (bound != 0 &&
        (bound < HEARTH__DISK_MIN_BOUND || bound > HEARTH__DISK_MAX_BOUND))
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "the cache size must be between 1 MB and 100 MB "
                             "(got %zu bytes)",
                             bound);
    return 0;
}

int hearth__disk_open(const char *dir, const char *url, size_t bound,
                      hearth__disk **out, hearth_error_t *err) {
    int rc = hearth__disk_check_bound(bound, err);
    if (rc)
        return rc;
    if (bound == 0)
        bound = HEARTH__DISK_DEFAULT_BOUND;
    /* With its parents: an app's folder in Application Support may not
     * exist yet. */
    if (hearth__store_mkdir_p(dir) != 0)
        return hearth__error(err, HEARTH_EIO, NULL,
                             "cannot create the cache directory %.160s: %s",
                             dir, strerror(errno));
    hearth__disk *d = hearth__calloc(1, sizeof *d);
    char *path = file_for(dir, url, HEARTH__FNV_SEED);
    if (path)
        move_old_cache(dir, url, path);
    if (!d || !path) {
        hearth__free(d);
        hearth__free(path);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    d->path = path;
    d->bound = bound;
    rc = open_file(d, path);
    if (rc != SQLITE_OK) {
        /* Damaged, unreadable or held: say so, keep what pending writes
         * can be read, and start a fresh file beside the old one. */
        const char *why = d->db ? sqlite3_errmsg(d->db) : sqlite3_errstr(rc);
        hearth__log(HEARTH_LOG_ERROR, "the cache %s is unusable (%s); rebuilding it",
                path, rc == SQLITE_CORRUPT ? "damaged" : why);
        close_file(d);
        salvage s = {0};
        salvage_writes(path, &s);
        char aside[4200];
        snprintf(aside, sizeof aside, "%s.broken-%lld", path,
                 (long long)time(NULL));
        rename(path, aside);
        char wal[4200];
        snprintf(wal, sizeof wal, "%s-wal", path);
        unlink(wal);
        snprintf(wal, sizeof wal, "%s-shm", path);
        unlink(wal);
        rc = open_file(d, path);
        if (rc != SQLITE_OK) {
            /* Held by another process, say: a cache in memory, this run. */
            close_file(d);
            rc = open_file(d, ":memory:");
        }
        for (size_t i = 0; i < s.n; i++) {
            struct salvaged *w = &s.w[i];
            if (rc == SQLITE_OK && w->action && w->body)
                hearth__disk_write_add(d, w->id, w->action, w->body);
            hearth__free(w->action);
            hearth__free(w->body);
        }
        hearth__free(s.w);
        if (rc != SQLITE_OK) {
            close_file(d);
            hearth__free(d->path);
            hearth__free(d);
            return hearth__error(err, HEARTH_EIO, NULL,
                                 "cannot open a cache: %s", sqlite3_errstr(rc));
        }
    }
    *out = d;
    return 0;
}

void hearth__disk_close(hearth__disk *d) {
    if (!d)
        return;
    close_file(d);
    hearth__free(d->path);
    hearth__free(d);
}

const char *hearth__disk_path(const hearth__disk *d) { return d->path; }

/* Runs a prepared statement to its end and resets it. */
static int run(sqlite3_stmt *s) {
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

int hearth__disk_write_add(hearth__disk *d, int64_t id, const char *action,
                           const char *body) {
    size_t len = strlen(body);
    if (d->write_bytes + len > d->bound)
        return HEARTH_ETOOBIG;
    sqlite3_bind_int64(d->write_add, 1, id);
    sqlite3_bind_text(d->write_add, 2, action, -1, SQLITE_STATIC);
    sqlite3_bind_text(d->write_add, 3, body, (int)len, SQLITE_STATIC);
    if (run(d->write_add) != SQLITE_OK)
        return HEARTH_EIO;
    d->write_bytes += len;
    return 0;
}

void hearth__disk_write_remove(hearth__disk *d, int64_t id) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(d->db, "SELECT LENGTH(body) FROM writes WHERE id = ?",
                           -1, &s, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, id);
        if (sqlite3_step(s) == SQLITE_ROW) {
            size_t len = (size_t)sqlite3_column_int64(s, 0);
            d->write_bytes = len > d->write_bytes ? 0 : d->write_bytes - len;
        }
        sqlite3_finalize(s);
    }
    sqlite3_bind_int64(d->write_remove, 1, id);
    run(d->write_remove);
}

void hearth__disk_writes(hearth__disk *d, hearth__disk_write_cb cb, void *ctx) {
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(d->db, "SELECT id, action, body FROM writes ORDER BY id",
                           -1, &s, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *a = (const char *)sqlite3_column_text(s, 1);
        const char *b = (const char *)sqlite3_column_text(s, 2);
        if (a && b)
            cb(sqlite3_column_int64(s, 0), a, b, ctx);
    }
    sqlite3_finalize(s);
}

int hearth__disk_put(hearth__disk *d, const char *view, const void *data,
                     size_t len) {
    size_t was = 0;
    void *old = hearth__disk_get(d, view, &was);
    hearth__free(old);
    sqlite3_bind_text(d->put, 1, view, -1, SQLITE_STATIC);
    sqlite3_bind_blob(d->put, 2, data, (int)len, SQLITE_STATIC);
    sqlite3_bind_int64(d->put, 3, (sqlite3_int64)++d->clock);
    if (run(d->put) != SQLITE_OK)
        return HEARTH_EIO;
    d->data_bytes = d->data_bytes - (was > d->data_bytes ? d->data_bytes : was) + len;
    return 0;
}

void *hearth__disk_get(hearth__disk *d, const char *view, size_t *len) {
    sqlite3_bind_text(d->get, 1, view, -1, SQLITE_STATIC);
    void *out = NULL;
    *len = 0;
    if (sqlite3_step(d->get) == SQLITE_ROW) {
        const void *data = sqlite3_column_blob(d->get, 0);
        size_t n = (size_t)sqlite3_column_bytes(d->get, 0);
        if (data && (out = hearth__malloc(n ? n : 1))) {
            memcpy(out, data, n);
            *len = n;
        }
    }
    sqlite3_reset(d->get);
    sqlite3_clear_bindings(d->get);
    if (out) {
        sqlite3_bind_int64(d->touch, 1, (sqlite3_int64)++d->clock);
        sqlite3_bind_text(d->touch, 2, view, -1, SQLITE_STATIC);
        run(d->touch);
    }
    return out;
}

char **hearth__disk_views(hearth__disk *d, const char *prefix, size_t *n) {
    *n = 0;
    size_t len = strlen(prefix);
    if (!len || (unsigned char)prefix[len - 1] >= 0x7f)
        return NULL;
    /* Keys from prefix up to (not including) prefix with its last
     * character one higher: the keys starting with prefix. */
    char *end = hearth__strndup(prefix, len);
    sqlite3_stmt *s = NULL;
    if (!end || sqlite3_prepare_v2(d->db,
                                   "SELECT view FROM views WHERE view >= ?1 "
                                   "AND view < ?2 ORDER BY view",
                                   -1, &s, NULL) != SQLITE_OK) {
        hearth__free(end);
        return NULL;
    }
    end[len - 1]++;
    sqlite3_bind_text(s, 1, prefix, (int)len, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, end, (int)len, SQLITE_STATIC);
    char **out = NULL;
    size_t cap = 0;
    bool ok = true;
    while (ok && sqlite3_step(s) == SQLITE_ROW) {
        const char *view = (const char *)sqlite3_column_text(s, 0);
        if (!view)
            continue;
        char **grown = hearth__grow(out, &cap, *n + 1, sizeof *grown);
        ok = grown != NULL;
        out = grown ? grown : out;
        if (ok && (out[*n] = hearth__strndup(view, strlen(view))))
            ++*n;
    }
    sqlite3_finalize(s);
    hearth__free(end);
    return out;
}

void hearth__disk_prune(hearth__disk *d, const char *const *keep, size_t n) {
    if (d->data_bytes <= d->bound)
        return;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(d->db,
                           "SELECT view, LENGTH(data) FROM views ORDER BY used",
                           -1, &s, NULL) != SQLITE_OK)
        return;
    sqlite3_stmt *del = NULL;
    sqlite3_prepare_v2(d->db, "DELETE FROM views WHERE view = ?", -1, &del,
                       NULL);
    while (del && d->data_bytes > d->bound && sqlite3_step(s) == SQLITE_ROW) {
        const char *view = (const char *)sqlite3_column_text(s, 0);
        size_t len = (size_t)sqlite3_column_int64(s, 1);
        bool held = false;
        for (size_t i = 0; view && i < n && !held; i++)
            held = strcmp(keep[i], view) == 0;
        if (!view || held)
            continue;
        sqlite3_bind_text(del, 1, view, -1, SQLITE_TRANSIENT);
        if (run(del) == SQLITE_OK)
            d->data_bytes = len > d->data_bytes ? 0 : d->data_bytes - len;
    }
    sqlite3_finalize(del);
    sqlite3_finalize(s);
}
