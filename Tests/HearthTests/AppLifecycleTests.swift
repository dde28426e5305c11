import Foundation
import Testing

@testable import Hearth

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The app's lifecycle as a client sees it (AppLifecycle.swift): the
// decisions, driven by a source and background tasks of the test's own
// (on iOS they are NWPathMonitor's and UIApplication's, which cannot run
// here), first alone, then through a client database and a real server.

/// A lifecycle source the test reports through.
final class TestLifecycleSource: LifecycleSource, @unchecked Sendable {
    // @unchecked Sendable: state behind its lock.
    private let state = Locked<(report: (@Sendable (LifecycleEvent) -> Void)?, stopped: Bool)>(
        (nil, false))

    func start(reporting report: @escaping @Sendable (LifecycleEvent) -> Void) {
        state.withLock { $0.report = report }
    }

    func stop() {
        state.withLock { $0 = (nil, true) }
    }

    var started: Bool { state.withLock { $0.report != nil } }
    var stopped: Bool { state.withLock { $0.stopped } }

    func send(_ event: LifecycleEvent) {
        state.withLock { $0.report }?(event)
    }
}

/// Background tasks that record what is asked of them and let the test
/// run out the system's time.
final class TestBackgroundTasks: BackgroundTasks, @unchecked Sendable {
    // @unchecked Sendable: state behind its lock; `calls` is Sendable.
    enum Call: Equatable, Sendable {
        case begin(UInt64)
        case end(UInt64)
    }
    let calls = Recorder<Call>()
    private let expirations = Locked<[UInt64: @Sendable () -> Void]>([:])

    func begin(_ id: UInt64, expired: @escaping @Sendable () -> Void) {
        expirations.withLock { $0[id] = expired }
        calls.append(.begin(id))
    }

    func end(_ id: UInt64) {
        expirations.withLock { _ = $0.removeValue(forKey: id) }
        calls.append(.end(id))
    }

    /// The system's time runs out for task `id`: it ends (as UIKit's
    /// adapter ends it) and the supervisor is told.
    func runOut(_ id: UInt64) {
        expirations.withLock { $0.removeValue(forKey: id) }?()
    }

    /// The tasks begun and not ended.
    var held: Set<UInt64> {
        var held = Set<UInt64>()
        for call in calls.all {
            switch call {
            case .begin(let id): held.insert(id)
            case .end(let id): held.remove(id)
            }
        }
        return held
    }
}

@Suite("App lifecycle")
struct AppLifecycleTests {
    /// A supervisor fed by a test source and test background tasks,
    /// counting its reconnects.
    private func supervisor(tasks: TestBackgroundTasks? = TestBackgroundTasks())
        -> (ConnectionSupervisor, TestLifecycleSource, Locked<Int>)
    {
        let source = TestLifecycleSource()
        let reconnects = Locked(0)
        let supervisor = ConnectionSupervisor(
            sources: [source], backgroundTasks: tasks,
            reconnect: { reconnects.withLock { $0 += 1 } })
        supervisor.start()
        return (supervisor, source, reconnects)
    }

    /// A supervisor in the background with a write outstanding: holding
    /// task 1.
    private func holdingATask(_ tasks: TestBackgroundTasks)
        -> (ConnectionSupervisor, TestLifecycleSource, Locked<Int>)
    {
        let (supervisor, source, reconnects) = supervisor(tasks: tasks)
        supervisor.writeStarted()
        source.send(.enteredBackground)
        supervisor.waitUntilIdle()
        #expect(tasks.held == [1])
        return (supervisor, source, reconnects)
    }

    @Test func theNetworkComingBackReconnects() {
        let (supervisor, source, reconnects) = supervisor()
        #expect(source.started)
        source.send(.networkPath(satisfied: true))  // the path as it is: no change
        supervisor.waitUntilIdle()
        #expect(reconnects.withLock { $0 } == 0)
        source.send(.networkPath(satisfied: true))  // the same again
        source.send(.networkPath(satisfied: false))
        supervisor.waitUntilIdle()
        #expect(reconnects.withLock { $0 } == 0)
        source.send(.networkPath(satisfied: true))  // back
        supervisor.waitUntilIdle()
        #expect(reconnects.withLock { $0 } == 1)
        source.send(.networkPath(satisfied: true))
        supervisor.waitUntilIdle()
        #expect(reconnects.withLock { $0 } == 1)
        // Started without a route: its return counts.
        let (other, otherSource, otherReconnects) = self.supervisor()
        otherSource.send(.networkPath(satisfied: false))
        otherSource.send(.networkPath(satisfied: true))
        other.waitUntilIdle()
        #expect(otherReconnects.withLock { $0 } == 1)
    }

