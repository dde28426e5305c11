import ArgumentParser
import Foundation
import Hearth

/// `hearth check FILE`: is this JSON file valid Hearth data?
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check that a JSON file is valid Hearth data.",
        discussion: """
            Applies the database's rules: keys are non-empty, at most 768 bytes, \
            without . $ # [ ] / or control characters; data nests at most 32 levels; \
            strings are at most 10 MB; numbers are finite; .priority and .value are \
            used correctly. On failure the message names the key, path or limit at \
            fault (with line and column for JSON syntax errors) and the exit status is 1.

            Examples:
              hearth check data.json                  # ok: 12 nodes, depth 3
              hearth check --format json data.json    # {"depth":3,"nodes":12,"ok":true,...}
              hearth check --allow-server-values write.json
              curl -s https://example.com/export.json | hearth check -
            """)

    @Argument(help: "The JSON file to check (- for standard input).")
    var file: String

    @Flag(help: "Accept server values ({\".sv\": ...}), as in data to be written.")
    var allowServerValues = false

    @OptionGroup var output: FormatOptions

    func run() throws {
        let data: Data
        do {
            data = try read()
        } catch {
            Output.error("\(Output.errorLabel)cannot read \(file): \(Self.describe(error))")
            throw ExitCode.failure
        }
        do {
            let summary = try HearthJSON.validate(data, allowServerValues: allowServerValues)
            switch output.format {
            case .text:
                let nodes = summary.nodeCount == 1 ? "1 node" : "\(summary.nodeCount) nodes"
                Output.line("ok: \(nodes), depth \(summary.depth)")
            case .json:
                Output.json(
                    CheckResult(ok: true, file: file, nodes: summary.nodeCount, depth: summary.depth))
            }
        } catch {
            Output.error(diagnostic(for: error))
            if output.format == .json {
                Output.json(CheckResult(ok: false, file: file, error: .init(error)))
            }
            throw ExitCode.failure
        }
    }

    private func read() throws -> Data {
        if file == "-" {
            return FileHandle.standardInput.readDataToEndOfFile()
        }
        return try Data(contentsOf: URL(fileURLWithPath: file))
    }

    /// "FILE:LINE:COLUMN: error: message", the form editors understand.
    private func diagnostic(for error: HearthError) -> String {
        let name = file == "-" ? "<stdin>" : file
        let position = error.line > 0 ? "\(name):\(error.line):\(error.column): " : "\(name): "
        return position + Output.errorLabel + error.message
    }

    /// A short reason for a read failure ("No such file or directory").
    private static func describe(_ error: any Error) -> String {
        let error = error as NSError
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain,
            let code = POSIXErrorCode(rawValue: Int32(underlying.code))
        {
            return POSIXError(code).localizedDescription
        }
        if error.domain == NSCocoaErrorDomain {
            switch error.code {
            case NSFileReadNoSuchFileError: return "no such file"
            case NSFileReadNoPermissionError: return "permission denied"
            default: break
            }
        }
        return error.localizedDescription
    }
}

/// The `--format json` result of `hearth check`.
private struct CheckResult: Encodable {
    struct Failure: Encodable {
        let code: String
        let message: String
        let path: String
        let line: Int?
        let column: Int?

        init(_ error: HearthError) {
            code = error.code.name
            message = error.message
            path = error.path
            line = error.line > 0 ? error.line : nil
            column = error.line > 0 ? error.column : nil
        }
    }

    var ok: Bool
    var file: String
    var nodes: Int?
    var depth: Int?
    var error: Failure?
}
