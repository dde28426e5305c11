internal import CHearth
import Foundation

/// A view of the data at a location, possibly sorted and filtered, as
/// `DatabaseQuery` in FirebaseDatabase; the base class of
/// `DatabaseReference`.
///
/// A query is immutable: each `query*` builder returns a new query. An
/// invalid combination of builders is a precondition failure with the
/// SDK's message, where the SDK raises an exception (a programming error,
/// as in the SDK).
///
/// Open, as the SDK's class is, so that apps can subclass it for test
/// doubles. Equal queries read the same data: see ``==(_:_:)``.
open class DatabaseQuery: @unchecked Sendable, CustomStringConvertible, Hashable {
    // @unchecked Sendable: every stored property is immutable and Sendable;
    // Hearth's subclass adds no state (an app's subclass answers for its own).

    /// The database (exposed publicly as `DatabaseReference.database`).
    let db: Database
    /// The normalized location ("" for the root).
    let path: String
    /// The query's parameters (`QueryParams.default` for a reference).
    let params: QueryParams

    init(database: Database, normalizedPath path: String, params: QueryParams) {
        self.db = database
        self.path = path
        self.params = params
    }

    /// The root of the default database with no constraints, as the SDK's
    /// plain initializer gives (for test doubles and placeholders).
    public init() {
        db = Database.database()
        path = ""
        params = .default
    }

