import ArgumentParser
import Foundation

/// The value argument of a write: JSON text, or - for standard input.
private func readValue(_ text: String) -> Data {
    text == "-" ? FileHandle.standardInput.readDataToEndOfFile() : Data(text.utf8)
}

/// Runs a write, reporting failures as the CLI does.
private func perform(_ kind: WriteKind, _ source: SourceOptions, _ path: String, _ value: Data)
    throws -> String?
{
    do {
        return try source.open().write(kind, path: path, json: value)
    } catch {
        Output.error("\(Output.errorLabel)\(error)")
        throw ExitCode.failure
    }
}

/// `hearth set`: replace a location.
struct SetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Replace the value at a location (null deletes).",
        discussion: """
            The value is JSON; server values work ({".sv":"timestamp"}). It is validated \
            first: an invalid value changes nothing and the message names the key, path \
            or limit at fault.

            Examples:
              hearth set /users/ada '{"name":"Ada","born":1815}' --data ./hearth-data
              hearth set /posts/p1/at '{".sv":"timestamp"}' --url http://127.0.0.1:9000/
              cat user.json | hearth set /users/bob - --data ./hearth-data
            """)

    @Argument(help: "The location to write.") var path: String
    @Argument(help: "The JSON value (- for standard input).") var value: String
    @OptionGroup var source: SourceOptions

    func run() throws { _ = try perform(.set, source, path, readValue(value)) }
}

/// `hearth update`: a multi-path update.
struct UpdateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Update several children at once (keys may be deep paths; null deletes).",
        discussion: """
            Examples:
              hearth update / '{"users/ada/born":1816,"counts/ada":1}' --data ./hearth-data
            """)

    @Argument(help: "The location the keys are relative to.") var path: String
    @Argument(help: "A JSON object of relative paths to values (- for standard input).")
    var value: String
    @OptionGroup var source: SourceOptions

    func run() throws { _ = try perform(.update, source, path, readValue(value)) }
}

/// `hearth push`: a new child under a push ID.
struct PushCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push",
        abstract: "Add a child under a new push ID and print the ID.",
        discussion: """
            Examples:
              hearth push /messages '{"text":"hi"}' --data ./hearth-data
            """)

    @Argument(help: "The list to add to.") var path: String
    @Argument(help: "The JSON value (- for standard input).") var value: String
    @OptionGroup var source: SourceOptions
    @OptionGroup var output: FormatOptions

    func run() throws {
        let key = try perform(.push, source, path, readValue(value)) ?? ""
        switch output.format {
        case .text: Output.line(key)
        case .json: Output.json(["name": key])
        }
    }
}

/// `hearth remove`: delete a location.
struct RemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Delete the value at a location.",
        discussion: """
            Examples:
              hearth remove /users/bob --data ./hearth-data
            """)

    @Argument(help: "The location to delete.") var path: String
    @OptionGroup var source: SourceOptions

    func run() throws { _ = try perform(.remove, source, path, Data()) }
}
