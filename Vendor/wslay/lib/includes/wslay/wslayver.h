/* Generated for Hearth's Apple build from wslayver.h.in (beside it), as
 * wslay's build writes it for release 1.1.1. */
#ifndef WSLAYVER_H
#define WSLAYVER_H

/* Version number of wslay release */
#define WSLAY_VERSION "1.1.1"

#endif /* WSLAYVER_H */
