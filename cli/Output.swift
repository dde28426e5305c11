import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writing results (stdout) and diagnostics (stderr).
enum Output {
    /// EX_USAGE from sysexits.h: the command was used incorrectly.
    static let usageExitCode: Int32 = 64

    /// Writes a line of result to stdout.
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Writes `value` to stdout as one line of JSON (sorted keys).
    static func json<Value: Encodable>(_ value: Value) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// Writes a diagnostic line to stderr.
    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// "error: " for a diagnostic, in red when stderr is a terminal (and
    /// NO_COLOR is unset).
    static var errorLabel: String {
        let colour = isatty(STDERR_FILENO) != 0 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        return colour ? "\u{1B}[1;31merror:\u{1B}[0m " : "error: "
    }
}
