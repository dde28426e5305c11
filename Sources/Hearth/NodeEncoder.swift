internal import CHearth
import Foundation

/// Converts Swift and Foundation values to C nodes.
///
/// The value is written as JSON text, then parsed by
/// `hearth_node_from_json`, so keys, depth, numbers, priorities, `.value`
/// and `.sv` are validated by exactly the rules of the C core. Accepted:
/// `String`/`NSString`, `Bool`, every integer and floating-point type,
/// `NSNumber` (booleans stay booleans), `Decimal`, dictionaries with string
/// keys (`[String: Any]`, `[AnyHashable: Any]`, `NSDictionary`), arrays
/// (`[Any]`, `NSArray`), and `nil`/`NSNull` (no data). Anything else is an
/// error naming the type and where it was found; nothing here traps.
enum NodeEncoder {
    /// Deeper Swift values are refused before they are written out (the C
    /// core allows 32 levels of keys; `.value`/`.sv` wrappers add a few).
    private static let maxNesting = HEARTH_MAX_DEPTH + 8

    /// A node for `value`. Server values (`[".sv": ...]`) are accepted when
    /// `allowServerValues`. `location` names where the value is going, for
    /// messages.
    static func node(from value: Any?, allowServerValues: Bool = true, location: String = "")
        throws(HearthError) -> Node
    {
        let text = try json(from: value, location: location)
        return try node(fromJSON: text, allowServerValues: allowServerValues)
    }

