// swift-tools-version:6.2
// 6.2: the async API is `nonisolated(nonsending)` (it runs on the
// caller's actor, as the SDK's completion-handler methods did).
import PackageDescription

// The C core is compiled with -Wall -Wextra -Werror when HEARTH_STRICT=1
// (as `make` and CI do). The flags are "unsafe" to SwiftPM, which refuses
// them in packages used as versioned dependencies, so they are opt-in.
let strict = Context.environment["HEARTH_STRICT"] == "1"
let strictFlags: [CSetting] = strict ? [.unsafeFlags(["-Wall", "-Wextra", "-Werror"])] : []

// Linux builds on Debian's shared libraries (pkg-config); macOS and iOS
// have none of jansson, libuv, wslay or http-parser, so there they are
// compiled from the unmodified sources in Vendor/ (Vendor/VERSIONS.md).
// SQLite and zlib come from the system everywhere.
let linux: [Platform] = [.linux]
let apple: [Platform] = [.macOS, .iOS]

// The server's C files (server, cluster, what only they use): not in the
// client library. scripts/check-darwin.sh reads this list (one source of
// truth for what "the client's C files" are).
let serverOnly = [
    "server", "cluster", "triggers", "rules/jwt.c", "rules/jwt_keys.c",
    "rules/jwt_sign_key.c", "rules/token.c", "net/ws_server.c",
    "net/https_get.c", "net/dial.c", "net/url.c",
]
// The client's TLS, one per system (net/tls.h): OpenSSL on Linux; on Apple
// platforms none of the core's own (net/apple/tls.c): the Swift module's
// URLSession transport carries wss:// there (README "Apple platforms").
let tlsFiles = ["net/tls.c", "net/apple"]

let coreSettings: [CSetting] = [.headerSearchPath("."), .define("_GNU_SOURCE")] + strictFlags

