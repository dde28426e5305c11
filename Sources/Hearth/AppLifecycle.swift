import Foundation

// What a client database does as the app's surroundings change, as the
// FirebaseDatabase SDK does on Apple platforms: reconnect at once when the
// network returns or the app comes back to the foreground (rather than
// after a backoff grown while it had no network), and hold a background
// task while writes the server has not acknowledged drain after the app
// goes to the background.
//
// The decisions are here, in code that runs and is tested everywhere;
// the system's notifications (NWPathMonitor, UIApplication) only feed them,
// in AppleLifecycle.swift.

/// What the app's surroundings report to a client database.
enum LifecycleEvent: Sendable, Equatable {
    /// The network path changed: satisfied (a route out) or not.
    case networkPath(satisfied: Bool)
    /// The app is coming back to the foreground.
    case enteringForeground
    /// The app went to the background (iOS suspends it soon after).
    case enteredBackground
}

/// A source of ``LifecycleEvent``s (a path monitor, the app's
/// notifications). `start` gives it where to report, from any thread,
/// until `stop`; each is called once.
protocol LifecycleSource: AnyObject, Sendable {
    func start(reporting report: @escaping @Sendable (LifecycleEvent) -> Void)
    func stop()
}

/// The system's leave to go on running in the background (UIApplication's
/// background tasks on iOS).
///
/// The contract: `begin(id)` then `end(id)`, each once per id and in that
/// order (they are called on one serial queue); neither waits for the
/// main thread. When the system's time runs out, the task ends itself
/// (UIKit requires it ended before its expiration handler returns), then
/// `expired` is called, from any thread; the `end(id)` that still follows
/// does nothing. A system that refuses the task calls `expired` too.
protocol BackgroundTasks: Sendable {
    func begin(_ id: UInt64, expired: @escaping @Sendable () -> Void)
    func end(_ id: UInt64)
}

/// Decides, for one client database, when to reconnect at once and when
/// to hold a background task, from the events of its sources and the
/// writes it counts. Every decision runs on one serial queue, in the order
/// things were reported; nothing waits for it.
final class ConnectionSupervisor: @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched on `queue`; the rest is
    // immutable.
    private struct State {
        var inBackground = false
        /// nil until the first report: the first is no change.
        var pathSatisfied: Bool?
        /// Writes (and transactions) not yet settled.
        var outstanding = 0
        /// The background task held, if any.
        var task: UInt64?
        var lastTask: UInt64 = 0
        /// The system's time ran out in this stay in the background: no
        /// new task until the app has been in the foreground again.
        var timeRanOut = false
        var stopped = false
    }

    private let queue = DispatchQueue(label: "hearth.lifecycle")
    private var state = State()
    private let reconnect: @Sendable () -> Void
    private let backgroundTasks: BackgroundTasks?
    private let sources: [LifecycleSource]

    /// `reconnect` starts the backoff over and connects now
    /// (`hearth_db_reconnect_now`). Without `backgroundTasks` (macOS,
    /// Linux) writes are not counted.
    init(
        sources: [LifecycleSource], backgroundTasks: BackgroundTasks?,
        reconnect: @escaping @Sendable () -> Void
    ) {
        self.sources = sources
        self.backgroundTasks = backgroundTasks
        self.reconnect = reconnect
    }

    /// Starts the sources, reporting here.
    func start() {
        for source in sources {
            source.start { [weak self] event in self?.report(event) }
        }
    }

    /// Stops the sources and ends the task held, if any (the database
    /// closes: its writes are settled, canceled or kept on disk).
    func stop() {
        for source in sources { source.stop() }
        queue.async { [self] in
            state.stopped = true
            endTask()
        }
    }

    /// Whether writes are counted (there is a background task to hold).
    var tracksWrites: Bool { backgroundTasks != nil }

    func report(_ event: LifecycleEvent) {
        queue.async { [self] in handle(event) }
    }

    /// A write (or transaction) was handed to the database; `writeSettled`
    /// must follow once it is acknowledged, refused or canceled.
    func writeStarted() {
        queue.async { [self] in
            state.outstanding += 1
            beginTaskIfWanted()
        }
    }

    func writeSettled() {
        queue.async { [self] in
            state.outstanding -= 1
            if state.outstanding == 0 { endTask() }
        }
    }

    /// Tests: waits until everything reported before has been decided.
    func waitUntilIdle() {
        queue.sync {}
    }

    // MARK: On the queue

    private func handle(_ event: LifecycleEvent) {
        guard !state.stopped else { return }
        switch event {
        case .networkPath(let satisfied):
            let was = state.pathSatisfied
            state.pathSatisfied = satisfied
            // The network came back: a client waiting out its backoff
            // connects now. (The first report is the path as it is.)
            if satisfied && was == false { reconnect() }
        case .enteringForeground:
            state.inBackground = false
            state.timeRanOut = false
            endTask()
            reconnect()
        case .enteredBackground:
            state.inBackground = true
            beginTaskIfWanted()
        }
    }

    private func beginTaskIfWanted() {
        guard let backgroundTasks, !state.stopped, state.inBackground, state.outstanding > 0,
            state.task == nil, !state.timeRanOut
        else { return }
        state.lastTask += 1
        let id = state.lastTask
        state.task = id
        backgroundTasks.begin(id) { [weak self] in
            guard let self else { return }
            queue.async { self.expired(id) }
        }
    }

    private func endTask() {
        guard let id = state.task else { return }
        state.task = nil
        backgroundTasks?.end(id)
    }

    private func expired(_ id: UInt64) {
        guard state.task == id else { return }  // ended meanwhile
        state.task = nil
        state.timeRanOut = true
        backgroundTasks?.end(id)  // ended already: the contract's one end per begin
    }
}
