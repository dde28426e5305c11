import ArgumentParser
import Foundation
import Hearth

/// The `hearth` command.
@main
struct HearthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "Hearth, a self-hostable realtime JSON database.",
        discussion: """
            Results go to standard output (--format json is the stable contract, \
            text is for people); diagnostics go to standard error.

            Exit status: 0 on success, 1 when the command fails (e.g. invalid data), \
            64 for a usage error.

            Examples:
              hearth serve --port 9000 --data ./hearth-data
              hearth version
              hearth version --format json
              hearth check data.json
              hearth check --format json export.json
              cat data.json | hearth check -
            """,
        version: Database.sdkVersion(),
        subcommands: [
            ServeCommand.self, GetCommand.self, SetCommand.self, UpdateCommand.self,
            PushCommand.self, RemoveCommand.self, WatchCommand.self, ExportCommand.self,
            ImportCommand.self, RulesCommand.self, TokenCommand.self,
            VersionCommand.self, CheckCommand.self, RepairCommand.self, ProfileCommand.self,
            BackupCommand.self, RestoreCommand.self, LogCommand.self,
        ])

    /// Parses the arguments, runs the command and exits with the CLI's
    /// status codes: usage errors (unknown options, missing or invalid
    /// arguments, failed validation) exit 64 (EX_USAGE), other failures
    /// their own code (1 by default).
    static func main() async {
        // The library's diagnostics (a cache rebuilt, a token refused, the
        // server's access lines) on standard error, where they always were.
        HearthLog.toStandardError()
        do {
            var command = try parseAsRoot()
            // A server outlives its stdout (a logger reading it may die).
            if command is ServeCommand { Output.outliveStdout() }
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            finish(with: error)
        }
    }

    /// Reports `error` as ArgumentParser would and exits with its status.
    static func finish(with error: any Error) -> Never {
        let code = exitCode(for: error)
        let message = fullMessage(for: error)
        if code == .success {
            // --help, --version: the requested output, on stdout.
            if !message.isEmpty { Output.line(message) }
            Foundation.exit(0)
        }
        if !message.isEmpty { Output.error(message) }
        if error is ValidationError || code == .validationFailure {
            Foundation.exit(Output.usageExitCode)
        }
        Foundation.exit(code.rawValue == 0 ? 1 : code.rawValue)
    }
}
