internal import CHearth

/// The kinds of events an observer can receive, with the SDK's raw values
/// (which are also the C core's `hearth_event_type` values).
public enum DataEventType: Int, Sendable, CaseIterable, CustomStringConvertible {
    /// A child was added (or entered the query's window).
    case childAdded = 0
    /// A child was removed (or left the query's window).
    case childRemoved = 1
    /// A child's data changed.
    case childChanged = 2
    /// A child's position in the query's order changed.
    case childMoved = 3
    /// Any change of the data at the location (or of the query's result).
    case value = 4

    public var description: String {
        switch self {
        case .childAdded: "childAdded"
        case .childRemoved: "childRemoved"
        case .childChanged: "childChanged"
        case .childMoved: "childMoved"
        case .value: "value"
        }
    }

    /// The C event mask selecting this type.
    var mask: UInt32 { 1 << UInt32(rawValue) }

    init?(_ type: hearth_event_type) {
        self.init(rawValue: Int(type.rawValue))
    }
}

/// Identifies an observer for `removeObserver(withHandle:)`. 0 is never a
/// valid handle.
public typealias DatabaseHandle = UInt
