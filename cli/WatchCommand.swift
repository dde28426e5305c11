import ArgumentParser
import Dispatch
import Foundation
@_spi(CLI) import Hearth

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `hearth watch`: follow a location on a server, as JSON Lines.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print every change at a location on a server, one JSON line each.",
        discussion: """
            With --events put (the default) each line is \
            {"event":"put"|"patch","path":P,"data":D}, flushed as it arrives: the first \
            puts the whole value at "/", later ones replace P (put) or each key under P \
            (patch), with P relative to the watched location, as the REST API's streaming \
            sends them. With --events child the watch is a realtime client and each line \
            is {"event":"child_added"|"child_changed"|"child_moved"|"child_removed",\
            "key":K,"prev":P,"data":D}, the children in the query's order (prev is the \
            key before, null for the first). Ctrl-C stops. A data directory belongs to \
            the one process that opened it, so watching needs a server (--url).

            Examples:
              hearth watch /rooms/lobby --url http://127.0.0.1:9000/
              hearth watch / --url http://127.0.0.1:9000/?ns=shop | jq .
              hearth watch /scores --events child --order-by score --limit-to-last 3 \\
                --url http://127.0.0.1:9000/
            """)

    enum Events: String, ExpressibleByArgument, CaseIterable {
        case put, child
    }

    @Argument(help: "The location to watch.")
    var path = "/"

    @Option(help: "put: the value's changes as the REST stream sends them; child: child events.")
    var events: Events = .put

    @OptionGroup var query: QueryOptions
    @OptionGroup var source: SourceOptions

    func validate() throws {
        if source.data != nil {
            throw ValidationError(
                "watch follows a server: give --url (a data directory is held by one process)")
        }
    }

    func run() throws {
        guard case .server(let server) = try openOrReport() else { return }
        if events == .child {
            try ChildWatch(server: server, path: path, query: query).run()
            return
        }
        let stop = DispatchSemaphore(value: 0)
        let stream = EventStream(onEnd: { stop.signal() })
        let task = stream.session.dataTask(with: server.streamRequest(path: path, query: query.restItems))
        task.resume()
        Interrupt.wait(orUntil: stop)  // Ctrl-C, or the server ended the stream
        task.cancel()
        if let failure = stream.failure {
            Output.error("\(Output.errorLabel)\(failure)")
            throw ExitCode.failure
        }
    }

    private func openOrReport() throws -> DataSource {
        do {
            return try source.open()
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
    }
}

/// Reads a server-sent event stream and prints its events as JSON Lines.
final class EventStream: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: the session calls the delegate on its own serial queue;
    // `failure` is read only after `onEnd`.
    private var pending = Data()
    private let onEnd: @Sendable () -> Void
    private(set) var failure: String?
    lazy var session: URLSession = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        return URLSession(configuration: .default, delegate: self, delegateQueue: queue)
    }()

    init(onEnd: @escaping @Sendable () -> Void) {
        self.onEnd = onEnd
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        if status != 200 {
            failure = "server answered \(status)"
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        pending.append(data)
        if failure != nil {
            failure! += ": " + String(decoding: pending, as: UTF8.self)
            pending.removeAll()
            return
        }
        // Events end with a blank line.
        let separator = Data("\n\n".utf8)
        while let end = pending.range(of: separator) {
            let block = String(decoding: pending[pending.startIndex..<end.lowerBound], as: UTF8.self)
            pending.removeSubrange(pending.startIndex..<end.upperBound)
            emit(block)
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error, (error as NSError).code != NSURLErrorCancelled {
            failure = error.localizedDescription
        }
        onEnd()
    }

    /// One event: `event: NAME` and `data: JSON` lines.
    private func emit(_ block: String) {
        var event = "", data = ""
        for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
            if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
        }
        switch event {
        case "put", "patch":
            // The server's {"path":..,"data":..} with the event name spliced
            // in, so numbers and key order stay exactly as sent.
            guard data.hasPrefix("{") else { return }
            Output.line("{\"event\":\"\(event)\"," + data.dropFirst())
        case "cancel", "auth_revoked":
            failure = "the server ended the stream (\(event))"
        default:
            break  // keep-alive
        }
    }
}

extension ServerStore {
    /// The streaming request for path.
    func streamRequest(path: String, query: [URLQueryItem]) -> URLRequest {
        var request = URLRequest(url: url(for: path, query: query))
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        request.setValue("Bearer \(credential)", forHTTPHeaderField: "Authorization")
        request.timeoutInterval = 365 * 24 * 3600  // keep-alives come every 30 s
        return request
    }
}

/// `watch --events child`: a realtime client of the server (a Hearth
/// `Database`) observing the location's child events.
struct ChildWatch {
    let server: ServerStore
    let path: String
    let query: QueryOptions

    func run() throws {
        let database: Database
        let watched: DatabaseQuery
        do {
            database = try .openForCommandLine(url: server.realtimeURL)
            database.setAuthToken(server.credential)
            watched = try query.applied(to: database.reference(checkingPath: path))
        } catch {
            Output.error("\(Output.errorLabel)\(error.message)")
            throw ExitCode.failure
        }
        // The four observers' blocks run one at a time on the database's
        // serial callback queue, in the order the events are raised.
        let ended = Locked<HearthError>()
        let canceled = DispatchSemaphore(value: 0)
        for (type, name) in ChildWatch.names {
            watched.observe(type, andPreviousSiblingKeyWith: { snapshot, prev in
                ChildWatch.print(name, snapshot, prev)
            }, withCancel: { error in
                ended.set(error as? HearthError ?? HearthError(code: .canceled))
                canceled.signal()
            })
        }
        Interrupt.wait(orUntil: canceled)  // until Ctrl-C, or the server ends it
        if let error = ended.value {
            Output.error("\(Output.errorLabel)the server ended the listen: \(error.message)")
            throw ExitCode.failure
        }
        withExtendedLifetime(database) {}
    }

    private static let names: [(DataEventType, String)] = [
        (.childAdded, "child_added"), (.childRemoved, "child_removed"),
        (.childChanged, "child_changed"), (.childMoved, "child_moved"),
    ]

    /// One JSON line per event; the data is the core's own JSON text, so
    /// numbers and key order stay as the server has them.
    private static func print(_ name: String, _ snapshot: DataSnapshot, _ prev: String?) {
        let prev = prev.map(jsonString) ?? "null"
        Output.line(
            "{\"event\":\"\(name)\",\"key\":\(jsonString(snapshot.key)),\"prev\":\(prev),\"data\":\(snapshot.jsonText())}")
    }

    private static func jsonString(_ s: String) -> String {
        let data = try? JSONSerialization.data(withJSONObject: [s], options: [.fragmentsAllowed])
        let array = data.map { String(decoding: $0, as: UTF8.self) } ?? "[\"\"]"
        return String(array.dropFirst().dropLast())
    }
}

/// A value written by one thread and read by another.
final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `stored` is only touched while `lock` is held.
    private let lock = NSLock()
    private var stored: Value?

    init() {}

    func set(_ value: Value) {
        lock.lock()
        defer { lock.unlock() }
        stored = value
    }

    var value: Value? {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}

extension ServerStore {
    /// The database URL a realtime client opens: the server and namespace.
    var realtimeURL: String {
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
        components.path = "/"
        components.queryItems = namespace.map { [URLQueryItem(name: "ns", value: $0)] }
        return components.string ?? base.absoluteString
    }
}
