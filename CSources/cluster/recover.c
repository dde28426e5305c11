/* recover.c - at open, a node trusts its local log only up to where it
 * ended when cluster.seq was last written: every record there is in the
 * stream (the leader writes it after the stream's ack, a follower after
 * the sync of records it read from the stream). A record past it may be
 * one the leader wrote and synced while its append was in flight and
 * then died, so the stream may never have got it; it is cut off, and the
 * tail reads whatever the stream holds past cluster.seq instead. */
#include "cluster/internal.h"

#include "store/files.h"
#include "store/logfile.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* Cuts the log file of generation gen in dir down to keep bytes. */
static void cut_log(const char *dir, uint64_t gen, uint64_t keep) {
    char *path = hearth__store_path(dir, "log.%llu", gen);
    int fd = path ? open(path, O_WRONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_size > keep) {
        if (ftruncate(fd, (off_t)keep) || fdatasync(fd))
            fprintf(stderr, "hearth: cluster: cannot cut %s\n", path);
        else
            fprintf(stderr, "hearth: cluster: %s: %llu bytes past the "
                    "stream's records cut off\n", path,
                    (unsigned long long)((uint64_t)st.st_size - keep));
    }
    if (fd >= 0)
        close(fd);
    hearth__free(path);
}

void hearth__cluster_trust_stream(const hearth__cluster_ns *n,
                                  const char *dir) {
    FILE *f = fopen(n->seq_file, "r");
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
