import Foundation
import Hearth

/// Compile-time check (never run): the FirebaseDatabase Swift API surface,
/// names, labels and types, as an app spells them. A missing or renamed
/// member breaks the build of the tests. Spelled as the SDK's own API test
/// (FirebaseDatabase/Tests/Unit/Swift/DatabaseAPITests.swift) spells it:
/// `try` only where the SDK throws, every label written out once.
final class APISurface {
    /// The async forms, as an async context sees them.
    func asyncCalls(_ query: DatabaseQuery, _ ref: DatabaseReference) async throws {
        var ref = ref
        let values: [AnyHashable: Any] = ["a": 1]
        let _: DataSnapshot = try await query.getData()
        let _: (DataSnapshot, String?) = await query.observeSingleEventAndPreviousSiblingKey(of: .value)
        let _: DataSnapshot = await query.observeSingleEvent(of: .value)
        let _: DataEvent = try await query.firstEvent(.value)
        let _: DataSnapshot = try await DatabaseQuery().getData()
        ref = try await DatabaseReference().setValue(1)
        ref = try await ref.setValue(1)
        ref = try await ref.setValue(1, andPriority: 2)
        ref = try await ref.removeValue()
        ref = try await ref.setPriority(1)
        ref = try await ref.updateChildValues(values)
        ref = try await ref.onDisconnectSetValue(1)
        ref = try await ref.onDisconnectSetValue(1, andPriority: 2)
        ref = try await ref.onDisconnectRemoveValue()
        ref = try await ref.onDisconnectUpdateChildValues(values)
        ref = try await ref.cancelDisconnectOperations()
        let _: (Bool, DataSnapshot) = try await ref.runTransactionBlock { _ in TransactionResult.abort() }
    }

