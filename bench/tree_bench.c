/*
 * tree_bench.c - Hearth's node tree beside jansson's mutable objects.
 *
 * Every workload runs on Hearth and, in the same process, on jansson's
 * json_t objects (the anchor); the table prints both figures and the ratio
 * hearth time / jansson time. Batched workloads interleave the two sides
 * batch by batch and the others alternate runs, so the ratio survives a
 * noisy, shared machine. Workloads (N defaults to 1,000,000; `bench-tree
 * N` scales down, e.g. `build/bench-tree 100000`):
 *
 *   1.  Build one node with N children by successive inserts ("k0000000",
 *       "k0000001", ... -> numbers), in key order, the way push IDs arrive.
 *   1b. The same with the keys inserted in a shuffled order (page splits in
 *       the middle of the B+tree rather than appends).
 *   2.  A depth-5 tree of F^5 ~= N leaves (F = 16 for N = 1M) built by
 *       nested inserts; then N sets of a number at a random depth-5 path:
 *       hearth_node_set(&root, "a/b/c/d/e") against json_object_get four
 *       levels down and json_object_set_new.
 *   2b. The same sets with an old snapshot kept alive: every 1000 sets the
 *       root is hearth_node_incref'd and the previous snapshot released, so
 *       the copy-on-write path copies (and freeing what the old snapshot
 *       alone held) are paid. jansson has no snapshots; its anchor is its
 *       in-place sets of 2, run again right after.
 *   3.  Serialize the depth-5 tree (hearth_node_to_json against
 *       json_dumps(JSON_COMPACT)), and parse that same text back
 *       (hearth_node_from_json against json_loadb). Median of 3 runs,
 *       sides alternating (the tree build of 2: median of 5).
 *   4.  Memory: live heap bytes per leaf of the N-child node and of the
 *       depth-5 tree. Both libraries are measured the same way, with
 *       mallinfo2() deltas (uordblks + hblkhd, i.e. heap chunks plus
 *       mmapped blocks, chunk headers included) around building the
 *       structure. jansson is also measured exactly through counting
 *       allocators (json_set_alloc_funcs, malloc_usable_size), which leave
 *       out the 8-byte chunk header; Hearth's allocator cannot be swapped
 *       from outside, so it has the mallinfo2 figure only.
 *
 * Latency: timing each operation with clock_gettime would add ~20-40 ns of
 * timer cost to operations that themselves take ~100-1000 ns, so the loops
 * are timed in batches of 1000 operations; a batch's time / 1000 is one
 * sample of the per-operation latency and p50/p99 are taken over those
 * samples (a batch average hides single slow operations such as one page
 * split, but shows slow phases such as hash table growth).
 *
 * Values are integers below 10^6 (Hearth stores them as doubles, jansson as
 * json_integer), so both print them the same way and the serialized texts
 * of the two trees can be compared byte for byte. All inputs come from a
 * fixed-seed PRNG generated before timing; jansson's hash seed is fixed.
 * glibc's heap trimming is turned off (M_TRIM_THRESHOLD) and the heap is
 * warmed by the memory phase, which runs first, so neither side pays page
 * faults that the other one left behind; fastbins are off (M_MXFAST 0) so
 * that figures do not depend on the heap left by earlier workloads.
 */
#include "hearth.h"
#include "bench_common.h"

#include <jansson.h>
#include <malloc.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_N 1000000u
#define MIN_N 1000u
#define MAX_N 10000000u
#define DEPTH 5
#define BATCH 1000u       /* operations per latency sample */
#define SNAP_EVERY BATCH  /* sets between snapshots in 2b (a multiple of BATCH) */
#define KEYW 12           /* stride of the flat keys "k%07u" */
#define PATHW 10          /* stride of "a/b/c/d/e" */
#define BUILD_REPS 5      /* runs of the depth-5 build; the median counts */
#define JSON_REPS 3       /* runs of serialize / parse; the median counts */
#define GOAL 1.5          /* most hearth time / jansson time (issue 17) */

/* ---- helpers (the shared ones are in bench_common.c) ---- */

