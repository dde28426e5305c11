internal import CHearth
import Foundation

/// onDisconnect operations, as in FirebaseDatabase: the server performs
/// them when this client's connection ends, however it ends (a crash or a
/// lost network included). They need a database opened on a server URL
/// (or `useEmulator`); on an embedded database they complete with an
/// "unsupported" error.
extension DatabaseReference {
    public func onDisconnectSetValue(_ value: Any?) {
        onDisconnectSetValue(value, withCompletionBlock: nil)
    }

    public func onDisconnectSetValue(
        _ value: Any?, withCompletionBlock block: ((Error?, DatabaseReference) -> Void)?
    ) {
        write("onDisconnectSetValue", completion: block.map { callback($0) }) {
            try onDisconnectSetStart(value)
        }
    }

    @discardableResult
    nonisolated(nonsending) public func onDisconnectSetValue(_ value: Any?) async throws
        -> DatabaseReference
    {
        try await writing("onDisconnectSetValue") { try onDisconnectSetStart(value) }
    }

    public func onDisconnectSetValue(_ value: Any?, andPriority priority: Any?) {
        onDisconnectSetValue(value, andPriority: priority, withCompletionBlock: nil)
    }

    public func onDisconnectSetValue(
        _ value: Any?, andPriority priority: Any?,
        withCompletionBlock block: ((Error?, DatabaseReference) -> Void)?
    ) {
        write("onDisconnectSetValue", completion: block.map { callback($0) }) {
            try onDisconnectSetStart(value, priority: priority)
        }
    }

    @discardableResult
    nonisolated(nonsending) public func onDisconnectSetValue(_ value: Any?, andPriority priority: Any?)
        async throws -> DatabaseReference
    {
        try await writing("onDisconnectSetValue") { try onDisconnectSetStart(value, priority: priority) }
    }

    public func onDisconnectRemoveValue() {
        onDisconnectSetValue(nil, withCompletionBlock: nil)
    }

    public func onDisconnectRemoveValue(
        completionBlock block: @escaping (Error?, DatabaseReference) -> Void
    ) {
        onDisconnectSetValue(nil, withCompletionBlock: block)
    }

    @discardableResult
    nonisolated(nonsending) public func onDisconnectRemoveValue() async throws -> DatabaseReference {
        try await writing("onDisconnectRemoveValue") { try onDisconnectSetStart(nil) }
    }

    public func onDisconnectUpdateChildValues(_ values: [AnyHashable: Any]) {
        onDisconnectUpdateChildValues(values, withCompletionBlock: nil)
    }

    public func onDisconnectUpdateChildValues(
        _ values: [AnyHashable: Any],
        withCompletionBlock block: ((Error?, DatabaseReference) -> Void)?
    ) {
        write("onDisconnectUpdateChildValues", completion: block.map { callback($0) }) {
            try onDisconnectUpdateStart(values)
        }
    }

    @discardableResult
    nonisolated(nonsending) public func onDisconnectUpdateChildValues(_ values: [AnyHashable: Any])
        async throws -> DatabaseReference
    {
        try await writing("onDisconnectUpdateChildValues") { try onDisconnectUpdateStart(values) }
    }

    public func cancelDisconnectOperations() {
        cancelDisconnectOperations(completionBlock: nil)
    }

    public func cancelDisconnectOperations(
        completionBlock block: ((Error?, DatabaseReference) -> Void)?
    ) {
        write("cancelDisconnectOperations", completion: block.map { callback($0) }) {
            onDisconnectCancelStart()
        }
    }

    @discardableResult
    nonisolated(nonsending) public func cancelDisconnectOperations() async throws -> DatabaseReference {
        try await writing("cancelDisconnectOperations") { onDisconnectCancelStart() }
    }

    // MARK: Plumbing

    private func onDisconnectSetStart(_ value: Any?, priority: Any? = nil) throws(HearthError)
        -> Database.WriteStart
    {
        let node = try valueNode(
            value, priority: priority, hasPriority: priority != nil && !(priority is NSNull))
        let (db, path) = (self.database, self.path)
        return { callback, context, release, error in
            hearth_db_on_disconnect_set(db.handle, path, node.pointer, callback, context, release, error)
        }
    }

    private func onDisconnectUpdateStart(_ values: [AnyHashable: Any]) throws(HearthError)
        -> Database.WriteStart
    {
        try multiPathStart(values, for: "onDisconnectUpdateChildValues", onDisconnect: true)
    }

    private func onDisconnectCancelStart() -> Database.WriteStart {
        let (db, path) = (self.database, self.path)
        return { callback, context, release, error in
            hearth_db_on_disconnect_cancel(db.handle, path, callback, context, release, error)
        }
    }
}
