import ArgumentParser
@_spi(CLI) import Hearth
import Foundation

/// `hearth rules get|set`: a namespace's rules document.
struct RulesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Read or replace a namespace's rules document.",
        discussion: """
            The document is {"rules": {...}} (JSON with comments allowed). The server \
            enforces its ".read", ".write" and ".validate" rules on every request \
            (the admin excepted) and uses ".indexOn" for child queries. A document \
            that does not compile is refused, naming the rule and column, and the \
            rules in force stay. The admin sees how often each rule was evaluated \
            and with what result at GET /.inspect/coverage.json?ns=NAME.

            Examples:
              hearth rules get --url http://127.0.0.1:9000/?ns=shop
              hearth rules set database.rules.json --url http://127.0.0.1:9000/
              hearth rules set rules.json --data ./hearth-data --namespace shop
            """,
        subcommands: [RulesGet.self, RulesSet.self])
}

struct RulesGet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Print the rules document.")

    @OptionGroup var source: SourceOptions

    func run() throws {
        do {
            if let data = source.data {
                let file = URL(fileURLWithPath: "\(data)/\(source.namespace)/rules.json")
                let text = (try? String(contentsOf: file, encoding: .utf8))
                    ?? #"{"rules": {".read": true, ".write": true}}"#
                Output.line(text.trimmingCharacters(in: .whitespacesAndNewlines))
            } else {
                let server = try source.server()
                Output.line(try server.rules())
            }
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
    }
}

struct RulesSet: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Replace the rules document with a file's.")

    @Argument(help: "The rules file (- for standard input).")
    var file: String

    @OptionGroup var source: SourceOptions

    func run() throws {
        do {
            let text = file == "-"
                ? FileHandle.standardInput.readDataToEndOfFile()
                : try Data(contentsOf: URL(fileURLWithPath: file))
            if let data = source.data {
                // Checked the way the server checks it, then stored as is.
                try RulesDocument.validate(text)
                let dir = URL(fileURLWithPath: "\(data)/\(source.namespace)")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                try text.write(to: dir.appendingPathComponent("rules.json"), options: .atomic)
            } else {
                let server = try source.server()
                try server.setRules(text)
            }
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
    }
}

extension RulesDocument {
    /// The checks a rules document must pass to be stored: the core's, the
    /// same the server runs (shape, comments, every rule's expression).
    static func validate(_ text: Data) throws {
        try failing { () throws(HearthError) in try check(text) }
    }
}
