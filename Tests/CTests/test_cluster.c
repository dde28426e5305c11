/* test_cluster.c - the cluster backend (cluster/) against a real
 * nats-server with JetStream on a free loopback port: two nodes of one
 * process share a loop, each with its own data directory. Skipped (passes
 * with a note) where nats-server is not installed. */
#include "test.h"

#include "cluster/cluster.h"
#include "common/histogram.h"
#include "db/db.h"
#include "store/logfile.h"
#include "store/store.h"

#include <nats/nats.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

static const char *nats_bin(void) {
    if (access("/usr/sbin/nats-server", X_OK) == 0)
        return "/usr/sbin/nats-server";
    if (access("/usr/bin/nats-server", X_OK) == 0)
        return "/usr/bin/nats-server";
    return NULL;
}

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    bind(fd, (struct sockaddr *)&a, sizeof a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* One nats-server with JetStream in its own directory. */
typedef struct nats_proc {
    pid_t pid;
    char dir[64];
    char url[64];
} nats_proc;

static bool nats_start(nats_proc *n) {
    const char *bin = nats_bin();
    if (!bin) {
        printf("  (skipped: nats-server is not installed)\n");
        return false;
    }
    strcpy(n->dir, "/tmp/hearth-nats-XXXXXX");
    CHECK(mkdtemp(n->dir) != NULL);
    char port[16];
    int p = free_port();
    snprintf(port, sizeof port, "%d", p);
    snprintf(n->url, sizeof n->url, "nats://127.0.0.1:%d", p);
    n->pid = fork();
    if (n->pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execl(bin, bin, "-js", "-a", "127.0.0.1", "-p", port, "-sd", n->dir,
              (char *)NULL);
        _exit(127);
    }
    /* Ready once it accepts a connection. */
    for (int i = 0; i < 100; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)p)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
        close(fd);
        if (rc == 0)
            return true;
        usleep(50 * 1000);
    }
    CHECK(!"nats-server did not start");
    return false;
}

static void nats_stop(nats_proc *n) {
    kill(n->pid, SIGTERM);
    waitpid(n->pid, NULL, 0);
    remove_tree(n->dir);
    nats_Close(); /* the client library's own threads and memory */
}

/* A node: its cluster link and one namespace's database on it. */
typedef struct node {
    hearth__cluster *c;
    hearth_db_t *db;
    char dir[64];
} node;

static void node_open(uv_loop_t *loop, const nats_proc *n, node *x,
                      const char *name) {
    if (!x->dir[0]) {
        strcpy(x->dir, "/tmp/hearth-node-XXXXXX");
        CHECK(mkdtemp(x->dir) != NULL);
    }
    hearth_error_t err;
    if (!x->c) {
        int rc = hearth__cluster_start(loop, n->url, name, &x->c, &err);
        if (rc)
            fprintf(stderr, "  %s\n", err.message);
        CHECK_INT(rc, 0);
    }
    hearth_db_config_t config = {.size = sizeof config, .loop = loop,
                                 .data_dir = x->dir};
    int rc = hearth__cluster_open(x->c, "t", &config, &x->db, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.message);
    CHECK_INT(rc, 0);
}

static void node_close(uv_loop_t *loop, node *x, bool leave) {
    CHECK_INT(hearth_db_close(x->db), 0);
    x->db = NULL;
    if (leave) {
        hearth__cluster_stop(x->c);
        x->c = NULL;
    }
    uv_run(loop, UV_RUN_NOWAIT);
}

/* A write's outcome, and what its own node showed at its ok. */
typedef struct outcome {
    bool done;
    int rc;
    hearth_db_t *db;
    char *seen; /* the node's data at the ok, as JSON */
} outcome;

static void on_done(int rc, void *ctx) {
    outcome *o = ctx;
    o->done = true;
    o->rc = rc;
    o->seen = to_json(hearth__db_root(o->db));
}

/* Runs the loop until every outcome is in (the test's time limit bounds
 * it). */
