internal import CHearth
import Foundation

/// What the library has to say, and where it goes (`hearth_set_log` in the
/// C API). Nothing is written anywhere unless the program asks: an app's
/// standard error is not the library's to use.
public enum HearthLog {
    /// How much a message matters.
    public enum Level: Int, Sendable {
        /// Something could not be used and was dropped or rebuilt (a
        /// cache, a stored write, a cluster record).
        case error = 1
        /// Refused or degraded: a token, a listen, a rules file, a limit.
        case warning = 2
        /// A message of the realtime protocol, `"> ..."` sent and
        /// `"< ..."` received (`Database.setLoggingEnabled(true)`).
        case message = 3
        /// A server's access or event line, as its log format says.
        case access = 4
    }

    /// Each message to `handler` (`nil`: nowhere, the default), on whatever
    /// thread has something to say, possibly several at once. Set it at
    /// launch, before opening databases: a message in flight during the
    /// change may still reach the previous handler.
    public static func setHandler(_ handler: (@Sendable (Level, String) -> Void)?) {
        current.withLock { $0 = handler }
        if handler == nil {
            hearth_set_log(nil, nil)
            return
        }
        hearth_set_log({ _, level, message in
            guard let handler = HearthLog.current.withLock({ $0 }) else { return }
            handler(Level(rawValue: Int(level.rawValue)) ?? .error, String(cString: message))
        }, nil)
    }

    /// Each message to standard error, one line each in one write:
    /// `hearth: ...`, the access lines alone (what the `hearth` CLI does).
    public static func toStandardError() {
        current.withLock { $0 = nil }
        hearth_set_log(hearth_log_stderr, nil)
    }

    /// Hands a message of the Swift module's own to the handler: false
    /// when none is set.
    static func deliver(_ level: Level, _ message: String) -> Bool {
        guard let handler = current.withLock({ $0 }) else { return false }
        handler(level, message)
        return true
    }

    private static let current = Locked<(@Sendable (Level, String) -> Void)?>(nil)
}
