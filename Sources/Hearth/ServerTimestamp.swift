import Foundation

/// A `Date?` property that the server fills in, as `@ServerTimestamp` in
/// FirebaseDatabase: encoding a nil date writes the server-time
/// placeholder (`ServerValue.timestamp()`), which the database replaces by
/// the time of the write; a date is written, and read back, as the
/// milliseconds since 1970 that the database stores for server times, so
/// other clients see the same number.
///
///     struct Message: Codable {
///         var text: String
///         @ServerTimestamp var sentAt: Date?
///     }
@propertyWrapper
public struct ServerTimestamp: Codable, Equatable, Hashable, Sendable {
    public var wrappedValue: Date?

    public init(wrappedValue: Date?) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            wrappedValue = nil
        } else {
            wrappedValue = Date(timeIntervalSince1970: try container.decode(Double.self) / 1000)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let date = wrappedValue {
            // Whole milliseconds (toward zero), as the server writes times.
            try container.encode(Int64(date.timeIntervalSince1970 * 1000))
        } else {
            try container.encode([".sv": "timestamp"])
        }
    }
}

extension KeyedDecodingContainer {
    /// A missing key (no time stored yet) reads as a nil date rather than
    /// failing the whole value.
    public func decode(_ type: ServerTimestamp.Type, forKey key: Key) throws -> ServerTimestamp {
        try decodeIfPresent(type, forKey: key) ?? ServerTimestamp(wrappedValue: nil)
    }
}
