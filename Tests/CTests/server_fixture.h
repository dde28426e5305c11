/*
 * server_fixture.h - the server the tests of its doors (REST, realtime,
 * limits) start: on 127.0.0.1 at a free port, fsync off unless asked, its
 * data in data_dir (made on first use; the test removes it), and the
 * credentials those tests send.
 */
#ifndef HEARTH_SERVER_FIXTURE_H
#define HEARTH_SERVER_FIXTURE_H

#include "test.h"

#define OWNER "Authorization: Bearer owner\r\n"
/* The admin of servers with keys ("owner" is the admin only without). */
#define ADMIN_SECRET "0123456789abcdef-admin"
#define ADMIN "Authorization: Bearer " ADMIN_SECRET "\r\n"

/* /tmp/hearth-server-XXXXXX once make_data_dir has run (each test runs in
 * a process of its own, so each has its own). */
extern char data_dir[64];
void make_data_dir(void);

/* start_test_server on data_dir with config's settings. */
hearth_server_t *start_with(hearth_server_config_t config);
hearth_server_t *start(void); /* the defaults */
/* A server that syncs every commit (start_test_server's do not). */
hearth_server_t *start_syncing(void);
void stop(hearth_server_t *s); /* CHECKs that it stopped cleanly */

/* A counter of /.metrics (asked as the admin) by its whole name, labels
 * and all; -1 when it is not there. */
long metric(int port, const char *name);

/* Entries of a directory, "." and ".." aside (-1 when it cannot be
 * read). */
int dir_entries(const char *dir);
/* Files this process (the server runs in it) holds open, and one more
 * while they are counted: compare counts, not values. */
int open_fds(void);

#endif
