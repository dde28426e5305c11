/* rest_namespaces.c - the admin's list of namespaces (GET
 * /.settings/namespaces): those stored in the data directory and those
 * open in memory, sorted, for the console's namespace picker. */
#include "server/rest_internal.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names, sorted: the keys of a set, which drops repeats. Every stored
 * namespace has a directory of its own, made by the server under a valid
 * name. */
static json_t *namespace_names(const hearth__server *srv) {
    json_t *set = json_object();
    json_object_set_new(set, srv->default_namespace, json_true());
    for (size_t i = 0; i < srv->nnamespaces; i++)
        json_object_set_new(set, srv->namespaces[i]->name, json_true());
    DIR *d = opendir(srv->data_dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.' && e->d_type == DT_DIR)
            json_object_set_new(set, e->d_name, json_true());
    if (d)
        closedir(d);
    size_t n = json_object_size(set), k = 0;
    const char **keys = hearth__malloc(n * sizeof *keys + 1);
    json_t *names = keys ? json_array() : NULL;
    const char *key;
    json_t *v;
    json_object_foreach(set, key, v) if (keys) keys[k++] = key;
    if (names) {
        qsort(keys, k, sizeof *keys, by_name);
        for (size_t i = 0; i < k; i++)
            json_array_append_new(names, json_string(keys[i]));
    }
    hearth__free(keys);
    json_decref(set);
    return names;
}

void hearth__rest_namespaces(rest *r) {
    if (!hearth__rest_admin_asks(r, HTTP_GET, "the list of namespaces"))
        return;
    hearth__rest_reply_json(r->conn, 200, namespace_names(r->srv));
}