    /// A node from JSON text, validated as Hearth data.
    static func node(fromJSON text: [UInt8], allowServerValues: Bool) throws(HearthError) -> Node {
        var out: OpaquePointer?
        let flags = allowServerValues ? UInt32(HEARTH_JSON_ALLOW_SERVER_VALUES) : 0
        // NUL-terminated so that even empty text has an address.
        let terminated = text + [0]
        try HearthError.check { details in
            terminated.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { chars in
                    hearth_node_from_json(chars.baseAddress!, text.count, flags, &out, details)
                }
            }
        }
        guard let out else { throw HearthError(code: .outOfMemory) }
        return Node(adopting: out)
    }

    /// `value` as UTF-8 JSON text.
    static func json(from value: Any?, location: String = "") throws(HearthError) -> [UInt8] {
        var writer = Writer(location: location)
        try writer.write(value, depth: 0)
        return writer.out
    }

    private struct Writer {
        var out: [UInt8] = []
        var keys: [String] = []
        let location: String

        init(location: String) {
            self.location = location
            out.reserveCapacity(64)
        }

        /// Where the value being written sits, for messages.
        private var here: String {
            let inner = keys.joined(separator: "/")
            let base = location.isEmpty ? "/" : location
            if inner.isEmpty { return base }
            return base.hasSuffix("/") ? base + inner : base + "/" + inner
        }

        private func invalid(_ message: String, code: HearthError.Code = .invalidValue) -> HearthError {
            HearthError(code: code, message: message, path: keys.joined(separator: "/"))
        }

        mutating func write(_ value: Any?, depth: Int) throws(HearthError) {
            guard let value = unwrap(value) else { return append("null") }
            if depth > NodeEncoder.maxNesting {
                throw invalid(
                    "data at \(here) is nested deeper than \(HEARTH_MAX_DEPTH) levels", code: .tooDeep)
            }
            if value is NSNull { return append("null") }
            if let string = value as? String { return writeString(string) }
            if let string = value as? any StringProtocol { return writeString(String(string)) }
            if type(of: value) == Bool.self, let bool = value as? Bool {
                return append(bool ? "true" : "false")
            }
            if type(of: value) is NSNumber.Type, let number = value as? NSNumber {
                return try writeNumber(number)
            }
            if let integer = value as? any BinaryInteger {
                if let exact = Int64(exactly: integer) { return append(String(exact)) }
                return try writeDouble(Double(integer))
            }
            if let real = value as? any BinaryFloatingPoint { return try writeDouble(Double(real)) }
            if let decimal = value as? Decimal {
                return try writeDouble(NSDecimalNumber(decimal: decimal).doubleValue)
            }
            if let dictionary = value as? [AnyHashable: Any] {
                return try writeObject(dictionary, depth: depth)
            }
            if let array = value as? [Any] { return try writeArray(array, depth: depth) }
            throw invalid("cannot store a value of type \(type(of: value)) at \(here)")
        }

        /// Flattens optionals wrapped in `Any` (`Optional<Int>.none as Any`).
        private func unwrap(_ value: Any?) -> Any? {
            guard var value else { return nil }
            while let optional = value as? any OptionalProtocol {
                guard let wrapped = optional.wrappedAny else { return nil }
                value = wrapped
            }
            return value
        }

        private mutating func writeNumber(_ number: NSNumber) throws(HearthError) {
            // NSNumber(value: true) is the shared boolean instance on every
            // platform (a CFBoolean); other NSNumbers are numbers even when
            // they hold 0 or 1.
            if number === NSNumber(value: true) { return append("true") }
            if number === NSNumber(value: false) { return append("false") }
            switch String(cString: number.objCType) {
            case "f", "d":
                try writeDouble(number.doubleValue)
            case "Q", "L", "I", "S", "C":
                let unsigned = number.uint64Value
                if let exact = Int64(exactly: unsigned) {
                    append(String(exact))
                } else {
                    try writeDouble(Double(unsigned))
                }
            default:
                if number is NSDecimalNumber {
                    try writeDouble(number.doubleValue)
                } else {
                    append(String(number.int64Value))
                }
            }
        }

        private mutating func writeDouble(_ value: Double) throws(HearthError) {
            guard value.isFinite else {
                throw invalid("\(value) at \(here) is not a finite number", code: .invalidNumber)
            }
            // Swift's description is the shortest text that reads back as
            // the same double ("0.1", "1e+300"), which is valid JSON.
            append(value.description)
        }

        private mutating func writeString(_ string: String) {
            out.append(UInt8(ascii: "\""))
            for byte in string.utf8 {
                switch byte {
                case UInt8(ascii: "\""): append("\\\"")
                case UInt8(ascii: "\\"): append("\\\\")
                case UInt8(ascii: "\n"): append("\\n")
                case UInt8(ascii: "\r"): append("\\r")
                case UInt8(ascii: "\t"): append("\\t")
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: Array("\\u00".utf8))
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0xF)])
                default: out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }

        private mutating func writeObject(_ dictionary: [AnyHashable: Any], depth: Int) throws(HearthError) {
            out.append(UInt8(ascii: "{"))
            var first = true
            for (key, child) in dictionary {
                guard let name = key.base as? String else {
                    throw invalid(
                        "cannot store an object with a key of type \(type(of: key.base)) at \(here): "
                            + "keys must be strings", code: .invalidKey)
                }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                writeString(name)
                out.append(UInt8(ascii: ":"))
                keys.append(name)
                try write(child, depth: depth + 1)
                keys.removeLast()
            }
            out.append(UInt8(ascii: "}"))
        }

        private mutating func writeArray(_ array: [Any], depth: Int) throws(HearthError) {
            out.append(UInt8(ascii: "["))
            for (index, element) in array.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                keys.append(String(index))
                try write(element, depth: depth + 1)
                keys.removeLast()
            }
            out.append(UInt8(ascii: "]"))
        }

        private mutating func append(_ text: String) {
            out.append(contentsOf: text.utf8)
        }
    }
}

/// Lets the encoder see through optionals stored in `Any`.
private protocol OptionalProtocol {
    var wrappedAny: Any? { get }
}

extension Optional: OptionalProtocol {
    fileprivate var wrappedAny: Any? {
        switch self {
        case .some(let wrapped): wrapped
        case .none: nil
        }
    }
}
