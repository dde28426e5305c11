import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Waiting for Ctrl-C (SIGINT) or SIGTERM without dying of them, so that a
/// command can end cleanly.
enum Interrupt {
    /// Returns on SIGINT or SIGTERM, or when `done` is signalled.
    static func wait(orUntil done: DispatchSemaphore = DispatchSemaphore(value: 0)) {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "hearth.signals")
        let sources = [SIGINT, SIGTERM].map { sig in
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { done.signal() }
            source.resume()
            return source
        }
        done.wait()
        sources.forEach { $0.cancel() }
    }

    /// Runs `action` on each SIGHUP (a reload) until the source is
    /// cancelled; the signal no longer ends the process meanwhile.
    static func onHangUp(_ action: @escaping @Sendable () -> Void) -> DispatchSourceSignal {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(
            signal: SIGHUP, queue: DispatchQueue(label: "hearth.hangup"))
        source.setEventHandler(handler: action)
        source.resume()
        return source
    }
}
