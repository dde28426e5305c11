/* store.c - log records, group commit, snapshots and recovery. */
#include "store/store.h"

#include "tree/json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define LOG_HEADER "HEARTH-LOG 1\n"
#define LOG_HEADER_LEN (sizeof LOG_HEADER - 1)
#define DEFAULT_SNAPSHOT_BYTES (64u * 1024 * 1024)
#define BATCH_SYNC_MS 1000

struct hearth__store {
    char *dir;
    int fsync_mode;
    int lock_fd;
    int log_fd;
    uint64_t log_gen;
    uint64_t log_bytes; /* in the current log */
    uint64_t snapshot_threshold;
    int64_t last_sync_ms;
    hearth__buf pending;
    bool failed;
};

/* ---- files ---- */

static int io_error(hearth_error_t *err, const char *what, const char *path) {
    return hearth__error(err, HEARTH_EIO, path, "%s %s: %s", what, path,
                         strerror(errno));
}

static char *file_path(const char *dir, const char *fmt, uint64_t gen) {
    char name[64];
    snprintf(name, sizeof name, fmt, (unsigned long long)gen);
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = hearth__malloc(len);
    if (p)
        snprintf(p, len, "%s/%s", dir, name);
    return p;
}

static int mkdir_p(const char *dir) {
    char *copy = hearth__strndup(dir, strlen(dir));
    if (!copy)
        return HEARTH_ENOMEM;
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0755) && errno != EEXIST) {
            hearth__free(copy);
            return HEARTH_EIO;
        }
        *p = '/';
    }
    int rc = mkdir(copy, 0755) && errno != EEXIST ? HEARTH_EIO : 0;
    hearth__free(copy);
    return rc;
}

static int sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return HEARTH_EIO;
    int rc = fsync(fd) ? HEARTH_EIO : 0;
    close(fd);
    return rc;
}

static int write_all(int fd, const char *data, size_t len) {
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return HEARTH_EIO;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static char *read_whole(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *data = NULL;
    if (fstat(fd, &st) == 0 && (data = hearth__malloc((size_t)st.st_size + 1))) {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        data[got] = '\0';
        *len = got;
    }
    close(fd);
    return data;
}

/* Generations of the files named like fmt ("log.%llu"), ascending. */
static int list_gens(const char *dir, const char *prefix, const char *suffix,
                     uint64_t **gens, size_t *n) {
    *gens = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return HEARTH_EIO;
    size_t cap = 0;
    size_t plen = strlen(prefix), slen = strlen(suffix);
    for (struct dirent *e; (e = readdir(d));) {
        const char *name = e->d_name;
        size_t len = strlen(name);
        if (len <= plen + slen || strncmp(name, prefix, plen) != 0 ||
            strcmp(name + len - slen, suffix) != 0)
            continue;
        uint64_t gen = 0;
        bool digits = true;
        for (size_t i = plen; i < len - slen; i++) {
            if (name[i] < '0' || name[i] > '9')
                digits = false;
            else
                gen = gen * 10 + (uint64_t)(name[i] - '0');
        }
        if (!digits)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            uint64_t *g = hearth__realloc(*gens, cap * sizeof *g);
            if (!g) {
                closedir(d);
                hearth__free(*gens);
                return HEARTH_ENOMEM;
            }
            *gens = g;
        }
        (*gens)[(*n)++] = gen;
    }
    closedir(d);
    for (size_t i = 1; i < *n; i++) /* few files: insertion sort */
        for (size_t j = i; j > 0 && (*gens)[j - 1] > (*gens)[j]; j--) {
            uint64_t t = (*gens)[j];
            (*gens)[j] = (*gens)[j - 1];
            (*gens)[j - 1] = t;
        }
    return 0;
}

/* ---- records ---- */

static void put_u32(char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (char)((v >> (8 * i)) & 0xFF);
}

static uint32_t get_u32(const char *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)(unsigned char)p[i] << (8 * i);
    return v;
}