    @Test func theForegroundReconnects() {
        let (supervisor, source, reconnects) = supervisor()
        source.send(.enteredBackground)
        supervisor.waitUntilIdle()
        #expect(reconnects.withLock { $0 } == 0)
        source.send(.enteringForeground)
        supervisor.waitUntilIdle()
        #expect(reconnects.withLock { $0 } == 1)
    }

    @Test func aTaskIsHeldInTheBackgroundWhileWritesAreOutstanding() async throws {
        let tasks = TestBackgroundTasks()
        let (supervisor, source, _) = supervisor(tasks: tasks)
        #expect(supervisor.tracksWrites)
        // Nothing outstanding: no task.
        source.send(.enteredBackground)
        supervisor.waitUntilIdle()
        #expect(tasks.calls.all.isEmpty)
        // A write in the background takes one; it ends when the last is settled.
        supervisor.writeStarted()
        supervisor.writeStarted()
        supervisor.writeSettled()
        supervisor.waitUntilIdle()
        #expect(tasks.calls.all == [.begin(1)])
        supervisor.writeSettled()
        supervisor.waitUntilIdle()
        #expect(tasks.calls.all == [.begin(1), .end(1)])
        // Outstanding when the app leaves: taken at once; the foreground ends it.
        source.send(.enteringForeground)
        supervisor.writeStarted()
        supervisor.waitUntilIdle()
        #expect(tasks.calls.all.count == 2)  // none in the foreground
        source.send(.enteredBackground)
        supervisor.waitUntilIdle()
        #expect(tasks.held == [2])
        source.send(.enteringForeground)
        supervisor.waitUntilIdle()
        #expect(tasks.held.isEmpty)
        supervisor.writeSettled()
        supervisor.waitUntilIdle()
        #expect(tasks.calls.all == [.begin(1), .end(1), .begin(2), .end(2)])
    }

    @Test func whenTimeRunsOutNoNewTaskUntilTheForeground() {
        let tasks = TestBackgroundTasks()
        let (supervisor, source, _) = holdingATask(tasks)
        tasks.runOut(1)
        supervisor.waitUntilIdle()
        #expect(tasks.held.isEmpty)
        #expect(tasks.calls.all == [.begin(1), .end(1)])
        // Still in the background, still outstanding: a new write asks nothing.
        supervisor.writeStarted()
        supervisor.waitUntilIdle()
        #expect(tasks.calls.all.count == 2)
        // Back in front, then away again with writes outstanding: a new one.
        source.send(.enteringForeground)
        source.send(.enteredBackground)
        supervisor.waitUntilIdle()
        #expect(tasks.held == [2])
        supervisor.writeSettled()
        supervisor.writeSettled()
        supervisor.waitUntilIdle()
        #expect(tasks.held.isEmpty)
    }

    @Test func stoppingStopsTheSourcesAndEndsTheTask() {
        let tasks = TestBackgroundTasks()
        let (supervisor, source, reconnects) = holdingATask(tasks)
        supervisor.stop()
        supervisor.waitUntilIdle()
        #expect(source.stopped)
        #expect(tasks.held.isEmpty)
        supervisor.report(.enteringForeground)  // late: ignored
        supervisor.waitUntilIdle()
        #expect(reconnects.withLock { $0 } == 0)
    }

    @Test func withoutBackgroundTasksWritesAreNotCounted() {
        let (supervisor, source, reconnects) = supervisor(tasks: nil)
        #expect(!supervisor.tracksWrites)
        supervisor.writeStarted()
        source.send(.enteredBackground)
        source.send(.enteringForeground)
        supervisor.waitUntilIdle()
        #expect(reconnects.withLock { $0 } == 1)  // macOS: reconnects all the same
    }

    // MARK: Through a client database

    /// A client of the shared test server in a namespace of its own, with
    /// the test's source and background tasks.
    private func client(_ source: TestLifecycleSource, _ tasks: TestBackgroundTasks?) -> Database {
        let database = Database(
            url: "http://127.0.0.1:\(sharedServer.port)?ns=lifecycle-\(UUID().uuidString.prefix(8))")
        database.callbackQueue = DispatchQueue(label: "hearth.tests.lifecycle")
        database.useLifecycle(sources: [source], backgroundTasks: tasks)
        return database
    }

