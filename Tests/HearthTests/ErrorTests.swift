import Foundation
import Testing

@testable import Hearth

@Suite("Errors, not crashes")
struct ErrorTests {
    let database = makeDatabase()

    private func error(setting value: Any?, at path: String = "bad") async -> HearthError? {
        do {
            try await database.reference().child(path).setValue(value)
            return nil
        } catch {
            return error as? HearthError
        }
    }

    @Test func invalidKeys() async throws {
        for key in ["a.b", "a$", "a#", "a[", "a]", "a/b", "", "tab\t"] {
            let error = await error(setting: [key: 1])
            #expect(error?.code == .invalidKey, "key \(key.debugDescription)")
        }
        let nested = await error(setting: ["ok": ["fine": ["no.dots": true]]])
        #expect(nested?.code == .invalidKey)
        #expect(nested?.message.contains("no.dots") == true)
        let long = await error(setting: [String(repeating: "k", count: 769): 1])
        #expect(long?.code == .tooBig || long?.code == .invalidKey)
        #expect(!(try await database.reference().child("bad").getData().exists()))
    }

    @Test func invalidValues() async throws {
        #expect(await error(setting: Double.nan)?.code == .invalidNumber)
        #expect(await error(setting: ["x": Double.infinity])?.code == .invalidNumber)
        let date = await error(setting: ["when": Date()])
        #expect(date?.code == .invalidValue)
        #expect(date?.message.contains("Date") == true)
        #expect(await error(setting: [1: "int key"] as [AnyHashable: Any])?.code == .invalidKey)
        #expect(await error(setting: [".sv": "bogus"])?.code == .invalidServerValue)
        #expect(await error(setting: [".value": 1, "child": 2] as [String: Any]) != nil)
        var deep: Any = "leaf"
        for _ in 0..<40 { deep = ["d": deep] }
        #expect(await error(setting: deep)?.code == .tooDeep)
        #expect(await error(setting: 1, at: ".info/x")?.code == .readOnly)
    }

    @Test func errorsBridgeToNSError() async throws {
        let error = try #require(await error(setting: ["a.b": 1]))
        let nsError = error as NSError
        #expect(nsError.domain == HearthError.errorDomain)
        #expect(nsError.code == HearthError.Code.invalidKey.rawValue)
        #expect(nsError.localizedDescription.contains("a.b"))
        #expect(nsError.userInfo[HearthError.nameKey] as? String == "HEARTH_EKEY")
        #expect(HearthError.Code.invalidKey.summary == "invalid key")
    }

    @Test func completionBlocksReceiveErrors() async throws {
        let ref = database.reference().child("cb")
        let results = Recorder<String>()
        ref.setValue(["bad.key": 1]) { error, reference in
            results.append("\((error as? HearthError)?.code.name ?? "nil") \(reference.key ?? "")")
        }
        ref.updateChildValues(["x": Double.nan]) { error, _ in
            results.append((error as? HearthError)?.code.name ?? "nil")
        }
        ref.setValue(1, andPriority: ["not": "a priority"]) { error, _ in
            results.append((error as? HearthError)?.code.name ?? "nil")
        }
        let seen = try await results.wait(for: 3)
        #expect(seen == ["HEARTH_EKEY cb", "HEARTH_ENUMBER", "HEARTH_EPRIORITY"])
    }

    @Test func writesWithoutCompletionLogInsteadOfCrashing() async throws {
        let ref = database.reference().child("quiet")
        sync { ref.setValue(["a.b": 1]) }
        sync { ref.updateChildValues(["a": 1, "a/b": 2]) }
        sync { ref.setValue(Date()) }
        try await settle(database)
        #expect(!(try await ref.getData().exists()))
    }

    @Test func validateJSON() throws {
        let summary = try HearthJSON.validate(Data(#"{"a": {"b": [1, 2]}, "c": true}"#.utf8))
        #expect(summary == HearthJSON.Summary(nodeCount: 6, depth: 3))
        #expect(try HearthJSON.validate(Data("null".utf8)) == HearthJSON.Summary(nodeCount: 0, depth: 0))
        #expect(throws: HearthError.self) { try HearthJSON.validate(Data(#"{"a.b": 1}"#.utf8)) }
        do {
            _ = try HearthJSON.validate(Data("{\n \"a\": ,\n}".utf8))
            Issue.record("accepted malformed JSON")
        } catch {
            #expect(error.code == .malformedJSON)
            #expect(error.line == 2)
            #expect(error.column > 0)
        }
        #expect(throws: HearthError.self) { try HearthJSON.validate(Data(#"{".sv": "timestamp"}"#.utf8)) }
        #expect(try HearthJSON.validate(Data(#"{"t": {".sv": "timestamp"}}"#.utf8), allowServerValues: true).depth == 1)
    }

    /// A row added to the C error table (`HEARTH_ERRNO_MAP`) must get a
    /// Swift name: the names in HearthError.swift are exactly the table's.
    @Test func everyCErrorCodeHasASwiftName() throws {
        let source = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/Hearth/HearthError.swift")
        let text = try String(contentsOf: source, encoding: .utf8)
        let named = Set(text.matches(of: /= Code\((HEARTH_E[A-Z]+)\)/).map { String($0.1) })
        let table = HearthError.Code.cTable.map(\.name)
        #expect(!table.contains("HEARTH_UNKNOWN"))
        #expect(Set(table) == named, "named in Swift: \(named.sorted()), in C: \(table)")
    }
}
