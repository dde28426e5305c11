/* recover.c - at open, a node trusts its local log only up to where it
 * ended when cluster.seq was last written: every record there is in the
 * stream (the leader writes it after the stream's ack, a follower after
 * the sync of records it read from the stream). A record past it may be
 * one the leader wrote and synced while its append was in flight and
 * then died, so the stream may never have got it; it is cut off, and the
 * tail reads whatever the stream holds past cluster.seq instead. */
#include "cluster/node.h"

#include "os/os.h"
#include "store/files.h"
#include "store/logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* Writes the records in data[0, len) to DIR/cut.GEN.KEEP[.N] as a log file
 * of their own, synced: what a cut takes off is kept aside (a group the
 * stream acknowledged and then lost with all its servers' power can only
 * be there; putting it back is manual, see README's Cluster limits). */
static int keep_aside(const char *dir, uint64_t gen, uint64_t keep,
                      const char *data, size_t len) {
    /* A new file each time (cut.G.K, then cut.G.K.1, ...): an earlier
     * cut at the same place may hold the only copy of something. */
    char path[4200];
    int fd = -1;
    for (int i = 0; fd < 0 && i < 1000; i++) {
        int at = snprintf(path, sizeof path, "%s/cut.%llu.%llu", dir,
                          (unsigned long long)gen, (unsigned long long)keep);
        if (i)
            snprintf(path + at, sizeof path - (size_t)at, ".%d", i);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    int rc = fd < 0 ? HEARTH_EIO : 0;
    if (!rc)
        rc = hearth__store_write_all(fd, HEARTH__LOG_HEADER,
                                     HEARTH__LOG_HEADER_LEN);
    if (!rc)
        rc = hearth__store_write_all(fd, data, len);
    if (!rc && hearth__os_datasync(fd))
        rc = HEARTH_EIO;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Cuts the file at path down to keep bytes, synced. */
static int cut_at(const char *path, uint64_t keep) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int rc = fd < 0 || ftruncate(fd, (off_t)keep) || hearth__os_datasync(fd)
                 ? HEARTH_EIO
                 : 0;
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Cuts the log file of generation gen in dir down to keep bytes, the rest
 * kept aside first (never cut when that fails: nothing is lost). */
static void cut_log(const char *dir, uint64_t gen, uint64_t keep) {
    char *path = hearth__store_path(dir, "log.%llu", gen);
    size_t size = 0;
    char *data = path ? hearth__store_read_whole(path, &size) : NULL;
    while (data && size > keep && !data[size - 1])
        size--; /* space the store wrote ahead (a record never ends in 0) */
    if (data && size > keep) {
        int rc = keep_aside(dir, gen, keep, data + keep, size - keep);
        if (!rc)
            rc = cut_at(path, keep);
        if (rc)
            hearth__log(HEARTH_LOG_ERROR, "cluster: cannot cut %s (%s): its end "
                    "may hold a group the stream never got", path,
                    hearth_strerror(rc));
        else
            hearth__log(HEARTH_LOG_ERROR, "cluster: %s: %zu bytes past the "
                    "stream's records cut off (kept in a cut.* file)",
                    path, size - (size_t)keep);
    }
    hearth__free(data);
    hearth__free(path);
}

void hearth__cluster_trust_stream(const hearth__cluster_ns *n,
                                  const char *dir) {
    FILE *f = fopen(n->log.seq_file, "r");
    unsigned long long seq = 0, gen = 0, bytes = 0;
    int got = f ? fscanf(f, "%llu %llu %llu", &seq, &gen, &bytes) : 0;
    if (f)
        fclose(f);
    if (got != 3 || bytes < HEARTH__LOG_HEADER_LEN)
        return; /* no position written: nothing of this node's own yet */
    uint64_t *gens = NULL;
    size_t count = 0;
    if (hearth__store_list_gens(dir, "log.", "", &gens, &count))
        return;
    /* A later log began at a snapshot of the tree the log held before
     * it: its records all came after the position. */
    for (size_t i = 0; i < count; i++)
        if (gens[i] >= gen)
            cut_log(dir, gens[i],
                    gens[i] == gen ? bytes : HEARTH__LOG_HEADER_LEN);
    hearth__free(gens);
}
