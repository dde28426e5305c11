/* spool.c - a trigger's durable event queue (spool.h). */
#include "triggers/spool.h"
#include "os/os.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>
#include <zlib.h>

#define SEGMENT_BYTES (4u << 20) /* a new segment past this */
#define HEADER_BYTES 16
#define RECORD_MAX (256u << 20) /* more is damage, not a record */

struct hearth__spool {
    char *dir;
    uv_mutex_t mu; /* guards wseg, wsize and the counts */
    uint64_t max_bytes;
    int wfd; /* the writer's segment, wseg, wsize bytes long */
    uint64_t wseg, wsize;
    int rfd; /* the reader's segment rseg (-1: not open), at roff */
    uint64_t rseg, roff;
    uint64_t peeked; /* the bytes of the record peeked, 0: none */
    int cfd;         /* the cursor's file */
    atomic_uint_fast64_t waiting, bytes;
};

static void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static uint64_t get64(const unsigned char *p) {
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void seg_path(const hearth__spool *s, uint64_t seg, char *out,
                     size_t size) {
    snprintf(out, size, "%s/seg.%" PRIu64, s->dir, seg);
}

static int open_seg(const hearth__spool *s, uint64_t seg, int flags) {
    char path[4096];
    seg_path(s, seg, path, sizeof path);
    return open(path, flags | O_CLOEXEC, 0644);
}

/* Reads the record at off of fd: its whole length (header included) into
 * *total, payload into out when not NULL. 0, 1 at a clean end (off is the
 * size), -1 for a torn or damaged record. */
static int read_record(int fd, uint64_t off, uint64_t size, uint64_t *total,
                       hearth__buf *out, uint64_t *time_us) {
    if (off == size)
        return 1;
    unsigned char h[HEADER_BYTES];
    if (size - off < HEADER_BYTES ||
        pread(fd, h, HEADER_BYTES, (off_t)off) != HEADER_BYTES)
        return -1;
    uint32_t len = get32(h), crc = get32(h + 4);
    if (len > RECORD_MAX || size - off - HEADER_BYTES < len)
        return -1;
    hearth__buf scratch;
    hearth__buf *b = out ? out : &scratch;
    if (!out)
        hearth__buf_init(&scratch);
    b->len = 0;
    int rc = 0;
    if (!hearth__buf_reserve(b, len + 1) ||
        pread(fd, b->data, len, (off_t)(off + HEADER_BYTES)) != (ssize_t)len)
        rc = -1;
    else if ((uint32_t)crc32(crc32(0L, Z_NULL, 0), (const Bytef *)b->data,
                             len) != crc)
        rc = -1;
    if (!rc) {
        b->len = len;
        b->data[len] = '\0';
        *total = HEADER_BYTES + (uint64_t)len;
        if (time_us)
            *time_us = get64(h + 8);
    }
    if (!out)
        hearth__buf_free(&scratch);
    return rc;
}

static void write_cursor(hearth__spool *s) {
    char line[64];
    int n = snprintf(line, sizeof line, "%020" PRIu64 " %020" PRIu64 "\n",
                     s->rseg, s->roff);
    if (pwrite(s->cfd, line, (size_t)n, 0) != n)
        hearth__log(HEARTH_LOG_WARNING, "trigger spool %s: cannot write its cursor: "
                        "%s", s->dir, strerror(errno));
}

/* The lowest and highest segment numbers in dir (0, 0: none). */
static void find_segments(const char *dir, uint64_t *lo, uint64_t *hi) {
    *lo = *hi = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, "seg.", 4) != 0)
            continue;
        char *end;
        uint64_t n = strtoull(e->d_name + 4, &end, 10);
        if (*end || n == 0)
            continue;
        if (!*lo || n < *lo)
            *lo = n;
        if (n > *hi)
            *hi = n;
    }
    if (d)
        closedir(d);
}

/* The records of segment seg from off on: counted, and the end of the
 * last whole one (a torn tail is cut when cut is set). */
