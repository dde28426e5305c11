internal import CHearth
import Foundation

/// Converts C nodes to the Foundation values the SDK hands out: `NSNull`
/// for no data, `NSNumber` for numbers and booleans (`NSNumber(value:
/// Bool)`, so `as? Bool` works and booleans stay booleans), `String`,
/// `NSDictionary` for objects and `NSArray` for objects that read as arrays.
///
/// The array rule and number forms are those of `hearth_node_to_json`:
/// the C core decides which objects read as arrays (`hearth_node_is_array`;
/// holes become `NSNull`); integral numbers below 2^53 become integers.
enum NodeDecoder {
    /// The plain value (`DataSnapshot.value`).
    static func value(of node: OpaquePointer) -> Any {
        decode(node, export: false)
    }

    /// The value with priorities, never converted to arrays
    /// (`DataSnapshot.valueInExportFormat()`).
    static func exportValue(of node: OpaquePointer) -> Any {
        decode(node, export: true)
    }

    private static func decode(_ node: OpaquePointer, export: Bool) -> Any {
        let type = hearth_node_type(node)
        if type == HEARTH_TYPE_OBJECT {
            return object(node, export: export)
        }
        let value = leaf(node)
        if export, let priority = priority(of: node) {
            return NSDictionary(dictionary: [".value": value, ".priority": priority])
        }
        return value
    }

    /// A leaf's value (NSNull for the null node).
    static func leaf(_ node: OpaquePointer) -> Any {
        switch hearth_node_type(node) {
        case HEARTH_TYPE_BOOLEAN:
            return NSNumber(value: hearth_node_boolean_value(node))
        case HEARTH_TYPE_NUMBER:
            return number(hearth_node_number_value(node))
        case HEARTH_TYPE_STRING:
            var length = 0
            guard let bytes = hearth_node_string_value(node, &length) else { return "" }
            return bytes.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            }
        case HEARTH_TYPE_SERVER_VALUE:
            // Only values parsed for writing hold placeholders; show them as
            // they were written.
            let json = Node(retaining: node).json()
            return (try? JSONSerialization.jsonObject(with: Data(json.utf8))) ?? NSNull()
        default:
            return NSNull()
        }
    }

    /// The node's priority as a Foundation value, or nil when it has none.
    static func priority(of node: OpaquePointer) -> Any? {
        let priority = hearth_node_priority(node)
        guard !hearth_node_is_null(priority) else { return nil }
        return leaf(priority)
    }

    static func number(_ value: Double) -> NSNumber {
        if value == value.rounded(.towardZero), abs(value) < 9_007_199_254_740_992 {
            return NSNumber(value: Int64(value))
        }
        return NSNumber(value: value)
    }

    private static func object(_ node: OpaquePointer, export: Bool) -> Any {
        var keys: [String] = []
        var values: [Any] = []
        let count = hearth_node_child_count(node)
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
        Node.forEachChild(of: node) { key, child in
            keys.append(key)
            values.append(decode(child, export: export))
        }
        if !export, hearth_node_is_array(node) {
            // The C core's rule: every key an index, the largest below
            // twice the count; keys come in numeric order.
            let indexes = keys.map { Int($0)! }
            var array = [Any](repeating: NSNull(), count: (indexes.last ?? -1) + 1)
            for (index, value) in zip(indexes, values) {
                array[index] = value
            }
            return NSArray(array: array)
        }
        let dictionary = NSMutableDictionary(capacity: keys.count + 1)
        for (key, value) in zip(keys, values) {
            dictionary[key] = value
        }
        if export, let priority = priority(of: node) {
            dictionary[".priority"] = priority
        }
        return dictionary
    }
}
