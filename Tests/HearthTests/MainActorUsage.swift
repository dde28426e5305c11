import Foundation
import Hearth

/// Compile-time check (never run): the API is usable from main-actor code
/// in Swift 6 mode, as an app's view model would use it, without sending
/// its non-Sendable values across isolation.
@MainActor
final class MainActorUsage {
    var draft: [String: Any] = ["title": "x"]
    var title = ""
    let ref = Database.database().reference().child("drafts")

    func save() async throws {
        try await ref.setValue(draft)
        try await ref.updateChildValues(draft)
        let snapshot = try await ref.getData()
        title = snapshot.value as? String ?? ""
        for try await value in ref.values {
            title = value.key
            break
        }
    }

    func observe() -> DatabaseHandle {
        ref.setValue(draft)
        ref.setValue(draft) { error, _ in self.title = error == nil ? "saved" : "failed" }
        return ref.observe(.value) { snapshot in
            self.title = snapshot.value as? String ?? ""
        }
    }
}
