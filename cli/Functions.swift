import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `hearth serve --functions DIR`: a Python functions folder laid out as
/// the Firebase tooling expects it (`DIR/main.py`, its dependencies in
/// `DIR/venv`), run as that tooling runs it. Its manifest comes from the
/// SDK's admin server (`python -m firebase_functions.private.serving` with
/// `ADMIN_PORT`, `GET /__/functions.yaml`, then `/__/quitquitquit`); each
/// database-triggered function then runs under `functions-framework`
/// (`--signature-type cloudevent`) on a port of its own, with the
/// environment the emulator sets, so that `initialize_app()` with no
/// arguments writes back to this server; and the server delivers the
/// function's events to it. The processes stop with the server, even one
/// killed with SIGKILL: each runs under a small guardian holding the read
/// end of a pipe whose only writer is this process, and the end of that
/// pipe (the server closing it, or the kernel when the server dies) stops
/// the function.
final class FunctionsRunner {
    struct Function {
        let name: String
        let eventType: String
        let ref: String
        let instance: String
        let port: Int
    }

    let directory: String
    let namespace: String
    let projectId: String
    private(set) var functions: [Function] = []
    private(set) var skipped: [String] = []
    private var processes: [Process] = []
    private var lifelines: [FileHandle] = [] /* the pipes' write ends */
    private let stopping = Locked<Bool>() /* set once stop() begins */

    init(directory: String, namespace: String) {
        self.directory = directory
        self.namespace = namespace
        let environment = ProcessInfo.processInfo.environment
        self.projectId = environment["GCLOUD_PROJECT"] ?? "demo-\(namespace)"
    }

    private var venvBin: String { directory + "/venv/bin" }