    /// Whether two queries read the same data: the same database instance,
    /// the same location and the same parameters (order, bounds, limit).
    /// A value equality, where the SDK's NSObject default is identity:
    /// apps use references and queries as dictionary keys and in sets, and
    /// two references built separately to one location (`ref.child("a")`
    /// twice, `snapshot.ref`) then find the same entry, as two equal paths
    /// should. A reference equals a plain query of its location, since both
    /// read exactly the same data.
    public static func == (lhs: DatabaseQuery, rhs: DatabaseQuery) -> Bool {
        lhs.db === rhs.db && lhs.path == rhs.path && lhs.params.identifier == rhs.params.identifier
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(db))
        hasher.combine(path)
        hasher.combine(params.identifier)
    }

    /// A reference to the query's location.
    open var ref: DatabaseReference {
        DatabaseReference(database: db, normalizedPath: path)
    }

    open var description: String {
        params.isDefault ? "/\(path)" : "/\(path) \(params.identifier)"
    }

    // MARK: Observing

    /// Calls `block` on the database's `callbackQueue` for each event of
    /// `eventType`: at once for the current data, then on every change.
    @discardableResult
    open func observe(_ eventType: DataEventType, with block: @escaping (DataSnapshot) -> Void)
        -> DatabaseHandle
    {
        observe(eventType, with: block, withCancel: nil)
    }

    /// The same; `cancelBlock` is called if the observer cannot be
    /// registered (or, later, when the server revokes it).
    @discardableResult
    open func observe(
        _ eventType: DataEventType, with block: @escaping (DataSnapshot) -> Void,
        withCancel cancelBlock: ((any Error) -> Void)?
    ) -> DatabaseHandle {
        addObserver(eventType, once: false, cancel: cancelBlock) { snapshot, _ in block(snapshot) }
    }

    /// Like `observe(_:with:)`, also passing the key of the previous child
    /// in the query's order (nil for the first child and for value events).
    @discardableResult
    open func observe(
        _ eventType: DataEventType,
        andPreviousSiblingKeyWith block: @escaping (DataSnapshot, String?) -> Void
    ) -> DatabaseHandle {
        observe(eventType, andPreviousSiblingKeyWith: block, withCancel: nil)
    }

    @discardableResult
    open func observe(
        _ eventType: DataEventType,
        andPreviousSiblingKeyWith block: @escaping (DataSnapshot, String?) -> Void,
        withCancel cancelBlock: ((any Error) -> Void)?
    ) -> DatabaseHandle {
        addObserver(eventType, once: false, cancel: cancelBlock, block)
    }

    /// Calls `block` once, for the first event of `eventType`, then stops.
    open func observeSingleEvent(
        of eventType: DataEventType, with block: @escaping (DataSnapshot) -> Void
    ) {
        observeSingleEvent(of: eventType, with: block, withCancel: nil)
    }

    open func observeSingleEvent(
        of eventType: DataEventType, with block: @escaping (DataSnapshot) -> Void,
        withCancel cancelBlock: ((any Error) -> Void)?
    ) {
        addObserver(eventType, once: true, cancel: cancelBlock) { snapshot, _ in block(snapshot) }
    }

    open func observeSingleEvent(
        of eventType: DataEventType,
        andPreviousSiblingKeyWith block: @escaping (DataSnapshot, String?) -> Void
    ) {
        observeSingleEvent(of: eventType, andPreviousSiblingKeyWith: block, withCancel: nil)
    }

    open func observeSingleEvent(
        of eventType: DataEventType,
        andPreviousSiblingKeyWith block: @escaping (DataSnapshot, String?) -> Void,
        withCancel cancelBlock: ((any Error) -> Void)?
    ) {
        addObserver(eventType, once: true, cancel: cancelBlock, block)
    }

    /// The first event of `eventType`, as the SDK's async form of
    /// `observeSingleEvent(of:with:)`. It does not throw, as in the SDK: if
    /// the observation is canceled (the rules refuse the read) the error is
    /// logged and the call never returns, as the SDK's block is never
    /// called then. Like the SDK's, it waits for the event even when its
    /// task is cancelled (it cannot throw); ``firstEvent(_:)`` throws
    /// instead, and honours cancellation.
    nonisolated(nonsending) open func observeSingleEvent(of eventType: DataEventType) async
        -> DataSnapshot
    {
        await observeSingleEventAndPreviousSiblingKey(of: eventType).0
    }

    /// The first event of `eventType` with the key of the child before it
    /// (nil for value events and the first child), as the SDK's async form
    /// of `observeSingleEvent(of:andPreviousSiblingKeyWith:)`. Like
    /// ``observeSingleEvent(of:)`` it does not throw and, if the
    /// observation is canceled, logs the error and never returns.
    nonisolated(nonsending) open func observeSingleEventAndPreviousSiblingKey(
        of eventType: DataEventType
    ) async -> (DataSnapshot, String?) {
        do {
            let event = try await withCheckedThrowingContinuation { continuation in
                FirstEvent(continuation).start(self, eventType)
            }
            return (event.snapshot, event.previousSiblingKey)
        } catch {
            Database.log(
                "observeSingleEvent(of:) at \(self) was canceled and will never return "
                    + "(use firstEvent(_:) to get the error): \(error.localizedDescription)")
            // Suspends this task for good, as the SDK's async form does
            // when its block is never called.
            return await withUnsafeContinuation { _ in }
        }
    }

    /// The first event of `eventType` (a Swift extra): throws the error
    /// that cancels the observation (the rules refuse the read, the
    /// database closes), where the SDK's async forms never return, and
    /// `CancellationError` when its task is cancelled first (the observer
    /// is then removed).
    nonisolated(nonsending) open func firstEvent(_ eventType: DataEventType) async throws -> DataEvent {
        let first = Locked<FirstEvent?>(nil)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let waiting = FirstEvent(continuation)
                first.withLock { $0 = waiting }
                waiting.start(self, eventType)
                // A cancellation before `first` was set found nothing to
                // cancel; one after it finds `waiting` (the flag is set
                // before the handler runs), so none is missed.
                if Task.isCancelled { waiting.cancel() }
            }
        } onCancel: {
            first.withLock { $0 }?.cancel()
        }
    }

    /// Removes one observer (registered through any reference or query of
    /// this database). No event reaches it once this returns, on the
    /// callback queue.
    open func removeObserver(withHandle handle: DatabaseHandle) {
        db.removeObserver(withHandle: handle)
    }

    /// Removes every observer of this query; on a reference, every observer
    /// at exactly this location (not those of child locations).
    open func removeAllObservers() {
        db.removeObservers(at: path, queryIdentifier: params.isDefault ? nil : params.identifier)
    }

    /// Keeps this query's data synchronized (and so cached) even with no
    /// observer, for a client of a server; an embedded database holds all
    /// its data anyway.
    open func keepSynced(_ keepSynced: Bool) {
        db.keepSynced(self, keepSynced)
    }

    /// Registers the user's blocks, called on the database's callback
    /// queue.
    @discardableResult
    func addObserver(
        _ eventType: DataEventType, once: Bool, cancel: ((any Error) -> Void)?,
        _ block: @escaping (DataSnapshot, String?) -> Void
    ) -> DatabaseHandle {
        let handlers = db.bound(ObserverRegistration.Handlers(event: block, cancel: cancel))
        return register(eventType, once: once, delivery: .callbackQueue(handlers)) { error in
            handlers.async { handlers in
                guard let cancel = handlers.cancel else {
                    Database.log("observing \(self) failed: \(error.message)")
                    return
                }
                cancel(error)
            }
        }
    }

    /// Registers Sendable blocks, called on the loop thread as events are
    /// raised (for async sequences).
    @discardableResult
    func addDirectObserver(
        _ eventType: DataEventType, once: Bool, cancel: @escaping @Sendable (any Error) -> Void,
        ended: (@Sendable () -> Void)? = nil,
        _ block: @escaping @Sendable (DataSnapshot, String?) -> Void
    ) -> DatabaseHandle {
        register(eventType, once: once, delivery: .direct(event: block, cancel: cancel), ended: ended) {
            cancel($0)
        }
    }

    /// Registers with C; when C refuses, nothing is registered and
    /// `refused` gets the error instead.
    private func register(
        _ eventType: DataEventType, once: Bool, delivery: ObserverRegistration.Delivery,
        ended: (@Sendable () -> Void)? = nil, refused: (HearthError) -> Void
    ) -> DatabaseHandle {
        let registration = ObserverRegistration(
            database: db, path: path, query: params, eventType: eventType, once: once,
            delivery: delivery, ended: ended)
        do {
            return try db.register(registration)
        } catch {
            refused(error)
            return 0
        }
    }

    // MARK: Reading once

    /// The current data for the query, after the writes made before.
    /// `completion` runs on the callback queue.
    open func getData(completion: @escaping (_ error: (any Error)?, _ snapshot: DataSnapshot?) -> Void) {
        let completion = db.bound(completion)
        read { result in
            completion.async { completion in
                switch result {
                case .success(let snapshot): completion(nil, snapshot)
                case .failure(let error): completion(error.bridged, nil)
                }
            }
        }
    }

    /// The current data for the query, after the writes made before.
    nonisolated(nonsending) open func getData() async throws -> DataSnapshot {
        try await withCheckedThrowingContinuation { continuation in
            read { result in continuation.resume(with: result.mapError { $0.bridged }) }
        }
    }

    private func read(_ completion: @escaping @Sendable (Result<DataSnapshot, HearthError>) -> Void) {
        let ref = self.ref
        let params = self.params
        let path = self.path
        db.read(path: path, query: params) { result in
            completion(
                result.map { DataSnapshot(node: $0, ref: ref, query: params) }
                    .mapError { $0.reading(path: path, query: params) })
        }
    }

    // MARK: Building queries

    /// Orders children by key.
    open func queryOrderedByKey() -> DatabaseQuery {
        building("queryOrderedByKey") { hearth_query_order_by_key($0, $1) }
    }

    /// Orders children by their value (null < false < true < numbers <
    /// strings < objects; ties by key).
    open func queryOrderedByValue() -> DatabaseQuery {
        building("queryOrderedByValue") { hearth_query_order_by_value($0, $1) }
    }

    /// Orders children by priority (the default order, made explicit).
    open func queryOrderedByPriority() -> DatabaseQuery {
        building("queryOrderedByPriority") { hearth_query_order_by_priority($0, $1) }
    }

    /// Orders children by the value at `key` (a key or a path) below each.
    open func queryOrdered(byChild key: String) -> DatabaseQuery {
        building("queryOrderedByChild:") { query, error in
            hearth_query_order_by_child(query, key, error)
        }
    }

    /// Keeps at most the first `limit` children in the query's order.
    open func queryLimited(toFirst limit: UInt) -> DatabaseQuery {
        let limit = Self.limit(limit, function: "queryLimitedToFirst:")
        return building("queryLimitedToFirst:") { hearth_query_limit_to_first($0, limit, $1) }
    }

    /// Keeps at most the last `limit` children in the query's order.
    open func queryLimited(toLast limit: UInt) -> DatabaseQuery {
        let limit = Self.limit(limit, function: "queryLimitedToLast:")
        return building("queryLimitedToLast:") { hearth_query_limit_to_last($0, limit, $1) }
    }

    /// Starts at children whose sort value is `startValue` or greater.
    open func queryStarting(atValue startValue: Any?) -> DatabaseQuery {
        queryStarting(atValue: startValue, childKey: nil)
    }

    /// The same; among children equal to `startValue`, from the key
    /// `childKey` on.
    open func queryStarting(atValue startValue: Any?, childKey: String?) -> DatabaseQuery {
        bounding("queryStartingAtValue:", startValue, childKey) { hearth_query_start_at($0, $1, $2, $3) }
    }

    /// Starts after the children whose sort value is `startValue`.
    open func queryStarting(afterValue startAfterValue: Any?) -> DatabaseQuery {
        queryStarting(afterValue: startAfterValue, childKey: nil)
    }

    /// The same; among children equal to the value, after the key
    /// `childKey`.
    open func queryStarting(afterValue startAfterValue: Any?, childKey: String?) -> DatabaseQuery {
        bounding("queryStartingAfterValue:", startAfterValue, childKey) {
            hearth_query_start_after($0, $1, $2, $3)
        }
    }

    /// Ends at children whose sort value is `endValue` or less.
    open func queryEnding(atValue endValue: Any?) -> DatabaseQuery {
        queryEnding(atValue: endValue, childKey: nil)
    }

    /// The same; among children equal to `endValue`, up to the key
    /// `childKey`.
    open func queryEnding(atValue endValue: Any?, childKey: String?) -> DatabaseQuery {
        bounding("queryEndingAtValue:", endValue, childKey) { hearth_query_end_at($0, $1, $2, $3) }
    }

    /// Ends before the children whose sort value is `endValue`.
    open func queryEnding(beforeValue endValue: Any?) -> DatabaseQuery {
        queryEnding(beforeValue: endValue, childKey: nil)
    }

    /// The same; among children equal to the value, before the key
    /// `childKey`.
    open func queryEnding(beforeValue endValue: Any?, childKey: String?) -> DatabaseQuery {
        bounding("queryEndingBeforeValue:", endValue, childKey) { hearth_query_end_before($0, $1, $2, $3) }
    }

    /// Keeps the children whose sort value is `value`.
    open func queryEqual(toValue value: Any?) -> DatabaseQuery {
        queryEqual(toValue: value, childKey: nil)
    }

    /// Keeps the child whose sort value is `value` and key is `childKey`.
    open func queryEqual(toValue value: Any?, childKey: String?) -> DatabaseQuery {
        bounding("queryEqualToValue:", value, childKey) { hearth_query_equal_to($0, $1, $2, $3) }
    }

    private func building(
        _ function: String,
        _ change: (OpaquePointer, UnsafeMutablePointer<hearth_error_t>) -> Int32
    ) -> DatabaseQuery {
        do {
            return DatabaseQuery(database: db, normalizedPath: path, params: try params.adding(change))
        } catch {
            preconditionFailure("(\(function)) \(error.message)")
        }
    }

    private func bounding(
        _ function: String, _ value: Any?, _ childKey: String?,
        _ set: (OpaquePointer, OpaquePointer, UnsafePointer<CChar>?, UnsafeMutablePointer<hearth_error_t>)
            -> Int32
    ) -> DatabaseQuery {
        let bound: Node
        do {
            bound = try NodeEncoder.node(from: value, allowServerValues: false)
        } catch {
            preconditionFailure(
                "(\(function)) Query bounds must be null, a boolean, a number or a string: \(error.message)")
        }
        return building(function) { query, error in
            guard let childKey else { return set(query, bound.pointer, nil, error) }
            return childKey.withCString { set(query, bound.pointer, $0, error) }
        }
    }

    private static func limit(_ limit: UInt, function: String) -> UInt32 {
        guard let limit = UInt32(exactly: limit) else {
            preconditionFailure("(\(function)) the limit \(limit) is larger than \(UInt32.max)")
        }
        return limit
    }
}
