/* jetstream_raw.c - the anchor of bench/cluster_bench.py: raw JetStream
 * publish-with-ack, as a Hearth leader appends (one stream, R replicas).
 *
 *   jetstream_raw URLS REPLICAS SECONDS INFLIGHT
 *
 * INFLIGHT 1: one js_Publish at a time (the serial case); more: that many
 * js_PublishAsync in flight. With a fifth argument "fence", each serial
 * publish expects the subject's last sequence, as a Hearth leader's does.
 * Prints acknowledged publishes per second. */
#include <nats/nats.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void check(natsStatus s, const char *what) {
    if (s != NATS_OK) {
        fprintf(stderr, "jetstream_raw: %s: %s\n", what, natsStatus_GetText(s));
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: jetstream_raw URLS REPLICAS SECONDS INFLIGHT\n");
        return 64;
    }
    natsConnection *nc;
    natsOptions *o;
    check(natsOptions_Create(&o), "options");
    const char *urls[8];
    int n = 0;
    for (char *save = NULL, *t = strtok_r(argv[1], ",", &save); t && n < 8;
         t = strtok_r(NULL, ",", &save))
        urls[n++] = t;
    check(natsOptions_SetServers(o, urls, n), "servers");
    check(natsConnection_Connect(&nc, o), "connect");
    jsCtx *js;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = atoi(argv[4]);
    check(natsConnection_JetStream(&js, nc, &jo), "jetstream");
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    const char *subjects[] = {"rawbench.>"};
    cfg.Name = "RAWBENCH";
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = atoi(argv[2]);
    js_AddStream(NULL, js, &cfg, NULL, NULL);
    const char payload[] = "[[\"/bench/key\",12345]]"; /* a record's size */
    double seconds = atof(argv[3]), t0 = now_s(), t = t0;
    long count = 0;
    int inflight = atoi(argv[4]);
    bool fence = argc > 5 && strcmp(argv[5], "fence") == 0;
    uint64_t last = 0;
    while ((t = now_s()) - t0 < seconds) {
        if (inflight <= 1) {
            jsPubOptions po;
            jsPubOptions_Init(&po);
            po.ExpectLastSubjectSeq = fence ? last : 0;
            jsPubAck *ack = NULL;
            check(js_Publish(&ack, js, "rawbench.a", payload, sizeof payload - 1,
                             &po, NULL),
                  "publish");
            last = ack->Sequence;
            jsPubAck_Destroy(ack);
        } else {
            check(js_PublishAsync(js, "rawbench.a", payload, sizeof payload - 1,
                                  NULL),
                  "publish async");
        }
        count++;
    }
    if (inflight > 1) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = 10000;
        check(js_PublishAsyncComplete(js, &po), "complete");
        t = now_s();
    }
    printf("%.0f\n", (double)count / (t - t0));
    js_DeleteStream(js, "RAWBENCH", NULL, NULL);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    nats_Close();
    return 0;
}
