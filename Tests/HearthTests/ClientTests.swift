import Foundation
import Testing

@testable import Hearth
import HearthServer

/// Databases that are clients of a real `hearth serve` (HearthServer) on a
/// free loopback port: the API an app ports over, against a server.
@Suite("Client of a server")
struct ClientTests {
    let server: HearthServer
    /// The test's files: the server's data in data/, anything else beside.
    let scratch = TemporaryDirectory("hearth-swift-client")

    init() throws {
        server = try HearthServer(.init(port: 0, dataDirectory: scratch.path + "/data", fsync: .off))
    }

    /// A client of the test's server in namespace `ns`, callbacks on a
    /// private queue.
    private func client(_ ns: String) -> Database {
        let database = Database(url: "http://127.0.0.1:\(server.port)?ns=\(ns)")
        database.callbackQueue = DispatchQueue(label: "hearth.tests.client.\(ns)")
        return database
    }

    @Test func twoClientsSeeEachOthersWrites() async throws {
        let ns = "two-\(UUID().uuidString.prefix(8))"
        let alice = client(ns), bob = client(ns)
        let seen = Recorder<String>()
        bob.reference(withPath: "chat").observe(.childAdded) { snapshot in
            seen.append("\(snapshot.key)=\(snapshot.value ?? "nil")")
        }
        try await alice.reference(withPath: "chat/m1").setValue("hello")
        try await alice.reference(withPath: "chat").updateChildValues(["m2": "there"])
        let events = try await seen.wait(for: 2)
        #expect(events == ["m1=hello", "m2=there"])
        server.stop()
    }

    /// The library's messages reach the handler the app set (here the
    /// protocol trace of a write), as `HearthLog.Level` and text.
    @Test func logHandlerGetsTheTrace() async throws {
        let ns = "log-\(UUID().uuidString.prefix(8))"
        let marker = "marker-\(UUID().uuidString.prefix(8))"
        let lines = Recorder<String>()
        let warnings = Recorder<String>()
        HearthLog.setHandler { level, text in
            if level == .message && text.hasPrefix("> ") && text.contains(marker) {
                lines.append(text)
            }
            if level == .warning && text.contains("/\(marker)") { warnings.append(text) }
        }
        Database.setLoggingEnabled(true)
        defer {
            Database.setLoggingEnabled(false)
            HearthLog.setHandler(nil)  // as the test process had it
        }
        try await client(ns).reference(withPath: "x").setValue(marker)
        let sent = try await lines.wait(for: 1)
        #expect(sent[0].contains("\"d\":\"\(marker)\""))
        // The Swift module's own messages (a failed write without a
        // completion block) go to the handler too, not to stderr.
        let writeWithoutCompletion: (DatabaseReference) -> Void = { $0.setValue(["a.b": 1]) }
        writeWithoutCompletion(makeDatabase().reference(withPath: marker))
        let warned = try await warnings.wait(for: 1)
        #expect(warned[0].contains("invalid key"))
        server.stop()
    }

    /// On Apple platforms every client goes through the URLSession
    /// transport; this checks one end to end. Not on Linux: corelibs
    /// Foundation's URLSessionWebSocketTask runs on libcurl, and Debian's
    /// libcurl has no WebSocket support (the transport only compiles
    /// there; the C interface is tested with a transport of the tests' own,
    /// client_transport_* in Tests/CTests).
    @Test(.enabled(
        if: URLSessionTransport.isDefault,
        "Linux: Debian's libcurl has no WebSocket support, so URLSessionWebSocketTask cannot connect"))
    func urlSessionTransportCarriesTheClient() async throws {
        let ns = "urlsession-\(UUID().uuidString.prefix(8))"
        let alice = client(ns), bob = client(ns)
        let seen = Recorder<String>()
        bob.reference(withPath: "m").observe(.value) { seen.append("\($0.value ?? "nil")") }
        try await alice.reference(withPath: "m").setValue("over URLSession")
        let values = try await seen.wait(for: 2)
        #expect(values.last == "over URLSession")
        server.stop()
    }

