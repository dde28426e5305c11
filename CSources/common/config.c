/* config.c - reading a caller's extensible config struct. Its first field
 * is its size in bytes, which the caller sets with sizeof (as Windows'
 * cbSize, or the Linux system calls that take a struct and its size:
 * openat2, clone3), so a program built against an older or newer header
 * keeps working: fields it does not know are zero to the library, and
 * fields the library does not know must be zero. A size of 0 (not set) is
 * refused: before 0.3 it meant version 0.2's struct, and a later
 * program's fields past it (TLS, cluster) were then dropped unseen. */
#include "common/internal.h"

#include <string.h>

int hearth__config_read(const void *config, size_t base_size, void *out,
                        size_t out_size, const char *what,
                        hearth_error_t *err) {
    memset(out, 0, out_size);
    if (!config)
        return 0;
    size_t size;
    memcpy(&size, config, sizeof size);
    /* A struct whose size was not set cannot be read as meant: its fields
     * past version 0.2's (TLS, cluster...) would be dropped unseen. */
    if (size == 0)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s.size is 0: set it to sizeof(%s), so that "
                             "every field the program sets is read",
                             what, what);
    if (size < base_size)
        return hearth__error(err, HEARTH_EINVAL, NULL,
                             "%s.size is %zu, less than any version of it "
                             "(set it to sizeof the struct)",
                             what, size);
    const unsigned char *bytes = config;
    for (size_t i = out_size; i < size; i++)
        if (bytes[i])
            return hearth__error(err, HEARTH_EUNSUPPORTED, NULL,
                                 "%s sets a field at byte %zu that this "
                                 "library (version %s) does not know",
                                 what, i, hearth_version());
    memcpy(out, config, size < out_size ? size : out_size);
    return 0;
}