    /// Writes made offline hold a task once the app is in the background;
    /// it ends when the server has acknowledged the last of them (a set
    /// without a completion, one with, and a transaction).
    @Test func aClientHoldsATaskUntilTheServerAcknowledges() async throws {
        let source = TestLifecycleSource()
        let tasks = TestBackgroundTasks()
        let database = client(source, tasks)
        let ref = database.reference().child("drain")
        database.goOffline()
        #expect(source.started)
        sync { ref.child("a").setValue(1) }
        let acknowledged = Recorder<Bool>()
        sync { ref.child("b").setValue(2) { error, _ in acknowledged.append(error == nil) } }
        sync {
            ref.child("n").runTransactionBlock { data in
                data.value = ((data.value as? Int) ?? 0) + 1
                return .success(withValue: data)
            } andCompletionBlock: { error, committed, _ in
                acknowledged.append(error == nil && committed)
            }
        }
        source.send(.enteredBackground)
        try await tasks.calls.wait(for: 1)
        #expect(tasks.calls.all == [.begin(1)])
        database.goOnline()
        try await tasks.calls.wait(for: 2)
        #expect(tasks.calls.all == [.begin(1), .end(1)])
        #expect(try await acknowledged.wait(for: 2) == [true, true])
        // All three reached the server.
        let other = Database(url: database.url)
        other.callbackQueue = DispatchQueue(label: "hearth.tests.lifecycle.other")
        let value = try await other.reference().child("drain").getData().value as? [String: Int]
        #expect(value == ["a": 1, "b": 2, "n": 1])
    }

    /// The network's return reaches the C client (hearth_db_reconnect_now
    /// answers 0 for a client); an embedded database has no supervisor.
    @Test func aClientIsSupervisedAndAnEmbeddedOneIsNot() throws {
        let source = TestLifecycleSource()
        let database = client(source, nil)
        _ = database.handle
        #expect(source.started)
        #expect(database.reconnectNow() == 0)
        let embedded = Database(url: "memory:lifecycle-\(UUID().uuidString.prefix(8))")
        let unused = TestLifecycleSource()
        embedded.useLifecycle(sources: [unused], backgroundTasks: TestBackgroundTasks())
        _ = embedded.handle
        #expect(!unused.started)
        #expect(embedded.countWrite() == nil)
    }

    /// The network's return makes a client waiting out its backoff
    /// connect at once (through `hearth_db_reconnect_now`). A listener of
    /// the test's own takes each attempt and closes it: 5 returns of the
    /// network bring 5 more attempts within 2.5 s of the first, where the
    /// backoff alone (from 0.5-1 s, growing by 1.3) allows 3 more at most.
    /// (The network's report is repeated until the attempt comes: the
    /// client may not have seen the last one fail yet.)
    @Test func theNetworksReturnReconnectsAClientAtOnce() async throws {
        let listener = try ClosingListener()
        defer { listener.stop() }
        let source = TestLifecycleSource()
        let database = Database(url: "http://127.0.0.1:\(listener.port)?ns=back")
        database.callbackQueue = DispatchQueue(label: "hearth.tests.lifecycle.back")
        database.useLifecycle(sources: [source], backgroundTasks: nil)
        _ = database.handle  // the first attempt
        try await listener.attempts.wait(for: 1)
        let first = ContinuousClock.now
        for wanted in 2...6 {
            while listener.attempts.all.count < wanted && ContinuousClock.now - first < .seconds(5) {
                source.send(.networkPath(satisfied: false))
                source.send(.networkPath(satisfied: true))
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        #expect(listener.attempts.all.count >= 6)
        #expect(ContinuousClock.now - first < .seconds(2.5))
    }

    /// The supervisor goes with its database: its sources stop.
    @Test func closingStopsTheSources() async throws {
        let source = TestLifecycleSource()
        var database: Database? = client(source, TestBackgroundTasks())
        _ = database?.handle
        #expect(source.started)
        database = nil
        #expect(source.stopped)
    }
}

/// A TCP listener on a free loopback port that takes each connection and
/// closes it at once, recording when it came.
final class ClosingListener: @unchecked Sendable {
    // @unchecked Sendable: `fd` and `port` are set in init; the thread
    // only reads them.
    let port: Int
    let attempts = Recorder<ContinuousClock.Instant>()
    private let fd: Int32
    private let stopped = Locked(false)

    struct Failure: Error { let call: String }

    init() throws {
        #if canImport(Glibc)
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(call: "socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 16) == 0
                    && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw Failure(call: "bind")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                if connection < 0 || stopped.withLock({ $0 }) { break }
                close(connection)
                attempts.append(.now)
            }
        }
    }

    /// Stops taking connections (the accepting thread ends on its next).
    func stop() {
        stopped.withLock { $0 = true }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
