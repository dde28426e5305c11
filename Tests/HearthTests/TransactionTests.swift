import Foundation
import Testing

@testable import Hearth

/// Adds one to the number in `data` (0 when there is none) and commits.
/// Waits for the transactions queued at ref: one more, changing nothing,
/// runs after them (against a server, once they are acknowledged), where a
/// get alone may be answered in between. Its snapshot: the value then.
private func afterTransactions(at ref: DatabaseReference) async throws -> DataSnapshot {
    let (committed, snapshot) = try await ref.runTransactionBlock { .success(withValue: $0) }
    #expect(committed)
    return snapshot
}

private func increment(_ data: MutableData) -> TransactionResult {
    data.value = ((data.value as? Int) ?? 0) + 1
    return .success(withValue: data)
}

@Suite("Transactions")
struct TransactionTests {
    let database = makeDatabase()

    @Test func concurrentAsyncIncrementsAreAtomic() async throws {
        let ref = database.reference().child("counter")
        let results = try await withThrowingTaskGroup(of: [(Bool, Int)].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var seen: [(Bool, Int)] = []
                    for _ in 0..<100 {
                        let (committed, snapshot) = try await ref.runTransactionBlock(increment)
                        seen.append((committed, snapshot.value as? Int ?? -1))
                    }
                    return seen
                }
            }
            var all: [(Bool, Int)] = []
            for try await seen in group { all += seen }
            return all
        }
        #expect(results.count == 800)
        #expect(results.allSatisfy { $0.0 })
        // Each transaction saw a value no other one saw: 1...800, once each.
        #expect(results.map { $0.1 }.sorted() == Array(1...800))
        #expect(try await ref.getData().value as? Int == 800)
    }

    @Test func concurrentCompletionBlockIncrementsFromThreads() async throws {
        let ref = database.reference().child("threads")
        let queueKey = DispatchSpecificKey<Int>()
        database.callbackQueue.setSpecific(key: queueKey, value: 1)
        let results = Recorder<String>()
        let blockPlaces = Recorder<String>()
        let start = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                for _ in 0..<100 {
                    ref.runTransactionBlock({ data in
                        if DispatchQueue.getSpecific(key: queueKey) != nil {
                            blockPlaces.append("callback queue")
                        }
                        if Thread.isMainThread { blockPlaces.append("main thread") }
                        return increment(data)
                    }, andCompletionBlock: { error, committed, snapshot in
                        let onQueue = DispatchQueue.getSpecific(key: queueKey) == 1
                        results.append("\(error == nil) \(committed) \(snapshot != nil) \(onQueue)")
                    })
                }
            }
            start.signal()
        }
        let all = try await results.wait(for: 800, timeout: .seconds(30))
        #expect(all.count == 800)
        #expect(Set(all) == ["true true true true"])
        #expect(blockPlaces.all.isEmpty)
        #expect(try await ref.getData().value as? Int == 800)
        start.wait()
    }

    @Test func blockRunsOnceWithTheCurrentValue() async throws {
        let ref = database.reference().child("once")
        var calls = 0
        var firstValue: String?
        let (committed, snapshot) = try await ref.runTransactionBlock { data in
            calls += 1
            firstValue = "\(data.value is NSNull) \(data.key ?? "nil")"
            data.value = ["n": 1, "s": "x"]
            return .success(withValue: data)
        }
        #expect(calls == 1)
        #expect(firstValue == "true nil")
        #expect(committed)
        #expect(snapshot.json == #"{"n":1,"s":"x"}"#)
        #expect(snapshot.key == "once")
        #expect(try await ref.getData().json == #"{"n":1,"s":"x"}"#)
    }

    @Test func abortLeavesTheValueAndReportsNotCommitted() async throws {
        let ref = database.reference().child("abort")
        try await ref.setValue("keep")
        let log = Recorder<String>()
        ref.observe(.value) { log.append("value \($0.json)") }
        try await log.wait(for: 1)

        ref.runTransactionBlock({ data in
            data.value = "changed, then abandoned"
            return .abort()
        }, andCompletionBlock: { error, committed, snapshot in
            log.append("done \(error == nil) \(committed) \(snapshot?.json ?? "nil")")
        })
        #expect(try await log.wait(for: 2) == [#"value "keep""#, #"done true false "keep""#])

        let (committed, snapshot) = try await ref.runTransactionBlock { _ in TransactionResult() }
        #expect(!committed)
        #expect(snapshot.value as? String == "keep")
        let (committedAgain, _) = try await ref.runTransactionBlock { _ in TransactionResult.abort() }
        #expect(!committedAgain)

        try await settle(database)
        #expect(log.all.count == 2)  // no value event for aborted transactions
        #expect(try await ref.getData().value as? String == "keep")
    }

    @Test func invalidResultFailsAndChangesNothing() async throws {
        let ref = database.reference().child("invalid")
        try await ref.setValue(["a": 1])
        let log = Recorder<String>()
        ref.observe(.value) { log.append("value \($0.json)") }
        try await log.wait(for: 1)

        ref.runTransactionBlock({ data in
            data.value = ["bad.key": 1]
            return .success(withValue: data)
        }, andCompletionBlock: { error, committed, snapshot in
            let code = (error as? HearthError)?.code.name ?? "none"
            log.append("done \(code) \(committed) \(snapshot?.json ?? "nil")")
            log.append((error as? HearthError)?.message ?? "no message")
        })
        let seen = try await log.wait(for: 3)
        #expect(seen.prefix(2) == [#"value {"a":1}"#, #"done HEARTH_EKEY false {"a":1}"#])
        #expect(seen.last?.contains("bad.key") == true)  // the message names the key

        // The async form throws the same kind of error.
        let failures: [(HearthError.Code, (MutableData) -> Void)] = [
            (.invalidKey, { $0.childData(byAppendingPath: "x").value = ["ok": ["no.dots": true]] }),
            (.invalidValue, { $0.value = ["when": Date()] }),
            (.invalidNumber, { $0.value = Double.infinity }),
            (.invalidPriority, { $0.priority = ["not": "a priority"] }),
            // A later valid write does not hide an earlier failure.
            (.invalidKey, { data in
                data.value = ["a$": 1]
                data.value = ["fine": 2]
            }),
        ]
        for (code, change) in failures {
            do {
                _ = try await ref.runTransactionBlock { data in
                    change(data)
                    return .success(withValue: data)
                }
                Issue.record("expected \(code)")
            } catch let error as HearthError {
                #expect(error.code == code)
            }
        }

        // An unsupported type is named with the location it was going to.
        do {
            _ = try await ref.runTransactionBlock { data in
                data.childData(byAppendingPath: "x").value = ["when": Date()]
                return .success(withValue: data)
            }
            Issue.record("expected an unsupported type error")
        } catch let error as HearthError {
            #expect(error.message.contains("Date"))
            #expect(error.message.contains("/invalid/x/when"), "\(error.message)")
        }

        // Too deep counting the location's own depth: refused by the core.
        var deep: Any = "leaf"
        for _ in 0..<32 { deep = ["d": deep] }
        await #expect(throws: HearthError.self) {
            _ = try await ref.runTransactionBlock { data in
                data.value = deep
                return .success(withValue: data)
            }
        }

        try await settle(database)
        #expect(log.all.count == 3)
        #expect(try await ref.getData().json == #"{"a":1}"#)
    }

    @Test func invalidLocationFailsAtOnce() async throws {
        let ref = database.reference().child(".info/x")
        var ran = false
        await #expect(throws: HearthError.self) {
            _ = try await ref.runTransactionBlock { data in
                ran = true
                return .success(withValue: data)
            }
        }
        #expect(!ran)
        let done = Recorder<String>()
        ref.runTransactionBlock(
            { .success(withValue: $0) },
            andCompletionBlock: { error, committed, snapshot in
                let code = (error as? HearthError)?.code.name ?? "none"
                done.append("\(code) \(committed) \(snapshot == nil)")
            })
        #expect(try await done.wait(for: 1) == ["HEARTH_EREADONLY false true"])
    }

    @Test(.enabled(if: !againstServer, "records each run of the block: it runs once only on an embedded database"))
    func mutableDataChildrenWriteThrough() async throws {
        let ref = database.reference().child("tree")
        try await ref.setValue([
            "a": ["x": 1, "y": 2],
            "b": ".priority-less",
            "c": ["deep": ["er": true]],
        ])
        var notes: [String] = []
        let (committed, snapshot) = try await ref.runTransactionBlock { data in
            notes.append("count \(data.childrenCount) \(data.hasChildren())")
            let a = data.childData(byAppendingPath: "a")
            notes.append("a.key \(a.key ?? "nil")")
            a.childData(byAppendingPath: "x").value = 10
            data.childData(byAppendingPath: "a/z").value = "new"
            data.childData(byAppendingPath: "b").value = nil
            data.childData(byAppendingPath: "/c//deep/").childData(byAppendingPath: "er").value = false
            // The parent sees its children's writes at once.
            let a2 = data.value as? [String: Any]
            let x = (a2?["a"] as? [String: Any])?["x"] as? Int
            notes.append("x \(x ?? -1)")
            notes.append("b \(data.hasChild(atPath: "b")) a/z \(data.hasChild(atPath: "a/z"))")
            notes.append("c/deep/er \(data.childData(byAppendingPath: "c/deep/er").value as? Bool ?? true)")
            // Priorities order the children.
            data.childData(byAppendingPath: "c").priority = 1
            data.childData(byAppendingPath: "a").priority = 2
            notes.append("a.priority \(a.priority as? Int ?? -1)")
            var keys: [String] = []
            for case let child as MutableData in data.children {
                keys.append(child.key ?? "nil")
            }
            notes.append("order \(keys.joined(separator: ","))")
            let missing = data.childData(byAppendingPath: "nothing/here")
            notes.append(
                "missing \(missing.value is NSNull) \(missing.priority is NSNull) "
                    + "\(missing.hasChildren()) \(missing.childrenCount) \(missing.key ?? "nil")")
            // A priority on a location without data is dropped, as in the SDK.
            missing.priority = 5
            notes.append("missing priority \(missing.priority is NSNull)")
            return .success(withValue: data)
        }
        #expect(
            notes == [
                "count 3 true", "a.key a", "x 10", "b false a/z true", "c/deep/er false",
                "a.priority 2", "order c,a", "missing true true false 0 here", "missing priority true",
            ])
        #expect(committed)
        #expect(snapshot.json == #"{"a":{"x":10,"y":2,"z":"new"},"c":{"deep":{"er":false}}}"#)
        let exported = try await ref.getData().valueInExportFormat() as? NSDictionary
        #expect((exported?["a"] as? NSDictionary)?[".priority"] as? Int == 2)
        #expect((exported?["c"] as? NSDictionary)?[".priority"] as? Int == 1)
    }

    @Test func priorityAndValueOfTheTransactionRoot() async throws {
        let ref = database.reference().child("prio")
        try await ref.setValue("v", andPriority: "p")
        var seen = ""
        _ = try await ref.runTransactionBlock { data in
            seen = "\(data.value as? String ?? "?") \(data.priority as? String ?? "?")"
            data.priority = 7
            return .success(withValue: data)
        }
        #expect(seen == "v p")
        let after = try await ref.getData()
        #expect(after.value as? String == "v")
        #expect(after.priority as? Int == 7)
        // Setting the value replaces the priority with the value's own.
        _ = try await ref.runTransactionBlock { data in
            data.value = "w"
            return .success(withValue: data)
        }
        #expect(try await ref.getData().priority is NSNull)
        // A dictionary may carry .value and .priority.
        _ = try await ref.runTransactionBlock { data in
            data.value = [".value": 3, ".priority": "q"] as [String: Any]
            return .success(withValue: data)
        }
        let last = try await ref.getData()
        #expect(last.value as? Int == 3)
        #expect(last.priority as? String == "q")
    }

    @Test func returningAChildViewCommitsThatChild() async throws {
        let ref = database.reference().child("pick")
        try await ref.setValue(["inner": ["k": "v"], "other": 1])
        let (committed, snapshot) = try await ref.runTransactionBlock { data in
            .success(withValue: data.childData(byAppendingPath: "inner"))
        }
        #expect(committed)
        #expect(snapshot.json == #"{"k":"v"}"#)

        // A MutableData of its own can be committed too.
        _ = try await ref.runTransactionBlock { _ in
            let fresh = MutableData()
            fresh.value = ["made": "here"]
            return .success(withValue: fresh)
        }
        #expect(try await ref.getData().json == #"{"made":"here"}"#)
    }

    @Test func deletingThroughATransaction() async throws {
        let ref = database.reference().child("del")
        try await ref.setValue(["a": 1])
        let (committed, snapshot) = try await ref.runTransactionBlock { data in
            data.value = nil
            return .success(withValue: data)
        }
        #expect(committed)
        #expect(!snapshot.exists())
        #expect(!(try await ref.getData().exists()))
    }

    @Test func serverValuesAreResolved() async throws {
        let ref = database.reference().child("sv")
        try await ref.setValue(["count": 5])
        let before = Date().timeIntervalSince1970 * 1000
        let (_, snapshot) = try await ref.runTransactionBlock { data in
            data.childData(byAppendingPath: "count").value = ServerValue.increment(2)
            data.childData(byAppendingPath: "at").value = ServerValue.timestamp()
            return .success(withValue: data)
        }
        #expect(snapshot.childSnapshot(forPath: "count").value as? Int == 7)
        let at = try #require(snapshot.childSnapshot(forPath: "at").value as? Double)
        #expect(at >= before.rounded(.down) - 1000)
    }

    @Test(arguments: [false, true])
    func localEventsAreAlwaysRaised(localEvents: Bool) async throws {
        let ref = database.reference().child("events-\(localEvents)")
        let log = Recorder<String>()
        ref.observe(.value) { log.append("value \($0.json)") }
        try await log.wait(for: 1)
        ref.runTransactionBlock(
            increment,
            andCompletionBlock: { error, committed, snapshot in
                log.append("done \(error == nil) \(committed) \(snapshot?.json ?? "nil")")
            }, withLocalEvents: localEvents)
        // The write's event, then the completion, on the callback queue.
        #expect(try await log.wait(for: 3) == ["value null", "value 1", "done true true 1"])
    }

    @Test func fireAndForgetForm() async throws {
        let ref = database.reference().child("forget")
        sync {
            ref.runTransactionBlock(increment)
            ref.runTransactionBlock(increment)
            // A failure without a completion block is logged, not raised.
            ref.runTransactionBlock { data in
                data.value = ["bad.key": true]
                return .success(withValue: data)
            }
        }
        #expect(try await afterTransactions(at: ref).value as? Int == 2)
        #expect(try await ref.getData().value as? Int == 2)
    }

    @Test func mixesWithPlainWritesInOrder() async throws {
        let ref = database.reference().child("mixed")
        sync {
            ref.setValue(10)
            ref.runTransactionBlock(increment)
            ref.setValue(100)
            ref.runTransactionBlock(increment)
        }
        #expect(try await afterTransactions(at: ref).value as? Int == 101)
        #expect(try await ref.getData().value as? Int == 101)
    }

    @Test(.enabled(if: !againstServer, "records each run of the block: it runs once only on an embedded database"))
    func descriptions() async throws {
        let ref = database.reference().child("desc")
        try await ref.setValue(["k": 1])
        var texts: [String] = []
        _ = try await ref.runTransactionBlock { data in
            texts.append(data.description)
            texts.append(data.childData(byAppendingPath: "k").description)
            return .abort()
        }
        #expect(texts == [#"MutableData (top-most transaction) {"k":1}"#, "MutableData (k) 1"])
    }
}

