import Foundation
import Testing

@testable import Hearth

private struct Profile: Codable, Equatable {
    struct Address: Codable, Equatable {
        var street: String
        var zip: String?
        var floor: Int?
    }

    struct Pet: Codable, Equatable {
        var name: String
        var age: Int
        var vaccinated: Bool
    }

    var name: String
    var age: Int
    var height: Double
    var active: Bool
    var nickname: String?
    var joined: Date
    var lastSeen: Date?
    var tags: [String]
    var scores: [Double]
    var pets: [Pet]
    var grid: [[Int]]
    var address: Address
    var counts: [String: Int]
    var avatar: Data
}

private let sample = Profile(
    name: "Ada", age: 36, height: 1.65, active: true, nickname: nil,
    joined: Date(timeIntervalSince1970: 1_700_000_000.123),
    lastSeen: Date(timeIntervalSince1970: -12_345.5),
    tags: ["math", "engines", "poetry"], scores: [0.1, 2.5, -3],
    pets: [
        Profile.Pet(name: "Rex", age: 3, vaccinated: true),
        Profile.Pet(name: "Tom", age: 1, vaccinated: false),
    ],
    grid: [[1, 2], [3], [4, 5, 6]],
    address: Profile.Address(street: "1 Analytical Way", zip: nil, floor: 2),
    counts: ["posts": 12, "likes": 3400],
    avatar: Data([0, 1, 2, 250, 255]))

@Suite("Codable")
struct CodableTests {
    let database = makeDatabase()

    @Test func nestedStructRoundTrip() async throws {
        let ref = database.reference().child("profiles/ada")
        let done = Recorder<Bool>()
        try ref.setValue(from: sample) { error in done.append(error == nil) }
        #expect(try await done.wait(for: 1) == [true])

        let snapshot = try await ref.getData()
        #expect(try snapshot.data(as: Profile.self) == sample)

        // The stored shape: nil optionals leave no key, arrays are arrays,
        // dates are seconds since 2001 (the SDK's default .deferredToDate),
        // Data is base64.
        #expect(!snapshot.hasChild("nickname"))
        #expect(!snapshot.hasChild("address/zip"))
        #expect(snapshot.childSnapshot(forPath: "address/floor").value as? Int == 2)
        #expect(snapshot.childSnapshot(forPath: "tags").value as? [String] == sample.tags)
        #expect(snapshot.childSnapshot(forPath: "pets/1/name").value as? String == "Tom")
        #expect(snapshot.childSnapshot(forPath: "active").json == "true")
        let joined = try #require(snapshot.childSnapshot(forPath: "joined").value as? Double)
        #expect(joined == sample.joined.timeIntervalSinceReferenceDate)
        let avatar = snapshot.childSnapshot(forPath: "avatar").value as? String
        #expect(avatar == sample.avatar.base64EncodedString())

        // A child decodes on its own.
        let address = try snapshot.childSnapshot(forPath: "address").data(as: Profile.Address.self)
        #expect(address == sample.address)
        let pets = try snapshot.childSnapshot(forPath: "pets").data(as: [Profile.Pet].self)
        #expect(pets == sample.pets)
        #expect(try snapshot.childSnapshot(forPath: "age").data(as: Int.self) == 36)
    }

    @Test func encoderProducesTheValuesSetValueTakes() async throws {
        let encoded = try Database.Encoder().encode(sample)
        let dictionary = try #require(encoded as? NSDictionary)
        #expect(dictionary["name"] as? String == "Ada")
        #expect(dictionary["nickname"] == nil)
        #expect((dictionary["active"] as? NSNumber) === NSNumber(value: true))

        let ref = database.reference().child("viaAny")
        try await ref.setValue(encoded)
        let snapshot = try await ref.getData()
        #expect(try snapshot.data(as: Profile.self) == sample)
        // And the decoder reads Foundation values too.
        #expect(try Database.Decoder().decode(Profile.self, from: snapshot.value as Any) == sample)
    }

