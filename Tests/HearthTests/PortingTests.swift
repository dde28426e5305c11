import Foundation
import Testing

@testable import Hearth

/// What porting an app from the Firebase SDK relies on beyond names: the
/// SDK's async forms, labels, plain initializers and subclasses, equality
/// of references, and the FirebaseApp entry points.
@Suite("Porting from the SDK")
struct PortingTests {
    let database = makeDatabase()

    /// The SDK's async single-event forms do not throw; `firstEvent(_:)`
    /// throws the error that cancels the observation.
    @Test func singleEventAsyncFormsDoNotThrow() async throws {
        let list = database.reference(withPath: "list")
        try await list.setValue(["a": 1, "b": 2])
        let value: DataSnapshot = await list.observeSingleEvent(of: .value)
        #expect(value.childrenCount == 2)
        let (child, previous) = await list.queryOrderedByKey().queryStarting(atValue: "b")
            .observeSingleEventAndPreviousSiblingKey(of: .childAdded)
        #expect(child.key == "b" && previous == nil)
        let event = try await list.queryOrderedByKey().firstEvent(.childAdded)
        #expect(event.snapshot.key == "a" && event.type == .childAdded)

        let locked = Database(url: "memory:porting-\(UUID().uuidString.prefix(13))")
        try locked.useRules(#"{"rules": {".read": false, ".write": true}}"#)
        do {
            _ = try await locked.reference(withPath: "secret").firstEvent(.value)
            Issue.record("a refused read gave an event")
        } catch let error as NSError {
            #expect(error.domain == "com.firebase" && error.code == 1)
        }
    }

    /// onDisconnectRemoveValue(completionBlock:) and
    /// cancelDisconnectOperations(completionBlock:), with the SDK's labels:
    /// each completion runs once (an embedded database has no connection to
    /// lose, so it reports "unsupported").
    @Test func onDisconnectCompletionLabels() async throws {
        let ref = database.reference(withPath: "presence")
        let done = Recorder<String>()
        ref.onDisconnectRemoveValue(completionBlock: { error, _ in done.append("remove \(error == nil)") })
        ref.cancelDisconnectOperations(completionBlock: { error, _ in done.append("cancel \(error == nil)") })
        let ok = againstServer ? "true" : "false"
        #expect(Set(try await done.wait(for: 2)) == ["remove \(ok)", "cancel \(ok)"])
    }

    /// The SDK's classes have plain initializers and are open: an app's test
    /// doubles subclass them (FakeSnapshot & co. in APISurface.swift).
    @Test func plainInitializersAndTestDoubles() async throws {
        #expect(DatabaseReference().key == nil && DatabaseQuery().ref == DatabaseReference())
        #expect(!DataSnapshot().exists() && MutableData().value is NSNull)
        #expect(TransactionResult().update == nil)

        let fake = FakeReference()
        let ref: DatabaseReference = fake
        sync { ref.child("anything").setValue("hello") }
        let seen = Recorder<String>()
        ref.observe(.value) { snapshot in seen.append("\(snapshot.key)=\(snapshot.value ?? "")") }
        #expect(try await seen.wait(for: 1) == ["fake=hello"])
        #expect(FakeQuery().queryLimited(toFirst: 1) is FakeQuery)
        #expect(FakeMutableData().value as? String == "fake")
        #expect(FakeTransactionResult().update == nil)
    }

    /// References and queries are equal when they read the same data: one
    /// database, one location, the same parameters.
    @Test func referencesAndQueriesAreValues() async throws {
        let root = database.reference()
        let a = root.child("a")
        #expect(a == database.reference(withPath: "a/") && a == root.child("a").child("b").parent)
        #expect(a != root.child("b") && a != makeDatabase().reference(withPath: "a"))
        #expect(a.queryOrderedByKey() == a.queryOrderedByKey() && a.queryOrderedByKey() != a)
        #expect(a.queryOrderedByKey().queryLimited(toFirst: 2) != a.queryOrderedByKey().queryLimited(toFirst: 3))
        #expect(a.queryOrderedByKey().ref == a && DatabaseQuery() == Database.database().reference())

        var listeners: [DatabaseReference: Int] = [a: 1]
        listeners[root.child("a"), default: 0] += 1
        #expect(listeners.count == 1 && listeners[a] == 2)
        let queries: Set<DatabaseQuery> = [a, a.queryOrderedByKey(), root.child("a"), a.queryOrderedByKey()]
        #expect(queries.count == 2)

        try await a.setValue(1)
        let snapshot = try await a.getData()
        #expect(snapshot.ref == a && snapshot.ref.hashValue == a.hashValue)
    }

    /// FirebaseApp.configure(name:options:) with a GoogleService-Info.plist:
    /// Database.database(app:) opens its DATABASE_URL, one instance per app
    /// and URL, and `database.app` is the app.
    @Test func firebaseAppChoosesTheDatabase() async throws {
        let name = "porting-\(UUID().uuidString.prefix(8))"
        let plist = NSTemporaryDirectory() + "\(name)-GoogleService-Info.plist"
        defer { try? FileManager.default.removeItem(atPath: plist) }
        let fields: [String: Any] = [
            "DATABASE_URL": "memory:\(name)", "GOOGLE_APP_ID": "1:2:ios:3", "GCM_SENDER_ID": "2",
            "PROJECT_ID": name,
        ]
        try PropertyListSerialization.data(fromPropertyList: fields, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: plist))
        let options = try #require(FirebaseOptions(contentsOfFile: plist))
        #expect(options.projectID == name && options.googleAppID == "1:2:ios:3")
        #expect(FirebaseOptions(contentsOfFile: plist + ".missing") == nil)

        FirebaseApp.configure(name: name, options: options)
        options.databaseURL = "memory:changed"  // the app keeps its own copy
        let app = try #require(FirebaseApp.app(name: name))
        let database = Database.database(app: app)
        #expect(database.url == "memory:\(name)" && database.app === app && app.name == name)
        #expect(Database.database(app: app) === database)
        #expect(Database.database(app: app, url: "memory:\(name)") === database)
        let other = Database.database(app: app, url: "memory:\(name)-other")
        #expect(other !== database && other.app === app)
        #expect(Database.database(url: "memory:\(name)") !== database)

        database.callbackQueue = DispatchQueue(label: "hearth.tests.porting")
        try await database.reference(withPath: "x").setValue(1)
        #expect(try await database.reference(withPath: "x").getData().value as? Int == 1)

        var deleted = false
        app.delete { deleted = $0 }
        #expect(deleted && FirebaseApp.app(name: name) == nil && database.app == nil)
    }

