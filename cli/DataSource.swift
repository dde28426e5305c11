import ArgumentParser
import Foundation
@_spi(CLI) import Hearth

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
    /// triggers false: the server fires no database triggers for it (a
    /// data directory has none: triggers are a server's).
    func importJSON(_ text: Data, path: String, triggers: Bool = true) throws {
        switch self {
        case .directory(let s): try s.importJSON(text, path: path)
        case .server(let s): try s.importJSON(text, path: path, triggers: triggers)
        }
    }
}

struct CommandFailure: Error, CustomStringConvertible {
    let description: String
}

/// A data directory opened in this process, through the Hearth module.
final class EmbeddedStore {
    private let database: Database

    init(directory: String) throws {
        do {
            database = try .openForCommandLine(url: URL(fileURLWithPath: directory).absoluteString)
        } catch {
            var text = error.message
            if text.contains("in use") {
                text += " (is a server running on it? use --url)"
            }
            throw CommandFailure(description: text)
        }
    }

    func get(path: String, query: QueryOptions, pretty: Bool) throws -> String {
        try failing { () throws(HearthError) in try query.applied(to: database.reference(checkingPath: path)).jsonText(export: false, pretty: pretty) }
    }

    func export(path: String, pretty: Bool) throws -> String {
        try failing { () throws(HearthError) in try database.reference(checkingPath: path).jsonText(export: true, pretty: pretty) }
    }

    func importJSON(_ text: Data, path: String) throws {
        _ = try write(.set, path: path, json: text)
    }

    /// Makes a write and waits until it is logged and synced.
    func write(_ kind: WriteKind, path: String, json text: Data) throws -> String? {
        try failing { () throws(HearthError) in
            let ref = try database.reference(checkingPath: path)
            switch kind {
            case .set: try ref.setJSON(text)
            case .remove: try ref.setJSON(Data("null".utf8))
            case .update: try ref.updateJSON(text)
            case .push: return try ref.pushJSON(text)
            }
            return nil
        }
    }
}

extension QueryOptions {
    /// `ref` with these flags (the core's message when they do not fit).
    func applied(to ref: DatabaseReference) throws(HearthError) -> DatabaseQuery {
        try ref.restQuery(
            orderBy: orderBy, startAt: startAt, endAt: endAt, equalTo: equalTo,
            limitToFirst: limitToFirst, limitToLast: limitToLast)
    }
}

/// Runs `body`, turning a `HearthError` into the command's failure with
/// the core's message.
func failing<Value>(_ body: () throws(HearthError) -> Value) throws -> Value {
    do {
        return try body()
    } catch {
        throw CommandFailure(description: error.message)
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
        try request(method, url: url(for: path, query: query), body: body)
    }

    /// An admin endpoint of the namespace (such as /.backup): no ".json".
    func endpoint(_ path: String, query: [URLQueryItem] = []) throws -> Data {
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
        components.path = path
        components.queryItems = query + (namespace.map { [URLQueryItem(name: "ns", value: $0)] } ?? [])
        return try request("GET", url: components.url!, body: nil)
    }

    private func request(_ method: String, url: URL, body: Data?) throws -> Data {
        var req = URLRequest(url: url)
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

    func importJSON(_ text: Data, path: String, triggers: Bool = true) throws {
        var query = [URLQueryItem(name: "print", value: "silent")]
        if !triggers { query.append(URLQueryItem(name: "triggers", value: "off")) }
        _ = try request("PUT", path: path, query: query, body: text)
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
