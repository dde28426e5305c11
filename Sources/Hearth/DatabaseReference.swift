internal import CHearth
import Foundation

/// A location in the database, for reading and writing, as
/// `DatabaseReference` in FirebaseDatabase.
///
/// Writes apply to the database in call order and raise events before
/// their completion runs. Completion blocks run on the database's
/// `callbackQueue`; values that cannot be stored (unsupported types,
/// invalid keys, too deep, non-finite numbers) complete with a
/// `HearthError` instead of raising (without a completion block the error
/// is logged). An invalid path given to `child(_:)` is a precondition
/// failure, as the SDK raises. Open, as the SDK's class is, for test
/// doubles.
open class DatabaseReference: DatabaseQuery, @unchecked Sendable {
    // @unchecked Sendable: no state beyond DatabaseQuery's immutable one.

    init(database: Database, normalizedPath path: String) {
        super.init(database: database, normalizedPath: path, params: .default)
    }

    /// The root of the default database, as the SDK's plain initializer
    /// gives (for test doubles and placeholders).
    public override init() {
        super.init()
    }

    // MARK: Navigation

    /// The database this reference belongs to.
    open var database: Database { db }

    /// The location's URL, as the SDK's `description()` gives it.
    open func description() -> String { url }

    /// The location's URL: the database URL and the path.
    open var url: String { db.locationURL(path) }

    /// Disconnects every database instance (as `Database.goOffline()` on
    /// each).
    open class func goOffline() {
        Database.allInstances.forEach { $0.goOffline() }
    }

    /// Reconnects every database instance.
    open class func goOnline() {
        Database.allInstances.forEach { $0.goOnline() }
    }

    /// The last key of the location; nil at the root.
    open var key: String? { DatabasePath.lastKey(of: path) }

    /// The reference to the parent location; nil at the root.
    open var parent: DatabaseReference? {
        DatabasePath.parent(of: path).map { DatabaseReference(database: db, normalizedPath: $0) }
    }

    /// The reference to the root of the database.
    open var root: DatabaseReference {
        DatabaseReference(database: db, normalizedPath: "")
    }

    /// The reference to `pathString` below this location: a key or a
    /// slash-separated path ("a/b/c").
    open func child(_ pathString: String) -> DatabaseReference {
        precondition(!DatabasePath.normalize(pathString).isEmpty, "(child:) Must be a non-empty path")
        do {
            try DatabasePath.validate(pathString)
        } catch {
            preconditionFailure("(child:) \(error.message)")
        }
        return DatabaseReference(database: db, normalizedPath: DatabasePath.join(path, pathString))
    }

    /// A child reference with a new push ID as its key: IDs from one
    /// database are strictly increasing, so children created this way sort
    /// in creation order. Nothing is written.
    open func childByAutoId() -> DatabaseReference {
        DatabaseReference(database: db, normalizedPath: DatabasePath.join(path, db.nextPushID()))
    }

    // MARK: Writing

    /// Replaces the data here with `value` (nil or `NSNull` deletes).
    open func setValue(_ value: Any?) {
        write("setValue", completion: nil) { try self.setStart(value, priority: nil, hasPriority: false) }
    }

    open func setValue(
        _ value: Any?, withCompletionBlock block: @escaping (Error?, DatabaseReference) -> Void
    ) {
        write("setValue", completion: callback(block)) {
            try self.setStart(value, priority: nil, hasPriority: false)
        }
    }

    /// Replaces the data here with `value`; returns once it is applied.
    @discardableResult
    nonisolated(nonsending) open func setValue(_ value: Any?) async throws -> DatabaseReference {
        try await writing("setValue") { try self.setStart(value, priority: nil, hasPriority: false) }
    }

    /// Replaces the data here with `value` carrying `priority` (nil, a
    /// number or a string).
    open func setValue(_ value: Any?, andPriority priority: Any?) {
        write("setValue", completion: nil) { try self.setStart(value, priority: priority, hasPriority: true) }
    }

    open func setValue(
        _ value: Any?, andPriority priority: Any?,
        withCompletionBlock block: @escaping (Error?, DatabaseReference) -> Void
    ) {
        write("setValue", completion: callback(block)) {
            try self.setStart(value, priority: priority, hasPriority: true)
        }
    }

    @discardableResult
    nonisolated(nonsending) open func setValue(_ value: Any?, andPriority priority: Any?) async throws
        -> DatabaseReference
    {
        try await writing("setValue") { try self.setStart(value, priority: priority, hasPriority: true) }
    }

    /// Sets the priority of the data here (nil removes it).
    open func setPriority(_ priority: Any?) {
        write("setPriority", completion: nil) { try self.priorityStart(priority) }
    }

    open func setPriority(
        _ priority: Any?, withCompletionBlock block: @escaping (Error?, DatabaseReference) -> Void
    ) {
        write("setPriority", completion: callback(block)) { try self.priorityStart(priority) }
    }

    @discardableResult
    nonisolated(nonsending) open func setPriority(_ priority: Any?) async throws -> DatabaseReference {
        try await writing("setPriority") { try self.priorityStart(priority) }
    }

    /// Writes several locations below this one as one write: keys are
    /// relative paths ("a", "a/b"), nil/`NSNull` deletes; a key that is an
    /// ancestor of another fails the whole update.
    open func updateChildValues(_ values: [AnyHashable: Any]) {
        write("updateChildValues", completion: nil) { try self.updateStart(values) }
    }

    open func updateChildValues(
        _ values: [AnyHashable: Any], withCompletionBlock block: @escaping (Error?, DatabaseReference) -> Void
    ) {
        write("updateChildValues", completion: callback(block)) { try self.updateStart(values) }
    }