static void write_path(hearth__buf *b, const hearth__path *p) {
    hearth__buf buf;
    hearth__buf_init(&buf);
    for (unsigned i = 0; i < p->n; i++) {
        hearth__buf_addc(&buf, '/');
        hearth__buf_add(&buf, p->seg[i].s, p->seg[i].len);
    }
    if (p->priority)
        hearth__buf_adds(&buf, "/.priority");
    if (!buf.len)
        hearth__buf_addc(&buf, '/');
    if (buf.failed)
        b->failed = true;
    else
        hearth__json_write_string(b, buf.data, buf.len);
    hearth__buf_free(&buf);
}

int hearth__store_append(hearth__store *s, const hearth__path *const *paths,
                         const hearth_node_t *const *values, size_t n) {
    if (s->failed)
        return HEARTH_EIO;
    hearth__buf *b = &s->pending;
    size_t start = b->len;
    char header[8] = {0};
    hearth__buf_add(b, header, sizeof header);
    hearth__buf_addc(b, '[');
    for (size_t i = 0; i < n; i++) {
        hearth__buf_add(b, i ? ",[" : "[", i ? 2 : 1);
        write_path(b, paths[i]);
        hearth__buf_addc(b, ',');
        hearth__node_write_json(b, values[i], HEARTH_JSON_EXPORT);
        hearth__buf_addc(b, ']');
    }
    hearth__buf_addc(b, ']');
    if (b->failed) {
        /* Keep what was buffered before this record. */
        b->failed = false;
        b->len = start;
        return HEARTH_ENOMEM;
    }
    size_t len = b->len - start - sizeof header;
    if (len > UINT32_MAX) {
        b->len = start;
        return HEARTH_ETOOBIG;
    }
    const char *payload = b->data + start + sizeof header;
    put_u32(b->data + start, (uint32_t)len);
    put_u32(b->data + start + 4,
            (uint32_t)crc32(0, (const Bytef *)payload, (uInt)len));
    return 0;
}

/* A commit in three steps, so that the write and sync can run on a worker
 * thread while the loop goes on: begin (loop) takes the buffered records,
 * write (any thread, one at a time) writes and syncs them, end (loop)
 * records the outcome. */
int hearth__store_commit_begin(hearth__store *s, hearth__store_batch *batch) {
    hearth__buf_init(&batch->records);
    batch->sync = false;
    batch->rc = 0;
    if (s->failed)
        return HEARTH_EIO;
    batch->records = s->pending;
    hearth__buf_init(&s->pending);
    int64_t now = hearth_now_ms();
    batch->sync = s->fsync_mode == HEARTH_FSYNC_ALWAYS ||
                  (s->fsync_mode == HEARTH_FSYNC_BATCH &&
                   now - s->last_sync_ms >= BATCH_SYNC_MS);
    if (batch->sync)
        s->last_sync_ms = now;
    return 0;
}

void hearth__store_commit_write(hearth__store *s, hearth__store_batch *batch) {
    if (!batch->records.len)
        return;
    batch->rc = write_all(s->log_fd, batch->records.data, batch->records.len);
    if (!batch->rc && batch->sync && fdatasync(s->log_fd))
        batch->rc = HEARTH_EIO;
}

int hearth__store_commit_end(hearth__store *s, hearth__store_batch *batch) {
    int rc = batch->rc;
    if (rc)
        s->failed = true;
    else
        s->log_bytes += batch->records.len;
    hearth__buf_free(&batch->records);
    return rc;
}

int hearth__store_commit(hearth__store *s) {
    hearth__store_batch batch;
    int rc = hearth__store_commit_begin(s, &batch);
    if (rc)
        return rc;
    hearth__store_commit_write(s, &batch);
    return hearth__store_commit_end(s, &batch);
}

