internal import CHearth
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A Hearth database: the entry point, as `Database` in FirebaseDatabase.
///
/// `Database.database()` returns the shared instance (an embedded,
/// in-memory database); `Database.database(url:)` returns one instance per
/// URL: `"memory:"`, `"memory:NAME"` and `"file:///DIR"` are embedded
/// databases, while `"http(s)://..."` and `"ws(s)://..."` URLs make this a
/// client of a server speaking the realtime protocol (a `hearth serve`, the
/// emulator, or the service), with local events first, writes queued while
/// offline, and `.info/connected`. ``useEmulator(withHost:port:)`` points
/// any instance at a server instead, before its first use.
///
/// Callbacks (observers and completion blocks) run on ``callbackQueue``,
/// the main queue by default as in the SDK, one at a time: a command-line
/// program must run the main queue (`dispatchMain()`) or set a queue of its
/// own.
public final class Database: @unchecked Sendable {
    // @unchecked Sendable: the C database may be called from any thread
    // (hearth.h: calls are thread-safe and callbacks run on its loop
    // thread); every other piece of mutable state is behind a lock, and the
    // rest is immutable.

    /// The C database and the thread running its loop, opened on first use
    /// (so that useEmulator can still choose where it lives).
    struct Opened {
        let handle: OpaquePointer
        /// The thread running its loop, once the loop has said (see
        /// ``noteLoopThread(of:_:)``).
        let loopThread: Locked<pthread_t?>
        /// The serial queue every user block runs on (see ``callbacks``).
        let callbacks: DispatchQueue
        /// A client's: reconnects when the network or the app returns, and
        /// holds a background task while writes drain (AppLifecycle.swift).
        let supervisor: ConnectionSupervisor?
    }
    /// What is chosen before the database is first used; frozen when it
    /// opens.
    private struct Settings {
        var emulator: (host: String, port: Int)?
        var persistenceEnabled = false
        var persistenceCacheSize: UInt = 10 * 1024 * 1024
        /// Embedded only: the rules document and the `auth` (JSON) it judges by.
        var rules: (document: String, auth: String?)?
        var callbackQueue: DispatchQueue = .main
        /// A client's lifecycle sources and background tasks; nil: the
        /// system's (``AppLifecycle/platform()``).
        var lifecycle: (sources: [LifecycleSource], backgroundTasks: BackgroundTasks?)?
    }
    /// The credential to hand the C client; it may change at any time.
    private enum Credential {
        case none
        case token(String?)
        case provider(@Sendable () async -> String?)
    }
    /// The settings, the opened database and the credential, behind one
    /// lock, so that checking "not open yet" and setting are one step.
    private struct Setup {
        var settings = Settings()
        var opened: Opened?
        /// While one caller opens the database (without the lock): the
        /// others wait for this group.
        var opening: DispatchGroup?
        var credential = Credential.none
        /// Counts credential changes: a provider's answer counts only if
        /// no change came after it was asked.
        var credentialGeneration: UInt64 = 0
        /// Tests: told of each provider answer, and whether it was used.
        var onProviderAnswer: (@Sendable (_ used: Bool) -> Void)?
        /// Tests: runs on the loop thread as it answers the opening call.
        var whileOpening: (@Sendable () -> Void)?
    }
    private let setup = Locked(Setup())

    /// The C database (`hearth_db_t *`), valid until deinit.
    var handle: OpaquePointer { open().handle }
    /// The URL this instance was created for.
    let url: String
    /// The name of the `FirebaseApp` this instance belongs to.
    let appName: String

    private struct State {
        var pushIDs = hearth_push_id_state_t()
        var observers: [ObjectIdentifier: ObserverRegistration] = [:]
        /// keepSynced(true) listeners, by query description.
        var synced: [String: DatabaseHandle] = [:]
    }
    private let state = Locked(State())

    /// The instances, by app name and URL.
    private static let instances = Locked<[String: Database]>([:])
    /// The URL of a database whose app names none: HEARTH_DATABASE_URL, else
    /// a local `hearth serve` (or emulator) on its default port.
    static var defaultURL: String {
        ProcessInfo.processInfo.environment["HEARTH_DATABASE_URL"] ?? "http://127.0.0.1:9000"
    }
    private static let networkSchemes = ["http://", "https://", "ws://", "wss://"]

    // MARK: Instances

