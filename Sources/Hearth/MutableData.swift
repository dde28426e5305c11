internal import CHearth
import Foundation

/// The data at a location during a transaction, which the transaction
/// block reads and changes, as `MutableData` in FirebaseDatabase.
///
/// A transaction hands its block one `MutableData` holding the current
/// value. Every `MutableData` reached from it (``childData(byAppendingPath:)``,
/// ``children``) is a view of the same tree at a relative path: setting a
/// child's ``value`` or ``priority`` changes what its parent sees, and the
/// block commits the tree by returning `TransactionResult.success(withValue:)`.
///
/// Values are converted as `DatabaseReference.setValue(_:)` converts them,
/// when they are set: a value that cannot be stored (an unsupported type,
/// an invalid key, too deep, a non-finite number) leaves the data unchanged
/// and fails the transaction with that error, where the SDK raises an
/// exception (nothing here traps). Reading converts as `DataSnapshot` does.
///
/// Not thread-safe, as in the SDK: use it only within the transaction
/// block, on the thread that runs it. Open, as the SDK's class is, for test
/// doubles.
open class MutableData {
    /// The tree shared by a transaction's `MutableData` views.
    final class Storage {
        /// One owned reference to the whole tree (`hearth_node_t *`); writes
        /// replace it copy-on-write (`hearth_node_set`), so nodes shared
        /// with the database or with a result are never modified.
        private(set) var root: OpaquePointer
        /// The first value that could not be stored; it fails the
        /// transaction.
        private(set) var failure: HearthError?
        /// The database location the tree stands for ("" when none), for
        /// messages.
        let location: String

        init(node: OpaquePointer, location: String) {
            root = hearth_node_incref(node)
            self.location = location
        }

        deinit {
            hearth_node_decref(root)
        }

        /// The node at `path` (borrowed from `root`, valid until the next
        /// write); the null node when nothing is there.
        func node(at path: String) -> OpaquePointer {
            var out: OpaquePointer?
            guard hearth_node_get(root, path, &out, nil) == 0, let out else {
                return Node.null.pointer
            }
            return out
        }

        /// Writes `value` at `path` (which may end in ".priority").
        func set(_ value: Node, at path: String) {
            var details = hearth_error_t()
            var updated: OpaquePointer? = root
            let status = hearth_node_set(&updated, path, value.pointer, &details)
            if let updated { root = updated }
            if status != 0 {
                fail(HearthError(status: status, details: details))
            }
        }

        func fail(_ error: HearthError) {
            if failure == nil { failure = error }
        }
    }

    let storage: Storage
    /// The normalized path of this view below the transaction's location
    /// ("" for the data the block received).
    let path: String

    init(storage: Storage, path: String) {
        self.storage = storage
        self.path = path
    }

    /// Data of its own, holding `node`; `location` (normalized) is where
    /// the data comes from, for messages.
    convenience init(node: Node, location: String = "") {
        self.init(storage: Storage(node: node.pointer, location: location), path: "")
    }

    /// An empty `MutableData` of its own (no data), as the SDK allows.
    public init() {
        storage = Storage(node: Node.null.pointer, location: "")
        path = ""
    }

    /// The node this view shows now (borrowed: valid until the next write).
    var nodePointer: OpaquePointer { storage.node(at: path) }

    /// The data here as Foundation values, as `DataSnapshot.value`: `NSNull`
    /// when there is none, `NSNumber`, `String`, `NSDictionary` or `NSArray`.
    /// Setting it replaces the data here (and its priority); nil or `NSNull`
    /// deletes it. A dictionary may carry `.value` and `.priority`, and
    /// server values (`ServerValue.timestamp()`) are resolved on commit.
    open var value: Any? {
        get { NodeDecoder.value(of: nodePointer) }
        set {
            do {
                storage.set(try NodeEncoder.node(from: newValue, location: location), at: path)
            } catch {
                storage.fail(error)
            }
        }
    }

    /// The priority here: an `NSNumber`, a `String`, or `NSNull` when none.
    /// Setting it to nil removes it; a location without data keeps none.
    open var priority: Any? {
        get { NodeDecoder.priority(of: nodePointer) ?? NSNull() }
        set {
            do {
                let node = try NodeEncoder.node(
                    from: newValue, allowServerValues: false, location: location + "/.priority")
                storage.set(node, at: DatabasePath.join(path, ".priority"))
            } catch {
                storage.fail(error)
            }
        }
    }

    /// The last key of this view's path: nil for the data the transaction
    /// block received, as in the SDK.
    open var key: String? {
        DatabasePath.lastKey(of: path)
    }

    /// The number of children.
    open var childrenCount: UInt {
        UInt(hearth_node_child_count(nodePointer))
    }

    /// Whether there are children.
    open func hasChildren() -> Bool {
        hearth_node_child_count(nodePointer) > 0
    }

    /// Whether there is data at the relative `path`. An invalid path is a
    /// precondition failure, as the SDK raises.
    open func hasChild(atPath path: String) -> Bool {
        Self.validate(path, function: "hasChild(atPath:)")
        return !hearth_node_is_null(storage.node(at: DatabasePath.join(self.path, path)))
    }

    /// The data at the relative `path` (which may have several keys), as a
    /// view that writes through to this data. An invalid path is a
    /// precondition failure, as the SDK raises.
    open func childData(byAppendingPath path: String) -> MutableData {
        Self.validate(path, function: "childData(byAppendingPath:)")
        return MutableData(storage: storage, path: DatabasePath.join(self.path, path))
    }

    /// A `MutableData` for each child, in priority order (ties by key), as
    /// the SDK enumerates. Iterate with
    /// `for case let child as MutableData in data.children`.
    open var children: NSEnumerator {
        var keys: [String] = []
        QueryParams.default.forEachChild(of: nodePointer) { key, _ in keys.append(key) }
        let views = keys.map { MutableData(storage: storage, path: DatabasePath.join(path, $0)) }
        return NSArray(array: views).objectEnumerator()
    }

    /// The data here as a node of its own, or the first error met while
    /// changing the tree.
    func committedNode() throws(HearthError) -> Node {
        if let failure = storage.failure { throw failure }
        return Node(retaining: nodePointer)
    }

    /// Where this view sits in the database, for messages.
    private var location: String { "/" + DatabasePath.join(storage.location, path) }

    private static func validate(_ path: String, function: String) {
        do {
            try DatabasePath.validate(path)
        } catch {
            preconditionFailure("(\(function)) \(error.message)")
        }
    }
}

extension MutableData: CustomStringConvertible {
    public var description: String {
        let json = Node(retaining: nodePointer).json()
        if let key { return "MutableData (\(key)) \(json)" }
        return "MutableData (top-most transaction) \(json)"
    }
}

/// What a transaction block decides, as `TransactionResult` in
/// FirebaseDatabase: commit a value (``success(withValue:)``) or change
/// nothing (``abort()``). Open, as the SDK's class is, for test doubles.
open class TransactionResult {
    /// The data to commit; nil to abort.
    let update: MutableData?

    private init(update: MutableData?) {
        self.update = update
    }

    /// A result that aborts the transaction, as `abort()`.
    public init() {
        update = nil
    }

    /// Commits the data of `value` at the transaction's location. `value` is
    /// normally the `MutableData` the block received, changed; a view of one
    /// of its children commits that child's data at the location.
    public static func success(withValue value: MutableData) -> TransactionResult {
        TransactionResult(update: value)
    }

    /// Ends the transaction without changing anything; its completion
    /// reports no error and `committed == false`.
    public static func abort() -> TransactionResult {
        TransactionResult(update: nil)
    }
}
