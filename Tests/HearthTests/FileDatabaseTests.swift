import Foundation
import Testing

@testable import Hearth

@Suite("Embedded durable database")
struct FileDatabaseTests {
    @Test func writesToAFileURLAreLoggedInTheDirectory() async throws {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("hearth-swift-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = "file://" + dir.path
        let database = Database.database(url: url)
        #expect(Database.database(url: url) === database)
        database.callbackQueue = DispatchQueue(label: "file-db-test")
        let ref = database.reference(withPath: "notes/first")
        try await ref.setValue(["text": "kept"])
        let snapshot = try await ref.getData()
        #expect((snapshot.value as? [String: Any])?["text"] as? String == "kept")
        // The completion ran after the write was logged: the log holds it.
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        let log = try #require(files.first { $0.hasPrefix("log.") })
        let text = try String(contentsOf: dir.appendingPathComponent(log), encoding: .isoLatin1)
        #expect(text.contains("\"kept\""))
    }
}