static int scan_segment(hearth__spool *s, uint64_t seg, uint64_t off, bool cut,
                        uint64_t *end) {
    int fd = open_seg(s, seg, cut ? O_RDWR : O_RDONLY);
    if (fd < 0)
        return errno == ENOENT ? 0 : HEARTH_EIO;
    struct stat st;
    if (fstat(fd, &st)) {
        close(fd);
        return HEARTH_EIO;
    }
    uint64_t size = (uint64_t)st.st_size, total = 0;
    int r;
    while ((r = read_record(fd, off, size, &total, NULL, NULL)) == 0) {
        off += total;
        atomic_fetch_add(&s->waiting, 1);
        atomic_fetch_add(&s->bytes, total);
    }
    if (r < 0) {
        hearth__log(HEARTH_LOG_WARNING,
                "trigger spool %s: segment %" PRIu64 " %s at "
                "offset %" PRIu64 " (%" PRIu64 " bytes after it)\n",
                s->dir, seg, cut ? "cut: a torn record" : "ends early: damage",
                off, size - off);
        if (cut && ftruncate(fd, (off_t)off)) {
            close(fd);
            return HEARTH_EIO;
        }
    }
    close(fd);
    *end = off;
    return 0;
}

static int recover(hearth__spool *s, hearth_error_t *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/cursor", s->dir);
    s->cfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->cfd < 0)
        return hearth__error(err, HEARTH_EIO, path, "cannot open %s: %s", path,
                             strerror(errno));
    char line[64] = {0};
    ssize_t n = pread(s->cfd, line, sizeof line - 1, 0);
    uint64_t lo, hi;
    find_segments(s->dir, &lo, &hi);
    if (n <= 0 || sscanf(line, "%" SCNu64 " %" SCNu64, &s->rseg, &s->roff) != 2) {
        s->rseg = lo ? lo : 1;
        s->roff = 0;
    }
    if (lo && s->rseg < lo) { /* the cursor's segment is gone */
        s->rseg = lo;
        s->roff = 0;
    }
    for (uint64_t seg = lo; seg && seg < s->rseg; seg++) {
        seg_path(s, seg, path, sizeof path);
        unlink(path);
    }
    s->wseg = hi > s->rseg ? hi : s->rseg;
    for (uint64_t seg = s->rseg; seg <= s->wseg; seg++) {
        uint64_t end = 0;
        int rc = scan_segment(s, seg, seg == s->rseg ? s->roff : 0,
                              seg == s->wseg, &end);
        if (rc)
            return hearth__error(err, rc, s->dir,
                                 "cannot read the trigger spool %s", s->dir);
        if (seg == s->wseg)
            s->wsize = end;
    }
    if (s->rseg == s->wseg && s->roff > s->wsize)
        s->roff = s->wsize;
    s->wfd = open_seg(s, s->wseg, O_WRONLY | O_CREAT);
    if (s->wfd < 0)
        return hearth__error(err, HEARTH_EIO, s->dir,
                             "cannot open the trigger spool %s: %s", s->dir,
                             strerror(errno));
    write_cursor(s);
    return 0;
}

int hearth__spool_open(const char *dir, uint64_t max_bytes,
                       hearth__spool **out, hearth_error_t *err) {
    if (mkdir(dir, 0755) && errno != EEXIST)
        return hearth__error(err, HEARTH_EIO, dir, "cannot create %s: %s", dir,
                             strerror(errno));
    hearth__spool *s = hearth__calloc(1, sizeof *s);
    if (!s || !(s->dir = hearth__strndup(dir, strlen(dir)))) {
        hearth__free(s);
        return hearth__error_code(err, HEARTH_ENOMEM);
    }
    s->max_bytes = max_bytes;
    s->wfd = s->rfd = s->cfd = -1;
    uv_mutex_init(&s->mu);
    int rc = recover(s, err);
    if (rc) {
        hearth__spool_close(s);
        return rc;
    }
    *out = s;
    return 0;
}

