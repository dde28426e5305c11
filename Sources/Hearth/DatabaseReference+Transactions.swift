internal import CHearth
import Foundation

extension DatabaseReference {
    /// Changes the data here atomically with `block`, as FirebaseDatabase's
    /// `runTransactionBlock`. See
    /// ``runTransactionBlock(_:andCompletionBlock:withLocalEvents:)``.
    public func runTransactionBlock(_ block: @escaping (MutableData) -> TransactionResult) {
        runTransactionBlock(block, andCompletionBlock: nil, withLocalEvents: true)
    }

    /// Changes the data here atomically with `block`; `completionBlock`
    /// receives the outcome on the database's `callbackQueue`. See
    /// ``runTransactionBlock(_:andCompletionBlock:withLocalEvents:)``.
    public func runTransactionBlock(
        _ block: @escaping (MutableData) -> TransactionResult,
        andCompletionBlock completionBlock: ((Error?, Bool, DataSnapshot?) -> Void)?
    ) {
        runTransactionBlock(block, andCompletionBlock: completionBlock, withLocalEvents: true)
    }

    /// Changes the data here atomically: `block` receives the current value
    /// as a ``MutableData`` and returns `TransactionResult.success(withValue:)`
    /// to commit the data it holds, or `TransactionResult.abort()`.
    ///
    /// On this embedded database the block runs exactly once, with the
    /// value as it is at that moment, and its result is written before any
    /// other write: no write comes between the read and the commit, so
    /// concurrent transactions never lose each other's changes.
    ///
    /// - Important: `block` runs synchronously on Hearth's loop thread, not
    ///   on the callback queue (the SDK also runs it off the main queue).
    ///   While it runs, no other operation of the database proceeds, so it
    ///   must be quick and must not block, wait for this database (nothing
    ///   it starts can finish before it returns) or touch state owned by
    ///   another actor (such as the main actor).
    ///
    /// `completionBlock` runs on the database's `callbackQueue`, after the
    /// events of the write, with:
    /// - `(nil, true, snapshot)` when the transaction committed;
    /// - `(nil, false, snapshot)` when `block` aborted (the snapshot holds
    ///   the current, unchanged value), as the SDK reports it;
    /// - `(error, false, snapshot)` when the data `block` returned cannot
    ///   be stored (an invalid key, an unsupported type, too deep...):
    ///   nothing changes and the snapshot holds the current value;
    /// - `(error, false, nil)` when the transaction never ran: refused at
    ///   once (a read-only location such as `.info`), or the database
    ///   closed first (a `HearthError` with code `.canceled`).
    ///
    /// Without a completion block, a failure is logged.
    ///
    /// - Parameter localEvents: Accepted for the SDK's API. With a server,
    ///   `false` hides the intermediate states of a transaction that may be
    ///   retried; on the embedded database the transaction is applied once,
    ///   as one write, so its events are always raised, whatever the flag.
    public func runTransactionBlock(
        _ block: @escaping (MutableData) -> TransactionResult,
        andCompletionBlock completionBlock: ((Error?, Bool, DataSnapshot?) -> Void)?,
        withLocalEvents localEvents: Bool
    ) {
        guard let completionBlock else {
            startTransaction(block) { error, _, _ in
                if let error { Database.log("transaction at \(self) failed: \(error.message)") }
            }
            return
        }
        let completion = db.bound(completionBlock)
        startTransaction(block) { error, committed, snapshot in
            completion.async { $0(error?.bridged, committed, snapshot) }
        }
    }

    /// Changes the data here atomically with `block` and returns whether it
    /// committed, with the value now here. An aborted transaction returns
    /// `(false, snapshot)`; data that cannot be stored throws its
    /// `HearthError` and changes nothing. `block` runs on Hearth's loop
    /// thread; see ``runTransactionBlock(_:andCompletionBlock:withLocalEvents:)``.
    nonisolated(nonsending) public func runTransactionBlock(
        _ block: @escaping (MutableData) -> TransactionResult
    ) async throws -> (Bool, DataSnapshot) {
        try await withCheckedThrowingContinuation { continuation in
            startTransaction(block) { error, committed, snapshot in
                if let error {
                    continuation.resume(throwing: error.bridged)
                } else if let snapshot {
                    continuation.resume(returning: (committed, snapshot))
                } else {
                    continuation.resume(throwing: HearthError(code: .canceled).bridged)
                }
            }
        }
    }

