import ArgumentParser
import Foundation

/// `hearth rules get|set`: a namespace's rules document.
struct RulesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rules",
        abstract: "Read or replace a namespace's rules document.",
        discussion: """
            The document is {"rules": {...}} (JSON with comments allowed). For now the \
            server uses it for ".indexOn" (child queries over REST need an index); \
            enforcing ".read", ".write" and ".validate" comes with the rules engine.

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
                let server = try ServerStore(url: source.serverURL!)
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
                let server = try ServerStore(url: source.serverURL!)
                try server.setRules(text)
            }
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
    }
}

/// The checks a rules document must pass to be stored.
enum RulesDocument {
    static func validate(_ text: Data) throws {
        // Comments are allowed: strip them as the server does before parsing.
        var out = [UInt8]()
        let bytes = [UInt8](text)
        var i = 0
        var inString = false
        while i < bytes.count {
            let c = bytes[i]
            if inString {
                out.append(c)
                if c == UInt8(ascii: "\\"), i + 1 < bytes.count {
                    out.append(bytes[i + 1])
                    i += 1
                } else if c == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if c == UInt8(ascii: "\"") {
                inString = true
                out.append(c)
            } else if c == UInt8(ascii: "/"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "/") {
                while i < bytes.count, bytes[i] != UInt8(ascii: "\n") { i += 1 }
                continue
            } else if c == UInt8(ascii: "/"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "*") {
                i += 2
                while i + 1 < bytes.count, !(bytes[i] == UInt8(ascii: "*") && bytes[i + 1] == UInt8(ascii: "/")) {
                    i += 1
                }
                i += 2
                continue
            } else {
                out.append(c)
            }
            i += 1
        }
        let object = try? JSONSerialization.jsonObject(with: Data(out)) as? [String: Any]
        guard let object, object["rules"] is [String: Any] else {
            throw CommandFailure(description: "a rules document is an object with a \"rules\" object")
        }
    }
}