void hearth__spool_close(hearth__spool *s) {
    if (!s)
        return;
    if (s->wfd >= 0) {
        hearth__os_datasync(s->wfd);
        close(s->wfd);
    }
    if (s->rfd >= 0)
        close(s->rfd);
    if (s->cfd >= 0) {
        hearth__os_datasync(s->cfd);
        close(s->cfd);
    }
    uv_mutex_destroy(&s->mu);
    hearth__free(s->dir);
    hearth__free(s);
}

void hearth__spool_frame(hearth__buf *out, const void *data, size_t len,
                         uint64_t time_us) {
    unsigned char h[HEADER_BYTES];
    put32(h, (uint32_t)len);
    put32(h + 4, (uint32_t)crc32(crc32(0L, Z_NULL, 0), data, (uInt)len));
    put64(h + 8, time_us);
    hearth__buf_add(out, h, HEADER_BYTES);
    hearth__buf_add(out, data, len);
}

int hearth__spool_unframe(const void *frames, size_t len, size_t *off,
                          const char **data, size_t *dlen, uint64_t *time_us) {
    const unsigned char *p = frames;
    if (*off >= len)
        return 1;
    if (len - *off < HEADER_BYTES)
        return HEARTH_EIO;
    uint32_t n = get32(p + *off);
    if (len - *off - HEADER_BYTES < n ||
        get32(p + *off + 4) !=
            (uint32_t)crc32(crc32(0L, Z_NULL, 0), p + *off + HEADER_BYTES, n))
        return HEARTH_EIO;
    *time_us = get64(p + *off + 8);
    *data = (const char *)p + *off + HEADER_BYTES;
    *dlen = n;
    *off += HEADER_BYTES + n;
    return 0;
}

/* Writes all of data at the end of the segment being written. */
static int write_at_end(hearth__spool *s, const char *data, size_t len) {
    size_t done = 0;
    while (done < len) {
        ssize_t w = pwrite(s->wfd, data + done, len - done,
                           (off_t)(s->wsize + done));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int rc = errno == ENOSPC ? HEARTH_ENOSPC : HEARTH_EIO;
            /* nothing past wsize counts; the next write overwrites it */
            if (ftruncate(s->wfd, (off_t)s->wsize)) {
            }
            return rc;
        }
        done += (size_t)w;
    }
    return 0;
}

int hearth__spool_append_frames(hearth__spool *s, const void *frames,
                                size_t len, size_t n) {
    uv_mutex_lock(&s->mu);
    int rc = 0;
    if (atomic_load(&s->bytes) + len > s->max_bytes) {
        rc = HEARTH_ETOOBIG;
    } else if (s->wsize >= SEGMENT_BYTES) {
        int fd = open_seg(s, s->wseg + 1, O_WRONLY | O_CREAT | O_TRUNC);
        if (fd < 0) {
            rc = HEARTH_EIO;
        } else {
            hearth__os_datasync(s->wfd); /* the reader deletes it once read, not before */
            close(s->wfd);
            s->wfd = fd;
            s->wseg++;
            s->wsize = 0;
        }
    }
    /* wsize moves only after the whole write: the reader never sees a
     * record that is not all there */
    if (!rc && !(rc = write_at_end(s, frames, len))) {
        s->wsize += len;
        atomic_fetch_add(&s->waiting, n);
        atomic_fetch_add(&s->bytes, len);
    }
    uv_mutex_unlock(&s->mu);
    return rc;
}

int hearth__spool_append(hearth__spool *s, const void *data, size_t len,
                         uint64_t time_us) {
    if (len > RECORD_MAX)
        return HEARTH_ETOOBIG;
    hearth__buf b;
    hearth__buf_init(&b);
    hearth__spool_frame(&b, data, len, time_us);
    int rc = b.failed ? HEARTH_ENOMEM
                      : hearth__spool_append_frames(s, b.data, b.len, 1);
    hearth__buf_free(&b);
    return rc;
}