    func everyCall() {
        FirebaseApp.configure()
        FirebaseApp.configure(options: FirebaseOptions(googleAppID: "id", gcmSenderID: "sender"))
        FirebaseApp.configure(name: "other", options: FirebaseOptions(contentsOfFile: "x.plist")!)
        var database = Database.database()
        database = Database.database(url: "http://127.0.0.1:9000?ns=x")
        if let app = FirebaseApp.app() {
            database = Database.database(app: app, url: "http://127.0.0.1:9000?ns=x")
            database = Database.database(app: app)
            let _: FirebaseOptions = app.options
            let _: String? = app.options.databaseURL
            app.delete { (_: Bool) in }
        }
        let _: FirebaseApp? = database.app
        let _: FirebaseApp? = FirebaseApp.app(name: "other")
        let _: Bool = database.isPersistenceEnabled
        let _: UInt = database.persistenceCacheSizeBytes
        var ref: DatabaseReference = database.reference()
        ref = database.reference(withPath: "a")
        ref = database.reference(fromURL: "http://127.0.0.1:9000/a")
        database.purgeOutstandingWrites()
        database.goOffline()
        database.goOnline()
        database.useEmulator(withHost: "127.0.0.1", port: 9000)
        let _: DispatchQueue = database.callbackQueue
        Database.setLoggingEnabled(true)
        let _: String = Database.sdkVersion()

        var handle: DatabaseHandle = 0
        var query: DatabaseQuery = DatabaseQuery()
        handle = query.observe(.value) { (_: DataSnapshot) in }
        handle = query.observe(.childAdded) { (_: DataSnapshot, _: String?) in }
        handle = query.observe(.value, with: { (_: DataSnapshot) in })
        handle = query.observe(.childAdded, andPreviousSiblingKeyWith: { (_: DataSnapshot, _: String?) in })
        handle = query.observe(.value, with: { (_: DataSnapshot) in }, withCancel: { (_: Error) in })
        handle = query.observe(
            .childAdded, andPreviousSiblingKeyWith: { (_: DataSnapshot, _: String?) in },
            withCancel: { (_: Error) in })
        query.observeSingleEvent(of: .value, with: { (_: DataSnapshot) in }, withCancel: { (_: Error) in })
        query.observeSingleEvent(
            of: .childAdded, andPreviousSiblingKeyWith: { (_: DataSnapshot, _: String?) in },
            withCancel: { (_: Error) in })
        query.getData(completion: { (_: Error?, _: DataSnapshot?) in })
        handle = query.observe(.value) { (_: DataSnapshot) in } withCancel: { (_: Error) in }
        handle = query.observe(.childAdded) { (_: DataSnapshot, _: String?) in } withCancel: { (_: Error) in }
        query.getData { (_: Error?, _: DataSnapshot?) in }
        query.observeSingleEvent(of: .value) { (_: DataSnapshot) in }
        query.observeSingleEvent(of: .childAdded) { (_: DataSnapshot, _: String?) in }
        query.observeSingleEvent(of: .value) { (_: DataSnapshot) in } withCancel: { (_: Error) in }
        query.observeSingleEvent(of: .childAdded) { (_: DataSnapshot, _: String?) in } withCancel: { (_: Error) in }
        query.removeObserver(withHandle: handle)
        query.removeAllObservers()
        query.keepSynced(true)
        query = query.queryLimited(toFirst: 1)
        query = query.queryLimited(toLast: 1)
        query = query.queryOrdered(byChild: "c")
        query = query.queryOrderedByKey()
        query = query.queryOrderedByValue()
        query = query.queryOrderedByPriority()
        query = query.queryStarting(atValue: 1)
        query = query.queryStarting(atValue: 1, childKey: "k")
        query = query.queryStarting(afterValue: 1)
        query = query.queryStarting(afterValue: 1, childKey: "k")
        query = query.queryEnding(atValue: 1)
        query = query.queryEnding(atValue: 1, childKey: "k")
        query = query.queryEnding(beforeValue: 1)
        query = query.queryEnding(beforeValue: 1, childKey: "k")
        query = query.queryEqual(toValue: 1)
        query = query.queryEqual(toValue: 1, childKey: "k")
        ref = query.ref

        ref = ref.child("c").childByAutoId()
        ref.setValue(1)
        ref.setValue(1) { (_: Error?, _: DatabaseReference) in }
        ref.setValue(1, andPriority: 2)
        ref.setValue(1, andPriority: 2) { (_: Error?, _: DatabaseReference) in }
        ref.removeValue()
        ref.removeValue { (_: Error?, _: DatabaseReference) in }
        ref.setPriority(1)
        ref.setPriority(1) { (_: Error?, _: DatabaseReference) in }
        let values: [AnyHashable: Any] = ["a": 1]
        ref.updateChildValues(values)
        ref.updateChildValues(values) { (_: Error?, _: DatabaseReference) in }
        ref.onDisconnectSetValue(1)
        ref.onDisconnectSetValue(1) { (_: Error?, _: DatabaseReference) in }
        ref.onDisconnectSetValue(1, andPriority: 2)
        ref.onDisconnectSetValue(1, andPriority: 2) { (_: Error?, _: DatabaseReference) in }
        ref.onDisconnectRemoveValue()
        ref.onDisconnectRemoveValue { (_: Error?, _: DatabaseReference) in }
        ref.onDisconnectUpdateChildValues(values)
        ref.onDisconnectUpdateChildValues(values) { (_: Error?, _: DatabaseReference) in }
        ref.cancelDisconnectOperations()
        ref.cancelDisconnectOperations { (_: Error?, _: DatabaseReference) in }
        ref.setValue(1, withCompletionBlock: { (_: Error?, _: DatabaseReference) in })
        ref.setValue(1, andPriority: 2, withCompletionBlock: { (_: Error?, _: DatabaseReference) in })
        ref.removeValue(completionBlock: { (_: Error?, _: DatabaseReference) in })
        ref.setPriority(1, withCompletionBlock: { (_: Error?, _: DatabaseReference) in })
        ref.updateChildValues(values, withCompletionBlock: { (_: Error?, _: DatabaseReference) in })
        ref.onDisconnectSetValue(1, withCompletionBlock: { (_: Error?, _: DatabaseReference) in })
        ref.onDisconnectSetValue(1, andPriority: 2, withCompletionBlock: { (_: Error?, _: DatabaseReference) in })
        ref.onDisconnectRemoveValue(completionBlock: { (_: Error?, _: DatabaseReference) in })
        ref.onDisconnectUpdateChildValues(values, withCompletionBlock: { (_: Error?, _: DatabaseReference) in })
        ref.cancelDisconnectOperations(completionBlock: { (_: Error?, _: DatabaseReference) in })
        ref.cancelDisconnectOperations(completionBlock: nil)
        var result = TransactionResult()
        ref.runTransactionBlock { (_: MutableData) in result }
        ref.runTransactionBlock { (_: MutableData) in result } andCompletionBlock: { (_: Error?, _: Bool, _: DataSnapshot?) in }
        ref.runTransactionBlock({ (_: MutableData) in result }, andCompletionBlock: { (_: Error?, _: Bool, _: DataSnapshot?) in }, withLocalEvents: false)
        let _: String = ref.description()
        DatabaseReference.goOffline()
        DatabaseReference.goOnline()
        let _: DatabaseReference? = ref.parent
        ref = ref.root
        let _: String? = ref.key
        let _: String = ref.url
        database = ref.database

        let kind = DataEventType(rawValue: 0)
        switch kind {
        case .childAdded, .childRemoved, .childChanged, .childMoved, .value, .none, .some: break
        }

        ref = DatabaseReference()
        let _: Set<DatabaseQuery> = [query, ref]
        let _: [DatabaseReference: Int] = [ref: 1]

        var snapshot = DataSnapshot()
        snapshot = snapshot.childSnapshot(forPath: "a")
        let _: Bool = snapshot.hasChild("a") && snapshot.hasChildren() && snapshot.exists()
        var value: Any? = snapshot.valueInExportFormat()
        value = snapshot.value
        let _: UInt = snapshot.childrenCount
        ref = snapshot.ref
        let _: String = snapshot.key
        let _: NSEnumerator = snapshot.children
        value = snapshot.priority

        var data = MutableData()
        let _: Bool = data.hasChildren() && data.hasChild(atPath: "a")
        data = data.childData(byAppendingPath: "a")
        value = data.value
        value = data.priority
        let _: UInt = data.childrenCount
        let _: NSEnumerator = data.children
        let _: String? = data.key
        _ = value

        var server: [AnyHashable: Any] = ServerValue.timestamp()
        server = ServerValue.increment(NSNumber(value: 1))
        _ = server
        result = TransactionResult.success(withValue: data)
        result = TransactionResult.abort()
    }
}