/* Applies one record's payload to *root. */
static int apply_record(const char *payload, size_t len, hearth_node_t **root) {
    json_t *json;
    if (hearth__json_load(payload, len, &json, NULL))
        return HEARTH_EIO;
    int rc = json_is_array(json) ? 0 : HEARTH_EIO;
    for (size_t i = 0; !rc && i < json_array_size(json); i++) {
        json_t *pair = json_array_get(json, i);
        const char *path = json_string_value(json_array_get(pair, 0));
        hearth__path p;
        hearth_node_t *value;
        if (!path || json_array_size(pair) != 2 ||
            hearth__path_parse(path, HEARTH__PATH_ALLOW_PRIORITY, &p, NULL) ||
            hearth__node_from_jansson_at(json_array_get(pair, 1), 0, path, p.n,
                                         &value, NULL)) {
            rc = HEARTH_EIO;
            break;
        }
        rc = hearth__node_set_path(root, &p, value, NULL);
        hearth_node_decref(value);
    }
    json_decref(json);
    return rc;
}

/* Replays one log into *root. *good is the length of its intact prefix. */
static int replay_log(const char *path, bool last, hearth_node_t **root,
                      size_t *good, hearth__store_report *report,
                      hearth_error_t *err) {
    size_t size = 0;
    char *data = read_whole(path, &size);
    if (!data)
        return io_error(err, "cannot read", path);
    int rc = 0;
    size_t off = LOG_HEADER_LEN;
    if (size < LOG_HEADER_LEN || memcmp(data, LOG_HEADER, LOG_HEADER_LEN)) {
        /* A log cut before its header was ever complete holds nothing. */
        if (last && size < LOG_HEADER_LEN &&
            memcmp(data, LOG_HEADER, size) == 0) {
            *good = 0;
            report->torn_bytes += size;
            hearth__free(data);
            return 0;
        }
        hearth__free(data);
        return hearth__error(err, HEARTH_EIO, path,
                             "%s is not a Hearth log (bad header)", path);
    }
    while (off < size) {
        size_t left = size - off;
        uint32_t len = left >= 8 ? get_u32(data + off) : 0;
        bool complete = left >= 8 && left - 8 >= len;
        bool intact =
            complete && get_u32(data + off + 4) ==
                            (uint32_t)crc32(0, (const Bytef *)data + off + 8, len);
        if (!intact) {
            /* A crash mid-append leaves a short or unfinished last record. */
            bool torn = last && (!complete || off + 8 + len == size);
            if (!torn)
                rc = hearth__error(err, HEARTH_EIO, path,
                                   "%s is damaged at offset %zu (record "
                                   "checksum or length); refusing to guess",
                                   path, off);
            else
                report->torn_bytes += left;
            break;
        }
        rc = apply_record(data + off + 8, len, root);
        if (rc) {
            rc = hearth__error(err, HEARTH_EIO, path,
                               "%s: record at offset %zu does not apply", path,
                               off);
            break;
        }
        report->records_replayed++;
        off += 8 + len;
    }
    *good = off < size ? off : size;
    hearth__free(data);
    return rc;
}

/* ---- open / close ---- */

static int open_log(hearth__store *s, uint64_t gen, bool create,
                    hearth_error_t *err) {
    char *path = file_path(s->dir, "log.%llu", gen);
    if (!path)
        return hearth__error_code(err, HEARTH_ENOMEM);
    int fd = open(path, O_WRONLY | O_APPEND | (create ? O_CREAT | O_EXCL : 0),
                  0644);
    int rc = 0;
    if (fd < 0) {
        rc = io_error(err, "cannot open", path);
    } else if (create && (write_all(fd, LOG_HEADER, LOG_HEADER_LEN) ||
                          fdatasync(fd) || sync_dir(s->dir))) {
        rc = io_error(err, "cannot create", path);
        close(fd);
    } else {
        s->log_fd = fd;
        s->log_gen = gen;
    }
    hearth__free(path);
    return rc;
}

static int load_snapshot(const char *dir, uint64_t gen, hearth_node_t **root,
                         hearth_error_t *err) {
    char *path = file_path(dir, "snapshot.%llu.json", gen);
    if (!path)
        return hearth__error_code(err, HEARTH_ENOMEM);
    size_t len;
    char *data = read_whole(path, &len);
    int rc;
    if (!data) {
        rc = io_error(err, "cannot read", path);
    } else {
        hearth_node_t *n;
        hearth_error_t perr;
        rc = hearth_node_from_json(data, len, 0, &n, &perr);
        if (rc) {
            rc = hearth__error(err, HEARTH_EIO, path,
                               "snapshot %s is damaged: %s", path, perr.message);
        } else {
            hearth_node_decref(*root);
            *root = n;
        }
    }
    hearth__free(data);
    hearth__free(path);
    return rc;
}

