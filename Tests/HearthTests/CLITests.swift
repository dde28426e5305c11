import Foundation
import Testing

import Hearth

/// Runs the built `hearth` executable, found next to the test bundle.
@Suite("hearth CLI")
struct CLITests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static let binary: URL? = {
        var directories: [URL] = []
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        directories.append(executable.deletingLastPathComponent())
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            directories.append(bundle.bundleURL.deletingLastPathComponent())
        }
        directories.append(Bundle.main.bundleURL)
        // .../Tests/HearthTests/CLITests.swift -> package root
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        directories.append(root.appendingPathComponent(".build/debug"))
        return directories.lazy.map { $0.appendingPathComponent("hearth") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    func hearth(_ arguments: String..., input: String? = nil) throws -> Run {
        try hearth(arguments, input: input)
    }

    func hearth(_ arguments: [String], input: String? = nil, in directory: URL? = nil) throws -> Run {
        let binary = try #require(Self.binary, "the hearth executable was not built next to the tests")
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let inPipe = Pipe()
        process.standardInput = inPipe
        try process.run()
        if let input { inPipe.fileHandleForWriting.write(Data(input.utf8)) }
        try inPipe.fileHandleForWriting.close()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(
            status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self))
    }

    func temporaryFile(_ contents: String) throws -> String {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("hearth-cli-\(UUID().uuidString).json")
        try Data(contents.utf8).write(to: url)
        return url.path
    }

    @Test func version() throws {
        let run = try hearth("version")
        #expect(run.status == 0)
        #expect(run.stdout == Database.sdkVersion() + "\n")
        let json = try hearth("version", "--format", "json")
        #expect(json.status == 0)
        #expect(json.stdout == "{\"version\":\"\(Database.sdkVersion())\"}\n")
    }

    @Test func checkValidFile() throws {
        let file = try temporaryFile(#"{"users": {"ada": {"name": "Ada", "langs": ["en", "fr"]}}, "n": 1}"#)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let run = try hearth("check", file)
        #expect(run.status == 0)
        #expect(run.stdout == "ok: 8 nodes, depth 4\n")
        #expect(run.stderr.isEmpty)
        let json = try hearth("check", "--format", "json", file)
        #expect(json.status == 0)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["ok"] as? Bool == true)
        #expect(object["nodes"] as? Int == 8)
        #expect(object["depth"] as? Int == 4)
        let stdin = try hearth("check", "-", input: "[1, 2, 3]")
        #expect(stdin.stdout == "ok: 4 nodes, depth 1\n")
    }

    @Test func checkInvalidData() throws {
        let badKey = try temporaryFile(#"{"users": {"a.b": 1}}"#)
        defer { try? FileManager.default.removeItem(atPath: badKey) }
        let run = try hearth("check", badKey)
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("a.b"))
        #expect(run.stderr.contains("error:"))

        let syntax = try temporaryFile("{\n  \"a\": 1,\n  \"b\": \n}")
        defer { try? FileManager.default.removeItem(atPath: syntax) }
        let syntaxRun = try hearth("check", syntax)
        #expect(syntaxRun.status == 1)
        #expect(syntaxRun.stderr.hasPrefix("\(syntax):4:"))

        let json = try hearth("check", "--format", "json", syntax)
        #expect(json.status == 1)
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["ok"] as? Bool == false)
        let error = try #require(object["error"] as? [String: Any])
        #expect(error["code"] as? String == "HEARTH_EJSON")
        #expect(error["line"] as? Int == 4)

        var deep = "1"
        for _ in 0..<33 { deep = "{\"k\": \(deep)}" }
        let tooDeep = try temporaryFile(deep)
        defer { try? FileManager.default.removeItem(atPath: tooDeep) }
        let deepRun = try hearth("check", tooDeep)
        #expect(deepRun.status == 1)
        #expect(deepRun.stderr.contains("32"))
    }

    @Test func checkMissingFile() throws {
        let run = try hearth("check", "/nonexistent/hearth-missing.json")
        #expect(run.status == 1)
        #expect(run.stdout.isEmpty)
        #expect(run.stderr.contains("/nonexistent/hearth-missing.json"))
    }

    @Test func usageErrorsExit64() throws {
        #expect(try hearth("check").status == 64)
        #expect(try hearth("no-such-command").status == 64)
        #expect(try hearth("version", "--format", "xml").status == 64)
        #expect(try hearth("check", "a.json", "--bogus").status == 64)
        let help = try hearth("--help")
        #expect(help.status == 0)
        #expect(help.stdout.contains("Examples:"))
    }

    /// `serve --config FILE` with `extra` after it; `--host 256.0.0.1`
    /// ends every run as the server starts, after the file was read and
    /// merged, so no server runs: what stderr says shows how the file was
    /// read.
    func serveConfig(_ json: String, _ extra: String..., in directory: URL? = nil) throws -> Run {
        let file = try temporaryFile(json)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let arguments = ["serve", "--config", file] + extra + ["--host", "256.0.0.1"]
        return try hearth(arguments, in: directory)
    }

    static let mergedAndStarted = #"invalid host "256.0.0.1""#

    @Test func configValuesMustHaveTheOptionsType() throws {
        for (json, message) in [
            (#"{"port": true}"#, #""port" must be an integer, not true"#),
            (#"{"port": "9000"}"#, #""port" must be an integer, not a string"#),
            (#"{"port": 80.5}"#, #""port" must be an integer, not 80.5"#),
            (#"{"header-timeout": false}"#, #""header-timeout" must be a number, not false"#),
            (#"{"data": 5}"#, #""data" must be a string, not 5"#),
            (#"{"data": null}"#, #""data" must be a string, not null"#),
            (#"{"cluster-insecure": 1}"#, #""cluster-insecure" must be true or false, not 1"#),
            (#"{"host": ["a"]}"#, #""host" must be a string, not an object or an array"#),
        ] {
            let run = try serveConfig(json)
            #expect(run.status == 64, "\(json)")
            #expect(run.stderr.contains(message), "\(json): \(run.stderr)")
        }
        let run = try serveConfig(#"{"port": 9000, "header-timeout": 5, "fsync": "off"}"#)
        #expect(run.stderr.contains(Self.mergedAndStarted), "\(run.stderr)")
    }

    @Test func configValuesStartingWithADashAreValues() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("hearth-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try serveConfig(#"{"data": "-v", "namespace": "--port"}"#, in: directory)
        #expect(run.status == 1)
        #expect(run.stderr.contains(Self.mergedAndStarted), "\(run.stderr)")
        // The data directory made as the server started: "-v" was a value.
        #expect(FileManager.default.fileExists(atPath: directory.path + "/-v"))
    }

    @Test func configSyntaxErrorsSayWhere() throws {
        let run = try serveConfig("{\"port\": 9000,\n  \"data\": \"d\",\n  oops}")
        #expect(run.status == 64)
        #expect(run.stderr.contains("invalid JSON at line 3, column"), "\(run.stderr)")
        let array = try serveConfig("[1, 2]")
        #expect(array.stderr.contains("must hold one JSON object of options"), "\(array.stderr)")
    }

    /// Each pair of options that exclude each other: one in the file and
    /// the other on the command line is the command line's choice (it
    /// overrides the file); both on the command line are still refused.
    @Test func theCommandLineOverridesTheFilesAlternative() throws {
        // A secret's file that holds a secret, and a value for the others
        // (file names that are not read before the server starts).
        let value = try temporaryFile("an-admin-secret-of-32-characters")
        defer { try? FileManager.default.removeItem(atPath: value) }
        for (one, other) in [
            ("auth-secret", "auth-secret-file"), ("admin-secret", "admin-secret-file"),
            ("cluster-secret-file", "cluster-insecure"), ("nats-creds", "nats-nkey"),
            ("nats-user-file", "nats-token-file"),
        ] {
            for (inFile, onCommandLine) in [(one, other), (other, one)] {
                let json = inFile == "cluster-insecure" ? #"{"\#(inFile)": true}"# : #"{"\#(inFile)": "\#(value)"}"#
                let given = onCommandLine == "cluster-insecure" ? ["--\(onCommandLine)"] : ["--\(onCommandLine)", value]
                let file = try temporaryFile(json)
                defer { try? FileManager.default.removeItem(atPath: file) }
                let run = try hearth(["serve", "--config", file] + given + ["--host", "256.0.0.1"])
                if inFile == "cluster-secret-file" && onCommandLine == "cluster-insecure" {
                    // never a quiet downgrade: refused as both given
                    #expect(run.status == 64 && run.stderr.contains("not both"), "\(run.stderr)")
                    continue
                }
                #expect(run.stderr.contains(Self.mergedAndStarted), "\(inFile) in the file, --\(onCommandLine): \(run.stderr)")
            }
            let both = try hearth(
                ["serve"] + (one == "cluster-insecure" ? ["--\(one)"] : ["--\(one)", value])
                    + (other == "cluster-insecure" ? ["--\(other)"] : ["--\(other)", value]))
            #expect(both.status == 64)
            #expect(both.stderr.contains("give --\(one) or --\(other), not both"), "\(both.stderr)")
        }
    }

    /// `hearth serve | logger` where the logger is gone: the banner, which
    /// fails on stdout, comes on stderr, the server still answers after it,
    /// and SIGINT stops it with status 0 (it used to die of SIGILL, a
    /// `try!` on EPIPE). Tests/e2e/test_operator.py ClosedStdout also prints on
    /// SIGHUP once the server runs, and checks `watch`.
    @Test func serveOutlivesClosedStdout() throws {
        let binary = try #require(Self.binary, "the hearth executable was not built next to the tests")
        let data = FileManager.default.temporaryDirectory
            .appendingPathComponent("hearth-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let out = Pipe()
        let err = Pipe()
        try out.fileHandleForReading.close()  // no reader, from the start
        let process = Process()
        process.executableURL = binary
        process.arguments = ["serve", "--port", "0", "--data", data.path]
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // A server that never prints must not hang the tests.
        let pid = process.processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: watchdog)
        defer {
            watchdog.cancel()
            if process.isRunning { kill(pid, SIGKILL) }
        }
        var stderr = ""
        while !stderr.contains("stop with Ctrl-C") {
            let chunk = err.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            stderr += String(decoding: chunk, as: UTF8.self)
        }
        try #require(stderr.contains("stop with Ctrl-C"), "serve ended: \(stderr.prefix(500))")
        let listening = try #require(stderr.range(of: "listening on http://127.0.0.1:"))
        let url = "http://127.0.0.1:"
            + stderr[listening.upperBound...].prefix { $0.isNumber } + "/"
        // Real requests, after the lines that failed on stdout.
        #expect(try hearth("set", "/after", "1", "--url", url).status == 0)
        let get = try hearth("get", "/after", "--url", url)
        #expect(get.status == 0)
        #expect(get.stdout == "1\n")
        #expect(process.isRunning)
        // SIGINT stops it cleanly once it is handled (just after the banner).
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && !Self.handles(SIGINT, pid: pid) && Date() < deadline {
            usleep(10_000)
        }
        process.interrupt()
        let rest = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
        #expect(String(decoding: rest, as: UTF8.self).contains("stopped"))
    }

    /// Whether `signal` no longer ends process `pid` (ignored or caught),
    /// from /proc (true without it).
    static func handles(_ signal: Int32, pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            return true
        }
        var mask: UInt64 = 0
        for line in status.split(separator: "\n") where line.hasPrefix("SigIgn:") || line.hasPrefix("SigCgt:") {
            mask |= UInt64(line.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16) ?? 0
        }
        return (mask >> UInt64(signal - 1)) & 1 == 1
    }
}
