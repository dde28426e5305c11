/* Generated for Hearth's Apple build: wslay's lib/config.h.in as its
 * CMake checks fill it on macOS and iOS (little-endian arm64 and x86_64). */
#ifndef CONFIG_H
#define CONFIG_H

#define HAVE_ARPA_INET_H
#define HAVE_NETINET_IN_H

#endif /* CONFIG_H */
