/*
 * hearth.h - the one public header of Hearth, a self-hostable realtime JSON
 * database with the data model of the Firebase Realtime Database.
 *
 * Conventions (see docs/ARCHITECTURE.md):
 *
 * - Every public name starts with hearth_ / HEARTH_.
 * - Handles (nodes, queries, databases, servers) are opaque: their layout
 *   is not part of the ABI. The structs declared here are: config structs
 *   start with their size and only grow at the end (see
 *   hearth_db_config_t); the others (hearth_error_t, hearth_event_t,
 *   hearth_push_id_state_t, hearth_repair_report_t) change only with the
 *   major version, and so the soname (libhearth.so.MAJOR).
 * - Fallible functions return 0 or a negative HEARTH_E* code; describe it
 *   with hearth_strerror() / hearth_err_name(). Where a function takes a
 *   hearth_error_t *, it may be NULL; when given, it is filled with the code,
 *   a message and, where it applies, the path, key, line and column at fault.
 * - A function that fails changes nothing: no output is written, no state is
 *   modified, and no callback of that call is ever invoked.
 * - Nodes are immutable and reference counted. Constructors
 *   (hearth_node_string ...) and functions returning through an out
 *   parameter hand the caller a NEW reference that it releases with
 *   hearth_node_decref(). Functions returning `const hearth_node_t *`
 *   return a BORROWED reference, valid as long as the node it was obtained
 *   from. Reference counts are atomic: a node may be shared and released
 *   across threads.
 * - A name ending in _new means one thing, as in jansson: the function
 *   STEALS the reference to the value it is given (the caller's reference
 *   passes to the callee, also when the call fails), as
 *   hearth_node_set_child_new beside hearth_node_set, which borrows.
 *   Functions that make a new object are named _create
 *   (hearth_query_create, hearth_token_create) or after what they make.
 * - Callbacks: every registration takes (cb, ctx, ctx_free). If the call
 *   fails, neither cb nor ctx_free is ever called: ctx stays the caller's. A
 *   completion
 *   fires exactly once (with HEARTH_ECANCELED when the database closes
 *   first). An observer fires any number of times; ctx_free(ctx), when not
 *   NULL, is called exactly once after the last call of the callback that
 *   received ctx. Data handed to a callback is borrowed for the duration of
 *   the call: take a reference (hearth_node_incref) to keep it.
 */
#ifndef HEARTH_H
#define HEARTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define HEARTH_EXTERN __attribute__((visibility("default")))
#else
#define HEARTH_EXTERN
#endif

/* Nullability, so that Swift imports pointers as what they are. Every
 * pointer in this header is non-NULL (a parameter the caller must give, a
 * result that is always there) unless marked HEARTH_NULLABLE (a parameter
 * the caller may leave out, a result that may be missing): clang reads the
 * header in an assume_nonnull region, and Swift imports unmarked pointers
 * as non-optional, marked ones as optionals. The marks are _Nullable and
 * _Nonnull, which only clang knows; other compilers see nothing. Pointers
 * to pointers are marked at both levels: an out-parameter
 * (hearth_node_t **out) must be given, and what it holds may be NULL (the
 * call writes it); an array of paths or values must be given, and each of
 * its elements too. */
#if defined(__clang__)
#define HEARTH_NULLABLE _Nullable
#define HEARTH_NONNULL _Nonnull
#pragma clang assume_nonnull begin
#else
#define HEARTH_NULLABLE
#define HEARTH_NONNULL
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                  */

/* The version of this header. These three lines are the one place the
 * version is written: the Makefile reads them for hearth.pc and the shared
 * library's soname (libhearth.so.MAJOR). MAJOR changes whenever the ABI
 * breaks (while it is 0, every MINOR may break it); MINOR adds to the API;
 * PATCH fixes without changing it. */
#define HEARTH_VERSION_MAJOR 0
#define HEARTH_VERSION_MINOR 3
#define HEARTH_VERSION_PATCH 0

/* 0xMMmmpp: one number to compare, e.g. #if HEARTH_VERSION_HEX >= 0x000200 */
#define HEARTH_VERSION_HEX                                                     \
    ((HEARTH_VERSION_MAJOR << 16) | (HEARTH_VERSION_MINOR << 8) |             \
     HEARTH_VERSION_PATCH)

/* The version of the library linked at run time, which may be newer than
 * the header a program was compiled with: "0.3.0", and as
 * HEARTH_VERSION_HEX. */
HEARTH_EXTERN const char *hearth_version(void);
HEARTH_EXTERN unsigned hearth_version_number(void);

/* ---- the log ----
 * The library writes nothing to stderr by itself. What it has to say (a
 * cache it rebuilt, a token the server refused, a cluster record it
 * dropped, the server's access lines) goes to the one log function the
 * program sets, as SQLite's SQLITE_CONFIG_LOG: none by default, so
 * nothing is said. The hearth CLI sets hearth_log_stderr. */
typedef enum hearth_log_level {
    HEARTH_LOG_ERROR = 1,   /* something could not be used and was dropped or
                               rebuilt (a cache, a stored write, a record) */
    HEARTH_LOG_WARNING = 2, /* refused or degraded: a token, a listen, a
                               rules file, a limit */
    HEARTH_LOG_MESSAGE = 3, /* a message of the realtime protocol, "> ..."
                               sent and "< ..." received (hearth_set_logging) */
    HEARTH_LOG_ACCESS = 4   /* a server's access or event line, formatted as
                               its log_format says */
} hearth_log_level;

/* message: one line of UTF-8 without its newline, valid during the call.
 * Called on whatever thread has something to say (a database's loop, a
 * server's, the caller's), possibly on several at once: the function must
 * be thread-safe, quick, and must not call into Hearth. */
typedef void (*hearth_log_fn)(void *HEARTH_NULLABLE user,
                              hearth_log_level level, const char *message);

/* Sets the log function (NULL: nothing is logged, the default) and the user
 * pointer passed to it. Set it before opening databases or starting
 * servers: a change while they run may reach a message in flight with the
 * old function or the new one's user pointer. */
HEARTH_EXTERN void hearth_set_log(hearth_log_fn HEARTH_NULLABLE fn,
                                  void *HEARTH_NULLABLE user);

/* A log function writing each message to stderr in one write (so lines of
 * threads never interleave): "hearth: MESSAGE" for errors, warnings and
 * protocol messages, the line alone for access lines. user is unused. */
HEARTH_EXTERN void hearth_log_stderr(void *HEARTH_NULLABLE user,
                                     hearth_log_level level,
                                     const char *message);

/* Logs what clients of a server send and receive (one HEARTH_LOG_MESSAGE
 * per message, "> ..." and "< ...") to the log function, for debugging;
 * off by default. Any thread. */
HEARTH_EXTERN void hearth_set_logging(bool enabled);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */

/* The error table, one row per code: XX(NAME, value, "message") defines
 * HEARTH_NAME = value, what hearth_strerror() and hearth_err_name() answer,
 * and the codes the Swift wrapper names (its tests check that every row
 * has a Swift name). Codes are consecutive from 0 down; a new code is a new
 * last row. Expand it with a macro of your own, as libuv's UV_ERRNO_MAP:
 *   #define NAME_OF(name, value, message) case HEARTH_##name: ...
 */
