import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `hearth profile`: what a running server spends its time and bytes on,
/// as `firebase database:profile` reports it.
struct ProfileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile",
        abstract: "Profile a running server: speed, bandwidth and unindexed queries.",
        discussion: """
            Listens to the server's operations stream (GET /.profile, the admin's) \
            for --duration, then prints three reports: speed (operation type and \
            path pattern: count, average and p99 milliseconds), bandwidth (bytes by \
            path pattern) and unindexed queries. --raw prints the stream as JSON \
            lines instead, as they come. As the service's profiler does, similar \
            sibling paths are collapsed: where the paths of a report share a \
            prefix followed by 25 or more different keys, that key becomes \
            $wildcard (level by level, below the first key); --no-collapse keeps \
            every path.

            Examples:
              hearth profile --url http://127.0.0.1:9000 --duration 30s
              hearth profile --url https://db.example.com --token "$ADMIN" --raw
            """)

    @Option(help: "The server (http://HOST:PORT or https://...).")
    var url: String

    @Option(help: "How long to listen: 30s, 2m, 500ms (default 30s).")
    var duration = "30s"

    @Flag(help: "Print the operations as JSON lines instead of the reports.")
    var raw = false

    @Flag(inversion: .prefixedNo, help: "Collapse similar sibling paths into $wildcard (25 or more keys under one prefix), as the service does.")
    var collapse = true

    @Option(help: "The admin credential (default: $HEARTH_AUTH_TOKEN, else \"owner\").")
    var token: String?

    func validate() throws {
        guard Self.seconds(duration) != nil else {
            throw ValidationError("--duration must be like 30s, 2m or 500ms")
        }
    }

    static func seconds(_ text: String) -> Double? {
        for (suffix, scale) in [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
        where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * scale }.flatMap { $0 > 0 ? $0 : nil }
        }
        return Double(text).flatMap { $0 > 0 ? $0 : nil }
    }

    func run() throws {
        guard var components = URLComponents(string: url), components.host != nil else {
            throw CommandFailure(description: "invalid server URL \"\(url)\"")
        }
        components.path = "/.profile"
        var request = URLRequest(url: components.url!)
        let credential = token ?? ProcessInfo.processInfo.environment["HEARTH_AUTH_TOKEN"] ?? "owner"
        request.setValue("Bearer \(credential)", forHTTPHeaderField: "Authorization")
        let collector = ProfileCollector(raw: raw)
        let session = URLSession(configuration: .default, delegate: collector, delegateQueue: nil)
        let task = session.dataTask(with: request)
        task.resume()
        _ = collector.finished.wait(timeout: .now() + Self.seconds(duration)!)
        task.cancel()
        session.invalidateAndCancel()
        if let failure = collector.failure {
            throw CommandFailure(description: failure)
        }
        if !raw {
            Output.line(ProfileReport(ops: collector.operations, collapse: collapse).text)
        }
    }
}

/// One operation of the stream.
struct ProfiledOperation: Decodable {
    let type: String
    let path: String
    let ms: Double
    let bytes_in: Int
    let bytes_out: Int
    let unindexed: Bool
}

/// Reads the stream line by line (URLSession's delegate queue).
final class ProfileCollector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: every field is touched under `lock`.
    private let lock = NSLock()
    private var pending = Data()
    private var ops: [ProfiledOperation] = []
    private var error: String?
    let raw: Bool
    let finished = DispatchSemaphore(value: 0)

    init(raw: Bool) { self.raw = raw }

    var operations: [ProfiledOperation] { lock.withLock { ops } }
    var failure: String? { lock.withLock { error } }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        if let http = response as? HTTPURLResponse, http.statusCode != 200 {
            lock.withLock { error = "the server refused the profile (HTTP \(http.statusCode)): the admin credential is needed" }
            finished.signal()
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock {
            pending.append(data)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[pending.startIndex..<newline]
                pending.removeSubrange(pending.startIndex...newline)
                if raw {
                    Output.result(line + Data("\n".utf8))
                } else if let op = try? JSONDecoder().decode(ProfiledOperation.self, from: line) {
                    ops.append(op)
                }
            }
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        if let error, (error as? URLError)?.code != .cancelled {
            lock.withLock { self.error = self.error ?? "the profile stream failed: \(error.localizedDescription)" }
        }
        finished.signal()
    }
}

