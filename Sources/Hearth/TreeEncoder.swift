import Foundation

/// Encodes `Encodable` values into a tree of Foundation values (the shapes
/// `setValue(_:)` takes): `[String: Any]` for keyed containers, `[Any]` for
/// unkeyed ones, `NSNumber` for numbers and booleans, `String`, `NSNull`,
/// and, as the options allow, `Data` blobs and passthrough values left as
/// they are. `Database.Encoder` drives it.
final class TreeEncoder: Swift.Encoder {
    struct Options {
        var date: Database.Encoder.DateEncodingStrategy
        var data: Database.Encoder.DataEncodingStrategy
        var nonConformingFloat: Database.Encoder.NonConformingFloatEncodingStrategy
        var key: Database.Encoder.KeyEncodingStrategy
        var passthrough: any StructureCodingPassthroughTypeResolver.Type
        var userInfo: [CodingUserInfoKey: Any]
    }

    /// A keyed or unkeyed container's contents, filled after the container
    /// is handed out (containers are values; their storage is shared).
    final class Object { var fields: [String: Any] = [:] }
    final class List { var items: [Any] = [] }

    let options: Options
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { options.userInfo }
    /// What was encoded: a value, an `Object` or `List` still being filled,
    /// or nil when nothing was.
    private(set) var result: Any?

    init(options: Options, codingPath: [any CodingKey] = []) {
        self.options = options
        self.codingPath = codingPath
    }