#define HEARTH_ERRNO_MAP(XX)                                                   \
    XX(OK, 0, "success")                                                       \
    XX(ENOMEM, -1, "out of memory")                                            \
    XX(EINVAL, -2, "invalid argument")                                         \
    XX(EJSON, -3, "malformed JSON")                                            \
    XX(EKEY, -4, "invalid key")                                                \
    XX(EPATH, -5, "invalid path")                                              \
    XX(EDEPTH, -6, "data nested deeper than 32 levels")                        \
    XX(ETOOBIG, -7, "key, string or value over its size limit")                \
    XX(ENUMBER, -8, "number is NaN or infinite")                               \
    XX(EPRIORITY, -9, "invalid priority")                                      \
    XX(ESERVERVALUE, -10, "invalid server value")                              \
    XX(EVALUE, -11, "invalid value")                                           \
    XX(EUPDATE, -12, "update paths overlap")                                   \
    XX(EREADONLY, -13, "location is read-only")                                \
    XX(EQUERY, -14, "invalid query")                                           \
    XX(ECLOSED, -15, "database is closed")                                     \
    XX(ECANCELED, -16, "operation canceled")                                   \
    XX(EABORTED, -17, "transaction aborted")                                   \
    XX(ENOTFOUND, -18, "not found")                                            \
    XX(EIO, -19, "input/output error")                                         \
    XX(ELOOP, -20, "event loop error")                                         \
    XX(EUNSUPPORTED, -21, "not supported")                                     \
    XX(EDENIED, -22, "permission denied")                                      \
    XX(EOFFLINE, -23, "client offline with no active listeners and no matching disk cache entries") \
    XX(EMAXRETRY, -24, "transaction retried too many times")                   \
    XX(EDISCONNECTED, -25, "the connection was lost")                          \
    XX(EOVERRIDDEN, -26, "a later set replaced the transaction's value")       \
    XX(EREMOTE, -27, "the server refused the request")                         \
    XX(EDATASTALE, -28, "the value changed since it was read")                 \
    XX(ENOSPC, -29, "no space left on the data directory's disk")

#define HEARTH__ERRNO_ENUM(name, value, message) HEARTH_##name = value,
typedef enum hearth_errno { HEARTH_ERRNO_MAP(HEARTH__ERRNO_ENUM) } hearth_errno;
#undef HEARTH__ERRNO_ENUM

/* How many codes the table has (HEARTH_OK included). */
#define HEARTH__ERRNO_ONE(name, value, message) +1
enum { HEARTH_ERRNO_COUNT = 0 HEARTH_ERRNO_MAP(HEARTH__ERRNO_ONE) };
#undef HEARTH__ERRNO_ONE

/* Lowest error code in use; every code from -1 down to it has a name. */
#define HEARTH_ERRNO_LAST (1 - HEARTH_ERRNO_COUNT)

/* A sentence describing err, e.g. "invalid key". Never NULL. */
HEARTH_EXTERN const char *hearth_strerror(int err);
/* The code's name, e.g. "HEARTH_EKEY". Never NULL ("HEARTH_UNKNOWN"). */
HEARTH_EXTERN const char *hearth_err_name(int err);

/* Details of a failure. `message` names what was wrong (the key, the path,
 * the limit); `path` is the location in the data at fault ("" when none);
 * line/column are 1-based positions in JSON text (0 when not text). */
typedef struct hearth_error_s {
    int code;
    int line;
    int column;
    char path[256];
    char message[256];
} hearth_error_t;

/* Releases memory returned by Hearth (JSON text and similar). */
HEARTH_EXTERN void hearth_free(void *HEARTH_NULLABLE ptr);

/* ------------------------------------------------------------------------ */
/* Limits (semantics of the service)                                        */

#define HEARTH_MAX_DEPTH 32
#define HEARTH_MAX_KEY_BYTES 768
#define HEARTH_MAX_STRING_BYTES (10 * 1024 * 1024)

/* ------------------------------------------------------------------------ */
/* Nodes: immutable JSON trees                                              */

typedef struct hearth_node_s hearth_node_t;

typedef enum hearth_type {
    HEARTH_TYPE_NULL = 0,   /* no data (the empty node) */
    HEARTH_TYPE_BOOLEAN = 1,
    HEARTH_TYPE_NUMBER = 2,
    HEARTH_TYPE_STRING = 3,
    HEARTH_TYPE_OBJECT = 4, /* a node with children */
    /* A server value placeholder ({".sv": ...}). It appears only in values
     * parsed for writing; the database resolves it when it applies them. */
    HEARTH_TYPE_SERVER_VALUE = 5
} hearth_type;

/* Returns node, with one more reference. */
HEARTH_EXTERN hearth_node_t *hearth_node_incref(const hearth_node_t *node);
/* Releases one reference; NULL is ignored. */
HEARTH_EXTERN void hearth_node_decref(const hearth_node_t *HEARTH_NULLABLE node);

/* Constructors. They return a new reference, or NULL when out of memory
 * (number: or when not finite; string: or when not valid UTF-8 or longer
 * than HEARTH_MAX_STRING_BYTES). hearth_node_null never fails: the null
 * node is one shared static node. */
HEARTH_EXTERN hearth_node_t *hearth_node_null(void); /* never NULL */
HEARTH_EXTERN hearth_node_t *HEARTH_NULLABLE hearth_node_boolean(bool value);
HEARTH_EXTERN hearth_node_t *HEARTH_NULLABLE hearth_node_number(double value);
HEARTH_EXTERN hearth_node_t *HEARTH_NULLABLE hearth_node_string(const char *utf8, size_t len);
/* {".sv": "timestamp"} and {".sv": {"increment": delta}}. */
HEARTH_EXTERN hearth_node_t *HEARTH_NULLABLE hearth_node_server_timestamp(void);
HEARTH_EXTERN hearth_node_t *HEARTH_NULLABLE hearth_node_server_increment(double delta);

HEARTH_EXTERN hearth_type hearth_node_type(const hearth_node_t *node);
HEARTH_EXTERN bool hearth_node_is_null(const hearth_node_t *node);
HEARTH_EXTERN bool hearth_node_boolean_value(const hearth_node_t *node);
HEARTH_EXTERN double hearth_node_number_value(const hearth_node_t *node);
/* The string's bytes (NUL-terminated) and, if len is not NULL, its length.
 * NULL when the node is not a string. Borrowed from node. */
HEARTH_EXTERN const char *HEARTH_NULLABLE hearth_node_string_value(const hearth_node_t *node,
                                                   size_t *HEARTH_NULLABLE len);

/* The priority: the null node, a number or a string. Borrowed. */
HEARTH_EXTERN const hearth_node_t *hearth_node_priority(const hearth_node_t *node);

/* Number of children (0 for leaves). */
HEARTH_EXTERN size_t hearth_node_child_count(const hearth_node_t *node);
/* The child under key, or the null node. Borrowed. */
HEARTH_EXTERN const hearth_node_t *hearth_node_child(const hearth_node_t *node,
                                                     const char *key);
/* The i-th child in key order (0-based) and its key, both borrowed; NULL when
 * i is out of range. O(log n). */
HEARTH_EXTERN const hearth_node_t *HEARTH_NULLABLE hearth_node_child_at(const hearth_node_t *node,
                                                        size_t index,
                                                        const char *HEARTH_NULLABLE *HEARTH_NULLABLE key);
/* The node at a slash-separated path below node ("" is node itself), or the
 * null node. Fails only for an invalid path. Borrowed through *out. */
HEARTH_EXTERN int hearth_node_get(const hearth_node_t *node, const char *path,
                                  const hearth_node_t *HEARTH_NULLABLE *HEARTH_NONNULL out,
                                  hearth_error_t *HEARTH_NULLABLE err);

/* Calls cb for each child in key order; stops early when cb returns
 * non-zero and returns that value, else 0. */
typedef int (*hearth_child_cb)(const char *key, const hearth_node_t *child,
                               void *HEARTH_NULLABLE ctx);
HEARTH_EXTERN int hearth_node_foreach_child(const hearth_node_t *node,
                                            hearth_child_cb cb, void *HEARTH_NULLABLE ctx);

/* Deep equality of value and priority. */
HEARTH_EXTERN bool hearth_node_equal(const hearth_node_t *a,
                                     const hearth_node_t *b);

/* Copy-on-write updates. *node is replaced by the updated tree; the caller
 * keeps owning *node (old snapshots held elsewhere are never modified; a
 * node the caller holds alone is updated in place). `value` is borrowed; a
 * null value deletes. `path` may end in ".priority" to set a priority.
 * On failure *node is unchanged. */
HEARTH_EXTERN int hearth_node_set(hearth_node_t *HEARTH_NULLABLE *HEARTH_NONNULL node, const char *path,
                                  const hearth_node_t *value,
                                  hearth_error_t *HEARTH_NULLABLE err);
/* Same for one direct child key; steals `value` (also on failure). */
HEARTH_EXTERN int hearth_node_set_child_new(hearth_node_t *HEARTH_NULLABLE *HEARTH_NONNULL node,
                                            const char *key,
                                            hearth_node_t *value,
                                            hearth_error_t *HEARTH_NULLABLE err);
