import ArgumentParser
import Foundation

/// `hearth export`: a database (or a location in it) as export-format JSON.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write a database, or a location in it, as JSON with priorities.",
        discussion: """
            The output is the export format (format=export): priorities are kept as \
            ".priority" and ".value", and nothing becomes an array, so `hearth import` \
            restores it exactly.

            Examples:
              hearth export --data ./hearth-data > backup.json
              hearth export --data ./hearth-data --namespace shop /orders
              hearth export --url http://127.0.0.1:9000/?ns=shop --pretty
            """)

    @Argument(help: "The location to export.")
    var path = "/"

    @Flag(help: "Indent the JSON for people.")
    var pretty = false

    @OptionGroup var source: SourceOptions

    func run() throws {
        do {
            let store = try source.open()
            Output.line(try store.export(path: path, pretty: pretty))
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
    }
}
