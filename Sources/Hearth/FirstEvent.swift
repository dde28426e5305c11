/// One wait for the first event of a query (`firstEvent(_:)` and the
/// SDK's async `observeSingleEvent(of:)`): its continuation is resumed
/// exactly once, by the event, by the observation's cancellation (the
/// rules refuse the read, the database closes) or by ``cancel()`` (the
/// task's cancellation), which also removes the observer so that nothing
/// stays registered for a task that no longer waits.
final class FirstEvent: Sendable {
    private struct State {
        var continuation: CheckedContinuation<DataEvent, any Error>?
        /// Known once registered (0: not yet, or refused).
        var handle: DatabaseHandle = 0
        var query: DatabaseQuery?
        var cancelled = false
    }
    private let state: Locked<State>

    init(_ continuation: CheckedContinuation<DataEvent, any Error>) {
        state = Locked(State(continuation: continuation))
    }

    /// Registers a single-event observer of `eventType` on `query`; when
    /// ``cancel()`` came first, removes it again at once.
    func start(_ query: DatabaseQuery, _ eventType: DataEventType) {
        let handle = query.addDirectObserver(
            eventType, once: true, cancel: { [self] error in finish(.failure(error)) }
        ) { [self] snapshot, previous in
            finish(.success(DataEvent(type: eventType, snapshot: snapshot, previousSiblingKey: previous)))
        }
        let cancelled = state.withLock { state in
            state.handle = handle
            state.query = query
            return state.cancelled
        }
        if cancelled && handle != 0 {
            query.removeObserver(withHandle: handle)
        }
    }

    /// Ends the wait with `CancellationError` and removes the observer
    /// (once registered; else ``start(_:_:)`` does). Idempotent.
    func cancel() {
        let (continuation, handle, query) = state.withLock { state in
            state.cancelled = true
            return (state.continuation.take(), state.handle, state.query)
        }
        continuation?.resume(throwing: CancellationError())
        if let query, handle != 0 {
            query.removeObserver(withHandle: handle)
        }
    }

    private func finish(_ result: Result<DataEvent, any Error>) {
        state.withLock { $0.continuation.take() }?.resume(with: result)
    }
}
