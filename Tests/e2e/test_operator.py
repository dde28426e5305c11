"""End-to-end tests of running `hearth serve` in production: TLS with the
Firebase Admin SDK over https (trusting a CA made here through
REQUESTS_CA_BUNDLE) and the certificate reloaded on SIGHUP; `hearth
profile`'s reports and raw stream against a known workload; `hearth backup`
under writes, a server killed with SIGKILL during a backup, and `hearth
restore` into a fresh directory that is then served; `hearth serve
--config` with options on the command line overriding the file; a
server whose stdout reader dies keeps serving (and a watch's ends).

Run: HEARTH_BIN=.build/debug/hearth python Tests/e2e/test_operator.py
"""

import json
import os
import queue
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from test_python_clients import HEARTH, Server, ServerCase, http, run_tests  # noqa: E402


def openssl(cwd, *args):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_ca(cwd, ca):
    openssl(cwd, "req", "-x509", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{ca}.key",
            "-out", f"{ca}.pem", "-days", "2", "-subj", f"/CN={ca}")


def make_cert(cwd, ca, name):
    with open(os.path.join(cwd, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl(cwd, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", "/CN=localhost")
    openssl(cwd, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem",
            "-CAkey", f"{ca}.key", "-set_serial", "9", "-days", "2",
            "-extfile", "san.ext", "-out", f"{name}.pem")


def https_get(port, path, cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}.json",
                                context=ctx, timeout=10) as r:
        return r.read().decode()


class TLS(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import firebase_admin
        from firebase_admin import credentials, db, _utils

        class Owner(credentials.Base):
            """The admin credential of a server without keys ("owner")."""

            def get_credential(self):
                return _utils.EmulatorAdminCredentials()

        cls.dir = tempfile.mkdtemp(prefix="hearth-e2e-tls-")
        cls.pki = os.path.join(cls.dir, "pki")
        os.mkdir(cls.pki)
        make_ca(cls.pki, "ca")
        make_cert(cls.pki, "ca", "server")
        cls.server = Server(os.path.join(cls.dir, "data"))
        cls.server.extra_args = [
            "--tls-cert", os.path.join(cls.pki, "server.pem"),
            "--tls-key", os.path.join(cls.pki, "server.key")]
        cls.server.start()
        os.environ.pop("FIREBASE_DATABASE_EMULATOR_HOST", None)
        os.environ["REQUESTS_CA_BUNDLE"] = os.path.join(cls.pki, "ca.pem")
        cls.app = firebase_admin.initialize_app(
            Owner(), {"databaseURL": f"https://127.0.0.1:{cls.server.port}"},
            name="hearth-e2e-tls")
        cls.db = db

    @classmethod
    def tearDownClass(cls):
        import firebase_admin
        firebase_admin.delete_app(cls.app)
        os.environ.pop("REQUESTS_CA_BUNDLE", None)
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def ref(self, path):
        return self.db.reference(path, app=self.app)

    def test_admin_sdk_over_https(self):
        self.ref("/users/ada").set({"name": "Ada", "born": 1815})
        self.assertEqual(self.ref("/users/ada/name").get(), "Ada")
        self.ref("/users").update({"bob/name": "Bob"})
        self.assertEqual(self.ref("/users/bob").get(), {"name": "Bob"})
        # A stream (server-sent events) over TLS.
        events = queue.Queue()
        reg = self.ref("/live").listen(events.put)
        try:
            first = events.get(timeout=10)
            self.assertEqual(first.data, None)
            self.ref("/live").set({"n": 1})
            while True:
                e = events.get(timeout=10)
                if e.data == {"n": 1} or e.data == 1:
                    break
        finally:
            reg.close()

    def test_sighup_reloads_certificate(self):
        make_ca(self.pki, "next")
        make_cert(self.pki, "next", "renewed")
        shutil.copy(os.path.join(self.pki, "renewed.pem"),
                    os.path.join(self.pki, "server.pem"))
        shutil.copy(os.path.join(self.pki, "renewed.key"),
                    os.path.join(self.pki, "server.key"))
        next_ca = os.path.join(self.pki, "next.pem")
        self.server.proc.send_signal(signal.SIGHUP)
        # The reload is asynchronous to us: poll until the new CA works.
        for _ in range(200):
            try:
                https_get(self.server.port, "/missing", next_ca)
                break
            except (ssl.SSLError, urllib.error.URLError):
                time.sleep(0.05)
        self.assertEqual(https_get(self.server.port, "/missing", next_ca), "null")
        with self.assertRaises(urllib.error.URLError):
            https_get(self.server.port, "/missing", os.path.join(self.pki, "ca.pem"))
        self.assertIsNone(self.server.proc.poll())  # SIGHUP did not end it


def https_put(port, path, value, cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}.json",
                                 data=json.dumps(value).encode(), method="PUT")
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        return r.read().decode()


def lines_of(stream):
    """A queue of the stream's lines, read by a thread; None at its end."""
    lines = queue.Queue()

    def read():
        with stream:
            for line in stream:
                lines.put(line)
        lines.put(None)
    threading.Thread(target=read, daemon=True).start()
    return lines


class Silence(AssertionError):
    """No line came in time."""


def wait_for_line(lines, text, timeout=10):
    """The lines up to the first holding text (Silence after timeout
    seconds, AssertionError at the end of the stream)."""
    seen = []
    deadline = time.time() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.time()))
        except queue.Empty:
            raise Silence(f"no {text!r} in {timeout} s: {''.join(seen)}")
        if line is None:
            raise AssertionError(f"no {text!r} before the end: {''.join(seen)}")
        seen.append(line)
        if text in line:
            return seen


