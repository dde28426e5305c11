import ArgumentParser
import Foundation
@_spi(CLI) import Hearth

/// `hearth repair --data DIR`: cuts a damaged log explicitly, keeping a copy.
struct RepairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "repair",
        abstract: "Cut a damaged log of a data directory at its first bad record, keeping a copy.",
        discussion: """
            A namespace whose log is damaged refuses to open, naming the file and \
            offset: Hearth never guesses past lost data. This command makes the \
            choice explicit: it copies the damaged log aside (log.N.damaged-TIME, \
            beside it), cuts it at the commit holding the first bad record, moves \
            every later log aside the same way, and prints what was cut. Writes \
            before the damage stay. Stop the server first (the directory must not \
            be in use). Nothing changes when no log is damaged.

            Examples:
              hearth repair --data ./hearth-data                 # namespace "default"
              hearth repair --data ./hearth-data --namespace demo
              hearth repair --data ./hearth-data --format json
            """)

    @Option(help: "The server's data directory (one subdirectory per namespace).")
    var data: String

    @Option(help: "The namespace within --data.")
    var namespace = "default"

    @OptionGroup var output: FormatOptions

    func run() throws {
        let directory = data + "/" + namespace
        let report = try failing { () throws(HearthError) in try LogRepair(directory: directory) }
        let result = RepairResult(
            repaired: report.repaired, directory: directory,
            log: report.repaired ? "\(directory)/log.\(report.logGeneration)" : nil,
            damageOffset: report.repaired ? report.damageOffset : nil,
            cutOffset: report.repaired ? report.cutOffset : nil,
            bytesCut: report.bytesCut, recordsCut: report.recordsCut,
            logsMovedAside: report.logsMovedAside, copy: report.repaired ? report.copy : nil)
        switch output.format {
        case .json: Output.json(result)
        case .text: Output.line(result.text)
        }
    }
}

/// What `hearth repair --format json` prints.
struct RepairResult: Encodable {
    let repaired: Bool
    let directory: String
    let log: String?
    let damageOffset: UInt64?
    let cutOffset: UInt64?
    let bytesCut: UInt64
    let recordsCut: UInt64
    let logsMovedAside: UInt64
    let copy: String?

    var text: String {
        guard repaired, let log, let damageOffset, let cutOffset, let copy else {
            return "\(directory): no damaged log; nothing changed"
        }
        var lines = [
            "\(log): damaged at offset \(damageOffset); cut at offset \(cutOffset)",
            "lost: \(bytesCut) bytes, holding the damaged record and \(recordsCut) intact "
                + "record\(recordsCut == 1 ? "" : "s") (writes) after it",
            "the damaged log as it was: \(copy)",
        ]
        if logsMovedAside > 0 {
            lines.append(
                "\(logsMovedAside) later log\(logsMovedAside == 1 ? "" : "s") moved aside "
                    + "(log.N.damaged-\(copy.split(separator: "-").last ?? ""))")
        }
        return lines.joined(separator: "\n")
    }
}
