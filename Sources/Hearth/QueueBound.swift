import Dispatch

/// A user's block bound to the serial queue it may run on, the database's
/// ``Database/callbacks`` queue: reaching it anywhere else is a
/// precondition failure, checked at run time as swift-nio's `NIOLoopBound`
/// checks its event loop.
///
/// Why at run time: the SDK's observer and completion blocks are plain
/// closures, and an app's main-actor code passes closures that touch its
/// state (`ref.observe(.value) { self.title = ... }`). Requiring
/// `@Sendable` would refuse that code, and Swift cannot overload the SDK's
/// names on a `@MainActor` block type (the two would be one declaration),
/// so the SDK's shape stays and the queue carries the guarantee instead:
/// one serial queue, targeting the app's `callbackQueue` (the main queue
/// by default, as in the SDK), so blocks never run two at a time, even on
/// a concurrent queue.
struct QueueBound<Value>: @unchecked Sendable {
    // @unchecked Sendable: `stored` is only reached through `value`, which
    // checks that it runs on `queue`, a serial queue: never from two
    // threads at once.
    let queue: DispatchQueue
    private let stored: Value

    init(_ value: Value, on queue: DispatchQueue) {
        self.queue = queue
        self.stored = value
    }

    /// The value; only on `queue`.
    var value: Value {
        dispatchPrecondition(condition: .onQueue(queue))
        return stored
    }

    /// Runs `body` with the value on `queue`.
    func async(_ body: @escaping @Sendable (Value) -> Void) {
        queue.async { body(value) }
    }
}