void hearth__spool_sync_data(hearth__spool *s) {
    /* a copy of the descriptor: the writer may move to the next segment
     * (closing this one) while this one syncs, without the lock held */
    uv_mutex_lock(&s->mu);
    int fd = dup(s->wfd);
    uv_mutex_unlock(&s->mu);
    if (fd >= 0) {
        hearth__os_datasync(fd);
        close(fd);
    }
}

void hearth__spool_sync(hearth__spool *s) {
    hearth__spool_sync_data(s);
    hearth__os_datasync(s->cfd);
}

/* Moves the reader to the next segment, deleting the one it leaves. */
static void next_segment(hearth__spool *s) {
    if (s->rfd >= 0)
        close(s->rfd);
    s->rfd = -1;
    char path[4096];
    seg_path(s, s->rseg, path, sizeof path);
    unlink(path);
    s->rseg++;
    s->roff = 0;
    write_cursor(s);
}

int hearth__spool_peek(hearth__spool *s, hearth__buf *out, uint64_t *time_us) {
    for (;;) {
        uv_mutex_lock(&s->mu);
        uint64_t wseg = s->wseg, wsize = s->wsize;
        uv_mutex_unlock(&s->mu);
        if (s->rseg == wseg && s->roff >= wsize)
            return 1;
        if (s->rfd < 0 && (s->rfd = open_seg(s, s->rseg, O_RDONLY)) < 0) {
            if (errno == ENOENT && s->rseg < wseg) {
                next_segment(s);
                continue;
            }
            return HEARTH_EIO;
        }
        uint64_t size = wsize;
        if (s->rseg < wseg) { /* complete: its end is the file's */
            struct stat st;
            if (fstat(s->rfd, &st))
                return HEARTH_EIO;
            size = (uint64_t)st.st_size;
        }
        uint64_t total = 0;
        int r = read_record(s->rfd, s->roff, size, &total, out, time_us);
        if (r == 0) {
            s->peeked = total;
            return 0;
        }
        if (r == 1 && s->rseg < wseg) {
            next_segment(s);
            continue;
        }
        if (r == 1)
            return 1;
        hearth__log(HEARTH_LOG_WARNING,
                "trigger spool %s: damage in segment %" PRIu64
                " at offset %" PRIu64 "; going on with the next segment\n",
                s->dir, s->rseg, s->roff);
        if (s->rseg == wseg)
            return HEARTH_EIO;
        next_segment(s);
    }
}

void hearth__spool_advance(hearth__spool *s) {
    if (!s->peeked)
        return;
    s->roff += s->peeked;
    atomic_fetch_sub(&s->waiting, 1);
    atomic_fetch_sub(&s->bytes, s->peeked);
    s->peeked = 0;
    write_cursor(s);
}

uint64_t hearth__spool_waiting(hearth__spool *s) {
    return atomic_load(&s->waiting);
}

uint64_t hearth__spool_bytes(hearth__spool *s) { return atomic_load(&s->bytes); }

int hearth__spool_list(hearth__spool *s, size_t max, hearth__spool_cb cb,
                       void *ctx) {
    uv_mutex_lock(&s->mu);
    uint64_t wseg = s->wseg, wsize = s->wsize;
    uv_mutex_unlock(&s->mu);
    hearth__buf b;
    hearth__buf_init(&b);
    size_t seen = 0;
    int rc = 0;
    for (uint64_t seg = s->rseg; !rc && seen < max && seg <= wseg; seg++) {
        int fd = open_seg(s, seg, O_RDONLY);
        if (fd < 0)
            continue;
        uint64_t size = wsize, off = seg == s->rseg ? s->roff : 0, total;
        struct stat st;
        if (seg < wseg)
            size = fstat(fd, &st) ? 0 : (uint64_t)st.st_size;
        uint64_t t;
        while (!rc && seen < max &&
               read_record(fd, off, size, &total, &b, &t) == 0) {
            off += total;
            seen++;
            rc = cb(ctx, b.data, b.len, t);
        }
        close(fd);
    }
    hearth__buf_free(&b);
    return rc;
}