    @Test func useEmulatorAndTransactions() async throws {
        let ns = "tx-\(UUID().uuidString.prefix(8))"
        let databases = (0..<4).map { _ in
            let database = Database(url: "https://\(ns).firebaseio.com")
            database.useEmulator(withHost: "127.0.0.1", port: server.port)
            database.callbackQueue = DispatchQueue(label: "hearth.tests.emulator")
            return database
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for database in databases {
                group.addTask {
                    for _ in 0..<25 {
                        let (committed, _) = try await database.reference(withPath: "count")
                            .runTransactionBlock { data in
                                data.value = ((data.value as? Int) ?? 0) + 1
                                return .success(withValue: data)
                            }
                        #expect(committed)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await databases[0].reference(withPath: "count").getData().value as? Int == 100)
        server.stop()
    }

    @Test func offlineWritesAndConnectedState() async throws {
        let ns = "offline-\(UUID().uuidString.prefix(8))"
        let database = client(ns), other = client(ns)
        let connected = Recorder<Bool>()
        database.reference(withPath: ".info/connected").observe(.value) { snapshot in
            connected.append(snapshot.value as? Bool ?? false)
        }
        // false, then true; or true alone when the connection is up before
        // the observer is registered (both happen on the loop, in either order)
        let startedOnline = try await connected.wait(for: 1)[0]
        let initial: [Bool] = startedOnline ? [true] : [false, true]
        try await connected.wait(for: initial.count)
        database.goOffline()
        try await connected.wait(for: initial.count + 1)
        let local = Recorder<String>()
        database.reference(withPath: "notes/n1").observe(.value) { snapshot in
            local.append(snapshot.value as? String ?? "nil")
        }
        database.reference(withPath: "notes/n1").setValue("written offline") { _, _ in }
        #expect(try await local.wait(for: 1).last == "written offline")
        database.goOnline()
        try await connected.wait(for: initial.count + 2)
        #expect(connected.all == initial + [false, true])
        let remote = Recorder<String>()
        other.reference(withPath: "notes/n1").observe(.value) { snapshot in
            if let text = snapshot.value as? String { remote.append(text) }
        }
        #expect(try await remote.wait(for: 1).last == "written offline")
        server.stop()
    }

    @Test func onDisconnectRunsWhenTheClientGoes() async throws {
        let ns = "presence-\(UUID().uuidString.prefix(8))"
        let watcher = client(ns)
        let states = Recorder<String>()
        watcher.reference(withPath: "presence/me").observe(.value) { snapshot in
            if let state = snapshot.value as? String { states.append(state) }
        }
        do {
            let me = client(ns)
            let ref = me.reference(withPath: "presence/me")
            try await ref.onDisconnectSetValue("offline")
            try await ref.setValue("online")
            try await states.wait(for: 1)
            me.goOffline()  // the connection ends: the server runs the operation
        }
        let seen = try await states.wait(for: 2)
        #expect(seen == ["online", "offline"])
        server.stop()
    }

    @Test func keepSyncedCachesForOfflineReads() async throws {
        let ns = "kept-\(UUID().uuidString.prefix(8))"
        let reader = client(ns), writer = client(ns)
        let kept = reader.reference(withPath: "config")
        kept.keepSynced(true)
        try await writer.reference(withPath: "config").setValue(["theme": "dark"])
        let synced = Recorder<String>()
        let probe = reader.reference(withPath: "config/theme").observe(.value) { snapshot in
            if let theme = snapshot.value as? String { synced.append(theme) }
        }
        try await synced.wait(for: 1)
        reader.reference(withPath: "config/theme").removeObserver(withHandle: probe)
        reader.goOffline()
        // Offline, the kept query answers from its cache.
        let snapshot = try await kept.getData()
        #expect((snapshot.value as? [String: Any])?["theme"] as? String == "dark")
        kept.keepSynced(false)
        server.stop()
    }

    @Test func purgeOutstandingWritesRevertsThem() async throws {
        let ns = "purge-\(UUID().uuidString.prefix(8))"
        let database = client(ns)
        let values = Recorder<String>()
        database.reference(withPath: "draft").observe(.value) { snapshot in
            values.append(snapshot.value as? String ?? "none")
        }
        try await values.wait(for: 1)
        database.goOffline()
        let failed = Recorder<String>()
        database.reference(withPath: "draft").setValue("unsent") { error, _ in
            let error = error as NSError?
            failed.append("\(error?.domain ?? "-") \(error?.code ?? 0) \(error?.localizedDescription ?? "")")
        }
        try await values.wait(for: 2)
        database.purgeOutstandingWrites()
        // As the SDK reports it: its domain, "write canceled".
        #expect(try await failed.wait(for: 1) == ["com.firebase 3 Write cancelled by user"])
        // Offline with nothing cached: the iOS SDK's error, word for word.
        do {
            _ = try await database.reference(withPath: "never/cached").getData()
            Issue.record("getData answered offline without a cache")
        } catch let error as NSError {
            #expect(error.domain == "com.firebase.core" && error.code == 1)
            #expect(
                error.localizedDescription
                    == "Unable to get latest value for query FQuerySpec (path: /never/cached, "
                    + "params: {}), client offline with no active listeners and no matching "
                    + "disk cache entries")
        }
        let limited = Recorder<String>()
        database.reference(withPath: "never/cached").queryLimited(toLast: 2).getData { error, _ in
            limited.append((error as NSError?)?.localizedDescription ?? "no error")
        }
        #expect(
            try await limited.wait(for: 1) == [
                "Unable to get latest value for query FQuerySpec (path: /never/cached, "
                    + "params: {\n    l = 2;\n    vf = r;\n}), client offline with no active "
                    + "listeners and no matching disk cache entries"
            ])
        #expect(try await values.wait(for: 3) == ["none", "unsent", "none"])
        server.stop()
    }

    @Test func asyncSingleEventsAndPriorityOnDisconnect() async throws {
        let ns = "single-\(UUID().uuidString.prefix(8))"
        let database = client(ns), watcher = client(ns)
        try await database.reference(withPath: "list").setValue(["a": 1, "b": 2])
        let value = await database.reference(withPath: "list").observeSingleEvent(of: .value)
        #expect(value.childrenCount == 2)
        let (child, previous) = await database.reference(withPath: "list")
            .queryOrderedByKey().queryStarting(atValue: "b")
            .observeSingleEventAndPreviousSiblingKey(of: .childAdded)
        #expect(child.key == "b" && previous == nil)
        let ref = database.reference(withPath: "status")
        try await ref.onDisconnectSetValue("away", andPriority: 7)
        database.goOffline()
        let seen = Recorder<String>()
        watcher.reference(withPath: "status").observe(.value) { snapshot in
            if snapshot.exists() { seen.append("\(snapshot.value ?? "")@\(snapshot.priority ?? "")") }
        }
        #expect(try await seen.wait(for: 1) == ["away@7"])
        server.stop()
    }

    /// isPersistenceEnabled: a client started again with no server shows
    /// what it had from disk, and its offline writes reach the server once
    /// it is back.
    @Test func persistenceAcrossRestarts() async throws {
        // No setenv: tests run in parallel, and the environment is the
        // process's. The namespace is this test's own, so is the cache file
        // (named after the URL) in the cache directory (HEARTH_CACHE_DIR
        // when the runner sets it, as `make test-swift` does).
        let ns = "persist-\(UUID().uuidString.prefix(8))"
        let url = "http://127.0.0.1:\(server.port)?ns=\(ns)"
        func open() -> Database {
            let database = Database(url: url)
            database.isPersistenceEnabled = true
            database.persistenceCacheSizeBytes = 2 * 1024 * 1024
            database.callbackQueue = DispatchQueue(label: "hearth.tests.persist")
            return database
        }
        do {
            let first = open()
            try await first.reference(withPath: "notes").setValue(["n1": "hello"])
            let seen = Recorder<Int>()
            first.reference(withPath: "notes").observe(.value) { seen.append(Int($0.childrenCount)) }
            try await seen.wait(for: 1)
            try await settle(first)  // the server's data is in; closing stores it
        }
        let port = server.port, dataDirectory = server.configuration.dataDirectory
        server.stop()
        do {
            let offline = open()
            let notes = Recorder<[String: String]>()
            offline.reference(withPath: "notes").observe(.value) { snapshot in
                notes.append(snapshot.value as? [String: String] ?? [:])
            }
            #expect(try await notes.wait(for: 1, timeout: .seconds(2)).first == ["n1": "hello"])
            offline.reference(withPath: "notes/n2").setValue("written offline") { _, _ in }
            #expect(try await notes.wait(for: 2).last == ["n1": "hello", "n2": "written offline"])
            // No wait: the write was stored as it was applied (its event has
            // run), and closing the database runs after it on the loop.
        }
        let restarted = try HearthServer(.init(port: port, dataDirectory: dataDirectory, fsync: .off))
        let online = open()
        let watcher = Database(url: url)
        watcher.callbackQueue = DispatchQueue(label: "hearth.tests.persist.watch")
        let remote = Recorder<Int>()
        watcher.reference(withPath: "notes").observe(.value) { remote.append(Int($0.childrenCount)) }
        _ = online.reference(withPath: "notes")  // opens it: the stored write is sent
        try await online.reference(withPath: "unrelated").setValue(1)
        let counts = try await remote.wait(for: 1)
        if counts.last != 2 { _ = try await remote.wait(for: 2) }
        #expect(remote.all.last == 2)
        restarted.stop()
        let cache = Database.cacheDirectory
        for name in (try? FileManager.default.contentsOfDirectory(atPath: cache)) ?? []
        where name.contains(ns) {
            try? FileManager.default.removeItem(atPath: cache + "/" + name)
        }
    }

    /// The server's rules judge a client by the token it was given: a
    /// refused listen reaches the cancel block as the SDK's permission
    /// error, a token lets it through, a provider answers on connection.
    @Test func authTokensAndRules() async throws {
        let secured = try securedServer(in: scratch, "auth")
        defer { secured.stop() }
        let database = Database(url: "http://127.0.0.1:\(secured.port)?ns=auth")
        database.callbackQueue = DispatchQueue(label: "hearth.tests.auth")

        let canceled = Recorder<NSError>()
        database.reference(withPath: "private/ada").observe(
            .value, with: { _ in }, withCancel: { error in canceled.append(error as NSError) })
        let error = try await canceled.wait(for: 1)[0]
        #expect(error.domain == "com.firebase" && error.code == 1)

        database.setAuthToken(try HearthServer.makeToken(uid: "ada", secret: "s3cret"))
        try await database.reference(withPath: "private/ada").setValue("mine")
        #expect(try await database.reference(withPath: "private/ada").getData().value as? String == "mine")
        await #expect(throws: (any Error).self) {
            try await database.reference(withPath: "private/bob").setValue("not mine")
        }

        let other = Database(url: "http://127.0.0.1:\(secured.port)?ns=auth")
        other.callbackQueue = DispatchQueue(label: "hearth.tests.auth.provider")
        let asked = Recorder<Bool>()
        other.setAuthTokenProvider {
            asked.append(true)
            return try? HearthServer.makeToken(uid: "bob", secret: "s3cret")
        }
        try await other.reference(withPath: "private/bob").setValue("bob's")
        #expect(asked.all.count >= 1)
        server.stop()
    }
}