/// The transaction API from main-actor code, as an app's view model would
/// call it (the block itself runs on Hearth's loop thread).
@MainActor
@Suite("Transactions from the main actor")
struct MainActorTransactionTests {
    @Test func asyncTransactionFromMainActor() async throws {
        let database = makeDatabase()
        let ref = database.reference().child("likes")
        let (committed, snapshot) = try await ref.runTransactionBlock { data in
            data.value = ((data.value as? Int) ?? 0) + 1
            return TransactionResult.success(withValue: data)
        }
        #expect(committed)
        #expect(snapshot.value as? Int == 1)
    }
}

/// Compile-time check (never run): the transaction and Codable API from
/// main-actor code in Swift 6 mode, without sending non-Sendable values
/// across isolation. The completion blocks run on the callback queue (main
/// by default), so they may touch main-actor state; the transaction block
/// does not.
@MainActor
final class MainActorTransactionUsage {
    var likes = 0
    var status = ""
    let ref = Database.database().reference().child("posts/1/likes")

    func like() async throws {
        let (committed, snapshot) = try await ref.runTransactionBlock { data in
            data.value = ((data.value as? Int) ?? 0) + 1
            return .success(withValue: data)
        }
        likes = committed ? snapshot.value as? Int ?? 0 : likes
    }

    func likeWithCompletion() {
        ref.runTransactionBlock({ data in
            data.value = ((data.value as? Int) ?? 0) + 1
            return TransactionResult.success(withValue: data)
        }, andCompletionBlock: { error, committed, snapshot in
            self.status = error == nil && committed ? "liked" : "failed"
            self.likes = snapshot?.value as? Int ?? self.likes
        }, withLocalEvents: false)
    }

    func save(_ draft: [String: String]) throws {
        try ref.parent!.child("draft").setValue(from: draft) { error in
            self.status = error == nil ? "saved" : "failed"
        }
    }
}
