import Foundation
import Testing

@testable import Hearth

@Suite("Database lifecycle")
struct LifecycleTests {
    /// Persistence on Apple platforms goes to Application Support in a
    /// folder of the app's (iOS purges Caches, pending writes included);
    /// elsewhere to the user's cache directory. (The choice is made here
    /// for both, whichever system runs the test.)
    @Test func persistenceDirectoryPerPlatform() {
        let fm = FileManager.default
        let app = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        let support = fm.urls(for: .applicationSupportDirectory, in: .userDomainMask).first!
        #expect(
            Database.cacheDirectory(onApple: true)
                == support.appendingPathComponent(app).appendingPathComponent("hearth").path)
        let caches = fm.urls(for: .cachesDirectory, in: .userDomainMask).first!.path
        #expect(Database.cacheDirectory(onApple: false) == caches + "/hearth")
    }

    @Test func databasesCloseWhereverTheirLastReferenceGoes() async throws {
        // The last reference may go away on the loop thread (in a C
        // context-free callback); the database must still close cleanly.
        final class WeakBox: @unchecked Sendable { weak var database: Database? }
        var boxes: [WeakBox] = []
        for index in 0..<30 {
            let database = Database(url: "memory:lifecycle-\(index)")
            database.callbackQueue = DispatchQueue(label: "lifecycle")
            let ref = database.reference().child("x")
            try await ref.setValue(index)
            #expect(try await ref.getData().value as? Int == index)
            let handle = ref.observe(.value) { _ in }
            #expect(handle != 0)
            let box = WeakBox()
            box.database = database
            boxes.append(box)
        }
        // Observers do not keep a database open: once callbacks in flight
        // have run, every database is gone.
        let deadline = ContinuousClock.now + .seconds(10)
        while boxes.contains(where: { $0.database != nil }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(boxes.allSatisfy { $0.database == nil })
    }

    @Test func observersAreReleasedWhenRemoved() async throws {
        let database = makeDatabase()
        let ref = database.reference().child("r")
        let handles = (0..<10).map { _ in ref.observe(.value) { _ in } }
        try await settle(database)
        #expect(database.observerCount == 10)
        for handle in handles.prefix(5) { ref.removeObserver(withHandle: handle) }
        ref.removeObserver(withHandle: 987_654)  // unknown handles are ignored
        try await settle(database)
        #expect(database.observerCount == 5)
        ref.removeAllObservers()
        try await settle(database)
        #expect(database.observerCount == 0)
        let once = Recorder<Bool>()
        ref.observeSingleEvent(of: .value) { once.append($0.exists()) }
        try await once.wait(for: 1)
        try await settle(database)
        #expect(database.observerCount == 0)
    }

    /// Opening does not wait for the loop thread: the loop may first be
    /// opening a client's cache (SQLite's checks, a rebuild), and the
    /// opener is usually the main thread. Here the loop's first work of
    /// this module waits until the opener has returned (it would wait in
    /// vain, and say false, if opening waited for the loop), and reads a
    /// setting meanwhile (so opening holds no lock the loop needs).
    @Test func openingDoesNotWaitForTheLoop() async throws {
        let database = Database(url: "memory:opening-\(UUID().uuidString)")
        database.callbackQueue = DispatchQueue(label: "hearth.tests.opening")
        let openerReturned = DispatchSemaphore(value: 0)
        let answered = Recorder<Bool>()
        database.whileOpening { [weak database] in
            let returned = openerReturned.wait(timeout: .now() + 5) == .success
            answered.append(returned && database?.isPersistenceEnabled == false)
        }
        Thread.detachNewThread {
            _ = database.handle
            openerReturned.signal()
        }
        #expect(try await answered.wait(for: 1) == [true])
        try await database.reference().child("x").setValue(1)
    }

    @Test func invalidPathsTrapAsTheSDKRaises() async {
        await #expect(processExitsWith: .failure) {
            _ = Database.database(url: "memory:exit-test").reference().child("a.b")
        }
        await #expect(processExitsWith: .failure) {
            _ = Database.database(url: "memory:exit-test").reference().child("")
        }
        await #expect(processExitsWith: .failure) {
            _ = Database.database(url: "ftp://example.com")
        }
    }

    @Test func settingsAfterFirstUseTrapAsTheSDKRaises() async {
        await #expect(processExitsWith: .failure) {
            let database = Database.database(url: "memory:late-queue")
            database.reference().child("a").setValue(1)
            database.callbackQueue = DispatchQueue(label: "too late")
        }
        await #expect(processExitsWith: .failure) {
            let database = Database.database(url: "memory:late-emulator")
            database.reference().child("a").setValue(1)
            database.useEmulator(withHost: "127.0.0.1", port: 9000)
        }
    }
}
