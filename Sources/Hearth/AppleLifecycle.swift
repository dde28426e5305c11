import Foundation

#if canImport(Network)
    import Network
#endif
#if canImport(UIKit) && os(iOS)
    import UIKit
#endif

// The system's side of AppLifecycle.swift: adapters that only turn the
// system's notifications into LifecycleEvents, and background tasks into
// UIKit's. Every decision is in ConnectionSupervisor, tested on Linux.
//
// NOT COMPILED on a Mac: the machines Hearth is developed on have no Apple
// SDK. The code below was written against Apple's documentation
// (NWPathMonitor; UIApplication's notifications, whose `object` is the
// application, and its background-task calls, documented nonisolated and
// safe off the main thread) and is parsed, not type-checked, by Linux's
// compiler (README "Apple platforms").

/// The lifecycle sources and background tasks of the system this runs on.
enum AppLifecycle {
    /// iOS: the network path and the app's notifications, with UIKit's
    /// background tasks; macOS: the network path (an app there is not
    /// suspended in the background); elsewhere nothing.
    static func platform() -> (sources: [LifecycleSource], backgroundTasks: BackgroundTasks?) {
        var sources: [LifecycleSource] = []
        var backgroundTasks: BackgroundTasks?
        #if canImport(Network)
            sources.append(NetworkPathSource())
        #endif
        #if canImport(UIKit) && os(iOS)
            let application = ApplicationHolder()
            sources.append(ApplicationNotifications(application))
            backgroundTasks = ApplicationBackgroundTasks(application)
        #endif
        return (sources, backgroundTasks)
    }
}

#if canImport(Network)
    /// The network path, from NWPathMonitor: satisfied or not, on every
    /// change (the first report is the path as it is).
    final class NetworkPathSource: LifecycleSource, @unchecked Sendable {
        // @unchecked Sendable: the monitor is set once; NWPathMonitor is
        // thread-safe.
        private let monitor = NWPathMonitor()

        func start(reporting report: @escaping @Sendable (LifecycleEvent) -> Void) {
            monitor.pathUpdateHandler = { path in
                report(.networkPath(satisfied: path.status == .satisfied))
            }
            monitor.start(queue: DispatchQueue(label: "hearth.network-path"))
        }

        func stop() {
            monitor.cancel()
        }
    }
#endif

#if canImport(UIKit) && os(iOS)
    /// The application, as the notifications carry it (their `object`):
    /// never `UIApplication.shared`, which app extensions may not use.
    final class ApplicationHolder: Sendable {
        private let application = Locked<UIApplication?>(nil)

        func set(_ application: UIApplication?) {
            guard let application else { return }
            self.application.withLock { $0 = application }
        }

        var current: UIApplication? { application.withLock { $0 } }
    }

    /// willEnterForeground and didEnterBackground, reported on the thread
    /// that posts them (the main thread).
    final class ApplicationNotifications: LifecycleSource, @unchecked Sendable {
        // @unchecked Sendable: `observers` is behind its lock.
        private let application: ApplicationHolder
        private let observers = Locked<[NSObjectProtocol]>([])

        init(_ application: ApplicationHolder) {
            self.application = application
        }

        func start(reporting report: @escaping @Sendable (LifecycleEvent) -> Void) {
            let center = NotificationCenter.default
            let application = self.application
            let foreground = center.addObserver(
                forName: UIApplication.willEnterForegroundNotification, object: nil, queue: nil
            ) { note in
                application.set(note.object as? UIApplication)
                report(.enteringForeground)
            }
            let background = center.addObserver(
                forName: UIApplication.didEnterBackgroundNotification, object: nil, queue: nil
            ) { note in
                application.set(note.object as? UIApplication)
                report(.enteredBackground)
            }
            observers.withLock { $0 = [foreground, background] }
        }

        func stop() {
            let observers = self.observers.withLock { observers in
                defer { observers = [] }
                return observers
            }
            for observer in observers { NotificationCenter.default.removeObserver(observer) }
        }
    }

    /// UIApplication's background tasks (``BackgroundTasks``'s contract).
    final class ApplicationBackgroundTasks: BackgroundTasks, @unchecked Sendable {
        // @unchecked Sendable: `running` is behind its lock.
        private let application: ApplicationHolder
        /// The tasks held, by id; `.invalid` while begin is under way.
        private let running = Locked<[UInt64: UIBackgroundTaskIdentifier]>([:])

        init(_ application: ApplicationHolder) {
            self.application = application
        }

        func begin(_ id: UInt64, expired: @escaping @Sendable () -> Void) {
            // Only after didEnterBackground, which carried the application.
            guard let app = application.current else { return expired() }
            let running = self.running
            running.withLock { $0[id] = .invalid }
            let task = app.beginBackgroundTask(withName: "Hearth: pending writes") {
                // On the main thread as time runs out: ended before this
                // returns, as UIKit requires, whatever the queue is doing.
                if let task = running.withLock({ $0.removeValue(forKey: id) }), task != .invalid {
                    app.endBackgroundTask(task)
                }
                expired()
            }
            guard task != .invalid else {  // no background time to be had
                running.withLock { _ = $0.removeValue(forKey: id) }
                return expired()
            }
            // Unless the expiration handler already came (and found no task).
            let handlerCame = running.withLock { running -> Bool in
                guard running[id] != nil else { return true }
                running[id] = task
                return false
            }
            if handlerCame { app.endBackgroundTask(task) }
        }

        func end(_ id: UInt64) {
            guard let app = application.current,
                let task = running.withLock({ $0.removeValue(forKey: id) }), task != .invalid
            else { return }
            app.endBackgroundTask(task)
        }
    }
#endif
