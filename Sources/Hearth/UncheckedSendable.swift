/// Carries a value the compiler cannot prove `Sendable` across a hop whose
/// safety is argued where it is used.
struct UncheckedSendable<Value>: @unchecked Sendable {
    // @unchecked Sendable: each use states why the value is not touched
    // concurrently. (Users' blocks do not travel in this: `QueueBound`
    // checks where they run.)
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}
