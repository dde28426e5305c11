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
              hearth rules test rules.cases.json --format json
            """,
        subcommands: [RulesGet.self, RulesSet.self, RulesTest.self])
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

/// `hearth rules test CASES.json`: rules cases for CI, offline.
struct RulesTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run cases against a rules file offline (for CI); exit 1 on any mismatch.",
        discussion: """
            CASES.json is {"rules": "database.rules.json" (relative to CASES.json), \
            "data": {...initial data...}, "cases": [{"op": "read" | "set" | "update", \
            "path": "/x", "auth": null | {"uid": "...", ...claims}, "data": ... (a \
            set's value, an update's object of paths), "expect": "allow" | "deny"}]}. \
            Each case is judged as the server judges it, against the initial data; \
            the result and the rule that decided are printed (--format json: one \
            report, {"passed", "failed", "cases": [...]}). Exit status 1 when a \
            case's result is not what it expects, 64 for cases that are not valid.
            """)

    @Argument(help: "The cases file.")
    var file: String

    @OptionGroup var output: FormatOptions

    func run() throws {
        let report: String
        do {
            let casesURL = URL(fileURLWithPath: file)
            let cases = try Data(contentsOf: casesURL)
            guard let object = try? JSONSerialization.jsonObject(with: cases) as? [String: Any],
                let rulesName = object["rules"] as? String
            else {
                throw CommandFailure(description: "\(file): not an object naming its \"rules\" file")
            }
            let rulesURL = rulesName.hasPrefix("/")
                ? URL(fileURLWithPath: rulesName)
                : casesURL.deletingLastPathComponent().appendingPathComponent(rulesName)
            let rules = try Data(contentsOf: rulesURL)
            report = try failing { () throws(HearthError) in try RulesDocument.test(rules: rules, cases: cases) }
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode(64)
        }
        let parsed = (try? JSONSerialization.jsonObject(with: Data(report.utf8))) as? [String: Any] ?? [:]
        let failed = parsed["failed"] as? Int ?? 1
        if output.format == .json {
            Output.line(report)
        } else {
            for case let line as [String: Any] in parsed["cases"] as? [Any] ?? [] {
                let rule = (line["rule"] as? [String: Any]).map {
                    "\($0["kind"] ?? "") at \($0["path"] ?? ""): \($0["expression"] ?? "")"
                } ?? "no rule"
                let ok = line["ok"] as? Bool ?? false
                Output.line("\(ok ? "ok  " : "FAIL") case \(line["case"] ?? ""): \(line["op"] ?? "") "
                    + "\(line["path"] ?? ""): \(line["result"] ?? "") (expected \(line["expect"] ?? "")), "
                    + "decided by \(rule)")
            }
            Output.line("\(parsed["passed"] ?? 0) passed, \(failed) failed")
        }
        if failed > 0 { throw ExitCode.failure }
    }
}

extension RulesDocument {
    /// The checks a rules document must pass to be stored: the core's, the
    /// same the server runs (shape, comments, every rule's expression).
    static func validate(_ text: Data) throws {
        try failing { () throws(HearthError) in try check(text) }
    }
}
