/* rest_ticket.c - stream tickets over REST (ticket.h): the admin mints
 * one with POST /.settings/stream-ticket.json?ns=NS and a body
 * {"path": "/users/ada"}, and opens that stream with ?ticket=... instead
 * of ?auth=ADMIN, so the admin's credential never travels in a URL. */
#include "server/rest_internal.h"

#include <stdio.h>
#include <string.h>

void hearth__rest_stream_ticket(rest *r) {
    if (!hearth__rest_admin_asks(r, HTTP_POST, "a stream ticket"))
        return;
    json_t *doc = json_loadb(r->req->body, r->req->body_len, 0, NULL);
    const char *path = json_string_value(json_object_get(doc, "path"));
    char ticket[HEARTH__TICKET_TEXT];
    if (!path || hearth_validate_path(path, NULL))
        hearth__rest_reply_error(r->conn, 400,
                                 "the body must be {\"path\": \"/a/valid/path\"}, "
                                 "the stream the ticket opens");
    else if (hearth__ticket_mint(&r->srv->tickets, r->ns->name, path,
                                 (uint64_t)hearth_now_ms(), ticket))
        hearth__rest_reply_error(r->conn, 503, "no randomness for a ticket");
    else
        hearth__rest_reply_json(r->conn, 200,
                                json_pack("{s:s,s:i}", "ticket", ticket,
                                          "expires_in_ms", HEARTH__TICKET_TTL_MS));
    json_decref(doc);
}

bool hearth__rest_redeem_ticket(rest *r, const char *ticket, char *why,
                                size_t why_size) {
    memset(&r->who, 0, sizeof r->who);
    if (r->method != HTTP_GET || !hearth__rest_wants_stream(r->req)) {
        snprintf(why, why_size, "a stream ticket only opens an event stream "
                                "(GET with Accept: text/event-stream)");
        return false;
    }
    if (!hearth__ticket_redeem(&r->srv->tickets, ticket, r->ns->name, r->path,
                               (uint64_t)hearth_now_ms())) {
        snprintf(why, why_size, "the stream ticket is unknown, used, expired "
                                "or for another location");
        return false;
    }
    r->who.admin = true;
    return true;
}
