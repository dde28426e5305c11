import Foundation

/// Decodes `Decodable` values from a tree of Foundation values (what
/// `DataSnapshot.value` holds, or what `TreeEncoder` made).
/// `Database.Decoder` drives it.
final class TreeDecoder: Swift.Decoder {
    struct Options {
        var date: Database.Decoder.DateDecodingStrategy
        var data: Database.Decoder.DataDecodingStrategy
        var nonConformingFloat: Database.Decoder.NonConformingFloatDecodingStrategy
        var key: Database.Decoder.KeyDecodingStrategy
        var passthrough: any StructureCodingPassthroughTypeResolver.Type
        var userInfo: [CodingUserInfoKey: Any]
    }

    let options: Options
    let value: Any
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { options.userInfo }

    init(options: Options, value: Any, codingPath: [any CodingKey] = []) {
        self.options = options
        self.value = value
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard let fields = Self.fields(of: value) else {
            throw mismatch([String: Any].self, at: codingPath)
        }
        var converted: [String: Any] = [:]
        for (key, field) in fields {
            converted[self.key(key)] = field
        }
        return KeyedDecodingContainer(KeyedReader<Key>(decoder: self, fields: converted, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard let items = value as? [Any] else { throw mismatch([Any].self, at: codingPath) }
        return UnkeyedReader(decoder: self, items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleReader(decoder: self)
    }

    /// An object's fields; an array (the database reads objects with
    /// integer keys as arrays) gives its non-null items by index.
    private static func fields(of value: Any) -> [String: Any]? {
        if let fields = value as? [String: Any] { return fields }
        if let fields = value as? [AnyHashable: Any] {
            return Dictionary(uniqueKeysWithValues: fields.map { ("\($0.key.base)", $0.value) })
        }
        guard let items = value as? [Any] else { return nil }
        var fields: [String: Any] = [:]
        for (index, item) in items.enumerated() where !(item is NSNull) {
            fields[String(index)] = item
        }
        return fields
    }

    /// The coding key's string for a stored key, by the key strategy.
    private func key(_ stored: String) -> String {
        switch options.key {
        case .useDefaultKeys: return stored
        case .convertFromSnakeCase: return Self.camelCase(stored)
        case .custom(let convert): return convert(codingPath + [TreeKey(stored)]).stringValue
        }
    }

    /// "room_name" -> "roomName"; leading and trailing underscores stay.
    static func camelCase(_ key: String) -> String {
        let core = key.drop(while: { $0 == "_" })
        let leading = key.prefix(key.count - core.count)
        let inner = core.reversed().drop(while: { $0 == "_" })
        let trailing = core.suffix(core.count - inner.count)
        let words = String(inner.reversed()).split(separator: "_")
        guard let first = words.first else { return key }
        let rest = words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst().lowercased() }
        return leading + first.lowercased() + rest.joined() + trailing
    }

    func mismatch(_ type: Any.Type, at path: [any CodingKey], _ value: Any? = nil) -> DecodingError {
        let found = value ?? self.value
        return DecodingError.typeMismatch(
            type,
            DecodingError.Context(
                codingPath: path, debugDescription: "Expected \(type) but found \(Swift.type(of: found)) (\(found))."))
    }

    /// A `T` from `value`, found at `path`.
    func decode<T: Decodable>(_ type: T.Type, from value: Any, at path: [any CodingKey]) throws -> T {
        if options.passthrough.isPassthroughType(value), let value = value as? T { return value }
        if T.self == Date.self { return try date(from: value, at: path) as! T }
        if T.self == Data.self { return try data(from: value, at: path) as! T }
        if T.self == URL.self {
            guard let text = value as? String, let url = URL(string: text) else {
                throw mismatch(URL.self, at: path, value)
            }
            return url as! T
        }
        if T.self == Decimal.self, let number = value as? NSNumber { return number.decimalValue as! T }
        if let primitive = try primitive(type, from: value, at: path) { return primitive }
        return try T(from: TreeDecoder(options: options, value: value, codingPath: path))
    }

    /// Numbers, booleans and strings; nil for other types.
    private func primitive<T>(_ type: T.Type, from value: Any, at path: [any CodingKey]) throws -> T? {
        switch type {
        case is Bool.Type, is String.Type, is Int.Type, is Int8.Type, is Int16.Type, is Int32.Type,
            is Int64.Type, is UInt.Type, is UInt8.Type, is UInt16.Type, is UInt32.Type, is UInt64.Type:
            guard let exact = value as? T else { throw mismatch(T.self, at: path, value) }
            return exact
        case is Double.Type: return try double(from: value, at: path) as? T
        case is Float.Type: return try Float(double(from: value, at: path)) as? T
        default: return nil
        }
    }

    private func double(from value: Any, at path: [any CodingKey]) throws -> Double {
        if let number = value as? NSNumber, !(value is Bool) { return number.doubleValue }
        if let number = value as? Double { return number }
        if case .convertFromString(let positive, let negative, let nan) = options.nonConformingFloat,
            let text = value as? String
        {
            if text == positive { return .infinity }
            if text == negative { return -.infinity }
            if text == nan { return .nan }
        }
        throw mismatch(Double.self, at: path, value)
    }

    private func date(from value: Any, at path: [any CodingKey]) throws -> Date {
        let nested = TreeDecoder(options: options, value: value, codingPath: path)
        switch options.date {
        case .deferredToDate: return try Date(from: nested)
        case .secondsSince1970: return Date(timeIntervalSince1970: try double(from: value, at: path))
        case .millisecondsSince1970: return Date(timeIntervalSince1970: try double(from: value, at: path) / 1000)
        case .iso8601:
            guard let text = value as? String, let date = ISO8601DateFormatter().date(from: text) else {
                throw corrupted("an ISO 8601 date", at: path)
            }
            return date
        case .formatted(let formatter):
            guard let text = value as? String, let date = formatter.date(from: text) else {
                throw corrupted("a date in the formatter's format", at: path)
            }
            return date
        case .custom(let read): return try read(nested)
        }
    }

    private func data(from value: Any, at path: [any CodingKey]) throws -> Data {
        switch options.data {
        case .deferredToData: return try Data(from: TreeDecoder(options: options, value: value, codingPath: path))
        case .base64:
            guard let text = value as? String, let data = Data(base64Encoded: text) else {
                throw corrupted("base64 text", at: path)
            }
            return data
        case .blob:
            guard let data = value as? Data else { throw mismatch(Data.self, at: path, value) }
            return data
        case .custom(let read): return try read(TreeDecoder(options: options, value: value, codingPath: path))
        }
    }

    private func corrupted(_ expected: String, at path: [any CodingKey]) -> DecodingError {
        DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: path, debugDescription: "Expected \(expected)."))
    }
}

