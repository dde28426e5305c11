import Foundation
import Testing

@testable import Hearth

@Suite("Values in and out")
struct ValueTests {
    let database = makeDatabase()

    private func roundTrip(_ value: Any?) async throws -> DataSnapshot {
        let ref = database.reference().child("value")
        try await ref.setValue(value)
        return try await ref.getData()
    }

    @Test func strings() async throws {
        for text in ["", "hello", "quote \" backslash \\ newline \n tab \t nul-free \u{1} end", "héllo wörld 🔥 𝄞"] {
            let snapshot = try await roundTrip(text)
            #expect(snapshot.value as? String == text)
        }
        let bridged = try await roundTrip(NSString(string: "bridged"))
        #expect(bridged.value as? String == "bridged")
        let substring = try await roundTrip("a-b-c".split(separator: "-")[1])
        #expect(substring.value as? String == "b")
    }

    @Test func integers() async throws {
        for number in [0, 1, -1, 42, Int(Int32.max) + 1, -9_007_199_254_740_991] {
            let snapshot = try await roundTrip(number)
            #expect(snapshot.value as? Int == number)
            #expect(snapshot.json == String(number))
        }
        #expect(try await roundTrip(UInt8(7)).value as? Int == 7)
        #expect(try await roundTrip(Int64(-5)).value as? Int == -5)
        #expect(try await roundTrip(NSNumber(value: 12)).value as? Int == 12)
    }

    @Test func doubles() async throws {
        for number in [0.5, -2.25, 1e300, 0.1, 3.141592653589793] {
            let snapshot = try await roundTrip(number)
            #expect(snapshot.value as? Double == number)
        }
        #expect(try await roundTrip(Float(1.5)).value as? Double == 1.5)
        #expect(try await roundTrip(NSNumber(value: 2.5)).value as? Double == 2.5)
        // An integral double reads back as an integer, as the service does.
        #expect(try await roundTrip(2.0).json == "2")
    }

    @Test func booleansStayBooleans() async throws {
        for flag in [true, false] {
            let snapshot = try await roundTrip(flag)
            #expect(snapshot.json == (flag ? "true" : "false"))
            #expect(snapshot.value as? Bool == flag)
            #expect((snapshot.value as? NSNumber) === NSNumber(value: flag))
        }
        let fromNSNumber = try await roundTrip(NSNumber(value: true))
        #expect(fromNSNumber.json == "true")
        // NSNumber 1 and 0 are numbers, not booleans.
        let mixed = try await roundTrip(["flag": true, "one": NSNumber(value: 1), "zero": 0] as [String: Any])
        #expect(mixed.json == #"{"flag":true,"one":1,"zero":0}"#)
        let dictionary = try #require(mixed.value as? [String: Any])
        #expect(dictionary["flag"] as? Bool == true)
        #expect((dictionary["one"] as? NSNumber) !== NSNumber(value: true))
    }

    @Test func nestedDictionaries() async throws {
        let value: [String: Any] = [
            "name": "Ada", "age": 36,
            "address": ["city": "London", "geo": ["lat": 51.5, "lng": -0.12]],
            "empty": [String: Any](),
        ]
        let snapshot = try await roundTrip(value)
        #expect(snapshot.json == #"{"address":{"city":"London","geo":{"lat":51.5,"lng":-0.12}},"age":36,"name":"Ada"}"#)
        let out = try #require(snapshot.value as? NSDictionary)
        #expect(out["name"] as? String == "Ada")
        let address = try #require(out["address"] as? [String: Any])
        #expect((address["geo"] as? [String: Double])?["lat"] == 51.5)
        #expect(out["empty"] == nil)
        let fromNS = try await roundTrip(NSDictionary(dictionary: ["k": NSArray(array: [1, "two"])]))
        #expect(fromNS.json == #"{"k":[1,"two"]}"#)
    }