    /// The shared default database: the default app's (`FirebaseApp`)
    /// when one is configured with a `databaseURL`, else the one for
    /// HEARTH_DATABASE_URL, else for `http://127.0.0.1:9000` (a local
    /// `hearth serve`).
    public static func database() -> Database {
        database(url: FirebaseApp.app()?.databaseURL ?? defaultURL)
    }

    /// The database for `url`, the same instance for every call with that
    /// URL: `"memory:"` is the shared default database, `"memory:NAME"` an
    /// in-memory database of its own, `"file:///DIR"` a durable embedded
    /// database kept in DIR (every write logged and synced before its
    /// completion runs; one process per directory), and a network URL
    /// (`"http://127.0.0.1:9000?ns=demo"`, `"https://NAME.firebaseio.com"`)
    /// a client of that server. Any other URL stops with a precondition
    /// failure, as the SDK raises for an invalid URL.
    public static func database(url: String) -> Database {
        instance(url: url, appName: FirebaseApp.defaultName)
    }

    /// The one instance for `url` within the app named `appName`.
    static func instance(url: String, appName: String) -> Database {
        guard
            url.hasPrefix("memory:") || url.hasPrefix("file://")
                || networkSchemes.contains(where: { url.hasPrefix($0) })
        else {
            preconditionFailure(
                "Hearth: unsupported database URL \"\(url)\": use \"memory:\", \"memory:NAME\", "
                    + "\"file:///DIR\" or a server's http(s):// or ws(s):// URL")
        }
        return instances.withLock { instances in
            let key = appName + "\n" + url
            if let database = instances[key] { return database }
            let database = Database(url: url, appName: appName)
            instances[key] = database
            return database
        }
    }

    init(url: String, appName: String = FirebaseApp.defaultName) {
        self.url = url
        self.appName = appName
    }

    /// Points this instance at a server (a `hearth serve` or the emulator)
    /// at host:port. Like the SDK, it must come before the first reference
    /// is used; afterwards it is a precondition failure.
    public func useEmulator(withHost host: String, port: Int) {
        configure("useEmulator(withHost:port:) must be called") { $0.emulator = (host, port) }
    }

    /// Changes a setting: `what` must come before the database is used
    /// (the check and the change are one step under the lock).
    private func configure(_ what: String, _ change: (inout Settings) -> Void) {
        setup.withLock { setup in
            precondition(
                setup.opened == nil && setup.opening == nil,
                "Hearth: \(what) before the database is used")
            change(&setup.settings)
        }
    }

    /// The value of a setting.
    private func setting<Value>(_ value: (Settings) -> Value) -> Value {
        setup.withLock { value($0.settings) }
    }

    /// Keeps this client's pending writes and the server data of the
    /// locations it listens to on disk (SQLite; on Apple platforms under
    /// Application Support, in a folder of the app's own, excluded from
    /// backups; elsewhere in the user's cache directory; `hearth/` inside
    /// it), so that an app started offline shows its data and keeps its
    /// writes; they are sent when the connection returns. The file is
    /// opened on the database's own thread, never the caller's. A setting,
    /// as in the SDK: set it before the database is first used. (Embedded
    /// databases keep their data anyway.)
    public var isPersistenceEnabled: Bool {
        get { setting { $0.persistenceEnabled } }
        set { configure("isPersistenceEnabled must be set") { $0.persistenceEnabled = newValue } }
    }

    /// The bound of the cache on disk in bytes, 1 MB to 100 MB (default
    /// 10 MB): server data no listener holds is pruned past it, least
    /// recently used first; pending writes have a bound of the same size.
    /// Set it before the database is first used.
    public var persistenceCacheSizeBytes: UInt {
        get { setting { $0.persistenceCacheSize } }
        set {
            precondition(
                (1024 * 1024...100 * 1024 * 1024).contains(newValue),
                "Hearth: persistenceCacheSizeBytes must be between 1 MB and 100 MB")
            configure("persistenceCacheSizeBytes must be set") { $0.persistenceCacheSize = newValue }
        }
    }

