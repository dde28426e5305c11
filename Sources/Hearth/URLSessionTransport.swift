internal import CHearth
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client's WebSocket on `URLSessionWebSocketTask` (the C core's
/// `hearth_transport_t`), so that TLS, trust (the Keychain's roots
/// included), proxies and cellular are the system's. The default on macOS
/// and iOS, where the C core has no TLS of its own.
///
/// On Linux it compiles (corelibs Foundation has the type) but is not
/// used: its WebSocket runs on libcurl, whose Debian build has no WebSocket
/// support, so the built-in transport (libuv, OpenSSL, wslay) stays.
///
/// Every URLSession callback runs on one serial queue, so each
/// connection's reports to the core (opened, messages in order, closed
/// once and last) are never concurrent.
final class URLSessionTransport: NSObject, URLSessionWebSocketDelegate, @unchecked Sendable {
    // @unchecked Sendable: `connections` and `nextID` are only touched
    // under `lock`.

    /// Whether new databases use it (Apple platforms).
    static var isDefault: Bool {
        #if canImport(Darwin)
            true
        #else
            false
        #endif
    }

    static let shared = URLSessionTransport()

    private final class Connection {
        let ws: OpaquePointer
        let task: URLSessionWebSocketTask
        init(ws: OpaquePointer, task: URLSessionWebSocketTask) {
            self.ws = ws
            self.task = task
        }
    }

    private let lock = NSLock()
    private var connections: [Int: Connection] = [:]
    private var nextID = 1
    private let queue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "hearth.urlsession-transport"
        return queue
    }()
    private var session: URLSession!

    private override init() {
        super.init()
        session = URLSession(configuration: .default, delegate: self, delegateQueue: queue)
    }

    /// The C transport: its user pointer is `shared` (never freed), and a
    /// connection's handle is its id.
    var cTransport: hearth_transport_t {
        hearth_transport_t(
            user: Unmanaged.passUnretained(self).toOpaque(),
            open: { user, url, ws in
                let me = Unmanaged<URLSessionTransport>.fromOpaque(user!).takeUnretainedValue()
                guard let target = URL(string: String(cString: url)) else { return nil }
                return UnsafeMutableRawPointer(bitPattern: me.open(target, ws))
            },
            send: { user, conn, text, len in
                let me = Unmanaged<URLSessionTransport>.fromOpaque(user!).takeUnretainedValue()
                let message = String(
                    decoding: UnsafeRawBufferPointer(start: text, count: len), as: UTF8.self)
                return me.send(Int(bitPattern: conn), message) ? 0 : -1
            },
            close: { user, conn in
                let me = Unmanaged<URLSessionTransport>.fromOpaque(user!).takeUnretainedValue()
                me.close(Int(bitPattern: conn))
            })
    }

    private static let failed = Int32(HEARTH_EIO.rawValue)

    private func connection(_ id: Int) -> Connection? {
        lock.withLock { connections[id] }
    }

    private func id(of task: URLSessionTask) -> Int? {
        lock.withLock { connections.first { $0.value.task === task }?.key }
    }

    private func open(_ url: URL, _ ws: OpaquePointer) -> Int {
        let task = session.webSocketTask(with: url)
        // The server's messages come in v5 pieces of 16 KB; a whole
        // message over the default 1 MB would end the connection.
        task.maximumMessageSize = 16 << 20
        let id = lock.withLock {
            let id = nextID
            nextID += 1
            connections[id] = Connection(ws: ws, task: task)
            return id
        }
        receive(id, task)
        task.resume()
        return id
    }

    private func send(_ id: Int, _ text: String) -> Bool {
        guard let c = connection(id) else { return false }
        c.task.send(.string(text)) { [weak self] error in
            if let error { self?.finish(id, Self.failed, "send failed: \(error.localizedDescription)") }
        }
        return true
    }

    private func close(_ id: Int) {
        guard let c = connection(id) else { return }  // already reported closed
        c.task.cancel(with: .normalClosure, reason: nil)
        // didCompleteWithError or the pending receive's failure reports it.
    }

    private func receive(_ id: Int, _ task: URLSessionWebSocketTask) {
        task.receive { [weak self] result in
            guard let self, let c = self.connection(id) else { return }
            switch result {
            case .success(.string(let text)):
                text.withCString { hearth_ws_message(c.ws, $0, text.utf8.count) }
                self.receive(id, task)
            case .success:  // binary: the realtime protocol sends none
                self.receive(id, task)
            case .failure(let error):
                self.finish(id, Self.failed, error.localizedDescription)
            }
        }
    }

    /// Reports the end once: the connection is forgotten first, so nothing
    /// reaches the core after it.
    private func finish(_ id: Int, _ status: Int32, _ reason: String) {
        guard let c = lock.withLock({ connections.removeValue(forKey: id) }) else { return }
        c.task.cancel()
        reason.withCString { hearth_ws_closed(c.ws, status, $0) }
    }

    // MARK: URLSessionWebSocketDelegate (on `queue`)

    func urlSession(
        _ session: URLSession, webSocketTask: URLSessionWebSocketTask,
        didOpenWithProtocol protocol: String?
    ) {
        if let id = id(of: webSocketTask), let c = connection(id) { hearth_ws_opened(c.ws) }
    }

    func urlSession(
        _ session: URLSession, webSocketTask: URLSessionWebSocketTask,
        didCloseWith closeCode: URLSessionWebSocketTask.CloseCode, reason: Data?
    ) {
        guard let id = id(of: webSocketTask) else { return }
        let clean = closeCode == .normalClosure || closeCode == .goingAway
        finish(id, clean ? 0 : Self.failed, "closed by the server (\(closeCode.rawValue))")
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        guard let id = id(of: task) else { return }
        finish(id, error == nil ? 0 : Self.failed, error?.localizedDescription ?? "closed")
    }
}
