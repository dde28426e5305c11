import ArgumentParser
import Foundation
@_spi(CLI) import Hearth

/// `hearth backup`: a consistent copy of a namespace while its server
/// goes on writing.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a namespace, consistent as of one commit, while writes go on.",
        discussion: """
            With --url the server writes the copy from one immutable root of its \
            tree (GET /.backup, the admin's), off its event loop; with --data the \
            namespace's files are read, never changed, even while a server holds \
            them. The copy is export-format JSON (priorities kept), written to \
            OUT.tmp, synced, then renamed: OUT is whole or absent. hearth restore \
            puts it back.

            --at TIME (ISO 8601, or Unix ms) or --at-seq N writes the namespace as it \
            was after the last write made at or before TIME (or numbered at most N), \
            rebuilt from the snapshots and logs the namespace keeps (hearth serve \
            --retain 7d keeps a week; hearth log lists the moments). On a cluster, \
            use --url: any node rebuilds it from the cluster's log in JetStream.

            Examples:
              hearth backup --url http://127.0.0.1:9000/?ns=shop shop.json
              hearth backup --data /var/lib/hearth --namespace shop shop.json
              hearth backup --at 2026-11-27T10:03:00Z --data /var/lib/hearth --namespace shop shop.json
              hearth backup --at-seq 4182 --url http://127.0.0.1:9000/?ns=shop shop.json
            """)

    @Argument(help: "The file to write.")
    var out: String

    @Option(help: "The moment to copy: ISO 8601 (2026-11-27T10:03:00Z) or Unix ms.")
    var at: PointInTime?

    @Option(name: .customLong("at-seq"), help: "The write sequence to copy up to (hearth log shows them).")
    var atSeq: UInt64?

    @OptionGroup var source: SourceOptions

    func validate() throws {
        if atSeq == 0 {
            throw ValidationError("--at-seq counts from 1")
        }
    }

    func run() throws {
        do {
            let pointInTime = at != nil || atSeq != nil
            if let data = source.data, pointInTime {
                let dir = try PointInTime.historyDirectory(data: data, namespace: source.namespace)
                try failing { () throws(HearthError) in
                    try Database.backup(
                        dataDirectory: dir, to: out,
                        atMilliseconds: at?.milliseconds ?? 0, atSequence: atSeq ?? 0)
                }
            } else if let data = source.data {
                try failing { () throws(HearthError) in
                    try Database.backup(dataDirectory: data + "/" + source.namespace, to: out)
                }
            } else {
                var query: [URLQueryItem] = []
                if let at { query.append(URLQueryItem(name: "at", value: String(at.milliseconds))) }
                if let atSeq { query.append(URLQueryItem(name: "seq", value: String(atSeq))) }
                try Self.writeWhole(try source.server().endpoint("/.backup", query: query), to: out)
            }
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
    }

    /// Writes data to path through path.tmp, synced, then renamed.
    static func writeWhole(_ data: Data, to path: String) throws {
        let tmp = path + ".tmp"
        guard FileManager.default.createFile(atPath: tmp, contents: nil),
            let handle = FileHandle(forWritingAtPath: tmp)
        else {
            throw CommandFailure(description: "cannot write \(tmp)")
        }
        do {
            try handle.write(contentsOf: data)
            try handle.synchronize()
            try handle.close()
            if rename(tmp, path) != 0 {
                throw CommandFailure(description: "cannot rename \(tmp) to \(path)")
            }
        } catch {
            try? FileManager.default.removeItem(atPath: tmp)
            throw error
        }
    }
}

/// `hearth restore`: a backup put back.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put a backup back: into a fresh data directory, or a running server.",
        discussion: """
            With --data the namespace's directory must not hold data yet (--force \
            replaces what it holds); serve it afterwards with hearth serve --data. \
            With --url the backup replaces the namespace's root on the running \
            server (as the admin). The file is checked first: one that is not valid \
            changes nothing.

            --path P puts back only the subtree at P: the file's data there replaces \
            what the namespace holds there now (nothing there in the file: removed), \
            in one write, atomic: a restore killed before it is sent changes nothing, \
            and the server applies it whole or not at all. Elsewhere nothing changes.

            Examples:
              hearth restore --data ./restored --namespace shop shop.json
              hearth restore --url http://127.0.0.1:9000/?ns=shop shop.json
              hearth restore --path /users shop-1003.json --url http://127.0.0.1:9000/?ns=shop
            """)

    @Argument(help: "The backup file.")
    var file: String

    @Flag(help: "With --data: replace the data the namespace already holds.")
    var force = false

    @Option(help: "Put back only the subtree at this path (one atomic write).")
    var path: String?

    @Flag(help: "With --url: the server fires no database triggers for the restore (the admin's; triggers=off). A data directory fires none in any case.")
    var noTriggers = false

    @OptionGroup var source: SourceOptions

    func run() throws {
        guard let text = FileManager.default.contents(atPath: file) else {
            Output.error("\(Output.errorLabel)cannot read \(file)")
            throw ExitCode.failure
        }
        if let data = source.data {
            try? FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        }
        if let path {
            do {
                let subtree = try failing { () throws(HearthError) in
                    try Database.subtreeJSON(text, at: PointInTime.normalizedPath(path))
                }
                try source.open().importJSON(subtree, path: PointInTime.normalizedPath(path),
                                             triggers: !noTriggers)
            } catch {
                Output.error("\(Output.errorLabel)\(error)")
                throw ExitCode.failure
            }
            return
        }
        if let data = source.data, !force {
            let dir = data + "/" + source.namespace
            let held = (try? FileManager.default.contentsOfDirectory(atPath: dir))?
                .contains { $0.hasPrefix("log.") || $0.hasPrefix("snapshot.") } ?? false
            if held {
                Output.error("\(Output.errorLabel)\(dir) already holds data: restore into a fresh directory, or give --force")
                throw ExitCode.failure
            }
        }
        do {
            try source.open().importJSON(text, path: "/", triggers: !noTriggers)
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
    }
}
