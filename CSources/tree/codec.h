/*
 * codec.h - a compact binary form of nodes (internal), for caches that must
 * load fast: a client's server data on disk loads several times faster
 * than from JSON (no text to scan, children already in key order).
 *
 *   node    = [tag] body, tag bit 7 set: a priority node follows first
 *   0 null | 1 false | 2 true | 3 number: 8 bytes, IEEE 754 little endian
 *   4 string: varint length, UTF-8 bytes
 *   5 object: varint count, then count x (varint key length, key, node)
 *
 * Decoding checks everything (lengths, UTF-8, keys, depth, types) and
 * rejects what Hearth would not store: bad input is an error, never a
 * crash. Server-value placeholders are not encoded.
 *
 * Why in tree/ while only the client's disk cache uses it today
 * (client/remote_cache.c): it reads and builds nodes from the inside
 * (type, priority, children in key order, without re-sorting) as only
 * tree/ may, and it is a form of the node as JSON is (tree/json.c), not of
 * the cache; a store snapshot or a cluster's log could carry it too.
 */
#ifndef HEARTH_TREE_CODEC_H
#define HEARTH_TREE_CODEC_H

#include "tree/node.h"

/* Appends node's encoding to b (b->failed on allocation failure). */
void hearth__node_encode(const hearth_node_t *node, hearth__buf *b);
/* Decodes exactly len bytes; HEARTH_EVALUE when they are not a node. */
int hearth__node_decode(const void *data, size_t len, hearth_node_t **out);

#endif
