/* server_fixture.c - the server of the door tests (see server_fixture.h). */
#include "server_fixture.h"

#include "http_raw.h"

#include <dirent.h>

char data_dir[64];

void make_data_dir(void) {
    if (!data_dir[0]) {
        strcpy(data_dir, "/tmp/hearth-server-XXXXXX");
        CHECK(mkdtemp(data_dir) != NULL);
    }
}

hearth_server_t *start_with(hearth_server_config_t config) {
    make_data_dir();
    return start_test_server(config, data_dir);
}

hearth_server_t *start(void) {
    return start_with((hearth_server_config_t){0});
}

hearth_server_t *start_syncing(void) {
    make_data_dir();
    hearth_server_config_t config = {.size = sizeof config, .host = "127.0.0.1",
                                     .data_dir = data_dir,
                                     .fsync_mode = HEARTH_FSYNC_ALWAYS};
    hearth_server_t *s = NULL;
    CHECK_INT(hearth_server_start(&config, &s, NULL), 0);
    return s;
}

void stop(hearth_server_t *s) {
    CHECK_INT(hearth_server_stop(s), 0);
}

long metric(int port, const char *name) {
    response m = request(port, "GET", "/.metrics", OWNER, NULL);
    char key[160];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = strstr(m.body, key);
    long n = at ? atol(at + strlen(key)) : -1;
    free(m.body);
    return n;
}

int dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

int open_fds(void) {
    return dir_entries("/proc/self/fd");
}
