import Foundation
import Testing

@testable import Hearth
import HearthServer

/// The examples of the Apple "Read and Write Data" guide for the Realtime
/// Database, run as written there (names included) against a real server:
/// a client Database on a HearthServer on a free loopback port.
@Suite("Read and write data guide, against a server")
struct GuideTests {
    let server: HearthServer
    let database: Database
    let ref: DatabaseReference
    let scratch = TemporaryDirectory("hearth-guide")

    init() throws {
        server = try HearthServer(.init(port: 0, dataDirectory: scratch.path + "/data", fsync: .off))
        database = Database(url: "http://127.0.0.1:\(server.port)?ns=guide\(UUID().uuidString.prefix(8))")
        database.callbackQueue = DispatchQueue(label: "hearth.tests.guide")
        ref = database.reference()
    }

    @Test func writeAProfileAndUpdateAField() async throws {
        let user = (uid: "u1", username: "ada")
        try await ref.child("users").child(user.uid).setValue(["username": user.username])
        try await ref.child("users/\(user.uid)/username").setValue("ada-l")
        let snapshot = try await ref.child("users").child(user.uid).getData()
        #expect((snapshot.value as? [String: Any])?["username"] as? String == "ada-l")
        server.stop()
    }

    @Test func listenForValueEventsOnAPost() async throws {
        let postRef = ref.child("posts").child("p1")
        let titles = Recorder<String>()
        let handle = postRef.observe(DataEventType.value, with: { snapshot in
            let postDict = snapshot.value as? [String: AnyObject] ?? [:]
            titles.append(postDict["title"] as? String ?? "(none)")
        })
        try await titles.wait(for: 1)
        try await postRef.setValue(["title": "Hello", "body": "First"])
        try await postRef.child("title").setValue("Hello again")
        #expect(try await titles.wait(for: 3) == ["(none)", "Hello", "Hello again"])
        // Detaching listeners: nothing more arrives.
        postRef.removeObserver(withHandle: handle)
        try await postRef.child("title").setValue("unseen")
        try await settle(database)  // the write's callbacks, had there been any, ran
        #expect(titles.all.count == 3)
        server.stop()
    }

    @Test func getDataOfAUsernameWithErrorHandling() async throws {
        let uid = "u2"
        try await ref.child("users/\(uid)/username").setValue("grace")
        let got = Recorder<String>()
        ref.child("users/\(uid)/username").getData(completion: { error, snapshot in
            guard error == nil else {
                got.append("error: \(error!.localizedDescription)")
                return
            }
            let userName = snapshot?.value as? String ?? "Unknown"
            got.append(userName)
        })
        #expect(try await got.wait(for: 1) == ["grace"])
        server.stop()
    }

    @Test func observeSingleEventOfAProfile() async throws {
        let userID = "u3"
        try await ref.child("users").child(userID).setValue(["username": "linus"])
        let names = Recorder<String>()
        ref.child("users").child(userID).observeSingleEvent(of: .value, with: { snapshot in
            let value = snapshot.value as? NSDictionary
            names.append(value?["username"] as? String ?? "")
        }) { error in
            names.append("cancelled: \(error)")
        }
        #expect(try await names.wait(for: 1) == ["linus"])
        server.stop()
    }

    @Test func fanOutANewPostWithAsyncCompletion() async throws {
        let userID = "u4", username = "ken", title = "t", body = "b"
        guard let key = ref.child("posts").childByAutoId().key else {
            Issue.record("no key")
            return
        }
        let post = ["uid": userID, "author": username, "title": title, "body": body]
        let childUpdates = ["/posts/\(key)": post, "/user-posts/\(userID)/\(key)/": post]
        let done = Recorder<Bool>()
        ref.updateChildValues(childUpdates) { error, _ in done.append(error == nil) }
        #expect(try await done.wait(for: 1) == [true])
        let mine = try await ref.child("user-posts/\(userID)/\(key)/title").getData()
        #expect(mine.value as? String == title)
        let all = try await ref.child("posts/\(key)/author").getData()
        #expect(all.value as? String == username)
        server.stop()
    }

