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

    func open() throws -> DataSource {
        if let data { return try .directory(EmbeddedStore(directory: data + "/" + namespace)) }
        return .server(try ServerStore(url: serverURL!))
    }
}

enum DataSource {
    case directory(EmbeddedStore)
    case server(ServerStore)

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

    func export(path: String, pretty: Bool) throws -> String {
        var node: OpaquePointer?
        var err = hearth_error_t()
        let status = hearth_db_get(db, path, nil, &node, &err)
        guard status == 0, let node else {
            throw CommandFailure(description: Self.message(err, status))
        }
        defer { hearth_node_decref(node) }
        let flags = UInt32(HEARTH_JSON_EXPORT) | (pretty ? UInt32(HEARTH_JSON_PRETTY) : 0)
        guard let text = hearth_node_to_json(node, flags, nil) else {
            throw CommandFailure(description: "out of memory")
        }
        defer { hearth_free(text) }
        return String(cString: text)
    }

    func importJSON(_ text: Data, path: String) throws {
        var node: OpaquePointer?
        var err = hearth_error_t()
        let status = text.withUnsafeBytes { raw in
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
        let rc = hearth_db_set(
            db, path, node,
            { status, ctx in
                let box = Unmanaged<Box>.fromOpaque(ctx!).takeUnretainedValue()
                box.status = status
                box.done.signal()
            }, ctx, { ctx in Unmanaged<Box>.fromOpaque(ctx!).release() }, &err)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(ctx).release()
            throw CommandFailure(description: Self.message(err, rc))
        }
        done.wait()  // acknowledged: logged and synced
        if box.status != 0 {
            throw CommandFailure(description: String(cString: hearth_strerror(box.status)))
        }
    }
}

/// A running server, over its REST API.
struct ServerStore {
    let base: URL
    let namespace: String?

    init(url: String) throws {
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

    private func request(_ method: String, path: String, query: [URLQueryItem], body: Data?) throws
        -> Data
    {
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
        let trimmed = path.split(separator: "/").joined(separator: "/")
        components.path = "/" + trimmed + (trimmed.isEmpty ? "" : "") + ".json"
        components.queryItems = query + (namespace.map { [URLQueryItem(name: "ns", value: $0)] } ?? [])
        var req = URLRequest(url: components.url!)
        req.httpMethod = method
        req.httpBody = body
        req.setValue("Bearer owner", forHTTPHeaderField: "Authorization")
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

    func importJSON(_ text: Data, path: String) throws {
        _ = try request("PUT", path: path, query: [URLQueryItem(name: "print", value: "silent")], body: text)
    }
}
