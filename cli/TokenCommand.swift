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
            server's --auth-secret; or with --key, a PEM private key (RSA: RS256, EC \
            P-256: ES256) whose public key the server has (--auth-keys, \
            --auth-keys-url), the header naming --kid; without either it is unsigned, \
            which only a server with no keys accepts. --firebase-project ID adds the \
            claims of a Firebase Auth ID token of that project (iss, aud, auth_time, \
            user_id, firebase.sign_in_provider "custom"), which --claims may replace. \
            The token goes to standard output.

            Examples:
              hearth token --uid ada --secret "$SECRET"
              hearth token --uid ada --claims '{"admin":true}' --secret "$SECRET" --ttl 600
              hearth token --uid ada --key private.pem --kid k1 --firebase-project my-app \\
                --claims '{"email":"ada@example.com","email_verified":true}'
              curl "http://127.0.0.1:9000/users/ada.json?auth=$(hearth token --uid ada --secret "$SECRET")"
            """)

    @Option(help: "The user's id (the token's \"sub\").")
    var uid: String

    @Option(help: "More claims, as a JSON object.")
    var claims: String?

    @Option(help: "The HS256 secret (the server's --auth-secret); default: $HEARTH_AUTH_SECRET, else unsigned.")
    var secret: String?

    @Option(help: "A PEM private key file to sign with (RSA: RS256, EC P-256: ES256) instead of a secret.")
    var key: String?

    @Option(help: "The key id the token's header names (with --key).")
    var kid: String?

    @Option(help: "Shape the token as a Firebase Auth ID token of this project (iss, aud, auth_time, user_id, firebase).")
    var firebaseProject: String?

    @Option(help: "Seconds until the token expires.")
    var ttl: Int64 = 3600

    func validate() throws {
        guard ttl > 0 else { throw ValidationError("--ttl must be positive") }
        guard !uid.isEmpty else { throw ValidationError("--uid must not be empty") }
        if key != nil && secret != nil { throw ValidationError("give --secret or --key, not both") }
        if kid != nil && key == nil { throw ValidationError("--kid goes with --key") }
    }

    /// The claims: --firebase-project's ID token claims under --claims.
    func claimsJSON() throws -> String? {
        guard let firebaseProject else { return claims }
        let now = Int(Date().timeIntervalSince1970)
        var object: [String: Any] = [
            "iss": "https://securetoken.google.com/\(firebaseProject)", "aud": firebaseProject,
            "auth_time": now, "user_id": uid,
            "firebase": ["identities": [String: Any](), "sign_in_provider": "custom"],
        ]
        if let claims {
            guard let extra = (try? JSONSerialization.jsonObject(with: Data(claims.utf8))) as? [String: Any] else {
                throw ValidationError("--claims must be a JSON object")
            }
            object.merge(extra) { _, given in given }
        }
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    func run() throws {
        let claimsText = try claimsJSON()
        let secret = self.secret ?? (key == nil ? ProcessInfo.processInfo.environment["HEARTH_AUTH_SECRET"] : nil)
        var pem: String?
        if let key {
            guard let text = try? String(contentsOfFile: key, encoding: .utf8) else {
                Output.error("\(Output.errorLabel)--key: cannot read \(key)")
                throw ExitCode.failure
            }
            pem = text
        }
        do throws(HearthError) {
            if let pem {
                Output.line(try HearthServer.makeToken(uid: uid, claimsJSON: claimsText, keyPEM: pem, kid: kid, lifetime: ttl))
            } else {
                Output.line(try HearthServer.makeToken(uid: uid, claimsJSON: claimsText, secret: secret, lifetime: ttl))
            }
        } catch {
            Output.error("\(Output.errorLabel)\(error.message)")
            throw ExitCode.failure
        }
    }
}
