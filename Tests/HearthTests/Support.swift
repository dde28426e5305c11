import Foundation
import Testing

@testable import Hearth
import HearthServer

/// A fresh database whose callbacks run on a private serial queue, so
/// tests never need the main queue: an in-memory embedded database, or,
/// with HEARTH_TEST_SERVER=1 in the environment, a client of a real server
/// (one per test process, on a free loopback port) in a namespace of its
/// own, so that the same tests check the client against a server.
func makeDatabase(_ name: String = #function) -> Database {
    let unique = "test-\(UUID().uuidString.prefix(13))"
    let url =
        againstServer
        ? "http://127.0.0.1:\(sharedServer.port)?ns=\(unique)"
        : "memory:\(unique)-\(name)"
    let database = Database(url: url)
    database.callbackQueue = DispatchQueue(label: "hearth.tests.\(name)")
    return database
}

/// Whether this run checks the client against a server.
let againstServer = ProcessInfo.processInfo.environment["HEARTH_TEST_SERVER"] == "1"

/// The server of a run against a server, started on first use; its data
/// goes when the test process exits.
let sharedServer: HearthServer = {
    do {
        let server = try HearthServer(
            .init(port: 0, dataDirectory: sharedServerDirectory.path + "/data", fsync: .off))
        atexit { try? FileManager.default.removeItem(atPath: sharedServerDirectory.path) }
        return server
    } catch {
        fatalError("cannot start the test server: \(error)")
    }
}()
private let sharedServerDirectory = TemporaryDirectory("hearth-swift-tests")

/// A server whose rules let each user read and write `private/<uid>`
/// only, taking tokens signed with "s3cret"; its files in `scratch/name`.
func securedServer(in scratch: TemporaryDirectory, _ name: String) throws -> HearthServer {
    let rulesFile = scratch.path + "/\(name)-rules.json"
    try #"{"rules": {"private": {"$uid": {".read": "auth.uid == $uid", ".write": "auth.uid == $uid"}}}}"#
        .write(toFile: rulesFile, atomically: true, encoding: .utf8)
    return try HearthServer(.init(
        port: 0, dataDirectory: scratch.path + "/" + name, fsync: .off, rulesFile: rulesFile,
        authSecret: "s3cret"))
}

/// A new directory in the temporary directory, removed with all it holds
/// when this goes away (a test's servers keep their data inside it).
final class TemporaryDirectory: Sendable {
    let path: String

    init(_ prefix: String) {
        path = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString)"
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            fatalError("cannot create \(path): \(error)")
        }
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

struct Timeout: Error, CustomStringConvertible {
    let waitingFor: Int
    let got: Int
    var description: String { "timed out waiting for \(waitingFor) events (got \(got))" }
}

/// Collects events from callbacks (any thread) and lets a test wait for a
/// number of them with a timeout.
final class Recorder<Element: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: all state is behind `lock`.
    private let lock = NSLock()
    private var elements: [Element] = []
    private var waiters: [UUID: (count: Int, continuation: CheckedContinuation<Bool, Never>)] = [:]

    func append(_ element: Element) {
        lock.lock()
        elements.append(element)
        let count = elements.count
        var ready: [CheckedContinuation<Bool, Never>] = []
        for (id, waiter) in waiters where waiter.count <= count {
            ready.append(waiter.continuation)
            waiters[id] = nil
        }
        lock.unlock()
        for continuation in ready { continuation.resume(returning: true) }
    }

    var all: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return elements
    }

    /// Waits until at least `count` elements arrived; returns all of them.
    @discardableResult
    func wait(for count: Int, timeout: Duration = .seconds(10)) async throws -> [Element] {
        let reached = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.reach(count) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        let elements = all
        if !reached && elements.count < count {
            throw Timeout(waitingFor: count, got: elements.count)
        }
        return elements
    }

    private func reach(_ count: Int) async -> Bool {
        let id = UUID()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                lock.lock()
                if elements.count >= count || Task.isCancelled {
                    let reached = elements.count >= count
                    lock.unlock()
                    continuation.resume(returning: reached)
                    return
                }
                waiters[id] = (count, continuation)
                lock.unlock()
            }
        } onCancel: {
            lock.lock()
            let waiter = waiters.removeValue(forKey: id)
            lock.unlock()
            waiter?.continuation.resume(returning: false)
        }
    }
}

/// Waits until every write made before has been applied and every callback
/// it caused has run on the database's callback queue (on its serial
/// queue, which the blocks run on).
func settle(_ database: Database) async throws {
    _ = try await database.reference().child("settle-barrier").getData()
    let queue = database.callbacks
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        queue.async { continuation.resume() }
    }
}

/// The JSON text of a snapshot, to compare exact types (true vs 1).
func json(_ snapshot: DataSnapshot) -> String {
    snapshot.json
}

/// Runs `body` as synchronous code. In an async context Swift prefers the
/// async overloads (`try await ref.setValue(x)`), as with the SDK; the
/// fire-and-forget forms are called from synchronous code.
func sync(_ body: () -> Void) {
    body()
}