    /// Submits the transaction. `completion` runs exactly once: on the loop
    /// thread (or the closing thread), or on the calling thread when C
    /// refuses the transaction at once.
    private func startTransaction(
        _ block: @escaping (MutableData) -> TransactionResult,
        completion: @escaping @Sendable (HearthError?, Bool, DataSnapshot?) -> Void
    ) {
        var completion = completion
        if let counted = db.countWrite() {
            let given = completion
            completion = { error, committed, snapshot in
                given(error, committed, snapshot)
                counted.writeSettled()
            }
        }
        let transaction = Transaction(ref: self, block: block, completion: completion)
        let context = Unmanaged.passRetained(transaction).toOpaque()
        var details = hearth_error_t()
        let status = hearth_db_transaction(
            db.handle, path, Transaction.update, Transaction.done, context, Transaction.release, &details)
        if status != 0 {
            Unmanaged<Transaction>.fromOpaque(context).release()
            completion(HearthError(status: status, details: details), false, nil)
        }
    }
}

/// The C context of one transaction (`hearth_db_transaction`).
///
/// Passed to C retained; C calls ``update`` (at most once) and then
/// ``done`` (exactly once) on the loop thread, or only ``done`` with
/// `HEARTH_ECANCELED` when the database closes first, then ``release``.
private final class Transaction: @unchecked Sendable {
    // @unchecked Sendable: `block` is the user's non-Sendable closure and
    // `failure` is mutable, but C calls `update` and then `done` one after
    // the other on the loop thread (or `done` alone on the closing thread
    // once the loop has stopped), so they are never touched concurrently;
    // the block is called there only, as documented, which `run` checks
    // (the block stays a plain closure, as the SDK's: code that counts
    // its attempts in a local variable is correct, since attempts run one
    // at a time, and `@Sendable` would refuse it).
    private let ref: DatabaseReference
    private let block: (MutableData) -> TransactionResult
    private let completion: @Sendable (HearthError?, Bool, DataSnapshot?) -> Void
    /// Why the update aborted, when it was not the block's choice.
    private var failure: HearthError?

    init(
        ref: DatabaseReference, block: @escaping (MutableData) -> TransactionResult,
        completion: @escaping @Sendable (HearthError?, Bool, DataSnapshot?) -> Void
    ) {
        self.ref = ref
        self.block = block
        self.completion = completion
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> Transaction? {
        context.map { Unmanaged<Transaction>.fromOpaque($0).takeUnretainedValue() }
    }

    static let update: hearth_transaction_fn = { current, result, context in
        guard let transaction = from(context) else { return HEARTH_TX_ABORT }
        return transaction.run(current: current, result: result)
    }

    static let done: hearth_transaction_done_cb = { status, committed, snapshot, context in
        from(context)?.finish(status: status, committed: committed, snapshot: snapshot)
    }

    static let release: hearth_free_cb = { context in
        guard let context else { return }
        Unmanaged<Transaction>.fromOpaque(context).release()
    }

    /// Runs the block on the current value (borrowed) and hands C a new
    /// reference to the value to commit.
    private func run(current: OpaquePointer, result: UnsafeMutablePointer<OpaquePointer?>) -> Int32 {
        precondition(ref.db.isLoopThread, "Hearth: a transaction block ran off the loop thread")
        let data = MutableData(node: Node(retaining: current), location: ref.path)
        guard let chosen = block(data).update else { return HEARTH_TX_ABORT }
        do {
            let node = try chosen.committedNode()
            result.pointee = withExtendedLifetime(node) { hearth_node_incref(node.pointer) }
            return HEARTH_TX_COMMIT
        } catch {
            failure = error
            return HEARTH_TX_ABORT
        }
    }

    private func finish(status: Int32, committed: Bool, snapshot: OpaquePointer?) {
        let error: HearthError?
        switch status {
        case 0:
            error = nil
        case HEARTH_EABORTED.rawValue:
            error = failure  // nil: the block aborted, which is no error
        default:
            error = HearthError(completing: status)
        }
        var result: DataSnapshot?
        if let snapshot, status != HEARTH_ECANCELED.rawValue {
            result = DataSnapshot(node: Node(retaining: snapshot), ref: ref, query: .default)
        }
        completion(error, committed && status == 0, result)
    }
}