    @Test func strategies() async throws {
        struct Event: Codable, Equatable {
            var startsAt: Date
            var roomName: String
        }
        let event = Event(startsAt: Date(timeIntervalSince1970: 1_600_000_000), roomName: "Hall")
        let encoder = Database.Encoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let ref = database.reference().child("event")
        try ref.setValue(from: event, encoder: encoder)
        let snapshot = try await ref.getData()
        #expect(snapshot.json == #"{"room_name":"Hall","starts_at":1600000000}"#)

        let decoder = Database.Decoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        #expect(try snapshot.data(as: Event.self, decoder: decoder) == event)
        // With the default decoder the keys do not match.
        #expect(throws: DecodingError.self) { try snapshot.data(as: Event.self) }
    }

    @Test func invalidDataIsThrownAndNothingWritten() async throws {
        let ref = database.reference().child("bad")
        let called = Recorder<String>()
        do {
            try ref.setValue(from: ["fine": 1, "not.fine": 2]) { _ in called.append("called") }
            Issue.record("expected an invalid key error")
        } catch let error as HearthError {
            #expect(error.code == .invalidKey)
            #expect(error.message.contains("not.fine"))
        }
        #expect(throws: EncodingError.self) { try ref.setValue(from: ["x": Double.nan]) }
        #expect(throws: HearthError.self) { try Database.Encoder().encode(["$": true]) }
        try await settle(database)
        #expect(called.all.isEmpty)
        #expect(!(try await ref.getData().exists()))
    }

    @Test func decodingFailuresAreErrors() async throws {
        let ref = database.reference().child("wrong")
        try await ref.setValue(["name": 5, "age": "old"])
        let snapshot = try await ref.getData()
        #expect(throws: DecodingError.self) { try snapshot.data(as: Profile.self) }
        do {
            _ = try snapshot.data(as: Profile.Pet.self)
            Issue.record("expected a decoding error")
        } catch DecodingError.typeMismatch(_, let context) {
            #expect(context.codingPath.map(\.stringValue) == ["name"])
        } catch {
            Issue.record("unexpected \(error)")
        }

        // No data: an error unless the type is optional.
        let empty = try await database.reference().child("nothing").getData()
        do {
            _ = try empty.data(as: Profile.self)
            Issue.record("expected valueNotFound")
        } catch DecodingError.valueNotFound {
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(try empty.data(as: Profile?.self) == nil)
        #expect(try empty.data(as: Int?.self) == nil)
    }

    @Test func codableInsideATransaction() async throws {
        struct Tally: Codable, Equatable {
            var count: Int
            var voters: [String]
        }
        let ref = database.reference().child("tally")
        try ref.setValue(from: Tally(count: 1, voters: ["a"]))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for voter in ["b", "c", "d", "e"] {
                group.addTask {
                    _ = try await ref.runTransactionBlock { data in
                        // As the SDK advises: the block may first run on a
                        // guess (no data yet); commit the guess unchanged and
                        // it runs again on the real value.
                        let decoder = Database.Decoder()
                        guard var tally = try? decoder.decode(Tally.self, from: data.value as Any)
                        else { return .success(withValue: data) }
                        guard
                            let value = try? Database.Encoder().encode({
                                tally.count += 1
                                tally.voters.append(voter)
                                return tally
                            }())
                        else { return .abort() }
                        data.value = value
                        return .success(withValue: data)
                    }
                }
            }
            try await group.waitForAll()
        }
        let tally = try await ref.getData().data(as: Tally.self)
        #expect(tally.count == 5)
        #expect(Set(tally.voters) == ["a", "b", "c", "d", "e"])
        #expect(tally.voters.count == 5)
    }

