import Foundation

// A small stand-in for FirebaseCore's `FirebaseApp` and `FirebaseOptions`,
// so that an app's start-up code (`FirebaseApp.configure()`) and its
// `Database.database(app:)` calls compile and work unchanged. Only what
// the database needs is here: an app is a name and options, and its
// options give the database URL.

/// The settings of a `FirebaseApp`, as `FirebaseOptions` in FirebaseCore.
/// Only ``databaseURL`` matters to Hearth; the other fields are kept for
/// code that reads or sets them.
public final class FirebaseOptions: @unchecked Sendable {
    // @unchecked Sendable: as the SDK's, a plain settings object; set it up
    // before `FirebaseApp.configure(options:)`, which keeps its own copy.

    public var googleAppID: String
    public var gcmSenderID: String
    public var apiKey: String?
    public var projectID: String?
    public var bundleID: String
    public var clientID: String?
    public var storageBucket: String?
    public var appGroupID: String?
    /// The database the app's `Database.database()` opens.
    public var databaseURL: String?

    public init(googleAppID: String, gcmSenderID: String) {
        self.googleAppID = googleAppID
        self.gcmSenderID = gcmSenderID
        bundleID = Bundle.main.bundleIdentifier ?? ""
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
        apiKey = plist["API_KEY"] as? String
        projectID = plist["PROJECT_ID"] as? String
        bundleID = plist["BUNDLE_ID"] as? String ?? bundleID
        clientID = plist["CLIENT_ID"] as? String
        storageBucket = plist["STORAGE_BUCKET"] as? String
        databaseURL = plist["DATABASE_URL"] as? String
    }

    /// A copy, so that changes after `configure` do not reach the app.
    func copy() -> FirebaseOptions {
        let copy = FirebaseOptions(googleAppID: googleAppID, gcmSenderID: gcmSenderID)
        copy.apiKey = apiKey
        copy.projectID = projectID
        copy.bundleID = bundleID
        copy.clientID = clientID
        copy.storageBucket = storageBucket
        copy.appGroupID = appGroupID
        copy.databaseURL = databaseURL
        return copy
    }
}

/// A configured app, as `FirebaseApp` in FirebaseCore: a name and its
/// options. `Database.database(app:)` opens the app's database.
public final class FirebaseApp: @unchecked Sendable {
    // @unchecked Sendable: immutable after creation (the options are a
    // private copy, not changed afterwards).

    /// The name of the default app, as the SDK names it.
    static let defaultName = "__FIRAPP_DEFAULT"

    private static let apps = Locked<[String: FirebaseApp]>([:])

    /// The app's name (`__FIRAPP_DEFAULT` for the default app).
    public let name: String
    /// The app's options (a copy of those it was configured with).
    public let options: FirebaseOptions

    private init(name: String, options: FirebaseOptions) {
        self.name = name
        self.options = options.copy()
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
        instance(url: app.options.databaseURL ?? defaultURL, appName: app.name)
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