static void wait_for(uv_loop_t *loop, outcome *o, int n) {
    for (;;) {
        bool all = true;
        for (int i = 0; i < n; i++)
            all = all && o[i].done;
        if (all)
            return;
        uv_run(loop, UV_RUN_ONCE);
    }
}

/* Two nodes of one namespace on a fresh nats-server; false: skipped. */
typedef struct pair {
    nats_proc nats;
    uv_loop_t loop;
    node a, b;
} pair;

static bool pair_start(pair *p) {
    memset(p, 0, sizeof *p);
    if (!nats_start(&p->nats))
        return false;
    uv_loop_init(&p->loop);
    node_open(&p->loop, &p->nats, &p->a, "t1");
    node_open(&p->loop, &p->nats, &p->b, "t2");
    return true;
}

static void pair_end(pair *p, outcome *o, int n) {
    for (int i = 0; i < n; i++)
        free(o[i].seen);
    node_close(&p->loop, &p->a, true);
    node_close(&p->loop, &p->b, true);
    uv_run(&p->loop, UV_RUN_DEFAULT);
    CHECK_INT(uv_loop_close(&p->loop), 0);
    remove_tree(p->a.dir);
    remove_tree(p->b.dir);
    nats_stop(&p->nats);
}

/* One node, a, on a fresh nats-server; false: skipped. */
static bool single_start(pair *p) {
    memset(p, 0, sizeof *p);
    if (!nats_start(&p->nats))
        return false;
    uv_loop_init(&p->loop);
    node_open(&p->loop, &p->nats, &p->a, "t1");
    return true;
}

/* The node of p that leads t (someone does once a write is acknowledged). */
static node *leader_of(pair *p) {
    char *status = hearth__cluster_status(p->a.c);
    node *leader = strstr(status, "\"role\":\"leader\"") ? &p->a : &p->b;
    free(status);
    return leader;
}

/* x and y hold the same data: the same root hash. */
static void same_data(node *x, node *y) {
    char hx[HEARTH_HASH_SIZE], hy[HEARTH_HASH_SIZE];
    CHECK_INT(hearth_node_hash(hearth__db_root(x->db), hx), 0);
    CHECK_INT(hearth_node_hash(hearth__db_root(y->db), hy), 0);
    CHECK(memcmp(hx, hy, sizeof hx) == 0);
}

static void set(node *x, const char *path, const char *json,
                const char *if_hash, outcome *o) {
    o->db = x->db;
    hearth_node_t *v = node_from(json);
    CHECK_INT(hearth__db_set_if_as(x->db, NULL, if_hash, path, v, on_done, o,
                                   NULL, NULL),
              0);
    hearth_node_decref(v);
}

/* Writes path = json on x and runs the loop until it is acknowledged. */
static void set_acked(uv_loop_t *loop, node *x, const char *path,
                      const char *json, outcome *o) {
    set(x, path, json, NULL, o);
    wait_for(loop, o, 1);
    CHECK_INT(o->rc, 0);
}

/* A write made on either node is acknowledged there only once that node
 * shows it, and every node ends with every write. */
static void test_writes_from_both_nodes(void) {
    pair p;
    if (!pair_start(&p))
        return;
    outcome o[4] = {{0}};
    set(&p.a, "/x", "1", NULL, &o[0]);
    set(&p.b, "/y", "2", NULL, &o[1]);
    wait_for(&p.loop, o, 2);
    CHECK_INT(o[0].rc, 0);
    CHECK_INT(o[1].rc, 0);
    CHECK(strstr(o[0].seen, "\"x\":1") != NULL);
    CHECK(strstr(o[1].seen, "\"y\":2") != NULL);
    /* Barriers: a later write on each node is ordered after both. */
    set(&p.a, "/z", "3", NULL, &o[2]);
    set(&p.b, "/z", "3", NULL, &o[3]);
    wait_for(&p.loop, o + 2, 2);
    CHECK_STR(o[2].seen, "{\"x\":1,\"y\":2,\"z\":3}");
    CHECK_STR(o[3].seen, "{\"x\":1,\"y\":2,\"z\":3}");
    pair_end(&p, o, 4);
}