/* Loads the newest snapshot and replays the logs after it. */
static int recover(hearth__store *s, hearth_node_t **root,
                   hearth__store_report *report, hearth_error_t *err) {
    uint64_t *snaps, *logs;
    size_t nsnaps, nlogs;
    int rc = list_gens(s->dir, "snapshot.", ".json", &snaps, &nsnaps);
    if (rc)
        return hearth__error(err, rc, s->dir, "cannot list %s", s->dir);
    rc = list_gens(s->dir, "log.", "", &logs, &nlogs);
    if (rc) {
        hearth__free(snaps);
        return hearth__error(err, rc, s->dir, "cannot list %s", s->dir);
    }
    uint64_t base = nsnaps ? snaps[nsnaps - 1] : 0;
    report->snapshot_gen = base;
    if (nsnaps)
        rc = load_snapshot(s->dir, base, root, err);
    /* Appends go to the last intact log, else to a new one. */
    uint64_t append_gen = base ? base : 1;
    bool have_log = false;
    for (size_t i = 0; !rc && i < nlogs; i++) {
        if (logs[i] < base)
            continue; /* superseded; removed by the next snapshot */
        char *path = file_path(s->dir, "log.%llu", logs[i]);
        if (!path) {
            rc = hearth__error_code(err, HEARTH_ENOMEM);
            break;
        }
        bool last = i == nlogs - 1;
        size_t good = 0;
        rc = replay_log(path, last, root, &good, report, err);
        if (!rc && last) {
            /* Cut a torn tail so appends continue after intact records. */
            append_gen = logs[i];
            if (good < LOG_HEADER_LEN) {
                if (unlink(path))
                    rc = io_error(err, "cannot remove", path);
            } else if (truncate(path, (off_t)good)) {
                rc = io_error(err, "cannot truncate", path);
            } else {
                have_log = true;
                s->log_bytes = good;
            }
        }
        hearth__free(path);
    }
    if (!rc)
        rc = open_log(s, append_gen, !have_log, err);
    hearth__free(snaps);
    hearth__free(logs);
    return rc;
}

