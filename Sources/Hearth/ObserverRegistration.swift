internal import CHearth
import Dispatch

/// One observer: the C context of `hearth_db_observe`.
///
/// C calls ``onEvent`` on the database's loop thread; the event (borrowed
/// there) is turned into a `DataSnapshot` holding its own node reference
/// and handed to the user's block on the database's serial callback queue
/// (bound to it, see ``QueueBound``), or directly on the loop thread to
/// Sendable blocks (async streams).
/// Removing the observer marks it inactive at once, so events already
/// queued for the callback queue are dropped: no block runs after
/// `removeObserver` returns (on the callback queue). C calls ``release``
/// exactly once, after the last event, which ends the registration.
final class ObserverRegistration: @unchecked Sendable {
    // @unchecked Sendable: the mutable state is behind `state`'s lock, the
    // user's blocks are bound to the callback queue or Sendable, and the
    // weak `database` is only set in init.

    /// The user's blocks, as the SDK takes them.
    struct Handlers {
        let event: (DataSnapshot, String?) -> Void
        let cancel: ((any Error) -> Void)?
    }

    enum Delivery {
        /// On the database's callback queue, as the SDK does.
        case callbackQueue(QueueBound<Handlers>)
        /// On the loop thread, as the event is raised (the blocks must not
        /// block).
        case direct(
            event: @Sendable (DataSnapshot, String?) -> Void, cancel: @Sendable (any Error) -> Void)
    }

    private struct State {
        var active = true
        var handle: DatabaseHandle = 0
    }

    private weak var database: Database?
    let path: String
    let query: QueryParams
    let eventType: DataEventType
    private let once: Bool
    private let delivery: Delivery
    private let ended: (@Sendable () -> Void)?
    private let state = Locked(State())

    init(
        database: Database, path: String, query: QueryParams, eventType: DataEventType,
        once: Bool, delivery: Delivery, ended: (@Sendable () -> Void)? = nil
    ) {
        self.database = database
        self.path = path
        self.query = query
        self.eventType = eventType
        self.once = once
        self.delivery = delivery
        self.ended = ended
    }

    var isActive: Bool { state.withLock { $0.active } }

    var handle: DatabaseHandle { state.withLock { $0.handle } }

    /// Records the handle C assigned. Returns false when the registration
    /// was deactivated before its handle was known (a single event already
    /// delivered): the caller must then remove it.
    func setHandle(_ handle: DatabaseHandle) -> Bool {
        state.withLock {
            $0.handle = handle
            return $0.active
        }
    }

    /// Stops delivery. Returns the handle to remove from C, or nil when it
    /// is not known yet (then `setHandle` reports it) or was already
    /// deactivated.
    func deactivate() -> DatabaseHandle? {
        state.withLock {
            guard $0.active else { return nil }
            $0.active = false
            return $0.handle == 0 ? nil : $0.handle
        }
    }

    // MARK: C callbacks

    static let onEvent: hearth_event_cb = { event, context in
        guard let context else { return }
        Unmanaged<ObserverRegistration>.fromOpaque(context).takeUnretainedValue()
            .receive(event.pointee)
    }

    static let release: hearth_free_cb = { context in
        guard let context else { return }
        let registration = Unmanaged<ObserverRegistration>.fromOpaque(context).takeRetainedValue()
        registration.database?.forget(registration)
        registration.ended?()
    }

    /// Runs on the loop thread; `event` is borrowed for this call.
    private func receive(_ event: hearth_event_t) {
        if event.type == HEARTH_EVENT_CANCEL {
            canceled(HearthError(status: event.status).bridged)
            return
        }
        guard isActive, let database, let node = event.node else { return }
        let snapshot: DataSnapshot
        if let key = event.key, DataEventType(event.type) != .value {
            let childPath = DatabasePath.join(path, String(cString: key))
            snapshot = DataSnapshot(
                node: Node(retaining: node),
                ref: DatabaseReference(database: database, normalizedPath: childPath),
                query: .default)
        } else {
            snapshot = DataSnapshot(
                node: Node(retaining: node),
                ref: DatabaseReference(database: database, normalizedPath: path),
                query: query)
        }
        let previousKey = event.prev_key.map { String(cString: $0) }
        switch delivery {
        case .direct(let event, _):
            deliver { event(snapshot, previousKey) }
        case .callbackQueue(let handlers):
            handlers.async { [self] handlers in
                deliver { handlers.event(snapshot, previousKey) }
            }
        }
    }

    /// The server refused or revoked the listen: the registration ends
    /// (C removes it next) and the cancel block, if any, gets the error.
    private func canceled(_ error: any Error) {
        let wasActive = state.withLock { state in
            defer { state.active = false }
            return state.active
        }
        guard wasActive else { return }
        switch delivery {
        case .direct(_, let cancel):
            cancel(error)
        case .callbackQueue(let handlers):
            let path = path
            handlers.async { handlers in
                guard let cancel = handlers.cancel else {
                    Database.log("observing \(path) was canceled: \(error.localizedDescription)")
                    return
                }
                cancel(error)
            }
        }
    }

    /// Calls the block (`call`) unless the registration was removed
    /// meanwhile; a single-event registration removes itself first.
    private func deliver(_ call: () -> Void) {
        if once {
            let (wasActive, handle) = state.withLock { state in
                defer { state.active = false }
                return (state.active, state.handle)
            }
            guard wasActive else { return }
            if handle != 0 {
                database?.removeRegistration(handle: handle)
            }
        } else if !isActive {
            return
        }
        call()
    }
}