/* Two nodes' compare-and-set on the same data, both made against null
 * (whose hash is ""): the leader checks each as it orders it, so exactly
 * one stands and the other is refused, changing nothing. */
static void test_compare_and_set_across_nodes(void) {
    pair p;
    if (!pair_start(&p))
        return;
    char empty[HEARTH_HASH_SIZE];
    hearth_node_t *null = hearth_node_null();
    CHECK_INT(hearth_node_hash(null, empty), 0);
    hearth_node_decref(null);
    outcome o[4] = {{0}};
    set(&p.a, "/c", "\"a\"", empty, &o[0]);
    set(&p.b, "/c", "\"b\"", empty, &o[1]);
    wait_for(&p.loop, o, 2);
    CHECK((o[0].rc == 0) != (o[1].rc == 0));
    CHECK(o[0].rc == HEARTH_EDATASTALE || o[1].rc == HEARTH_EDATASTALE);
    const char *winner = o[0].rc == 0 ? "\"a\"" : "\"b\"";
    set(&p.a, "/d", "1", NULL, &o[2]);
    set(&p.b, "/d", "1", NULL, &o[3]);
    wait_for(&p.loop, o + 2, 2);
    const hearth_node_t *c = NULL;
    CHECK_INT(hearth_node_get(hearth__db_root(p.b.db), "/c", &c, NULL), 0);
    char *json = to_json(c);
    CHECK_STR(json, winner);
    free(json);
    pair_end(&p, o, 4);
}

/* Transactions with a function run on every node: each node's counter
 * increments race, the follower's going to the leader as compare-and-set
 * and running again on what refused them, and none is lost. (Before, a
 * node that did not lead answered HEARTH_EUNSUPPORTED.) */
typedef struct tx_run {
    node *x;
    int left, committed, failed;
} tx_run;


static void tx_next(tx_run *r);

static void on_tx_done(int status, bool committed,
                       const hearth_node_t *snapshot, void *ctx) {
    (void)snapshot;
    tx_run *r = ctx;
    if (committed && status == 0)
        r->committed++;
    else
        r->failed++;
    tx_next(r);
}

/* One transaction at a time, each started by the last one's end. */
static void tx_next(tx_run *r) {
    if (r->left-- > 0)
        CHECK_INT(hearth_db_transaction(r->x->db, "/counter", test_tx_increment,
                                        on_tx_done, r, NULL, NULL),
                  0);
}

static void test_transactions_on_every_node(void) {
    pair p;
    if (!pair_start(&p))
        return;
    outcome o[2] = {{0}};
    set_acked(&p.loop, &p.a, "/counter", "0", &o[0]); /* a leader is settled */
    tx_run runs[2] = {{.x = &p.a, .left = 20}, {.x = &p.b, .left = 20}};
    tx_next(&runs[0]);
    tx_next(&runs[1]);
    while (runs[0].committed + runs[0].failed < 20 ||
           runs[1].committed + runs[1].failed < 20)
        uv_run(&p.loop, UV_RUN_ONCE);
    CHECK_INT(runs[0].failed + runs[1].failed, 0);
    CHECK_INT(runs[0].committed + runs[1].committed, 40);
    /* Barrier: a write through each node ordered after every commit. */
    set_acked(&p.loop, &p.b, "/done", "true", &o[1]);
    const hearth_node_t *c = NULL;
    CHECK_INT(hearth_node_get(hearth__db_root(p.b.db), "/counter", &c, NULL), 0);
    CHECK(c && hearth_node_number_value(c) == 40);
    node *follower = leader_of(&p) == &p.a ? &p.b : &p.a;
    tx_run *f = follower == &p.a ? &runs[0] : &runs[1];
    CHECK_INT(f->committed, 20); /* the follower's, through the leader */
    pair_end(&p, o, 2);
}

/* A node that was away comes back from its local store and its place in
 * the log, and catches up on what was written meanwhile. */
