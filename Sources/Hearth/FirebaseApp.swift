import Foundation

// A small stand-in for FirebaseCore's `FirebaseApp` and `FirebaseOptions`,
// so that an app's start-up code (`FirebaseApp.configure()`) and its
// `Database.database(app:)` calls compile and work unchanged. Only what
// the database needs is here: an app is a name and options, and its
// options give the database URL.

/// The settings of a `FirebaseApp`, as `FirebaseOptions` in FirebaseCore.
/// Only ``databaseURL`` matters to Hearth; the other fields are kept for
/// code that reads or sets them.
///
/// Safe to share between threads: every property is read and written
/// under a lock. `FirebaseApp.configure(options:)` keeps a copy, and an
/// app's ``FirebaseApp/options`` is a new copy on every read (as the SDK's
/// getter copies), so changing one never changes an app.
public final class FirebaseOptions: Sendable {
    /// The values, copied whole between instances.
    struct Fields: Sendable {
        var googleAppID: String
        var gcmSenderID: String
        var apiKey: String?
        var projectID: String?
        var bundleID: String
        var clientID: String?
        var storageBucket: String?
        var appGroupID: String?
        var databaseURL: String?
    }
    private let fields: Locked<Fields>

    public var googleAppID: String {
        get { self[\.googleAppID] }
        set { self[\.googleAppID] = newValue }
    }
    public var gcmSenderID: String {
        get { self[\.gcmSenderID] }
        set { self[\.gcmSenderID] = newValue }
    }
    public var apiKey: String? {
        get { self[\.apiKey] }
        set { self[\.apiKey] = newValue }
    }
    public var projectID: String? {
        get { self[\.projectID] }
        set { self[\.projectID] = newValue }
    }
    public var bundleID: String {
        get { self[\.bundleID] }
        set { self[\.bundleID] = newValue }
    }
    public var clientID: String? {
        get { self[\.clientID] }
        set { self[\.clientID] = newValue }
    }
    public var storageBucket: String? {
        get { self[\.storageBucket] }
        set { self[\.storageBucket] = newValue }
    }
    public var appGroupID: String? {
        get { self[\.appGroupID] }
        set { self[\.appGroupID] = newValue }
    }
    /// The database the app's `Database.database()` opens.
    public var databaseURL: String? {
        get { self[\.databaseURL] }
        set { self[\.databaseURL] = newValue }
    }

    private subscript<Value>(field: WritableKeyPath<Fields, Value>) -> Value {
        get { fields.withLock { $0[keyPath: field] } }
        set { fields.withLock { $0[keyPath: field] = newValue } }
    }

    public convenience init(googleAppID: String, gcmSenderID: String) {
        self.init(
            Fields(
                googleAppID: googleAppID, gcmSenderID: gcmSenderID,
                bundleID: Bundle.main.bundleIdentifier ?? ""))
    }

    init(_ fields: Fields) {
        self.fields = Locked(fields)
    }

    /// The options in a `GoogleService-Info.plist` file; nil when the file
    /// cannot be read as a property list dictionary.
    public convenience init?(contentsOfFile plistPath: String) {
        guard let data = FileManager.default.contents(atPath: plistPath),
            let plist = try? PropertyListSerialization.propertyList(from: data, format: nil),
            let fields = plist as? [String: Any]
        else { return nil }
        self.init(plist: fields)
    }

    /// The options of the main bundle's `GoogleService-Info.plist`, else
    /// those naming the HEARTH_DATABASE_URL environment variable as the
    /// database, else nil.
    public static func defaultOptions() -> FirebaseOptions? {
        if let path = Bundle.main.path(forResource: "GoogleService-Info", ofType: "plist") {
            return FirebaseOptions(contentsOfFile: path)
        }
        guard let url = ProcessInfo.processInfo.environment["HEARTH_DATABASE_URL"] else { return nil }
        let options = FirebaseOptions(googleAppID: "", gcmSenderID: "")
        options.databaseURL = url
        return options
    }

