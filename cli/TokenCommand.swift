import ArgumentParser
import Foundation
@_spi(CLI) import Hearth
@_spi(CLI) import HearthServer

/// `hearth token`: a user token for tests and scripts, signed with the
/// server's --auth-secret (or unsigned, for a server without keys).
struct TokenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Make a user token (JWT) for testing.",
        discussion: """
            The token's "sub" is the uid (the rules' auth.uid); --claims adds claims \
            (auth.token.NAME in the rules). It is signed with HS256 by --secret, the \
            server's --auth-secret; without --secret it is unsigned, which only a \
            server with no keys accepts. The token goes to standard output.

            Examples:
              hearth token --uid ada --secret "$SECRET"
              hearth token --uid ada --claims '{"admin":true}' --secret "$SECRET" --ttl 600
              curl "http://127.0.0.1:9000/users/ada.json?auth=$(hearth token --uid ada --secret "$SECRET")"
            """)

    @Option(help: "The user's id (the token's \"sub\").")
    var uid: String

    @Option(help: "More claims, as a JSON object.")
    var claims: String?

    @Option(help: "The HS256 secret (the server's --auth-secret); default: $HEARTH_AUTH_SECRET, else unsigned.")
    var secret: String?

    @Option(help: "Seconds until the token expires.")
    var ttl: Int64 = 3600

    func validate() throws {
        guard ttl > 0 else { throw ValidationError("--ttl must be positive") }
        guard !uid.isEmpty else { throw ValidationError("--uid must not be empty") }
    }

    func run() throws {
        let key = secret ?? ProcessInfo.processInfo.environment["HEARTH_AUTH_SECRET"]
        do throws(HearthError) {
            Output.line(try HearthServer.makeToken(uid: uid, claimsJSON: claims, secret: key, lifetime: ttl))
        } catch {
            Output.error("\(Output.errorLabel)\(error.message)")
            throw ExitCode.failure
        }
    }
}