/* A new reference to node with its priority replaced (null removes it). */
HEARTH_EXTERN int hearth_node_with_priority(const hearth_node_t *node,
                                            const hearth_node_t *priority,
                                            hearth_node_t *HEARTH_NULLABLE *HEARTH_NONNULL out,
                                            hearth_error_t *HEARTH_NULLABLE err);

/* ---- JSON ---- */

struct json_t; /* jansson's value type, for the *_jansson functions */

/* Flags for hearth_node_from_json. */
#define HEARTH_JSON_ALLOW_SERVER_VALUES 0x1u /* accept {".sv": ...} */

/* Parses JSON text into a node, validating it as Hearth data (keys, depth,
 * numbers, priorities, .value, .sv). `len` may be (size_t)-1 for a
 * NUL-terminated string. */
HEARTH_EXTERN int hearth_node_from_json(const char *text, size_t len,
                                        unsigned flags, hearth_node_t *HEARTH_NULLABLE *HEARTH_NONNULL out,
                                        hearth_error_t *HEARTH_NULLABLE err);
/* The same from a jansson value (json_t *). */
HEARTH_EXTERN int hearth_node_from_jansson(const struct json_t *json,
                                           unsigned flags, hearth_node_t *HEARTH_NULLABLE *HEARTH_NONNULL out,
                                           hearth_error_t *HEARTH_NULLABLE err);

/* Flags for hearth_node_to_json / hearth_node_to_jansson. */
#define HEARTH_JSON_EXPORT 0x10u /* priorities kept, no array conversion */
#define HEARTH_JSON_PRETTY 0x20u /* indented, for people */

/* Whether node reads as an array: an object whose keys are all integers
 * "0", "1", ... (no sign, no leading zero) and whose largest key is below
 * twice its child count, as the service decides. hearth_node_to_json and
 * hearth_node_to_jansson write such objects as arrays (missing indexes as
 * null) unless HEARTH_JSON_EXPORT; bindings that convert nodes themselves
 * ask here rather than repeat the rule. False for leaves and NULL. */
HEARTH_EXTERN bool hearth_node_is_array(const hearth_node_t *HEARTH_NULLABLE node);

/* Serializes node as JSON text (NUL-terminated; release with hearth_free).
 * Objects whose keys look like a dense array become arrays unless
 * HEARTH_JSON_EXPORT. Returns NULL when out of memory. */
HEARTH_EXTERN char *HEARTH_NULLABLE hearth_node_to_json(const hearth_node_t *node,
                                        unsigned flags, size_t *HEARTH_NULLABLE len);
/* The same as a new jansson value (json_t *, release with json_decref). */
HEARTH_EXTERN struct json_t *HEARTH_NULLABLE hearth_node_to_jansson(const hearth_node_t *node,
                                                    unsigned flags);

/* ---- Node hash (compare-and-set, listen hashes) ---- */

/* Writes the node hash (base64 SHA-1, 28 characters, "" for null) into
 * out, which must hold HEARTH_HASH_SIZE bytes. */
#define HEARTH_HASH_SIZE 29
HEARTH_EXTERN int hearth_node_hash(const hearth_node_t *node,
                                   char out[HEARTH_NONNULL HEARTH_HASH_SIZE]);

/* ------------------------------------------------------------------------ */
/* Keys and paths                                                           */

/* Validates a key / a path (keys joined by '/'; empty segments ignored; a
 * path may start with ".info" and end with ".priority"). */
