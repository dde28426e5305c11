internal import CHearth
import Dispatch
import Foundation

// What the `hearth` command line needs beyond the SDK's API, for its
// embedded data directories and realtime watches: JSON text in and out as
// the core has it (numbers and key order exact, export format), errors
// thrown instead of trapping, and calls that wait (the commands are
// synchronous). Imported with `@_spi(CLI) import Hearth`; not public API.

@_spi(CLI)
extension Database {
    /// `hearth backup --data`: a namespace's data directory, which a
    /// server may hold and write to, copied as of one commit into
    /// `file` (export JSON, written whole or not at all).
    public static func backup(dataDirectory: String, to file: String) throws(HearthError) {
        var err = hearth_error_t()
        let status = hearth_backup(dataDirectory, file, &err)
        guard status == 0 else { throw HearthError(status: status, details: err) }
    }

    /// `hearth backup --at / --at-seq --data`: the namespace as it was
    /// after the last write at or before `atMilliseconds` (Unix ms; 0: any
    /// time) whose sequence is at most `atSequence` (0: any), rebuilt from
    /// the snapshots and logs its directory retains.
    public static func backup(
        dataDirectory: String, to file: String, atMilliseconds: Int64, atSequence: UInt64
    ) throws(HearthError) {
        var err = hearth_error_t()
        let status = hearth_backup_at(dataDirectory, atMilliseconds, atSequence, file, &err)
        guard status == 0 else { throw HearthError(status: status, details: err) }
    }

    /// `hearth restore --path`: the export JSON of the value at `path` in
    /// a backup's export JSON ("null" when nothing is there), numbers and
    /// key order exact. Throws the core's message for invalid data or path.
    public static func subtreeJSON(_ text: Data, at path: String) throws(HearthError) -> Data {
        let root = try NodeEncoder.node(fromJSON: Array(text), allowServerValues: false)
        var child: OpaquePointer?
        var err = hearth_error_t()
        let status = hearth_node_get(root.pointer, path, &child, &err)
        guard status == 0, let child else { throw HearthError(status: status, details: err) }
        return Data(Node(retaining: child).json(flags: UInt32(HEARTH_JSON_EXPORT)).utf8)
    }

    /// One part of a logged write (`hearth log`).
    public struct LoggedChange: Sendable {
        /// Unix ms; 0 when an earlier version logged it without a time.
        public let timeMilliseconds: Int64
        public let sequence: UInt64
        /// "admin", "anonymous" or "uid:<uid>"; nil when not logged.
        public let identity: String?
        public let path: String
        public let bytes: Int
    }

    /// Calls `body` for every retained change of a namespace's data
    /// directory touching `path` (nil: all) within [since, until] (Unix ms,
    /// 0: unbounded), in log order.
    public static func changes(
        dataDirectory: String, path: String?, since: Int64, until: Int64,
        _ body: @escaping (LoggedChange) -> Void
    ) throws(HearthError) {
        final class Sink {
            let body: (LoggedChange) -> Void
            init(_ body: @escaping (LoggedChange) -> Void) { self.body = body }
        }
        let sink = Sink(body)
        var err = hearth_error_t()
        let status = withExtendedLifetime(sink) {
            hearth_log_changes(
                dataDirectory, path, since, until,
                { change, ctx in
                    guard let ctx else { return 0 }
                    let c = change.pointee
                    Unmanaged<Sink>.fromOpaque(ctx).takeUnretainedValue().body(
                        LoggedChange(
                            timeMilliseconds: c.time_ms, sequence: c.sequence,
                            identity: c.identity.map { String(cString: $0) },
                            path: String(cString: c.path), bytes: Int(c.bytes)))
                    return 0
                }, Unmanaged.passUnretained(sink).toOpaque(), &err)
        }
        guard status == 0 else { throw HearthError(status: status, details: err) }
    }

    /// The database for `url` with blocks on a private queue (the command
    /// line runs no main queue), opened now: throws what the C core says
    /// when it cannot open (a data directory another process holds is
    /// "in use").
    public static func openForCommandLine(url: String) throws(HearthError) -> Database {
        let database = Database(url: url)
        database.callbackQueue = DispatchQueue(label: "hearth.cli.callbacks")
        _ = try database.opening()
        return database
    }

