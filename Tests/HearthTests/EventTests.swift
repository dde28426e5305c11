import Foundation
import Testing

@testable import Hearth

@Suite("Observers")
struct EventTests {
    let database = makeDatabase()

    @Test func valueFiresAtOnceAndOnChange() async throws {
        let ref = database.reference().child("counter")
        try await ref.setValue(1)
        let values = Recorder<String>()
        let handle = ref.observe(.value) { values.append($0.json) }
        #expect(handle != 0)
        try await values.wait(for: 1)
        sync { ref.setValue(2) }
        sync { ref.setValue(["nested": true]) }
        let seen = try await values.wait(for: 3)
        #expect(seen == ["1", "2", #"{"nested":true}"#])
        ref.removeObserver(withHandle: handle)
    }

    @Test func valueOfAnEmptyLocationFiresWithNull() async throws {
        let values = Recorder<Bool>()
        database.reference().child("nothing/here").observe(.value) { values.append($0.exists()) }
        #expect(try await values.wait(for: 1) == [false])
    }

    @Test func callbacksRunOnTheCallbackQueue() async throws {
        let queue = DispatchQueue(label: "hearth.tests.custom")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        database.callbackQueue = queue
        let onQueue = Recorder<Bool>()
        let ref = database.reference().child("q")
        ref.observe(.value) { _ in onQueue.append(DispatchQueue.getSpecific(key: key) == 7) }
        ref.setValue(1) { _, _ in onQueue.append(DispatchQueue.getSpecific(key: key) == 7) }
        // Embedded: value null, value 1, completion. A client shows its own
        // write first (the server's null never arrives before it).
        #expect(try await onQueue.wait(for: againstServer ? 2 : 3).allSatisfy { $0 })
    }

    @Test func childEventsCarryPreviousSiblingKeys() async throws {
        let list = database.reference().child("list")
        try await list.setValue(["a": 1, "b": 2])
        let events = Recorder<String>()
        for type in [DataEventType.childAdded, .childChanged, .childRemoved] {
            list.observe(type, andPreviousSiblingKeyWith: { snapshot, previous in
                events.append("\(type) \(snapshot.key) \(previous ?? "nil") \(snapshot.json)")
            })
        }
        try await events.wait(for: 2)
        sync { list.child("c").setValue(3) }
        sync { list.child("a").setValue(10) }
        sync { list.child("b").removeValue() }
        let seen = try await events.wait(for: 5)
        #expect(
            seen == [
                "childAdded a nil 1", "childAdded b a 2", "childAdded c b 3", "childChanged a nil 10",
                "childRemoved b nil 2",
            ])
    }

    @Test func childMovedWhenTheOrderChanges() async throws {
        let scores = database.reference().child("scores")
        try await scores.setValue(["ann": 1, "bob": 2, "cy": 3])
        let moves = Recorder<String>()
        scores.queryOrderedByValue().observe(.childMoved, andPreviousSiblingKeyWith: { snapshot, previous in
            moves.append("\(snapshot.key) after \(previous ?? "nil")")
        })
        try await settle(database)
        sync { scores.child("ann").setValue(5) }
        #expect(try await moves.wait(for: 1) == ["ann after cy"])
    }

    @Test func observeSingleEventFiresOnce() async throws {
        let ref = database.reference().child("once")
        try await ref.setValue("first")
        let values = Recorder<String>()
        ref.observeSingleEvent(of: .value) { values.append($0.value as? String ?? "?") }
        try await values.wait(for: 1)
        try await ref.setValue("second")
        try await settle(database)
        #expect(values.all == ["first"])

        let added = Recorder<String>()
        try await ref.setValue(["x": 1, "y": 2])
        ref.observeSingleEvent(of: .childAdded, andPreviousSiblingKeyWith: { snapshot, previous in
            added.append("\(snapshot.key) \(previous ?? "nil")")
        })
        try await added.wait(for: 1)
        try await settle(database)
        #expect(added.all == ["x nil"])
    }

    @Test func removeObserverStopsEvents() async throws {
        let ref = database.reference().child("stop")
        let values = Recorder<String>()
        let handle = ref.observe(.value) { values.append($0.json) }
        try await values.wait(for: 1)
        ref.removeObserver(withHandle: handle)
        try await ref.setValue("after")
        try await settle(database)
        #expect(values.all == ["null"])

        // Removing events already queued for the callback queue drops them.
        let blocked = Recorder<String>()
        let gate = DispatchSemaphore(value: 0)
        database.callbackQueue.async { gate.wait() }
        let handle2 = ref.observe(.value) { blocked.append($0.json) }
        try await ref.setValue("queued")
        _ = try await ref.getData()
        ref.removeObserver(withHandle: handle2)
        gate.signal()
        try await settle(database)
        #expect(blocked.all.isEmpty)
    }

    @Test func removeAllObserversAtALocation() async throws {
        let ref = database.reference().child("all")
        let here = Recorder<String>()
        let below = Recorder<String>()
        ref.observe(.value) { here.append("value \($0.json)") }
        ref.observe(.childAdded) { here.append("added \($0.key)") }
        ref.queryLimited(toFirst: 1).observe(.value) { here.append("query \($0.json)") }
        ref.child("x").observe(.value) { below.append($0.json) }
        try await settle(database)
        let before = here.all.count
        ref.removeAllObservers()
        try await ref.setValue(["x": 1])
        try await below.wait(for: 2)
        try await settle(database)
        #expect(here.all.count == before)

        // On a query, only that query's observers go.
        let query = ref.queryOrderedByKey().queryLimited(toLast: 1)
        let plain = Recorder<String>()
        let limited = Recorder<String>()
        ref.observe(.value) { plain.append($0.json) }
        query.observe(.value) { limited.append($0.json) }
        try await settle(database)
        query.removeAllObservers()
        try await ref.setValue(["y": 2])
        try await plain.wait(for: 2)
        try await settle(database)
        #expect(limited.all.count == 1)
    }

    @Test func asyncValuesSequence() async throws {
        let ref = database.reference().child("stream")
        try await ref.setValue(0)
        var seen: [Int] = []
        for try await snapshot in ref.values {
            let value = snapshot.value as? Int ?? -1
            seen.append(value)
            if value == 3 { break }
            sync { ref.setValue(value + 1) }
        }
        #expect(seen == [0, 1, 2, 3])
        // Ending the loop removed the observer.
        try await settle(database)
        let left = database.stateObserverCount
        #expect(left == 0)
    }

    @Test func childEventStream() async throws {
        let ref = database.reference().child("events")
        try await ref.setValue(["a": 1])
        var iterator = ref.events(.childAdded).makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.snapshot.key == "a")
        #expect(first?.previousSiblingKey == nil)
        sync { ref.child("b").setValue(2) }
        let second = try await iterator.next()
        #expect(second?.snapshot.key == "b")
        #expect(second?.previousSiblingKey == "a")
    }

    @Test func closingTheDatabaseEndsStreamsAndReleasesObservers() async throws {
        var database: Database? = makeDatabase()
        var iterator = database!.reference().child("x").values.makeAsyncIterator()
        let observed = Recorder<String>()
        database!.reference().observe(.value) { observed.append($0.json) }
        try await observed.wait(for: 1)
        #expect(try await iterator.next()?.exists() == false)
        database = nil  // closes: observers are released, streams end
        #expect(try await iterator.next() == nil)
    }
}

extension Database {
    /// Observers still registered (for tests).
    var stateObserverCount: Int { observerCount }
}
