"""End-to-end tests of database triggers (README "Triggers") against a real
`hearth serve`:

- Delivery to a real HTTP receiver registered with --triggers FILE: every
  event in commit order, across an outage of the endpoint (down for
  HEARTH_TRIGGERS_DOWN_S seconds, default 30, while writes go on); events
  acknowledged before a kill -9 of the server delivered after its restart;
  an endpoint that always fails dead-lettered while another trigger's
  events flow; realtime (WebSocket) writes fire as REST ones do.
- The Python Cloud Functions SDK (firebase-functions, run by
  functions-framework, installed with pip; nobody here wrote them): `hearth serve
  --functions DIR` discovers the quickstart's handlers from their source
  folder, fires them on REST and realtime writes, and the handlers write
  back through the Admin SDK; what the handlers saw (event.data, before /
  after, params) is checked. Skipped, saying why, when the SDK's venv
  ($HEARTH_FUNCTIONS_VENV, made by `make test-e2e`) could not be installed.

Run: HEARTH_BIN=.build/debug/hearth python Tests/e2e/test_triggers.py
"""

import http.server as httpserver
import json
import os
import shutil
import signal
import ssl
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from test_python_clients import HEARTH, Server, free_port, http, run_tests  # noqa: E402

OWNER = {"Authorization": "Bearer owner"}
DOWN_S = float(os.environ.get("HEARTH_TRIGGERS_DOWN_S", "30"))
FUNCTIONS_VENV = os.environ.get("HEARTH_FUNCTIONS_VENV", "build/functions-venv")


