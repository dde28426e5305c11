import Foundation
import Testing

@testable import Hearth

@Suite("Writes")
struct WriteTests {
    let database = makeDatabase()

    @Test func updateChildValuesWritesSeveralPathsAtOnce() async throws {
        let ref = database.reference().child("doc")
        try await ref.setValue(["a": ["x": 1, "y": 2], "b": "keep", "c": "drop"])
        let values = Recorder<String>()
        ref.observe(.value) { values.append($0.json) }
        try await values.wait(for: 1)
        let returned = try await ref.updateChildValues(["a/x": 10, "d/e/f": true, "c": NSNull()])
        #expect(returned.key == "doc")
        let seen = try await values.wait(for: 2)
        // One write, one event.
        #expect(seen.last == #"{"a":{"x":10,"y":2},"b":"keep","d":{"e":{"f":true}}}"#)
        try await settle(database)
        #expect(values.all.count == 2)
    }

    @Test func overlappingUpdatePathsFail() async throws {
        let ref = database.reference().child("overlap")
        await #expect(throws: HearthError.self) {
            try await ref.updateChildValues(["a": 1, "a/b": 2])
        }
        do {
            try await ref.updateChildValues(["a": 1, "a/b": 2])
        } catch let error as HearthError {
            #expect(error.code == .overlappingUpdate)
            #expect(error.message.contains("a/b"))
        }
        #expect(!(try await ref.getData().exists()))
    }

    @Test func updateWithCompletionBlock() async throws {
        let ref = database.reference().child("u")
        let done = Recorder<String>()
        ref.updateChildValues(["k": "v"]) { error, reference in
            done.append("\(error == nil) \(reference.key ?? "")")
        }
        #expect(try await done.wait(for: 1) == ["true u"])
        #expect(try await ref.child("k").getData().value as? String == "v")
    }

    @Test func removeValueAndNilDelete() async throws {
        let ref = database.reference().child("gone")
        try await ref.setValue(["a": 1, "b": 2, "c": 3])
        try await ref.child("a").removeValue()
        try await ref.child("b").setValue(nil)
        sync { ref.child("c").setValue(NSNull()) }
        #expect(!(try await ref.getData().exists()))

        try await ref.setValue("back")
        let done = Recorder<Bool>()
        ref.removeValue { error, _ in done.append(error == nil) }
        #expect(try await done.wait(for: 1) == [true])
        #expect(try await ref.getData().value is NSNull)
    }

    @Test func setValueCompletionRunsAfterEvents() async throws {
        let ref = database.reference().child("order")
        let log = Recorder<String>()
        ref.observe(.value) { log.append("value \($0.json)") }
        try await log.wait(for: 1)
        ref.setValue(1) { error, _ in log.append("done \(error == nil)") }
        #expect(try await log.wait(for: 3) == ["value null", "value 1", "done true"])
    }

    @Test func childByAutoIdIsOrdered() async throws {
        let list = database.reference().child("messages")
        var keys: [String] = []
        for index in 0..<200 {
            let child = list.childByAutoId()
            let key = try #require(child.key)
            #expect(key.count == 20)
            keys.append(key)
            sync { child.setValue(index) }
        }
        #expect(keys == keys.sorted())
        #expect(Set(keys).count == keys.count)
        let snapshot = try await list.getData()
        #expect(snapshot.childSnapshots.map(\.key) == keys)
        #expect(snapshot.childSnapshots.map { $0.value as? Int } == Array(0..<200))
    }

    @Test func serverTimestampResolves() async throws {
        let before = Int(Date().timeIntervalSince1970 * 1000)
        let ref = database.reference().child("stamp")
        try await ref.setValue(["at": ServerValue.timestamp(), "note": "hi"])
        let after = Int(Date().timeIntervalSince1970 * 1000)
        let at = try #require(try await ref.child("at").getData().value as? Int)
        #expect(at >= before - 1000 && at <= after + 1000)
    }

    @Test func serverIncrementResolves() async throws {
        let ref = database.reference().child("count")
        try await ref.setValue(ServerValue.increment(1))
        try await ref.setValue(ServerValue.increment(NSNumber(value: 2)))
        #expect(try await ref.getData().value as? Int == 3)
        try await ref.updateChildValues([:])
        try await ref.setValue(ServerValue.increment(0.5))
        #expect(try await ref.getData().value as? Double == 3.5)
        let other = database.reference().child("fresh")
        try await other.updateChildValues(["n": ServerValue.increment(5)])
        #expect(try await other.child("n").getData().value as? Int == 5)
    }

    @Test func getDataReadsAfterEarlierWrites() async throws {
        let ref = database.reference().child("read")
        sync { ref.setValue("a") }
        sync { ref.setValue("b") }
        #expect(try await ref.getData().value as? String == "b")
        let result = Recorder<String>()
        ref.getData { error, snapshot in
            result.append("\(error == nil) \(snapshot?.value as? String ?? "-")")
        }
        #expect(try await result.wait(for: 1) == ["true b"])
    }

    @Test func referencesNavigate() {
        let root = database.reference()
        #expect(root.key == nil)
        #expect(root.parent == nil)
        let deep = root.child("a/b").child("c")
        #expect(deep.key == "c")
        #expect(deep.parent?.key == "b")
        #expect(deep.parent?.parent?.parent?.key == nil)
        #expect(deep.root.key == nil)
        #expect(deep.description == "/a/b/c")
        #expect(root.child("//x//y/").description == "/x/y")
        #expect(database.reference(withPath: "a/b").child("c").description == "/a/b/c")
        #expect(deep.database === database)
        #expect(deep.ref.description == "/a/b/c")
    }

    @Test func sharedDefaultDatabase() {
        #expect(Database.database() === Database.database())
        let defaultURL = ProcessInfo.processInfo.environment["HEARTH_DATABASE_URL"] ?? "http://127.0.0.1:9000"
        #expect(Database.database(url: defaultURL) === Database.database())
        #expect(Database.database(url: "memory:other") !== Database.database())
        let db = Database.database(url: "https://demo.firebaseio.com")
        #expect(db.reference(fromURL: "https://demo.firebaseio.com/users/ada").description == "/users/ada")
        #expect(db.reference(withPath: "users/ada").url == "https://demo.firebaseio.com/users/ada")
        #expect(Database.sdkVersion().split(separator: ".").count == 3)
    }
}