const char bench_name[] = "bench-tree";

/* splitmix64: small, fast, and the same sequence everywhere. */
static uint64_t rng_state;
static void rng_seed(uint64_t seed) { rng_state = seed; }
static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}
static uint32_t rng_below(uint32_t n) { return (uint32_t)(rng_next() % n); }

/* Percentile p (0..100) of n samples, sorting them in place. */
static double percentile(double *v, size_t n, double p) {
    if (n == 0)
        return -1;
    qsort(v, n, sizeof *v, cmp_double);
    size_t i = (size_t)ceil(p / 100.0 * (double)n);
    return v[i ? i - 1 : 0];
}

/* Live heap bytes as glibc sees them: in-use chunks plus mmapped blocks. */
static size_t heap_in_use(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* jansson's counting allocator (installed only for the memory phase, so
 * the timed jansson runs use plain malloc/free). */
static long long jansson_live;
static void *count_malloc(size_t n) {
    void *p = malloc(n);
    if (p)
        jansson_live += (long long)malloc_usable_size(p);
    return p;
}
static void count_free(void *p) {
    if (p) {
        jansson_live -= (long long)malloc_usable_size(p);
        free(p);
    }
}

/* ---- inputs ---- */

typedef struct inputs {
    size_t n;          /* flat children, and sets */
    unsigned fanout;   /* children per level of the depth-5 tree */
    size_t leaves;     /* fanout^5 */
    char *keys;        /* n flat keys, KEYW apart */
    uint32_t *shuffle; /* a permutation of 0..n-1 */
    int *flat_vals;    /* n values for the flat node */
    int *tree_vals;    /* leaves values for the depth-5 tree */
    uint8_t *idx;      /* n set paths, DEPTH child indices each */
    char *paths;       /* the same paths as "a/b/c/d/e", PATHW apart */
    int *set_vals;     /* n values to set */
    char names[26][2]; /* child names "a".."z" of the depth-5 tree */
} inputs;

static const char *flat_key(const inputs *in, size_t i) {
    return in->keys + i * KEYW;
}

static void make_inputs(inputs *in, size_t n) {
    in->n = n;
    in->fanout = (unsigned)lround(pow((double)n, 1.0 / DEPTH));
    if (in->fanout < 2)
        in->fanout = 2;
    in->leaves = 1;
    for (int d = 0; d < DEPTH; d++)
        in->leaves *= in->fanout;
    for (int i = 0; i < 26; i++) {
        in->names[i][0] = (char)('a' + i);
        in->names[i][1] = '\0';
    }

    rng_seed(0x4865617274680001u); /* "Hearth" */
    in->keys = xmalloc(n * KEYW);
    in->flat_vals = xmalloc(n * sizeof *in->flat_vals);
    for (size_t i = 0; i < n; i++) {
        snprintf(in->keys + i * KEYW, KEYW, "k%07zu", i);
        in->flat_vals[i] = (int)rng_below(1000000);
    }
    in->shuffle = xmalloc(n * sizeof *in->shuffle);
    for (size_t i = 0; i < n; i++)
        in->shuffle[i] = (uint32_t)i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = rng_below((uint32_t)(i + 1));
        uint32_t t = in->shuffle[i];
        in->shuffle[i] = in->shuffle[j];
        in->shuffle[j] = t;
    }
    in->tree_vals = xmalloc(in->leaves * sizeof *in->tree_vals);
    for (size_t i = 0; i < in->leaves; i++)
        in->tree_vals[i] = (int)rng_below(1000000);
    in->idx = xmalloc(n * DEPTH);
    in->paths = xmalloc(n * PATHW);
    in->set_vals = xmalloc(n * sizeof *in->set_vals);
    for (size_t i = 0; i < n; i++) {
        char *p = in->paths + i * PATHW;
        for (int d = 0; d < DEPTH; d++) {
            uint8_t c = (uint8_t)rng_below(in->fanout);
            in->idx[i * DEPTH + d] = c;
            *p++ = in->names[c][0];
            *p++ = d + 1 < DEPTH ? '/' : '\0';
        }
        in->set_vals[i] = (int)rng_below(1000000);
    }
}