class Receiver:
    """An HTTP endpoint on a port that records each JSON body it takes;
    `status` is what it answers. stop() closes the port (connections are
    refused until start() again on the same port)."""

    def __init__(self, port=None, status=200, tls=None):
        self.port = port or free_port()
        self.status = status
        self.tls = tls  # an ssl.SSLContext: an https:// endpoint
        self.bodies = []
        self.lock = threading.Condition()
        self.server = None
        self.connections = []

    def start(self):
        receiver = self

        class Handler(httpserver.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with receiver.lock:
                    receiver.connections.append(self.connection)

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.status == 200:
                    with receiver.lock:
                        receiver.bodies.append(
                            (dict(self.headers), json.loads(body)))
                        receiver.lock.notify_all()
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = httpserver.ThreadingHTTPServer(("127.0.0.1", self.port),
                                                      Handler)
        self.server.daemon_threads = True
        if self.tls:
            self.server.socket = self.tls.wrap_socket(self.server.socket,
                                                      server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        """Down as a killed process is: the port closed, and the
        connections kept alive with it."""
        self.server.shutdown()
        self.server.server_close()
        with self.lock:
            for c in self.connections:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.connections = []

    def wait(self, n, timeout=60, key=json.dumps):
        """The bodies once n distinct ones (by key) arrived; fails the
        test after timeout."""
        deadline = time.time() + timeout
        with self.lock:
            while True:
                bodies = [b for _, b in self.bodies]
                if len(first_seen([key(b) for b in bodies])) >= n:
                    return bodies
                if time.time() >= deadline:
                    raise AssertionError(
                        f"{len(bodies)} events ({n} distinct wanted) arrived "
                        f"in {timeout} s")
                self.lock.wait(deadline - time.time())


def first_seen(values):
    """values in order of first appearance (at least once: a repeat is
    allowed, a reordering is not)."""
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def self_signed(directory, name):
    """A certificate for 127.0.0.1 signed by its own key (cert, key)."""
    cert = os.path.join(directory, name + ".pem")
    key = os.path.join(directory, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out",
                    cert], check=True, capture_output=True)
    return cert, key


def tls_context(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


def triggers_file(directory, triggers):
    path = os.path.join(directory, "triggers.json")
    with open(path, "w") as f:
        json.dump({"triggers": triggers}, f)
    return path


class Delivery(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hearth-e2e-triggers-")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            if s.proc and s.proc.poll() is None:
                s.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def serve(self, triggers, port=None):
        s = Server(os.path.join(self.dir, "data"), port=port)
        s.extra_args = ["--triggers", triggers_file(self.dir, triggers)]
        self.servers.append(s)
        return s.start()

    def test_order_across_an_outage(self):
        rx = Receiver().start()
        s = self.serve([{"name": "items", "ref": "/items/{id}",
                         "url": f"http://127.0.0.1:{rx.port}/",
                         "retry_max_ms": 2000, "max_attempts": 1000}])
        for i in range(10):
            self.assertEqual(http("PUT", s.url(f"/items/i{i % 3}"), {"n": i})[0], 200)
        got = rx.wait(10)
        self.assertEqual([e["data"]["delta"]["n"] for e in got[:3]], [0, 1, 2])
        rx.stop()  # the function goes down; writes go on
        for i in range(10, 20):
            self.assertEqual(http("PUT", s.url(f"/items/i{i % 3}"), {"n": i})[0], 200)
        time.sleep(DOWN_S)
        rx = Receiver(rx.port).start()
        rx.bodies = [(None, b) for b in got]
        got = rx.wait(20, timeout=60, key=lambda e: e["id"])
        ns = first_seen([e["data"]["delta"]["n"] if e["data"]["data"] is None
                         else e["data"]["data"]["n"] * 1000 + e["data"]["delta"]["n"]
                         for e in got])
        # n for a creation; 1000*old+new for an update: commit order, none lost
        want = [0, 1, 2] + [(i - 3) * 1000 + i for i in range(3, 20)]
        self.assertEqual(ns, want)
        deadline = time.time() + 10  # counted once the answer is read
        while True:
            _, listed = http("GET", s.url("/.settings/triggers"), headers=OWNER)
            stats = listed["triggers"][0]["stats"]
            if stats["lag"] == 0 or time.time() > deadline:
                break
            time.sleep(0.02)
        self.assertEqual(stats["lag"], 0)
        self.assertGreater(stats["retried"], 0)
        self.assertEqual(stats["dead"], 0)

    def test_https_endpoints(self):
        """An https:// endpoint whose certificate the server trusts (its
        SSL_CERT_FILE) takes events; one it does not trust takes none, and
        the trigger's last error names the certificate."""
        trusted = self_signed(self.dir, "trusted")
        stranger = self_signed(self.dir, "stranger")
        good = Receiver(tls=tls_context(*trusted)).start()
        bad = Receiver(tls=tls_context(*stranger)).start()
        os.environ["SSL_CERT_FILE"] = trusted[0]
        try:
            s = self.serve([
                {"name": "good", "ref": "/tls/{id}",
                 "url": f"https://127.0.0.1:{good.port}/hook?x=1"},
                {"name": "bad", "ref": "/tls/{id}", "retry_min_ms": 20,
                 "url": f"https://127.0.0.1:{bad.port}/"}])
        finally:
            del os.environ["SSL_CERT_FILE"]
        for i in range(5):
            self.assertEqual(http("PUT", s.url(f"/tls/k{i}"), i)[0], 200)
        got = good.wait(5)
        self.assertEqual(first_seen([e["data"]["delta"] for e in got]),
                         list(range(5)))
        deadline = time.time() + 20
        while True:
            _, listed = http("GET", s.url("/.settings/triggers"), headers=OWNER)
            by_name = {t["name"]: t["stats"] for t in listed["triggers"]}
            error = by_name["bad"]["last_error"] or ""
            if "certificate" in error or time.time() > deadline:
                break
            time.sleep(0.05)
        self.assertIn("certificate", error)
        self.assertEqual(bad.bodies, [])
        self.assertEqual(by_name["bad"]["delivered"], 0)
        good.stop()
        bad.stop()

    def test_kill9_then_restart_delivers(self):
        port = free_port()
        trig = [{"name": "jobs", "ref": "/jobs/{id}", "event": "created",
                 "url": f"http://127.0.0.1:{port}/", "retry_min_ms": 20,
                 "retry_max_ms": 200}]
        s = self.serve(trig)
        for i in range(10):  # acknowledged while nobody listens
            self.assertEqual(http("PUT", s.url(f"/jobs/j{i:02d}"), {"i": i})[0], 200)
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait()
        s2 = self.serve(trig, port=s.port)
        rx = Receiver(port).start()
        got = rx.wait(10)
        self.assertEqual(first_seen([e["ref"] for e in got]),
                         [f"jobs/j{i:02d}" for i in range(10)])
        rx.stop()
        s2.stop()

    def test_dead_letters_hold_nothing_else_up(self):
        bad = Receiver(status=500).start()
        good = Receiver().start()
        s = self.serve([
            {"name": "bad", "ref": "/t/{id}", "max_attempts": 3,
             "retry_min_ms": 10, "url": f"http://127.0.0.1:{bad.port}/"},
            {"name": "good", "ref": "/t/{id}", "format": "webhook",
             "url": f"http://127.0.0.1:{good.port}/"}])
        for i in range(5):
            http("PUT", s.url(f"/t/x{i}"), i)
        got = good.wait(5)
        self.assertEqual([b["path"] for b in got], [f"/t/x{i}" for i in range(5)])
        deadline = time.time() + 30
        dead = []
        while time.time() < deadline and len(dead) < 5:
            _, dead = http("GET", s.url("/.settings/triggers/bad/dead"), headers=OWNER)
            time.sleep(0.05)
        self.assertEqual([d["ref"] for d in dead], [f"t/x{i}" for i in range(5)])
        req = urllib.request.Request(f"http://127.0.0.1:{s.port}/.metrics",
                                     headers=OWNER)
        with urllib.request.urlopen(req, timeout=10) as r:
            metrics = r.read().decode()
        self.assertIn('hearth_trigger_dead_total{trigger="bad"} 5', metrics)
        self.assertIn('hearth_trigger_delivered_total{trigger="good"} 5', metrics)
        bad.stop()
        good.stop()

    def test_no_triggers(self):
        """serve --no-triggers fires nothing; import and restore
        --no-triggers fire nothing; the same without fire. Absence is
        proven by a write made after, whose event arrives: delivery is in
        order, so one queued before it would have come first."""
        rx = Receiver().start()
        trig = [{"name": "seen", "ref": "/s/{id}", "format": "webhook",
                 "url": f"http://127.0.0.1:{rx.port}/"}]
        s = self.serve(trig)
        s.stop()
        s.extra_args.append("--no-triggers")
        s.start()
        self.assertEqual(http("PUT", s.url("/s/off"), 1)[0], 200)
        code, body = http("GET", s.url("/.settings/triggers"), headers=OWNER)
        self.assertEqual(code, 501)
        self.assertIn("--no-triggers", body["error"])
        s.stop()
        s.extra_args.remove("--no-triggers")
        s.start()
        src = os.path.join(self.dir, "import.json")
        with open(src, "w") as f:
            json.dump({"a": 1}, f)

        def run(*args):
            out = subprocess.run([HEARTH, *args, "--url",
                                  f"http://127.0.0.1:{s.port}/"],
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)

        run("import", src, "--path", "/s/quiet", "--no-triggers")
        backup = os.path.join(self.dir, "backup.json")
        with open(backup, "w") as f:
            json.dump({"s": {"quiet2": {"a": 1}}}, f)
        run("restore", backup, "--path", "/s/quiet2", "--no-triggers")
        self.assertEqual(http("PUT", s.url("/s/after"), 2)[0], 200)
        run("import", src, "--path", "/s/loud")
        got = rx.wait(2)
        self.assertEqual([b["path"] for b in got], ["/s/after", "/s/loud"])
        # the quiet writes happened, and triggers=off is the admin's only
        self.assertEqual(http("GET", s.url("/s/quiet"))[1], {"a": 1})
        self.assertEqual(http("GET", s.url("/s/quiet2"))[1], {"a": 1})
        code, _ = http("PUT", s.url("/s/x", "?triggers=off"), 1)
        self.assertEqual(code, 403)
        code, body = http("PUT", s.url("/s/x", "?triggers=maybe"), 1,
                          headers=OWNER)
        self.assertEqual(code, 400)
        self.assertIn("triggers must be", body["error"])
        rx.stop()

    def test_realtime_writes_fire(self):
        import websocket  # websocket-client, as test_python_clients uses
        rx = Receiver().start()
        s = self.serve([{"name": "rt", "ref": "/rooms/{room}/messages/{m}",
                         "event": "written",
                         "url": f"http://127.0.0.1:{rx.port}/"}])
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{s.port}/.ws?ns=default&v=5", timeout=10)
        ws.recv()  # the hello
        ws.send(json.dumps({"t": "d", "d": {"r": 1, "a": "m", "b": {
            "p": "/rooms/r1/messages", "d": {"a": "hi", "b": "yo"}}}}))
        while json.loads(ws.recv())["d"].get("r") != 1:
            pass
        ws.close()
        got = rx.wait(2)
        self.assertEqual(sorted(e["ref"] for e in got),
                         ["rooms/r1/messages/a", "rooms/r1/messages/b"])
        self.assertEqual({e["authtype"] for e in got}, {"unauthenticated"})
        self.assertEqual({e["type"] for e in got},
                         {"google.firebase.database.ref.v1.written"})


MAIN_PY = '''
from firebase_functions import db_fn
from firebase_admin import initialize_app, db

initialize_app()


@db_fn.on_value_created(reference="/messages/{pushId}/original")
def makeuppercase(event: db_fn.Event) -> None:
    """The quickstart: upper-cases a new message into a sibling."""
    original = event.data
    db.reference(f"/messages/{event.params['pushId']}/uppercase").set(original.upper())
    db.reference(f"/seen/created/{event.params['pushId']}").set({
        "data": event.data, "params": event.params, "ref": event.reference,
        "instance": event.instance, "auth_type": event.auth_type,
        "type": event.type})


@db_fn.on_value_written(reference="/counters/{name}")
def countwrites(event: db_fn.Event) -> None:
    db.reference(f"/seen/written/{event.params['name']}").push({
        "before": event.data.before, "after": event.data.after})


@db_fn.on_value_updated(reference="/profiles/{uid}")
def profileupdated(event: db_fn.Event) -> None:
    db.reference(f"/seen/updated/{event.params['uid']}").push({
        "before": event.data.before, "after": event.data.after})


@db_fn.on_value_deleted(reference="/profiles/{uid}")
def profiledeleted(event: db_fn.Event) -> None:
    db.reference(f"/seen/deleted/{event.params['uid']}").set({
        "data": event.data, "type": event.type})
'''


def functions_venv_problem():
    """Why the functions SDK's venv cannot be used, or None."""
    for tool in ("python", "functions-framework"):
        if not os.access(os.path.join(FUNCTIONS_VENV, "bin", tool), os.X_OK):
            return (f"no {FUNCTIONS_VENV}/bin/{tool}: `make test-e2e` installs "
                    "firebase-functions and functions-framework there (it "
                    "could not here)")
    check = subprocess.run([os.path.join(FUNCTIONS_VENV, "bin", "python"), "-c",
                            "import firebase_functions, firebase_admin"],
                           capture_output=True, text=True)
    if check.returncode:
        return "the functions venv lacks the SDK: " + check.stderr[-300:]
    return None


@unittest.skipIf(functions_venv_problem(), functions_venv_problem())
def serve_functions(src, port, data):
    """`hearth serve --functions src`, once it says it is ready: (the
    process, its log file)."""
    log = open(data + ".log", "w+")
    proc = subprocess.Popen(
        [HEARTH, "serve", "--port", str(port), "--data", data,
         "--functions", src],
        stdout=log, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        log.seek(0)
        if "stop with Ctrl-C" in log.read():
            return proc, log
        if proc.poll() is not None:
            log.seek(0)
            raise RuntimeError("hearth serve --functions exited: " + log.read())
        time.sleep(0.1)
    raise RuntimeError("hearth serve --functions was not ready in 60 s")


def function_ports(port):
    _, listed = http("GET", f"http://127.0.0.1:{port}/.settings/triggers.json",
                     headers=OWNER)
    return [int(t["url"].rsplit(":", 1)[1].strip("/")) for t in listed["triggers"]]


def wait_ports(ports, closed, timeout=30):
    """True once every port is closed (or, closed False, listened on)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(port_closed(p) == closed for p in ports):
            return True
        time.sleep(0.1)
    return False


def port_closed(port):
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
        return False
    except OSError:
        return True


class PythonFunctions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="hearth-e2e-functions-")
        cls.src = os.path.join(cls.dir, "functions")
        os.mkdir(cls.src)
        with open(os.path.join(cls.src, "main.py"), "w") as f:
            f.write(MAIN_PY)
        os.symlink(os.path.abspath(FUNCTIONS_VENV), os.path.join(cls.src, "venv"))
        cls.port = free_port()
        cls.proc, cls.log = serve_functions(cls.src, cls.port,
                                            os.path.join(cls.dir, "data"))

    @classmethod
    def tearDownClass(cls):
        if cls.proc.poll() is None:
            cls.proc.send_signal(signal.SIGINT)
            cls.proc.wait(timeout=30)
        cls.log.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}.json"

    def wait_for(self, path, want, timeout=90):
        deadline = time.time() + timeout
        got = None
        while time.time() < deadline:
            _, got = http("GET", self.url(path))
            if got == want or (callable(want) and want(got)):
                return got
            time.sleep(0.1)
        self.log.seek(0)
        self.fail(f"{path} is {got!r}, not {want!r}; server log:\n{self.log.read()[-4000:]}")

    def test_1_discovered_functions(self):
        self.log.seek(0)
        text = self.log.read()
        self.assertIn("function makeuppercase: google.firebase.database.ref.v1.created "
                      "on messages/{pushId}/original", text)
        self.assertIn("function countwrites: google.firebase.database.ref.v1.written", text)
        _, listed = http("GET", self.url("/.settings/triggers"), headers=OWNER)
        self.assertEqual(sorted(t["name"] for t in listed["triggers"]),
                         ["countwrites", "makeuppercase", "profiledeleted",
                          "profileupdated"])

    def test_2_uppercase_by_rest_and_realtime(self):
        import websocket
        self.assertEqual(http("PUT", self.url("/messages/m1/original"), "hello")[0], 200)
        self.wait_for("/messages/m1/uppercase", "HELLO")
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{self.port}/.ws?ns=default&v=5", timeout=10)
        ws.recv()
        ws.send(json.dumps({"t": "d", "d": {"r": 1, "a": "p", "b": {
            "p": "/messages/m2/original", "d": "world"}}}))
        ws.recv()
        ws.close()
        self.wait_for("/messages/m2/uppercase", "WORLD")
        seen = self.wait_for("/seen/created/m1", lambda v: v is not None)
        self.assertEqual(seen["data"], "hello")
        self.assertEqual(seen["params"], {"pushId": "m1"})
        self.assertEqual(seen["ref"], "messages/m1/original")
        self.assertEqual(seen["instance"], "default")
        self.assertEqual(seen["auth_type"], "unauthenticated")
        self.assertEqual(seen["type"], "google.firebase.database.ref.v1.created")

    def test_3_written_before_and_after(self):
        http("PUT", self.url("/counters/c1"), {"v": 1})
        http("PATCH", self.url("/counters/c1"), {"w": {"x": 2, "y": 3}})
        http("PUT", self.url("/counters/c1"), {"v": 3, "w": {"x": 2}})
        http("DELETE", self.url("/counters/c1"))
        seen = self.wait_for("/seen/written/c1",
                             lambda v: isinstance(v, dict) and len(v) == 4)
        changes = [seen[k] for k in sorted(seen)]
        self.assertEqual([(c.get("before"), c.get("after")) for c in changes], [
            (None, {"v": 1}),
            ({"v": 1}, {"v": 1, "w": {"x": 2, "y": 3}}),
            ({"v": 1, "w": {"x": 2, "y": 3}}, {"v": 3, "w": {"x": 2}}),
            ({"v": 3, "w": {"x": 2}}, None),
        ])

    def test_3b_updated_and_deleted(self):
        http("PUT", self.url("/profiles/ada"), {"name": "Ada", "langs": {"en": 1}})
        http("PATCH", self.url("/profiles/ada"), {"langs/fr": 2, "name": None})
        http("DELETE", self.url("/profiles/ada"))
        gone = self.wait_for("/seen/deleted/ada", lambda v: v is not None)
        self.assertEqual(gone, {"data": {"langs": {"en": 1, "fr": 2}},
                                "type": "google.firebase.database.ref.v1.deleted"})
        seen = self.wait_for("/seen/updated/ada", lambda v: isinstance(v, dict) and len(v) >= 1)
        # the creation and the deletion are not updates: one change only
        self.assertEqual([seen[k] for k in sorted(seen)], [
            {"before": {"name": "Ada", "langs": {"en": 1}},
             "after": {"langs": {"en": 1, "fr": 2}}}])

    def test_4_functions_stop_with_the_server(self):
        ports = function_ports(self.port)
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=30)
        for port in ports:  # gone by the time the server has exited
            self.assertTrue(port_closed(port), port)

    def test_5_functions_end_when_the_server_is_killed(self):
        """kill -9 leaves the server no chance to stop its functions: the
        end of their lifeline does."""
        port = free_port()
        proc, log = serve_functions(self.src, port,
                                    os.path.join(self.dir, "data-killed"))
        ports = function_ports(port)
        self.assertTrue(ports)
        self.assertTrue(wait_ports(ports, closed=False), "the functions never ran")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        log.close()
        self.assertTrue(wait_ports(ports, closed=True),
                        f"functions on {ports} still run")


if __name__ == "__main__":
    run_tests(__name__)