static void test_node_catches_up_after_restart(void) {
    pair p;
    if (!pair_start(&p))
        return;
    outcome o[3] = {{0}};
    set_acked(&p.loop, &p.b, "/before", "1", &o[0]);
    node_close(&p.loop, &p.b, true);
    uv_run(&p.loop, UV_RUN_NOWAIT);
    set_acked(&p.loop, &p.a, "/while_away", "2", &o[1]);
    node_open(&p.loop, &p.nats, &p.b, "t2");
    set(&p.b, "/after", "3", NULL, &o[2]); /* acknowledged once b is past it */
    wait_for(&p.loop, o + 2, 1);
    CHECK_INT(o[2].rc, 0);
    CHECK_STR(o[2].seen, "{\"after\":3,\"before\":1,\"while_away\":2}");
    pair_end(&p, o, 3);
}

/* "xxx...", len x's as a JSON string (free() it). */
static char *big_string(size_t len) {
    char *json = malloc(len + 3);
    json[0] = '"';
    memset(json + 1, 'x', len);
    strcpy(json + 1 + len, "\"");
    return json;
}

/* A group commit bigger than the servers' largest message (1 MB) goes as
 * a chain of parts, and a forwarded write that big goes to the leader in
 * parts: both nodes end with the whole value. */
static void test_record_bigger_than_a_message(void) {
    pair p;
    if (!pair_start(&p))
        return;
    size_t len = 3u << 20;
    char *json = big_string(len);
    outcome o[4] = {{0}};
    set(&p.a, "/small", "1", NULL, &o[3]); /* someone leads by its ok */
    wait_for(&p.loop, o + 3, 1);
    free(o[3].seen);
    node *leader = leader_of(&p);
    node *follower = leader == &p.a ? &p.b : &p.a;
    o[3] = (outcome){0};
    set(leader, "/big", json, NULL, &o[0]);
    wait_for(&p.loop, o, 1);
    CHECK_INT(o[0].rc, 0);
    json[1] = 'y'; /* forwarded in parts, appended as a chain */
    set(follower, "/big", json, NULL, &o[3]);
    wait_for(&p.loop, o + 3, 1);
    CHECK_INT(o[3].rc, 0);
    set(&p.a, "/after", "1", NULL, &o[1]); /* barriers on both nodes */
    set(&p.b, "/after", "1", NULL, &o[2]);
    wait_for(&p.loop, o + 1, 2);
    for (int i = 1; i < 3; i++) {
        CHECK_INT(o[i].rc, 0);
        CHECK_INT((int)strlen(o[i].seen),
                  (int)(len + strlen("{\"after\":1,\"big\":\"\",\"small\":1}")));
        CHECK(strstr(o[i].seen, "\"big\":\"yxx") != NULL);
    }
    free(json);
    pair_end(&p, o, 4);
}

/* Namespace t's stream and subject on node x, from its status. */
static void log_of(node *x, char *stream, size_t size, char *subject,
                   size_t subject_size) {
    char *status = hearth__cluster_status(x->c);
    const char *p = strstr(status, "HEARTH_P");
    CHECK(p != NULL);
    snprintf(stream, size, "HEARTH_P%d", atoi(p + 8));
    snprintf(subject, subject_size, "hearth.ns.%d.t", atoi(p + 8));
    free(status);
}

/* Appends a record of nothing to namespace t's log from outside, as a
 * leader that is not x would: x's tree is then one record behind. */
