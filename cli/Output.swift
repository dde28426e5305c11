import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writing results (stdout) and diagnostics (stderr).
///
/// Every write goes through `write(_:to:)`, never through FileHandle's
/// `write(_:)` (a `try!` inside: a closed pipe, EPIPE, would trap with
/// SIGILL) nor `print` (whose errors are lost). A write failure never
/// raises SIGPIPE, whatever its disposition (the server ignores it, the
/// process may not have yet): it is an error, and what follows is the
/// command's choice (`outliveStdout`).
enum Output {
    /// EX_USAGE from sysexits.h: the command was used incorrectly.
    static let usageExitCode: Int32 = 64

    /// Writes a line of result to stdout.
    static func line(_ text: String) {
        result(Data((text + "\n").utf8))
    }

    /// Writes `value` to stdout as one line of JSON (sorted keys).
    static func json<Value: Encodable>(_ value: Value) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return }
        result(data + Data("\n".utf8))
    }

    /// Writes a diagnostic line to stderr. A failure is ignored: there is
    /// nowhere left to report it.
    static func error(_ text: String) {
        state.withLock { _ in
            _ = write(Data((text + "\n").utf8), to: STDERR_FILENO)
        }
    }

    /// "error: " for a diagnostic, in red when stderr is a terminal (and
    /// NO_COLOR is unset).
    static var errorLabel: String {
        let colour = isatty(STDERR_FILENO) != 0 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
        return colour ? "\u{1B}[1;31merror:\u{1B}[0m " : "error: "
    }

    /// For a command that must outlive its stdout (`serve`, whose reader,
    /// a logger, may die): once stdout cannot be written, its lines go to
    /// stderr (or nowhere), and the command goes on. Otherwise a command
    /// whose reader went away ends as `yes | head` does (SIGPIPE, quietly),
    /// and one whose stdout fails otherwise (a full disk) ends with status
    /// 1 and the reason on stderr.
    static func outliveStdout() {
        state.withLock { $0.outlivesStdout = true }
    }

    /// Writes `data` (whole lines) to stdout.
    static func result(_ data: Data) {
        state.withLock { state in
            if !state.stdoutFailed {
                let failure = write(data, to: STDOUT_FILENO)
                guard failure != 0 else { return }
                guard state.outlivesStdout else { endForStdout(failure) }
                state.stdoutFailed = true
            }
            _ = write(data, to: STDERR_FILENO)
        }
    }

    /// Ends the process after stdout failed with errno `failure`.
    private static func endForStdout(_ failure: Int32) -> Never {
        if failure == EPIPE {
            // The reader went away: end as the default SIGPIPE would have
            // (unblocked first: dispatch's threads block it).
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            signal(SIGPIPE, SIG_DFL)
            pthread_sigmask(SIG_UNBLOCK, &pipeSignal, nil)
            raise(SIGPIPE)
            _exit(128 + SIGPIPE)
        }
        _ = write(
            Data("\(errorLabel)cannot write the output: \(String(cString: strerror(failure)))\n".utf8),
            to: STDERR_FILENO)
        exit(1)
    }

    /// What `line` and `error` share: whether stdout failed, and which
    /// command this is; the lock also keeps lines of threads whole.
    private struct State {
        var outlivesStdout = false
        var stdoutFailed = false
    }

    private final class SharedState: @unchecked Sendable {
        // @unchecked Sendable: `state` is only touched while `lock` is held.
        private let lock = NSLock()
        private var state = State()

        func withLock<T>(_ body: (inout State) -> T) -> T {
            lock.lock()
            defer { lock.unlock() }
            return body(&state)
        }
    }

    private static let state = SharedState()

    /// Writes all of `data` to `fd`: 0, or the errno of the failure. A
    /// closed pipe is EPIPE, never SIGPIPE: on Linux the signal, sent to
    /// the writing thread, is blocked in it for the write and taken back
    /// if the write raised it (as libpq does); on Darwin the descriptor
    /// is marked not to raise it.
    private static func write(_ data: Data, to fd: Int32) -> Int32 {
        #if canImport(Darwin)
            _ = fcntl(fd, F_SETNOSIGPIPE, 1)
        #else
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            var saved = sigset_t()
            pthread_sigmask(SIG_BLOCK, &pipeSignal, &saved)
            var pending = sigset_t()
            sigpending(&pending)
            let wasPending = sigismember(&pending, SIGPIPE) == 1
            defer {
                sigpending(&pending)
                if !wasPending && sigismember(&pending, SIGPIPE) == 1 {
                    var taken: Int32 = 0
                    sigwait(&pipeSignal, &taken)
                }
                pthread_sigmask(SIG_SETMASK, &saved, nil)
            }
        #endif
        return data.withUnsafeBytes { bytes -> Int32 in
            guard var next = bytes.baseAddress else { return 0 }
            var left = bytes.count
            while left > 0 {
                let written = systemWrite(fd, next, left)
                if written >= 0 {
                    next += written
                    left -= written
                    continue
                }
                switch errno {
                case EINTR:
                    continue
                case EAGAIN, EWOULDBLOCK:
                    // A non-blocking descriptor: wait until it takes more.
                    var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&ready, 1, -1)
                default:
                    return errno
                }
            }
            return 0
        }
    }

    private static func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
            Glibc.write(fd, bytes, count)
        #elseif canImport(Musl)
            Musl.write(fd, bytes, count)
        #else
            Darwin.write(fd, bytes, count)
        #endif
    }
}
