import Foundation

/// A value guarded by a lock.
///
/// `Mutex` from the Synchronization module needs macOS 15 / iOS 18, later
/// than the package's deployment targets, so this wraps an `NSLock`.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched while `lock` is held.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
