/* fuzz_v5client.c - libFuzzer target for the client's side of the realtime
 * protocol: the input, cut at newlines, arrives as frames from a server (a
 * hello, pushes for default and tagged listens, answers to requests that
 * were never made, v5 piece counts and pieces, anything else) into a client
 * with listeners at the root, below it, on a windowed query and on
 * .info/connected. Nothing may crash, leak or corrupt the sync tree. */
#include "client/remote.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static hearth__event_queue events;

static void raise_now(void *ctx) {
    (void)ctx;
    hearth__events_raise(&events);
}

static void count_event(const hearth_event_t *e, void *ctx) {
    (void)e;
    ++*(size_t *)ctx;
}

static size_t seen;

static void listen_at(hearth__remote *r, const char *where,
                      const hearth_query_t *q, hearth_observer_t handle) {
    hearth__path p;
    if (hearth__path_parse(where, HEARTH__PATH_ALLOW_INFO, &p, NULL))
        abort();
    hearth__reg *reg = hearth__calloc(1, sizeof *reg);
    if (!reg)
        abort();
    reg->handle = handle;
    reg->mask = HEARTH_MASK_ALL;
    reg->cb = count_event;
    reg->ctx = &seen;
    if (hearth__remote_observe(r, &p, q, reg))
        hearth__free(reg);
}

static hearth__remote *client;

/* A revoked or refused listen ends its registrations. */
static void drop_now(void *ctx, hearth__reg *reg) {
    (void)ctx;
    hearth__remote_unobserve(client, reg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uv_loop_t loop;
    if (uv_loop_init(&loop))
        abort();
    hearth__events_init(&events);
    hearth__remote_url url = {.host = "127.0.0.1", .port = 9, .ns = "fuzz"};
    hearth__remote *r;
    hearth__remote_hooks hooks = {raise_now, drop_now, NULL, NULL};
    if (hearth__remote_open(&loop, &url, &events, &hooks, &r))
        abort();
    client = r;
    hearth__remote_set_online(r, false); /* frames come from the input */
    hearth_query_t *q;
    hearth_query_create(&q);
    hearth_query_order_by_child(q, "s", NULL);
    hearth_query_limit_to_last(q, 2, NULL);
    listen_at(r, "/", NULL, 1);
    listen_at(r, "/a", NULL, 2);
    listen_at(r, "/q", q, 3); /* tag 1 */
    listen_at(r, "/.info/connected", NULL, 4);
    hearth_query_free(q);
    const char *text = (const char *)data;
    for (size_t at = 0; at <= size;) {
        const char *nl = memchr(text + at, '\n', size - at);
        size_t end = nl ? (size_t)(nl - text) : size;
        hearth__remote_feed(r, text + at, end - at);
        at = end + 1;
    }
    hearth__remote_close(r);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    hearth__events_clear(&events);
    return 0;
}
