import ArgumentParser
import CHearth
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where a command reads and writes: a data directory opened in process
/// (`--data`, when no server holds it), or a running server (`--url`, or
/// HEARTH_DATABASE_URL).
struct SourceOptions: ParsableArguments {
    @Option(help: "A data directory to open directly (no server may be running on it).")
    var data: String?

    @Option(help: "The namespace within --data.")
    var namespace = "default"

    @Option(help: "A server: http://HOST:PORT/?ns=NAME (default: $HEARTH_DATABASE_URL).")
    var url: String?

    @Option(help: ArgumentHelp(
        "With --url: a user's token (the server's rules then judge the requests as that user) or the admin secret (default: $HEARTH_AUTH_TOKEN, else \"owner\", the emulator's admin).",
        valueName: "token"))
    var token: String?

    func validate() throws {
        if data != nil && url != nil {
            throw ValidationError("give --data or --url, not both")
        }
        if data == nil && serverURL == nil {
            throw ValidationError("give --data DIR or --url http://HOST:PORT/?ns=NAME")
        }
    }

    var serverURL: String? {
        url ?? ProcessInfo.processInfo.environment["HEARTH_DATABASE_URL"]
    }

    /// What requests to the server carry as their Bearer credential.
    var credential: String {
        token ?? ProcessInfo.processInfo.environment["HEARTH_AUTH_TOKEN"] ?? "owner"
    }

    func server() throws -> ServerStore {
        try ServerStore(url: serverURL!, credential: credential)
    }

    func open() throws -> DataSource {
        if let data { return try .directory(EmbeddedStore(directory: data + "/" + namespace)) }
        return .server(try server())
    }
}

/// Query flags, as the REST API names its parameters.
struct QueryOptions: ParsableArguments {
    @Option(help: "Order by \"$key\", \"$value\", \"$priority\" or a child path.")
    var orderBy: String?

    @Option(help: "Lower bound (a JSON value).")
    var startAt: String?

    @Option(help: "Upper bound (a JSON value).")
    var endAt: String?

    @Option(help: "Only this value (a JSON value).")
    var equalTo: String?

    @Option(help: "The first N children in the order.")
    var limitToFirst: UInt32?

    @Option(help: "The last N children in the order.")
    var limitToLast: UInt32?

    var isEmpty: Bool {
        orderBy == nil && startAt == nil && endAt == nil && equalTo == nil
            && limitToFirst == nil && limitToLast == nil
    }

    /// The REST parameters (orderBy JSON-encoded, as the API wants).
    var restItems: [URLQueryItem] {
        var items: [URLQueryItem] = []
        if let orderBy {
            let encoded = (try? JSONSerialization.data(withJSONObject: [orderBy], options: []))
                .map { String(decoding: $0.dropFirst().dropLast(), as: UTF8.self) } ?? "\"\(orderBy)\""
            items.append(URLQueryItem(name: "orderBy", value: encoded))
        }
        if let startAt { items.append(URLQueryItem(name: "startAt", value: startAt)) }
        if let endAt { items.append(URLQueryItem(name: "endAt", value: endAt)) }
        if let equalTo { items.append(URLQueryItem(name: "equalTo", value: equalTo)) }
        if let limitToFirst { items.append(URLQueryItem(name: "limitToFirst", value: "\(limitToFirst)")) }
        if let limitToLast { items.append(URLQueryItem(name: "limitToLast", value: "\(limitToLast)")) }
        return items
    }
}

/// The writes a command can make.
enum WriteKind {
    case set, update, push, remove
}

enum DataSource {
    case directory(EmbeddedStore)
    case server(ServerStore)

    /// The value at path (query applied) as JSON text.
    func get(path: String, query: QueryOptions, pretty: Bool) throws -> String {
        switch self {
        case .directory(let s): try s.get(path: path, query: query, pretty: pretty)
        case .server(let s): try s.get(path: path, query: query, pretty: pretty)
        }
    }

    /// Makes a write; a push returns the new key.
    func write(_ kind: WriteKind, path: String, json: Data) throws -> String? {
        switch self {
        case .directory(let s): try s.write(kind, path: path, json: json)
        case .server(let s): try s.write(kind, path: path, json: json)
        }
    }

    /// The value at path as export-format JSON text.
    func export(path: String, pretty: Bool) throws -> String {
        switch self {
        case .directory(let s): try s.export(path: path, pretty: pretty)
        case .server(let s): try s.export(path: path, pretty: pretty)
        }
    }

    /// Replaces the value at path with JSON text (export format accepted).
    func importJSON(_ text: Data, path: String) throws {
        switch self {
        case .directory(let s): try s.importJSON(text, path: path)
        case .server(let s): try s.importJSON(text, path: path)
        }
    }
}

struct CommandFailure: Error, CustomStringConvertible {
    let description: String
}

