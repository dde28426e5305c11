import ArgumentParser
import Dispatch
import Foundation
import Hearth
import HearthServer

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
              hearth serve --rules database.rules.json --auth-secret-file secret.txt
              hearth serve --auth-keys jwks.json --admin-secret-file admin.txt
              hearth serve --firebase-project my-app --admin-secret-file admin.txt
              hearth serve --auth-keys-url https://idp.example.com/jwks.json --auth-issuer https://idp.example.com
              hearth serve --tls-cert cert.pem --tls-key key.pem --port 443
              hearth serve --port 9000 --public-host db.example.com   # behind a proxy
              hearth serve --log-format json --metrics-port 9100
              hearth serve --config /etc/hearth/hearth.json --port 9001
              hearth serve --functions functions            # Python Cloud Functions
              hearth serve --triggers triggers.json         # webhooks, CloudEvents
              hearth serve --cluster tls://h1:4222,tls://h2:4222 --node n1 \\
                --cluster-secret-file cluster.key \\
                --nats-user-file nats.user --nats-ca nats-ca.pem
              curl -X PUT -d '{"name":"Ada"}' http://127.0.0.1:9000/users/ada.json

            Rules: --rules FILE applies to every namespace and is read again when it \
            changes (a file that does not check is reported and the rules in force \
            stay). Without it each namespace keeps its own, replaced with PUT \
            /.settings/rules.json; a new namespace starts open (read and write for \
            everyone) when no keys are given, as the emulator does, and locked when \
            --auth-secret or --auth-keys is. The rules in force are printed at start.

            Firebase Auth: --firebase-project ID accepts the project's ID tokens as the \
            service does (issuer, audience, Google's published keys, fetched over HTTPS \
            and again before they expire; a failed fetch keeps the last good keys). \
            SIGHUP reads --auth-keys again and fetches the keys again.
            """)

    @Option(help: "The IP address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = 9000

    @Option(help: "The data directory (one subdirectory per namespace).")
    var data = "./hearth-data"

    @Option(help: "A rules file (JSON with comments) for every namespace, reloaded when it changes.")
    var rules: String?

    @Option(help: "The HS256 secret that signs users' tokens (without any keys, unsigned tokens are accepted, as the emulator does).")
    var authSecret: String?

    @Option(help: "A file holding the HS256 secret (trailing newline ignored).")
    var authSecretFile: String?

    @Option(help: "Public keys for RS256/ES256 tokens: a JWKS file, a key id to PEM certificate map, or PEM.")
    var authKeys: String?

    @Option(help: "An https:// URL of public keys for RS256/ES256 tokens (JWKS, or a key id to PEM certificate map), fetched again before its Cache-Control max-age runs out; a failed fetch keeps the last good keys.")
    var authKeysUrl: String?

    @Option(help: "Accept this Firebase project's Auth ID tokens: its issuer and audience, Google's published keys (fetched and kept current), RS256 with a kid, sub 1 to 128 characters, auth_time not in the future.")
    var firebaseProject: String?

    @Option(help: "The audience a token must name (\"aud\"; Firebase ID tokens: the project id).")
    var authAudience: String?

    @Option(help: "The issuer a token must name (\"iss\").")
    var authIssuer: String?

    @Option(help: "The admin's credential, at least 16 characters (without it: \"owner\" when no keys are configured, as the emulator; no admin over the network when they are).")
    var adminSecret: String?

    @Option(help: "A file holding the admin secret (trailing newline ignored).")
    var adminSecretFile: String?

    @Option(help: "The namespace of requests that name none.")
    var namespace = "default"

    @Option(help: "When acknowledged writes reach the disk: always, batch (within a second) or off.")
    var fsync: HearthServer.FsyncMode = .always

    @Option(help: "Seconds a request's head may take to arrive, from its first byte (default 20).")
    var headerTimeout: Double?

    @Option(help: "Seconds a request body may pause (default 60).")
    var bodyTimeout: Double?

    @Option(help: "Seconds before an idle connection closes (default 75); a silent WebSocket is pinged, then closed after twice that.")
    var idleTimeout: Double?

    @Option(help: "Open connections at most (default: the open-file limit less a quarter).")
    var maxConnections: Int?

    @Option(help: "Connections one client address may hold (default: a quarter of --max-connections).")
    var maxConnectionsPerAddress: Int?

    @Option(help: "Megabytes of request bodies and WebSocket messages held at once (default 1024); one client address may hold a quarter.")
    var maxHeldMb: Int?

    @Option(help: "Join a cluster: the NATS JetStream servers, comma-separated (nats://h1:4222,nats://h2:4222).")
    var cluster: String?

    @Option(help: "This node's name in the cluster (letters, digits, '-', '_').")
    var node: String?

    @Option(help: "The cluster secret: a file every node holds the same (openssl rand -base64 32 > FILE; chmod 600). NATS is untrusted: what a node puts into it is sealed with this.")
    var clusterSecretFile: String?

    @Flag(help: "Join a cluster without a secret, trusting NATS with the data (experiments only).")
    var clusterInsecure = false

    @Option(help: "A NATS .creds file (user JWT and NKey seed).")
    var natsCreds: String?

    @Option(help: "A NATS NKey user seed file (SU...).")
    var natsNkey: String?

    @Option(help: "A file with the NATS user on its first line and the password on its second.")
    var natsUserFile: String?

    @Option(help: "A file holding a NATS token.")
    var natsTokenFile: String?

    @Option(help: "The CA certificates (PEM) to trust for NATS's TLS; implies TLS, as tls:// URLs do.")
    var natsCa: String?

    @Option(help: "A client certificate (PEM chain) for NATS's TLS, with --nats-key.")
    var natsCert: String?

    @Option(help: "The PEM private key of --nats-cert.")
    var natsKey: String?

    @Option(help: "A PEM certificate chain: serve HTTPS and WSS on the port (with --tls-key; reloaded on SIGHUP).")
    var tlsCert: String?

    @Option(help: "The PEM private key of --tls-cert.")
    var tlsKey: String?

    @Option(help: "Access and event logs on stderr: off, text or json.")
    var logFormat: HearthServer.LogFormat = .off

    @Option(help: "Also serve GET /.metrics (Prometheus text) on 127.0.0.1 at this port, without credentials.")
    var metricsPort: Int?

    @Option(help: "The host (and :port) clients reach this server at, told to the official SDKs in the realtime hello (they connect there next time); set it behind a reverse proxy. Default: the request's Host header.")
    var publicHost: String?

    @Option(help: "A JSON file of database triggers ({\"triggers\": [{\"name\", \"ref\": \"/messages/{id}\", \"event\": \"written\", \"url\"}]}; README \"Triggers\").")
    var triggers: String?

    @Flag(help: "Register no database triggers and fire none (the file's, --functions', the admin's kept ones): writes, imports and restores through this server trigger nothing; queued events wait for a start with triggers.")
    var noTriggers = false

    @Option(help: "A Python Cloud Functions folder (DIR/main.py, DIR/venv): its database triggers run under functions-framework and fire on this server's writes.")
    var functions: String?
    @Option(help: "Keep each namespace's log this long across snapshots, for point-in-time recovery (hearth backup --at, hearth log): a number and s, m, h or d, such as 7d (default: off). On a cluster node, the cluster's log in JetStream, with checkpoints of each namespace (give every node the same).")
    var retain: RetainWindow?

    @Option(help: "A JSON file of these options: keys are the option names without -- ({\"port\": 8080, \"tls-cert\": \"cert.pem\"}); options on the command line override it; an unknown key is an error.")
    var config: String?

    func validate() throws {
        // With a file, the options are checked once merged (run()): the
        // command line alone may lack what the file gives.
        guard config == nil else { return }
        if let (one, other) = givenAlternatives() {
            throw ValidationError("give --\(one) or --\(other), not both")
        }
        if let metricsPort, !(1...65535).contains(metricsPort) {
            throw ValidationError("--metrics-port must be between 1 and 65535")
        }
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError("give --tls-cert and --tls-key together")
        }
        if (cluster == nil) != (node == nil) {
            throw ValidationError("--cluster and --node go together")
        }
        if (natsCert == nil) != (natsKey == nil) {
            throw ValidationError("give --nats-cert and --nats-key together")
        }
        guard (0...65535).contains(port) else {
            throw ValidationError("--port must be between 0 and 65535")
        }
        for (name, value) in [("--header-timeout", headerTimeout), ("--body-timeout", bodyTimeout),
                              ("--idle-timeout", idleTimeout)] {
            if let value, !(value > 0 && value <= 86400) {
                throw ValidationError("\(name) must be more than 0 and at most 86400 seconds")
            }
        }
        if let maxConnections, maxConnections < 1 {
            throw ValidationError("--max-connections must be at least 1")
        }
        if let maxConnectionsPerAddress, maxConnectionsPerAddress < 1 {
            throw ValidationError("--max-connections-per-address must be at least 1")
        }
        if let maxHeldMb, maxHeldMb < 1 {
            throw ValidationError("--max-held-mb must be at least 1")
        }
    }

    /// A secret from its option or its file (without the trailing newline).
    private func secret(_ value: String?, file: String?, option: String) throws -> String? {
        guard let file else { return value }
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            Output.error("\(Output.errorLabel)\(option): cannot read \(file)")
            throw ExitCode.failure
        }
        return String(text.trimmingCharacters(in: .newlines))
    }

    func run() throws {
        if let config {
            var merged = try Self.merging(configFile: config, arguments: Self.argumentsAfterServe())
            merged.config = nil
            try merged.run()
            return
        }
        let authSecret = try secret(self.authSecret, file: authSecretFile, option: "--auth-secret-file")
        let adminSecret = try secret(self.adminSecret, file: adminSecretFile, option: "--admin-secret-file")
        let runner = functions.map { FunctionsRunner(directory: $0, namespace: namespace) }
        if let runner {
            do {
                try runner.discover(databaseHost: "\(host):\(port)")
            } catch {
                Output.error("\(Output.errorLabel)\(error)")
                throw ExitCode.failure
            }
        }
        let server: HearthServer
        do {
            var configuration = HearthServer.Configuration(
                host: host, port: port, dataDirectory: data, defaultNamespace: namespace,
                fsync: fsync, rulesFile: rules, authSecret: authSecret, authKeysFile: authKeys,
                authAudience: authAudience, authIssuer: authIssuer, adminSecret: adminSecret,
                headerTimeout: headerTimeout, bodyTimeout: bodyTimeout, idleTimeout: idleTimeout,
                maxConnections: maxConnections, maxConnectionsPerAddress: maxConnectionsPerAddress,
                maxHeldBytes: maxHeldMb.map { Int64($0) << 20 }, cluster: cluster, node: node,
                tlsCertFile: tlsCert, tlsKeyFile: tlsKey)
            configuration.logFormat = logFormat
            configuration.metricsPort = metricsPort
            configuration.publicHost = publicHost
            configuration.authKeysURL = authKeysUrl
            configuration.firebaseProject = firebaseProject
            configuration.triggersFile = triggers
            configuration.triggersJSON = runner?.triggersJSON()
            configuration.noTriggers = noTriggers
            configuration.retain = retain.flatMap { $0.seconds > 0 ? $0.seconds : nil }
            configuration.clusterSecretFile = clusterSecretFile
            configuration.clusterInsecure = clusterInsecure
            configuration.natsCredsFile = natsCreds
            configuration.natsNKeyFile = natsNkey
            configuration.natsUserFile = natsUserFile
            configuration.natsTokenFile = natsTokenFile
            configuration.natsCAFile = natsCa
            configuration.natsCertFile = natsCert
            configuration.natsKeyFile = natsKey
            server = try HearthServer(configuration)
        } catch {
            Output.error("\(Output.errorLabel)\(error)")
            throw ExitCode.failure
        }
        // Before the banner: a reload asked as soon as the server listens
        // must find the handler, not SIGHUP's default (which ends it).
        let keysReload = authKeys != nil || authKeysUrl != nil || firebaseProject != nil
        let reload = tlsCert == nil && !keysReload ? nil : Interrupt.onHangUp { [authKeys] in
            if tlsCert != nil {
                do {
                    try server.reloadTLS()
                    Output.line("TLS certificate reloaded from \(tlsCert ?? "")")
                } catch {
                    Output.error("\(Output.errorLabel)TLS reload failed (the certificate in force stays): \(error)")
                }
            }
            guard keysReload else { return }
            do {
                try server.reloadAuthKeys()
                Output.line("token keys: " + (authKeys.map { "\($0) read again" } ?? "")
                    + (authKeys != nil && !(authKeysUrl == nil && firebaseProject == nil) ? "; " : "")
                    + (authKeysUrl == nil && firebaseProject == nil ? "" : "fetching the key URL again"))
            } catch {
                Output.error("\(Output.errorLabel)token keys not reloaded (the keys in force stay): \(error)")
            }
        }
        let hasKeys = authSecret != nil || keysReload
        let scheme = tlsCert == nil ? "http" : "https"
        Output.line("hearth \(Database.sdkVersion()) listening on \(scheme)://\(host):\(server.port)")
        Output.line("data: \(data) (fsync \(fsync.rawValue)); default namespace: \(namespace)")
        if let retain, retain.seconds > 0 {
            Output.line(
                cluster == nil
                    ? "log kept for \(retain.text) across snapshots: hearth log and hearth backup --at reach back that far"
                    : "the cluster's log kept for \(retain.text) with checkpoints: hearth log --url and hearth backup --at --url reach back that far")
        }
        Output.line("rules in force for namespace \(namespace): \(rulesInForce(hasKeys: hasKeys))")
        Output.line(
            "rules are enforced on REST, on streams and on the realtime protocol; tokens: "
                + (hasKeys
                    ? [authSecret.map { _ in "HS256 with the auth secret" },
                       authKeys.map { "RS256/ES256 with the keys in \($0) (read again when it changes)" },
                       Self.fetchedKeys(server.authKeysStatus())]
                        .compactMap { $0 }.joined(separator: ", ")
                    : "unsigned ones are accepted (no --auth-secret, --auth-keys, --auth-keys-url or --firebase-project)")
                + "; "
                + (adminSecret != nil
                    ? "the admin is the --admin-secret (\"owner\" is not accepted)"
                    : hasKeys
                        ? "there is no admin over the network (keys are configured without --admin-secret; \"owner\" is not accepted)"
                        : "the admin is Authorization: Bearer owner (realtime: gauth \"owner\"), as the emulator"))
        if let cluster, let node {
            Output.line("cluster: node \(node) on \(Self.maskingCredentials(cluster)); status: GET /.cluster/status.json (admin)")
            Output.line("cluster: " + clusterTrust(urls: cluster))
        }
        if let runner {
            do {
                try runner.start(databaseHost: "\(host):\(server.port)")
            } catch {
                Output.error("\(Output.errorLabel)\(error)")
                server.stop()
                throw ExitCode.failure
            }
            for function in runner.functions {
                Output.line("function \(function.name): \(function.eventType) on \(function.ref) (namespace \(function.instance)), functions-framework on 127.0.0.1:\(function.port)")
            }
            if !runner.skipped.isEmpty {
                Output.line("functions not run (not database triggers): " + runner.skipped.joined(separator: ", "))
            }
        }
        if let triggers {
            Output.line("triggers from \(triggers); list them: GET /.settings/triggers.json (admin)")
        }
        Output.line("stop with Ctrl-C"
            + (tlsCert == nil ? "" : "; SIGHUP reloads the TLS certificate")
            + (keysReload ? "; SIGHUP reads the token keys again" : ""))

        Interrupt.wait()
        reload?.cancel()
        server.stop()
        runner?.stop()
        Output.line("stopped")
    }
}

extension ServeCommand {
    /// The default namespace's rules as the server now enforces them: the
    /// --rules file, else the namespace's stored rules, else the default.
    func rulesInForce(hasKeys: Bool) -> String {
        if let rules {
            let text = (try? String(contentsOfFile: rules, encoding: .utf8)) ?? ""
            return "\(rules) (reloaded when it changes)\n" + text
        }
        let stored = data + "/" + namespace + "/rules.json"
        if let text = try? String(contentsOfFile: stored, encoding: .utf8) {
            return "\(stored) (replace with PUT /.settings/rules.json)\n" + text
        }
        return hasKeys
            ? "the default with keys, locked: {\"rules\": {\".read\": false, \".write\": false}}"
            : "the default without keys, open: {\"rules\": {\".read\": true, \".write\": true}}"
    }
}

extension ServeCommand {
    /// The banner's words on the keys fetched from a URL, from the server's
    /// status (hearth_server_auth_keys_status), or nil when there is none.
    static func fetchedKeys(_ statusJSON: String?) -> String? {
        guard let data = statusJSON?.data(using: .utf8),
            let status = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
            let url = status["url"] as? [String: Any], let address = url["url"] as? String
        else { return nil }
        let firebase = (status["firebase"] as? Bool) == true ? "Firebase ID tokens, " : ""
        let count = (url["keys"] as? Int) ?? 0
        let next = ((url["next_fetch_ms"] as? Int) ?? 0) / 1000
        let state: String
        if let error = url["error"] as? String {
            state = count > 0
                ? "the last fetch failed (\(error)); the \(count) keys in force stay; retrying in \(next) s"
                : "NO KEYS YET: the fetch failed (\(error)); signed tokens are refused until one succeeds; retrying in \(next) s"
        } else {
            let kids = (url["kids"] as? String).map { " (kid \($0))" } ?? ""
            state = "\(count) keys\(kids), fetched again in \(next) s"
        }
        return "\(firebase)RS256/ES256 with the keys of \(address): \(state)"
    }

    /// urls with each one's credentials masked: nats://user:pw@h:4222 is
    /// nats://***@h:4222 (a URL ends at a comma or a space).
    static func maskingCredentials(_ urls: String) -> String {
        var out = ""
        var rest = Substring(urls)
        while let scheme = rest.range(of: "://") {
            out += rest[..<scheme.upperBound]
            rest = rest[scheme.upperBound...]
            let end = rest.firstIndex(where: { $0 == "," || $0 == " " }) ?? rest.endIndex
            if let at = rest[..<end].lastIndex(of: "@") {
                out += "***"
                rest = rest[at...]
            }
        }
        return out + rest
    }

    /// How this node trusts the cluster and proves itself to NATS, for
    /// the start banner (file names only, never what they hold).
    func clusterTrust(urls: String) -> String {
        var parts: [String] = []
        if let clusterSecretFile {
            parts.append("cluster secret from \(clusterSecretFile)")
        } else {
            parts.append("INSECURE (--cluster-insecure): NATS is trusted with the data, nothing is sealed")
        }
        if let natsCreds { parts.append("NATS credentials from \(natsCreds)") }
        if let natsNkey { parts.append("NATS NKey from \(natsNkey)") }
        if let natsUserFile { parts.append("NATS user from \(natsUserFile)") }
        if let natsTokenFile { parts.append("NATS token from \(natsTokenFile)") }
        let tls = natsCa != nil || natsCert != nil
            || urls.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased().hasPrefix("tls://") }
        parts.append(tls
            ? "TLS to NATS" + (natsCa.map { " trusting \($0)" } ?? "")
                + (natsCert.map { " with client certificate \($0)" } ?? "")
            : "no TLS to NATS")
        if Self.maskingCredentials(urls) != urls {
            let shown = Self.argumentsAfterServe().contains { Self.maskingCredentials($0) != $0 }
            parts.append("the URL's credentials are masked here"
                + (shown ? ", but a command line shows them to every user (ps): use --nats-user-file FILE" : ""))
        }
        return parts.joined(separator: "; ")
    }

    /// What followed `serve` on the command line.
    static func argumentsAfterServe() -> [String] {
        let args = CommandLine.arguments
        guard let i = args.firstIndex(of: "serve") else { return [] }
        return Array(args[(i + 1)...])
    }
}

extension HearthServer.FsyncMode: ExpressibleByArgument {}
extension HearthServer.LogFormat: ExpressibleByArgument {}
