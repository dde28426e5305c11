import Foundation
import Testing

@testable import Hearth

/// Task cancellation reaches the async API: a cancelled `firstEvent`
/// throws `CancellationError` and a cancelled iteration of `values` or
/// `events` ends, and in each case the observer is gone from the C core
/// (proved after a round trip through the database, not after a sleep).
@Suite("Task cancellation")
struct CancellationTests {
    /// Waits until the database holds `count` observers (a registration
    /// made by another task): polls for a state that is to come.
    private func waitForObservers(_ database: Database, _ count: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while database.observerCount != count {
            guard ContinuousClock.now < deadline else {
                throw Timeout(waitingFor: count, got: database.observerCount)
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// The task's end, or nil when it has not ended in 10 s (the task is
    /// then left waiting: a cancellation that was not honoured).
    private func ending<Success: Sendable>(
        _ task: Task<Success, any Error>
    ) async -> Result<Success, any Error>? {
        let ended = Recorder<Result<Success, any Error>>()
        Task { ended.append(await task.result) }
        return try? await ended.wait(for: 1).first
    }

    @Test func cancellingFirstEventThrowsAndRemovesItsObserver() async throws {
        let database = makeDatabase()
        // No child is ever added: only cancellation can end the wait.
        let ref = database.reference().child("never")
        let task = Task { try await ref.firstEvent(.childAdded) }
        try await waitForObservers(database, 1)
        task.cancel()
        let result = try #require(await ending(task), "firstEvent ignored its task's cancellation")
        #expect(throws: CancellationError.self) { try result.get() }
        try await settle(database)  // the removal reached C and C let go
        #expect(database.observerCount == 0)
    }

    @Test func firstEventInACancelledTaskRegistersNothingForLong() async throws {
        let database = makeDatabase()
        let ref = database.reference().child("never")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await ref.firstEvent(.childAdded)
        }
        let result = try #require(await ending(task), "firstEvent ignored its task's cancellation")
        #expect(throws: CancellationError.self) { try result.get() }
        try await settle(database)
        #expect(database.observerCount == 0)
    }

    @Test func cancellingAValuesIterationRemovesItsObserver() async throws {
        let database = makeDatabase()
        let ref = database.reference().child("v")
        let seen = Recorder<Bool>()
        let task = Task {
            for try await snapshot in ref.values { seen.append(snapshot.exists()) }
        }
        try await seen.wait(for: 1)  // iterating: suspended for the next value
        #expect(database.observerCount == 1)
        task.cancel()
        #expect(await ending(task) != nil, "the values iteration ignored its task's cancellation")
        try await settle(database)
        #expect(database.observerCount == 0)
        // A write after the cancellation reaches no one.
        try await ref.setValue(1)
        try await settle(database)
        #expect(seen.all == [false])
    }

    @Test func cancellingAnEventsIterationRemovesItsObserver() async throws {
        let database = makeDatabase()
        let ref = database.reference().child("e")
        try await ref.child("a").setValue(1)
        let seen = Recorder<String>()
        let task = Task {
            for try await event in ref.events(.childAdded) { seen.append(event.snapshot.key) }
        }
        try await seen.wait(for: 1)
        #expect(database.observerCount == 1)
        task.cancel()
        #expect(await ending(task) != nil, "the events iteration ignored its task's cancellation")
        try await settle(database)
        #expect(database.observerCount == 0)
        try await ref.child("b").setValue(2)
        try await settle(database)
        #expect(seen.all == ["a"])
    }

    @Test func leavingAValuesIterationEarlyRemovesItsObserver() async throws {
        let database = makeDatabase()
        let ref = database.reference().child("b")
        for try await snapshot in ref.values where !snapshot.exists() { break }
        try await settle(database)
        #expect(database.observerCount == 0)
    }

    @Test func aStreamMadeInACancelledTaskRegistersNothingForLong() async throws {
        let database = makeDatabase()
        let ref = database.reference().child("v")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var count = 0
            for try await _ in ref.values { count += 1 }
            return count
        }
        let result = try #require(await ending(task), "the values iteration ignored its task's cancellation")
        _ = try result.get()  // ended, with or without the first value
        try await settle(database)
        #expect(database.observerCount == 0)
    }
}