    /// @ServerTimestamp: nil is written as the server-time placeholder and
    /// read back as the time of the write; a date as milliseconds since
    /// 1970; no key at all reads as nil.
    @Test func serverTimestamp() async throws {
        struct Message: Codable, Equatable {
            var text: String
            @ServerTimestamp var sentAt: Date?
        }
        let ref = database.reference().child("messages/1")
        let before = Date()
        try ref.setValue(from: Message(text: "hi", sentAt: nil))
        let snapshot = try await ref.getData()
        let stored = try #require(snapshot.childSnapshot(forPath: "sentAt").value as? Double)
        let sent = try #require(try snapshot.data(as: Message.self).sentAt)
        #expect(sent.timeIntervalSince1970 == stored / 1000)
        #expect(abs(sent.timeIntervalSince(before)) < 60)

        let fixed = Message(text: "later", sentAt: Date(timeIntervalSince1970: 1_700_000_000.25))
        try await ref.setValue(Database.Encoder().encode(fixed))
        let again = try await ref.getData()
        #expect(again.childSnapshot(forPath: "sentAt").json == "1700000000250")
        #expect(try again.data(as: Message.self) == fixed)
        try await ref.child("sentAt").removeValue()
        #expect(try await ref.getData().data(as: Message.self) == Message(text: "later", sentAt: nil))
    }

    /// `.blob` keeps `Data` in the tree (which the database then refuses to
    /// store) and reads it back; a passthrough resolver leaves its types as
    /// they are, both ways; userInfo holds any value.
    @Test func blobPassthroughAndUserInfo() async throws {
        final class Handle: Codable {
            func encode(to encoder: any Swift.Encoder) throws {
                Issue.record("a passthrough value was encoded")
            }
            init() {}
            init(from decoder: any Swift.Decoder) throws {
                Issue.record("a passthrough value was decoded")
            }
        }
        enum Handles: StructureCodingPassthroughTypeResolver {
            static func isPassthroughType<T>(_ t: T) -> Bool { t is Handle }
        }
        struct Attachment: Codable {
            var bytes: Data
            var handle: Handle
        }
        let handle = Handle()
        let encoder = Database.Encoder()
        encoder.dataEncodingStrategy = .blob
        encoder.passthroughTypeResolver = Handles.self
        let tree = try #require(try encoder.encode(Attachment(bytes: Data([1, 2, 3]), handle: handle)) as? [String: Any])
        #expect(tree["bytes"] as? Data == Data([1, 2, 3]) && tree["handle"] as? Handle === handle)

        let decoder = Database.Decoder()
        decoder.dataDecodingStrategy = .blob
        decoder.passthroughTypeResolver = Handles.self
        let decoded = try decoder.decode(Attachment.self, from: tree)
        #expect(decoded.bytes == Data([1, 2, 3]) && decoded.handle === handle)
        #expect(throws: HearthError.self) {
            try self.database.reference().child("blob").setValue(from: ["b": Data([1])], encoder: encoder)
        }

        // userInfo: [CodingUserInfoKey: Any], as the SDK's, takes values that
        // are not Sendable.
        final class Unit { let factor: Double; init(_ factor: Double) { self.factor = factor } }
        struct Measured: Codable {
            static let unit = CodingUserInfoKey(rawValue: "unit")!
            var value: Double
            init(value: Double) { self.value = value }
            func encode(to encoder: any Swift.Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(value * (encoder.userInfo[Self.unit] as! Unit).factor)
            }
            init(from decoder: any Swift.Decoder) throws {
                value = try decoder.singleValueContainer().decode(Double.self)
                    / (decoder.userInfo[Self.unit] as! Unit).factor
            }
        }
        let plain = Database.Encoder()
        plain.userInfo = [Measured.unit: Unit(100)]
        let ref = database.reference().child("measured")
        try ref.setValue(from: Measured(value: 1.5), encoder: plain)
        let snapshot = try await ref.getData()
        #expect(snapshot.json == "150")
        let reader = Database.Decoder()
        reader.userInfo = [Measured.unit: Unit(100)]
        #expect(try snapshot.data(as: Measured.self, decoder: reader).value == 1.5)
    }
}
