internal import CHearth
import Foundation
import Hearth

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

    /// Access and event logs on standard error, one line each.
    public enum LogFormat: String, Sendable, CaseIterable {
        case off, text, json
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
        /// A rules document for every namespace, read again when the file
        /// changes; nil for their own (new ones start open without keys,
        /// locked with keys).
        public var rulesFile: String?
        /// The HS256 secret that signs users' tokens.
        public var authSecret: String?
        /// A file of public keys (JWKS, key id to PEM certificate map, or
        /// PEM) for RS256 / ES256 tokens. With neither keys nor a secret,
        /// unsigned tokens are accepted, as the emulator does.
        public var authKeysFile: String?
        /// When set, a token's `aud` must be this (Firebase ID tokens: the
        /// project id), and its `iss` that.
        public var authAudience: String?
        public var authIssuer: String?
        /// The admin's credential (at least 16 characters); nil: "owner",
        /// as the emulator has it.
        public var adminSecret: String?
        /// A request's head must arrive within this many seconds of its
        /// first byte (nil: 20 s), else 408.
        public var headerTimeout: TimeInterval?
        /// The longest pause inside a request body (nil: 60 s), else 408.
        public var bodyTimeout: TimeInterval?
        /// A connection idle between requests is closed after this (nil:
        /// 75 s); a WebSocket silent this long is pinged, and closed when
        /// still silent after twice as long.
        public var idleTimeout: TimeInterval?
        /// Open connections at most (nil, and the bound: the open-file
        /// limit less a quarter). At the bound the idlest connection makes
        /// room; when every one is busy a new one is answered 503.
        public var maxConnections: Int?
        /// Of those, one client address may hold at most this many (nil:
        /// a quarter); past it, that address's idlest connection makes
        /// room, else the new one is answered 503.
        public var maxConnectionsPerAddress: Int?
        /// Bytes of request bodies and WebSocket messages held at once
        /// (nil: 1 GiB); one client address may hold a quarter of them.
        public var maxHeldBytes: Int64?
        /// Cluster mode: the NATS servers of a JetStream cluster
        /// ("nats://h1:4222,nats://h2:4222") and this node's name; nil: one
        /// server.
        public var cluster: String?
        public var node: String?
        /// HTTPS and WSS on the same port: a PEM certificate chain and its
        /// PEM private key (both or neither). TLS 1.2 or later,
        /// forward-secret AEAD ciphers only; ``HearthServer/reloadTLS()``
        /// reads them again.
        public var tlsCertFile: String?
        public var tlsKeyFile: String?
        /// Access and event logs on standard error (default off).
        public var logFormat: LogFormat = .off
        /// Also serve GET /.metrics on 127.0.0.1 at this port, without
        /// credentials (on the main port it is the admin's).
        public var metricsPort: Int?
        /// Cluster mode's trust: NATS is untrusted. The cluster secret, a
        /// file every node holds the same (`openssl rand -base64 32`):
        /// what a node puts into NATS is sealed with it. A node refuses to
        /// join without one unless ``clusterInsecure`` is set (for
        /// experiments).
        public var clusterSecretFile: String?
        public var clusterInsecure = false
        /// NATS credentials, each from a file: a .creds file or an NKey
        /// seed file; a user file (the user on its first line, the password
        /// on its second) or a token file.
        public var natsCredsFile: String?
        public var natsNKeyFile: String?
        public var natsUserFile: String?
        public var natsTokenFile: String?
        /// TLS to NATS: the CA to trust (implies TLS, as a tls:// URL
        /// does), and a client certificate with its key.
        public var natsCAFile: String?
        public var natsCertFile: String?
        public var natsKeyFile: String?
        /// The host (and `:port`) clients reach the server at, sent in the
        /// realtime hello: the official SDKs connect there next time.
        /// Set it behind a reverse proxy; nil: the request's Host header.
        public var publicHost: String?
        /// Public keys for RS256/ES256 tokens fetched from an https:// URL
        /// (JWKS, or Google's key id to certificate map), kept current:
        /// again before the answer's max-age runs out, and when a token
        /// names an unknown key id; a failed fetch keeps the last good keys.
        public var authKeysURL: String?
        /// Firebase Auth ID tokens of this project, in one setting: its
        /// issuer, audience, Google's published keys and the ID token rules.
        public var firebaseProject: String?
        /// Database triggers (README "Triggers"): a JSON file of
        /// registrations read at start, and registrations as JSON text
        /// (`{"triggers": [...]}`, what `hearth serve --functions`
        /// discovers). In a cluster every node is given the same ones.
        public var triggersFile: String?
        public var triggersJSON: String?
        /// `hearth serve --no-triggers`: none registered, none fire.
        public var noTriggers = false
        /// Point-in-time recovery's window: each namespace keeps the
        /// snapshots and logs a snapshot supersedes while its log was
        /// written to within it (`hearth serve --retain 7d`). nil: none.
        public var retain: TimeInterval?

        public init(host: String = "127.0.0.1", port: Int = 9000,
                    dataDirectory: String = "./hearth-data",
                    defaultNamespace: String = "default",
                    fsync: FsyncMode = .always, rulesFile: String? = nil,
                    authSecret: String? = nil, authKeysFile: String? = nil,
                    authAudience: String? = nil, authIssuer: String? = nil,
                    adminSecret: String? = nil, headerTimeout: TimeInterval? = nil,
                    bodyTimeout: TimeInterval? = nil, idleTimeout: TimeInterval? = nil,
                    maxConnections: Int? = nil, maxConnectionsPerAddress: Int? = nil,
                    maxHeldBytes: Int64? = nil, cluster: String? = nil,
                    node: String? = nil, tlsCertFile: String? = nil,
                    tlsKeyFile: String? = nil) {
            self.host = host
            self.port = port
            self.dataDirectory = dataDirectory
            self.defaultNamespace = defaultNamespace
            self.fsync = fsync
            self.rulesFile = rulesFile
            self.authSecret = authSecret
            self.authKeysFile = authKeysFile
            self.authAudience = authAudience
            self.authIssuer = authIssuer
            self.adminSecret = adminSecret
            self.headerTimeout = headerTimeout
            self.bodyTimeout = bodyTimeout
            self.idleTimeout = idleTimeout
            self.maxConnections = maxConnections
            self.maxConnectionsPerAddress = maxConnectionsPerAddress
            self.maxHeldBytes = maxHeldBytes
            self.cluster = cluster
            self.node = node
            self.tlsCertFile = tlsCertFile
            self.tlsKeyFile = tlsKeyFile
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
        // C copies every string before hearth_server_start returns.
        let strings = [
            configuration.host, configuration.dataDirectory, configuration.defaultNamespace,
            configuration.rulesFile, configuration.authSecret, configuration.authKeysFile,
            configuration.adminSecret, configuration.authAudience, configuration.authIssuer,
            configuration.cluster, configuration.node,
            configuration.tlsCertFile, configuration.tlsKeyFile,
            configuration.clusterSecretFile, configuration.natsCredsFile,
            configuration.natsNKeyFile, configuration.natsUserFile,
            configuration.natsTokenFile, configuration.natsCAFile,
            configuration.natsCertFile, configuration.natsKeyFile,
            configuration.publicHost, configuration.authKeysURL,
            configuration.firebaseProject, configuration.triggersFile,
            configuration.triggersJSON,
        ].map { $0.map { strdup($0) } ?? nil }
        defer { strings.forEach { free($0) } }
        var config = hearth_server_config_t()
        config.size = MemoryLayout<hearth_server_config_t>.size  // the struct of this header
        config.host = UnsafePointer(strings[0])
        config.data_dir = UnsafePointer(strings[1])
        config.default_namespace = UnsafePointer(strings[2])
        config.rules_file = UnsafePointer(strings[3])
        config.auth_secret = UnsafePointer(strings[4])
        config.auth_keys_file = UnsafePointer(strings[5])
        config.admin_secret = UnsafePointer(strings[6])
        config.auth_audience = UnsafePointer(strings[7])
        config.auth_issuer = UnsafePointer(strings[8])
        config.cluster = UnsafePointer(strings[9])
        config.node = UnsafePointer(strings[10])
        config.tls_cert_file = UnsafePointer(strings[11])
        config.tls_key_file = UnsafePointer(strings[12])
        config.cluster_secret_file = UnsafePointer(strings[13])
        config.cluster_insecure = configuration.clusterInsecure
        config.nats_creds_file = UnsafePointer(strings[14])
        config.nats_nkey_file = UnsafePointer(strings[15])
        config.nats_user_file = UnsafePointer(strings[16])
        config.nats_token_file = UnsafePointer(strings[17])
        config.nats_ca_file = UnsafePointer(strings[18])
        config.nats_cert_file = UnsafePointer(strings[19])
        config.nats_key_file = UnsafePointer(strings[20])
        config.public_host = UnsafePointer(strings[21])
        config.auth_keys_url = UnsafePointer(strings[22])
        config.firebase_project = UnsafePointer(strings[23])
        config.triggers_file = UnsafePointer(strings[24])
        config.triggers_json = UnsafePointer(strings[25])
        config.metrics_port = Int32(clamping: configuration.metricsPort ?? 0)
        config.log_format = switch configuration.logFormat {
        case .off: HEARTH_LOG_OFF
        case .text: HEARTH_LOG_TEXT
        case .json: HEARTH_LOG_JSON
        }
        config.port = Int32(configuration.port)
        config.fsync_mode = configuration.fsync.cValue
        config.header_timeout_ms = Self.milliseconds(configuration.headerTimeout)
        config.body_timeout_ms = Self.milliseconds(configuration.bodyTimeout)
        config.idle_timeout_ms = Self.milliseconds(configuration.idleTimeout)
        config.max_connections = Int32(clamping: configuration.maxConnections ?? 0)
        config.max_connections_per_address =
            Int32(clamping: configuration.maxConnectionsPerAddress ?? 0)
        config.max_held_bytes = configuration.maxHeldBytes ?? 0
        config.retain_ms = configuration.retain.map { Int64(($0 * 1000).rounded()) } ?? 0
        config.no_triggers = configuration.noTriggers
        let status = hearth_server_start(&config, &server, &err)
        guard status == 0, let server else {
            throw HearthError(status: status, details: err)
        }
        handle = server
        port = Int(hearth_server_port(server))
    }

    /// Seconds as the C configuration's milliseconds (0: the default; at
    /// least 1 ms when given).
    private static func milliseconds(_ seconds: TimeInterval?) -> Int32 {
        guard let seconds else { return 0 }
        return Int32(clamping: max(1, Int((seconds * 1000).rounded())))
    }

    /// A user token (a JWT) for this server's rules: `uid` becomes
    /// `auth.uid`, `claims` become `auth.token.NAME`; it expires after
    /// `lifetime` seconds. Signed with HS256 by `secret` (the server's
    /// ``Configuration/authSecret``), or unsigned when nil, which only a
    /// server without keys accepts.
    public static func makeToken(
        uid: String, claims: [String: any Sendable] = [:], secret: String?,
        lifetime: TimeInterval = 3600
    ) throws -> String {
        let claimsText: String? =
            claims.isEmpty
            ? nil
            : String(decoding: try JSONSerialization.data(withJSONObject: claims), as: UTF8.self)
        return try makeToken(uid: uid, claimsJSON: claimsText, secret: secret, lifetime: Int64(lifetime))
    }

    /// The same, the claims given as JSON object text (`hearth token`).
    @_spi(CLI)
    public static func makeToken(uid: String, claimsJSON claimsText: String?, secret: String?, lifetime: Int64)
        throws(HearthError) -> String
    {
        var token: UnsafeMutablePointer<CChar>?
        var err = hearth_error_t()
        let status = hearth_token_create(uid, claimsText, secret, lifetime, &token, &err)
        guard status == 0, let token else { throw HearthError(status: status, details: err) }
        defer { hearth_free(token) }
        return String(cString: token)
    }

    /// A user token signed with a private key as an OpenID provider
    /// (Firebase Auth) signs its ID tokens, for a server that verifies
    /// with public keys: `keyPEM` is an RSA key (RS256) or an EC P-256 key
    /// (ES256); the header names `kid` unless it is nil.
    @_spi(CLI)
    public static func makeToken(
        uid: String?, claimsJSON claimsText: String?, keyPEM: String, kid: String?, lifetime: Int64
    ) throws(HearthError) -> String {
        var token: UnsafeMutablePointer<CChar>?
        var err = hearth_error_t()
        let status = hearth_token_create_with_key(uid, claimsText, keyPEM, kid, lifetime, &token, &err)
        guard status == 0, let token else { throw HearthError(status: status, details: err) }
        defer { hearth_free(token) }
        return String(cString: token)
    }

    /// Reads the TLS certificate and key files again (after a renewal):
    /// new connections use them, open ones keep the old. Throws, naming
    /// the file, when one cannot be used; the certificate in force stays.
    public func reloadTLS() throws {
        lock.lock()
        defer { lock.unlock() }
        guard let handle else { return }
        var err = hearth_error_t()
        let status = hearth_server_reload_tls(handle, &err)
        guard status == 0 else { throw HearthError(status: status, details: err) }
    }

    /// Reads the token key file again and fetches the key URL again soon
    /// (`hearth serve` does it on SIGHUP). Throws, naming the file, when it
    /// cannot be used; the keys in force stay.
    public func reloadAuthKeys() throws {
        lock.lock()
        defer { lock.unlock() }
        guard let handle else { return }
        var err = hearth_error_t()
        let status = hearth_server_reload_auth_keys(handle, &err)
        guard status == 0 else { throw HearthError(status: status, details: err) }
    }

    /// The token keys in force and where they come from, as JSON text
    /// (`hearth_server_auth_keys_status`), for the start banner.
    public func authKeysStatus() -> String? {
        lock.lock()
        defer { lock.unlock() }
        guard let handle, let text = hearth_server_auth_keys_status(handle) else { return nil }
        defer { hearth_free(text) }
        return String(cString: text)
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
