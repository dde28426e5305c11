internal import CHearth
import Foundation

// Codable support, with the shapes of FirebaseDatabase's Codable extension
// (`Database.Encoder`, `Database.Decoder`, their strategies,
// `setValue(from:)`, `data(as:)`). Values become a tree of Foundation values
// (TreeEncoder) that goes where `setValue(_:)`'s values go: NodeEncoder
// writes it as JSON text and the C core parses and validates it. Reading,
// TreeDecoder reads the Foundation values `DataSnapshot.value` holds.

/// Says which types an encoder leaves as they are, and a decoder hands out
/// as they are found, as FirebaseSharedSwift's protocol of this name: for
/// values an app converts itself. None by default.
public protocol StructureCodingPassthroughTypeResolver {
    static func isPassthroughType<T>(_ t: T) -> Bool
}

/// The default resolver: no type passes through.
private enum NoPassthroughTypes: StructureCodingPassthroughTypeResolver {
    static func isPassthroughType<T>(_ t: T) -> Bool { false }
}

extension Database {
    /// Turns `Encodable` values into database data, as `Database.Encoder`
    /// (`FirebaseDataEncoder`) in FirebaseDatabase, with its defaults:
    ///
    /// - `Date`: `.deferredToDate`, as the SDK: a date is stored as the
    ///   number of seconds since 1 January 2001 (`timeIntervalSinceReferenceDate`).
    ///   Choose `.secondsSince1970`, `.millisecondsSince1970` or `.iso8601`
    ///   for data shared with other clients (or `@ServerTimestamp`).
    /// - `Data`: `.base64` strings (`.blob` leaves `Data` in the tree, for
    ///   an app's own use: the database cannot store it).
    /// - Non-finite numbers: `.throw`.
    /// - Keys: `.useDefaultKeys`.
    ///
    /// `nil` optionals are left out (no key is written), and the database
    /// keeps no empty arrays or objects: decode such properties as
    /// optionals.
    public final class Encoder {
        public enum DateEncodingStrategy {
            /// `Date`'s own encoding: seconds since 1 January 2001.
            case deferredToDate
            case secondsSince1970
            case millisecondsSince1970
            /// ISO 8601 text.
            case iso8601
            case formatted(DateFormatter)
            /// The closure encodes the date; encoding nothing stores an empty object.
            case custom((Date, any Swift.Encoder) throws -> Void)
        }

        public enum DataEncodingStrategy {
            /// `Data`'s own encoding: an array of bytes.
            case deferredToData
            case base64
            /// The `Data` itself, in the tree `encode(_:)` returns.
            case blob
            case custom((Data, any Swift.Encoder) throws -> Void)
        }

        public enum NonConformingFloatEncodingStrategy {
            case `throw`
            case convertToString(positiveInfinity: String, negativeInfinity: String, nan: String)
        }

        public enum KeyEncodingStrategy {
            case useDefaultKeys
            /// "roomName" is stored as "room_name".
            case convertToSnakeCase
            /// The closure gets the coding path, the key last.
            case custom((_ codingPath: [any CodingKey]) -> any CodingKey)
        }

        /// How dates are written; `.deferredToDate` by default, as the SDK.
        public var dateEncodingStrategy: DateEncodingStrategy = .deferredToDate
        /// How `Data` is written; `.base64` by default.
        public var dataEncodingStrategy: DataEncodingStrategy = .base64
        /// How NaN and infinities are written; `.throw` by default.
        public var nonConformingFloatEncodingStrategy: NonConformingFloatEncodingStrategy = .throw
        /// How coding keys become database keys; `.useDefaultKeys` by default.
        public var keyEncodingStrategy: KeyEncodingStrategy = .useDefaultKeys
        /// The types left as they are; none by default.
        public var passthroughTypeResolver: any StructureCodingPassthroughTypeResolver.Type =
            NoPassthroughTypes.self
        /// Contextual information for the values' `encode(to:)`.
        public var userInfo: [CodingUserInfoKey: Any] = [:]

        public init() {}

        /// `value` as Foundation values (`[String: Any]`, `[Any]`,
        /// `NSNumber`, `String`, `NSNull`), for `setValue(_:)`,
        /// `updateChildValues(_:)` or `MutableData.value`. Throws an
        /// `EncodingError`, or a `HearthError` for data the database cannot
        /// store (a key with `.`, `#`, `$`, `[`, `]` or `/`, too deep) unless
        /// the tree may hold other values (`.blob`, a passthrough resolver),
        /// which `setValue(_:)` judges instead.
        public func encode<T: Encodable>(_ value: T) throws -> Any {
            let tree = try self.tree(for: value)
            if case .blob = dataEncodingStrategy { return tree }
            if passthroughTypeResolver != NoPassthroughTypes.self { return tree }
            _ = try NodeEncoder.node(from: tree)
            return tree
        }

