/* ws_accept.c - the Sec-WebSocket-Accept value (see ws_accept.h). */
#include "net/ws_accept.h"

#include "common/internal.h"
#include "os/os.h"

#include <string.h>

int hearth__ws_accept_key(const char *key, char out[29]) {
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    char joined[128];
    size_t klen = strlen(key);
    if (klen == 0 || klen > 64)
        return HEARTH_EINVAL;
    memcpy(joined, key, klen);
    memcpy(joined + klen, guid, sizeof guid - 1);
    unsigned char md[20];
    if (hearth__os_sha1(joined, klen + sizeof guid - 1, md))
        return HEARTH_ENOMEM;
    hearth__base64(md, sizeof md, out);
    return 0;
}
