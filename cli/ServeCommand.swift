import ArgumentParser
import Dispatch
import Foundation
import Hearth

/// `hearth serve`: the REST and streaming API on a durable data directory.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the REST and streaming API, keeping data in a directory.",
        discussion: """
            Speaks the Realtime Database's REST API (GET, PUT, POST, PATCH, DELETE, \
            queries, ETags, server-sent events), so curl, the Admin SDKs in emulator \
            mode (FIREBASE_DATABASE_EMULATOR_HOST=HOST:PORT) and Pyrebase work \
            unmodified. Each namespace (?ns=NAME, or the first label of the Host \
            header) is a database in DIR/NAME. Every write is logged before it is \
            acknowledged and survives a crash. SIGINT or SIGTERM stop it cleanly.

            Examples:
              hearth serve                                  # 127.0.0.1:9000, ./hearth-data
              hearth serve --port 8080 --data /var/lib/hearth
              hearth serve --rules database.rules.json --fsync batch
              curl -X PUT -d '{"name":"Ada"}' http://127.0.0.1:9000/users/ada.json
            """)

    @Option(help: "The IP address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = 9000

    @Option(help: "The data directory (one subdirectory per namespace).")
    var data = "./hearth-data"

    @Option(help: "A rules file (JSON with comments) for every namespace.")
    var rules: String?

    @Option(help: "The HS256 secret that signs users' tokens (default: unsigned tokens are accepted, as the emulator does).")
    var authSecret: String?

    @Option(help: "The namespace of requests that name none.")
    var namespace = "default"

    @Option(help: "When acknowledged writes reach the disk: always, batch (within a second) or off.")
    var fsync: HearthServer.FsyncMode = .always

    func validate() throws {
        guard (0...65535).contains(port) else {
            throw ValidationError("--port must be between 0 and 65535")
        }
    }

    func run() throws {
        let server: HearthServer
        do {
            server = try HearthServer(.init(
                host: host, port: port, dataDirectory: data, defaultNamespace: namespace,
                fsync: fsync, rulesFile: rules, authSecret: authSecret))
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
        Output.line("hearth \(Database.sdkVersion()) listening on http://\(host):\(server.port)")
        Output.line("data: \(data) (fsync \(fsync.rawValue)); default namespace: \(namespace)")
        Output.line(rules.map { "rules: \($0)" }
            ?? "rules: each namespace's own (default: read and write for everyone)")
        Output.line(
            "rules are enforced on REST, on streams and on the realtime protocol; tokens: "
                + (authSecret == nil
                    ? "unsigned ones are accepted (no --auth-secret)"
                    : "HS256 with the --auth-secret")
                + "; Authorization: Bearer owner (realtime: gauth \"owner\") is the admin")
        Output.line("stop with Ctrl-C")

        Interrupt.wait()
        server.stop()
        Output.line("stopped")
    }
}

extension HearthServer.FsyncMode: ExpressibleByArgument {}