private struct KeyedReader<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: TreeDecoder
    let fields: [String: Any]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { fields.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

    private func field(_ key: Key) throws -> Any {
        guard let field = fields[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, DecodingError.Context(codingPath: codingPath, debugDescription: "No data at \"\(key.stringValue)\"."))
        }
        return field
    }

    func decodeNil(forKey key: Key) throws -> Bool { try field(key) is NSNull }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.decode(type, from: field(key), at: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try sub(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try sub(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Swift.Decoder {
        TreeDecoder(options: decoder.options, value: fields["super"] ?? NSNull(), codingPath: codingPath + [TreeKey("super")])
    }

    func superDecoder(forKey key: Key) throws -> any Swift.Decoder {
        TreeDecoder(options: decoder.options, value: fields[key.stringValue] ?? NSNull(), codingPath: codingPath + [key])
    }

    private func sub(_ key: Key) throws -> TreeDecoder {
        TreeDecoder(options: decoder.options, value: try field(key), codingPath: codingPath + [key])
    }
}

private struct UnkeyedReader: UnkeyedDecodingContainer {
    let decoder: TreeDecoder
    let items: [Any]
    let codingPath: [any CodingKey]
    var currentIndex = 0
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(decoder: TreeDecoder, items: [Any], codingPath: [any CodingKey]) {
        self.decoder = decoder
        self.items = items
        self.codingPath = codingPath
    }

    private mutating func next() throws -> (Any, [any CodingKey]) {
        let path = codingPath + [TreeKey(index: currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Any.self, DecodingError.Context(codingPath: path, debugDescription: "The array has no more items."))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], path)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] is NSNull else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (item, path) = try next()
        return try decoder.decode(type, from: item, at: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let (item, path) = try next()
        return try TreeDecoder(options: decoder.options, value: item, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (item, path) = try next()
        return try TreeDecoder(options: decoder.options, value: item, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Swift.Decoder {
        let (item, path) = try next()
        return TreeDecoder(options: decoder.options, value: item, codingPath: path)
    }
}

private struct SingleReader: SingleValueDecodingContainer {
    let decoder: TreeDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { decoder.value is NSNull }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try decoder.decode(type, from: decoder.value, at: codingPath)
    }
}
