/*
 * v5.h - the envelope of the realtime protocol (v5), one implementation
 * for the server and the client. Each WebSocket text frame carries one
 * JSON message, except that a message longer than HEARTH__V5_PIECE bytes
 * travels as a frame holding only the count of its pieces followed by that
 * many frames; a frame "0" is the client's keep-alive. Counts of up to 6
 * digits are read; those sent have at most 4 (what the iOS SDK reads as a
 * count), longer messages going in larger pieces.
 * The side that joins pieces holds at most a bound it chose, so that a
 * peer announcing pieces without end cannot grow it.
 */
#ifndef HEARTH_NET_V5_H
#define HEARTH_NET_V5_H

#include "common/internal.h"

#include <jansson.h>

#define HEARTH__V5_PIECE 16384
#define HEARTH__V5_MAX_PIECES 9999
/* The most one message may hold, joined: the service takes writes of up to
 * 16 MB from the SDKs and answers reads of up to 256 MB; a little more for
 * the envelope around the data. */
#define HEARTH__V5_MAX_TO_SERVER (16u * 1024 * 1024 + 1024)
#define HEARTH__V5_MAX_TO_CLIENT (256u * 1024 * 1024 + 64 * 1024)

/* Sends one frame; non-zero stops the sending and is returned. */
typedef int (*hearth__v5_send_cb)(void *ctx, const char *frame, size_t len);

/* Sends text[0..len) as one frame, or as a count frame and at most
 * HEARTH__V5_MAX_PIECES pieces of HEARTH__V5_PIECE bytes (more when that
 * many would not hold it), cut between characters (each frame must be
 * UTF-8 of its own). HEARTH_ETOOBIG, sending nothing, when len passes max
 * (what the peer joins). */
int hearth__v5_send(const char *text, size_t len, size_t max,
                    hearth__v5_send_cb send, void *ctx);
/* The same with pieces of `piece` bytes where HEARTH__V5_PIECE would be
 * (a test hook: long messages without megabytes of text). */
int hearth__v5_send_pieces(const char *text, size_t len, size_t max,
                           size_t piece, hearth__v5_send_cb send, void *ctx);

/* The pieces of the message arriving on one connection. */
typedef struct hearth__v5_joiner {
    size_t max;  /* the most the joined message may hold */
    long left;   /* pieces still to come; 0: between messages */
    hearth__buf joined;
} hearth__v5_joiner;

void hearth__v5_joiner_init(hearth__v5_joiner *j, size_t max);
/* Forgets a message half joined and frees its memory (a new connection). */
void hearth__v5_joiner_reset(hearth__v5_joiner *j);

/* What hearth__v5_join made of a frame (errors are negative). */
enum { HEARTH__V5_MORE = 0, HEARTH__V5_MESSAGE = 1 };

/* Takes one frame. HEARTH__V5_MESSAGE: a whole message is in *msg, *msg_len:
 * the frame itself or the joined pieces (valid until the next call).
 * HEARTH__V5_MORE: nothing to handle yet (a count, the keep-alive, or a
 * piece of a message still incomplete). HEARTH_ETOOBIG when the pieces
 * pass the bound, HEARTH_ENOMEM when they cannot be held: the message is
 * lost and the caller drops the connection (the joiner is reset). */
int hearth__v5_join(hearth__v5_joiner *j, const char *frame, size_t len,
                    const char **msg, size_t *msg_len);

/* A message's JSON object (a new reference), or NULL when it is not one:
 * neither side answers such a message. */
json_t *hearth__v5_parse(const char *msg, size_t len);
/* msg with its integer literals past int64 written as reals, which
 * hearth__v5_parse falls back on (exposed for its tests). */
char *hearth__json_widen_integers(const char *text, size_t len,
                                  size_t *out_len);

#endif