    /// A reference to `path`; throws the core's message for an invalid
    /// path, where `reference(withPath:)` traps.
    public func reference(checkingPath path: String) throws(HearthError) -> DatabaseReference {
        try DatabasePath.validate(path)
        return DatabaseReference(database: self, normalizedPath: DatabasePath.normalize(path))
    }
}

@_spi(CLI)
extension DatabaseQuery {
    /// This location with the REST API's query parameters: `orderBy` is
    /// "$key", "$value", "$priority" or a child path; bounds are JSON
    /// text. Throws the core's message where the SDK's builders trap.
    public func restQuery(
        orderBy: String?, startAt: String?, endAt: String?, equalTo: String?,
        limitToFirst: UInt32?, limitToLast: UInt32?
    ) throws(HearthError) -> DatabaseQuery {
        var params = self.params
        switch orderBy {
        case nil: break
        case "$key": params = try params.adding { hearth_query_order_by_key($0, $1) }
        case "$value": params = try params.adding { hearth_query_order_by_value($0, $1) }
        case "$priority": params = try params.adding { hearth_query_order_by_priority($0, $1) }
        case let child?: params = try params.adding { hearth_query_order_by_child($0, child, $1) }
        }
        for (text, set) in [
            (startAt, hearth_query_start_at), (endAt, hearth_query_end_at), (equalTo, hearth_query_equal_to),
        ] {
            guard let text else { continue }
            let bound: Node
            do {
                bound = try NodeEncoder.node(fromJSON: Array(text.utf8), allowServerValues: false)
            } catch {
                throw HearthError(code: error.code, message: "\(text) is not a JSON value: \(error.message)")
            }
            params = try params.adding { set($0, bound.pointer, nil, $1) }
        }
        if let limitToFirst { params = try params.adding { hearth_query_limit_to_first($0, limitToFirst, $1) } }
        if let limitToLast { params = try params.adding { hearth_query_limit_to_last($0, limitToLast, $1) } }
        return DatabaseQuery(database: db, normalizedPath: path, params: params)
    }

    /// The query's data as JSON text (with priorities in the export
    /// format), after the writes made before; waits for it.
    public func jsonText(export: Bool, pretty: Bool) throws(HearthError) -> String {
        let (path, params) = (self.path, self.params)
        let node = try waiting { done in db.read(path: path, query: params, completion: done) }
        return node.json(flags: Self.jsonFlags(export: export, pretty: pretty))
    }

    static func jsonFlags(export: Bool, pretty: Bool) -> UInt32 {
        (export ? UInt32(HEARTH_JSON_EXPORT) : 0) | (pretty ? UInt32(HEARTH_JSON_PRETTY) : 0)
    }
}

@_spi(CLI)
extension DatabaseReference {
    /// Replaces the data here with JSON text (export format and server
    /// values accepted); waits until the write is acknowledged (for a data
    /// directory: logged and synced).
    public func setJSON(_ text: Data) throws(HearthError) {
        let node = try NodeEncoder.node(fromJSON: [UInt8](text), allowServerValues: true)
        let (db, path) = (self.db, self.path)
        try waitForWrite("set") { callback, context, release, error in
            hearth_db_set(db.handle, path, node.pointer, callback, context, release, error)
        }
    }

