/* test_cluster.c - the cluster backend (cluster/) against a real
 * nats-server with JetStream on a free loopback port: two nodes of one
 * process share a loop, each with its own data directory. Skipped (passes
 * with a note) where nats-server is not installed. */
#include "test.h"

#include "cluster/cluster.h"
#include "cluster/node.h"
#include "cluster/sealing.h"
#include "common/histogram.h"
#include "db/check.h"
#include "db/db.h"
#include "db/embedded.h"
#include "store/logfile.h"
#include "store/records.h"
#include "store/store.h"
#include "triggers/spool.h"

#include <nats/nats.h>
#include <fcntl.h>
#include <openssl/ssl.h>
#include <stdarg.h>
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

/* The nats-server to run, with n's directory made for it; NULL (said):
 * not installed, the test is skipped. */
static const char *nats_prepare(nats_proc *n) {
    const char *bin = nats_bin();
    if (!bin) {
        printf("  (skipped: nats-server is not installed)\n");
        return NULL;
    }
    strcpy(n->dir, "/tmp/hearth-nats-XXXXXX");
    CHECK(mkdtemp(n->dir) != NULL);
    return bin;
}

/* Runs argv (argv[0] the binary; its output to /dev/null) as n's
 * nats-server and waits until it accepts a connection on port. */
