internal import CHearth
import Foundation

/// A Hearth server: the REST and streaming API of the Realtime Database on
/// HTTP/1.1, with every namespace kept durably in a data directory. It runs
/// on a thread of its own from `init` until `stop()`.
///
/// ```swift
/// let server = try HearthServer(.init(port: 9000, dataDirectory: "./hearth-data"))
/// print("listening on \(server.port)")
/// // ...
/// server.stop()
/// ```
public final class HearthServer: @unchecked Sendable {
    // @unchecked: the C server is thread-safe; `handle` is written once in
    // init and cleared under `lock` by stop().

    /// When an acknowledged write is on disk.
    public enum FsyncMode: String, Sendable, CaseIterable {
        /// Synced before the write is acknowledged.
        case always
        /// Synced at most a second after.
        case batch
        /// Left to the operating system.
        case off
    }

    public struct Configuration: Sendable {
        /// An IP address to listen on.
        public var host: String
        /// The port; 0 picks a free one.
        public var port: Int
        /// Where each namespace keeps its data (created when missing).
        public var dataDirectory: String
        /// The namespace of requests that name none.
        public var defaultNamespace: String
        public var fsync: FsyncMode
        /// A rules document for every namespace, or nil for their own.
        public var rulesFile: String?
        /// The HS256 secret that signs users' tokens; nil accepts unsigned
        /// tokens, as the emulator does.
        public var authSecret: String?

        public init(host: String = "127.0.0.1", port: Int = 9000,
                    dataDirectory: String = "./hearth-data",
                    defaultNamespace: String = "default",
                    fsync: FsyncMode = .always, rulesFile: String? = nil,
                    authSecret: String? = nil) {
            self.host = host
            self.port = port
            self.dataDirectory = dataDirectory
            self.defaultNamespace = defaultNamespace
            self.fsync = fsync
            self.rulesFile = rulesFile
            self.authSecret = authSecret
        }
    }

    public let configuration: Configuration
    /// The port the server listens on.
    public let port: Int

    private let lock = NSLock()
    private var handle: OpaquePointer?

    /// Binds, recovers the default namespace and starts serving; throws a
    /// `HearthError` naming what failed (a busy port, a damaged data
    /// directory, an invalid rules file).
    public init(_ configuration: Configuration) throws {
        self.configuration = configuration
        var server: OpaquePointer?
        var err = hearth_error_t()
        let status = configuration.host.withCString { host in
            configuration.dataDirectory.withCString { dir in
                configuration.defaultNamespace.withCString { ns in
                    withOptionalCString(configuration.rulesFile) { rules in
                        withOptionalCString(configuration.authSecret) { secret in
                            var config = hearth_server_config_t()
                            config.host = host
                            config.port = Int32(configuration.port)
                            config.data_dir = dir
                            config.default_namespace = ns
                            config.rules_file = rules
                            config.auth_secret = secret
                            config.fsync_mode = configuration.fsync.cValue
                            return hearth_server_start(&config, &server, &err)
                        }
                    }
                }
            }
        }
        guard status == 0, let server else {
            throw HearthError(status: status, details: err)
        }
        handle = server
        port = Int(hearth_server_port(server))
    }

    /// Stops accepting, finishes and acknowledges the writes in flight,
    /// syncs every namespace and returns when all is closed. Idempotent.
    public func stop() {
        lock.lock()
        let server = handle
        handle = nil
        lock.unlock()
        if let server { hearth_server_stop(server) }
    }

    deinit { stop() }
}

extension HearthServer.FsyncMode {
    var cValue: hearth_fsync_mode {
        switch self {
        case .always: HEARTH_FSYNC_ALWAYS
        case .batch: HEARTH_FSYNC_BATCH
        case .off: HEARTH_FSYNC_OFF
        }
    }
}

private func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let s else { return body(nil) }
    return s.withCString { body($0) }
}
