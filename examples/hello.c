/* hello.c - Hearth from a plain C program: open an embedded database,
 * listen to a location, write to it, read it back.
 *
 *   cc hello.c $(pkg-config --cflags --libs hearth) -o hello && ./hello
 */
#include <hearth.h>
#include <stdio.h>
#include <stdlib.h>

static void on_value(const hearth_event_t *event, void *ctx) {
    (void)ctx;
    char *json = hearth_node_to_json(event->node, 0, NULL);
    printf("value at %s: %s\n", event->path, json);
    hearth_free(json);
}

int main(void) {
    hearth_db_t *db;
    int rc = hearth_db_open(NULL, &db, NULL);
    if (rc) {
        fprintf(stderr, "open: %s\n", hearth_strerror(rc));
        return 1;
    }

    hearth_observer_t handle;
    hearth_error_t err;
    hearth_db_observe(db, "users/ada", NULL, HEARTH_MASK_VALUE, on_value, NULL,
                      NULL, &handle, &err);

    hearth_node_t *user;
    if (hearth_node_from_json("{\"name\": \"Ada\", \"born\": 1815}",
                              (size_t)-1, 0, &user, &err)) {
        fprintf(stderr, "bad JSON: %s\n", err.message);
        return 1;
    }
    hearth_db_set(db, "users/ada", user, NULL, NULL, NULL, &err);
    hearth_node_decref(user);

    hearth_node_t *name;
    hearth_db_get(db, "users/ada/name", NULL, &name, &err); /* waits for the set */
    printf("name: %s (hearth %s)\n", hearth_node_string_value(name, NULL),
           hearth_version());
    hearth_node_decref(name);

    hearth_db_close(db);
    return 0;
}