// Test doubles as apps write them against the SDK: subclasses overriding its
// members (this file imports Hearth without @testable, so they need `open`).
// PortingTests uses them.

final class FakeSnapshot: DataSnapshot, @unchecked Sendable {
    let fakeValue: Any?
    init(value: Any?) {
        fakeValue = value
        super.init()
    }
    override var value: Any? { fakeValue }
    override var key: String { "fake" }
    override func exists() -> Bool { fakeValue != nil }
}

final class FakeReference: DatabaseReference, @unchecked Sendable {
    private(set) var written: [Any?] = []
    override func setValue(_ value: Any?) { written.append(value) }
    override func child(_ pathString: String) -> DatabaseReference { self }
    override var key: String? { "fake" }
    override func observe(_ eventType: DataEventType, with block: @escaping (DataSnapshot) -> Void)
        -> DatabaseHandle
    {
        block(FakeSnapshot(value: written.last ?? nil))
        return 1
    }
}

final class FakeQuery: DatabaseQuery, @unchecked Sendable {
    override func queryLimited(toFirst limit: UInt) -> DatabaseQuery { self }
}

final class FakeMutableData: MutableData {
    override var value: Any? {
        get { "fake" }
        set {}
    }
}

final class FakeTransactionResult: TransactionResult {}