    /// The environment the emulator gives functions (host:port: this
    /// server's realtime and REST address).
    private func environment(databaseHost: String) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        let config: [String: String] = [
            "databaseURL": "https://\(namespace).firebaseio.com",
            "projectId": projectId,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: config, options: [.sortedKeys])) ?? Data()
        env["FIREBASE_CONFIG"] = String(decoding: data, as: UTF8.self)
        env["GCLOUD_PROJECT"] = projectId
        env["FIREBASE_DATABASE_EMULATOR_HOST"] = databaseHost
        env["FUNCTIONS_EMULATOR"] = "true"
        env["VIRTUAL_ENV"] = directory + "/venv"
        env["PATH"] = venvBin + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["PYTHONUNBUFFERED"] = "1"
        return env
    }

    /// Checks the folder and reads the manifest; throws a message naming
    /// what is missing or what the SDK said.
    func discover(databaseHost: String) throws {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDir), isDir.boolValue else {
            throw FunctionsError("--functions \(directory): not a directory")
        }
        guard FileManager.default.fileExists(atPath: directory + "/main.py") else {
            throw FunctionsError("--functions \(directory): no main.py (a Python functions folder has DIR/main.py and DIR/venv)")
        }
        guard FileManager.default.isExecutableFile(atPath: venvBin + "/python") else {
            throw FunctionsError("--functions \(directory): no venv/bin/python (create it: python3 -m venv \(directory)/venv; \(directory)/venv/bin/pip install firebase-functions functions-framework)")
        }
        guard FileManager.default.isExecutableFile(atPath: venvBin + "/functions-framework") else {
            throw FunctionsError("--functions \(directory): no venv/bin/functions-framework (\(directory)/venv/bin/pip install functions-framework)")
        }
        let adminPort = try Self.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: venvBin + "/python")
        process.arguments = ["-c", Self.manifestScript, String(adminPort)]
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.environment = environment(databaseHost: databaseHost)
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let manifest = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let object = try? JSONSerialization.jsonObject(with: manifest) as? [String: Any]
        else {
            throw FunctionsError("--functions \(directory): cannot read the functions' manifest: "
                + String(decoding: errors, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let endpoints = object["endpoints"] as? [String: Any] ?? [:]
        for id in endpoints.keys.sorted() {
            guard let endpoint = endpoints[id] as? [String: Any],
                  let trigger = endpoint["eventTrigger"] as? [String: Any],
                  let type = trigger["eventType"] as? String,
                  type.hasPrefix("google.firebase.database.ref.v1.")
            else {
                skipped.append(id)
                continue
            }
            let filters = trigger["eventFilters"] as? [String: Any] ?? [:]
            let patterns = trigger["eventFilterPathPatterns"] as? [String: Any] ?? [:]
            guard let ref = patterns["ref"] as? String ?? filters["ref"] as? String else {
                skipped.append(id)
                continue
            }
            let instance = filters["instance"] as? String ?? patterns["instance"] as? String ?? "*"
            let entryPoint = endpoint["entryPoint"] as? String ?? id
            functions.append(Function(name: entryPoint, eventType: type, ref: ref,
                                      instance: instance, port: try Self.freePort()))
        }
    }

    /// The registrations of the discovered functions, for the server.
    func triggersJSON() -> String {
        let list: [[String: Any]] = functions.map {
            ["name": $0.name, "event": $0.eventType, "ref": $0.ref, "instance": $0.instance,
             "url": "http://127.0.0.1:\($0.port)/"]
        }
        let data = (try? JSONSerialization.data(withJSONObject: ["triggers": list], options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// Starts each function under functions-framework (output to ours).
    func start(databaseHost: String) throws {
        for function in functions {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: venvBin + "/python")
            process.arguments = ["-c", Self.guardianScript, venvBin + "/functions-framework",
                                 "--target", function.name, "--signature-type", "cloudevent",
                                 "--host", "127.0.0.1", "--port", String(function.port)]
            let lifeline = Pipe()
            // Only this process may hold the write end: a function started
            // later must not inherit it, or its end would never come.
            _ = fcntl(lifeline.fileHandleForWriting.fileDescriptor, F_SETFD, FD_CLOEXEC)
            process.standardInput = lifeline
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            var env = environment(databaseHost: databaseHost)
            env["FUNCTION_TARGET"] = function.name
            env["FUNCTION_SIGNATURE_TYPE"] = "cloudevent"
            env["K_SERVICE"] = function.name
            env["PORT"] = String(function.port)
            process.environment = env
            let name = function.name, stopping = self.stopping
            // A function that ends by itself (an import error in main.py,
            // a crash) is said at once: its events wait, retried, until
            // the server runs again.
            process.terminationHandler = { ended in
                if stopping.value != true {
                    Output.error("\(Output.errorLabel)function \(name) exited (status \(ended.terminationStatus)); its events wait in its queue until it runs again")
                }
            }
            do {
                try process.run()
            } catch {
                stop()
                throw FunctionsError("--functions: cannot start functions-framework for \(function.name): \(error)")
            }
            processes.append(process)
            lifelines.append(lifeline.fileHandleForWriting)
        }
    }

    /// Stops the functions: their lifelines closed (each guardian sends
    /// SIGINT, gunicorn's quick shutdown, then SIGKILL after 5 s), then
    /// SIGKILL for any guardian still running after 7 s.
    func stop() {
        stopping.set(true)
        for lifeline in lifelines {
            try? lifeline.close()
        }
        lifelines.removeAll()
        let deadline = Date().addingTimeInterval(7)
        for process in processes {
            while process.isRunning && Date() < deadline {
                usleep(20_000)
            }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        processes.removeAll()
    }

    /// A port free on loopback now (the kernel's pick).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FunctionsError("--functions: cannot make a socket") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, len) == 0 && getsockname(fd, pointer, &len) == 0
            }
        }
        guard bound else { throw FunctionsError("--functions: cannot find a free port") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Run by the folder's own Python in front of each functions-framework
    /// (its command line): the function runs until it ends by itself (its
    /// status is the guardian's), or until standard input, the server's
    /// lifeline, ends: then SIGINT, and SIGKILL after 5 s. The function
    /// runs in a process group of its own and the signals go to the whole
    /// group: gunicorn's workers, which hold the port, end with it.
    static let guardianScript = #"""
import os, signal, subprocess, sys, threading
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL,
                         start_new_session=True)
def group(sig):
    try:
        os.killpg(child.pid, sig)
    except OSError:
        pass
def lifeline():
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    group(signal.SIGINT)
    try:
        child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    group(signal.SIGKILL)  # what is left of the group: workers included
    os._exit(0)
threading.Thread(target=lifeline, daemon=True).start()
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, lambda n, _: group(n))
status = child.wait()
group(signal.SIGKILL)  # a worker its master left behind
sys.exit(status if status >= 0 else 128 - status)
"""#

    /// Run by the folder's own Python: starts the SDK's admin server as
    /// the Firebase tooling does (ADMIN_PORT, the folder as its working
    /// directory), waits for its manifest, prints it as JSON (the SDK
    /// depends on PyYAML), and asks the server to quit.
    static let manifestScript = #"""
import json, os, subprocess, sys, time, urllib.error, urllib.request
import yaml
port = sys.argv[1]
env = dict(os.environ, ADMIN_PORT=port)
admin = subprocess.Popen([sys.executable, "-m", "firebase_functions.private.serving"],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
base = "http://127.0.0.1:" + port
deadline = time.time() + 60
body = None
try:
    while body is None:
        if admin.poll() is not None:
            sys.exit("the admin server ended: " + admin.stderr.read().decode(errors="replace")[-2000:])
        try:
            body = urllib.request.urlopen(base + "/__/functions.yaml", timeout=30).read()
        except urllib.error.HTTPError as e:
            sys.exit("the admin server answered %d (is main.py importable?)" % e.code)
        except OSError:
            if time.time() > deadline:
                sys.exit("the admin server did not answer within 60 s")
            time.sleep(0.1)
    print(json.dumps(yaml.safe_load(body)))
finally:
    try:
        urllib.request.urlopen(base + "/__/quitquitquit", timeout=5).read()
    except OSError:
        pass
    try:
        admin.wait(timeout=5)
    except subprocess.TimeoutExpired:
        admin.kill()
"""#
}

struct FunctionsError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
