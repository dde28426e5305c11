import Foundation
import Testing

@testable import Hearth

/// Rules on an embedded database (`useRules(_:auth:)`); a server's rules
/// are in ClientTests.authTokensAndRules.
@Suite("Embedded rules")
struct RulesTests {
    static let document = """
        {
          // Each user owns their own node; names are short strings.
          "rules": {
            "users": {
              "$uid": {
                ".read": "auth != null && auth.uid == $uid",
                ".write": "auth != null && auth.uid == $uid",
                "name": {".validate": "newData.isString() && newData.val().length <= 10"}
              }
            }
          }
        }
        """

    /// An in-memory database judged as `auth`.
    func database(as auth: [String: Any]?, _ name: String = #function) throws -> Database {
        let database = Database(url: "memory:rules-\(UUID().uuidString.prefix(13))-\(name)")
        database.callbackQueue = DispatchQueue(label: "hearth.tests.rules.\(name)")
        try database.useRules(Self.document, auth: auth)
        return database
    }

    /// The SDK's permission error, as apps test for it.
    func isPermissionDenied(_ error: any Error) -> Bool {
        let error = error as NSError
        return error.domain == "com.firebase" && error.code == 1
    }

    @Test func ownDataIsWritableAndReadable() async throws {
        let database = try database(as: ["uid": "ada"])
        let ref = database.reference(withPath: "users/ada")
        try await ref.setValue(["name": "Ada"])
        #expect(try await ref.child("name").getData().value as? String == "Ada")
    }

    @Test func refusedWritesChangeNothingAndRaiseNoEvent() async throws {
        let database = try database(as: ["uid": "ada"])
        let ref = database.reference(withPath: "users/ada")
        try await ref.setValue(["name": "Ada"])
        let values = Recorder<String>()
        ref.observe(.value) { values.append($0.json) }
        try await values.wait(for: 1)

        for (path, value) in [("users/bob/name", "Bob" as Any), ("users/ada/name", "far too long a name")] {
            do {
                try await database.reference(withPath: path).setValue(value)
                Issue.record("the write to \(path) was allowed")
            } catch {
                #expect(isPermissionDenied(error))
                // The completion says where, as a synchronous call would.
                let reason = (error as NSError).localizedFailureReason ?? ""
                #expect(reason.contains("this write at /\(path)"), "\(reason)")
            }
        }
        // (settle() reads a path these rules refuse: read ada's, then let
        // the callback queue drain.)
        #expect(try await ref.getData().json == #"{"name":"Ada"}"#)
        await withCheckedContinuation { continuation in
            database.callbackQueue.async { continuation.resume() }
        }
        #expect(values.all == [#"{"name":"Ada"}"#])
    }

    @Test func refusedObserversAreCanceledAndReadsFail() async throws {
        let database = try database(as: nil)
        let canceled = Recorder<NSError>()
        database.reference(withPath: "users/ada").observe(
            .value, with: { _ in Issue.record("a refused observer saw data") },
            withCancel: { canceled.append($0 as NSError) })
        #expect(isPermissionDenied(try await canceled.wait(for: 1)[0]))
        do {
            _ = try await database.reference(withPath: "users/ada").getData()
            Issue.record("a refused read returned data")
        } catch {
            #expect(isPermissionDenied(error))
        }
    }

    @Test func badDocumentsAreRefusedWithWhereAndWhy() throws {
        let database = Database(url: "memory:rules-bad-\(UUID().uuidString.prefix(13))")
        #expect {
            try database.useRules(#"{"rules": {".read": "auth.uid ==="}}"#)
        } throws: { error in
            guard let error = error as? HearthError else { return false }
            return error.message.contains("===") || error.column > 0
        }
        #expect(throws: HearthError.self) {
            try database.useRules(#"{"rules": {".read": true}}"#, auth: ["when": Date()])
        }
    }
}
