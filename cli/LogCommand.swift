import ArgumentParser
import Foundation
@_spi(CLI) import Hearth

/// `hearth log`: a namespace's retained changes, as JSON lines, to find
/// the moment `hearth backup --at` goes back to.
struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "List a namespace's logged changes as JSON lines (time, sequence, path, identity, bytes).",
        discussion: """
            Reads the namespace's snapshots and logs (never changes them; a server \
            may be running on them) and prints one line per part of each write, in \
            log order: {"time": "2026-11-27T10:03:00.123Z", "sequence": 42, "path": \
            "/users", "identity": "uid:ada", "bytes": 512}. identity is "admin" ("admin:no-triggers": an import or restore with --no-triggers), \
            "anonymous" or "uid:" and the user's uid (never a token); bytes is the \
            size of the value written, as JSON (4 for a delete: null). What reaches \
            back further than the last snapshot is kept only with hearth serve \
            --retain. --path keeps the changes at, above or below a path.

            With --url the server lists them (GET /.log, the admin's): a single \
            server from its data directory, a cluster node from the cluster's log \
            in JetStream (sequence is then the record's in the stream). A cluster \
            node's --data directory is that node's copy, not the cluster's history: \
            it is refused; ask a node with --url.

            Examples:
              hearth log --data ./hearth-data --namespace shop --path /users
              hearth log --data ./hearth-data --since 2026-11-27T10:00:00Z --until 2026-11-27T10:05:00Z
              hearth log --url 'http://127.0.0.1:9000/?ns=shop' --path /users
            """)

    @OptionGroup var source: SourceOptions

    @Option(help: "Only changes at, above or below this path.")
    var path: String?

    @Option(help: "Only changes made at or after this time (ISO 8601, such as 2026-11-27T10:03:00Z, or Unix ms).")
    var since: PointInTime?

    @Option(help: "Only changes made at or before this time.")
    var until: PointInTime?

    func run() throws {
        do {
            guard let data = source.data else {
                var query: [URLQueryItem] = []
                if let path { query.append(URLQueryItem(name: "path", value: PointInTime.normalizedPath(path))) }
                if let since { query.append(URLQueryItem(name: "since", value: String(since.milliseconds))) }
                if let until { query.append(URLQueryItem(name: "until", value: String(until.milliseconds))) }
                Output.result(try source.server().endpoint("/.log", query: query))
                return
            }
            let dir = try PointInTime.historyDirectory(data: data, namespace: source.namespace)
            try failing { () throws(HearthError) in
                try Database.changes(
                    dataDirectory: dir, path: path.map(PointInTime.normalizedPath),
                    since: since?.milliseconds ?? 0, until: until?.milliseconds ?? 0
                ) { change in
                    let time = change.timeMilliseconds == 0
                        ? "null" : PointInTime.jsonString(PointInTime.iso(change.timeMilliseconds))
                    let identity = change.identity.map(PointInTime.jsonString) ?? "null"
                    Output.line(
                        "{\"time\":\(time),\"sequence\":\(change.sequence),\"path\":"
                            + "\(PointInTime.jsonString(change.path)),\"identity\":\(identity),"
                            + "\"bytes\":\(change.bytes)}")
                }
            }
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
    }
}

/// A moment given on the command line: ISO 8601 (UTC "Z" or an offset,
/// optionally with fractions of a second) or Unix milliseconds.
struct PointInTime: ExpressibleByArgument {
    let milliseconds: Int64

    init?(argument: String) {
        if let ms = Int64(argument), ms > 0 {
            milliseconds = ms
            return
        }
        let plain = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = plain.date(from: argument) ?? fractional.date(from: argument) else {
            return nil
        }
        milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    static var defaultCompletionKind: CompletionKind { .default }

    /// "2026-11-27T10:03:00.123Z".
    static func iso(_ ms: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    /// s as a JSON string.
    static func jsonString(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// The namespace's directory within data, whose history a command
    /// reads; a cluster node's (it holds cluster.seq) is refused: its files
    /// are that node's copy, not the cluster's history.
    static func historyDirectory(data: String, namespace: String) throws -> String {
        let dir = data + "/" + namespace
        if FileManager.default.fileExists(atPath: dir + "/cluster.seq") {
            throw CommandFailure(
                description: "\(dir) is a cluster node's copy of the namespace, not the cluster's history: "
                    + "ask a node instead, with --url http://NODE:PORT/?ns=\(namespace)")
        }
        return dir
    }

    /// "/users/" and "users" as "/users"; "" as "/".
    static func normalizedPath(_ path: String) -> String {
        "/" + path.split(separator: "/").joined(separator: "/")
    }
}

/// A window of time: a number and a unit, s, m, h or d ("7d"); "0": none.
struct RetainWindow: ExpressibleByArgument {
    let seconds: TimeInterval
    let text: String

    init?(argument: String) {
        text = argument
        if argument == "0" {
            seconds = 0
            return
        }
        let units: [Character: TimeInterval] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        guard let unit = argument.last.flatMap({ units[$0] }),
            let count = Double(argument.dropLast()), count > 0, count.isFinite
        else { return nil }
        seconds = count * unit
    }
}