let package = Package(
    name: "Hearth",
    // Only what is built and checked (README "Apple platforms").
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        // The client: embedded database, realtime client, offline cache.
        .library(name: "Hearth", targets: ["Hearth"]),
        // The server, cluster and console (Linux; README "Apple platforms").
        .library(name: "HearthServer", targets: ["HearthServer"]),
        .executable(name: "hearth", targets: ["HearthCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        // ---- Linux: Debian's libraries ----
        .systemLibrary(
            name: "CJansson", path: "Sources/CJansson", pkgConfig: "jansson",
            providers: [.apt(["libjansson-dev"])]),
        .systemLibrary(
            name: "CLibUV", path: "Sources/CLibUV", pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),

        // ---- Apple platforms: the same libraries from source ----
        .target(
            name: "VendorJansson", path: "Vendor/jansson", sources: ["src"],
            publicHeadersPath: "include",
            cSettings: [.define("HAVE_CONFIG_H"), .headerSearchPath("generated")]),
        .target(
            name: "VendorLibUV", path: "Vendor/libuv",
            sources: [
                "src/fs-poll.c", "src/idna.c", "src/inet.c", "src/random.c",
                "src/strscpy.c", "src/strtok.c", "src/threadpool.c", "src/timer.c",
                "src/uv-common.c", "src/uv-data-getter-setters.c", "src/version.c",
                "src/unix/async.c", "src/unix/core.c", "src/unix/dl.c", "src/unix/fs.c",
                "src/unix/getaddrinfo.c", "src/unix/getnameinfo.c",
                "src/unix/loop-watcher.c", "src/unix/loop.c", "src/unix/pipe.c",
                "src/unix/poll.c", "src/unix/process.c", "src/unix/random-devurandom.c",
                "src/unix/signal.c", "src/unix/stream.c", "src/unix/tcp.c",
                "src/unix/thread.c", "src/unix/tty.c", "src/unix/udp.c",
                "src/unix/proctitle.c", "src/unix/bsd-ifaddrs.c", "src/unix/kqueue.c",
                "src/unix/random-getentropy.c", "src/unix/darwin-proctitle.c",
                "src/unix/darwin.c", "src/unix/fsevents.c",
            ],
            publicHeadersPath: "include",
            cSettings: [
                .headerSearchPath("src"),
                // libuv's CMakeLists.txt on Apple
                .define("_DARWIN_UNLIMITED_SELECT", to: "1"),
                .define("_DARWIN_USE_64_BIT_INODE", to: "1"),
                .define("_FILE_OFFSET_BITS", to: "64"), .define("_LARGEFILE_SOURCE"),
            ]),
        .target(
            name: "VendorWslay", path: "Vendor/wslay", sources: ["lib"],
            publicHeadersPath: "lib/includes",
            cSettings: [.define("HAVE_CONFIG_H"), .headerSearchPath("generated")]),
        .target(
            name: "VendorHTTPParser", path: "Vendor/http-parser", sources: ["http_parser.c"],
            publicHeadersPath: "include"),

        // ---- the C core ----
        // The client's C library: no server code, no NATS, no OpenSSL on
        // Apple platforms (SHA-1 and randomness through os/darwin.c).
        .target(
            name: "CHearth",
            dependencies: [
                .target(name: "CJansson", condition: .when(platforms: linux)),
                .target(name: "CLibUV", condition: .when(platforms: linux)),
                .target(name: "COpenSSL", condition: .when(platforms: linux)),
                .target(name: "CHearthTLS", condition: .when(platforms: linux)),
                .target(name: "VendorJansson", condition: .when(platforms: apple)),
                .target(name: "VendorLibUV", condition: .when(platforms: apple)),
                .target(name: "VendorWslay", condition: .when(platforms: apple)),
                .target(name: "VendorHTTPParser", condition: .when(platforms: apple)),
                .target(name: "CHearthAppleTLS", condition: .when(platforms: apple)),
            ],
            path: "CSources",
            exclude: ["LAYERS"] + serverOnly + tlsFiles,
            publicHeadersPath: "include",
            cSettings: coreSettings,
            linkerSettings: [
                .linkedLibrary("z"), .linkedLibrary("sqlite3"), // the client's cache
                .linkedLibrary("http_parser", .when(platforms: linux)),
                .linkedLibrary("wslay", .when(platforms: linux)),
            ]),
        .target(
            name: "CHearthTLS", dependencies: ["COpenSSL"], path: "CSources/net",
            sources: ["tls.c"], publicHeadersPath: "apple",
            cSettings: [.headerSearchPath(".."), .headerSearchPath("../include"),
                        .define("_GNU_SOURCE")] + strictFlags,
            linkerSettings: [.linkedLibrary("ssl")]),
        .target(
            name: "CHearthAppleTLS", path: "CSources/net/apple", sources: ["tls.c"],
            publicHeadersPath: ".",
            cSettings: [.headerSearchPath("../.."), .headerSearchPath("../../include")]
                + strictFlags),
        // The server's: HTTP, REST, realtime sessions, console, cluster.
        .target(
            name: "CHearthServer",
            dependencies: ["CHearth", "CJansson", "CLibUV", "COpenSSL"],
            path: "CSources",
            sources: serverOnly,
            publicHeadersPath: "server",
            cSettings: coreSettings,
            linkerSettings: [
                .linkedLibrary("ssl"),
                .linkedLibrary("nats"), // cluster mode on JetStream (cluster/)
            ]),

        // ---- Swift ----
        .target(
            name: "Hearth",
            dependencies: ["CHearth"],
            path: "Sources/Hearth"),
        .target(
            name: "HearthServer",
            dependencies: ["Hearth", "CHearth", "CHearthServer"],
            path: "Sources/HearthServer"),
        .executableTarget(
            name: "HearthCLI",
            dependencies: [
                // and not the C targets: the CLI reaches the core through these
                "Hearth", "HearthServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "cli"),
        .testTarget(
            name: "HearthTests",
            dependencies: ["Hearth", "HearthServer"],
            path: "Tests/HearthTests"),
    ]
)
