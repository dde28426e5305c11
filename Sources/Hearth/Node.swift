internal import CHearth

/// Owns one reference to an immutable C node (`hearth_node_t`).
final class Node: @unchecked Sendable {
    // @unchecked Sendable: a node never changes once built and its reference
    // count is atomic (hearth.h), so it may be read and released on any
    // thread.
    let pointer: OpaquePointer

    /// Takes over a new reference (from a `*_new` constructor or an out
    /// parameter).
    init(adopting pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Takes a reference of its own to a borrowed node.
    init(retaining pointer: OpaquePointer) {
        self.pointer = hearth_node_incref(pointer)
    }

    deinit {
        hearth_node_decref(pointer)
    }

    /// The null node (no data).
    static let null = Node(adopting: hearth_node_null())

    var type: hearth_type { hearth_node_type(pointer) }
    var isNull: Bool { hearth_node_is_null(pointer) }
    var childCount: Int { hearth_node_child_count(pointer) }

    /// The node at a relative path ("" is the node itself); null for a path
    /// with nothing there. Throws for an invalid path.
    func node(atPath path: String) throws(HearthError) -> Node {
        var child: OpaquePointer?
        try HearthError.check { hearth_node_get(pointer, path, &child, $0) }
        return child.map { Node(retaining: $0) } ?? .null
    }

    /// Calls `body` with each child's key and (borrowed) node in key order.
    func forEachChild(_ body: (String, OpaquePointer) -> Void) {
        Node.forEachChild(of: pointer, body)
    }

    /// The same for a borrowed node.
    static func forEachChild(of pointer: OpaquePointer, _ body: (String, OpaquePointer) -> Void) {
        visitChildren(body) { callback, context in
            _ = hearth_node_foreach_child(pointer, callback, context)
        }
    }

    /// Runs a C child iteration (`iterate` receives the C callback and its
    /// context) so that `body` gets each child's key and borrowed node.
    static func visitChildren(
        _ body: (String, OpaquePointer) -> Void,
        with iterate: (hearth_child_cb, UnsafeMutableRawPointer) -> Void
    ) {
        withoutActuallyEscaping(body) { body in
            var visit = body
            withUnsafeMutablePointer(to: &visit) { context in
                iterate(
                    { key, child, context in
                        guard let context else { return 0 }
                        let visit = context.assumingMemoryBound(
                            to: ((String, OpaquePointer) -> Void).self
                        ).pointee
                        visit(String(cString: key), child)
                        return 0
                    }, UnsafeMutableRawPointer(context))
            }
        }
    }

    /// The node as JSON text (``hearth_node_to_json``).
    func json(flags: UInt32 = 0) -> String {
        guard let text = hearth_node_to_json(pointer, flags, nil) else { return "null" }
        defer { hearth_free(text) }
        return String(cString: text)
    }
}
