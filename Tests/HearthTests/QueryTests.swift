import Foundation
import Testing

@testable import Hearth

@Suite("Queries")
struct QueryTests {
    let database = makeDatabase()

    private func people() async throws -> DatabaseReference {
        let ref = database.reference().child("people")
        try await ref.setValue([
            "ann": ["age": 31, "city": "Oslo"],
            "bob": ["age": 25, "city": "Rome"],
            "cat": ["age": 40, "city": "Oslo"],
            "dan": ["age": 25, "city": "Lima"],
            "eve": ["city": "Nuuk"],
        ])
        return ref
    }

    private func keys(_ query: DatabaseQuery) async throws -> [String] {
        try await query.getData().childSnapshots.map(\.key)
    }

    @Test func limits() async throws {
        let ref = try await people()
        #expect(try await keys(ref.queryLimited(toFirst: 2)) == ["ann", "bob"])
        #expect(try await keys(ref.queryLimited(toLast: 2)) == ["dan", "eve"])
        #expect(try await keys(ref.queryOrderedByKey().queryLimited(toLast: 1)) == ["eve"])
    }

    @Test func orderByChild() async throws {
        let ref = try await people()
        let byAge = ref.queryOrdered(byChild: "age")
        // Missing child first, then numbers ascending, ties by key.
        #expect(try await keys(byAge) == ["eve", "bob", "dan", "ann", "cat"])
        #expect(try await keys(byAge.queryStarting(atValue: 30)) == ["ann", "cat"])
        #expect(try await keys(byAge.queryEnding(atValue: 25)) == ["eve", "bob", "dan"])
        #expect(try await keys(byAge.queryEqual(toValue: 25)) == ["bob", "dan"])
        #expect(try await keys(byAge.queryEqual(toValue: 25, childKey: "dan")) == ["dan"])
        #expect(try await keys(byAge.queryStarting(afterValue: 25)) == ["ann", "cat"])
        #expect(try await keys(byAge.queryEnding(beforeValue: 31)) == ["eve", "bob", "dan"])
        #expect(try await keys(byAge.queryStarting(atValue: 25, childKey: "c")) == ["dan", "ann", "cat"])
        #expect(try await keys(byAge.queryLimited(toLast: 2)) == ["ann", "cat"])
        let byCity = ref.queryOrdered(byChild: "city").queryEqual(toValue: "Oslo")
        #expect(try await keys(byCity) == ["ann", "cat"])
    }

    @Test func orderByKeyAndValue() async throws {
        let ref = database.reference().child("scores")
        try await ref.setValue(["b": 3, "a": 1, "c": 2, "d": "text", "e": true])
        #expect(try await keys(ref.queryOrderedByKey().queryStarting(atValue: "b")) == ["b", "c", "d", "e"])
        #expect(try await keys(ref.queryOrderedByValue()) == ["e", "a", "c", "b", "d"])
        #expect(try await keys(ref.queryOrderedByValue().queryEnding(atValue: 2)) == ["e", "a", "c"])
        #expect(try await keys(ref.queryOrderedByPriority()) == ["a", "b", "c", "d", "e"])
    }

    @Test func queryObserversSeeTheirWindow() async throws {
        let ref = try await people()
        let oldest = ref.queryOrdered(byChild: "age").queryLimited(toLast: 2)
        let values = Recorder<[String]>()
        oldest.observe(.value) { snapshot in
            values.append(snapshot.childSnapshots.map(\.key))
        }
        #expect(try await values.wait(for: 1) == [["ann", "cat"]])
        sync { ref.child("fay").setValue(["age": 99]) }
        let seen = try await values.wait(for: 2)
        #expect(seen.last == ["cat", "fay"])

        let added = Recorder<String>()
        oldest.observe(.childAdded, andPreviousSiblingKeyWith: { snapshot, previous in
            added.append("\(snapshot.key) \(previous ?? "nil")")
        })
        #expect(try await added.wait(for: 2) == ["cat nil", "fay cat"])
    }

    @Test func queriesAreValues() async throws {
        let ref = try await people()
        let base = ref.queryOrdered(byChild: "age")
        let limited = base.queryLimited(toFirst: 1)
        #expect(try await keys(base).count == 5)
        #expect(try await keys(limited) == ["eve"])
        #expect(limited.ref.description == "/people")
    }

    @Test func invalidQueriesTrapWithTheSDKMessage() async {
        await #expect(processExitsWith: .failure) {
            let ref = Database.database(url: "memory:exit-test").reference()
            _ = ref.queryOrderedByKey().queryOrderedByValue()
        }
        await #expect(processExitsWith: .failure) {
            let ref = Database.database(url: "memory:exit-test").reference()
            _ = ref.queryLimited(toFirst: 1).queryLimited(toLast: 1)
        }
        await #expect(processExitsWith: .failure) {
            let ref = Database.database(url: "memory:exit-test").reference()
            _ = ref.queryOrderedByKey().queryStarting(atValue: 1)
        }
    }
}
