import ArgumentParser
import Foundation

/// `hearth get`: read a location, optionally through a query.
struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Read the value at a location.",
        discussion: """
            Prints the value as JSON (--format json: one line; text: indented). Query \
            flags take the REST API's names and JSON values.

            Examples:
              hearth get /users/ada --data ./hearth-data
              hearth get /users --order-by age --limit-to-last 3 --url http://127.0.0.1:9000/
              hearth get /users --order-by '$key' --start-at '"b"' --format json
            """)

    @Argument(help: "The location to read.")
    var path = "/"

    @OptionGroup var query: QueryOptions
    @OptionGroup var source: SourceOptions
    @OptionGroup var output: FormatOptions

    func run() throws {
        do {
            Output.line(try source.open().get(path: path, query: query, pretty: output.format == .text))
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
    }
}
