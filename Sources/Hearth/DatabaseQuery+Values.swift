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
    public var values: AsyncThrowingStream<DataSnapshot, any Error> {
        stream(of: .value) { snapshot, _ in snapshot }
    }

    /// Events of `eventType`, each with the key of the previous child in
    /// the query's order (a Swift extra). Ending the iteration removes the
    /// observer; closing the database ends the sequence.
    public func events(_ eventType: DataEventType) -> AsyncThrowingStream<DataEvent, any Error> {
        stream(of: eventType) { snapshot, previousKey in
            DataEvent(type: eventType, snapshot: snapshot, previousSiblingKey: previousKey)
        }
    }

    private func stream<Element: Sendable>(
        of eventType: DataEventType,
        _ element: @escaping @Sendable (DataSnapshot, String?) -> Element
    ) -> AsyncThrowingStream<Element, any Error> {
        AsyncThrowingStream(bufferingPolicy: .unbounded) { continuation in
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
