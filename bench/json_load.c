/* json_load.c - the anchor of the big-data benchmark: jansson loading a
 * JSON file, its time and the process's RSS after (VmRSS and VmHWM).
 *
 *   json_load FILE
 *
 * Prints one line of key=value figures. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static long status_kb(const char *key) {
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0)
            sscanf(line + strlen(key), ": %ld", &kb);
    if (f)
        fclose(f);
    return kb;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: json_load FILE\n");
        return 64;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    json_error_t err;
    json_t *v = json_load_file(argv[1], 0, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!v) {
        fprintf(stderr, "json_load: %s: %s\n", argv[1], err.text);
        return 1;
    }
    printf("load_s=%.2f rss_kb=%ld hwm_kb=%ld\n",
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
           status_kb("VmRSS"), status_kb("VmHWM"));
    json_decref(v);
    return 0;
}