    /// Adds JSON text under a new push key here; returns the key once the
    /// write is acknowledged.
    public func pushJSON(_ text: Data) throws(HearthError) -> String {
        let node = try NodeEncoder.node(fromJSON: [UInt8](text), allowServerValues: true)
        let (db, path) = (self.db, self.path)
        var key = [CChar](repeating: 0, count: Int(HEARTH_PUSH_ID_SIZE))
        try waitForWrite("push") { callback, context, release, error in
            hearth_db_push(db.handle, path, node.pointer, &key, callback, context, release, error)
        }
        return key.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Updates the children that a JSON object names; waits until the
    /// write is acknowledged.
    public func updateJSON(_ text: Data) throws(HearthError) {
        let (db, path) = (self.db, self.path)
        try waitForWrite("update") { callback, context, release, error in
            text.withUnsafeBytes { raw in
                // Empty text has no address; "" stands for it (and fails
                // to parse, as it should).
                hearth_db_update_json(
                    db.handle, path, raw.baseAddress?.assumingMemoryBound(to: CChar.self) ?? emptyText,
                    raw.count, callback, context, release, error)
            }
        }
    }

    private func waitForWrite(_ function: String, _ start: @escaping Database.WriteStart) throws(HearthError) {
        let _: Void = try waiting { done in
            db.write("\(function) at \(self)", prepare: { start }) { error in
                done(error.map { .failure($0) } ?? .success(()))
            }
        }
    }
}

@_spi(CLI)
extension DataSnapshot {
    /// The data as JSON text, exactly as the core holds it.
    public func jsonText(export: Bool = false, pretty: Bool = false) -> String {
        node.json(flags: DatabaseQuery.jsonFlags(export: export, pretty: pretty))
    }
}

/// Starts an operation and waits for its outcome, which arrives on another
/// thread (the loop thread): never call it there.
private func waiting<Value: Sendable>(
    _ start: (@escaping @Sendable (Result<Value, HearthError>) -> Void) -> Void
) throws(HearthError) -> Value {
    let outcome = Locked<Result<Value, HearthError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    start { result in
        outcome.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try outcome.withLock { $0! }.get()
}

/// The checks a rules document must pass (shape, comments, every rule's
/// expression): what the server and `useRules(_:auth:)` run.
@_spi(CLI)
public enum RulesDocument {
    /// Throws the core's message naming what is wrong.
    public static func check(_ text: some Collection<UInt8>) throws(HearthError) {
        let bytes = Array(text)
        try HearthError.check { details in
            bytes.withUnsafeBufferPointer { raw in
                raw.withMemoryRebound(to: CChar.self) {
                    hearth_rules_check($0.baseAddress ?? emptyText, $0.count, details)
                }
            }
        }
    }

    /// `hearth rules test`: the cases run against the rules document,
    /// offline; the report as JSON text (hearth_rules_test). Throws the
    /// core's message for a document or a case that is not valid.
    public static func test(rules: Data, cases: Data) throws(HearthError) -> String {
        let rulesBytes = Array(rules), caseBytes = Array(cases)
        var report: UnsafeMutablePointer<CChar>?
        try HearthError.check { details in
            rulesBytes.withUnsafeBufferPointer { r in
                caseBytes.withUnsafeBufferPointer { c in
                    r.withMemoryRebound(to: CChar.self) { rc in
                        c.withMemoryRebound(to: CChar.self) { cc in
                            hearth_rules_test(
                                rc.baseAddress ?? emptyText, rc.count,
                                cc.baseAddress ?? emptyText, cc.count, &report, details)
                        }
                    }
                }
            }
        }
        defer { hearth_free(report) }
        return report.map { String(cString: $0) } ?? "{}"
    }
}

/// `hearth_repair`: cuts a damaged log of a data directory at its first
/// bad record (see hearth.h).
@_spi(CLI)
public struct LogRepair: Sendable {
    /// Whether anything was damaged (and so cut).
    public let repaired: Bool
    /// The generation of the log that was cut.
    public let logGeneration: UInt64
    public let damageOffset: UInt64
    public let cutOffset: UInt64
    public let bytesCut: UInt64
    public let recordsCut: UInt64
    public let logsMovedAside: UInt64
    /// Where the damaged log was copied.
    public let copy: String

    /// Repairs `directory` (no process may have it open).
    public init(directory: String) throws(HearthError) {
        var report = hearth_repair_report_t()
        try HearthError.check { hearth_repair(directory, &report, $0) }
        repaired = report.repaired
        logGeneration = UInt64(report.log_generation)
        damageOffset = UInt64(report.damage_offset)
        cutOffset = UInt64(report.cut_offset)
        bytesCut = UInt64(report.bytes_cut)
        recordsCut = UInt64(report.records_cut)
        logsMovedAside = UInt64(report.logs_moved)
        copy = withUnsafeBytes(of: &report.copy) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}

/// A C string "" for a buffer that has no address (empty data).
private var emptyText: UnsafePointer<CChar> {
    UnsafeRawPointer(("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}