static bool nats_run(nats_proc *n, int port, char *const argv[]) {
    n->pid = fork();
    if (n->pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    for (int i = 0; i < 100; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port)};
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

static bool nats_start(nats_proc *n) {
    const char *bin = nats_prepare(n);
    if (!bin)
        return false;
    char port[16];
    int p = free_port();
    snprintf(port, sizeof port, "%d", p);
    snprintf(n->url, sizeof n->url, "nats://127.0.0.1:%d", p);
    char *const argv[] = {(char *)bin, "-js", "-a", "127.0.0.1", "-p", port,
                          "-sd", n->dir, NULL};
    return nats_run(n, p, argv);
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

/* The cluster secret file the nodes of the sealed tests share (NULL:
 * nodes run --cluster-insecure). */
static const char *sealed_with;

static void node_open(uv_loop_t *loop, const nats_proc *n, node *x,
                      const char *name) {
    if (!x->dir[0]) {
        strcpy(x->dir, "/tmp/hearth-node-XXXXXX");
        CHECK(mkdtemp(x->dir) != NULL);
    }
    hearth_error_t err;
    if (!x->c) {
        hearth__cluster_options o = {.urls = n->url, .node = name,
                                     .secret_file = sealed_with,
                                     .insecure = !sealed_with};
        int rc = hearth__cluster_start(loop, &o, &x->c, &err);
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

/* Sets path = json in x's tree and local store without the log, as a
 * lost record or a damaged file would leave it: x's tree is no longer
 * the log up to the sequence it reports. */
static void corrupt(node *x, const char *path, const char *json) {
    hearth__cluster_ns *n = hearth__cluster_ns_of(x->db);
    hearth__db_op *o = NULL;
    CHECK_INT(hearth__db_write_op_create(1, NULL, NULL, NULL, &o), 0);
    CHECK_INT(hearth__db_parse_write_path(path, 0, &o->parts[0].text,
                                          &o->parts[0].path, NULL),
              0);
    o->parts[0].value = node_from(json);
    hearth__cluster_apply_record(n, o);
    x->db->backend->settle(x->db, true);
}

static void wait_seen(uv_loop_t *loop, node *x, const char *value);

/* Runs the loop until x's namespace is (or is no longer) unavailable. */
static void wait_unavailable(uv_loop_t *loop, node *x, bool unavailable) {
    while (hearth__db_unavailable(x->db) != unavailable)
        uv_run(loop, UV_RUN_ONCE);
}

/* Anti-entropy: a follower whose tree lost a record (it holds a hole the
 * log does not) finds, by the checkpoints' root hashes at the same
 * sequence, that it differs from the leader; stops serving the namespace
 * (unavailable: the server answers 503); and rebuilds it from the
 * leader's snapshot, after which both hold the same data and later writes
 * reach both. */
static void test_diverged_follower_stops_and_rebuilds(void) {
    pair p;
    if (!pair_start(&p))
        return;
    outcome o[4] = {{0}};
    set_acked(&p.loop, &p.a, "/x", "1", &o[0]);
    node *leader = leader_of(&p), *follower = leader == &p.a ? &p.b : &p.a;
    set_acked(&p.loop, leader, "/w", "1", &o[1]);
    wait_seen(&p.loop, follower, "1");
    corrupt(follower, "/x", "null"); /* the hole */
    set_acked(&p.loop, leader, "/w", "2", &o[2]); /* a sequence past it */
    wait_unavailable(&p.loop, follower, true);
    char *status = hearth__cluster_status(follower->c);
    CHECK(strstr(status, "\"diverged\":true") != NULL);
    CHECK(strstr(status, "\"divergences\":1") != NULL);
    free(status);
    wait_unavailable(&p.loop, follower, false);
    /* Barrier: a write after the rebuild reaches the follower's tail. */
    set_acked(&p.loop, leader, "/w", "3", &o[3]);
    wait_seen(&p.loop, follower, "3");
    same_data(leader, follower);
    CHECK(!hearth__db_unavailable(leader->db));
    pair_end(&p, o, 4);
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

/* A connection of an outsider: every NATS permission, no secret. */
static natsConnection *outsider(const nats_proc *nats, jsCtx **js) {
    natsConnection *nc = NULL;
    CHECK_INT(natsConnection_ConnectTo(&nc, nats->url), NATS_OK);
    if (js)
        CHECK_INT(natsConnection_JetStream(js, nc, NULL), NATS_OK);
    return nc;
}

/* Closes what outsider opened with a JetStream context. */
static void outsider_close(natsConnection *nc, jsCtx *js) {
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}

/* An outsider's connection, with namespace t's stream and subject on
 * node x: what the tests use to act on the log behind the nodes' backs. */
typedef struct outside_log {
    natsConnection *nc;
    jsCtx *js;
    char stream[32], subject[64];
} outside_log;

static void outside_log_open(const nats_proc *nats, node *x, outside_log *o) {
    log_of(x, o->stream, sizeof o->stream, o->subject, sizeof o->subject);
    o->nc = outsider(nats, &o->js);
}

/* Appends a record to namespace t's log from outside, as a leader that
 * is not x would, fenced on nothing: one write of path = json, or none
 * (path NULL). x's tree is then one record behind. */
static void append_foreign(const nats_proc *nats, node *x, const char *path,
                           const char *json) {
    hearth__buf bytes;
    hearth__buf_init(&bytes);
    hearth__buf_add(&bytes, HEARTH__LOG_HEADER, HEARTH__LOG_HEADER_LEN);
    if (path) {
        hearth__records r;
        hearth__records_init(&r);
        hearth__path at;
        CHECK_INT(hearth__path_parse(path, 0, &at, NULL), 0);
        const hearth__path *paths[] = {&at};
        hearth_node_t *v = node_from(json);
        const hearth_node_t *values[] = {v};
        CHECK_INT(hearth__records_add(&r, paths, values, 1), 0);
        CHECK_INT(hearth__records_write(&r, &bytes), 0);
        hearth_node_decref(v);
        hearth__records_clear(&r);
    }
    outside_log out;
    outside_log_open(nats, x, &out);
    jsPubAck *ack = NULL;
    CHECK_INT(js_Publish(&ack, out.js, out.subject, bytes.data,
                         (int)bytes.len, NULL, NULL),
              NATS_OK);
    jsPubAck_Destroy(ack);
    outsider_close(out.nc, out.js);
    hearth__buf_free(&bytes);
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
    append_foreign(&p.nats, &p.a, NULL, NULL);
    set(&p.a, "/refused", "2", NULL, &o[1]);
    wait_for(&p.loop, o + 1, 1);
    CHECK_INT(o[1].rc, HEARTH_EIO);
    CHECK_STR(o[1].seen, "{\"x\":1}");
    single_end(&p, o, 2, "{\"x\":1}");
}

/* A leader that loses its lease while its own append is in flight (it
 * was paused, another node led meanwhile), and has the append refused:
 * the other leader's records that reach it in that window apply after
 * the refused write is undone, never before it (the undo would take them
 * too, and the tree would keep a hole under a sequence that says it holds
 * them). Its tree ends with every record of the log. */
static void test_records_of_a_new_leader_survive_a_refused_append(void) {
    pair p;
    if (!single_start(&p))
        return;
    outcome o[3] = {{0}};
    hearth__db_set_group_commit(p.a.db, true); /* as the server has it */
    set_acked(&p.loop, &p.a, "/x", "1", &o[0]);
    append_foreign(&p.nats, &p.a, "/f", "\"from the new leader\"");
    /* Its append's answer comes late: the record arrives meanwhile. */
    hearth__cluster_set_append_delay(p.a.c, 500);
    set(&p.a, "/refused", "2", NULL, &o[1]);
    hearth__embedded *e = p.a.db->impl;
    while (!e->committing) /* its append is in flight: a loses its lease */
        uv_run(&p.loop, UV_RUN_NOWAIT);
    hearth__cluster_step_down(hearth__cluster_ns_of(p.a.db));
    wait_for(&p.loop, o + 1, 1);
    hearth__cluster_set_append_delay(p.a.c, 0);
    CHECK_INT(o[1].rc, HEARTH_EIO);
    /* Barrier: acknowledged once a leads again, past the whole log. */
    set_acked(&p.loop, &p.a, "/y", "3", &o[2]);
    CHECK_STR(o[2].seen, "{\"f\":\"from the new leader\",\"x\":1,\"y\":3}");
    single_end(&p, o, 3, "{\"f\":\"from the new leader\",\"x\":1,\"y\":3}");
}

/* Part 1 of 2 of a chain whose leader died before its second, put in
 * namespace t's log from outside (unfenced, as append_foreign): its
 * sequence. */
static uint64_t append_chain_cut_short(const nats_proc *nats, node *x) {
    outside_log out;
    outside_log_open(nats, x, &out);
    natsMsg *m = NULL;
    CHECK_INT(natsMsg_Create(&m, out.subject, NULL, HEARTH__LOG_HEADER,
                             HEARTH__LOG_HEADER_LEN),
              NATS_OK);
    CHECK_INT(hearth__cluster_part_mark(m, 1, 2), NATS_OK);
    jsPubAck *ack = NULL;
    CHECK_INT(js_PublishMsg(&ack, out.js, m, NULL, NULL), NATS_OK);
    uint64_t seq = ack ? ack->Sequence : 0;
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(m);
    outsider_close(out.nc, out.js);
    return seq;
}

/* Namespace t's stream refuses messages over max bytes (-1: none). */
static void stream_max_msg_size(const nats_proc *nats, node *x, int32_t max) {
    outside_log out;
    outside_log_open(nats, x, &out);
    jsStreamInfo *si = NULL, *updated = NULL;
    CHECK_INT(js_GetStreamInfo(&si, out.js, out.stream, NULL, NULL), NATS_OK);
    if (si) {
        si->Config->MaxMsgSize = max;
        CHECK_INT(js_UpdateStream(&updated, out.js, si->Config, NULL, NULL),
                  NATS_OK);
    }
    jsStreamInfo_Destroy(updated);
    jsStreamInfo_Destroy(si);
    outsider_close(out.nc, out.js);
}

/* A chain cut short (its leader died between its parts) is cut by the
 * next record on every node, the leader too, whose own record it is and
 * which never applies it. Kept open there, a later refused append would
 * rewind the leader to before the chain's first part, past its own
 * records, which nothing delivers again: it would hold every write,
 * waiting for them, for ever (and take no snapshot meanwhile). */
static void test_leader_cuts_a_chain_cut_short(void) {
    pair p;
    if (!single_start(&p))
        return;
    outcome o[4] = {{0}};
    set_acked(&p.loop, &p.a, "/x", "1", &o[0]);
    hearth__cluster_ns *n = hearth__cluster_ns_of(p.a.db);
    uint64_t part = append_chain_cut_short(&p.nats, &p.a);
    while (hearth__cluster_applied_seq(n) < part)
        uv_run(&p.loop, UV_RUN_ONCE);
    CHECK(hearth__cluster_chain_open(n));
    set_acked(&p.loop, &p.a, "/y", "2", &o[1]);
    CHECK(!hearth__cluster_chain_open(n));
    uint64_t own = hearth__cluster_applied_seq(n);
    while (n->tail.tail_last < own) /* its record back, and dropped */
        uv_run(&p.loop, UV_RUN_ONCE);
    /* An append refused with nothing stored after it (the stream's
     * largest message made smaller than any record) */
    stream_max_msg_size(&p.nats, &p.a, 8);
    set(&p.a, "/refused", "3", NULL, &o[2]);
    wait_for(&p.loop, o + 2, 1);
    CHECK_INT(o[2].rc, HEARTH_EIO);
    stream_max_msg_size(&p.nats, &p.a, -1);
    /* Barrier: acknowledged once a leads again, its tree at the log's
     * end (a node held for ever fails the bound). */
    set(&p.a, "/z", "4", NULL, &o[3]);
    double end = test_seconds() + 15;
    while (!o[3].done && test_seconds() < end)
        uv_run(&p.loop, UV_RUN_ONCE);
    CHECK(o[3].done);
    if (!o[3].done)
        return; /* held: what it holds stays (the test has failed) */
    CHECK_INT(o[3].rc, 0);
    CHECK_STR(o[3].seen, "{\"x\":1,\"y\":2,\"z\":4}");
    single_end(&p, o, 4, "{\"x\":1,\"y\":2,\"z\":4}");
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
    outside_log out;
    outside_log_open(nats, x, &out);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Stream.Purge.Subject = out.subject;
    jo.Stream.Purge.Sequence = status_number(x, "seq");
    CHECK_INT(js_PurgeStream(out.js, out.stream, &jo, NULL), NATS_OK);
    outsider_close(out.nc, out.js);
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

/* ---- trust: the cluster secret, NATS's credentials and TLS ---- */

/* dir/name holding text, readable by its owner alone (as key files are). */
static void write_private(const char *dir, const char *name, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_text(path, text);
    CHECK_INT(chmod(path, 0600), 0);
}

/* A user NKey: its seed (as `nk -gen user` writes it) and public key. */
#define NKEY_SEED "SUAMK2FG4MI6UE3ACF3FK3OIQBCEIEZV7NSWFFEW63UXMRLFM2XLAXK4GY"
#define NKEY_PUB "UAT6BWCSCWLUKJT6K6MBJJOEOTXZ5AJDOYKNEVRFC7VNO6OA43N4TRNO"

/* What needs no NATS: a node with neither a secret nor insecure, or both,
 * or a secret file that cannot be used, is refused, saying why (a server
 * before it makes its data directory); URLs' credentials are masked. */
static void test_trust_refusals(void) {
    char dir[64];
    strcpy(dir, "/tmp/hearth-trust-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    uv_loop_t loop;
    uv_loop_init(&loop);
    hearth__cluster *c = NULL;
    hearth_error_t err;
    hearth__cluster_options o = {.urls = "nats://u:pw@127.0.0.1:1",
                                 .node = "n1"};
    CHECK_INT(hearth__cluster_start(&loop, &o, &c, &err), HEARTH_EINVAL);
    CHECK_STR(err.message, HEARTH__CLUSTER_SECRET_REQUIRED);
    o.insecure = true;
    o.secret_file = "/nonexistent/cluster.key";
    CHECK_INT(hearth__cluster_start(&loop, &o, &c, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "not both") != NULL);
    o.insecure = false;
    CHECK(hearth__cluster_start(&loop, &o, &c, &err) != 0);
    CHECK(strstr(err.message, "cluster: ") == err.message);
    CHECK(strstr(err.message, "/nonexistent/cluster.key") != NULL);
    write_private(dir, "short.key", "too short\n");
    char path[128];
    snprintf(path, sizeof path, "%s/short.key", dir);
    o.secret_file = path;
    CHECK_INT(hearth__cluster_start(&loop, &o, &c, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, path) != NULL);
    CHECK(c == NULL);
    CHECK_INT(uv_loop_close(&loop), 0);

    /* The server refuses before it makes its data directory. */
    char data[128];
    snprintf(data, sizeof data, "%s/data", dir);
    hearth_server_config_t config = {.size = sizeof config,
                                     .data_dir = data,
                                     .cluster = "nats://127.0.0.1:1",
                                     .node = "n1"};
    hearth_server_t *s = NULL;
    CHECK_INT(hearth_server_start(&config, &s, &err), HEARTH_EINVAL);
    CHECK_STR(err.message, HEARTH__CLUSTER_SECRET_REQUIRED);
    CHECK(access(data, F_OK) != 0);

    char out[160];
    hearth__cluster_mask_urls("no server at nats://u:p@h:4222,tls://tok@h2:4222"
                              " and nats://h3:4222 (tls://a:b/c@h4)",
                              out, sizeof out);
    CHECK_STR(out, "no server at nats://***@h:4222,tls://***@h2:4222 and "
                   "nats://h3:4222 (tls://***@h4)");
    hearth__cluster_mask_urls("nats://user:password@host", out, 12);
    CHECK_STR(out, "nats://***@");
    remove_tree(dir);
}

/* A nats-server that takes TLS only (a CA made here) and two users: a
 * password one and an NKey one. */
static bool nats_start_secure(nats_proc *n, const char *pki) {
    const char *bin = nats_prepare(n);
    if (!bin)
        return false;
    int p = free_port();
    snprintf(n->url, sizeof n->url, "tls://127.0.0.1:%d", p);
    char conf[8192], path[128];
    snprintf(conf, sizeof conf,
             "listen: 127.0.0.1:%d\n"
             "jetstream { store_dir: \"%s/js\" }\n"
             "tls { cert_file: \"%s/server.pem\", key_file: "
             "\"%s/server.key\", ca_file: \"%s/ca.pem\", timeout: 2 }\n"
             "authorization { users: [\n"
             " { user: \"hearth\", password: \"s3cret/pw\" }\n"
             " { nkey: \"%s\" }\n"
             "] }\n",
             p, n->dir, pki, pki, pki, NKEY_PUB);
    write_private(n->dir, "nats.conf", conf);
    snprintf(path, sizeof path, "%s/nats.conf", n->dir);
    char *const argv[] = {(char *)bin, "-c", path, NULL};
    return nats_run(n, p, argv);
}

/* Joins with o, then leaves at once: 0 or the error. */
static int join_and_leave(const hearth__cluster_options *o,
                          hearth_error_t *err) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    hearth__cluster *c = NULL;
    int rc = hearth__cluster_start(&loop, o, &c, err);
    if (!rc) {
        hearth__cluster_stop(c);
        uv_run(&loop, UV_RUN_DEFAULT);
    }
    CHECK_INT(uv_loop_close(&loop), 0);
    return rc;
}

/* A node joins a NATS that takes TLS and authorization with a user file
 * or an NKey seed file, the CA trusted, the cluster secret loaded; a file
 * at fault is named; without the CA, or with a wrong password (in the
 * URL: never shown), it is refused. */
static void test_nats_auth_and_tls(void) {
    char pki[64];
    strcpy(pki, "/tmp/hearth-nats-pki-XXXXXX");
    CHECK(mkdtemp(pki) != NULL);
    CHECK_INT(test_sh("cd %s && openssl req -x509 -newkey ec -pkeyopt "
                 "ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem "
                 "-days 2 -subj /CN=ca >/dev/null 2>&1 && printf "
                 "'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext "
                 "&& openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
                 "-nodes -keyout server.key -out server.csr -subj /CN=localhost"
                 " >/dev/null 2>&1 && openssl x509 -req -in server.csr -CA "
                 "ca.pem -CAkey ca.key -set_serial 7 -days 2 -extfile san.ext "
                 "-out server.pem >/dev/null 2>&1",
                 pki),
              0);
    nats_proc n;
    if (!nats_start_secure(&n, pki)) {
        remove_tree(pki);
        return;
    }
    write_private(pki, "cluster.key",
               "0123456789abcdef0123456789abcdef0123456789ab\n");
    write_private(pki, "nats.user", "hearth\ns3cret/pw\n");
    write_private(pki, "one-line.user", "hearth\n");
    write_private(pki, "user.nk", "# SUMMARY: a user's seed (SU...)\n" NKEY_SEED "\n");
    write_private(pki, "bad.nk", "SUNOTASEED\n");
    write_private(pki, "not.pem", "not a certificate\n");
    char secret[128], user[128], one_line[128], nk[128], bad_nk[128], ca[128],
        not_pem[128];
    snprintf(secret, sizeof secret, "%s/cluster.key", pki);
    snprintf(user, sizeof user, "%s/nats.user", pki);
    snprintf(one_line, sizeof one_line, "%s/one-line.user", pki);
    snprintf(nk, sizeof nk, "%s/user.nk", pki);
    snprintf(bad_nk, sizeof bad_nk, "%s/bad.nk", pki);
    snprintf(ca, sizeof ca, "%s/ca.pem", pki);
    snprintf(not_pem, sizeof not_pem, "%s/not.pem", pki);
    hearth_error_t err;
    hearth__cluster_options o = {.urls = n.url, .node = "n1",
                                 .secret_file = secret, .user_file = user,
                                 .ca_file = ca};
    int rc = join_and_leave(&o, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.message);
    CHECK_INT(rc, 0);
    /* An NKey instead of the user; a plain nats:// URL, TLS by the CA. */
    char plain[80];
    snprintf(plain, sizeof plain, "nats://%s", n.url + strlen("tls://"));
    hearth__cluster_options k = {.urls = plain, .node = "n2",
                                 .insecure = true, .nkey_seed_file = nk,
                                 .ca_file = ca};
    rc = join_and_leave(&k, &err);
    if (rc)
        fprintf(stderr, "  %s\n", err.message);
    CHECK_INT(rc, 0);
    /* Files at fault, named. */
    hearth__cluster_options f = o;
    f.user_file = one_line;
    CHECK_INT(join_and_leave(&f, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, one_line) != NULL);
    f = k;
    f.nkey_seed_file = bad_nk;
    CHECK_INT(join_and_leave(&f, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, bad_nk) != NULL);
    f = o;
    f.ca_file = not_pem;
    CHECK_INT(join_and_leave(&f, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, not_pem) != NULL);
    f = o;
    f.cert_file = ca; /* without its key */
    CHECK_INT(join_and_leave(&f, &err), HEARTH_EINVAL);
    CHECK(strstr(err.message, "key") != NULL);
    f = o;
    f.token_file = user;
    CHECK_INT(join_and_leave(&f, &err), HEARTH_EINVAL);
    /* Refused: no CA (the certificate is not trusted), a wrong password
     * in the URL (not shown), no credentials. */
    f = o;
    f.ca_file = NULL;
    CHECK(join_and_leave(&f, &err) != 0);
    char wrong[128];
    snprintf(wrong, sizeof wrong, "tls://hearth:WRONGpw@%s",
             n.url + strlen("tls://"));
    f = o;
    f.urls = wrong;
    f.user_file = NULL;
    CHECK(join_and_leave(&f, &err) != 0);
    CHECK(strstr(err.message, "WRONGpw") == NULL);
    f = o;
    f.user_file = NULL;
    CHECK(join_and_leave(&f, &err) != 0);
    nats_stop(&n);
    /* Once libnats has used TLS, its nats_Close (in nats_stop) leaves
     * OpenSSL's list of compression methods so that OpenSSL's own cleanup
     * at exit crashes on it (a NULL read in OPENSSL_sk_pop_free): the
     * list is taken away and freed here first. Hearth never calls
     * nats_Close. */
    sk_SSL_COMP_free(SSL_COMP_set0_compression_methods(NULL));
    remove_tree(pki);
}

/* ---- sealed: NATS as untrusted transport and storage ---- */

/* Starts a sealed test with start (pair_start or single_start): the nodes
 * it opens share a cluster secret (a file in dir, made here) until
 * sealed_end. false: skipped, and the secret is gone again. */
static bool sealed_start(pair *p, char *dir, bool (*start)(pair *)) {
    strcpy(dir, "/tmp/hearth-sealed-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    write_private(dir, "cluster.key",
               "sealed-test-secret-0123456789abcdef0123456789\n");
    static char path[128];
    snprintf(path, sizeof path, "%s/cluster.key", dir);
    sealed_with = path;
    if (start(p))
        return true;
    sealed_with = NULL;
    remove_tree(dir);
    return false;
}

/* Ends a sealed test: p as pair_end ends it, then the secret. */
static void sealed_end(pair *p, outcome *o, int n, const char *dir) {
    pair_end(p, o, n);
    sealed_with = NULL;
    remove_tree(dir);
}

/* Runs the loop until x has dropped more than `than` messages of kind. */
static void wait_rejected(uv_loop_t *loop, node *x, hearth__reject_kind kind,
                          uint64_t than) {
    while (hearth__cluster_rejected_count(x->c, kind) <= than)
        uv_run(loop, UV_RUN_ONCE);
}

/* Runs the loop until key in kv holds a value other than bad (bad NULL:
 * until the key exists again): a node put its own back. */
static void wait_put_back(uv_loop_t *loop, kvStore *kv, const char *key,
                          const void *bad, size_t bad_len) {
    for (;;) {
        kvEntry *e = NULL;
        bool back = kvStore_Get(&e, kv, key) == NATS_OK &&
                    kvEntry_Operation(e) == kvOp_Put &&
                    (!bad || (size_t)kvEntry_ValueLen(e) != bad_len ||
                     memcmp(kvEntry_Value(e), bad, bad_len) != 0);
        kvEntry_Destroy(e);
        if (back)
            return;
        uv_run(loop, UV_RUN_NOWAIT);
        usleep(10 * 1000);
    }
}

/* Runs the loop for about ms. */
static void run_for(uv_loop_t *loop, int ms) {
    double end = test_seconds() + ms / 1000.0;
    while (test_seconds() < end) {
        uv_run(loop, UV_RUN_NOWAIT);
        usleep(5 * 1000);
    }
}

/* Whether any message of namespace t's log holds text (searched in the
 * raw bytes the stream keeps). */
static bool log_holds(const nats_proc *nats, node *x, const char *text) {
    char stream[32], subject[64];
    log_of(x, stream, sizeof stream, subject, sizeof subject);
    jsCtx *js = NULL;
    natsConnection *nc = outsider(nats, &js);
    jsStreamInfo *si = NULL;
    CHECK_INT(js_GetStreamInfo(&si, js, stream, NULL, NULL), NATS_OK);
    uint64_t last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    bool found = false;
    for (uint64_t seq = 1; seq <= last; seq++) {
        natsMsg *m = NULL;
        if (js_GetMsg(&m, js, stream, seq, NULL, NULL) != NATS_OK)
            continue;
        found = found || memmem(natsMsg_GetData(m),
                                (size_t)natsMsg_GetDataLength(m), text,
                                strlen(text)) != NULL;
        natsMsg_Destroy(m);
    }
    outsider_close(nc, js);
    return found;
}

/* Sealed, the log holds no plaintext, and a record that does not open
 * where it lies is skipped by every node: one forged by an outsider, and
 * a genuine one copied to the log's end (it opens only after its own
 * fence). The tree is unchanged, each node counts them, and the next
 * writes are ordered after them. */
static void test_sealed_log_skips_forged_and_replayed_records(void) {
    char dir[64];
    pair p;
    if (!sealed_start(&p, dir, pair_start))
        return;
    outcome o[4] = {{0}};
    set_acked(&p.loop, &p.a, "/x", "\"plaintext-marker-4711\"", &o[0]);
    CHECK(!log_holds(&p.nats, &p.a, "plaintext-marker-4711"));
    /* the genuine record, copied to the end of the log */
    char stream[32], subject[64];
    log_of(&p.a, stream, sizeof stream, subject, sizeof subject);
    jsCtx *js = NULL;
    natsConnection *nc = outsider(&p.nats, &js);
    natsMsg *real = NULL;
    CHECK_INT(js_GetLastMsg(&real, js, stream, subject, NULL, NULL), NATS_OK);
    jsPubAck *ack = NULL;
    CHECK_INT(js_Publish(&ack, js, subject, natsMsg_GetData(real),
                         natsMsg_GetDataLength(real), NULL, NULL),
              NATS_OK);
    jsPubAck_Destroy(ack);
    natsMsg_Destroy(real);
    outsider_close(nc, js);
    append_foreign(&p.nats, &p.a, "/x", "\"forged\"");
    wait_rejected(&p.loop, &p.a, HEARTH__REJECT_LOG, 1);
    wait_rejected(&p.loop, &p.b, HEARTH__REJECT_LOG, 1);
    /* the next writes, through both nodes, follow them */
    set_acked(&p.loop, &p.a, "/y", "2", &o[1]);
    set_acked(&p.loop, &p.b, "/z", "3", &o[2]);
    set_acked(&p.loop, &p.a, "/z", "3", &o[3]); /* a barrier on a */
    CHECK_STR(o[2].seen, "{\"x\":\"plaintext-marker-4711\",\"y\":2,\"z\":3}");
    CHECK_STR(o[3].seen, "{\"x\":\"plaintext-marker-4711\",\"y\":2,\"z\":3}");
    same_data(&p.a, &p.b);
    CHECK(hearth__cluster_rejected_count(p.a.c, HEARTH__REJECT_LOG) == 2);
    hearth__buf metrics;
    hearth__buf_init(&metrics);
    hearth__cluster_metrics(p.a.c, &metrics);
    CHECK(strstr(metrics.data, "hearth_cluster_rejected_total{kind=\"log\"} 2\n")
          != NULL);
    hearth__buf_free(&metrics);
    sealed_end(&p, o, 4, dir);
}

/* Waits up to ms for a message on sub: whether one came. */
static bool answered(uv_loop_t *loop, natsSubscription *sub, int ms) {
    double end = test_seconds() + ms / 1000.0;
    while (test_seconds() < end) {
        natsMsg *m = NULL;
        uv_run(loop, UV_RUN_NOWAIT);
        if (natsSubscription_NextMsg(&m, sub, 10) == NATS_OK) {
            natsMsg_Destroy(m);
            return true;
        }
    }
    return false;
}

/* Sealed, the leader serves only forwarded writes that open: an
 * outsider's (unjudged, it would pass any rules) gets no answer and
 * changes nothing, and a genuine request captured and sent again is not
 * served again. */
static void test_sealed_forward_refuses_outsiders_and_replays(void) {
    char dir[64];
    pair p;
    if (!sealed_start(&p, dir, pair_start))
        return;
    outcome o[4] = {{0}};
    set_acked(&p.loop, &p.a, "/n", "0", &o[0]); /* someone leads */
    node *leader = leader_of(&p);
    node *follower = leader == &p.a ? &p.b : &p.a;
    natsConnection *nc = outsider(&p.nats, NULL);
    natsSubscription *inbox = NULL, *captured = NULL;
    CHECK_INT(natsConnection_SubscribeSync(&inbox, nc, "attacker.inbox"),
              NATS_OK);
    CHECK_INT(natsConnection_SubscribeSync(&captured, nc, "hearth.fwd.t"),
              NATS_OK);
    CHECK_INT(natsConnection_Flush(nc), NATS_OK);
    uint64_t fwd = hearth__cluster_rejected_count(leader->c, HEARTH__REJECT_FWD);
    static const char forged[] =
        "{\"a\":null,\"j\":false,\"h\":null,\"w\":[[\"/secret/password\","
        "\"PWNED\"]]}";
    CHECK_INT(natsConnection_PublishRequestString(nc, "hearth.fwd.t",
                                                  "attacker.inbox", forged),
              NATS_OK);
    CHECK(!answered(&p.loop, inbox, 500));
    wait_rejected(&p.loop, leader, HEARTH__REJECT_FWD, fwd);
    /* a genuine forwarded write, captured on its way */
    set_acked(&p.loop, follower, "/n", "1", &o[1]);
    set_acked(&p.loop, leader, "/n", "2", &o[2]);
    fwd = hearth__cluster_rejected_count(leader->c, HEARTH__REJECT_FWD);
    natsMsg *m[16];
    int sent = 0;
    while (sent < 16 && natsSubscription_NextMsg(&m[sent], captured, 100) ==
                            NATS_OK)
        sent++;
    CHECK(sent >= 2); /* the forged one and at least one genuine */
    natsSubscription_Unsubscribe(captured);
    for (int i = 0; i < sent; i++) {
        CHECK_INT(natsConnection_PublishMsg(nc, m[i]), NATS_OK);
        natsMsg_Destroy(m[i]);
    }
    wait_rejected(&p.loop, leader, HEARTH__REJECT_FWD, fwd);
    set_acked(&p.loop, follower, "/after", "1", &o[3]); /* a barrier */
    CHECK_STR(o[3].seen, "{\"after\":1,\"n\":2}");
    same_data(&p.a, &p.b);
    natsSubscription_Destroy(inbox);
    natsSubscription_Destroy(captured);
    natsConnection_Destroy(nc);
    sealed_end(&p, o, 4, dir);
}

/* Sealed, a snapshot request that does not open is not answered (an
 * outsider cannot make a node write its tree out), while a node with the
 * secret joins from a peer's snapshot as ever. */
static void test_sealed_snapshot_answers_only_the_secret(void) {
    char dir[64];
    pair p;
    if (!sealed_start(&p, dir, single_start))
        return;
    outcome o[3] = {{0}};
    set_acked(&p.loop, &p.a, "/x", "\"snapshot-marker\"", &o[0]);
    set_acked(&p.loop, &p.a, "/y", "2", &o[2]); /* the log's last, kept */
    while (status_number(&p.a, "snapshot_seq") != status_number(&p.a, "seq"))
        uv_run(&p.loop, UV_RUN_ONCE);
    natsConnection *nc = outsider(&p.nats, NULL);
    natsSubscription *inbox = NULL;
    CHECK_INT(natsConnection_SubscribeSync(&inbox, nc, "attacker.snap"),
              NATS_OK);
    uint64_t snap = hearth__cluster_rejected_count(p.a.c, HEARTH__REJECT_SNAP);
    CHECK_INT(natsConnection_PublishRequest(nc, "hearth.snap.t",
                                            "attacker.snap", NULL, 0),
              NATS_OK);
    CHECK_INT(natsConnection_PublishRequestString(nc, "hearth.snap.t",
                                                  "attacker.snap", "garbage"),
              NATS_OK);
    CHECK(!answered(&p.loop, inbox, 500));
    CHECK(hearth__cluster_rejected_count(p.a.c, HEARTH__REJECT_SNAP) >= snap + 2);
    natsSubscription_Destroy(inbox);
    natsConnection_Destroy(nc);
    purge_below_last(&p.nats, &p.a);
    node_open(&p.loop, &p.nats, &p.b, "t2");
    set_acked(&p.loop, &p.b, "/after", "1", &o[1]); /* a barrier through b */
    CHECK_STR(o[1].seen, "{\"after\":1,\"x\":\"snapshot-marker\",\"y\":2}");
    sealed_end(&p, o, 3, dir);
}

static void on_kept(void *ctx, int rc) {
    int *done = ctx;
    *done = rc ? rc : 1;
}

/* Sets t's rules through x and runs the loop until the cluster has them. */
static void rules_put(uv_loop_t *loop, node *x, const char *doc) {
    int done = 0;
    hearth__cluster_rules_put(x->c, "t", doc, on_kept, &done);
    while (!done)
        uv_run(loop, UV_RUN_ONCE);
    CHECK_INT(done, 1);
}

/* Sealed, KV values are bound to their key: rules an outsider puts
 * straight into the bucket, an older document put back, and a delete are
 * not adopted (and the newest is put back); an outsider's onDisconnect
 * list is never run; a retention floor that does not open is unknown. */
static void test_sealed_kv_values_refuse_forged_and_old(void) {
    char dir[64];
    pair p;
    if (!sealed_start(&p, dir, single_start))
        return;
    static const char closed[] = "{\"rules\":{\".read\":false,\".write\":false}}";
    static const char old[] = "{\"rules\":{\".read\":\"old-rules\"}}";
    static const char open_rules[] = "{\"rules\":{\".read\":true,\".write\":true}}";
    rules_put(&p.loop, &p.a, old);
    jsCtx *js = NULL;
    natsConnection *nc = outsider(&p.nats, &js);
    kvStore *kv = NULL;
    CHECK_INT(js_KeyValue(&kv, js, "hearth_rules"), NATS_OK);
    kvEntry *e = NULL;
    CHECK_INT(kvStore_Get(&e, kv, "t"), NATS_OK);
    CHECK(memmem(kvEntry_Value(e), (size_t)kvEntry_ValueLen(e), "old-rules",
                 9) == NULL);
    hearth__buf captured;
    hearth__buf_init(&captured);
    hearth__buf_add(&captured, kvEntry_Value(e), (size_t)kvEntry_ValueLen(e));
    kvEntry_Destroy(e);
    rules_put(&p.loop, &p.a, closed);
    CHECK_STR(hearth__cluster_rules_of(p.a.c, "t"), closed);
    uint64_t rev, kvs = hearth__cluster_rejected_count(p.a.c, HEARTH__REJECT_KV);
    /* Each attack ends with the node's own document put back (the bucket
     * keeps one value a key: an attack superseded by the next, or by the
     * put-back of the one before, is never seen, so the barrier is the
     * bucket's value, not a count of each). */
    CHECK_INT(kvStore_PutString(&rev, kv, "t", open_rules), NATS_OK);
    wait_put_back(&p.loop, kv, "t", open_rules, strlen(open_rules));
    CHECK_STR(hearth__cluster_rules_of(p.a.c, "t"), closed);
    CHECK_INT(kvStore_Put(&rev, kv, "t", captured.data, (int)captured.len),
              NATS_OK);
    wait_put_back(&p.loop, kv, "t", captured.data, captured.len);
    CHECK_STR(hearth__cluster_rules_of(p.a.c, "t"), closed);
    CHECK_INT(kvStore_Delete(kv, "t"), NATS_OK);
    wait_put_back(&p.loop, kv, "t", NULL, 0);
    CHECK_STR(hearth__cluster_rules_of(p.a.c, "t"), closed);
    CHECK(hearth__cluster_rejected_count(p.a.c, HEARTH__REJECT_KV) > kvs);
    /* put back: a node starting now reads the newest document */
    node_open(&p.loop, &p.nats, &p.b, "t2");
    CHECK_STR(hearth__cluster_rules_of(p.b.c, "t"), closed);
    hearth__buf_free(&captured);
    kvStore_Destroy(kv);

    /* an onDisconnect list of a dead run, put by an outsider */
    CHECK_INT(js_KeyValue(&kv, js, "hearth_ondisconnect"), NATS_OK);
    CHECK_INT(kvStore_PutString(&rev, kv, "t.gone.1.1",
                                "[{\"a\":null,\"j\":false,\"h\":null,\"w\":"
                                "[[\"/secret\",\"PWNED\"]]}]"),
              NATS_OK);
    node *leader = leader_of(&p);
    kvs = hearth__cluster_rejected_count(leader->c, HEARTH__REJECT_KV);
    wait_rejected(&p.loop, leader, HEARTH__REJECT_KV, kvs);
    while (kvStore_Get(&e, kv, "t.gone.1.1") == NATS_OK) { /* deleted */
        kvEntry_Destroy(e);
        run_for(&p.loop, 50);
    }
    kvStore_Destroy(kv);
    /* a retention floor that does not open */
    CHECK_INT(js_KeyValue(&kv, js, "hearth_retained"), NATS_OK);
    CHECK_INT(kvStore_PutString(&rev, kv, "t", "1"), NATS_OK);
    CHECK(hearth__cluster_retained(p.a.c, "t") == UINT64_MAX);
    kvStore_Destroy(kv);
    outsider_close(nc, js);
    outcome o[1] = {{0}};
    set_acked(&p.loop, &p.a, "/after", "1", &o[0]);
    CHECK_STR(o[0].seen, "{\"after\":1}");
    sealed_end(&p, o, 1, dir);
}

/* With its nats-server dead, a node stops at once: nothing waits for a
 * NATS that cannot answer (the leases' round's calls, deleting the tail's
 * consumer, the liveness key, the rules' consumer), where each used to
 * wait its 5 s bound. A write its leader orders meanwhile fails at once
 * (it waited out the append's 5 s bound, and a stop with it). */
static void test_stop_without_nats(void) {
    pair p;
    if (!single_start(&p))
        return;
    outcome o = {0}, away = {0};
    set_acked(&p.loop, &p.a, "/before", "1", &o);
    kill(p.nats.pid, SIGKILL);
    waitpid(p.nats.pid, NULL, 0);
    while (hearth__cluster_disconnects(p.a.c) == 0)
        uv_run(&p.loop, UV_RUN_ONCE);
    /* (a lease's round may have stepped a down already: then the write
     * is forwarded, and waits for a leader, as forwards do) */
    bool leads = hearth__cluster_leads(hearth__cluster_ns_of(p.a.db));
    int64_t ts = hearth_now_ms();
    set(&p.a, "/away", "2", NULL, &away);
    while (leads && !away.done)
        uv_run(&p.loop, UV_RUN_ONCE);
    if (leads) {
        CHECK_INT(away.rc, HEARTH_EDISCONNECTED);
        CHECK(hearth_now_ms() - ts < 1000);
    }
    uint64_t until = uv_now(&p.loop) + 1500; /* rounds meet the dead link */
    while (uv_now(&p.loop) < until)
        uv_run(&p.loop, UV_RUN_ONCE);
    int64_t t0 = hearth_now_ms();
    node_close(&p.loop, &p.a, true);
    uv_run(&p.loop, UV_RUN_DEFAULT); /* until the link is freed */
    int64_t took = hearth_now_ms() - t0;
    if (took >= 1000)
        fprintf(stderr, "  stopped in %lld ms\n", (long long)took);
    CHECK(took < 1000);
    CHECK(away.done && away.rc != 0);
    free(o.seen);
    free(away.seen);
    CHECK_INT(uv_loop_close(&p.loop), 0);
    remove_tree(p.a.dir);
    remove_tree(p.nats.dir);
    nats_Close();
}


/* ---- point-in-time recovery (cluster/pitr.h) ---- */

typedef struct listed {
    int count;
    uint64_t last_seq;
    char last_by[32];
} listed;

static int note_change(const hearth_change_t *c, void *ctx) {
    listed *l = ctx;
    CHECK(strcmp(c->path, "/n") == 0);
    CHECK(c->time_ms > 0);
    CHECK(c->sequence > l->last_seq); /* one write a message here */
    l->count++;
    l->last_seq = c->sequence;
    snprintf(l->last_by, sizeof l->last_by, "%s", c->identity ? c->identity : "");
    return 0;
}

/* x as of at_ms / at_seq, as JSON (NULL: refused, err says why). */
static char *state_at(node *x, int64_t at_ms, uint64_t at_seq,
                      hearth_error_t *err) {
    hearth_node_t *root = NULL;
    if (hearth__cluster_state_at(x->c, "t", at_ms, at_seq, &root, err))
        return NULL;
    char *json = to_json(root);
    hearth_node_decref(root);
    return json;
}

/* Sealed, with a window of 2 s: writes through both nodes over 1.7 s, a
 * forged record among them. Once the leader has purged (then the window
 * is made an hour, so that the checks below see one history, not one
 * that slides under them), every instant is rebuilt exactly or refused
 * as not retained (the moment before the first write is: its records are
 * gone), the last ones exactly, through either node; the changes are
 * listed in order with their identity, and a sequence names a state; one
 * past the log is not written yet. */
static void test_pitr_from_the_stream(void) {
    char dir[64];
    pair p;
    if (!sealed_start(&p, dir, pair_start))
        return;
    hearth__cluster_set_retention(p.a.c, 2000);
    hearth__cluster_set_retention(p.b.c, 2000);
    enum { N = 14 };
    outcome o[N] = {{0}};
    int64_t at[N], before = hearth_now_ms() - 1;
    for (int i = 0; i < N; i++) {
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        set_acked(&p.loop, i % 2 ? &p.b : &p.a, "/n", v, &o[i]);
        at[i] = hearth_now_ms();
        if (i == N / 2)
            append_foreign(&p.nats, &p.a, "/n", "\"forged\"");
        run_for(&p.loop, 120);
    }
    node *leader = leader_of(&p);
    while (status_number(leader, "purged_through") < 1)
        uv_run(&p.loop, UV_RUN_ONCE);
    hearth__cluster_set_retention(p.a.c, 3600000);
    hearth__cluster_set_retention(p.b.c, 3600000);
    hearth_error_t err;
    listed l = {0}; /* before the states: a purge can only lower these */
    CHECK_INT(hearth__cluster_changes(p.a.c, "t", "/n", 0, 0, note_change, &l,
                                      &err),
              0);
    CHECK(state_at(&p.b, before, 0, &err) == NULL);
    CHECK(strstr(err.message, "not retained") != NULL);
    int exact = 0;
    for (int i = 0; i < N; i++) {
        char want[32];
        snprintf(want, sizeof want, "{\"n\":%d}", i);
        char *got = state_at(i % 2 ? &p.a : &p.b, at[i], 0, &err);
        if (got) {
            CHECK_STR(got, want);
            exact++;
        } else {
            CHECK(strstr(err.message, "not retained") != NULL);
            CHECK(exact == 0); /* only the oldest moments go */
        }
        free(got);
    }
    CHECK(exact >= 2);
    CHECK(l.count >= exact);
    CHECK_STR(l.last_by, "admin");
    char *last = state_at(&p.a, 0, l.last_seq, &err);
    CHECK_STR(last, "{\"n\":13}");
    free(last);
    CHECK(state_at(&p.a, 0, l.last_seq + 1000, &err) == NULL);
    CHECK(strstr(err.message, "not written yet") != NULL);
    sealed_end(&p, o, N, dir);
}

/* One event framed as the triggers' queues carry them. */
static void frame(hearth__buf *b, const char *event) {
    hearth__buf_init(b);
    hearth__spool_frame(b, event, strlen(event), 1);
    CHECK(!b->failed);
}

/* The next batch of trigger "kt" from x's cluster: its one event, or
 * NULL when none comes within 2 s; acknowledged. */
static char *take_one(node *x) {
    hearth__cluster_batch *batch = NULL;
    hearth__buf frames;
    hearth__buf_init(&frames);
    uint64_t waiting = 0;
    int rc = hearth__cluster_triggers_take(x->c, "kt", 2000, &batch, &frames,
                                           &waiting);
    char *out = NULL;
    if (rc == 0) {
        size_t off = 0, len;
        const char *data;
        uint64_t t;
        CHECK_INT(hearth__spool_unframe(frames.data, frames.len, &off, &data,
                                        &len, &t),
                  0);
        out = strndup(data, len);
        hearth__cluster_triggers_done(x->c, batch, true);
    } else {
        CHECK_INT(rc, 1);
    }
    hearth__buf_free(&frames);
    return out;
}

/* Both nodes' triggers started, a write acknowledged (o): the leader. */
static node *triggers_started(pair *p, outcome *o) {
    hearth_error_t err;
    CHECK_INT(hearth__cluster_triggers_start(p->a.c, &err), 0);
    CHECK_INT(hearth__cluster_triggers_start(p->b.c, &err), 0);
    set_acked(&p->loop, &p->a, "/x", "1", o);
    return leader_of(p);
}

/* Triggers in a cluster: the leader puts a record's events in JetStream;
 * a follower keeps its own copy of them; a leader that dies before its
 * put is covered by the next, which puts what it kept before its own,
 * the ones the old leader did put dropped as duplicates: every event
 * once, in log order, from one consumer. */
static void test_trigger_events_survive_their_leader(void) {
    pair p;
    if (!pair_start(&p))
        return;
    outcome o[1] = {{0}};
    node *l = triggers_started(&p, &o[0]), *f = l == &p.a ? &p.b : &p.a;
    hearth__buf e5, e6, e7;
    frame(&e5, "e5");
    frame(&e6, "e6");
    frame(&e7, "e7");
    /* record 5: put by its leader, kept by the follower */
    CHECK(hearth__cluster_triggers_put(l->db, 5, "kt", e5.data, e5.len, 1));
    CHECK(!hearth__cluster_triggers_put(f->db, 5, "kt", e5.data, e5.len, 1));
    /* record 6: its leader goes before it puts the events */
    CHECK(!hearth__cluster_triggers_put(f->db, 6, "kt", e6.data, e6.len, 1));
    node_close(&p.loop, l, false);
    while (!hearth__cluster_leads(hearth__cluster_ns_of(f->db)))
        uv_run(&p.loop, UV_RUN_ONCE);
    /* the new leader's own record 7: what it kept goes first */
    CHECK(hearth__cluster_triggers_put(f->db, 7, "kt", e7.data, e7.len, 1));
    char *got[4];
    for (int i = 0; i < 4; i++)
        got[i] = take_one(f);
    CHECK_STR(got[0], "e5");
    CHECK_STR(got[1], "e6");
    CHECK_STR(got[2], "e7");
    CHECK(got[3] == NULL); /* record 5's second put was a duplicate */
    for (int i = 0; i < 4; i++)
        free(got[i]);
    hearth__buf_free(&e5);
    hearth__buf_free(&e6);
    hearth__buf_free(&e7);
    node_open(&p.loop, &p.nats, l, l == &p.a ? "t1" : "t2");
    pair_end(&p, o, 1);
}

/* The one event in frames (a batch, a dead letter), or NULL. */
static char *only_event(const hearth__buf *frames, size_t *off) {
    size_t len;
    const char *data;
    uint64_t t;
    if (hearth__spool_unframe(frames->data, frames->len, off, &data, &len,
                              &t))
        return NULL;
    return strndup(data, len);
}

/* Dead letters in a cluster (cluster/dead.c), sealed: the node that gave
 * up on two events keeps them in JetStream before it acknowledges their
 * batches (a batch buried twice, as one delivered again after its holder
 * died, keeps one letter); the other node lists them, oldest first and
 * bounded, the outsider's forged one (after them, in the same subject)
 * not listed and counted; a retry there queues them again through the
 * trigger's consumer, in order, and empties the dead set, the forged one
 * deleted in its turn. */
static void test_dead_letters_are_every_nodes(void) {
    pair p;
    char dir[64];
    if (!sealed_start(&p, dir, pair_start))
        return;
    outcome o[1] = {{0}};
    node *l = triggers_started(&p, &o[0]), *f = l == &p.a ? &p.b : &p.a;
    hearth__buf e1, e2;
    frame(&e1, "{\"n\":1}");
    frame(&e2, "{\"n\":2}");
    CHECK(hearth__cluster_triggers_put(l->db, 5, "kd", e1.data, e1.len, 1));
    CHECK(hearth__cluster_triggers_put(l->db, 6, "kd", e2.data, e2.len, 1));
    hearth__buf frames;
    hearth__buf_init(&frames);
    for (int i = 0; i < 2; i++) { /* l gives up on both */
        hearth__cluster_batch *batch = NULL;
        uint64_t waiting = 0;
        CHECK_INT(hearth__cluster_triggers_take(l->c, "kd", 2000, &batch,
                                                &frames, &waiting),
                  0);
        CHECK_INT(hearth__cluster_triggers_bury(l->c, batch, 0, frames.data,
                                                frames.len),
                  0);
        if (i == 0) /* again: the same letter, a duplicate JetStream drops */
            CHECK_INT(hearth__cluster_triggers_bury(l->c, batch, 0,
                                                    frames.data, frames.len),
                      0);
        hearth__cluster_triggers_done(l->c, batch, true);
    }
    /* an outsider's letter, not sealed with the cluster secret */
    jsCtx *js = NULL;
    natsConnection *nc = outsider(&p.nats, &js);
    jsPubAck *ack = NULL;
    CHECK_INT(js_Publish(&ack, js, "hearth.dead.kd.t", "forged", 6,
                         NULL, NULL),
              NATS_OK);
    jsPubAck_Destroy(ack);
    outsider_close(nc, js);
    uint64_t count = 0;
    CHECK_INT(hearth__cluster_dead_count(f->c, "kd", &count), 0);
    CHECK_INT((int)count, 3);
    uint64_t rejected = hearth__cluster_rejected_count(f->c,
                                                       HEARTH__REJECT_TRIG);
    /* listed by the other node: bounded, then whole */
    size_t n = 0, off = 0;
    frames.len = 0;
    CHECK_INT(hearth__cluster_dead_list(f->c, "kd", 1, &frames, &n), 0);
    CHECK_INT((int)n, 1);
    char *got = only_event(&frames, &off);
    CHECK_STR(got, "{\"n\":1}");
    free(got);
    frames.len = 0;
    off = 0;
    CHECK_INT(hearth__cluster_dead_list(f->c, "kd", 10, &frames, &n), 0);
    CHECK_INT((int)n, 2);
    char *first = only_event(&frames, &off), *second = only_event(&frames, &off);
    CHECK_STR(first, "{\"n\":1}");
    CHECK_STR(second, "{\"n\":2}");
    free(first);
    free(second);
    CHECK(hearth__cluster_rejected_count(f->c, HEARTH__REJECT_TRIG) >
          rejected);
    /* the forged one, after letters of its subject, stays until a retry
     * deletes them in order (dead.c: next_letter) */
    CHECK_INT(hearth__cluster_dead_count(f->c, "kd", &count), 0);
    CHECK_INT((int)count, 3);
    /* retried by the other node: delivered again through the consumer */
    CHECK_INT(hearth__cluster_dead_retry(f->c, "kd", &n), 0);
    CHECK_INT((int)n, 2);
    CHECK_INT(hearth__cluster_dead_count(l->c, "kd", &count), 0);
    CHECK_INT((int)count, 0);
    for (int i = 1; i <= 3; i++) {
        hearth__cluster_batch *batch = NULL;
        uint64_t waiting = 0;
        int rc = hearth__cluster_triggers_take(f->c, "kd", 2000, &batch,
                                               &frames, &waiting);
        if (i == 3) { /* nothing more: each queued once */
            CHECK_INT(rc, 1);
            break;
        }
        CHECK_INT(rc, 0);
        if (rc)
            break;
        off = 0;
        char want[24];
        snprintf(want, sizeof want, "{\"n\":%d}", i);
        got = only_event(&frames, &off);
        CHECK_STR(got, want);
        free(got);
        hearth__cluster_triggers_done(f->c, batch, true);
    }
    hearth__buf_free(&frames);
    hearth__buf_free(&e1);
    hearth__buf_free(&e2);
    sealed_end(&p, o, 1, dir);
}

static bool allow_all(void *ctx, const hearth_node_t *auth, const char *door,
                      const hearth__path *const *paths, size_t n,
                      const hearth_node_t *old_root,
                      const hearth_node_t *new_root, double now) {
    (void)ctx, (void)auth, (void)door, (void)paths, (void)n, (void)old_root,
        (void)new_root, (void)now;
    return true;
}

/* Runs the loop until follower f's tree holds every record leader l
 * has applied. */
static void wait_caught_up(uv_loop_t *loop, node *l, node *f) {
    uint64_t last = hearth__cluster_applied_seq(hearth__cluster_ns_of(l->db));
    while (hearth__cluster_applied_seq(hearth__cluster_ns_of(f->db)) < last)
        uv_run(loop, UV_RUN_ONCE);
}

/* A follower whose tail's consumer goes silent (libnats does not always
 * make one again after its server dies) and then learns of a record (its
 * forwarded write's answer): the watchdog reads the missing record by its
 * sequence and makes the consumer again, on a worker; the write's ok
 * comes once the follower's tree holds it, within the stall and a read,
 * and the new consumer delivers what comes next. */
static void test_silent_tail_is_made_again(void) {
    pair p;
    if (!pair_start(&p))
        return;
    outcome o[3] = {{0}};
    set_acked(&p.loop, &p.a, "/x", "1", &o[0]);
    node *l = leader_of(&p), *f = l == &p.a ? &p.b : &p.a;
    hearth__cluster_ns *fn = hearth__cluster_ns_of(f->db);
    /* silent: the consumer is there, and delivers nothing any more */
    CHECK_INT(natsSubscription_Unsubscribe(fn->tail.tail_sub), NATS_OK);
    double t0 = test_seconds();
    set(f, "/y", "2", NULL, &o[1]);
    wait_for(&p.loop, o + 1, 1);
    double took = test_seconds() - t0;
    CHECK_INT(o[1].rc, 0);
    CHECK_STR(o[1].seen, "{\"x\":1,\"y\":2}");
    CHECK(took >= HEARTH__CLUSTER_TAIL_STALL_MS / 1000.0 - 0.5);
    CHECK(took < HEARTH__CLUSTER_TAIL_STALL_MS / 1000.0 + 3.0);
    while (!fn->tail.tail_sub) /* the consumer, made again after the read */
        uv_run(&p.loop, UV_RUN_ONCE);
    /* ... delivers what comes next: */
    set(l, "/z", "3", NULL, &o[2]);
    wait_for(&p.loop, o + 2, 1);
    wait_caught_up(&p.loop, l, f);
    const hearth_node_t *z = NULL;
    CHECK_INT(hearth_node_get(hearth__db_root(f->db), "/z", &z, NULL), 0);
    char *json = to_json(z);
    CHECK_STR(json, "3");
    free(json);
    pair_end(&p, o, 3);
}

/* A follower left with no consumer at all (JetStream refused to make one
 * at its open, or since): the watchdog reads the records to the
 * subject's last and makes one without waiting to learn of a missing
 * record, so the leader's writes reach it, through that consumer. */
static void test_tail_without_consumer_gets_one(void) {
    pair p;
    if (!pair_start(&p))
        return;
    outcome o[3] = {{0}};
    set_acked(&p.loop, &p.a, "/x", "1", &o[0]);
    node *l = leader_of(&p), *f = l == &p.a ? &p.b : &p.a;
    hearth__cluster_ns *fn = hearth__cluster_ns_of(f->db);
    hearth__cluster_tail_stop(fn); /* no consumer */
    set(l, "/y", "2", NULL, &o[1]);
    wait_for(&p.loop, o + 1, 1);
    /* read up to the subject's last record as the consumer is made */
    wait_caught_up(&p.loop, l, f);
    while (!fn->tail.tail_sub)
        uv_run(&p.loop, UV_RUN_ONCE);
    /* ... which delivers what comes next (no making again since) */
    natsSubscription *made = fn->tail.tail_sub;
    set(l, "/z", "3", NULL, &o[2]);
    wait_for(&p.loop, o + 2, 1);
    wait_caught_up(&p.loop, l, f);
    CHECK(fn->tail.tail_sub == made && !fn->tail.remake);
    char *json = to_json(hearth__db_root(f->db));
    CHECK_STR(json, "{\"x\":1,\"y\":2,\"z\":3}");
    free(json);
    pair_end(&p, o, 3);
}

/* A follower whose tree is found behind what its consumer delivered,
 * with nothing queued (records dropped by a fault of the code, as a
 * leader's stale chain once made its rewinds drop them): the watchdog
 * says so and reads them again, rather than leave it waiting for ever. */
static void test_tree_behind_its_tail_reads_again(void) {
    pair p;
    if (!pair_start(&p))
        return;
    outcome o[3] = {{0}};
    set_acked(&p.loop, &p.a, "/x", "1", &o[0]);
    node *l = leader_of(&p), *f = l == &p.a ? &p.b : &p.a;
    set_acked(&p.loop, l, "/y", "2", &o[1]);
    wait_caught_up(&p.loop, l, f);
    hearth__cluster_ns *fn = hearth__cluster_ns_of(f->db);
    uint64_t last = hearth__cluster_applied_seq(fn);
    fn->log.applied_seq--; /* the record at last, as if dropped */
    double end = test_seconds() + 10;
    while (hearth__cluster_applied_seq(fn) < last && test_seconds() < end)
        uv_run(&p.loop, UV_RUN_ONCE);
    CHECK(hearth__cluster_applied_seq(fn) == last);
    set_acked(&p.loop, f, "/z", "3", &o[2]); /* and it goes on */
    CHECK_STR(o[2].seen, "{\"x\":1,\"y\":2,\"z\":3}");
    pair_end(&p, o, 3);
}

/* The identities of the writes to /j in a data directory's log. */
static int note_identity(const hearth_change_t *change, void *ctx) {
    hearth__buf *b = ctx;
    hearth__buf_printf(b, "%s;", change->identity ? change->identity : "-");
    return 0;
}

/* A record a leader judged is, on a follower, its caller's too: in the
 * follower's own log (hearth log there) and to its triggers (the events
 * it keeps, put by it if it leads next); an import with triggers off is
 * quiet there as well. */
static void test_followers_know_who_wrote_a_record(void) {
    pair p;
    if (!pair_start(&p))
        return;
    outcome o[3] = {{0}};
    set_acked(&p.loop, &p.a, "/x", "1", &o[0]);
    node *l = leader_of(&p), *f = l == &p.a ? &p.b : &p.a;
    hearth__db_set_judge(l->db, allow_all, NULL);
    hearth_node_t *auth = node_from("{\"uid\":\"ada\"}");
    hearth__db_caller ada = {.auth = auth, .door = "rest"};
    hearth__db_caller quiet = {.unjudged = true, .quiet = true};
    hearth_node_t *v = node_from("2");
    o[1].db = o[2].db = l->db;
    CHECK_INT(hearth__db_set_if_as(l->db, &ada, NULL, "/j", v, on_done, &o[1],
                                   NULL, NULL),
              0);
    CHECK_INT(hearth__db_set_if_as(l->db, &quiet, NULL, "/j", v, on_done,
                                   &o[2], NULL, NULL),
              0);
    wait_for(&p.loop, o + 1, 2);
    CHECK_INT(o[1].rc, 0);
    CHECK_INT(o[2].rc, 0);
    hearth__cluster_ns *fn = hearth__cluster_ns_of(f->db);
    uint64_t last = hearth__cluster_applied_seq(hearth__cluster_ns_of(l->db));
    while (hearth__cluster_committed_seq(fn) < last)
        uv_run(&p.loop, UV_RUN_ONCE);
    hearth__buf ids;
    hearth__buf_init(&ids);
    CHECK_INT(hearth_log_changes(f->dir, "/j", 0, 0, note_identity, &ids,
                                 NULL),
              0);
    hearth__buf_addc(&ids, '\0');
    CHECK_STR(ids.data, "uid:ada;admin:no-triggers;");
    hearth__buf_free(&ids);
    hearth_node_decref(v);
    hearth_node_decref(auth);
    pair_end(&p, o, 3);
}

const test_case cluster_tests[] = {
    {"cluster_followers_know_who_wrote_a_record",
     test_followers_know_who_wrote_a_record},
    {"cluster_trigger_events_survive_their_leader",
     test_trigger_events_survive_their_leader},
    {"cluster_dead_letters_are_every_nodes",
     test_dead_letters_are_every_nodes},
    {"cluster_record_bigger_than_a_message",
     test_record_bigger_than_a_message},
    {"cluster_writes_from_both_nodes", test_writes_from_both_nodes},
    {"cluster_silent_tail_is_made_again", test_silent_tail_is_made_again},
    {"cluster_tree_behind_its_tail_reads_again",
     test_tree_behind_its_tail_reads_again},
    {"cluster_tail_without_consumer_gets_one",
     test_tail_without_consumer_gets_one},
    {"cluster_compare_and_set_across_nodes",
     test_compare_and_set_across_nodes},
    {"cluster_leader_cuts_a_chain_cut_short",
     test_leader_cuts_a_chain_cut_short},
    {"cluster_refused_append_leaves_local_log_without_it",
     test_refused_append_leaves_local_log_without_it},
    {"cluster_records_of_a_new_leader_survive_a_refused_append",
     test_records_of_a_new_leader_survive_a_refused_append},
    {"cluster_diverged_follower_stops_and_rebuilds",
     test_diverged_follower_stops_and_rebuilds},
    {"cluster_followers_sync_the_log_lazily",
     test_followers_sync_the_log_lazily},
    {"cluster_fresh_node_joins_from_a_peer_snapshot",
     test_fresh_node_joins_from_a_peer_snapshot},
    {"cluster_leader_purges_and_a_new_node_joins",
     test_leader_purges_and_a_new_node_joins},
    {"cluster_restart_drops_a_write_the_stream_never_got",
     test_restart_drops_a_write_the_stream_never_got},
    {"cluster_stop_without_nats", test_stop_without_nats},
    {"cluster_node_catches_up_after_restart",
     test_node_catches_up_after_restart},
    {"cluster_transactions_on_every_node", test_transactions_on_every_node},
    {"cluster_trust_refusals", test_trust_refusals},
    {"cluster_nats_auth_and_tls", test_nats_auth_and_tls},
    {"cluster_sealed_log_skips_forged_and_replayed_records",
     test_sealed_log_skips_forged_and_replayed_records},
    {"cluster_sealed_forward_refuses_outsiders_and_replays",
     test_sealed_forward_refuses_outsiders_and_replays},
    {"cluster_sealed_snapshot_answers_only_the_secret",
     test_sealed_snapshot_answers_only_the_secret},
    {"cluster_sealed_kv_values_refuse_forged_and_old",
     test_sealed_kv_values_refuse_forged_and_old},
    {"cluster_pitr_from_the_stream", test_pitr_from_the_stream},
    {NULL, NULL},
};