    /// Judges every call on this embedded instance (`"memory:..."` or
    /// `"file://..."`) by a rules document, the JSON with comments that
    /// `hearth serve --rules` takes, as the user `auth` describes
    /// (`["uid": "ada"]`; nil: unauthenticated), as the Admin SDK's
    /// `databaseAuthVariableOverride` does. A write the rules refuse fails
    /// with the SDK's permission error (`NSError`, domain `com.firebase`,
    /// code 1) and changes nothing (no event fires), a refused read fails
    /// the same way, and an observer the rules do not let read gets it in
    /// its cancel block. A server's instances
    /// follow the server's rules instead. Set it before the database is
    /// first used; throws naming what is wrong in the document.
    public func useRules(_ document: String, auth: [String: Any]? = nil) throws(HearthError) {
        precondition(
            !Self.networkSchemes.contains(where: { url.hasPrefix($0) }),
            "Hearth: useRules(_:auth:) is for embedded databases; a server applies its own rules")
        try RulesDocument.check(document.utf8)
        var authJSON: String?
        if let auth {
            guard JSONSerialization.isValidJSONObject(auth),
                let data = try? JSONSerialization.data(withJSONObject: auth)
            else {
                throw HearthError(
                    code: .invalidValue, message: "auth must be a JSON object of plain values")
            }
            authJSON = String(decoding: data, as: UTF8.self)
        }
        let rules = (document, authJSON)
        configure("useRules(_:auth:) must be called") { settings in
            precondition(
                settings.emulator == nil,
                "Hearth: useRules(_:auth:) is for embedded databases; a server applies its own rules")
            settings.rules = rules
        }
    }