    /// `app.options` is a copy on every read, as the SDK's getter returns:
    /// a change to what it returned does not reach the app, so no caller
    /// shares mutable state with another thread through the app.
    @Test func anAppsOptionsCannotBeChangedThroughIt() throws {
        let name = "options-\(UUID().uuidString.prefix(8))"
        let options = FirebaseOptions(googleAppID: "1:2:ios:3", gcmSenderID: "2")
        options.databaseURL = "memory:\(name)"
        FirebaseApp.configure(name: name, options: options)
        let app = try #require(FirebaseApp.app(name: name))
        defer { app.delete { _ in } }
        let read = app.options
        read.databaseURL = "memory:changed"
        read.projectID = "changed"
        #expect(app.options.databaseURL == "memory:\(name)" && app.options.projectID == nil)
        #expect(app.options !== app.options)
        #expect(Database.database(app: app).url == "memory:\(name)")
    }

    /// One FirebaseOptions changed and read from many threads at once
    /// stays whole (each property is read and written under a lock).
    @Test func optionsSharedBetweenThreadsStayWhole() async {
        let options = FirebaseOptions(googleAppID: "id", gcmSenderID: "sender")
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for i in 0..<2_000 {
                        options.databaseURL = "memory:worker-\(worker)-\(i)"
                        options.projectID = String(repeating: "p", count: i % 64)
                        _ = options.databaseURL?.count
                        _ = options.projectID?.count
                    }
                }
            }
        }
        #expect(options.databaseURL?.hasPrefix("memory:worker-") == true)
    }

    /// FirebaseApp.configure() with no GoogleService-Info.plist takes
    /// HEARTH_DATABASE_URL, so Database.database() stays the database it
    /// was (other tests use it at the same time).
    @Test func defaultAppFromTheEnvironment() throws {
        let before = Database.database()
        if FirebaseApp.app() == nil { FirebaseApp.configure() }
        let app = try #require(FirebaseApp.app())
        #expect(app.options.databaseURL == ProcessInfo.processInfo.environment["HEARTH_DATABASE_URL"])
        #expect(Database.database() === before && before.app === app)
        #expect(Database.database(app: app) === before && FirebaseApp.allApps?[app.name] === app)
    }
}
