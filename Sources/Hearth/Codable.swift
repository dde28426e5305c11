internal import CHearth
import Foundation

// Codable support, with the shapes of FirebaseDatabase's Codable extension
// (`Database.Encoder`, `Database.Decoder`, `setValue(from:)`,
// `data(as:)`). Values travel as JSON text: Foundation's JSONEncoder writes
// it and the C core parses and validates it (`hearth_node_from_json`), the
// same path `setValue(_:)` takes; reading, the C core writes a node as JSON
// text (`hearth_node_to_json`, with the array rule of `DataSnapshot.value`)
// and JSONDecoder reads it.

extension Database {
    /// Turns `Encodable` values into database data, as `Database.Encoder`
    /// (`FirebaseDataEncoder`) in FirebaseDatabase, with its defaults:
    ///
    /// - `Date`: `.deferredToDate`, as the SDK: a date is stored as the
    ///   number of seconds since 1 January 2001 (`timeIntervalSinceReferenceDate`).
    ///   Choose `.secondsSince1970`, `.millisecondsSince1970` or `.iso8601`
    ///   for data shared with other clients.
    /// - `Data`: `.base64` strings.
    /// - Non-finite numbers: `.throw`.
    /// - Keys: `.useDefaultKeys`.
    ///
    /// `nil` optionals are left out (no key is written), and the database
    /// keeps no empty arrays or objects: decode such properties as
    /// optionals. The strategy types are Foundation's `JSONEncoder` ones.
    public final class Encoder {
        public typealias DateEncodingStrategy = JSONEncoder.DateEncodingStrategy
        public typealias DataEncodingStrategy = JSONEncoder.DataEncodingStrategy
        public typealias NonConformingFloatEncodingStrategy = JSONEncoder.NonConformingFloatEncodingStrategy
        public typealias KeyEncodingStrategy = JSONEncoder.KeyEncodingStrategy

        /// How dates are written; `.deferredToDate` by default, as the SDK.
        public var dateEncodingStrategy: DateEncodingStrategy = .deferredToDate
        /// How `Data` is written; `.base64` by default.
        public var dataEncodingStrategy: DataEncodingStrategy = .base64
        /// How NaN and infinities are written; `.throw` by default.
        public var nonConformingFloatEncodingStrategy: NonConformingFloatEncodingStrategy = .throw
        /// How coding keys become database keys; `.useDefaultKeys` by default.
        public var keyEncodingStrategy: KeyEncodingStrategy = .useDefaultKeys
        /// Contextual information for the values' `encode(to:)`.
        public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

        public init() {}

        /// `value` as the Foundation values `DataSnapshot.value` would hold
        /// once it is stored (`NSDictionary`, `NSArray`, `NSNumber`,
        /// `String`, `NSNull`), for `setValue(_:)`, `updateChildValues(_:)`
        /// or `MutableData.value`. Throws an `EncodingError`, or a
        /// `HearthError` for data the database cannot store (a key with
        /// `.`, `#`, `$`, `[`, `]` or `/`, too deep).
        public func encode<T: Encodable>(_ value: T) throws -> Any {
            let node = try node(for: value)
            return withExtendedLifetime(node) { NodeDecoder.value(of: node.pointer) }
        }

        /// `value` as a node, validated by the C core.
        func node<T: Encodable>(for value: T) throws -> Node {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = dateEncodingStrategy
            encoder.dataEncodingStrategy = dataEncodingStrategy
            encoder.nonConformingFloatEncodingStrategy = nonConformingFloatEncodingStrategy
            encoder.keyEncodingStrategy = keyEncodingStrategy
            encoder.userInfo = userInfo
            let text = try encoder.encode(value)
            return try NodeEncoder.node(fromJSON: [UInt8](text), allowServerValues: true)
        }
    }