    @Test func removeValueAndNilDeletes() async throws {
        try await ref.child("tmp").setValue(["a": 1, "b": 2])
        try await ref.child("tmp/a").removeValue()
        try await ref.child("tmp/b").setValue(nil)
        #expect(try await ref.child("tmp").getData().exists() == false)
        server.stop()
    }

    /// Stars: each of 8 clients stars, then half of them unstar, with the
    /// guide's transaction; the count ends exact.
    @Test func starAndUnstarTransactionsCountExactly() async throws {
        let postRef = ref.child("posts/starred")
        try await postRef.setValue(["starCount": 0, "title": "x"])
        let databases = (0..<8).map { _ -> Database in
            let database = Database(url: ref.database.url)
            database.callbackQueue = DispatchQueue(label: "hearth.tests.stars")
            return database
        }
        func toggle(_ database: Database, uid: String) async throws {
            let postRef = database.reference(withPath: "posts/starred")
            let (committed, _) = try await postRef.runTransactionBlock { currentData in
                if var post = currentData.value as? [String: AnyObject] {
                    var stars = post["stars"] as? [String: Bool] ?? [:]
                    var starCount = post["starCount"] as? Int ?? 0
                    if stars[uid] != nil {
                        starCount -= 1
                        stars.removeValue(forKey: uid)
                    } else {
                        starCount += 1
                        stars[uid] = true
                    }
                    post["starCount"] = starCount as AnyObject?
                    post["stars"] = stars as AnyObject?
                    currentData.value = post
                    return TransactionResult.success(withValue: currentData)
                }
                return TransactionResult.success(withValue: currentData)
            }
            #expect(committed)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, database) in databases.enumerated() {
                group.addTask { try await toggle(database, uid: "user\(i)") }
            }
            try await group.waitForAll()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (i, database) in databases.enumerated() where i % 2 == 0 {
                group.addTask { try await toggle(database, uid: "user\(i)") }
            }
            try await group.waitForAll()
        }
        let post = try await postRef.getData().value as? [String: Any]
        #expect(post?["starCount"] as? Int == 4)
        #expect((post?["stars"] as? [String: Any])?.count == 4)
        server.stop()
    }

    /// The guide's atomic server-side increments, fanned out to two places.
    @Test func incrementFanOut() async throws {
        let updates: [String: Any] = [
            "posts/p9/stars/u1": true,
            "posts/p9/starCount": ServerValue.increment(1),
            "user-posts/u9/p9/stars/u1": true,
            "user-posts/u9/p9/starCount": ServerValue.increment(1),
        ]
        try await ref.updateChildValues(updates)
        try await ref.updateChildValues([
            "posts/p9/starCount": ServerValue.increment(1),
            "user-posts/u9/p9/starCount": ServerValue.increment(1),
        ])
        #expect(try await ref.child("posts/p9/starCount").getData().value as? Int == 2)
        #expect(try await ref.child("user-posts/u9/p9/starCount").getData().value as? Int == 2)
        server.stop()
    }

    @Test func offlineWritesRaiseEventsAtOnceAndSyncLater() async throws {
        let database = ref.database
        let seen = Recorder<String>()
        ref.child("notes/n").observe(.value) { seen.append($0.value as? String ?? "-") }
        try await seen.wait(for: 1)
        database.goOffline()
        ref.child("notes/n").setValue("offline edit") { _, _ in }
        #expect(try await seen.wait(for: 2).last == "offline edit")
        database.goOnline()
        let other = Database(url: database.url + "&other")
        other.callbackQueue = DispatchQueue(label: "hearth.tests.other")
        let remote = Recorder<String>()
        other.reference(withPath: "notes/n").observe(.value) { snapshot in
            if let text = snapshot.value as? String { remote.append(text) }
        }
        #expect(try await remote.wait(for: 1) == ["offline edit"])
        server.stop()
    }
}
