internal import CHearth
import Foundation

/// The data at a location at one moment, as `DataSnapshot` in
/// FirebaseDatabase. Immutable; it holds its own reference to the C node,
/// so it stays valid whatever is written later. Open, as the SDK's class
/// is, so that apps can subclass it for test doubles.
open class DataSnapshot: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: every stored property is immutable; the node is
    // immutable with an atomic reference count (hearth.h), and the query is
    // only read. (An app's subclass answers for its own state.)

    let node: Node
    /// The query whose result this is: it sets the order of ``children``.
    let query: QueryParams
    private let location: DatabaseReference

    init(node: Node, ref: DatabaseReference, query: QueryParams) {
        self.node = node
        self.location = ref
        self.query = query
    }

    /// An empty snapshot (no value) of the default database's root, as the
    /// SDK's plain initializer gives (for test doubles and placeholders).
    public init() {
        node = .null
        location = DatabaseReference()
        query = .default
    }

    /// The location of the data.
    open var ref: DatabaseReference { location }

    /// The key of the location ("" at the root).
    open var key: String { ref.key ?? "" }

    /// The data as Foundation values: `NSNull` when there is none, an
    /// `NSNumber` for numbers and booleans, a `String`, an `NSDictionary`,
    /// or an `NSArray` when the children's keys read as an array.
    open var value: Any? {
        NodeDecoder.value(of: node.pointer)
    }

    /// The data with priorities (`.priority`, `.value`) and without array
    /// conversion, as the service's export format.
    open func valueInExportFormat() -> Any? {
        NodeDecoder.exportValue(of: node.pointer)
    }

    /// The priority: an `NSNumber`, a `String`, or `NSNull` when none.
    open var priority: Any? {
        NodeDecoder.priority(of: node.pointer) ?? NSNull()
    }

    /// Whether there is data here.
    open func exists() -> Bool {
        !node.isNull
    }

    /// The number of children.
    open var childrenCount: UInt {
        UInt(node.childCount)
    }

    /// Whether there are children.
    open func hasChildren() -> Bool {
        node.childCount > 0
    }

    /// Whether there is data at the relative `path`. An invalid path is a
    /// precondition failure, as the SDK raises.
    open func hasChild(_ path: String) -> Bool {
        !child(path, function: "hasChild:").isNull
    }

    /// The data at the relative `path` (which may have several keys). An
    /// invalid path is a precondition failure, as the SDK raises.
    open func childSnapshot(forPath path: String) -> DataSnapshot {
        let child = child(path, function: "childSnapshot(forPath:)")
        let location = DatabasePath.join(ref.path, path)
        return DataSnapshot(
            node: child, ref: DatabaseReference(database: ref.db, normalizedPath: location),
            query: .default)
    }

    /// A snapshot for each child, in the order of the query that produced
    /// this snapshot (priority order, ties by key, for a plain reference).
    /// Iterate with `for case let child as DataSnapshot in snapshot.children`.
    open var children: NSEnumerator {
        NSArray(array: childSnapshots).objectEnumerator()
    }

    /// The children as an array, in the query's order (a Swift extra).
    open var childSnapshots: [DataSnapshot] {
        var snapshots: [DataSnapshot] = []
        snapshots.reserveCapacity(node.childCount)
        let database = ref.db
        let base = ref.path
        query.forEachChild(of: node.pointer) { key, child in
            snapshots.append(
                DataSnapshot(
                    node: Node(retaining: child),
                    ref: DatabaseReference(
                        database: database,
                        normalizedPath: base.isEmpty ? key : base + "/" + key),
                    query: .default))
        }
        return snapshots
    }

    /// The data as compact JSON text (a Swift extra).
    open var json: String {
        node.json()
    }

    open var description: String {
        "Snap (\(key)) \(node.json())"
    }

    private func child(_ path: String, function: String) -> Node {
        do {
            return try node.node(atPath: path)
        } catch {
            preconditionFailure("(\(function)) \(error.message)")
        }
    }
}