    /// Turns database data into `Decodable` values, as `Database.Decoder`
    /// (`FirebaseDataDecoder`) in FirebaseDatabase, with the defaults that
    /// match ``Database/Encoder``: dates `.deferredToDate` (seconds since
    /// 1 January 2001), data `.base64`, non-finite numbers `.throw`, keys
    /// `.useDefaultKeys`. The strategy types are Foundation's `JSONDecoder`
    /// ones.
    public final class Decoder {
        public typealias DateDecodingStrategy = JSONDecoder.DateDecodingStrategy
        public typealias DataDecodingStrategy = JSONDecoder.DataDecodingStrategy
        public typealias NonConformingFloatDecodingStrategy = JSONDecoder.NonConformingFloatDecodingStrategy
        public typealias KeyDecodingStrategy = JSONDecoder.KeyDecodingStrategy

        /// How dates are read; `.deferredToDate` by default, as the SDK.
        public var dateDecodingStrategy: DateDecodingStrategy = .deferredToDate
        /// How `Data` is read; `.base64` by default.
        public var dataDecodingStrategy: DataDecodingStrategy = .base64
        /// How NaN and infinities are read; `.throw` by default.
        public var nonConformingFloatDecodingStrategy: NonConformingFloatDecodingStrategy = .throw
        /// How database keys become coding keys; `.useDefaultKeys` by default.
        public var keyDecodingStrategy: KeyDecodingStrategy = .useDefaultKeys
        /// Contextual information for the values' `init(from:)`.
        public var userInfo: [CodingUserInfoKey: any Sendable] = [:]

        public init() {}

        /// A `T` from Foundation values such as `DataSnapshot.value`. Throws
        /// a `DecodingError` when the data does not fit `T`
        /// (`.valueNotFound` for no data unless `T` is an `Optional`), or a
        /// `HearthError` when `value` is not database data.
        public func decode<T: Decodable>(_ type: T.Type, from value: Any) throws -> T {
            try decode(type, from: NodeEncoder.node(from: value), path: "")
        }

        /// A `T` from a node; `path` names its location in messages.
        func decode<T: Decodable>(_ type: T.Type, from node: Node, path: String) throws -> T {
            if node.isNull, !(T.self is any ExpressibleByNilLiteral.Type) {
                throw DecodingError.valueNotFound(
                    T.self,
                    DecodingError.Context(
                        codingPath: [],
                        debugDescription: "There is no data at /\(path) to decode \(T.self) from."))
            }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = dateDecodingStrategy
            decoder.dataDecodingStrategy = dataDecodingStrategy
            decoder.nonConformingFloatDecodingStrategy = nonConformingFloatDecodingStrategy
            decoder.keyDecodingStrategy = keyDecodingStrategy
            decoder.userInfo = userInfo
            return try decoder.decode(T.self, from: Data(node.json().utf8))
        }
    }
}

extension DatabaseReference {
    /// Encodes `value` and writes it here, replacing the data, as
    /// FirebaseDatabase's `setValue(from:encoder:completion:)`.
    ///
    /// Encoding and validation happen before this returns: an
    /// `EncodingError`, or a `HearthError` for data the database cannot
    /// store (an invalid key, too deep), is thrown, nothing is written and
    /// `completion` is not called. Otherwise `completion` runs on the
    /// database's `callbackQueue` once the write is applied (with an error
    /// only if the database closed first).
    public func setValue<T: Encodable>(
        from value: T, encoder: Database.Encoder = .init(), completion: ((Error?) -> Void)? = nil
    ) throws {
        let node = try encoder.node(for: value)
        let (db, path) = (self.db, self.path)
        var done: (@Sendable (HearthError?) -> Void)?
        if let completion {
            // @unchecked: the block is only called on the callback queue.
            let block = UncheckedSendable(completion)
            let queue = db.callbackQueue
            done = { error in queue.async { block.value(error) } }
        }
        db.write(
            "setValue(from:) at \(self)",
            prepare: {
                { callback, context, release, error in
                    hearth_db_set(db.handle, path, node.pointer, callback, context, release, error)
                }
            }, completion: done)
    }
}

extension DataSnapshot {
    /// The data as a `T`, as FirebaseDatabase's `data(as:decoder:)`. Throws
    /// `DecodingError.valueNotFound` when there is no data and `T` is not
    /// an `Optional`, and other `DecodingError`s when the data does not
    /// fit `T`.
    public func data<T: Decodable>(as type: T.Type, decoder: Database.Decoder = .init()) throws -> T {
        try decoder.decode(type, from: node, path: ref.path)
    }
}
