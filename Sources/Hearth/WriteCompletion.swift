internal import CHearth

/// The C context of a write's completion (`hearth_completion_cb`).
///
/// It is passed to C retained (`Unmanaged.passRetained`); C calls
/// ``callback`` exactly once (with `HEARTH_ECANCELED` when the database
/// closes first), then ``release``, which drops that reference. When the C
/// call fails at once, C never touches the context and the caller releases
/// it.
final class WriteCompletion: Sendable {
    private let completion: @Sendable (HearthError?) -> Void

    init(_ completion: @escaping @Sendable (HearthError?) -> Void) {
        self.completion = completion
    }

    /// Runs on the database's loop thread (or the closing thread).
    static let callback: hearth_completion_cb = { status, context in
        guard let context else { return }
        let box = Unmanaged<WriteCompletion>.fromOpaque(context).takeUnretainedValue()
        box.completion(status == 0 ? nil : HearthError(completing: status))
    }

    static let release: hearth_free_cb = { context in
        guard let context else { return }
        Unmanaged<WriteCompletion>.fromOpaque(context).release()
    }
}
