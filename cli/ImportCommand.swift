import ArgumentParser
import Foundation

/// `hearth import`: replace a location with the contents of a JSON file.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Replace a location with a JSON file (export format accepted).",
        discussion: """
            The file is validated first (keys, depth, limits: the message names what is \
            wrong); a file that is not valid changes nothing. The write is acknowledged \
            only once it is durable.

            Examples:
              hearth import backup.json --data ./hearth-data
              hearth import users.json --path /users --url http://127.0.0.1:9000/?ns=shop
              hearth export --data old | hearth import - --data new
              hearth import seed.json --url http://127.0.0.1:9000/ --no-triggers
            """)

    @Argument(help: "The JSON file (- for standard input).")
    var file: String

    @Option(help: "The location to replace.")
    var path = "/"

    @Flag(help: "With --url: the server fires no database triggers for this write (the admin's; triggers=off). A data directory fires none in any case.")
    var noTriggers = false

    @OptionGroup var source: SourceOptions

    func run() throws {
        let text: Data
        do {
            text = file == "-"
                ? FileHandle.standardInput.readDataToEndOfFile()
                : try Data(contentsOf: URL(fileURLWithPath: file))
        } catch {
            Output.error("\(Output.errorLabel)cannot read \(file): \(error.localizedDescription)")
            throw ExitCode.failure
        }
        do {
            try source.open().importJSON(text, path: path, triggers: !noTriggers)
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
    }
}