        /// `value` as a node, validated by the C core.
        func node<T: Encodable>(for value: T) throws -> Node {
            try NodeEncoder.node(from: tree(for: value), allowServerValues: true)
        }

        private func tree<T: Encodable>(for value: T) throws -> Any {
            let options = TreeEncoder.Options(
                date: dateEncodingStrategy, data: dataEncodingStrategy,
                nonConformingFloat: nonConformingFloatEncodingStrategy, key: keyEncodingStrategy,
                passthrough: passthroughTypeResolver, userInfo: userInfo)
            let encoder = TreeEncoder(options: options)
            return TreeEncoder.finish(try encoder.part(value, at: []))
        }
    }

    /// Turns database data into `Decodable` values, as `Database.Decoder`
    /// (`FirebaseDataDecoder`) in FirebaseDatabase, with the defaults that
    /// match ``Database/Encoder``: dates `.deferredToDate` (seconds since
    /// 1 January 2001), data `.base64`, non-finite numbers `.throw`, keys
    /// `.useDefaultKeys`, no passthrough types.
    public final class Decoder {
        public enum DateDecodingStrategy {
            case deferredToDate
            case secondsSince1970
            case millisecondsSince1970
            case iso8601
            case formatted(DateFormatter)
            case custom((_ decoder: any Swift.Decoder) throws -> Date)
        }

        public enum DataDecodingStrategy {
            case deferredToData
            case base64
            /// The value is a `Data` itself (as `.blob` encoding leaves it).
            case blob
            case custom((_ decoder: any Swift.Decoder) throws -> Data)
        }

        public enum NonConformingFloatDecodingStrategy {
            case `throw`
            case convertFromString(positiveInfinity: String, negativeInfinity: String, nan: String)
        }

        public enum KeyDecodingStrategy {
            case useDefaultKeys
            /// "room_name" is read as "roomName".
            case convertFromSnakeCase
            case custom((_ codingPath: [any CodingKey]) -> any CodingKey)
        }

        /// How dates are read; `.deferredToDate` by default, as the SDK.
        public var dateDecodingStrategy: DateDecodingStrategy = .deferredToDate
        /// How `Data` is read; `.base64` by default.
        public var dataDecodingStrategy: DataDecodingStrategy = .base64
        /// How NaN and infinities are read; `.throw` by default.
        public var nonConformingFloatDecodingStrategy: NonConformingFloatDecodingStrategy = .throw
        /// How database keys become coding keys; `.useDefaultKeys` by default.
        public var keyDecodingStrategy: KeyDecodingStrategy = .useDefaultKeys
        /// The types handed out as they are found; none by default.
        public var passthroughTypeResolver: any StructureCodingPassthroughTypeResolver.Type =
            NoPassthroughTypes.self
        /// Contextual information for the values' `init(from:)`.
        public var userInfo: [CodingUserInfoKey: Any] = [:]

        public init() {}

        /// A `T` from Foundation values such as `DataSnapshot.value`. Throws
        /// a `DecodingError` when the data does not fit `T`
        /// (`.valueNotFound` for no data unless `T` is an `Optional`).
        public func decode<T: Decodable>(_ type: T.Type, from value: Any) throws -> T {
            try decode(type, from: value, path: "")
        }

        /// A `T` from a tree; `path` names its location in messages.
        func decode<T: Decodable>(_ type: T.Type, from value: Any, path: String) throws -> T {
            if value is NSNull, !(T.self is any ExpressibleByNilLiteral.Type) {
                throw DecodingError.valueNotFound(
                    T.self,
                    DecodingError.Context(
                        codingPath: [],
                        debugDescription: "There is no data at /\(path) to decode \(T.self) from."))
            }
            let options = TreeDecoder.Options(
                date: dateDecodingStrategy, data: dataDecodingStrategy,
                nonConformingFloat: nonConformingFloatDecodingStrategy, key: keyDecodingStrategy,
                passthrough: passthroughTypeResolver, userInfo: userInfo)
            return try TreeDecoder(options: options, value: value).decode(T.self, from: value, at: [])
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
            let block = db.bound(completion)
            done = { error in block.async { $0(error) } }
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
        try decoder.decode(type, from: NodeDecoder.value(of: node.pointer), path: ref.path)
    }
}
