/// Carries a value the compiler cannot prove `Sendable` across a hop whose
/// safety is argued where it is used.
struct UncheckedSendable<Value>: @unchecked Sendable {
    // @unchecked Sendable: each use states why the value is not touched
    // concurrently (e.g. a user's callback that is only ever invoked on the
    // database's callbackQueue, as the SDK does).
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}
