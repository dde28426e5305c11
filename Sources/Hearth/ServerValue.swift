import Foundation

/// Placeholders the database replaces when it applies a write, as
/// `ServerValue` in FirebaseDatabase.
public enum ServerValue {
    /// The time of the write, in milliseconds since the epoch.
    public static func timestamp() -> [AnyHashable: Any] {
        [".sv": "timestamp"]
    }

    /// The current number at the location plus `delta` (just `delta` when
    /// there is no number there).
    public static func increment(_ delta: NSNumber) -> [AnyHashable: Any] {
        [".sv": ["increment": delta]]
    }

    public static func increment(_ delta: Int) -> [AnyHashable: Any] {
        increment(NSNumber(value: delta))
    }

    public static func increment(_ delta: Double) -> [AnyHashable: Any] {
        increment(NSNumber(value: delta))
    }
}