    private convenience init(plist: [String: Any]) {
        self.init(
            googleAppID: plist["GOOGLE_APP_ID"] as? String ?? "",
            gcmSenderID: plist["GCM_SENDER_ID"] as? String ?? "")
        fields.withLock { fields in
            fields.apiKey = plist["API_KEY"] as? String
            fields.projectID = plist["PROJECT_ID"] as? String
            fields.bundleID = plist["BUNDLE_ID"] as? String ?? fields.bundleID
            fields.clientID = plist["CLIENT_ID"] as? String
            fields.storageBucket = plist["STORAGE_BUCKET"] as? String
            fields.databaseURL = plist["DATABASE_URL"] as? String
        }
    }

    /// The values now, as one consistent copy.
    var snapshot: Fields { fields.withLock { $0 } }
}

/// A configured app, as `FirebaseApp` in FirebaseCore: a name and its
/// options. `Database.database(app:)` opens the app's database.
public final class FirebaseApp: Sendable {
    /// The name of the default app, as the SDK names it.
    static let defaultName = "__FIRAPP_DEFAULT"

    private static let apps = Locked<[String: FirebaseApp]>([:])

    /// The app's name (`__FIRAPP_DEFAULT` for the default app).
    public let name: String
    /// The options it was configured with, as they were then.
    private let configured: FirebaseOptions.Fields

    /// The app's options: a new copy of those it was configured with on
    /// every read, as the SDK's getter copies, so a change to it stays in
    /// that copy.
    public var options: FirebaseOptions { FirebaseOptions(configured) }

    /// The database URL of its options.
    var databaseURL: String? { configured.databaseURL }

    private init(name: String, options: FirebaseOptions) {
        self.name = name
        configured = options.snapshot
    }

    /// Configures the default app from the main bundle's
    /// `GoogleService-Info.plist` (its `DATABASE_URL`) when there is one,
    /// else from the HEARTH_DATABASE_URL environment variable; with
    /// neither, the default app has no database URL and
    /// `Database.database()` opens the one it opens without an app.
    public static func configure() {
        configure(options: FirebaseOptions.defaultOptions() ?? FirebaseOptions(googleAppID: "", gcmSenderID: ""))
    }

    /// Configures the default app with `options`. Configuring it a second
    /// time is a precondition failure, as the SDK raises.
    public static func configure(options: FirebaseOptions) {
        configure(name: defaultName, options: options)
    }

    /// Configures an app of its own named `name`. A name already in use is
    /// a precondition failure, as the SDK raises.
    public static func configure(name: String, options: FirebaseOptions) {
        precondition(!name.isEmpty, "FirebaseApp: an app's name must not be empty")
        apps.withLock { apps in
            precondition(apps[name] == nil, "FirebaseApp: the app \(name) is already configured")
            apps[name] = FirebaseApp(name: name, options: options)
        }
    }

    /// The default app; nil until it is configured.
    public static func app() -> FirebaseApp? {
        app(name: defaultName)
    }

    /// The app named `name`; nil when there is none.
    public static func app(name: String) -> FirebaseApp? {
        apps.withLock { $0[name] }
    }

    /// Every configured app by name; nil when there is none.
    public static var allApps: [String: FirebaseApp]? {
        let all = apps.withLock { $0 }
        return all.isEmpty ? nil : all
    }

    /// Removes the app, so that its name may be configured again; databases
    /// opened for it stay open (their `app` becomes nil). `completion` gets
    /// whether it was removed, before this returns.
    public func delete(_ completion: (Bool) -> Void) {
        let removed = FirebaseApp.apps.withLock { apps in
            guard apps[name] === self else { return false }
            apps[name] = nil
            return true
        }
        completion(removed)
    }
}

extension Database {
    /// The database of `app`: the one at its options' `databaseURL`, or,
    /// when it has none, at HEARTH_DATABASE_URL, else a local `hearth serve`.
    public static func database(app: FirebaseApp) -> Database {
        instance(url: app.databaseURL ?? defaultURL, appName: app.name)
    }

    /// The database at `url` for `app`: one instance per app and URL.
    public static func database(app: FirebaseApp, url: String) -> Database {
        instance(url: url, appName: app.name)
    }

    /// The app this database belongs to: the default app for the
    /// instances made without one; nil while that app is not configured.
    public var app: FirebaseApp? {
        FirebaseApp.app(name: appName)
    }
}