HEARTH_EXTERN int hearth_validate_key(const char *HEARTH_NULLABLE key, hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_validate_path(const char *path, hearth_error_t *HEARTH_NULLABLE err);
/* Compares two keys in the service's order (integer-like keys first,
 * numerically; then UTF-16 code unit order): <0, 0 or >0. */
HEARTH_EXTERN int hearth_key_compare(const char *a, const char *b);

/* ------------------------------------------------------------------------ */
/* Push IDs                                                                 */

#define HEARTH_PUSH_ID_SIZE 21 /* 20 characters and a NUL */

/* State of a push ID generator; zero-initialize it. Not thread-safe: give
 * each thread its own, or serialize calls. */
typedef struct hearth_push_id_state_s {
    int64_t last_time_ms;
    uint8_t last_random[12];
} hearth_push_id_state_t;

/* Writes the next push ID for time now_ms (server-corrected ms since the
 * epoch) into out. IDs from one state are strictly increasing. */
HEARTH_EXTERN int hearth_push_id(hearth_push_id_state_t *state, int64_t now_ms,
                                 char out[HEARTH_NONNULL HEARTH_PUSH_ID_SIZE]);

/* Milliseconds since the epoch by the wall clock. */
HEARTH_EXTERN int64_t hearth_now_ms(void);

/* ------------------------------------------------------------------------ */
/* Queries                                                                  */

typedef struct hearth_query_s hearth_query_t;

/* A new, unconstrained query (order by priority, no range, no limit),
 * released with hearth_query_free. (Named hearth_query_new before 0.2:
 * _new now always means "steals", see the conventions above.) */
HEARTH_EXTERN int hearth_query_create(hearth_query_t *HEARTH_NULLABLE *HEARTH_NONNULL out);
HEARTH_EXTERN hearth_query_t *HEARTH_NULLABLE hearth_query_copy(const hearth_query_t *HEARTH_NULLABLE query);
HEARTH_EXTERN void hearth_query_free(hearth_query_t *HEARTH_NULLABLE query);

/* At most one order-by per query. */
HEARTH_EXTERN int hearth_query_order_by_key(hearth_query_t *q,
                                            hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_query_order_by_priority(hearth_query_t *q,
                                                 hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_query_order_by_value(hearth_query_t *q,
                                              hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_query_order_by_child(hearth_query_t *q,
                                              const char *path,
                                              hearth_error_t *HEARTH_NULLABLE err);
/* Range bounds: a value (borrowed; for order-by-key a string key) and an
 * optional key (NULL for none) breaking ties among equal values. */
HEARTH_EXTERN int hearth_query_start_at(hearth_query_t *q,
                                        const hearth_node_t *value,
                                        const char *HEARTH_NULLABLE key, hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_query_start_after(hearth_query_t *q,
                                           const hearth_node_t *value,
                                           const char *HEARTH_NULLABLE key,
                                           hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_query_end_at(hearth_query_t *q,
                                      const hearth_node_t *value,
                                      const char *HEARTH_NULLABLE key, hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_query_end_before(hearth_query_t *q,
                                          const hearth_node_t *value,
                                          const char *HEARTH_NULLABLE key,
                                          hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_query_equal_to(hearth_query_t *q,
                                        const hearth_node_t *value,
                                        const char *HEARTH_NULLABLE key, hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_query_limit_to_first(hearth_query_t *q, uint32_t n,
                                              hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_query_limit_to_last(hearth_query_t *q, uint32_t n,
                                             hearth_error_t *HEARTH_NULLABLE err);

/* A canonical text form of the query's parameters, as the service's
 * query identifier ("{}" for none); hearth_free it. */
HEARTH_EXTERN char *HEARTH_NULLABLE hearth_query_to_json(const hearth_query_t *q);

/* The children of node that the query selects, as a new node (priorities
 * kept). A leaf node yields itself when the query has no constraint and
 * null otherwise. */
HEARTH_EXTERN int hearth_query_apply(const hearth_query_t *q,
                                     const hearth_node_t *node,
                                     hearth_node_t *HEARTH_NULLABLE *HEARTH_NONNULL out);
/* Calls cb for each selected child in the query's order (index order, ties
 * by key); stops early when cb returns non-zero and returns that value. */
HEARTH_EXTERN int hearth_query_foreach(const hearth_query_t *q,
                                       const hearth_node_t *node,
                                       hearth_child_cb cb, void *HEARTH_NULLABLE ctx);

/* ------------------------------------------------------------------------ */
/* The embedded database                                                    */

typedef struct hearth_db_s hearth_db_t;

struct uv_loop_s; /* libuv's loop (uv_loop_t), for hearth_db_config_t.loop */

/* When an acknowledged write is on disk. */
typedef enum hearth_fsync_mode {
    HEARTH_FSYNC_ALWAYS = 0, /* synced before the write is acknowledged */
    HEARTH_FSYNC_BATCH = 1,  /* synced at most a second after */
    HEARTH_FSYNC_OFF = 2     /* left to the operating system */
} hearth_fsync_mode;

/* Config structs (hearth_db_config_t, hearth_server_config_t) grow at the
 * end from version to version. Their first field, `size`, says how big the
 * caller's struct is: set it to sizeof the struct, so that a program built
 * against this header keeps working with a later library (the fields it
 * does not know are zero, their defaults) and an earlier one (which fails
 * with HEARTH_EUNSUPPORTED only if the program sets a field it lacks).
 * `size` is required: 0 is refused (HEARTH_EINVAL), since a struct whose
 * size is unknown cannot be read as meant. Fields marked "since 0.3" are
 * read only when `size` covers them. */
typedef struct hearth_db_config_s {
    size_t size; /* sizeof(hearth_db_config_t): see above */
    /* A libuv loop (uv_loop_t *) to run on, driven by the caller: hearth_db_open and
     * hearth_db_close must then be called on the thread that runs that
     * loop, and callbacks run there. NULL: the database starts and owns a
     * loop on its own thread. */
    struct uv_loop_s *HEARTH_NULLABLE loop;
    /* A directory to keep the data in (created if missing; one process at
     * a time): every write is logged before it is acknowledged, snapshots
     * are taken as the log grows, and opening recovers the data. NULL: in
     * memory only. */
    const char *HEARTH_NULLABLE data_dir;
    hearth_fsync_mode fsync_mode;
    /* A server to be a client of instead ("http://127.0.0.1:9000?ns=demo",
     * "ws://...", "https://NAME.firebaseio.com"): the same calls then read
     * and write the server's data over its realtime protocol. Writes raise
     * events at once and are sent in order (queued while offline);
     * observers see the server's data as it arrives; `.info/connected` and
     * `.info/serverTimeOffset` can be observed. Excludes data_dir. */
    const char *HEARTH_NULLABLE url;
    /* With url: a directory (created if missing) keeping the client's
     * cache: its pending writes and the server data of the locations it
     * listens to, in one SQLite file per URL. A client opened again on the
     * same URL and directory, even offline, shows that data to new
     * observers at once, answers reads from it, and sends the stored
     * writes in order when it connects. Writes still pending at close stay
     * stored (their completions get HEARTH_ECANCELED). A damaged or
     * unusable file is reported to the log and replaced, keeping the
     * pending writes it can still read. A database with its own loop opens
     * the file there, after hearth_db_open returned (SQLite's checks and a
     * rebuild never hold up the caller, an app's main thread say) and
     * before any call made after it; with the caller's loop, in
     * hearth_db_open. The directory is made with its parents; one that
     * cannot be made is reported to the log and the client keeps its data
     * in memory. NULL: memory only. */
    const char *HEARTH_NULLABLE cache_dir;
    /* The cache's bound in bytes, 1 MB to 100 MB (0: 10 MB): server data
     * no observer holds is pruned, least recently used first, past it;
     * pending writes have a bound of the same size, and a write past it
     * fails with HEARTH_ETOOBIG. */
    size_t cache_size;
    /* Embedded only: a rules document (JSON with comments) that judges
     * every call on this handle as the user `auth_variable` describes,
     * as the Admin SDK's databaseAuthVariableOverride does: a write the
     * rules refuse completes with HEARTH_EDENIED and changes nothing (no
     * event), a read fails with HEARTH_EDENIED, an observer the rules do
     * not let read gets a HEARTH_EVENT_CANCEL and ends. NULL: no rules,
     * every call is allowed (the embedding program is the admin). */
    const char *HEARTH_NULLABLE rules;
    /* With rules: the rules' `auth` as JSON ({"uid": "ada", ...}); NULL or
     * "null": unauthenticated. */
    const char *HEARTH_NULLABLE auth_variable;
    /* With url: the program's own WebSocket transport (copied), through
     * which the client reaches the server instead of the built-in one
     * (libuv, OpenSSL, wslay): on Apple platforms the Swift module's
     * URLSession transport, so that TLS, trust, proxies and cellular are
     * the system's. NULL: the built-in one. */
    const struct hearth_transport_s *HEARTH_NULLABLE transport;
} hearth_db_config_t;

/* ---- a WebSocket transport of the program's (config.transport) ----
 * The client asks the transport to open a connection, send text messages
 * and close it; the transport reports what happens on the connection's
 * hearth_ws_t with the three hearth_ws_* calls below, from any thread
 * (they are queued to the database's loop). The contract:
 * - open returns the transport's handle for the connection (passed back
 *   to send and close), or NULL when it cannot start (nothing follows);
 * - after a non-NULL open, hearth_ws_closed is called exactly once,
 *   whatever happens (failure, the server's close, or close below), and
 *   nothing is called on ws after it;
 * - hearth_ws_opened once the WebSocket is open, then hearth_ws_message
 *   for each text message received, in order (binary ones are dropped);
 * - send and close are called on the database's loop thread, must not
 *   block, and may come after the transport reported closed (it ignores
 *   them then); send returns nonzero when it cannot send (the client then
 *   closes and reconnects later);
 * - close asks for the end; hearth_ws_closed follows promptly (the
 *   database's close waits for it). */
typedef struct hearth_ws_s hearth_ws_t;
typedef struct hearth_transport_s {
    void *HEARTH_NULLABLE user; /* passed to the three calls */
    /* url: "ws://host:port/.ws?v=5&ns=NAME" or "wss://...". */
    void *HEARTH_NULLABLE (*HEARTH_NONNULL open)(void *HEARTH_NULLABLE user,
                                                 const char *url,
                                                 hearth_ws_t *ws);
    int (*HEARTH_NONNULL send)(void *HEARTH_NULLABLE user, void *conn,
                               const char *text, size_t len);
    void (*HEARTH_NONNULL close)(void *HEARTH_NULLABLE user, void *conn);
} hearth_transport_t;

/* The WebSocket is open: messages may be sent. */
HEARTH_EXTERN void hearth_ws_opened(hearth_ws_t *ws);
/* One text message received (copied before this returns). */
HEARTH_EXTERN void hearth_ws_message(hearth_ws_t *ws, const char *text,
                                     size_t len);
/* The connection ended: status 0 for a clean close, else a negative
 * HEARTH_E* code (HEARTH_EIO for a failure); reason: a short text (may be
 * NULL). The last call on ws. */
HEARTH_EXTERN void hearth_ws_closed(hearth_ws_t *ws, int status,
                                    const char *HEARTH_NULLABLE reason);

/* Opens a database. config may be NULL (in memory, own loop thread). With a
 * data directory, err (may be NULL) explains a failure to recover. */
HEARTH_EXTERN int hearth_db_open(const hearth_db_config_t *HEARTH_NULLABLE config,
                                 hearth_db_t *HEARTH_NULLABLE *HEARTH_NONNULL out, hearth_error_t *HEARTH_NULLABLE err);
/* Closes the database: operations still queued complete with
 * HEARTH_ECANCELED, every observer's ctx_free runs (on the calling thread),
 * the owned loop thread is joined, and db is freed. Not from a callback of
 * a database with its own loop (HEARTH_EINVAL). With a caller's loop, call
 * it on the loop's thread; the loop must then run once more to finish
 * closing its handle before db is freed. */
HEARTH_EXTERN int hearth_db_close(hearth_db_t *db);

/* What hearth_repair cut. */
typedef struct hearth_repair_report_s {
    bool repaired;           /* false: no log was damaged; nothing changed */
    uint64_t log_generation; /* the damaged log: data_dir/log.<generation> */
    uint64_t damage_offset;  /* its first bad record */
    uint64_t cut_offset;     /* where it was cut: the start of the commit
                                holding that record (a commit is kept whole
                                or not at all) */
    uint64_t bytes_cut;      /* from cut_offset to its end, and later logs */
    uint64_t records_cut;    /* intact records found in what was cut: the
                                writes lost besides the damaged one */
    uint64_t logs_moved;     /* later logs moved aside whole */
    char copy[512];          /* the damaged log as it was */
} hearth_repair_report_t;

/* Repairs a data directory that fails to open because a log is damaged
 * (the server keeps namespace NAME in its data_dir/NAME). No process may
 * have it open. Copies the damaged log aside, beside it, as
 * log.<G>.damaged-<UTC time>, cuts the log at its first bad record and
 * moves every later log aside the same way (their writes came after the
 * lost ones); everything before the damage stays. report (may be NULL)
 * says what was cut; nothing changes when nothing is damaged. HEARTH_EIO
 * (err says why) when the directory is in use or cannot be read or
 * changed, or when a cut cannot help: a missing snapshot or log, a
 * damaged snapshot. */
HEARTH_EXTERN int hearth_repair(const char *data_dir,
                                hearth_repair_report_t *HEARTH_NULLABLE report,
                                hearth_error_t *HEARTH_NULLABLE err);

/* Copies the data of a data directory (a namespace's: data_dir/NAME of
 * the server's) into out_file as export-format JSON, consistent as of one
 * commit, while a server may hold the directory and go on writing: its
 * files are only read (held open first, so that a snapshot cannot remove
 * them meanwhile; links to them are made in a directory, removed after:
 * on Linux $TMPDIR/hearth-backup-pin-*, links to /proc/self/fd; on macOS
 * and iOS hard links in .NAME.backup-pin-* beside data_dir, whose volume
 * they cannot leave). out_file is written whole or not at all (through
 * out_file.tmp, synced, then renamed). HEARTH_EIO (err names the file)
 * when the directory cannot be read or is damaged, or out_file cannot be
 * written. `hearth import` (or `hearth restore`) puts it back. */
HEARTH_EXTERN int hearth_backup(const char *data_dir, const char *out_file,
                                hearth_error_t *HEARTH_NULLABLE err);

/* Point-in-time recovery, from a data directory's retained history
 * (`hearth serve --retain`: snapshots and logs kept for a window). Each
 * write's log record carries its time, its sequence among the
 * namespace's writes (from 1, increasing; a failed commit leaves a gap)
 * and who made it. Like hearth_backup, these only read: a server may
 * hold the directory. A damaged log (other than a commit still being
 * written at the end of the newest) is refused, with HEARTH_EIO and err
 * naming the file and offset. */

/* Copies the data of data_dir as it was after the last write made at or
 * before at_ms (Unix ms; 0: any time) whose sequence is at most at_seq
 * (0: any) into out_file, as hearth_backup does (export JSON, whole or
 * not at all). HEARTH_ENOTFOUND (err says the oldest moment held) when
 * the moment is older than the files retained, or the sequence is not
 * written yet (or data_dir does not exist). */
HEARTH_EXTERN int hearth_backup_at(const char *data_dir, int64_t at_ms,
                                   uint64_t at_seq, const char *out_file,
                                   hearth_error_t *HEARTH_NULLABLE err);

/* One part of a logged write, borrowed for the callback. */
typedef struct hearth_change_s {
    int64_t time_ms;     /* when it was applied (0: logged by an earlier
                            version, which kept no time) */
    uint64_t sequence;   /* the write's */
    const char *HEARTH_NULLABLE identity; /* "admin", "anonymous" or
                            "uid:<uid>" (never a token); NULL: not logged */
    const char *path;    /* where it wrote ("/users/ada") */
    size_t bytes;        /* the value's size as JSON (null: 4, a delete) */
} hearth_change_t;
/* Returns 0 to go on; anything else stops the listing, which returns it. */
typedef int (*hearth_change_cb)(const hearth_change_t *change,
                                void *HEARTH_NULLABLE ctx);

/* Calls cb, in log order, for every part of every retained write of
 * data_dir that touches path (at, above or below it; NULL or "/": all)
 * and was made within [since_ms, until_ms] (0: unbounded). */
HEARTH_EXTERN int hearth_log_changes(const char *data_dir,
                                     const char *HEARTH_NULLABLE path,
                                     int64_t since_ms, int64_t until_ms,
                                     hearth_change_cb cb,
                                     void *HEARTH_NULLABLE ctx,
                                     hearth_error_t *HEARTH_NULLABLE err);

/* Completion of a write: status is 0 or a negative HEARTH_E* code. */
typedef void (*hearth_completion_cb)(int status, void *HEARTH_NULLABLE ctx);

/* Inside a completion (hearth_completion_cb, hearth_transaction_done_cb,
 * hearth_get_cb) whose status is not 0, on the thread running it: that
 * failure's detail as a synchronous call's err gives it (the message
 * naming what was wrong and where; a server's refusal in the server's own
 * words), or NULL when there is nothing to add to hearth_strerror(status).
 * Valid until the callback returns; NULL outside one. */
HEARTH_EXTERN const hearth_error_t *HEARTH_NULLABLE hearth_completion_error(void);
typedef void (*hearth_free_cb)(void *HEARTH_NULLABLE ctx);

/* Writes. Each may be called from any thread; validation happens before it
 * returns (an error means nothing was queued and cb will not run). The write
 * is applied on the loop in call order, its events are raised, then cb runs
 * (cb may be NULL). Values are borrowed; {".sv"} placeholders are resolved
 * when the write is applied. */
HEARTH_EXTERN int hearth_db_set(hearth_db_t *db, const char *path,
                                const hearth_node_t *value,
                                hearth_completion_cb HEARTH_NULLABLE cb, void *HEARTH_NULLABLE ctx,
                                hearth_free_cb HEARTH_NULLABLE ctx_free, hearth_error_t *HEARTH_NULLABLE err);
/* Multi-path update: count (relative path, value) pairs below `path`,
 * applied as one write. A path that is an ancestor of another fails with
 * HEARTH_EUPDATE. */
HEARTH_EXTERN int hearth_db_update(hearth_db_t *db, const char *path,
                                   size_t count, const char *HEARTH_NONNULL const *HEARTH_NONNULL paths,
                                   const hearth_node_t *HEARTH_NONNULL const *HEARTH_NONNULL values,
                                   hearth_completion_cb HEARTH_NULLABLE cb, void *HEARTH_NULLABLE ctx,
                                   hearth_free_cb HEARTH_NULLABLE ctx_free,
                                   hearth_error_t *HEARTH_NULLABLE err);
/* The same with a JSON object whose keys are relative paths. */
HEARTH_EXTERN int hearth_db_update_json(hearth_db_t *db, const char *path,
                                        const char *json, size_t len,
                                        hearth_completion_cb HEARTH_NULLABLE cb, void *HEARTH_NULLABLE ctx,
                                        hearth_free_cb HEARTH_NULLABLE ctx_free,
                                        hearth_error_t *HEARTH_NULLABLE err);
HEARTH_EXTERN int hearth_db_remove(hearth_db_t *db, const char *path,
                                   hearth_completion_cb HEARTH_NULLABLE cb, void *HEARTH_NULLABLE ctx,
                                   hearth_free_cb HEARTH_NULLABLE ctx_free,
                                   hearth_error_t *HEARTH_NULLABLE err);
/* Sets value under a new push ID child of path; the ID is written to
 * key_out before the call returns. */
HEARTH_EXTERN int hearth_db_push(hearth_db_t *db, const char *path,
                                 const hearth_node_t *value,
                                 char key_out[HEARTH_NONNULL HEARTH_PUSH_ID_SIZE],
                                 hearth_completion_cb HEARTH_NULLABLE cb, void *HEARTH_NULLABLE ctx,
                                 hearth_free_cb HEARTH_NULLABLE ctx_free, hearth_error_t *HEARTH_NULLABLE err);

/* Transactions. update runs on the loop with the current value (borrowed)
 * and returns HEARTH_TX_COMMIT with a new reference in *result (may contain
 * server values), or HEARTH_TX_ABORT. The read and the write are atomic:
 * no other write comes between them. done receives the status (0,
 * HEARTH_EABORTED, a validation error of the result, or HEARTH_ECANCELED),
 * whether it committed, and the value now at path (borrowed). */
#define HEARTH_TX_COMMIT 0
#define HEARTH_TX_ABORT 1
typedef int (*hearth_transaction_fn)(const hearth_node_t *current,
                                     hearth_node_t *HEARTH_NULLABLE *HEARTH_NONNULL result, void *HEARTH_NULLABLE ctx);
typedef void (*hearth_transaction_done_cb)(int status, bool committed,
                                           const hearth_node_t *snapshot,
                                           void *HEARTH_NULLABLE ctx);
HEARTH_EXTERN int hearth_db_transaction(hearth_db_t *db, const char *path,
                                        hearth_transaction_fn update,
                                        hearth_transaction_done_cb done,
                                        void *HEARTH_NULLABLE ctx, hearth_free_cb HEARTH_NULLABLE ctx_free,
                                        hearth_error_t *HEARTH_NULLABLE err);

/* Reads the value at path (filtered by query when not NULL) into *out (a
 * new reference). From another thread it waits for the writes queued
 * before it; on the loop thread it answers at once. */
HEARTH_EXTERN int hearth_db_get(hearth_db_t *db, const char *path,
                                const hearth_query_t *HEARTH_NULLABLE query,
                                hearth_node_t *HEARTH_NULLABLE *HEARTH_NONNULL out, hearth_error_t *HEARTH_NULLABLE err);

/* The same without blocking: cb runs on the loop once every write queued
 * before has applied (for a client of a server: with the server's answer,
 * or complete cached data when the server cannot be reached), exactly
 * once, then ctx_free. value is borrowed (NULL when status is not 0). */
typedef void (*hearth_get_cb)(int status, const hearth_node_t *HEARTH_NULLABLE value,
                              void *HEARTH_NULLABLE ctx);
HEARTH_EXTERN int hearth_db_get_async(hearth_db_t *db, const char *path,
                                      const hearth_query_t *HEARTH_NULLABLE query,
                                      hearth_get_cb cb, void *HEARTH_NULLABLE ctx,
                                      hearth_free_cb HEARTH_NULLABLE ctx_free,
                                      hearth_error_t *HEARTH_NULLABLE err);

/* ---- Observers ---- */

typedef enum hearth_event_type {
    HEARTH_EVENT_CHILD_ADDED = 0,
    HEARTH_EVENT_CHILD_REMOVED = 1,
    HEARTH_EVENT_CHILD_CHANGED = 2,
    HEARTH_EVENT_CHILD_MOVED = 3,
    HEARTH_EVENT_VALUE = 4,
    /* The observer ended: the server refused or revoked its listen (status
     * HEARTH_EDENIED). Raised to every observer, whatever its mask, once;
     * the observer is then removed (its ctx_free runs). */
    HEARTH_EVENT_CANCEL = 5
} hearth_event_type;

/* Bit masks of event types for hearth_db_observe. */
#define HEARTH_MASK_CHILD_ADDED 0x01u
#define HEARTH_MASK_CHILD_REMOVED 0x02u
#define HEARTH_MASK_CHILD_CHANGED 0x04u
#define HEARTH_MASK_CHILD_MOVED 0x08u
#define HEARTH_MASK_VALUE 0x10u
#define HEARTH_MASK_ALL 0x1Fu

/* An event, borrowed for the duration of the callback. For value events
 * `node` is the (query-filtered) value at `path` and key/prev_key are NULL.
 * For child events `node` is the child (its old value for child_removed),
 * `key` its key, and `prev_key` the key of the child before it in the
 * query's order (NULL when first; always NULL for child_removed). For
 * HEARTH_EVENT_CANCEL, `node`, `key` and `prev_key` are NULL and `status`
 * says why (0 for every other type). */
typedef struct hearth_event_s {
    hearth_event_type type;
    const char *path;
    const char *HEARTH_NULLABLE key;
    const char *HEARTH_NULLABLE prev_key;
    const hearth_node_t *HEARTH_NULLABLE node;
    int status;
} hearth_event_t;

typedef void (*hearth_event_cb)(const hearth_event_t *event, void *HEARTH_NULLABLE ctx);

typedef uint64_t hearth_observer_t; /* 0 is never a valid handle */

/* Registers an observer of the events in mask at path, optionally for a
 * query (copied). The initial events (child_added for each child, then
 * value) are raised on the loop after registration, then one batch per
 * write that changes what the observer sees. The handle is written before
 * the call returns. */
HEARTH_EXTERN int hearth_db_observe(hearth_db_t *db, const char *path,
                                    const hearth_query_t *HEARTH_NULLABLE query, unsigned mask,
                                    hearth_event_cb cb, void *HEARTH_NULLABLE ctx,
                                    hearth_free_cb HEARTH_NULLABLE ctx_free,
                                    hearth_observer_t *handle,
                                    hearth_error_t *HEARTH_NULLABLE err);
/* Removes one observer; its ctx_free runs on the loop once no more events
 * can reach it. HEARTH_ENOTFOUND (from the loop thread) for an unknown
 * handle; from another thread, unknown handles are ignored. */
HEARTH_EXTERN int hearth_db_remove_observer(hearth_db_t *db,
                                            hearth_observer_t handle);
/* Removes every observer registered at exactly path (not below it). */
HEARTH_EXTERN int hearth_db_remove_observers_at(hearth_db_t *db,
                                                const char *path,
                                                hearth_error_t *HEARTH_NULLABLE err);

/* ---- A client of a server (hearth_db_config_t.url) ---- */

/* Disconnects (online = false: writes queue up locally) or reconnects.
 * HEARTH_EUNSUPPORTED for an embedded database. */
HEARTH_EXTERN int hearth_db_set_online(hearth_db_t *db, bool online);

/* The network came back or the app is in front again (what the SDK does
 * on a reachability change and on entering the foreground): the reconnect
 * backoff starts over and a client waiting to reconnect connects now,
 * rather than after a delay grown while it had no network. Nothing else
 * for a client connected, connecting, or set offline. While connected, a
 * client sends the protocol's keep-alive after 45 s without sending, as
 * the SDK does. HEARTH_EUNSUPPORTED for an embedded database. */
HEARTH_EXTERN int hearth_db_reconnect_now(hearth_db_t *db);

/* Gives up every write and transaction the server has not acknowledged:
 * their local effects are reverted (events raised) and their completions
 * get HEARTH_ECANCELED. A write already sent may still be applied by the
 * server. An embedded database has none (0). */
HEARTH_EXTERN int hearth_db_purge_outstanding_writes(hearth_db_t *db);

/* Signs this client in: token (a JWT the server's keys verify; NULL signs
 * out) is sent at once when connected, and first on every connection, so
 * listens and writes are judged as its user. A token the server refuses
 * is reported to the log and the connection goes on unauthenticated; with
 * a provider, the token is dropped and the client connects again, asking
 * the provider for a new one (after 3 refusals in a row, every 30 s).
 * When the server revokes it (it expired), it is dropped and the
 * provider, if any, is asked for a new one. HEARTH_EUNSUPPORTED for an
 * embedded database. */
HEARTH_EXTERN int hearth_db_set_auth_token(hearth_db_t *db, const char *HEARTH_NULLABLE token);

/* A token provider: cb(db, ctx) runs on the loop thread when set, on every
 * new connection and when the server revokes or refuses the token; it must answer,
 * at once or later and from any thread, with hearth_db_set_auth_token.
 * Until it answers, a new connection sends nothing else (listens, writes
 * and gets wait). NULL removes the provider. ctx_free(ctx) runs when the
 * provider is replaced or the database closes. */
typedef void (*hearth_auth_provider_cb)(hearth_db_t *db, void *HEARTH_NULLABLE ctx);
HEARTH_EXTERN int hearth_db_set_auth_provider(hearth_db_t *db,
                                              hearth_auth_provider_cb HEARTH_NULLABLE cb,
                                              void *HEARTH_NULLABLE ctx,
                                              hearth_free_cb HEARTH_NULLABLE ctx_free);

/* onDisconnect: the server performs these when this client's connection
 * ends (also when its process dies). cb runs once the server has recorded
 * the operation (0) or refused it. HEARTH_EUNSUPPORTED for an embedded
 * database. */
/* Sets value at path then (null removes). */
HEARTH_EXTERN int hearth_db_on_disconnect_set(hearth_db_t *db, const char *path,
                                              const hearth_node_t *value,
                                              hearth_completion_cb HEARTH_NULLABLE cb,
                                              void *HEARTH_NULLABLE ctx,
                                              hearth_free_cb HEARTH_NULLABLE ctx_free,
                                              hearth_error_t *HEARTH_NULLABLE err);
/* A multi-path update then, as hearth_db_update. */
HEARTH_EXTERN int hearth_db_on_disconnect_update(
    hearth_db_t *db, const char *path, size_t count, const char *HEARTH_NONNULL const *HEARTH_NONNULL paths,
    const hearth_node_t *HEARTH_NONNULL const *HEARTH_NONNULL values, hearth_completion_cb HEARTH_NULLABLE cb, void *HEARTH_NULLABLE ctx,
    hearth_free_cb HEARTH_NULLABLE ctx_free, hearth_error_t *HEARTH_NULLABLE err);
/* Drops the operations queued at or below path. */
HEARTH_EXTERN int hearth_db_on_disconnect_cancel(hearth_db_t *db,
                                                 const char *path,
                                                 hearth_completion_cb HEARTH_NULLABLE cb,
                                                 void *HEARTH_NULLABLE ctx,
                                                 hearth_free_cb HEARTH_NULLABLE ctx_free,
                                                 hearth_error_t *HEARTH_NULLABLE err);

/* Runs fn(ctx) on the database's loop after every operation queued before
 * it, then ctx_free(ctx). Useful to wait for events from another thread. */
HEARTH_EXTERN int hearth_db_call(hearth_db_t *db, void (*fn)(void *HEARTH_NULLABLE ctx),
                                 void *HEARTH_NULLABLE ctx, hearth_free_cb HEARTH_NULLABLE ctx_free);

/* ---- Rules documents ---- */

/* Checks a rules document ({"rules": {...}}, JSON with // and block
 * comments): its shape and every .read/.write/.validate expression. An
 * error names the rule's location and kind, and the column in the
 * expression (err->column) or the line and column in the JSON. len may be
 * (size_t)-1 for a NUL-terminated text. */
HEARTH_EXTERN int hearth_rules_check(const char *text, size_t len,
                                     hearth_error_t *HEARTH_NULLABLE err);

/* Runs rules cases offline (`hearth rules test`, for CI): rules_text is a
 * rules document; cases_text is {"data": initial data, "cases": [{"op":
 * "read" | "set" | "update", "path": "/x", "auth": null | {"uid": ...,
 * claims...}, "data": a set's value or an update's object of paths,
 * "expect": "allow" | "deny"}, ...]}. Each case is judged as the server
 * judges it (a write's data applied first, server values resolved) as
 * auth: {"uid", "provider", "token": its "token" object, else all its
 * members}. *report (free with hearth_free) is {"passed": n, "failed":
 * n, "cases": [{"case": 1, "op", "path", "expect", "result": "allow" |
 * "deny", "ok": bool, "rule": {"kind", "path", "expression"} or null:
 * the rule that decided}]}. A mismatch is not an error; a document or a
 * case that is not valid is (HEARTH_EINVAL / HEARTH_EJSON, err naming the
 * case and field). */
HEARTH_EXTERN int hearth_rules_test(const char *rules_text, size_t rules_len,
                                    const char *cases_text, size_t cases_len,
                                    char *HEARTH_NULLABLE *HEARTH_NONNULL report,
                                    hearth_error_t *HEARTH_NULLABLE err);

/* ---- Tokens ---- */

/* Makes a user token (a JWT) for tests and tools: claims is a JSON object
 * (NULL: {}); uid, when not NULL, becomes its "sub" (the rules'
 * auth.uid); "iat" and "exp" (now + ttl_s, ttl_s > 0) are added unless
 * claims has them. Signed with HS256 by secret, or unsigned (alg "none",
 * what a server with no keys accepts) when secret is NULL. *out is freed
 * with hearth_free. */
HEARTH_EXTERN int hearth_token_create(const char *HEARTH_NULLABLE uid, const char *HEARTH_NULLABLE claims,
                                      const char *HEARTH_NULLABLE secret, int64_t ttl_s,
                                      char *HEARTH_NULLABLE *HEARTH_NONNULL out, hearth_error_t *HEARTH_NULLABLE err);

/* The same signed with a private key as an OpenID provider (Firebase Auth)
 * signs its ID tokens, for servers configured with public keys
 * (auth_keys_file, auth_keys_url): key_pem is PEM text of an RSA key
 * (2048 bits or more: RS256) or an EC P-256 key (ES256); the header names
 * kid unless it is NULL. */
HEARTH_EXTERN int hearth_token_create_with_key(const char *HEARTH_NULLABLE uid, const char *HEARTH_NULLABLE claims,
                                               const char *key_pem, const char *HEARTH_NULLABLE kid,
                                               int64_t ttl_s, char *HEARTH_NULLABLE *HEARTH_NONNULL out,
                                               hearth_error_t *HEARTH_NULLABLE err);

/* ------------------------------------------------------------------------ */
/* The server: REST and server-sent events over HTTP/1.1                    */

typedef struct hearth_server_s hearth_server_t;

/* Access and event logs, one line each (HEARTH_LOG_ACCESS to the log
 * function: hearth_set_log). */
typedef enum hearth_log_format {
    HEARTH_LOG_OFF = 0,
    HEARTH_LOG_TEXT = 1, /* time door type namespace path status in= out= ms */
    HEARTH_LOG_JSON = 2  /* one JSON object a line */
} hearth_log_format;

typedef struct hearth_server_config_s {
    size_t size; /* sizeof(hearth_server_config_t): see the config
                    structs' rule above hearth_db_config_t */
    const char *HEARTH_NULLABLE host;              /* an IP address; NULL: "127.0.0.1" */
    int port;                      /* 0 picks a free port */
    const char *HEARTH_NULLABLE data_dir;          /* NULL: "./hearth-data" */
    const char *HEARTH_NULLABLE default_namespace; /* NULL: "default" */
    hearth_fsync_mode fsync_mode;
    /* A rules document (JSON with comments) for every namespace, replacing
     * their stored rules, and watched: when the file changes it is read
     * again, and a document that does not check is reported to the log
     * while the rules in force stay. NULL keeps each namespace's own; a
     * new namespace starts open (read and write for all) when no keys are
     * configured, and locked (nothing but the admin) when they are. The
     * rules are enforced on REST, streams and the realtime protocol. */
    const char *HEARTH_NULLABLE rules_file;
    /* The HS256 secret that signs users' tokens (JWT). */
    const char *HEARTH_NULLABLE auth_secret;
    /* A file of public keys for RS256 / ES256 tokens: a JWKS document, a
     * map of key ids to PEM certificates, or PEM public keys or
     * certificates. With neither keys nor a secret, unsigned tokens (alg
     * "none") are accepted, as the emulator does. */
    const char *HEARTH_NULLABLE auth_keys_file;
    /* When set, a token's "aud" must be this (for Firebase ID tokens: the
     * project id) and its "iss" that ("https://securetoken.google.com/"
     * followed by the project id). NULL: any. */
    const char *HEARTH_NULLABLE auth_audience;
    const char *HEARTH_NULLABLE auth_issuer;
    /* The admin's credential ("Authorization: Bearer SECRET", realtime
     * auth/gauth with SECRET): the rules do not apply to it. NULL: "owner"
     * when no keys are configured (emulator mode, as the emulator), and no
     * admin over the network when keys are; when set, "owner" is an
     * ordinary invalid token. */
    const char *HEARTH_NULLABLE admin_secret;
    /* Bounds on what a client can hold (0: the default). A request's head
     * must arrive within header_timeout_ms of its first byte (20 s), and a
     * new connection's first request within it too; a request body may
     * pause at most body_timeout_ms (60 s); both are answered 408 and the
     * connection closed. A connection idle between requests, or whose
     * client stops reading a reply, is closed after idle_timeout_ms
     * (75 s); a WebSocket silent that long is pinged (clients answer by
     * themselves) and closed when still silent after twice that.
     * Server-sent event streams have no timeout. */
    int header_timeout_ms;
    int body_timeout_ms;
    int idle_timeout_ms;
    /* Open connections at most (default and bound: the open-file limit
     * less a quarter, kept for the namespaces' files). At the bound a new
     * connection closes the longest idle one (else the slowest still
     * sending its head); when all are busy it is answered 503. */
    int max_connections;
    /* Of those, one client address may hold at most this many (default: a
     * quarter of max_connections). Past it, a new connection from that
     * address closes that address's longest idle one, else it is answered
     * 503: one peer cannot take every connection with live streams. */
    int max_connections_per_address;
    /* Bytes of request bodies and of WebSocket messages being assembled
     * held at once (default 1 GiB); one client address may hold a quarter
     * of it (with the default, one whole 256 MB body). Past either, the
     * request is answered 503 (a WebSocket closed) rather than memory
     * growing. */
    int64_t max_held_bytes;
    /* ---- since 0.3 (read only when size covers them) ---- */
    /* Cluster mode (README "Cluster"): the NATS servers of a JetStream
     * cluster, comma-separated ("nats://h1:4222,nats://h2:4222"), and this
     * node's name (letters, digits, '-', '_'). Every node serves every
     * namespace; each namespace's writes are ordered by one node and go
     * to a replicated log before they are acknowledged. NULL: one
     * server. */
    const char *HEARTH_NULLABLE cluster;
    const char *HEARTH_NULLABLE node;
    /* HTTPS and WSS on the same port: a PEM
     * certificate chain (the server's certificate first) and its PEM
     * private key. TLS 1.2 or later with forward-secret AEAD ciphers only.
     * Both or neither; a file that cannot be used fails the start with an
     * error naming it. */
    const char *HEARTH_NULLABLE tls_cert_file;
    const char *HEARTH_NULLABLE tls_key_file;
    /* Access and event logs to the log function (default off). */
    hearth_log_format log_format;
    /* GET /.metrics (Prometheus text) is the admin's on the main port;
     * with metrics_port it is also served on 127.0.0.1:metrics_port
     * without credentials (0: no such port). */
    int metrics_port;
    /* Cluster mode's trust (README "Cluster"): NATS is untrusted
     * transport and storage. The cluster secret, a file every node holds
     * the same (`openssl rand -base64 32 > FILE`, chmod 600): what a node
     * puts into NATS is sealed with it. A node refuses to join without
     * one unless cluster_insecure is set (for experiments: nothing is
     * sealed). */
    const char *HEARTH_NULLABLE cluster_secret_file;
    bool cluster_insecure;
    /* How the node proves itself to NATS, each from a file (credentials
     * never in a URL, where logs and `ps` show them): a .creds file (user
     * JWT and NKey seed) or an NKey seed file; a user file (the user on
     * its first line, the password on its second) or a token file. */
    const char *HEARTH_NULLABLE nats_creds_file;
    const char *HEARTH_NULLABLE nats_nkey_file;
    const char *HEARTH_NULLABLE nats_user_file;
    const char *HEARTH_NULLABLE nats_token_file;
    /* TLS to NATS: the CA certificates to trust (PEM; implies TLS, as a
     * tls:// URL does), and a client certificate chain with its key (both
     * or neither). A file that cannot be used fails the start, named. */
    const char *HEARTH_NULLABLE nats_ca_file;
    const char *HEARTH_NULLABLE nats_cert_file;
    const char *HEARTH_NULLABLE nats_key_file;
    /* The host (and port) the official SDKs are told to connect to next
     * time (the realtime hello's "h"; they keep it across launches): set
     * it behind a reverse proxy, whose Host header is not the public one.
     * NULL: the request's Host header. */
    const char *HEARTH_NULLABLE public_host;
    /* Public keys for RS256/ES256 tokens fetched from an https:// URL (a
     * JWKS document or a key id to PEM certificate map, as Google
     * publishes), beside auth_keys_file's: on a thread of the server's own
     * (never its loop), with the system's trust store (SSL_CERT_FILE
     * honoured), at most 1 MiB within 10 s; again before the answer's
     * Cache-Control max-age runs out (an hour without one), and at most
     * every 5 s when a token names an unknown key id. A fetch that fails
     * keeps the last good keys (said once on stderr or in the log, and
     * counted in /.metrics). The first fetch is made before
     * hearth_server_start returns; when it fails the server starts anyway,
     * refusing signed tokens until a fetch succeeds (see
     * hearth_server_auth_keys_status). auth_keys_file is also read again
     * when it changes, with the same rule. */
    const char *HEARTH_NULLABLE auth_keys_url;
    /* Firebase Auth's ID tokens of this project, in one setting: issuer
     * "https://securetoken.google.com/ID", audience ID, keys from Google's
     * securetoken certificates URL (unless auth_keys_url names another),
     * RS256 with a kid, "sub" (auth.uid) of 1 to 128 characters, "iat"
     * and "auth_time" not in the future. An auth_audience or auth_issuer
     * that differs is an error. NULL: none of that. */
    const char *HEARTH_NULLABLE firebase_project;
    /* Database triggers (README "Triggers"): registrations read at start
     * from a JSON file ({"triggers": [{"name", "ref", "event", "instance",
     * "url", ...}]}) and given as JSON text in the same form (what `hearth
     * serve --functions DIR` discovers). A bad registration fails the
     * start, named. The admin adds more with PUT
     * /.settings/triggers/NAME.json. Committed writes that match are
     * delivered at least once, in commit order per trigger, from a queue
     * kept in data_dir/.triggers (in a cluster, in JetStream: every node
     * must be given the same registrations). NULL: none. */
    const char *HEARTH_NULLABLE triggers_file;
    const char *HEARTH_NULLABLE triggers_json;
    /* Point-in-time recovery's window, in ms (`hearth serve --retain`):
     * each namespace keeps the snapshots and logs a snapshot supersedes
     * while its log was written to within it, so hearth_backup_at and
     * hearth_log_changes reach back that far. 0: removed at once. A
     * cluster keeps its log in JetStream (README "Point-in-time
     * recovery"). */
    int64_t retain_ms;
    /* `hearth serve --no-triggers`: no trigger is registered (the file,
     * the JSON, the admin's kept ones) and no write fires one; the
     * events already queued wait for a start with triggers. */
    bool no_triggers;
} hearth_server_config_t;

/* Binds and starts serving on a thread of its own. Each namespace is a
 * database in data_dir/NAME, opened on first use. If SIGPIPE still has its
 * default action, it is set to be ignored (a client closing early must not
 * end the process). */
HEARTH_EXTERN int hearth_server_start(const hearth_server_config_t *config,
                                      hearth_server_t *HEARTH_NULLABLE *HEARTH_NONNULL out,
                                      hearth_error_t *HEARTH_NULLABLE err);
/* The port the server listens on. */
HEARTH_EXTERN int hearth_server_port(const hearth_server_t *server);
/* The metrics port bound, or 0 when none was asked for. */
HEARTH_EXTERN int hearth_server_metrics_port(const hearth_server_t *server);
/* Reads the TLS certificate and key files again (after a renewal; `hearth
 * serve` calls it on SIGHUP): connections accepted from now on use them,
 * open ones keep the old. When a file cannot be used the error names it
 * and the certificate in force stays. HEARTH_EINVAL for a server started
 * without TLS. Any thread. */
HEARTH_EXTERN int hearth_server_reload_tls(hearth_server_t *server,
                                           hearth_error_t *HEARTH_NULLABLE err);
/* Reads auth_keys_file again now and fetches auth_keys_url again soon
 * (`hearth serve` calls it on SIGHUP). A file that cannot be used is an
 * error naming it, and the keys in force stay; the fetch's outcome shows
 * in hearth_server_auth_keys_status. 0 when the server has neither. Any
 * thread. */
HEARTH_EXTERN int hearth_server_reload_auth_keys(hearth_server_t *server,
                                                 hearth_error_t *HEARTH_NULLABLE err);
/* The token keys in force and where they come from, as JSON text (free
 * with hearth_free): {"firebase": bool, "file": null or {"path", "keys",
 * "error"}, "url": null or {"url", "keys", "kids", "fetched_ms_ago" (-1:
 * never), "next_fetch_ms", "error" (the last fetch's, or null), "failures"}}.
 * NULL when out of memory. Any thread. */
HEARTH_EXTERN char *HEARTH_NULLABLE hearth_server_auth_keys_status(hearth_server_t *server);
/* Stops accepting, finishes and acknowledges the writes in flight, closes
 * every namespace (its log synced), joins the thread and frees server. */
HEARTH_EXTERN int hearth_server_stop(hearth_server_t *HEARTH_NULLABLE server);

#ifdef __cplusplus
}
#endif

#if defined(__clang__)
#pragma clang assume_nonnull end
#endif

#endif /* HEARTH_H */