def handles(pid, sig):
    """Whether sig no longer ends the process (ignored or caught)."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    mask = int(fields["SigIgn"], 16) | int(fields["SigCgt"], 16)
    return bool(mask >> (sig - 1) & 1)


class ClosedStdout(unittest.TestCase):
    """A reader of the output that goes away (`hearth serve | logger`, and
    logger dies) stops neither the server nor its printing: later lines go
    to stderr. A watch whose reader goes away ends as `yes | head` does."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hearth-e2e-stdout-")
        self.procs = []
        self.read_by_threads = []  # closed by their reader

    def tearDown(self):
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream and stream not in self.read_by_threads:
                    stream.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, *args):
        proc = subprocess.Popen([HEARTH, *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.procs.append(proc)
        return proc

    def test_serve_outlives_closed_stdout(self):
        pki = os.path.join(self.dir, "pki")
        os.mkdir(pki)
        make_ca(pki, "ca")
        make_cert(pki, "ca", "server")
        ca = os.path.join(pki, "ca.pem")
        proc = self.start(
            "serve", "--host", "127.0.0.1", "--port", "0",
            "--data", os.path.join(self.dir, "data"),
            "--tls-cert", os.path.join(pki, "server.pem"),
            "--tls-key", os.path.join(pki, "server.key"))
        first = proc.stdout.readline()
        self.assertIn("listening on https://127.0.0.1:", first)
        port = int(first.rsplit(":", 1)[1])
        proc.stdout.close()  # the reader dies: the pipe has no reader left
        err = lines_of(proc.stderr)
        self.read_by_threads.append(proc.stderr)
        # SIGHUP prints a line on the closed stdout; it comes on stderr.
        # The handler is set up after the first line: wait until SIGHUP no
        # longer kills, then send it until the reload is seen (one sent
        # before the handler listens is ignored).
        deadline = time.time() + 10
        while proc.poll() is None and not handles(proc.pid, signal.SIGHUP):
            self.assertLess(time.time(), deadline, "SIGHUP is never handled")
            time.sleep(0.01)
        problem = "SIGHUP never reloaded the certificate"
        for _ in range(20):
            if proc.poll() is not None:
                break
            proc.send_signal(signal.SIGHUP)
            try:
                wait_for_line(err, "TLS certificate reloaded", timeout=0.5)
                problem = None
                break
            except Silence:
                continue
            except AssertionError as e:  # stderr ended: the process ends
                problem = str(e)
                break
        if problem:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
            self.fail(f"serve's status {proc.returncode}: {problem}")
        # And the server still serves, after the print.
        self.assertEqual(https_put(port, "/after", {"n": 1}, ca), '{"n":1}')
        self.assertEqual(https_get(port, "/after/n", ca), "1")
        self.assertIsNone(proc.poll())
        while not handles(proc.pid, signal.SIGINT):  # just after SIGHUP
            self.assertLess(time.time(), deadline + 10, "SIGINT is never handled")
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        self.assertEqual(proc.wait(20), 0)
        wait_for_line(err, "stopped")

    def test_watch_ends_when_its_reader_goes(self):
        server = Server(os.path.join(self.dir, "data")).start()
        self.procs.append(server.proc)
        # child: a realtime client, which ignores SIGPIPE; put: URLSession.
        for events in ("child", "put"):
            with self.subTest(events=events):
                status, _ = http("PUT", server.url("/w"), {"a": 0})
                self.assertEqual(status, 200)
                proc = self.start("watch", "/w", "--events", events,
                                  "--url", f"http://127.0.0.1:{server.port}/")
                self.assertIn('"event":', proc.stdout.readline())
                proc.stdout.close()
                for i in range(200):  # each write prints a line
                    if proc.poll() is not None:
                        break
                    http("PUT", server.url(f"/w/k{i}"), i)
                    time.sleep(0.02)
                proc.wait(10)
                err = proc.stderr.read()
                # As `yes | head`: SIGPIPE, quietly (no trap, no crash dump).
                self.assertEqual(proc.returncode, -signal.SIGPIPE, err)
                self.assertEqual(err, "")


class Profile(ServerCase):
    dir_prefix = "hearth-e2e-profile-"

    def profiled(self, *extra):
        """Runs `hearth profile` over the workload; its stdout."""
        streams_before = self.profile_streams()
        proc = subprocess.Popen(
            [HEARTH, "profile", "--url", f"http://127.0.0.1:{self.server.port}",
             "--duration", "3s", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The barrier: the server counts the profile stream it began.
        for _ in range(200):
            if self.profile_streams() > streams_before:
                break
            time.sleep(0.02)
        for i in range(30):
            status, _ = http("PUT", self.server.url(f"/items/k{i}"), {"n": i})
            self.assertEqual(status, 200)
        for _ in range(2):
            http("GET", self.server.url("/items"))
        http("GET", self.server.url("/items", '?orderBy="$value"&limitToFirst=1'))
        out, err = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 0, err)
        return out

    def profile_streams(self):
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.server.port}/.metrics",
            headers={"Authorization": "Bearer owner"})
        with urllib.request.urlopen(req, timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith('hearth_requests_total{door="sse",type="GET",status="200"}'):
                    return float(line.split()[-1])
        return 0

    def test_reports(self):
        out = self.profiled()
        lines = out.splitlines()
        self.assertIn("Speed report", lines[0])
        puts = [l.split() for l in lines if l.startswith("PUT ")]
        # 30 sibling keys collapse into one row, as the service's does.
        self.assertEqual(len(puts), 1)
        self.assertEqual(puts[0][:3], ["PUT", "/items/$wildcard", "30"])
        float(puts[0][3]), float(puts[0][4])  # avg and p99 ms
        gets = [l.split() for l in lines if l.startswith("GET ") and "/items" in l]
        self.assertEqual(gets[0][:3], ["GET", "/items", "3"])
        bandwidth = lines[lines.index("Bandwidth report") + 2:]
        items = [l.split() for l in bandwidth if l.startswith("/items/$wildcard ")]
        # In: json.dumps writes {"n": i} (8 or 9 bytes); out: {"n":i}.
        self.assertEqual(items[0][1:3], [str(10 * 8 + 20 * 9), str(10 * 7 + 20 * 8)])

    def test_no_collapse(self):
        lines = self.profiled("--no-collapse").splitlines()
        puts = {l.split()[1] for l in lines if l.startswith("PUT ")}
        self.assertEqual(puts, {f"/items/k{i}" for i in range(30)})
        unindexed = lines[lines.index("Unindexed queries") + 2:]
        self.assertEqual(unindexed[0].split(), ["GET", "/items", "1"])

    def test_raw(self):
        out = self.profiled("--raw")
        ops = [json.loads(l) for l in out.splitlines()]
        puts = [o for o in ops if o["type"] == "PUT"]
        self.assertEqual(len(puts), 30)
        self.assertEqual({o["path"] for o in puts}, {f"/items/k{i}" for i in range(30)})
        self.assertTrue(all(o["write"] and o["status"] == "200" for o in puts))
        self.assertEqual(sum(o["unindexed"] for o in ops), 1)


def hearth(*args):
    proc = subprocess.run([HEARTH, *args], capture_output=True, text=True,
                          timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def prefix_length(data):
    """n when data holds /w/0 .. /w/n-1 with their values; -1 otherwise."""
    w = (data or {}).get("w") or {}
    values = w if isinstance(w, list) else [w.get(str(k)) for k in range(len(w))]
    return len(values) if values == list(range(len(values))) else -1


class Writer(threading.Thread):
    """PUTs /w/0, /w/1, ... one after another until stopped."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.acked, self.stopped = server, 0, False

    def run(self):
        while not self.stopped:
            status, _ = http("PUT", self.server.url(f"/w/{self.acked}"),
                             self.acked)
            if status != 200:
                return
            self.acked += 1


class Backup(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hearth-e2e-backup-")
        self.data = os.path.join(self.dir, "data")
        self.server = Server(self.data).start()

    def tearDown(self):
        if self.server.proc.poll() is None:
            self.server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def backup_during_writes(self, *source):
        writer = Writer(self.server)
        writer.start()
        while writer.acked < 20:
            time.sleep(0.01)
        out = os.path.join(self.dir, "backup.json")
        before = writer.acked
        code, _, err = hearth("backup", *source, out)
        writer.stopped = True
        writer.join()
        self.assertEqual(code, 0, err)
        with open(out) as f:
            n = prefix_length(json.load(f))
        self.assertGreaterEqual(n, before)  # every acknowledged write
        self.assertLessEqual(n, writer.acked)
        return out

    def test_backup_by_url_under_writes(self):
        self.backup_during_writes("--url", f"http://127.0.0.1:{self.server.port}")

    def test_backup_of_directory_under_writes(self):
        self.backup_during_writes("--data", self.data)

    def test_server_killed_during_backup_keeps_its_data(self):
        writer = Writer(self.server)
        writer.start()
        while writer.acked < 50:
            time.sleep(0.01)
        writer.stopped = True
        writer.join()
        backup = subprocess.Popen(
            [HEARTH, "backup", "--url", f"http://127.0.0.1:{self.server.port}",
             os.path.join(self.dir, "b.json")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.server.stop(signal.SIGKILL)
        backup.wait(timeout=30)
        self.server.start()
        status, data = http("GET", self.server.url("/"))
        self.assertEqual(prefix_length(data), writer.acked)

    def test_restore_into_fresh_directory_and_serve(self):
        http("PUT", self.server.url("/p"), {".value": 1, ".priority": "hi"})
        out = self.backup_during_writes("--url", f"http://127.0.0.1:{self.server.port}")
        with open(out) as f:
            saved = json.load(f)
        fresh = os.path.join(self.dir, "fresh")
        code, _, err = hearth("restore", "--data", fresh, out)
        self.assertEqual(code, 0, err)
        # Into a directory with data: refused without --force.
        code, _, err = hearth("restore", "--data", fresh, out)
        self.assertEqual(code, 1)
        self.assertIn("already holds data", err)
        restored = Server(fresh).start()
        try:
            status, data = http("GET", restored.url("/", "?format=export"))
            self.assertEqual(status, 200)
            self.assertEqual(data["p"], {".value": 1, ".priority": "hi"})
            self.assertEqual(prefix_length(data), prefix_length(saved))
        finally:
            restored.stop()


class ConfigFile(unittest.TestCase):
    def test_file_with_overrides_and_unknown_keys(self):
        from test_python_clients import free_port
        tmp = tempfile.mkdtemp(prefix="hearth-e2e-config-")
        try:
            path = os.path.join(tmp, "hearth.json")
            file_port, flag_port = free_port(), free_port()
            with open(path, "w") as f:
                json.dump({"port": file_port, "data": os.path.join(tmp, "d"),
                           "fsync": "off", "log-format": "json",
                           "header-timeout": 5}, f)
            proc = subprocess.Popen(
                [HEARTH, "serve", "--config", path, "--port", str(flag_port)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                server = Server(os.path.join(tmp, "d"), port=flag_port)
                for _ in range(200):  # until it listens
                    try:
                        status, _ = http("PUT", server.url("/x"), 1)
                        break
                    except OSError:
                        time.sleep(0.05)
                self.assertEqual(status, 200)
                # The file's data directory holds it.
                self.assertTrue(os.path.isdir(os.path.join(tmp, "d", "default")))
            finally:
                proc.send_signal(signal.SIGTERM)
                out, err = proc.communicate(timeout=20)
            self.assertIn(f"listening on http://127.0.0.1:{flag_port}", out)
            events = [json.loads(l) for l in err.splitlines()]  # the file's log format
            self.assertEqual(events[0]["event"], "start")
            with open(path, "w") as f:
                json.dump({"port": 1, "tls-certificate": "x.pem"}, f)
            code, _, err = hearth("serve", "--config", path)
            self.assertEqual(code, 64)
            self.assertIn('unknown key "tls-certificate"', err)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_file_values_are_read_as_the_options_types(self):
        """A value of the wrong JSON type is refused naming the key and the
        type (it used to start {"port": true} on port 1); a value starting
        with "-" is a value; bad JSON names its line and column."""
        from test_python_clients import free_port
        tmp = tempfile.mkdtemp(prefix="hearth-e2e-config-")
        try:
            path = os.path.join(tmp, "hearth.json")
            with open(path, "w") as f:
                json.dump({"port": True, "data": os.path.join(tmp, "d")}, f)
            code, _, err = hearth("serve", "--config", path)
            self.assertEqual(code, 64, err)
            self.assertIn('"port" must be an integer, not true', err)
            with open(path, "w") as f:
                f.write('{"port": 9000,\n "data": "d"\n "fsync": "off"}')
            code, _, err = hearth("serve", "--config", path)
            self.assertEqual(code, 64, err)
            self.assertIn("invalid JSON at line 3, column", err)
            port = free_port()
            with open(path, "w") as f:
                json.dump({"port": port, "data": "-d"}, f)  # relative to cwd
            proc = subprocess.Popen([os.path.abspath(HEARTH), "serve", "--config", path], cwd=tmp,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                server = Server(os.path.join(tmp, "-d"), port=port)
                status = wait_for_put(server)
                self.assertEqual(status, 200)
                self.assertTrue(os.path.isdir(os.path.join(tmp, "-d", "default")))
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.communicate(timeout=20)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_command_line_secret_file_overrides_the_files_secret(self):
        """admin-secret in the file and --admin-secret-file on the command
        line: the command line's secret is the admin's (it used to be
        refused as "not both")."""
        from test_python_clients import free_port
        tmp = tempfile.mkdtemp(prefix="hearth-e2e-config-")
        try:
            path = os.path.join(tmp, "hearth.json")
            port = free_port()
            with open(path, "w") as f:
                json.dump({"port": port, "data": os.path.join(tmp, "d"),
                           "admin-secret": "the-files-admin-secret-0123"}, f)
            secret_file = os.path.join(tmp, "admin.txt")
            with open(secret_file, "w") as f:
                f.write("the-command-lines-secret-0123\n")
            proc = subprocess.Popen(
                [HEARTH, "serve", "--config", path, "--admin-secret-file", secret_file],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                server = Server(os.path.join(tmp, "d"), port=port)
                wait_for_put(server)
                usage = server.url("/.settings/usage")
                status, _ = http("GET", usage, headers={
                    "Authorization": "Bearer the-command-lines-secret-0123"})
                self.assertEqual(status, 200)
                status, _ = http("GET", usage, headers={
                    "Authorization": "Bearer the-files-admin-secret-0123"})
                self.assertEqual(status, 401)
            finally:
                proc.send_signal(signal.SIGTERM)
                out, err = proc.communicate(timeout=20)
            self.assertIn("the admin is the --admin-secret", out, err)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def wait_for_put(server):
    """The status of a PUT once the server listens (it may be starting)."""
    for _ in range(200):
        try:
            status, _ = http("PUT", server.url("/x"), 1)
            return status
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the server never listened")


if __name__ == "__main__":
    run_tests(__name__)