/// A data directory opened in this process.
final class EmbeddedStore {
    private let db: OpaquePointer

    init(directory: String) throws {
        var config = hearth_db_config_t()
        var db: OpaquePointer?
        var err = hearth_error_t()
        let status = directory.withCString { dir -> Int32 in
            config.data_dir = dir
            return hearth_db_open(&config, &db, &err)
        }
        guard status == 0, let db else {
            var text = Self.message(err, status)
            if text.contains("in use") {
                text += " (is a server running on it? use --url)"
            }
            throw CommandFailure(description: text)
        }
        self.db = db
    }

    deinit { hearth_db_close(db) }

    static func message(_ err: hearth_error_t, _ status: Int32) -> String {
        var err = err
        let text = withUnsafeBytes(of: &err.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return text.isEmpty ? String(cString: hearth_strerror(status)) : text
    }

    /// A C query for the flags; nil for none. Messages are the core's.
    static func makeQuery(_ options: QueryOptions) throws -> OpaquePointer? {
        if options.isEmpty { return nil }
        var q: OpaquePointer?
        guard hearth_query_new(&q) == 0, let q else { throw CommandFailure(description: "out of memory") }
        var err = hearth_error_t()
        func check(_ status: Int32) throws {
            if status != 0 {
                hearth_query_free(q)
                throw CommandFailure(description: message(err, status))
            }
        }
        func node(_ json: String) throws -> OpaquePointer {
            var n: OpaquePointer?
            let status = hearth_node_from_json(json, -1, 0, &n, &err)
            if status != 0 || n == nil {
                hearth_query_free(q)
                throw CommandFailure(description: "\(json) is not a JSON value: \(message(err, status))")
            }
            return n!
        }
        switch options.orderBy {
        case nil: break
        case "$key": try check(hearth_query_order_by_key(q, &err))
        case "$value": try check(hearth_query_order_by_value(q, &err))
        case "$priority": try check(hearth_query_order_by_priority(q, &err))
        case let child?: try check(hearth_query_order_by_child(q, child, &err))
        }
        for (text, set) in [
            (options.startAt, hearth_query_start_at), (options.endAt, hearth_query_end_at),
            (options.equalTo, hearth_query_equal_to),
        ] {
            guard let text else { continue }
            let value = try node(text)
            defer { hearth_node_decref(value) }
            try check(set(q, value, nil, &err))
        }
        if let n = options.limitToFirst { try check(hearth_query_limit_to_first(q, n, &err)) }
        if let n = options.limitToLast { try check(hearth_query_limit_to_last(q, n, &err)) }
        return q
    }

    func get(path: String, query: QueryOptions, pretty: Bool) throws -> String {
        let q = try Self.makeQuery(query)
        defer { if let q { hearth_query_free(q) } }
        return try read(path: path, query: q, flags: pretty ? UInt32(HEARTH_JSON_PRETTY) : 0)
    }

    func export(path: String, pretty: Bool) throws -> String {
        try read(path: path, query: nil,
                 flags: UInt32(HEARTH_JSON_EXPORT) | (pretty ? UInt32(HEARTH_JSON_PRETTY) : 0))
    }

    private func read(path: String, query: OpaquePointer?, flags: UInt32) throws -> String {
        var node: OpaquePointer?
        var err = hearth_error_t()
        let status = hearth_db_get(db, path, query, &node, &err)
        guard status == 0, let node else {
            throw CommandFailure(description: Self.message(err, status))
        }
        defer { hearth_node_decref(node) }
        guard let text = hearth_node_to_json(node, flags, nil) else {
            throw CommandFailure(description: "out of memory")
        }
        defer { hearth_free(text) }
        return String(cString: text)
    }

    func importJSON(_ text: Data, path: String) throws {
        _ = try write(.set, path: path, json: text)
    }

    func write(_ kind: WriteKind, path: String, json text: Data) throws -> String? {
        var node: OpaquePointer?
        var err = hearth_error_t()
        let status = kind == .remove || kind == .update
            ? (hearth_node_from_json("null", -1, 0, &node, &err))
            : text.withUnsafeBytes { raw in
                hearth_node_from_json(
                    raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count,
                    UInt32(HEARTH_JSON_ALLOW_SERVER_VALUES), &node, &err)
            }
        guard status == 0, let node else {
            throw CommandFailure(description: Self.message(err, status))
        }
        defer { hearth_node_decref(node) }
        let done = DispatchSemaphore(value: 0)
        final class Box: @unchecked Sendable {  // written by the C loop, read after the wait
            var status: Int32 = 0
            let done: DispatchSemaphore
            init(_ done: DispatchSemaphore) { self.done = done }
        }
        let box = Box(done)
        let ctx = Unmanaged.passRetained(box).toOpaque()
        let completion: hearth_completion_cb = { status, ctx in
            let box = Unmanaged<Box>.fromOpaque(ctx!).takeUnretainedValue()
            box.status = status
            box.done.signal()
        }
        let release: hearth_free_cb = { ctx in Unmanaged<Box>.fromOpaque(ctx!).release() }
        var key = [CChar](repeating: 0, count: Int(HEARTH_PUSH_ID_SIZE))
        let rc: Int32
        switch kind {
        case .set, .remove:
            rc = hearth_db_set(db, path, node, completion, ctx, release, &err)
        case .push:
            rc = hearth_db_push(db, path, node, &key, completion, ctx, release, &err)
        case .update:
            rc = text.withUnsafeBytes { raw in
                hearth_db_update_json(
                    db, path, raw.baseAddress?.assumingMemoryBound(to: CChar.self), raw.count,
                    completion, ctx, release, &err)
            }
        }
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(ctx).release()
            throw CommandFailure(description: Self.message(err, rc))
        }
        done.wait()  // acknowledged: logged and synced
        if box.status != 0 {
            throw CommandFailure(description: String(cString: hearth_strerror(box.status)))
        }
        guard kind == .push else { return nil }
        return String(decoding: key.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// A running server, over its REST API.
struct ServerStore {
    let base: URL
    let namespace: String?
    /// The Bearer credential: a user's token, the admin secret or "owner".
    let credential: String

    init(url: String, credential: String) throws {
        self.credential = credential
        guard let parsed = URLComponents(string: url), let scheme = parsed.scheme,
            ["http", "https"].contains(scheme), parsed.host != nil
        else {
            throw CommandFailure(description: "invalid server URL \"\(url)\": use http://HOST:PORT/?ns=NAME")
        }
        var root = parsed
        root.path = ""
        root.queryItems = nil
        base = root.url!
        namespace = parsed.queryItems?.first { $0.name == "ns" }?.value
    }

    /// The REST URL of path with query parameters (and the namespace).
    func url(for path: String, query: [URLQueryItem]) -> URL {
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
        components.path = "/" + path.split(separator: "/").joined(separator: "/") + ".json"
        components.queryItems = query + (namespace.map { [URLQueryItem(name: "ns", value: $0)] } ?? [])
        return components.url!
    }

    private func request(_ method: String, path: String, query: [URLQueryItem], body: Data?) throws
        -> Data
    {
        var req = URLRequest(url: url(for: path, query: query))
        req.httpMethod = method
        req.httpBody = body
        req.setValue("Bearer \(credential)", forHTTPHeaderField: "Authorization")
        final class Result: @unchecked Sendable {  // set by the session's queue, read after the wait
            var data: Data?
            var status = 0
            var error: (any Error)?
        }
        let result = Result()
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: req) { data, response, error in
            result.data = data
            result.status = (response as? HTTPURLResponse)?.statusCode ?? 0
            result.error = error
            done.signal()
        }.resume()
        done.wait()
        if let error = result.error {
            throw CommandFailure(description: "\(base.absoluteString): \(error.localizedDescription)")
        }
        let data = result.data ?? Data()
        guard (200..<300).contains(result.status) else {
            let message = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["error"]
            throw CommandFailure(
                description: "server answered \(result.status): \(message ?? String(decoding: data, as: UTF8.self))")
        }
        return data
    }

    func export(path: String, pretty: Bool) throws -> String {
        var query = [URLQueryItem(name: "format", value: "export")]
        if pretty { query.append(URLQueryItem(name: "print", value: "pretty")) }
        return String(decoding: try request("GET", path: path, query: query, body: nil), as: UTF8.self)
    }

    func get(path: String, query: QueryOptions, pretty: Bool) throws -> String {
        var items = query.restItems
        if pretty { items.append(URLQueryItem(name: "print", value: "pretty")) }
        return String(decoding: try request("GET", path: path, query: items, body: nil), as: UTF8.self)
    }

    func importJSON(_ text: Data, path: String) throws {
        _ = try request("PUT", path: path, query: [URLQueryItem(name: "print", value: "silent")], body: text)
    }

    func rules() throws -> String {
        String(decoding: try request("GET", path: "/.settings/rules", query: [], body: nil),
               as: UTF8.self)
    }

    func setRules(_ text: Data) throws {
        _ = try request("PUT", path: "/.settings/rules", query: [], body: text)
    }

    func write(_ kind: WriteKind, path: String, json: Data) throws -> String? {
        switch kind {
        case .set: _ = try request("PUT", path: path, query: [], body: json)
        case .update: _ = try request("PATCH", path: path, query: [], body: json)
        case .remove: _ = try request("DELETE", path: path, query: [], body: nil)
        case .push:
            let reply = try request("POST", path: path, query: [], body: json)
            let object = try? JSONSerialization.jsonObject(with: reply) as? [String: Any]
            return object?["name"] as? String
        }
        return nil
    }
}