static void append_foreign(const nats_proc *nats, node *x) {
    char stream[32], subject[64];
    log_of(x, stream, sizeof stream, subject, sizeof subject);
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    CHECK_INT(natsConnection_ConnectTo(&nc, nats->url), NATS_OK);
    CHECK_INT(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
    jsPubAck *ack = NULL;
    CHECK_INT(js_Publish(&ack, js, subject, HEARTH__LOG_HEADER,
                         HEARTH__LOG_HEADER_LEN, NULL, NULL),
              NATS_OK);
    jsPubAck_Destroy(ack);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}

/* The local log as a restart finds it. */
static char *stored(const char *dir) {
    hearth__store *s = NULL;
    hearth_node_t *root = NULL;
    hearth_error_t err;
    CHECK_INT(hearth__store_open(dir, HEARTH_FSYNC_ALWAYS, &s, &root, NULL,
                                 &err),
              0);
    char *json = to_json(root);
    hearth_node_decref(root);
    CHECK_INT(hearth__store_close(s), 0);
    return json;
}

/* Ends a single_start test: node a's local log, as a restart finds it,
 * holds json. */
static void single_end(pair *p, outcome *o, int n, const char *json) {
    node_close(&p->loop, &p->a, true);
    uv_run(&p->loop, UV_RUN_DEFAULT);
    char *local = stored(p->a.dir);
    CHECK_STR(local, json);
    free(local);
    for (int i = 0; i < n; i++)
        free(o[i].seen);
    CHECK_INT(uv_loop_close(&p->loop), 0);
    remove_tree(p->a.dir);
    nats_stop(&p->nats);
}

/* The leader writes its local log while the stream answers: a record the
 * stream refuses (10071, another record came first) is cut back out of
 * the local log, and an acknowledged one is there after a restart. */
static void test_refused_append_leaves_local_log_without_it(void) {
    pair p;
    if (!single_start(&p))
        return;
    outcome o[2] = {{0}};
    set(&p.a, "/x", "1", NULL, &o[0]); /* acknowledged: a leads by then */
    wait_for(&p.loop, o, 1);
    CHECK_INT(o[0].rc, 0);
    /* The foreign record is in the stream before a's next append, whose
     * commit starts before the loop can see the record. */
    append_foreign(&p.nats, &p.a);
    set(&p.a, "/refused", "2", NULL, &o[1]);
    wait_for(&p.loop, o + 1, 1);
    CHECK_INT(o[1].rc, HEARTH_EIO);
    CHECK_STR(o[1].seen, "{\"x\":1}");
    single_end(&p, o, 2, "{\"x\":1}");
}

/* What a leader killed in its append's window leaves: a group written
 * and synced in its local log whose append the stream never got (the
 * same bytes a store commit writes, added while the node is down). */
static void phantom_write(const char *dir) {
    hearth__store *s = NULL;
    hearth_node_t *root = NULL;
    hearth_error_t err;
    CHECK_INT(hearth__store_open(dir, HEARTH_FSYNC_ALWAYS, &s, &root, NULL,
                                 &err),
              0);
    hearth_node_decref(root);
    hearth__path p;
    CHECK_INT(hearth__path_parse("/phantom", 0, &p, NULL), 0);
    const hearth__path *paths[] = {&p};
    hearth_node_t *v = node_from("2");
    const hearth_node_t *values[] = {v};
    CHECK_INT(hearth__store_append(s, paths, values, 1), 0);
    hearth_node_decref(v);
    CHECK_INT(hearth__store_commit(s), 0);
    CHECK_INT(hearth__store_close(s), 0);
}

/* The length of log.1 in dir. */
static long stored_bytes(const char *dir) {
    char path[128];
    snprintf(path, sizeof path, "%s/log.1", dir);
    struct stat st;
    CHECK_INT(stat(path, &st), 0);
    return (long)st.st_size;
}

/* A node restarted after the leader's window (its local log synced a
 * group the stream never got) drops that group and holds what the
 * stream holds, with every acknowledged write. */
static void test_restart_drops_a_write_the_stream_never_got(void) {
    pair p;
    if (!single_start(&p))
        return;
    outcome o[2] = {{0}};
    set_acked(&p.loop, &p.a, "/x", "1", &o[0]);
    node_close(&p.loop, &p.a, false);
    long synced = stored_bytes(p.a.dir);
    phantom_write(p.a.dir);
    node_open(&p.loop, &p.nats, &p.a, "t1");
    /* Barrier: acknowledged once the reopened node is past the log. */
    set_acked(&p.loop, &p.a, "/y", "3", &o[1]);
    CHECK_STR(o[1].seen, "{\"x\":1,\"y\":3}");
    /* What was cut is kept aside, synced, as a log of its own. */
    char aside[128];
    snprintf(aside, sizeof aside, "%s/cut.1.%ld", p.a.dir, synced);
    CHECK(access(aside, F_OK) == 0);
    single_end(&p, o, 2, "{\"x\":1,\"y\":3}");
}

/* Runs the loop until x's tree has /w = value. */
static void wait_seen(uv_loop_t *loop, node *x, const char *value) {
    for (;;) {
        const hearth_node_t *w = NULL;
        char *json = NULL;
        if (hearth_node_get(hearth__db_root(x->db), "/w", &w, NULL) == 0)
            json = to_json(w);
        bool seen = json && strcmp(json, value) == 0;
        free(json);
        if (seen)
            return;
        uv_run(loop, UV_RUN_ONCE);
    }
}

/* Only the leader syncs each group before its ok: a follower's local log
 * holds records the stream keeps, so it syncs them at most once a second
 * (its disk is not in every write's path). 20 serial writes cost about 20
 * fsyncs in the process, not 40. */
static void test_followers_sync_the_log_lazily(void) {
    pair p;
    if (!pair_start(&p))
        return;
    outcome first[2] = {{0}};
    set(&p.a, "/w", "0", NULL, &first[0]);
    set(&p.b, "/w", "0", NULL, &first[1]);
    wait_for(&p.loop, first, 2);
    node *leader = leader_of(&p);
    node *follower = leader == &p.a ? &p.b : &p.a;
    uint64_t before = atomic_load(&hearth__hist_log_fsync.count);
    enum { WRITES = 20 };
    outcome o[WRITES + 1] = {{0}};
    for (int i = 0; i < WRITES; i++) {
        char value[16];
        snprintf(value, sizeof value, "%d", i + 1);
        set(leader, "/w", value, NULL, &o[i]);
        wait_for(&p.loop, &o[i], 1);
        CHECK_INT(o[i].rc, 0);
        wait_seen(&p.loop, follower, value); /* each its own commit there */
    }
    /* A barrier: acknowledged once the follower has applied them all. */
    set(follower, "/after", "1", NULL, &o[WRITES]);
    wait_for(&p.loop, &o[WRITES], 1);
    CHECK_INT(o[WRITES].rc, 0);
    uint64_t syncs = atomic_load(&hearth__hist_log_fsync.count) - before;
    CHECK(syncs >= WRITES);
    CHECK(syncs <= WRITES + 5);
    for (int i = 0; i < 2; i++)
        free(first[i].seen);
    pair_end(&p, o, WRITES + 1);
}

/* The number after "key": in x's status (0: none). */
static uint64_t status_number(node *x, const char *key) {
    char *status = hearth__cluster_status(x->c);
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *p = strstr(status, pattern);
    uint64_t v = p ? strtoull(p + strlen(pattern), NULL, 10) : 0;
    free(status);
    return v;
}

/* Purges t's subject below its last record, from outside (what retention
 * does once every live node holds the rest). */
static void purge_below_last(const nats_proc *nats, node *x) {
    char stream[32], subject[64];
    log_of(x, stream, sizeof stream, subject, sizeof subject);
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    CHECK_INT(natsConnection_ConnectTo(&nc, nats->url), NATS_OK);
    CHECK_INT(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Stream.Purge.Subject = subject;
    jo.Stream.Purge.Sequence = status_number(x, "seq");
    CHECK_INT(js_PurgeStream(js, stream, &jo, NULL), NATS_OK);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}

/* A node that joins with nothing loads a peer's snapshot and tails the
 * log from its sequence: the log's start may be gone, and it ends with
 * the same data (same root hash) as the node it got it from. */
static void test_fresh_node_joins_from_a_peer_snapshot(void) {
    pair p;
    if (!single_start(&p))
        return;
    outcome o[4] = {{0}};
    set(&p.a, "/x", "1", NULL, &o[0]);
    wait_for(&p.loop, o, 1);
    /* past the largest message: the snapshot comes in parts */
    size_t len = 3u << 20;
    char *big = big_string(len);
    set(&p.a, "/y", big, NULL, &o[1]);
    free(big);
    wait_for(&p.loop, o + 1, 1);
    CHECK_INT(o[1].rc, 0);
    /* a's snapshot is at its last record once its tail has drained */
    while (status_number(&p.a, "snapshot_seq") != status_number(&p.a, "seq"))
        uv_run(&p.loop, UV_RUN_ONCE);
    purge_below_last(&p.nats, &p.a);
    node_open(&p.loop, &p.nats, &p.b, "t2");
    set(&p.b, "/after", "3", NULL, &o[2]); /* a barrier through b */
    wait_for(&p.loop, o + 2, 1);
    CHECK_INT(o[2].rc, 0);
    CHECK(strncmp(o[2].seen, "{\"after\":3,\"x\":1,\"y\":\"xxx", 24) == 0);
    CHECK_INT((int)strlen(o[2].seen),
              (int)(len + strlen("{\"after\":3,\"x\":1,\"y\":\"\"}")));
    set(&p.a, "/after", "3", NULL, &o[3]);
    wait_for(&p.loop, o + 3, 1);
    same_data(&p.a, &p.b);
    pair_end(&p, o, 4);
}

/* The leader purges the log below what every live node holds (in a few
 * seconds: never past where the log was at its previous purge round), and
 * a node joining afterwards with nothing loads a peer's snapshot: it ends
 * with the same data (same root hash). */
static void test_leader_purges_and_a_new_node_joins(void) {
    pair p;
    if (!pair_start(&p))
        return;
    hearth__cluster_set_retain_ticks(p.a.c, 4); /* every 2 s, not 60 */
    hearth__cluster_set_retain_ticks(p.b.c, 4);
    outcome o[4] = {{0}};
    set(&p.a, "/x", "1", NULL, &o[0]);
    wait_for(&p.loop, o, 1);
    set(&p.b, "/y", "2", NULL, &o[1]);
    wait_for(&p.loop, o + 1, 1);
    CHECK_INT(o[1].rc, 0);
    node *leader = leader_of(&p);
    while (status_number(leader, "purged_through") < 1)
        uv_run(&p.loop, UV_RUN_ONCE);
    node c = {0};
    node_open(&p.loop, &p.nats, &c, "t3");
    set(&c, "/after", "3", NULL, &o[2]); /* a barrier through c */
    wait_for(&p.loop, o + 2, 1);
    CHECK_INT(o[2].rc, 0);
    CHECK_STR(o[2].seen, "{\"after\":3,\"x\":1,\"y\":2}");
    set(&p.a, "/after", "3", NULL, &o[3]);
    wait_for(&p.loop, o + 3, 1);
    same_data(&p.a, &c);
    node_close(&p.loop, &c, true);
    remove_tree(c.dir);
    pair_end(&p, o, 4);
}

const test_case cluster_tests[] = {
    {"cluster_record_bigger_than_a_message",
     test_record_bigger_than_a_message},
    {"cluster_writes_from_both_nodes", test_writes_from_both_nodes},
    {"cluster_compare_and_set_across_nodes",
     test_compare_and_set_across_nodes},
    {"cluster_refused_append_leaves_local_log_without_it",
     test_refused_append_leaves_local_log_without_it},
    {"cluster_followers_sync_the_log_lazily",
     test_followers_sync_the_log_lazily},
    {"cluster_fresh_node_joins_from_a_peer_snapshot",
     test_fresh_node_joins_from_a_peer_snapshot},
    {"cluster_leader_purges_and_a_new_node_joins",
     test_leader_purges_and_a_new_node_joins},
    {"cluster_restart_drops_a_write_the_stream_never_got",
     test_restart_drops_a_write_the_stream_never_got},
    {"cluster_node_catches_up_after_restart",
     test_node_catches_up_after_restart},
    {"cluster_transactions_on_every_node", test_transactions_on_every_node},
    {NULL, NULL},
};
