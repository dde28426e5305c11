// swift-tools-version:6.2
// 6.2: the async API is `nonisolated(nonsending)` (it runs on the
// caller's actor, as the SDK's completion-handler methods did).
import PackageDescription

// The C core is compiled with -Wall -Wextra -Werror when HEARTH_STRICT=1
// (as `make` and CI do). The flags are "unsafe" to SwiftPM, which refuses
// them in packages used as versioned dependencies, so they are opt-in.
let strict = Context.environment["HEARTH_STRICT"] == "1"
let strictFlags: [CSetting] = strict ? [.unsafeFlags(["-Wall", "-Wextra", "-Werror"])] : []

let package = Package(
    name: "Hearth",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "Hearth", targets: ["Hearth"]),
        .executable(name: "hearth", targets: ["HearthCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CJansson", path: "Sources/CJansson", pkgConfig: "jansson",
            providers: [.apt(["libjansson-dev"]), .brew(["jansson"])]),
        .systemLibrary(
            name: "CLibUV", path: "Sources/CLibUV", pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"]), .brew(["libuv"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl"])]),
        .target(
            name: "CHearth",
            dependencies: ["CJansson", "CLibUV", "COpenSSL"],
            path: "CSources",
            publicHeadersPath: "include",
            cSettings: [.headerSearchPath("."), .define("_GNU_SOURCE")] + strictFlags,
            linkerSettings: [
                .linkedLibrary("z"), .linkedLibrary("http_parser"), .linkedLibrary("wslay"),
                .linkedLibrary("ssl"), // TLS for wss:// (net/tls.c)
                .linkedLibrary("sqlite3"), // the client's cache (client/disk.c)
                .linkedLibrary("nats"), // cluster mode on JetStream (cluster/)
            ]),
        .target(
            name: "Hearth",
            dependencies: ["CHearth"],
            path: "Sources/Hearth"),
        .executableTarget(
            name: "HearthCLI",
            dependencies: [
                "Hearth",  // and not CHearth: the CLI reaches the core through Hearth only
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "cli"),
        .testTarget(
            name: "HearthTests",
            dependencies: ["Hearth"],
            path: "Tests/HearthTests"),
    ]
)
