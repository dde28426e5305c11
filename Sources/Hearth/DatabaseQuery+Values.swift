import Foundation

extension DatabaseQuery {
    /// The query's value, now and after every change, as an async
    /// sequence (a Swift extra):
    ///
    ///     for try await snapshot in ref.values { ... }
    ///
    /// Snapshots are delivered as they are raised, without the callback
    /// queue. Ending the iteration (or cancelling its task) removes the
    /// observer; closing the database ends the sequence.
    ///
    /// Every value is kept until the iteration takes it (an unbounded
    /// buffer), as an observer block sees every value: a consumer slower
    /// than the writes holds the values it has not reached yet. One that
    /// only wants the latest value asks
    /// `values(bufferingPolicy: .bufferingNewest(1))`, which bounds the
    /// buffer to one snapshot.
    public var values: AsyncThrowingStream<DataSnapshot, any Error> {
        values(bufferingPolicy: .unbounded)
    }

    /// The query's value, as ``values``, buffering as `bufferingPolicy`
    /// says when the iteration falls behind.
    public func values(
        bufferingPolicy: AsyncThrowingStream<DataSnapshot, any Error>.Continuation.BufferingPolicy
    ) -> AsyncThrowingStream<DataSnapshot, any Error> {
        stream(of: .value, bufferingPolicy) { snapshot, _ in snapshot }
    }

    /// Events of `eventType`, each with the key of the previous child in
    /// the query's order (a Swift extra). Ending the iteration removes the
    /// observer; closing the database ends the sequence.
    ///
    /// The buffer is unbounded by default: child events are changes, and
    /// dropping one would leave the consumer with a wrong picture of the
    /// children (a value stream can drop stale values; this one cannot).
    /// A bounded `bufferingPolicy` is for a consumer that can lose events.
    public func events(
        _ eventType: DataEventType,
        bufferingPolicy: AsyncThrowingStream<DataEvent, any Error>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncThrowingStream<DataEvent, any Error> {
        stream(of: eventType, bufferingPolicy) { snapshot, previousKey in
            DataEvent(type: eventType, snapshot: snapshot, previousSiblingKey: previousKey)
        }
    }

    private func stream<Element: Sendable>(
        of eventType: DataEventType,
        _ bufferingPolicy: AsyncThrowingStream<Element, any Error>.Continuation.BufferingPolicy,
        _ element: @escaping @Sendable (DataSnapshot, String?) -> Element
    ) -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream(bufferingPolicy: bufferingPolicy) { continuation in
            let handle = addDirectObserver(
                eventType, once: false,
                cancel: { continuation.finish(throwing: $0) },
                ended: { continuation.finish() }
            ) { snapshot, previousKey in
                continuation.yield(element(snapshot, previousKey))
            }
            if handle != 0 {
                // Weak: a stream must not keep its database open; closing
                // the database ends the stream instead.
                continuation.onTermination = { [weak db] _ in
                    db?.removeObserver(withHandle: handle)
                }
            }
        }
    }
}

/// One event of an observer (`DatabaseQuery.events(_:)`).
public struct DataEvent: Sendable {
    public let type: DataEventType
    public let snapshot: DataSnapshot
    /// The key of the previous child in the query's order: nil for the
    /// first child, for child_removed and for value events.
    public let previousSiblingKey: String?
}
