import Foundation
import Testing

@testable import Hearth
import HearthServer

/// The threading contract of the blocks an app hands over: one at a time,
/// on the callback queue, whatever queue the app set; and credentials
/// that stay as the app last set them.
@Suite("Threading")
struct ThreadingTests {
    /// A concurrent callbackQueue still runs blocks one at a time, in
    /// order: the SDK's blocks are plain closures that may share state.
    @Test func concurrentCallbackQueueRunsBlocksOneAtATime() async throws {
        let database = Database(url: "memory:threading-\(UUID().uuidString.prefix(8))")
        database.callbackQueue = DispatchQueue(label: "hearth.tests.concurrent", attributes: .concurrent)
        let inside = Locked(0)
        let overlaps = Locked(0)
        let finished = Recorder<Int>()
        let ref = database.reference(withPath: "n")
        func enter() {
            let others = inside.withLock { count -> Int in
                defer { count += 1 }
                return count
            }
            if others > 0 { overlaps.withLock { $0 += 1 } }
            usleep(2000)  // a block that takes a while, so overlaps would show
            inside.withLock { $0 -= 1 }
        }
        ref.observe(.value) { _ in enter() }
        for i in 0..<20 {
            ref.setValue(i) { _, _ in
                enter()
                finished.append(i)
            }
        }
        let order = try await finished.wait(for: 20)
        #expect(overlaps.withLock { $0 } == 0)
        #expect(order == Array(0..<20))
    }

    /// A value stream that keeps only the newest snapshot hands a late
    /// consumer the latest value, not a backlog.
    @Test func newestOnlyValuesSkipStaleSnapshots() async throws {
        let database = makeDatabase()
        let ref = database.reference(withPath: "latest")
        let stream = ref.values(bufferingPolicy: .bufferingNewest(1))
        for i in 1...5 { try await ref.setValue(i) }
        try await settle(database)  // every event raised before iterating
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next()?.value as? Int == 5)
    }

    /// A token provider's answer that arrives after `setAuthToken(nil)`
    /// does not sign the user back in.
    @Test func providerAnsweringAfterSignOutIsIgnored() async throws {
        let scratch = TemporaryDirectory("hearth-swift-threading")
        let server = try securedServer(in: scratch, "data")
        defer { server.stop() }
        let database = Database(url: "http://127.0.0.1:\(server.port)?ns=provider")
        database.callbackQueue = DispatchQueue(label: "hearth.tests.provider")
        let answers = Recorder<Bool>()
        database.observeProviderAnswers { answers.append($0) }

        let asked = Recorder<Bool>()
        let (gate, open) = AsyncStream<Void>.makeStream()
        let token = try HearthServer.makeToken(uid: "ada", secret: "s3cret")
        database.setAuthTokenProvider {
            asked.append(true)
            for await _ in gate { break }
            return token
        }
        database.goOnline()  // opens the database: it connects and asks
        try await asked.wait(for: 1)
        database.setAuthToken(nil)
        open.yield()
        #expect(try await answers.wait(for: 1) == [false])
        // Barrier: a write after the answer, judged as nobody.
        await #expect(throws: (any Error).self) {
            try await database.reference(withPath: "private/ada").setValue("signed out")
        }
    }
}
