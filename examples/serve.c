/* serve.c - embedding the Hearth server in a C program.
 *
 *   cc serve.c $(pkg-config --cflags --libs hearth) -o serve
 *   ./serve [PORT [DATA_DIR [always|batch|off [NATS_URLS NODE]]]]
 *
 * With NATS_URLS and NODE the server joins a cluster (README "Cluster"),
 * its trust from the environment: HEARTH_CLUSTER_SECRET_FILE (the cluster
 * secret; without it the node runs insecure, trusting NATS with the data:
 * for benchmarks and experiments only), HEARTH_NATS_USER_FILE (the NATS
 * user and password, one a line), HEARTH_NATS_CA (the CA of NATS's TLS).
 *
 * Serves the REST and streaming API on 127.0.0.1 until SIGINT or SIGTERM,
 * then stops cleanly (writes in flight are finished and synced). */
#include <hearth.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

static void wait_for_signal(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int sig;
    sigwait(&set, &sig);
}

int main(int argc, char **argv) {
    /* Block the signals before any thread starts, so sigwait gets them. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    hearth_server_config_t config = {
        .size = sizeof config, /* which version of the struct this is */
        .host = "127.0.0.1",
        .port = argc > 1 ? atoi(argv[1]) : 9000,
        .data_dir = argc > 2 ? argv[2] : "./hearth-data",
        .fsync_mode = HEARTH_FSYNC_ALWAYS,
    };
    if (argc > 3)
        config.fsync_mode = strcmp(argv[3], "off") == 0     ? HEARTH_FSYNC_OFF
                            : strcmp(argv[3], "batch") == 0 ? HEARTH_FSYNC_BATCH
                                                            : HEARTH_FSYNC_ALWAYS;
    if (argc > 5) {
        config.cluster = argv[4];
        config.node = argv[5];
        config.cluster_secret_file = getenv("HEARTH_CLUSTER_SECRET_FILE");
        config.cluster_insecure = !config.cluster_secret_file;
        config.nats_user_file = getenv("HEARTH_NATS_USER_FILE");
        config.nats_ca_file = getenv("HEARTH_NATS_CA");
        if (config.cluster_insecure)
            fprintf(stderr, "serve: cluster insecure (no "
                            "HEARTH_CLUSTER_SECRET_FILE): NATS is trusted\n");
    }
    hearth_set_log(hearth_log_stderr, NULL); /* access lines, warnings */
    hearth_server_t *server;
    hearth_error_t err;
    if (hearth_server_start(&config, &server, &err)) {
        fprintf(stderr, "serve: %s\n", err.message);
        return 1;
    }
    printf("listening on http://127.0.0.1:%d, data in %s\n",
           hearth_server_port(server), config.data_dir);
    fflush(stdout);
    wait_for_signal();
    hearth_server_stop(server);
    return 0;
}