    /// The finished tree: containers become dictionaries and arrays, and a
    /// value that encoded nothing an empty dictionary.
    static func finish(_ part: Any?) -> Any {
        switch part {
        case let object as Object: return object.fields.mapValues { finish($0) }
        case let list as List: return list.items.map { finish($0) }
        case let encoder as TreeEncoder: return finish(encoder.result ?? Object())
        case let value?: return value
        case nil: return [String: Any]()
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object = result as? Object ?? Object()
        result = object
        return KeyedEncodingContainer(KeyedWriter(encoder: self, object: object, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let list = result as? List ?? List()
        result = list
        return UnkeyedWriter(encoder: self, list: list, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleWriter(encoder: self)
    }

    fileprivate func set(_ value: Any) { result = value }

    /// The tree part for `value`, found at `path`.
    func part<T: Encodable>(_ value: T, at path: [any CodingKey]) throws -> Any {
        if options.passthrough.isPassthroughType(value) { return value }
        switch value {
        case let date as Date: return try part(date: date, at: path)
        case let data as Data: return try part(data: data, at: path)
        case let url as URL: return url.absoluteString
        case let decimal as Decimal: return NSDecimalNumber(decimal: decimal)
        case let number as Double: return try part(double: number, at: path)
        case let number as Float: return try part(double: Double(number), at: path)
        case let bool as Bool: return NSNumber(value: bool)
        case let string as String: return string
        default: break
        }
        if let number = Self.integer(value) { return number }
        return try nested(at: path) { try value.encode(to: $0) }
    }

    /// What `body` encodes into an encoder of its own at `path`.
    private func nested(at path: [any CodingKey], _ body: (TreeEncoder) throws -> Void) throws -> Any {
        let encoder = TreeEncoder(options: options, codingPath: path)
        try body(encoder)
        return encoder.result ?? Object()
    }

    private static func integer(_ value: Any) -> NSNumber? {
        switch value {
        case let n as Int: return NSNumber(value: n)
        case let n as Int8: return NSNumber(value: n)
        case let n as Int16: return NSNumber(value: n)
        case let n as Int32: return NSNumber(value: n)
        case let n as Int64: return NSNumber(value: n)
        case let n as UInt: return NSNumber(value: n)
        case let n as UInt8: return NSNumber(value: n)
        case let n as UInt16: return NSNumber(value: n)
        case let n as UInt32: return NSNumber(value: n)
        case let n as UInt64: return NSNumber(value: n)
        default: return nil
        }
    }

    private func part(double: Double, at path: [any CodingKey]) throws -> Any {
        if double.isFinite { return NSNumber(value: double) }
        guard case .convertToString(let positive, let negative, let nan) = options.nonConformingFloat else {
            throw EncodingError.invalidValue(
                double,
                EncodingError.Context(
                    codingPath: path,
                    debugDescription: "\(double) cannot be stored: choose a nonConformingFloatEncodingStrategy"))
        }
        return double.isNaN ? nan : (double > 0 ? positive : negative)
    }

    private func part(date: Date, at path: [any CodingKey]) throws -> Any {
        switch options.date {
        case .deferredToDate: return try nested(at: path) { try date.encode(to: $0) }
        case .secondsSince1970: return NSNumber(value: date.timeIntervalSince1970)
        case .millisecondsSince1970: return NSNumber(value: date.timeIntervalSince1970 * 1000)
        case .iso8601: return ISO8601DateFormatter().string(from: date)
        case .formatted(let formatter): return formatter.string(from: date)
        case .custom(let write): return try nested(at: path) { try write(date, $0) }
        }
    }

    private func part(data: Data, at path: [any CodingKey]) throws -> Any {
        switch options.data {
        case .deferredToData: return try nested(at: path) { try data.encode(to: $0) }
        case .base64: return data.base64EncodedString()
        case .blob: return data
        case .custom(let write): return try nested(at: path) { try write(data, $0) }
        }
    }

    /// The database key for a coding key, by the key strategy.
    func key(_ key: any CodingKey, at path: [any CodingKey]) -> String {
        switch options.key {
        case .useDefaultKeys: return key.stringValue
        case .convertToSnakeCase: return Self.snakeCase(key.stringValue)
        case .custom(let convert): return convert(path + [key]).stringValue
        }
    }

    /// "roomName" -> "room_name", "fileURLPath" -> "file_url_path": an
    /// underscore before each upper-case letter that starts a word (after a
    /// lower-case letter or digit, or the last capital of a run followed by
    /// a lower-case letter), everything lower-cased.
    static func snakeCase(_ key: String) -> String {
        let characters = Array(key)
        var out = ""
        for (index, character) in characters.enumerated() {
            guard character.isUppercase else {
                out.append(character)
                continue
            }
            let previous = index > 0 ? characters[index - 1] : nil
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            let afterWord = previous.map { $0.isLowercase || $0.isNumber } ?? false
            let endsCapitals = previous?.isUppercase == true && next?.isLowercase == true
            if afterWord || endsCapitals { out.append("_") }
            out += character.lowercased()
        }
        return out
    }
}

private struct KeyedWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: TreeEncoder
    let object: TreeEncoder.Object
    let codingPath: [any CodingKey]

    private func store(_ part: Any, _ key: Key) {
        object.fields[encoder.key(key, at: codingPath)] = part
    }

    mutating func encodeNil(forKey key: Key) throws { store(NSNull(), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        store(try encoder.part(value, at: codingPath + [key]), key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = TreeEncoder.Object()
        store(nested, key)
        return KeyedEncodingContainer(KeyedWriter<NestedKey>(encoder: encoder, object: nested, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = TreeEncoder.List()
        store(nested, key)
        return UnkeyedWriter(encoder: encoder, list: nested, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Swift.Encoder {
        superEncoder(at: TreeKey("super"))
    }

    mutating func superEncoder(forKey key: Key) -> any Swift.Encoder {
        superEncoder(at: key)
    }

    private func superEncoder(at key: any CodingKey) -> any Swift.Encoder {
        // Stored as the encoder itself: `finish` takes what it encoded.
        let sub = TreeEncoder(options: encoder.options, codingPath: codingPath + [key])
        object.fields[encoder.key(key, at: codingPath)] = sub
        return sub
    }
}

private struct UnkeyedWriter: UnkeyedEncodingContainer {
    let encoder: TreeEncoder
    let list: TreeEncoder.List
    let codingPath: [any CodingKey]
    var count: Int { list.items.count }
    private var nextKey: any CodingKey { TreeKey(index: list.items.count) }

    mutating func encodeNil() throws { list.items.append(NSNull()) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        list.items.append(try encoder.part(value, at: codingPath + [nextKey]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let path = codingPath + [nextKey]
        let nested = TreeEncoder.Object()
        list.items.append(nested)
        return KeyedEncodingContainer(KeyedWriter<NestedKey>(encoder: encoder, object: nested, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = codingPath + [nextKey]
        let nested = TreeEncoder.List()
        list.items.append(nested)
        return UnkeyedWriter(encoder: encoder, list: nested, codingPath: path)
    }

    mutating func superEncoder() -> any Swift.Encoder {
        let sub = TreeEncoder(options: encoder.options, codingPath: codingPath + [nextKey])
        list.items.append(sub)
        return sub
    }
}

private struct SingleWriter: SingleValueEncodingContainer {
    let encoder: TreeEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.set(NSNull()) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.set(try encoder.part(value, at: codingPath))
    }
}

/// A coding key made at run time: "super", or an array index.
struct TreeKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ string: String) {
        stringValue = string
        intValue = nil
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}