static void free_inputs(inputs *in) {
    free(in->keys);
    free(in->shuffle);
    free(in->flat_vals);
    free(in->tree_vals);
    free(in->idx);
    free(in->paths);
    free(in->set_vals);
}

/* ---- results ---- */

typedef struct row {
    char name[48];
    double h_s, j_s;         /* seconds */
    double h_amount, j_amount; /* operations, or bytes when `bytes` */
    bool bytes;
    double h_p50, h_p99, j_p50, j_p99; /* ns per operation; < 0: n/a */
} row;

#define MAX_ROWS 16
static row rows[MAX_ROWS];
static int nrows;

static row *add_row(const char *name) {
    if (nrows == MAX_ROWS)
        die("too many rows");
    row *r = &rows[nrows++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->h_p50 = r->h_p99 = r->j_p50 = r->j_p99 = -1;
    return r;
}

/* Latency samples: ns per operation of each batch. */
typedef struct lat {
    double *v;
    size_t n;
} lat;

static void lat_init(lat *l, size_t ops) {
    l->v = xmalloc((ops / BATCH + 1) * sizeof *l->v);
    l->n = 0;
}

static void lat_add(lat *l, uint64_t ns, size_t ops) {
    if (l)
        l->v[l->n++] = (double)ns / (double)ops;
}

static void lat_done(lat *l, double *p50, double *p99) {
    *p50 = percentile(l->v, l->n, 50);
    *p99 = percentile(l->v, l->n, 99);
    free(l->v);
}

/* ---- paired runs ----
 *
 * The machine may be shared, so the two sides of a batched workload run
 * interleaved: batch k of Hearth, then batch k of jansson, then batch k+1
 * of each. A burst of noise then lands on both sides instead of one. */

typedef void (*batch_fn)(const inputs *in, void *state, size_t from,
                         size_t to);

typedef struct side {
    batch_fn fn;
    void *state;
    double secs; /* total of its batches */
    lat l;
} side;

static void run_paired(const inputs *in, side *h, side *j) {
    lat_init(&h->l, in->n);
    lat_init(&j->l, in->n);
    h->secs = j->secs = 0;
    for (size_t i = 0; i < in->n; i += BATCH) {
        size_t end = i + BATCH < in->n ? i + BATCH : in->n;
        uint64_t t0 = now_ns();
        h->fn(in, h->state, i, end);
        uint64_t t1 = now_ns();
        j->fn(in, j->state, i, end);
        uint64_t t2 = now_ns();
        h->secs += (double)(t1 - t0) / 1e9;
        j->secs += (double)(t2 - t1) / 1e9;
        lat_add(&h->l, t1 - t0, end - i);
        lat_add(&j->l, t2 - t1, end - i);
    }
}

static void fill_row(row *r, const inputs *in, side *h, side *j) {
    r->h_s = h->secs;
    r->j_s = j->secs;
    r->h_amount = r->j_amount = (double)in->n;
    lat_done(&h->l, &r->h_p50, &r->h_p99);
    lat_done(&j->l, &r->j_p50, &r->j_p99);
}

/* ---- 1. flat node ---- */

typedef struct flat_h {
    hearth_node_t *root;
    const uint32_t *order; /* NULL: key order */
} flat_h;

typedef struct flat_j {
    json_t *root;
    const uint32_t *order;
} flat_j;

/* Inserts flat keys [from, to) into a node the caller holds alone, so
 * hearth_node_set_child_new edits it in place. */
static void h_flat_batch(const inputs *in, void *state, size_t from,
                         size_t to) {
    flat_h *st = state;
    for (size_t k = from; k < to; k++) {
        size_t i = st->order ? st->order[k] : k;
        hearth_node_t *v = hearth_node_number(in->flat_vals[i]);
        if (!v || hearth_node_set_child_new(&st->root, flat_key(in, i), v, NULL))
            die("hearth: insert failed");
    }
}

static void j_flat_batch(const inputs *in, void *state, size_t from,
                         size_t to) {
    flat_j *st = state;
    for (size_t k = from; k < to; k++) {
        size_t i = st->order ? st->order[k] : k;
        if (json_object_set_new(st->root, flat_key(in, i),
                                json_integer(in->flat_vals[i])))
            die("jansson: insert failed");
    }
}

static hearth_node_t *h_flat(const inputs *in) {
    flat_h st = {hearth_node_null(), NULL};
    h_flat_batch(in, &st, 0, in->n);
    return st.root;
}

static json_t *j_flat(const inputs *in) {
    flat_j st = {json_object(), NULL};
    if (!st.root)
        die("jansson: out of memory");
    j_flat_batch(in, &st, 0, in->n);
    return st.root;
}

static void check_flat(const inputs *in, const hearth_node_t *h,
                       const json_t *j) {
    if (hearth_node_child_count(h) != in->n || json_object_size(j) != in->n)
        die("check: flat node has the wrong number of children");
    for (size_t i = 0; i < in->n; i += in->n / 97 + 1) {
        const hearth_node_t *hc = hearth_node_child(h, flat_key(in, i));
        const json_t *jc = json_object_get(j, flat_key(in, i));
        if (!jc || hearth_node_number_value(hc) != in->flat_vals[i] ||
            json_integer_value(jc) != in->flat_vals[i])
            die("check: flat node holds a wrong value");
    }
}

static void bench_flat(const inputs *in, const char *name,
                       const uint32_t *order) {
    flat_h hs = {hearth_node_null(), order};
    flat_j js = {json_object(), order};
    if (!js.root)
        die("jansson: out of memory");
    side h = {.fn = h_flat_batch, .state = &hs};
    side j = {.fn = j_flat_batch, .state = &js};
    run_paired(in, &h, &j);
    fill_row(add_row(name), in, &h, &j);
    check_flat(in, hs.root, js.root);
    hearth_node_decref(hs.root);
    json_decref(js.root);
}

/* ---- 2. depth-5 tree ---- */

static hearth_node_t *h_tree_level(const inputs *in, int level, size_t *next) {
    if (level == DEPTH)
        return hearth_node_number(in->tree_vals[(*next)++]);
    hearth_node_t *n = hearth_node_null();
    for (unsigned i = 0; i < in->fanout; i++) {
        hearth_node_t *kid = h_tree_level(in, level + 1, next);
        if (!kid || hearth_node_set_child_new(&n, in->names[i], kid, NULL))
            die("hearth: tree build failed");
    }
    return n;
}

static hearth_node_t *h_tree(const inputs *in, double *secs) {
    size_t next = 0;
    uint64_t t0 = now_ns();
    hearth_node_t *root = h_tree_level(in, 0, &next);
    *secs = (double)(now_ns() - t0) / 1e9;
    return root;
}

static json_t *j_tree_level(const inputs *in, int level, size_t *next) {
    if (level == DEPTH)
        return json_integer(in->tree_vals[(*next)++]);
    json_t *n = json_object();
    if (!n)
        die("jansson: out of memory");
    for (unsigned i = 0; i < in->fanout; i++)
        if (json_object_set_new(n, in->names[i], j_tree_level(in, level + 1, next)))
            die("jansson: tree build failed");
    return n;
}

static json_t *j_tree(const inputs *in, double *secs) {
    size_t next = 0;
    uint64_t t0 = now_ns();
    json_t *root = j_tree_level(in, 0, &next);
    *secs = (double)(now_ns() - t0) / 1e9;
    return root;
}

/* Sets [from, to) at random depth-5 paths. With `persistent`, a snapshot
 * of the root is taken every SNAP_EVERY sets (inside the timed batch) and
 * the previous one released. */
typedef struct sets_h {
    hearth_node_t *root;
    hearth_node_t *snap;
    bool persistent;
} sets_h;

static void h_sets_batch(const inputs *in, void *state, size_t from,
                         size_t to) {
    sets_h *st = state;
    if (st->persistent && from % SNAP_EVERY == 0) {
        hearth_node_t *s = hearth_node_incref(st->root);
        hearth_node_decref(st->snap);
        st->snap = s;
    }
    for (size_t k = from; k < to; k++) {
        hearth_node_t *v = hearth_node_number(in->set_vals[k]);
        if (!v || hearth_node_set(&st->root, in->paths + k * PATHW, v, NULL))
            die("hearth: set failed");
        hearth_node_decref(v);
    }
}

static void j_sets_batch(const inputs *in, void *state, size_t from,
                         size_t to) {
    json_t *root = state;
    for (size_t k = from; k < to; k++) {
        const uint8_t *c = in->idx + k * DEPTH;
        json_t *o = root;
        for (int d = 0; d < DEPTH - 1 && o; d++)
            o = json_object_get(o, in->names[c[d]]);
        if (!o || json_object_set_new(o, in->names[c[DEPTH - 1]],
                                      json_integer(in->set_vals[k])))
            die("jansson: set failed");
    }
}

/* ---- 3. JSON ---- */

static void bench_json(const hearth_node_t *h, const json_t *j) {
    row *ser = add_row("3. serialize depth-5 tree (MB/s)");
    ser->bytes = true;
    double hs[JSON_REPS], js[JSON_REPS];
    char *htext = NULL;
    size_t hlen = 0;
    size_t jlen = 0;
    for (int r = 0; r < JSON_REPS; r++) { /* alternating sides */
        hearth_free(htext);
        uint64_t t0 = now_ns();
        htext = hearth_node_to_json(h, 0, &hlen);
        hs[r] = (double)(now_ns() - t0) / 1e9;
        if (!htext)
            die("hearth: to_json failed");
        t0 = now_ns();
        char *jtext = json_dumps(j, JSON_COMPACT);
        js[r] = (double)(now_ns() - t0) / 1e9;
        if (!jtext)
            die("jansson: json_dumps failed");
        jlen = strlen(jtext);
        free(jtext);
    }
    ser->h_s = median(hs, JSON_REPS);
    ser->j_s = median(js, JSON_REPS);
    ser->h_amount = (double)hlen;
    ser->j_amount = (double)jlen;

    /* The same sets were applied to both trees: their texts, keys sorted,
     * must be identical. */
    char *sorted = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    if (!sorted || strcmp(sorted, htext) != 0)
        die("check: hearth and jansson trees differ after the sets");
    free(sorted);

    row *par = add_row("3. parse that text (MB/s)");
    par->bytes = true;
    for (int r = 0; r < JSON_REPS; r++) {
        hearth_node_t *out = NULL;
        uint64_t t0 = now_ns();
        int rc = hearth_node_from_json(htext, hlen, 0, &out, NULL);
        hs[r] = (double)(now_ns() - t0) / 1e9;
        if (rc || !hearth_node_equal(out, h))
            die("hearth: from_json failed or differs");
        hearth_node_decref(out);
        json_error_t err;
        t0 = now_ns();
        json_t *jout = json_loadb(htext, hlen, 0, &err);
        js[r] = (double)(now_ns() - t0) / 1e9;
        if (!jout || !json_equal(jout, j))
            die("jansson: json_loadb failed or differs");
        json_decref(jout);
    }
    par->h_s = median(hs, JSON_REPS);
    par->j_s = median(js, JSON_REPS);
    par->h_amount = par->j_amount = (double)hlen;
    hearth_free(htext);
}

static void bench_tree(const inputs *in) {
    char name[48];
    snprintf(name, sizeof name, "2. build %u^5 tree (nested inserts)",
             in->fanout);
    row *build = add_row(name);
    build->h_amount = build->j_amount = (double)in->leaves;
    /* Short runs: build BUILD_REPS times, alternating sides, keep the
     * median time and the last trees. */
    double hs[BUILD_REPS], js[BUILD_REPS];
    hearth_node_t *h = NULL;
    json_t *j = NULL;
    for (int r = 0; r < BUILD_REPS; r++) {
        hearth_node_decref(h);
        json_decref(j);
        h = h_tree(in, &hs[r]);
        j = j_tree(in, &js[r]);
    }
    build->h_s = median(hs, BUILD_REPS);
    build->j_s = median(js, BUILD_REPS);

    /* In place, then the same sets again with Hearth persistent (jansson,
     * having no snapshots, runs its in-place sets again beside it). Sets
     * are idempotent, so the final trees still match. */
    sets_h hst = {.root = h};
    side hside = {.fn = h_sets_batch, .state = &hst};
    side jside = {.fn = j_sets_batch, .state = j};
    run_paired(in, &hside, &jside);
    fill_row(add_row("2. random sets at depth 5"), in, &hside, &jside);
    hst.persistent = true;
    run_paired(in, &hside, &jside);
    fill_row(add_row("2b. same, snapshot kept /1000 sets"), in, &hside,
             &jside);
    hearth_node_decref(hst.snap);
    h = hst.root;

    bench_json(h, j);
    hearth_node_decref(h);
    json_decref(j);
}

/* ---- 4. memory ---- */

typedef struct mem {
    const char *name;
    size_t leaves;
    double h_bytes, j_bytes, j_usable; /* whole structure */
} mem;

static mem mems[2];

/* Builds each structure once (untimed) and measures it; everything stays
 * alive until all four are measured, which also leaves the heap grown to
 * what the timed workloads need. */
static void bench_memory(const inputs *in) {
    double ignored;
    json_set_alloc_funcs(count_malloc, count_free);

    mems[0].name = "node with N children";
    mems[0].leaves = in->n;
    size_t before = heap_in_use();
    hearth_node_t *hf = h_flat(in);
    mems[0].h_bytes = (double)(heap_in_use() - before);
    before = heap_in_use();
    long long live0 = jansson_live;
    json_t *jf = j_flat(in);
    mems[0].j_bytes = (double)(heap_in_use() - before);
    mems[0].j_usable = (double)(jansson_live - live0);

    mems[1].name = "depth-5 tree";
    mems[1].leaves = in->leaves;
    before = heap_in_use();
    hearth_node_t *ht = h_tree(in, &ignored);
    mems[1].h_bytes = (double)(heap_in_use() - before);
    before = heap_in_use();
    live0 = jansson_live;
    json_t *jt = j_tree(in, &ignored);
    mems[1].j_bytes = (double)(heap_in_use() - before);
    mems[1].j_usable = (double)(jansson_live - live0);

    check_flat(in, hf, jf);
    hearth_node_decref(hf);
    hearth_node_decref(ht);
    json_decref(jf);
    json_decref(jt);
    json_set_alloc_funcs(malloc, free);
}

/* ---- report ---- */

static void fmt_rate(char *buf, size_t size, double amount, double secs,
                     bool bytes) {
    if (secs <= 0)
        snprintf(buf, size, "-");
    else if (bytes)
        snprintf(buf, size, "%.1f MB/s", amount / secs / 1e6);
    else
        snprintf(buf, size, "%.3f M/s", amount / secs / 1e6);
}

static void fmt_lat(char *buf, size_t size, double p50, double p99) {
    if (p50 < 0)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.0f / %.0f", p50, p99);
}

static void report(const inputs *in) {
    printf("\n%-36s %9s %13s %13s %10s %10s %6s %-5s  %-17s %-17s\n", "workload",
           "n", "hearth", "jansson", "hearth ms", "jansson ms", "ratio", "<=1.5",
           "hearth p50/p99 ns", "jansson p50/p99 ns");
    for (int i = 0; i < nrows; i++) {
        const row *r = &rows[i];
        char hr[32], jr[32], hl[32], jl[32];
        fmt_rate(hr, sizeof hr, r->h_amount, r->h_s, r->bytes);
        fmt_rate(jr, sizeof jr, r->j_amount, r->j_s, r->bytes);
        fmt_lat(hl, sizeof hl, r->h_p50, r->h_p99);
        fmt_lat(jl, sizeof jl, r->j_p50, r->j_p99);
        double ratio = r->h_s / r->j_s;
        printf("%-36s %9.0f %13s %13s %10.1f %10.1f %6.2f %-5s  %-17s %-17s\n",
               r->name, r->h_amount, hr, jr, r->h_s * 1e3,
               r->j_s * 1e3, ratio, ratio <= GOAL ? "ok" : "OVER", hl, jl);
    }
    printf("(n: operations, or text bytes for the MB/s rows; ratio = hearth "
           "time / jansson time;\n rows with p50/p99: sides interleaved batch by "
           "batch; 2b's anchor is jansson's in-place sets again (no "
           "snapshots there);\n medians of %d builds and %d serializes / "
           "parses, sides alternating)\n",
           BUILD_REPS, JSON_REPS);

    printf("\n%-24s %9s %13s %13s %6s %-4s  %s\n", "memory (bytes/leaf)",
           "leaves", "hearth", "jansson", "ratio", "<=1",
           "jansson usable bytes/leaf (counting allocator)");
    for (int i = 0; i < 2; i++) {
        const mem *m = &mems[i];
        double h = m->h_bytes / (double)m->leaves;
        double j = m->j_bytes / (double)m->leaves;
        if (m->h_bytes <= 0 || m->j_bytes <= 0) /* e.g. under valgrind */
            printf("%-24s %9zu %13s %13s %6s %-4s  %.1f\n", m->name,
                   m->leaves, "n/a", "n/a", "-", "",
                   m->j_usable / (double)m->leaves);
        else
            printf("%-24s %9zu %13.1f %13.1f %6.2f %-4s  %.1f\n", m->name,
                   m->leaves, h, j, h / j, h / j <= 1.0 ? "ok" : "OVER",
                   m->j_usable / (double)m->leaves);
    }
    printf("(hearth and jansson columns: mallinfo2 uordblks+hblkhd delta "
           "around the build,\n chunk headers included; the depth-5 tree "
           "has %zu inner objects besides its leaves)\n",
           (in->leaves - 1) / (in->fanout - 1));
}

int main(int argc, char **argv) {
    size_t n = DEFAULT_N;
    if (argc > 2)
        die("usage: bench-tree [N]");
    if (argc == 2) {
        char *end;
        unsigned long v = strtoul(argv[1], &end, 10);
        if (*end || v < MIN_N || v > MAX_N) {
            fprintf(stderr, "bench-tree: N must be %u..%u\n", MIN_N, MAX_N);
            return 2;
        }
        n = v;
    }
    /* Keep freed memory in the process: no side pays page faults for
     * memory the other returned to the kernel. And no fastbins: with them,
     * millions of small chunks freed by one workload stay uncoalesced and
     * scattered, and the next workload's speed depended on what ran before
     * it (the depth-5 build varied 3x with the order of the workloads);
     * freed chunks now coalesce at once, the same for both sides. */
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_MXFAST, 0);
    json_object_seed(0x2545F491u);

    inputs in;
    make_inputs(&in, n);
    char cpu[128];
    cpu_model(cpu, sizeof cpu);
    printf("Hearth tree benchmark: hearth %s vs jansson %s (anchor), %s\n",
           hearth_version(), JANSSON_VERSION, cpu);
    printf("N = %zu; depth-5 tree: fanout %u, %zu leaves; latency from "
           "batches of %u ops; seed fixed;\nglibc malloc for both: "
           "M_TRIM_THRESHOLD 1 GiB, M_MXFAST 0\n",
           in.n, in.fanout, in.leaves, BATCH);
    fflush(stdout);

    fprintf(stderr, "  memory...\n");
    bench_memory(&in);
    fprintf(stderr, "  1. flat build, key order...\n");
    bench_flat(&in, "1. insert N children (key order)", NULL);
    fprintf(stderr, "  1b. flat build, shuffled...\n");
    bench_flat(&in, "1b. insert N children (shuffled)", in.shuffle);
    fprintf(stderr, "  2/3. depth-5 tree, sets, JSON...\n");
    bench_tree(&in);

    report(&in);
    printf("checks: both sides hold the same data after every workload "
           "(values, texts, round trips)\n");
    free_inputs(&in);
    return 0;
}