int hearth__store_open(const char *dir, int fsync_mode, hearth__store **out,
                       hearth_node_t **root, hearth__store_report *report,
                       hearth_error_t *err) {
    hearth__store_report ignored;
    if (!report)
        report = &ignored;
    memset(report, 0, sizeof *report);
    if (fsync_mode < HEARTH_FSYNC_ALWAYS || fsync_mode > HEARTH_FSYNC_OFF)
        return hearth__error(err, HEARTH_EINVAL, NULL, "unknown fsync mode %d",
                             fsync_mode);
    if (mkdir_p(dir))
        return io_error(err, "cannot create data directory", dir);
    hearth__store *s = hearth__calloc(1, sizeof *s);
    if (!s || !(s->dir = hearth__strndup(dir, strlen(dir)))) {
        hearth__free(s);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    s->fsync_mode = fsync_mode;
    s->log_fd = -1;
    s->snapshot_threshold = DEFAULT_SNAPSHOT_BYTES;
    hearth__buf_init(&s->pending);
    size_t lock_len = strlen(dir) + sizeof "/LOCK";
    char *lock = hearth__malloc(lock_len);
    if (lock)
        snprintf(lock, lock_len, "%s/LOCK", dir);
    s->lock_fd = lock ? open(lock, O_RDWR | O_CREAT, 0644) : -1;
    int rc = 0;
    if (s->lock_fd < 0)
        rc = lock ? io_error(err, "cannot open", lock)
                  : hearth__error_code(err, HEARTH_ENOMEM);
    else if (flock(s->lock_fd, LOCK_EX | LOCK_NB))
        rc = hearth__error(err, HEARTH_EIO, dir,
                           "data directory %s is in use by another process",
                           dir);
    hearth__free(lock);
    *root = hearth_node_null();
    if (!rc)
        rc = recover(s, root, report, err);
    if (rc) {
        hearth_node_decref(*root);
        *root = NULL;
        if (s->lock_fd >= 0)
            close(s->lock_fd);
        hearth__free(s->dir);
        hearth__free(s);
        return rc;
    }
    s->last_sync_ms = hearth_now_ms();
    *out = s;
    return 0;
}

int hearth__store_close(hearth__store *s) {
    if (!s)
        return 0;
    int rc = hearth__store_commit(s);
    if (s->log_fd >= 0) {
        if (s->fsync_mode != HEARTH_FSYNC_OFF && !s->failed &&
            fdatasync(s->log_fd))
            rc = HEARTH_EIO;
        close(s->log_fd);
    }
    close(s->lock_fd); /* releases the lock */
    hearth__buf_free(&s->pending);
    hearth__free(s->dir);
    hearth__free(s);
    return rc;
}

bool hearth__store_wants_snapshot(const hearth__store *s) {
    return !s->failed && s->log_bytes >= s->snapshot_threshold;
}

void hearth__store_set_snapshot_threshold(hearth__store *s, uint64_t bytes) {
    s->snapshot_threshold = bytes;
}

const char *hearth__store_dir(const hearth__store *s) { return s->dir; }

/* ---- snapshots ---- */

int hearth__store_rotate(hearth__store *s, uint64_t *gen) {
    int rc = hearth__store_commit(s);
    if (rc)
        return rc;
    if (s->fsync_mode != HEARTH_FSYNC_OFF && fdatasync(s->log_fd))
        return HEARTH_EIO;
    int old_fd = s->log_fd;
    uint64_t old_gen = s->log_gen;
    rc = open_log(s, old_gen + 1, true, NULL);
    if (rc)
        return rc;
    close(old_fd);
    s->log_bytes = 0;
    *gen = s->log_gen;
    return 0;
}

/* Removes snapshots and logs older than gen. */
static void remove_superseded(const char *dir, uint64_t gen) {
    static const struct {
        const char *prefix, *suffix, *fmt;
    } kinds[] = {{"snapshot.", ".json", "snapshot.%llu.json"},
                 {"log.", "", "log.%llu"}};
    for (size_t k = 0; k < 2; k++) {
        uint64_t *gens;
        size_t n;
        if (list_gens(dir, kinds[k].prefix, kinds[k].suffix, &gens, &n))
            continue;
        for (size_t i = 0; i < n; i++) {
            if (gens[i] >= gen)
                continue;
            char *path = file_path(dir, kinds[k].fmt, gens[i]);
            if (path)
                unlink(path);
            hearth__free(path);
        }
        hearth__free(gens);
    }
}

int hearth__store_write_snapshot(const char *dir, uint64_t gen,
                                 const hearth_node_t *root) {
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__node_write_json(&b, root, HEARTH_JSON_EXPORT);
    if (b.failed) {
        hearth__buf_free(&b);
        return HEARTH_ENOMEM;
    }
    char *final = file_path(dir, "snapshot.%llu.json", gen);
    char *tmp = file_path(dir, "snapshot.%llu.json.tmp", gen);
    int rc = final && tmp ? 0 : HEARTH_ENOMEM;
    if (!rc) {
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        rc = fd < 0 ? HEARTH_EIO : 0;
        if (!rc) {
            rc = write_all(fd, b.data, b.len);
            if (!rc && fsync(fd))
                rc = HEARTH_EIO;
            close(fd);
        }
        if (!rc && (rename(tmp, final) || sync_dir(dir)))
            rc = HEARTH_EIO;
        if (rc)
            unlink(tmp);
        else
            remove_superseded(dir, gen);
    }
    hearth__free(final);
    hearth__free(tmp);
    hearth__buf_free(&b);
    return rc;
}