    @Test func arrays() async throws {
        let snapshot = try await roundTrip(["a", "b", 3, true] as [Any])
        #expect(snapshot.json == #"["a","b",3,true]"#)
        let array = try #require(snapshot.value as? NSArray)
        #expect(array.count == 4)
        #expect(array[0] as? String == "a")
        #expect((snapshot.value as? [Any])?.count == 4)
        // Stored as children "0", "1", ...
        #expect(snapshot.childSnapshot(forPath: "1").value as? String == "b")

        // Holes read back as NSNull while the keys stay dense enough.
        let ref = database.reference().child("sparse")
        try await ref.updateChildValues(["0": "a", "2": "c"])
        let sparse = try await ref.getData()
        let withHole = try #require(sparse.value as? [Any])
        #expect(withHole.count == 3)
        #expect(withHole[1] is NSNull)
        // Too sparse: an object.
        try await ref.setValue(["0": "a", "5": "f"])
        #expect(try await ref.getData().value is NSDictionary)
        // Leading zeros are not array indexes.
        try await ref.setValue(["0": "a", "01": "b"])
        #expect(try await ref.getData().value is NSDictionary)
        // Optional elements: nil entries are dropped.
        let optionals: [Int?] = [1, nil, 3]
        #expect(try await roundTrip(optionals).json == "[1,null,3]")
    }

    @Test func decodingMatchesTheCoreJSON() async throws {
        // The Swift array heuristic and number forms must agree with
        // hearth_node_to_json for the same data.
        let samples: [Any] = [
            ["0": 1, "1": 2], ["1": "x"], ["0": "a", "2": "c", "3": "d"], ["5": 1],
            ["a": ["0": true, "1": ["0": 1.5]]], 9_007_199_254_740_993.0, -0.0, 1e21,
        ]
        for sample in samples {
            let snapshot = try await roundTrip(sample)
            let swiftJSON = try JSONSerialization.data(
                withJSONObject: ["v": snapshot.value ?? NSNull()], options: [.sortedKeys])
            let coreJSON = try JSONSerialization.jsonObject(with: Data("{\"v\":\(snapshot.json)}".utf8))
            let core = try JSONSerialization.data(withJSONObject: coreJSON, options: [.sortedKeys])
            #expect(String(decoding: swiftJSON, as: UTF8.self) == String(decoding: core, as: UTF8.self))
        }
    }

    @Test func nullAndAbsentData() async throws {
        let snapshot = try await roundTrip(nil)
        #expect(!snapshot.exists())
        #expect(snapshot.value is NSNull)
        #expect(snapshot.childrenCount == 0)
        #expect(!snapshot.hasChildren())
        #expect(try await roundTrip(NSNull()).value is NSNull)
        let missing: Int? = nil
        #expect(try await roundTrip(missing as Any).value is NSNull)
    }

    @Test func snapshotNavigation() async throws {
        let ref = database.reference().child("users")
        try await ref.setValue(["b": ["name": "Bo"], "a": ["name": "Al"], "10": ["name": "Ten"], "2": ["name": "Two"]])
        let snapshot = try await ref.getData()
        #expect(snapshot.key == "users")
        #expect(snapshot.childrenCount == 4)
        #expect(snapshot.hasChild("a/name"))
        #expect(!snapshot.hasChild("c"))
        #expect(snapshot.childSnapshot(forPath: "a/name").value as? String == "Al")
        #expect(snapshot.childSnapshot(forPath: "a/name").ref.description == "/users/a/name")
        var keys: [String] = []
        for case let child as DataSnapshot in snapshot.children {
            keys.append(child.key)
            #expect(child.ref.parent?.key == "users")
        }
        // Integer keys first, numerically; then the others.
        #expect(keys == ["2", "10", "a", "b"])
    }

    @Test func priorities() async throws {
        let ref = database.reference().child("ranked")
        try await ref.child("x").setValue("last", andPriority: 10)
        try await ref.child("y").setValue("first", andPriority: 1)
        try await ref.child("z").setValue(["deep": true], andPriority: "b")
        let snapshot = try await ref.getData()
        #expect(snapshot.childSnapshots.map(\.key) == ["y", "x", "z"])
        #expect(snapshot.childSnapshot(forPath: "x").priority as? Int == 10)
        #expect(snapshot.childSnapshot(forPath: "z").priority as? String == "b")
        #expect(snapshot.priority is NSNull)
        let export = try #require(snapshot.valueInExportFormat() as? [String: Any])
        let x = try #require(export["x"] as? [String: Any])
        #expect(x[".value"] as? String == "last")
        #expect(x[".priority"] as? Int == 10)
        try await ref.child("x").setPriority(0)
        #expect(try await ref.getData().childSnapshots.map(\.key) == ["x", "y", "z"])
        // Priorities written as JSON keys behave as in the service.
        try await ref.child("w").setValue([".value": "v", ".priority": 5] as [String: Any])
        let w = try await ref.child("w").getData()
        #expect(w.value as? String == "v")
        #expect(w.priority as? Int == 5)
    }
}