/// The three reports of `hearth profile`.
struct ProfileReport {
    let ops: [ProfiledOperation]
    var collapse = true

    /// Sibling keys under one prefix from which they collapse (the
    /// service's profiler: firebase-tools' COLLAPSE_THRESHOLD).
    static let collapseThreshold = 25

    /// Each of paths as its report shows it: level by level from the
    /// second key, where the paths (as collapsed so far) that share the
    /// keys before it have collapseThreshold or more different keys there,
    /// that key is "$wildcard". Without collapse, each path as it is.
    static func patterns(_ paths: Set<String>, collapse: Bool) -> [String: String] {
        var segments = Dictionary(uniqueKeysWithValues: paths.map {
            ($0, $0.split(separator: "/").map(String.init))
        })
        var level = 1
        while collapse, segments.values.contains(where: { $0.count > level }) {
            var siblings: [[String]: Set<String>] = [:]
            for keys in segments.values where keys.count > level {
                siblings[Array(keys[..<level]), default: []].insert(keys[level])
            }
            for (path, keys) in segments where keys.count > level
                && siblings[Array(keys[..<level])]!.count >= collapseThreshold {
                segments[path]![level] = "$wildcard"
            }
            level += 1
        }
        return segments.mapValues { "/" + $0.joined(separator: "/") }
    }

    /// ops grouped by type (when byType) and path pattern.
    private func grouped(_ ops: [ProfiledOperation], byType: Bool) -> [String: [ProfiledOperation]] {
        var out: [String: [ProfiledOperation]] = [:]
        let types = byType ? Dictionary(grouping: ops, by: \.type) : ["": ops]
        for (type, group) in types {
            let pattern = Self.patterns(Set(group.map(\.path)), collapse: collapse)
            for op in group {
                out[(byType ? type + " " : "") + pattern[op.path]!, default: []].append(op)
            }
        }
        return out
    }

    static func p99(_ sorted: [Double]) -> Double {
        sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
    }

    var text: String {
        var lines = ["Speed report (\(ops.count) operations)",
                     pad(["operation", "path", "count", "avg ms", "p99 ms"], [10, 32, 8, 10, 10])]
        let bySpeed = grouped(ops, byType: true)
        for (key, group) in bySpeed.sorted(by: { $0.value.count > $1.value.count }) {
            let times = group.map(\.ms).sorted()
            let parts = key.split(separator: " ", maxSplits: 1).map(String.init)
            lines.append(pad([parts[0], parts.count > 1 ? parts[1] : "", "\(group.count)",
                              String(format: "%.3f", times.reduce(0, +) / Double(times.count)),
                              String(format: "%.3f", Self.p99(times))], [10, 32, 8, 10, 10]))
        }
        lines += ["", "Bandwidth report", pad(["path", "bytes in", "bytes out"], [32, 12, 12])]
        let byPath = grouped(ops, byType: false)
        for (path, group) in byPath.sorted(by: {
            $0.value.reduce(0) { $0 + $1.bytes_in + $1.bytes_out } > $1.value.reduce(0) { $0 + $1.bytes_in + $1.bytes_out }
        }) {
            lines.append(pad([path, "\(group.reduce(0) { $0 + $1.bytes_in })",
                              "\(group.reduce(0) { $0 + $1.bytes_out })"], [32, 12, 12]))
        }
        lines += ["", "Unindexed queries", pad(["operation", "path", "count"], [10, 32, 8])]
        let unindexed = grouped(ops.filter(\.unindexed), byType: true)
        if unindexed.isEmpty { lines.append("(none)") }
        for (key, group) in unindexed.sorted(by: { $0.value.count > $1.value.count }) {
            let parts = key.split(separator: " ", maxSplits: 1).map(String.init)
            lines.append(pad([parts[0], parts.count > 1 ? parts[1] : "", "\(group.count)"], [10, 32, 8]))
        }
        return lines.joined(separator: "\n")
    }

    /// Cells left-aligned in columns of the given widths.
    private func pad(_ cells: [String], _ widths: [Int]) -> String {
        zip(cells, widths).map { cell, width in
            cell.count >= width ? cell + " " : cell + String(repeating: " ", count: width - cell.count)
        }.joined().trimmingCharacters(in: .whitespaces)
    }
}
