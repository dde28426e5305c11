internal import CHearth

/// Work to run on the database's loop thread through `hearth_db_call`,
/// after every operation queued before it.
///
/// `body` runs there exactly once; when the database closes before it
/// could run, `canceled` runs instead (from the C context-free callback).
final class LoopCall: @unchecked Sendable {
    // @unchecked Sendable: `ran` is written on the loop thread by `run` and
    // read by `finish`, which C calls on the same thread afterwards (or on
    // the closing thread once the loop has stopped for good).
    private let body: @Sendable () -> Void
    private let canceled: @Sendable () -> Void
    private var ran = false

    init(_ body: @escaping @Sendable () -> Void, canceled: @escaping @Sendable () -> Void) {
        self.body = body
        self.canceled = canceled
    }

    /// Queues the call on `db`. Returns the C status; on failure nothing
    /// runs.
    static func submit(
        to db: OpaquePointer, _ body: @escaping @Sendable () -> Void,
        canceled: @escaping @Sendable () -> Void
    ) -> Int32 {
        let call = LoopCall(body, canceled: canceled)
        let context = Unmanaged.passRetained(call).toOpaque()
        let status = hearth_db_call(db, LoopCall.run, context, LoopCall.finish)
        if status != 0 {
            Unmanaged<LoopCall>.fromOpaque(context).release()
        }
        return status
    }

    private static let run: @convention(c) (UnsafeMutableRawPointer?) -> Void = { context in
        guard let context else { return }
        let call = Unmanaged<LoopCall>.fromOpaque(context).takeUnretainedValue()
        call.ran = true
        call.body()
    }

    private static let finish: hearth_free_cb = { context in
        guard let context else { return }
        let call = Unmanaged<LoopCall>.fromOpaque(context).takeRetainedValue()
        if !call.ran {
            call.canceled()
        }
    }
}