    /// Where persistence keeps its files.
    static var cacheDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["HEARTH_CACHE_DIR"] { return dir }
        return Self.cacheDirectory(onApple: URLSessionTransport.isDefault)
    }

    /// Where persistence goes by default. On Apple platforms: Application
    /// Support, since iOS purges Caches when space runs low and pending
    /// offline writes would go with it; in a folder of the app's own
    /// (bundle identifier: macOS shares the user's Application Support
    /// between apps), excluded from backups (``excludeFromBackup(_:)``).
    /// Elsewhere: the user's cache directory.
    static func cacheDirectory(onApple: Bool) -> String {
        let fm = FileManager.default
        guard onApple,
            let support = fm.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
        else {
            let base = fm.urls(for: .cachesDirectory, in: .userDomainMask).first?.path
            return (base ?? NSTemporaryDirectory()) + "/hearth"
        }
        let app = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        return support.appendingPathComponent(app).appendingPathComponent("hearth").path
    }

    /// Marks the persistence directory as not for backups (iCloud, the
    /// Mac's): it is a cache of the server's data plus writes the server
    /// will have. Best effort.
    static func excludeFromBackup(_ path: String) {
        var url = URL(fileURLWithPath: path, isDirectory: true)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try? url.setResourceValues(values)
    }

    /// The namespace a server keeps this instance's data in.
    private var namespace: String {
        if let components = URLComponents(string: url),
            let ns = components.queryItems?.first(where: { $0.name == "ns" })?.value
        {
            return ns
        }
        if Self.networkSchemes.contains(where: { url.hasPrefix($0) }),
            let host = URLComponents(string: url)?.host, let label = host.split(separator: ".").first
        {
            return String(label)
        }
        if url.hasPrefix("memory:"), url.count > "memory:".count {
            return String(url.dropFirst("memory:".count))
        }
        return "default"
    }

    /// Opens the C database on first use. Traps only when the C core cannot
    /// start a loop, allocate the database or use the URL.
    private func open() -> Opened {
        do {
            return try opening()
        } catch {
            preconditionFailure("Hearth: cannot open a database: \(error.message)")
        }
    }

    /// Opens the C database unless it is open, freezing the settings;
    /// throws what the C core said when it cannot. The lock is not held
    /// while the loop thread is asked for its identity: a concurrent
    /// caller waits for the opener's group instead, holding nothing.
    func opening() throws(HearthError) -> Opened {
        enum Step {
            case done(Opened)
            case wait(DispatchGroup)
            case open(Settings, DispatchGroup, (@Sendable () -> Void)?)
        }
        while true {
            let step = setup.withLock { setup -> Step in
                if let opened = setup.opened { return .done(opened) }
                if let group = setup.opening { return .wait(group) }
                let group = DispatchGroup()
                group.enter()
                setup.opening = group  // the settings are frozen from here
                return .open(setup.settings, group, setup.whileOpening)
            }
            switch step {
            case .done(let opened):
                return opened
            case .wait(let group):
                group.wait()  // then look again: the opener may have failed
            case .open(let settings, let group, let whileOpening):
                defer { group.leave() }
                let made: Opened
                do throws(HearthError) {
                    let db = try openC(settings)
                    let client = serverURL(settings) != nil
                    let lifecycle = settings.lifecycle ?? AppLifecycle.platform()
                    made = Opened(
                        handle: db, loopThread: Self.noteLoopThread(of: db, whileOpening),
                        callbacks: Self.serialQueue(targeting: settings.callbackQueue),
                        supervisor: client
                            ? ConnectionSupervisor(
                                sources: lifecycle.sources, backgroundTasks: lifecycle.backgroundTasks,
                                reconnect: { [weak self] in self?.reconnectNow() })
                            : nil)
                } catch {
                    setup.withLock { $0.opening = nil }
                    throw error
                }
                setup.withLock { setup in
                    setup.opening = nil
                    setup.opened = made
                    // Before any other call can reach the new database: the
                    // token goes out first on the first connection (the
                    // credential in force now, set while opening or before).
                    apply(setup.credential, to: made.handle, generation: setup.credentialGeneration)
                }
                made.supervisor?.start()
                if made.supervisor != nil, settings.persistenceEnabled, URLSessionTransport.isDefault {
                    // On the loop too, after C made the folder there.
                    let cacheDir = Self.cacheDirectory
                    _ = LoopCall.submit(to: made.handle, { Self.excludeFromBackup(cacheDir) }, canceled: {})
                }
                return made
            }
        }
    }

    /// The server this instance is a client of, or nil (embedded).
    private func serverURL(_ settings: Settings) -> String? {
        settings.emulator.map { "http://\($0.host):\($0.port)?ns=\(namespace)" }
            ?? (Self.networkSchemes.contains(where: { url.hasPrefix($0) }) ? url : nil)
    }

    /// Opens the C database `settings` describe. Nothing here waits for
    /// the disk: the C core opens a client's cache on its loop thread, and
    /// the embedded stores (`file://`) are the exception README "Apple
    /// platforms" names.
    private func openC(_ settings: Settings) throws(HearthError) -> OpaquePointer {
        var db: OpaquePointer?
        var details = hearth_error_t()
        var config = hearth_db_config_t()
        config.size = MemoryLayout<hearth_db_config_t>.size  // the struct of this header
        let server = serverURL(settings)
        let directory = url.hasPrefix("file://") && server == nil ? URL(string: url)?.path : nil
        let status: Int32
        if let server {
            // C makes the folder (with its parents) on the loop thread.
            let cacheDir = settings.persistenceEnabled ? Self.cacheDirectory : nil
            config.cache_size = Int(settings.persistenceCacheSize)
            // On Apple platforms the client reaches servers through
            // URLSession (the system's TLS, trust and proxies).
            var transport = URLSessionTransport.shared.cTransport
            status = server.withCString { text in
                config.url = text
                return withOptionalCString(cacheDir) { dir in
                    config.cache_dir = dir
                    return withUnsafePointer(to: &transport) { carrier in
                        if URLSessionTransport.isDefault { config.transport = carrier }
                        return hearth_db_open(&config, &db, &details)  // copies it
                    }
                }
            }
        } else {
            let rules = settings.rules
            status = withOptionalCString(directory) { dir in
                withOptionalCString(rules?.document) { document in
                    withOptionalCString(rules?.auth) { auth in
                        config.data_dir = dir
                        config.rules = document
                        config.auth_variable = auth
                        return hearth_db_open(&config, &db, &details)
                    }
                }
            }
        }
        guard status == 0, let db else { throw HearthError(status: status, details: details) }
        return db
    }

    /// The queue user blocks run on: the callback queue when it is the
    /// main queue, else a serial queue of this database targeting it, so
    /// that blocks run one at a time and in order even when the app set a
    /// concurrent queue (the SDK's blocks are not Sendable: see
    /// ``QueueBound``).
    private static func serialQueue(targeting queue: DispatchQueue) -> DispatchQueue {
        queue === DispatchQueue.main
            ? queue : DispatchQueue(label: "hearth.callbacks", target: queue)
    }

    /// Whether the caller is the database's loop thread (false before it
    /// opens).
    var isLoopThread: Bool {
        guard let loop = setup.withLock({ $0.opened?.loopThread })?.withLock({ $0 }) else {
            return false
        }
        return pthread_equal(pthread_self(), loop) != 0
    }

    /// The serial queue every user block runs on (opening the database).
    var callbacks: DispatchQueue { open().callbacks }

    /// `block` bound to ``callbacks``.
    func bound<Block>(_ block: Block) -> QueueBound<Block> {
        QueueBound(block, on: callbacks)
    }

    /// Asks the loop for its thread, without waiting for the answer: the
    /// loop may be opening a client's cache first (C queues that ahead of
    /// everything), and the caller is often the main thread. No code of
    /// this module runs on the loop before the answer (the call is the
    /// first it queues), so until then the caller is not the loop thread.
    private static func noteLoopThread(
        of db: OpaquePointer, _ whileOpening: (@Sendable () -> Void)?
    ) -> Locked<pthread_t?> {
        let thread = Locked<pthread_t?>(nil)
        let status = LoopCall.submit(
            to: db,
            {
                whileOpening?()
                thread.withLock { $0 = pthread_self() }
            }, canceled: {})
        if status != 0 {
            preconditionFailure("Hearth: the database loop did not start")
        }
        return thread
    }

    deinit {
        // Closing joins the loop thread, which therefore cannot close its
        // own database: if the last reference went away in a callback
        // context there, close from a thread of its own.
        guard let opened = setup.withLock({ $0.opened }) else { return }
        opened.supervisor?.stop()
        let db = UncheckedSendable(opened.handle)  // @unchecked: used once, by one thread
        if let loop = opened.loopThread.withLock({ $0 }), pthread_equal(pthread_self(), loop) != 0 {
            Thread.detachNewThread { _ = hearth_db_close(db.value) }
        } else {
            _ = hearth_db_close(db.value)
        }
    }

    /// A reference to the location a URL of this database names
    /// ("https://demo.firebaseio.com/users/ada"); a URL of another database
    /// is a precondition failure, as the SDK raises.
    public func reference(fromURL databaseURL: String) -> DatabaseReference {
        guard let given = URLComponents(string: databaseURL),
            let mine = URLComponents(string: url),
            given.scheme == mine.scheme, given.host == mine.host, given.port == mine.port
        else {
            preconditionFailure(
                "(reference(fromURL:)) \"\(databaseURL)\" is not a location of \(url)")
        }
        return reference(withPath: given.path)
    }

    /// The URL of a location: this database's URL (without its query) and
    /// the path.
    func locationURL(_ path: String) -> String {
        var base = url
        if let query = base.firstIndex(of: "?") { base = String(base[..<query]) }
        while base.hasSuffix("/") { base.removeLast() }
        return path.isEmpty ? base : base + "/" + path
    }

    /// Every instance created so far (for the class-wide goOffline).
    static var allInstances: [Database] {
        instances.withLock { Array($0.values) }
    }

    /// keepSynced: an idle value listener keeps the server sending the
    /// query's data (so it is cached, and events come at once).
    func keepSynced(_ query: DatabaseQuery, _ on: Bool) {
        let key = query.description
        if on {
            let present = state.withLock { $0.synced[key] != nil }
            if present { return }
            let handle = query.observe(.value) { _ in }
            let kept = state.withLock { state -> Bool in
                if state.synced[key] != nil { return false }
                state.synced[key] = handle
                return true
            }
            if !kept { query.removeObserver(withHandle: handle) }
        } else if let handle = state.withLock({ $0.synced.removeValue(forKey: key) }) {
            query.removeObserver(withHandle: handle)
        }
    }

    /// Logs the messages this process's clients exchange with servers (for
    /// debugging), as the SDK's logging does: to `HearthLog`'s handler, or
    /// standard error after `HearthLog.toStandardError()`.
    public static func setLoggingEnabled(_ enabled: Bool) {
        hearth_set_logging(enabled)
    }

    // MARK: Authentication

    /// Signs this client in with a token (a JWT the server verifies; `nil`
    /// signs out). It is sent at once when connected and first on every
    /// reconnection, so listens and writes are judged by the server's rules
    /// as its user. The FirebaseDatabase SDK takes its token from
    /// FirebaseAuth; Hearth takes it here. No effect on an embedded
    /// database.
    public func setAuthToken(_ token: String?) {
        setCredential(.token(token))
    }

    /// Asks `provider` for a token on every connection (and when the server
    /// revokes an expired one, or refuses one: then the client connects
    /// again and asks again, as the SDKs do, every 30 s after 3 refusals in
    /// a row); nothing else is sent on a new connection until it answers. Pass `nil` to stop asking. No effect on an
    /// embedded database.
    public func setAuthTokenProvider(_ provider: (@Sendable () async -> String?)?) {
        setCredential(provider.map { .provider($0) } ?? .none)
    }

    /// Records a new credential and hands it to C when open. A provider's
    /// answer still on its way no longer counts (see ``provided(_:asked:)``).
    /// Under the lock, so that two changes reach C in the order they count.
    private func setCredential(_ credential: Credential) {
        setup.withLock { setup in
            setup.credential = credential
            setup.credentialGeneration += 1
            if let db = setup.opened?.handle {
                apply(credential, to: db, generation: setup.credentialGeneration)
            }
        }
    }

    /// The C side of the credential settings.
    private func apply(_ setting: Credential, to db: OpaquePointer, generation: UInt64) {
        switch setting {
        case .none:
            _ = hearth_db_set_auth_provider(db, nil, nil, nil)
        case .token(let token):
            _ = hearth_db_set_auth_provider(db, nil, nil, nil)
            _ = hearth_db_set_auth_token(db, token)
        case .provider(let provider):
            let box = TokenProviderBox(database: self, provider: provider, generation: generation)
            _ = hearth_db_set_auth_provider(
                db, TokenProviderBox.ask, Unmanaged.passRetained(box).toOpaque(),
                TokenProviderBox.release)
        }
    }

    /// Hands a provider's answer to the C client, unless the credential
    /// changed since the provider was set (`setAuthToken(nil)` signs out
    /// for good, a new provider answers for itself).
    fileprivate func provided(_ token: String?, asked generation: UInt64) {
        let (used, observer) = setup.withLock { setup in
            guard setup.credentialGeneration == generation, let db = setup.opened?.handle else {
                return (false, setup.onProviderAnswer)
            }
            _ = hearth_db_set_auth_token(db, token)
            return (true, setup.onProviderAnswer)
        }
        observer?(used)
    }

    /// Tests: `body` runs on the loop thread while the database opens.
    func whileOpening(_ body: @escaping @Sendable () -> Void) {
        setup.withLock { $0.whileOpening = body }
    }

    /// Tests: `observer` is told of each answer of a token provider, and
    /// whether it was used.
    func observeProviderAnswers(_ observer: @escaping @Sendable (_ used: Bool) -> Void) {
        setup.withLock { $0.onProviderAnswer = observer }
    }

    // MARK: Connection

    /// Gives up every write (and transaction) the server has not yet
    /// acknowledged: their local effects are reverted and their completions
    /// receive a "write canceled" error.
    public func purgeOutstandingWrites() {
        _ = hearth_db_purge_outstanding_writes(handle)
    }

    /// Disconnects from the server: writes keep raising events locally and
    /// queue up until ``goOnline()``. No effect on an embedded database.
    public func goOffline() {
        _ = hearth_db_set_online(handle, false)
    }

    /// Reconnects after ``goOffline()``.
    public func goOnline() {
        _ = hearth_db_set_online(handle, true)
    }

    /// The network or the app is back: the reconnect backoff starts over
    /// and a client waiting to reconnect connects now (what the supervisor
    /// calls; nothing before the database opens). The C status.
    @discardableResult
    func reconnectNow() -> Int32 {
        guard let db = setup.withLock({ $0.opened?.handle }) else { return 0 }
        return hearth_db_reconnect_now(db)
    }

    /// Tests: lifecycle sources and background tasks of the test's own
    /// instead of the system's; before the database is used.
    func useLifecycle(sources: [LifecycleSource], backgroundTasks: BackgroundTasks?) {
        configure("useLifecycle(sources:backgroundTasks:) must be called") {
            $0.lifecycle = (sources, backgroundTasks)
        }
    }

    /// Counts a write or transaction until its completion runs, while a
    /// background task may be held for it: the supervisor to tell
    /// `writeSettled()` then, or nil when nothing counts (no background
    /// tasks on this system, or an embedded database).
    func countWrite() -> ConnectionSupervisor? {
        guard let supervisor = open().supervisor, supervisor.tracksWrites else { return nil }
        supervisor.writeStarted()
        return supervisor
    }

    // MARK: Public API

    /// The version of Hearth (the C core's `hearth_version()`).
    public static func sdkVersion() -> String {
        String(cString: hearth_version())
    }

    /// The queue on which observers and completion blocks are called; the
    /// main queue by default. They run one at a time, in order, even on a
    /// concurrent queue (through a serial queue of this database that
    /// targets it).
    ///
    /// Like the SDK, it is a setting: changing it after the database was
    /// first used (a read, a write or an observer) is a precondition
    /// failure.
    public var callbackQueue: DispatchQueue {
        get { setting { $0.callbackQueue } }
        set { configure("callbackQueue must be set") { $0.callbackQueue = newValue } }
    }

    /// A reference to the root of the database.
    public func reference() -> DatabaseReference {
        DatabaseReference(database: self, normalizedPath: "")
    }

    /// A reference to `path` ("users/ada"); an invalid path is a
    /// precondition failure, as the SDK raises.
    public func reference(withPath path: String) -> DatabaseReference {
        do {
            try DatabasePath.validate(path)
        } catch {
            preconditionFailure("(reference(withPath:)) \(error.message)")
        }
        return DatabaseReference(database: self, normalizedPath: DatabasePath.normalize(path))
    }

    // MARK: Writes

    /// A write ready to hand to C: calls a `hearth_db_*` write function
    /// with the completion triple and the error struct, returning its status.
    typealias WriteStart = (
        hearth_completion_cb?, UnsafeMutableRawPointer?, hearth_free_cb?,
        UnsafeMutablePointer<hearth_error_t>
    ) -> Int32

    /// Prepares a write (converting values, which may fail) and submits
    /// it. `completion` runs exactly once, on an unspecified thread (the
    /// calling one when preparing or submitting fails); without one, a
    /// failure is logged.
    func write(
        _ description: @autoclosure () -> String,
        prepare: () throws -> WriteStart,
        completion: (@Sendable (HearthError?) -> Void)?
    ) {
        let start: WriteStart
        do {
            start = try prepare()
        } catch {
            report(HearthError(error), of: description(), to: completion)
            return
        }
        var completion = completion
        if let counted = countWrite() {
            // Settled when C completes it. Without the caller's
            // completion a failure is logged, as the SDK logs a failed
            // write then.
            let given = completion
            let described = given == nil ? description() : ""
            completion = { error in
                if let given {
                    given(error)
                } else if let error {
                    Self.log("\(described) failed: \(error.message)")
                }
                counted.writeSettled()
            }
        }
        var details = hearth_error_t()
        guard let completion else {
            let status = start(nil, nil, nil, &details)
            if status != 0 {
                report(HearthError(status: status, details: details), of: description(), to: nil)
            }
            return
        }
        let context = Unmanaged.passRetained(WriteCompletion(completion)).toOpaque()
        let status = start(WriteCompletion.callback, context, WriteCompletion.release, &details)
        if status != 0 {
            Unmanaged<WriteCompletion>.fromOpaque(context).release()
            completion(HearthError(status: status, details: details))
        }
    }

    private func report(
        _ error: HearthError, of description: String, to completion: (@Sendable (HearthError?) -> Void)?
    ) {
        if let completion {
            completion(error)
        } else {
            Self.log("\(description) failed: \(error.message)")
        }
    }

    /// Logs a problem that has no caller to report to (a write without a
    /// completion block), as the SDK logs: to `HearthLog`'s handler when
    /// the app set one, else to standard error (the console).
    static func log(_ message: String) {
        if HearthLog.deliver(.warning, message) { return }
        // The throwing form: a closed stderr must never stop the app
        // (the other one traps on EPIPE when SIGPIPE is ignored).
        try? FileHandle.standardError.write(contentsOf: Data("[Hearth] \(message)\n".utf8))
    }

    /// The next push ID (strictly increasing for this database).
    func nextPushID() -> String {
        var id = [CChar](repeating: 0, count: Int(HEARTH_PUSH_ID_SIZE))
        let now = hearth_now_ms()
        state.withLock { state in
            _ = id.withUnsafeMutableBufferPointer { hearth_push_id(&state.pushIDs, now, $0.baseAddress!) }
        }
        return id.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    // MARK: Reads

    /// Reads the value at `path` for `query` after every write queued
    /// before (for a client of a server: the server's answer, or complete
    /// cached data when it cannot be reached); `completion` runs once, on
    /// the loop thread (or at once on failure).
    func read(
        path: String, query: QueryParams,
        completion: @escaping @Sendable (Result<Node, HearthError>) -> Void
    ) {
        let box = Unmanaged.passRetained(ReadCompletion(completion)).toOpaque()
        var details = hearth_error_t()
        let status = hearth_db_get_async(
            handle, path, query.isDefault ? nil : query.pointer, ReadCompletion.callback, box,
            ReadCompletion.release, &details)
        if status != 0 {
            Unmanaged<ReadCompletion>.fromOpaque(box).release()
            completion(.failure(HearthError(status: status, details: details)))
        }
    }

    // MARK: Observers

    /// Registers `registration` with C. Returns its handle, or throws when
    /// C refuses (then nothing is registered and nothing will be called).
    func register(_ registration: ObserverRegistration) throws(HearthError) -> DatabaseHandle {
        let key = ObjectIdentifier(registration)
        state.withLock { $0.observers[key] = registration }
        let context = Unmanaged.passRetained(registration).toOpaque()
        var handle: hearth_observer_t = 0
        var details = hearth_error_t()
        let query = registration.query
        let status = hearth_db_observe(
            self.handle, registration.path, query.isDefault ? nil : query.pointer,
            registration.eventType.mask, ObserverRegistration.onEvent, context,
            ObserverRegistration.release, &handle, &details)
        if status != 0 {
            Unmanaged<ObserverRegistration>.fromOpaque(context).release()
            state.withLock { _ = $0.observers.removeValue(forKey: key) }
            throw HearthError(status: status, details: details)
        }
        let databaseHandle = DatabaseHandle(handle)
        if !registration.setHandle(databaseHandle) {
            removeRegistration(handle: databaseHandle)
        }
        return databaseHandle
    }

    /// Removes the observer with `handle`, if it is still registered.
    func removeObserver(withHandle handle: DatabaseHandle) {
        let registration = state.withLock { state in
            state.observers.values.first { $0.handle == handle }
        }
        if let registration, let handle = registration.deactivate() {
            removeRegistration(handle: handle)
        }
    }

    /// Removes every observer at exactly `path`; only those of the query
    /// `queryIdentifier` when given.
    func removeObservers(at path: String, queryIdentifier: String?) {
        let registrations = state.withLock { state in
            state.observers.values.filter {
                $0.path == path && (queryIdentifier == nil || $0.query.identifier == queryIdentifier)
            }
        }
        for registration in registrations {
            if let handle = registration.deactivate() {
                removeRegistration(handle: handle)
            }
        }
    }

    /// Asks C to remove a registration (its release callback follows).
    func removeRegistration(handle: DatabaseHandle) {
        _ = hearth_db_remove_observer(self.handle, hearth_observer_t(handle))
    }

    /// The number of observers C still holds (for tests and diagnostics).
    var observerCount: Int {
        state.withLock { $0.observers.count }
    }

    /// Called from a registration's release callback: C is done with it.
    func forget(_ registration: ObserverRegistration) {
        state.withLock { _ = $0.observers.removeValue(forKey: ObjectIdentifier(registration)) }
    }
}

