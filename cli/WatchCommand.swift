import ArgumentParser
import CHearth
import Dispatch
import Foundation

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

/// `watch --events child`: a realtime client of the server observing the
/// location's child events through the C core.
struct ChildWatch {
    let server: ServerStore
    let path: String
    let query: QueryOptions

    func run() throws {
        let q = try EmbeddedStore.makeQuery(query)
        defer { if let q { hearth_query_free(q) } }
        var db: OpaquePointer?
        var err = hearth_error_t()
        let status = server.realtimeURL.withCString { url -> Int32 in
            var config = hearth_db_config_t()
            config.url = url
            return hearth_db_open(&config, &db, &err)
        }
        guard status == 0, let db else {
            Output.error("\(Output.errorLabel)\(EmbeddedStore.message(err, status))")
            throw ExitCode.failure
        }
        defer { hearth_db_close(db) }
        _ = hearth_db_set_auth_token(db, server.credential)
        let mask = UInt32(HEARTH_MASK_CHILD_ADDED | HEARTH_MASK_CHILD_REMOVED)
            | UInt32(HEARTH_MASK_CHILD_CHANGED | HEARTH_MASK_CHILD_MOVED)
        var handle: hearth_observer_t = 0
        let observed = hearth_db_observe(db, path, q, mask, ChildWatch.onEvent, nil, nil, &handle, &err)
        guard observed == 0 else {
            Output.error("\(Output.errorLabel)\(EmbeddedStore.message(err, observed))")
            throw ExitCode.failure
        }
        Interrupt.wait(orUntil: ChildWatch.canceled)  // until Ctrl-C, or the server ends it
        if ChildWatch.cancelStatus != 0 {
            let why = String(cString: hearth_strerror(ChildWatch.cancelStatus))
            Output.error("\(Output.errorLabel)the server ended the listen: \(why)")
            throw ExitCode.failure
        }
    }

    /// Signalled when the server refuses or revokes the listen.
    private static let canceled = DispatchSemaphore(value: 0)
    /// Why: written on the loop thread before `canceled` is signalled, read
    /// after the wait.
    nonisolated(unsafe) private static var cancelStatus: Int32 = 0

    /// One JSON line per event; the data is the core's own JSON text, so
    /// numbers and key order stay as the server has them.
    private static let onEvent: hearth_event_cb = { event, _ in
        guard let event = event?.pointee else { return }
        if event.type == HEARTH_EVENT_CANCEL {
            cancelStatus = event.status
            canceled.signal()
            return
        }
        let names = ["child_added", "child_removed", "child_changed", "child_moved", "value"]
        let name = names[Int(event.type.rawValue)]
        let key = event.key.map { String(cString: $0) } ?? ""
        let prev = event.prev_key.map { jsonString(String(cString: $0)) } ?? "null"
        guard let text = hearth_node_to_json(event.node, 0, nil) else { return }
        defer { hearth_free(text) }
        Output.line(
            "{\"event\":\"\(name)\",\"key\":\(jsonString(key)),\"prev\":\(prev),\"data\":\(String(cString: text))}")
    }

    private static func jsonString(_ s: String) -> String {
        let data = try? JSONSerialization.data(withJSONObject: [s], options: [.fragmentsAllowed])
        let array = data.map { String(decoding: $0, as: UTF8.self) } ?? "[\"\"]"
        return String(array.dropFirst().dropLast())
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
