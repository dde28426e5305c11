internal import CHearth
import Foundation

/// Validation of JSON text as Hearth data, with the rules of the C core
/// (keys, depth, string and key sizes, numbers, priorities, `.value`,
/// `.sv`): what `hearth check` runs.
public enum HearthJSON {
    /// What valid data holds.
    public struct Summary: Sendable, Equatable {
        /// Nodes with data: leaves and objects, the top one included (0
        /// for `null`).
        public let nodeCount: Int
        /// Levels of keys: 0 for a leaf or null, 1 for `{"a": 1}`.
        public let depth: Int
    }

    /// Validates `data` (UTF-8 JSON text). Throws a `HearthError` naming
    /// the key, path or limit at fault, with the line and column of JSON
    /// syntax errors.
    public static func validate(_ data: Data, allowServerValues: Bool = false) throws(HearthError)
        -> Summary
    {
        let node = try NodeEncoder.node(fromJSON: [UInt8](data), allowServerValues: allowServerValues)
        var count = 0
        let depth = measure(node.pointer, count: &count)
        return Summary(nodeCount: count, depth: depth)
    }

    /// Counts the nodes below (and including) `node`; returns its depth.
    private static func measure(_ node: OpaquePointer, count: inout Int) -> Int {
        if hearth_node_is_null(node) { return 0 }
        count += 1
        var deepest = -1
        Node.forEachChild(of: node) { _, child in
            deepest = max(deepest, measure(child, count: &count))
        }
        return deepest + 1
    }
}