/// A read's completion, kept alive for C until it has answered.
private final class ReadCompletion: Sendable {
    let body: @Sendable (Result<Node, HearthError>) -> Void

    init(_ body: @escaping @Sendable (Result<Node, HearthError>) -> Void) {
        self.body = body
    }

    static let callback: hearth_get_cb = { status, value, context in
        guard let context else { return }
        let read = Unmanaged<ReadCompletion>.fromOpaque(context).takeUnretainedValue()
        if status == 0, let value {
            read.body(.success(Node(retaining: value)))
        } else {
            read.body(.failure(HearthError(completing: status)))
        }
    }

    static let release: hearth_free_cb = { context in
        guard let context else { return }
        Unmanaged<ReadCompletion>.fromOpaque(context).release()
    }
}

/// A token provider as the C client's context: asked on the loop thread,
/// it answers from a task.
private final class TokenProviderBox: @unchecked Sendable {
    // @unchecked: `database` is set once, in init, and only read after.
    private(set) weak var database: Database?
    let provider: @Sendable () async -> String?
    /// The database's credential generation this provider was set in.
    let generation: UInt64

    init(database: Database, provider: @escaping @Sendable () async -> String?, generation: UInt64) {
        self.database = database
        self.provider = provider
        self.generation = generation
    }

    static let ask: hearth_auth_provider_cb = { _, context in
        guard let context else { return }
        let box = Unmanaged<TokenProviderBox>.fromOpaque(context).takeUnretainedValue()
        Task {
            let token = await box.provider()
            box.database?.provided(token, asked: box.generation)
        }
    }

    static let release: hearth_free_cb = { context in
        guard let context else { return }
        Unmanaged<TokenProviderBox>.fromOpaque(context).release()
    }
}

/// Calls body with a C string of text while it runs, or with nil.
private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