    @discardableResult
    nonisolated(nonsending) open func updateChildValues(_ values: [AnyHashable: Any]) async throws
        -> DatabaseReference
    {
        try await writing("updateChildValues") { try self.updateStart(values) }
    }

    /// Deletes the data here.
    open func removeValue() {
        write("removeValue", completion: nil) { self.removeStart() }
    }

    open func removeValue(completionBlock block: @escaping (Error?, DatabaseReference) -> Void) {
        write("removeValue", completion: callback(block)) { self.removeStart() }
    }

    @discardableResult
    nonisolated(nonsending) open func removeValue() async throws -> DatabaseReference {
        try await writing("removeValue") { self.removeStart() }
    }

    // MARK: Write plumbing

    func write(
        _ function: String, completion: (@Sendable (HearthError?) -> Void)?,
        _ prepare: () throws -> Database.WriteStart
    ) {
        db.write("\(function) at \(self)", prepare: prepare, completion: completion)
    }

    /// The C completion for a user's block: hops to the callback queue.
    func callback(_ block: @escaping (Error?, DatabaseReference) -> Void)
        -> @Sendable (HearthError?) -> Void
    {
        let block = db.bound(block)
        return { [self] error in
            block.async { $0(error?.bridged, self) }
        }
    }

    nonisolated(nonsending) func writing(
        _ function: String, _ prepare: () throws -> Database.WriteStart
    ) async throws -> DatabaseReference {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            write(function, completion: { error in
                if let error {
                    continuation.resume(throwing: error.bridged)
                } else {
                    continuation.resume()
                }
            }, prepare)
        }
        return self
    }

    /// The node a set writes here: value, with priority when hasPriority
    /// (a null value takes no priority).
    func valueNode(_ value: Any?, priority: Any?, hasPriority: Bool) throws(HearthError) -> Node {
        let node = try NodeEncoder.node(from: value, location: "/" + path)
        guard hasPriority && !node.isNull else { return node }
        let priorityNode = try NodeEncoder.node(
            from: priority, allowServerValues: false, location: "/" + path + "/.priority")
        var out: OpaquePointer?
        try HearthError.check { hearth_node_with_priority(node.pointer, priorityNode.pointer, &out, $0) }
        guard let out else { throw HearthError(code: .outOfMemory) }
        return Node(adopting: out)
    }

    private func setStart(_ value: Any?, priority: Any?, hasPriority: Bool) throws(HearthError)
        -> Database.WriteStart
    {
        let node = try valueNode(value, priority: priority, hasPriority: hasPriority)
        let (db, path) = (self.db, self.path)
        return { [node] callback, context, release, error in
            hearth_db_set(db.handle, path, node.pointer, callback, context, release, error)
        }
    }

    private func priorityStart(_ priority: Any?) throws(HearthError) -> Database.WriteStart {
        let node = try NodeEncoder.node(
            from: priority, allowServerValues: false, location: "/" + path + "/.priority")
        let (db, target) = (self.db, DatabasePath.join(path, ".priority"))
        return { callback, context, release, error in
            hearth_db_set(db.handle, target, node.pointer, callback, context, release, error)
        }
    }

    /// The (relative path, value) parts of an update below this location.
    func updateParts(_ values: [AnyHashable: Any], for function: String) throws(HearthError)
        -> (paths: [String], nodes: [Node])
    {
        var paths: [String] = []
        var nodes: [Node] = []
        paths.reserveCapacity(values.count)
        nodes.reserveCapacity(values.count)
        for (key, value) in values {
            guard let relative = key.base as? String else {
                throw HearthError(
                    code: .invalidKey,
                    message: "\(function): keys must be strings (paths), not \(type(of: key.base))")
            }
            paths.append(relative)
            nodes.append(try NodeEncoder.node(from: value, location: DatabasePath.join("/" + path, relative)))
        }
        return (paths, nodes)
    }

    private func updateStart(_ values: [AnyHashable: Any]) throws(HearthError) -> Database.WriteStart {
        try multiPathStart(values, for: "updateChildValues", onDisconnect: false)
    }

    /// A multi-path write of values: now, or queued for when the
    /// connection drops (the C calls take the same arguments).
    func multiPathStart(_ values: [AnyHashable: Any], for function: String, onDisconnect: Bool)
        throws(HearthError) -> Database.WriteStart
    {
        let (paths, nodes) = try updateParts(values, for: function)
        let (db, path) = (self.db, self.path)
        let write = onDisconnect ? hearth_db_on_disconnect_update : hearth_db_update
        return { callback, context, release, error in
            Self.withCStrings(paths) { cPaths in
                let pointers: [OpaquePointer] = nodes.map { $0.pointer }
                return write(db.handle, path, cPaths.count, cPaths, pointers, callback, context, release, error)
            }
        }
    }

    private func removeStart() -> Database.WriteStart {
        let (db, path) = (self.db, self.path)
        return { callback, context, release, error in
            hearth_db_remove(db.handle, path, callback, context, release, error)
        }
    }

    /// Calls `body` with the strings as C strings, valid during the call.
    static func withCStrings<Result>(
        _ strings: [String], _ body: ([UnsafePointer<CChar>]) -> Result
    ) -> Result {
        // Every string in one buffer, each NUL-terminated, and pointers
        // into it: one allocation, and none that can come back NULL.
        var bytes: [CChar] = []
        var offsets: [Int] = []
        for string in strings {
            offsets.append(bytes.count)
            bytes.append(contentsOf: string.utf8CString)
        }
        return bytes.withUnsafeBufferPointer { buffer in
            body(offsets.map { buffer.baseAddress! + $0 })
        }
    }
}
