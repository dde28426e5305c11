"""End-to-end tests of `hearth serve` with the real Python clients.

Starts the real server on a free loopback port and drives it with the
Firebase Admin SDK (emulator mode, FIREBASE_DATABASE_EMULATOR_HOST),
Pyrebase4 (no `ns`: the default namespace) and plain HTTP, unmodified.
Also kills the server with SIGKILL mid-stream and checks that every
acknowledged write survived.

Run: HEARTH_BIN=.build/debug/hearth python Tests/e2e/test_python_clients.py
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

HEARTH = os.environ.get("HEARTH_BIN", ".build/debug/hearth")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A `hearth serve` process on a data directory."""

    def __init__(self, data_dir, port=None):
        self.data_dir = data_dir
        self.port = port or free_port()
        self.proc = None
        self.extra_args = []  # more `hearth serve` options

    def start(self):
        self.proc = subprocess.Popen(
            [HEARTH, "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--data", self.data_dir, *self.extra_args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.2):
                    return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("hearth serve exited: "
                                       + self.proc.stdout.read())
                time.sleep(0.05)
        raise RuntimeError("hearth serve did not start")

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        out, _ = self.proc.communicate(timeout=20)
        return self.proc.returncode, out

    def url(self, path, query=""):
        return f"http://127.0.0.1:{self.port}{path}.json{query}"


class ServerCase(unittest.TestCase):
    """Tests sharing one `hearth serve` on a data directory of its own,
    which must stop cleanly (exit status 0) after them."""

    dir_prefix = "hearth-e2e-"

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix=cls.dir_prefix)
        cls.server = Server(cls.dir).start()

    @classmethod
    def tearDownClass(cls):
        code, out = cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        assert code == 0, out


def http(method, url, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


class AdminSDK(ServerCase):
    @classmethod
    def setUpClass(cls):
        import firebase_admin
        from firebase_admin import db
        super().setUpClass()
        os.environ["FIREBASE_DATABASE_EMULATOR_HOST"] = \
            f"127.0.0.1:{cls.server.port}"
        cls.app = firebase_admin.initialize_app(
            options={"databaseURL": "https://demo-ns.firebaseio.com"},
            name="hearth-e2e")
        cls.db = db
        # The service wants an index for child queries over REST.
        status, _ = http("PUT", cls.server.url("/.settings/rules", "?ns=demo-ns"),
                         {"rules": {".read": True, ".write": True,
                                    "users": {".indexOn": ["age"]}}},
                         {"Authorization": "Bearer owner"})
        assert status == 200

    @classmethod
    def tearDownClass(cls):
        import firebase_admin
        firebase_admin.delete_app(cls.app)
        super().tearDownClass()

    def ref(self, path):
        return self.db.reference(path, app=self.app)

    def test_set_get_update_delete(self):
        users = self.ref("users")
        users.child("ada").set({"name": "Ada", "age": 36})
        self.assertEqual(users.child("ada").get(), {"name": "Ada", "age": 36})
        users.update({"bob": {"name": "Bob", "age": 20}, "ada/age": 37})
        self.assertEqual(users.child("ada/age").get(), 37)
        self.assertEqual(users.child("bob/name").get(), "Bob")
        users.child("bob").delete()
        self.assertIsNone(users.child("bob").get())

    def test_etags(self):
        ref = self.ref("etag/value")
        ref.set(1)
        value, etag = ref.get(etag=True)
        self.assertEqual(value, 1)
        changed, _, _ = ref.get_if_changed(etag)
        self.assertFalse(changed)
        ok, _, _ = ref.set_if_unchanged(etag, 2)
        self.assertTrue(ok)
        ok, current, _ = ref.set_if_unchanged(etag, 3)
        self.assertFalse(ok)
        self.assertEqual(current, 2)
        changed, value, _ = ref.get_if_changed(etag)
        self.assertTrue(changed)
        self.assertEqual(value, 2)

    def test_push_ordered(self):
        log = self.ref("log")
        keys = [log.push({"n": i}).key for i in range(5)]
        self.assertEqual(keys, sorted(keys))
        self.assertEqual(len(log.get()), 5)

    def test_transaction(self):
        counter = self.ref("counter")
        threads = [threading.Thread(
            target=lambda: [counter.transaction(lambda v: (v or 0) + 1)
                            for _ in range(10)]) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(counter.get(), 40)

    def test_queries(self):
        users = self.ref("users")
        users.set({"a": {"age": 30}, "b": {"age": 20}, "c": {"age": 40}})
        self.assertEqual(list(users.order_by_child("age").get().keys()),
                         ["b", "a", "c"])
        self.assertEqual(list(users.order_by_child("age").limit_to_first(2)
                              .get().keys()), ["b", "a"])
        self.assertEqual(list(users.order_by_child("age").start_at(25)
                              .end_at(35).get().keys()), ["a"])
        self.assertEqual(list(users.order_by_key().limit_to_last(1)
                              .get().keys()), ["c"])
        self.assertEqual(list(users.order_by_key().equal_to("b")
                              .get().keys()), ["b"])
        ranked = self.ref("ranked")
        ranked.set({"a": {".value": 1, ".priority": 3},
                    "b": {".value": 2, ".priority": 1}, "c": 3})
        # The Admin SDK has no priority order; its REST form:
        status, value = http("GET", self.server.url(
            "/ranked", '?ns=demo-ns&orderBy="$priority"&startAt=2'))
        self.assertEqual((status, value), (200, {"a": 1}))
        scores = self.ref("scores")
        scores.set({"x": 3, "y": 1, "z": 2})
        self.assertEqual(list(scores.order_by_value().limit_to_last(2)
                              .get().keys()), ["z", "x"])
        with self.assertRaises(Exception) as ctx:
            self.ref("other").order_by_child("age").get()
        self.assertIn("Index not defined", str(ctx.exception))

    def test_listen(self):
        events = []
        room = self.ref("room")
        room.set({"a": 1})
        reg = room.listen(
            lambda e: events.append((e.event_type, e.path, e.data)))
        try:
            deadline = time.time() + 5
            while not events and time.time() < deadline:
                time.sleep(0.05)
            room.child("b").set(2)
            deadline = time.time() + 5
            while len(events) < 2 and time.time() < deadline:
                time.sleep(0.05)
        finally:
            reg.close()
        self.assertEqual(events[0], ("put", "/", {"a": 1}))
        self.assertIn(("put", "/b", 2), events[1:])


class Pyrebase(unittest.TestCase):
    def test_default_namespace(self):
        import pyrebase
        directory = tempfile.mkdtemp(prefix="hearth-e2e-")
        server = Server(directory).start()
        try:
            app = pyrebase.initialize_app({
                "apiKey": "unused", "authDomain": "unused",
                "databaseURL": f"http://127.0.0.1:{server.port}",
                "storageBucket": ""})
            d = app.database()
            d.child("py").set({"x": 1})
            self.assertEqual(dict(d.child("py").get().val()), {"x": 1})
            name = d.child("list").push({"n": 1})["name"]
            d.child("py").update({"y": 2})
            self.assertEqual(dict(d.child("py").get().val()), {"x": 1, "y": 2})
            self.assertEqual(list(d.child("list").order_by_key()
                                  .limit_to_first(1).get().val().keys()),
                             [name])
            d.child("py").remove()
            self.assertIsNone(d.child("py").get().val())
            # Pyrebase sends no ns: the data is in the default namespace.
            status, value = http("GET", server.url("/list", "?ns=default"))
            self.assertEqual(status, 200)
            self.assertIn(name, value)
        finally:
            server.stop()
            shutil.rmtree(directory)


class Durability(unittest.TestCase):
    def test_kill_9_keeps_acknowledged_writes(self):
        directory = tempfile.mkdtemp(prefix="hearth-e2e-")
        server = Server(directory).start()
        acked = []
        try:
            for i in range(200):
                status, _ = http("PUT", server.url(f"/w/k{i:04d}"), i)
                self.assertEqual(status, 200)
                acked.append(i)
        finally:
            code, _ = server.stop(signal.SIGKILL)
        self.assertEqual(code, -signal.SIGKILL)
        server = Server(directory, server.port).start()
        try:
            status, data = http("GET", server.url("/w"))
            self.assertEqual(status, 200)
            for i in acked:
                self.assertEqual(data.get(f"k{i:04d}"), i)
        finally:
            code, out = server.stop()
            shutil.rmtree(directory)
        self.assertEqual(code, 0, out)


class ExportImport(unittest.TestCase):
    def hearth(self, *args, data=None):
        return subprocess.run([HEARTH, *args], input=data, capture_output=True,
                              text=True, timeout=60)

    def test_round_trip_through_files_and_a_server(self):
        directory = tempfile.mkdtemp(prefix="hearth-e2e-")
        doc = {"users": {"ada": {".value": "Ada", ".priority": 3}},
               "n": 1.5, "s": "\u00e9\U0001F435"}
        try:
            r = self.hearth("import", "-", "--data", directory,
                            data=json.dumps(doc))
            self.assertEqual(r.returncode, 0, r.stderr)
            r = self.hearth("import", "-", "--data", directory,
                            data='{"bad.key": 1}')
            self.assertEqual(r.returncode, 1)
            self.assertIn("bad.key", r.stderr)
            server = Server(directory).start()
            try:
                status, value = http("GET", server.url("/", "?format=export"))
                self.assertEqual(value, doc)
                url = f"http://127.0.0.1:{server.port}/?ns=default"
                r = self.hearth("export", "--url", url)
                self.assertEqual(json.loads(r.stdout), doc)
                r = self.hearth("import", "-", "--path", "/copy", "--url", url,
                                data=r.stdout)
                self.assertEqual(r.returncode, 0, r.stderr)
                status, copy = http("GET", server.url("/copy", "?format=export"))
                self.assertEqual(copy, doc)
                r = self.hearth("export", "--data", directory)
                self.assertEqual(r.returncode, 1)
                self.assertIn("in use", r.stderr)
            finally:
                server.stop()
            r = self.hearth("export", "--data", directory, "/copy")
            self.assertEqual(json.loads(r.stdout), doc)
        finally:
            shutil.rmtree(directory)


class CommandLine(unittest.TestCase):
    def hearth(self, *args, data=None):
        return subprocess.run([HEARTH, *args], input=data, capture_output=True,
                              text=True, timeout=60)

    def test_get_set_update_push_remove(self):
        directory = tempfile.mkdtemp(prefix="hearth-e2e-")
        server = Server(directory).start()
        url = f"http://127.0.0.1:{server.port}/?ns=cli"
        try:
            for args in (["set", "/users/ada", '{"name":"Ada","age":36}'],
                         ["set", "/users/bob", '{"name":"Bob","age":20}'],
                         ["update", "/", '{"users/cy":{"name":"Cy","age":50}}'],
                         ["remove", "/users/bob"]):
                r = self.hearth(*args, "--url", url)
                self.assertEqual(r.returncode, 0, r.stderr)
            r = self.hearth("push", "/log", '{"m":1}', "--url", url,
                            "--format", "json")
            key = json.loads(r.stdout)["name"]
            r = self.hearth("get", "/", "--url", url, "--format", "json")
            self.assertEqual(json.loads(r.stdout), {
                "users": {"ada": {"name": "Ada", "age": 36},
                          "cy": {"name": "Cy", "age": 50}},
                "log": {key: {"m": 1}}})
            r = self.hearth("get", "/users", "--order-by", "$key",
                            "--limit-to-last", "1", "--url", url,
                            "--format", "json")
            self.assertEqual(json.loads(r.stdout), {"cy": {"name": "Cy", "age": 50}})
            r = self.hearth("get", "/users", "--order-by", "age", "--url", url)
            self.assertEqual(r.returncode, 1)
            self.assertIn("Index not defined", r.stderr)
            r = self.hearth("rules", "set", "-", "--url", url, data=
                            '{"rules": {/* indexed */ "users": {".indexOn": ["age"]}}}')
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(".indexOn", self.hearth("rules", "get", "--url", url).stdout)
            r = self.hearth("get", "/users", "--order-by", "age",
                            "--limit-to-first", "1", "--url", url, "--format", "json")
            self.assertEqual(json.loads(r.stdout), {"ada": {"name": "Ada", "age": 36}})
            r = self.hearth("rules", "set", "-", "--url", url, data=
                            '{"rules": {"users": {".read": "auth.uid =="}}}')
            self.assertEqual(r.returncode, 1)
            self.assertIn(".read at /users", r.stderr)
            # The old rules stay in force.
            self.assertIn(".indexOn", self.hearth("rules", "get", "--url", url).stdout)
            r = self.hearth("set", "/x", '{"a.b":1}', "--url", url)
            self.assertEqual(r.returncode, 1)
            self.assertIn("a.b", r.stderr)
            r = self.hearth("get", "--url", url, "--bogus")
            self.assertEqual(r.returncode, 64)
        finally:
            server.stop()
            shutil.rmtree(directory)

    def test_watch_beside_set_in_tmux(self):
        """`hearth watch` in one tmux pane, `hearth set` in another."""
        directory = tempfile.mkdtemp(prefix="hearth-e2e-")
        server = Server(directory).start()
        url = f"http://127.0.0.1:{server.port}/"
        session = f"hearth-e2e-{os.getpid()}"
        try:
            subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x",
                            "200", "-y", "50",
                            f"{HEARTH} watch /room --url {url}"], check=True)
            subprocess.run(["tmux", "split-window", "-t", session, "-v"],
                           check=True)
            time.sleep(1)
            for cmd in (f"{HEARTH} set /room/a 1 --url {url}",
                        f"{HEARTH} update /room '{{\"b\":2,\"c\":{{\"d\":3}}}}' --url {url}",
                        f"{HEARTH} set /room/c/d 4 --url {url}"):
                subprocess.run(["tmux", "send-keys", "-t", f"{session}.1", cmd,
                                "Enter"], check=True)
                time.sleep(0.7)
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", f"{session}.0"],
                capture_output=True, text=True, check=True).stdout
            lines = [l for l in screen.splitlines() if l.startswith("{")]
            self.assertEqual(lines, [
                '{"event":"put","path":"/","data":null}',
                '{"event":"put","path":"/","data":{"a":1}}',
                '{"event":"patch","path":"/","data":{"b":2,"c":{"d":3}}}',
                '{"event":"put","path":"/c/d","data":4}'])
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session])
            server.stop()
            shutil.rmtree(directory)

    def test_watch_child_events_of_a_query(self):
        """`hearth watch --events child` is a realtime client of a query."""
        directory = tempfile.mkdtemp(prefix="hearth-e2e-")
        server = Server(directory).start()
        url = f"http://127.0.0.1:{server.port}/?ns=kids"
        watch = None
        try:
            r = self.hearth("set", "/scores", '{"a":{"s":1},"b":{"s":5}}', "--url", url)
            self.assertEqual(r.returncode, 0, r.stderr)
            watch = subprocess.Popen(
                [HEARTH, "watch", "/scores", "--events", "child", "--order-by", "s",
                 "--limit-to-last", "2", "--url", url],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lines = [json.loads(watch.stdout.readline()) for _ in range(2)]
            for args in (["set", "/scores/c", '{"s":9}'],
                         ["update", "/scores/b", '{"s":0}']):
                self.assertEqual(self.hearth(*args, "--url", url).returncode, 0)
            lines += [json.loads(watch.stdout.readline()) for _ in range(4)]
            self.assertEqual([(e["event"], e["key"], e["prev"]) for e in lines], [
                ("child_added", "a", None), ("child_added", "b", "a"),
                ("child_removed", "a", None), ("child_added", "c", "b"),
                ("child_removed", "b", None), ("child_added", "a", None)])
            self.assertEqual(lines[3]["data"], {"s": 9})
        finally:
            if watch:
                watch.terminate()
                watch.wait(timeout=10)
            server.stop()
            shutil.rmtree(directory)


class Realtime(ServerCase):
    """The realtime protocol (v5) over WebSocket, as the official clients
    speak it, beside REST on the same server."""

    def connect(self, ns="rt"):
        import websocket
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{self.server.port}/.ws?v=5&ns={ns}", timeout=5)
        hello = json.loads(ws.recv())
        self.assertEqual(hello["t"], "c")
        self.assertEqual(hello["d"]["t"], "h")
        self.assertEqual(hello["d"]["d"]["v"], "5")
        self.assertLess(abs(hello["d"]["d"]["ts"] - time.time() * 1000), 60000)
        return ws

    @staticmethod
    def send(ws, r, action, body):
        ws.send(json.dumps({"t": "d", "d": {"r": r, "a": action, "b": body}}))

    @staticmethod
    def recv(ws):
        return json.loads(ws.recv())

    def test_listen_data_before_ok_and_own_writes_before_ok(self):
        ws = self.connect()
        self.send(ws, 1, "q", {"p": "/room", "h": ""})
        self.assertEqual(self.recv(ws)["d"], {"a": "d", "b": {"p": "/room", "d": None}})
        self.assertEqual(self.recv(ws)["d"], {"r": 1, "b": {"s": "ok", "d": {}}})
        self.send(ws, 2, "p", {"p": "/room/a", "d": 1})
        self.assertEqual(self.recv(ws)["d"]["b"], {"p": "/room", "d": {"a": 1}})
        self.assertEqual(self.recv(ws)["d"], {"r": 2, "b": {"s": "ok", "d": {}}})
        # Later pushes are the smallest change: a merge of the children
        # that changed, or a put at the deepest changed location.
        self.send(ws, 3, "m", {"p": "/room", "d": {"b": 2, "c/d": 3}})
        self.assertEqual(self.recv(ws)["d"], {"a": "m", "b": {
            "p": "/room", "d": {"b": 2, "c": {"d": 3}}}})
        self.assertEqual(self.recv(ws)["d"]["r"], 3)
        self.send(ws, 30, "p", {"p": "/room/c/d", "d": 4})
        self.assertEqual(self.recv(ws)["d"], {"a": "d", "b": {"p": "/room/c/d", "d": 4}})
        self.assertEqual(self.recv(ws)["d"]["r"], 30)
        self.send(ws, 4, "g", {"p": "/room/c"})
        self.assertEqual(self.recv(ws)["d"], {"r": 4, "b": {"s": "ok", "d": {"d": 4}}})
        self.send(ws, 5, "n", {"p": "/room"})
        self.assertEqual(self.recv(ws)["d"]["r"], 5)
        self.send(ws, 6, "p", {"p": "/room/z", "d": 9})  # no listener now
        self.assertEqual(self.recv(ws)["d"], {"r": 6, "b": {"s": "ok", "d": {}}})
        ws.close()

    def test_compare_and_set(self):
        ws = self.connect()
        status, _ = http("PUT", self.server.url("/cas", "?ns=rt"), 1)
        self.send(ws, 1, "p", {"p": "/cas", "d": 2, "h": "stale"})
        self.assertEqual(self.recv(ws)["d"]["b"], {"p": "/cas", "d": 1})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "datastale")
        self.send(ws, 2, "g", {"p": "/cas"})
        self.assertEqual(self.recv(ws)["d"]["b"]["d"], 1)
        # The hash of the number 1, as the service computes it.
        import base64, hashlib, struct
        text = "number:" + struct.pack(">d", 1.0).hex()
        good = base64.b64encode(hashlib.sha1(text.encode()).digest()).decode()
        self.send(ws, 3, "p", {"p": "/cas", "d": 2, "h": good})
        self.assertEqual(self.recv(ws)["d"]["b"], {"s": "ok", "d": {}})
        ws.close()

    def test_integers_past_int64_are_doubles(self):
        # What the JS SDK sends for priority 1.111e20 and for 2^63: raw
        # text, since Python's json would keep them as exact integers.
        ws = self.connect()
        ws.send('{"t":"d","d":{"r":1,"a":"p","b":{"p":"/big","d":'
                '{".value":111111111111111100000,".priority":9223372036854775808}}}}')
        self.assertEqual(self.recv(ws)["d"], {"r": 1, "b": {"s": "ok", "d": {}}})
        self.send(ws, 2, "g", {"p": "/big"})
        self.assertEqual(self.recv(ws)["d"]["b"]["d"],
                         {".value": 1.111111111111111e20, ".priority": 2.0 ** 63})
        # No h: "" is null's hash, and a client holding null gets no data.
        ws.send('{"t":"d","d":{"r":3,"a":"q","b":{"p":"/big2",'
                '"q":{"sp":9223372036854775808,"i":".value"},"t":3}}}')
        self.assertEqual(self.recv(ws)["d"]["a"], "d")
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        ws.send('{"t":"d","d":{"r":4,"a":"q","b":{"p":"/big3","h":"",'
                '"q":{"l":9223372036854775808},"t":4}}}')
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "invalid_args")
        ws.close()

    def test_server_values_as_priorities(self):
        ws = self.connect()
        before = time.time() * 1000 - 1
        ts = {".sv": "timestamp"}
        for r, action, body in (
                (1, "p", {"p": "/sp/a", "d": {".value": 1, ".priority": ts}}),
                (2, "p", {"p": "/sp/b", "d": {".priority": ts, "x": 1}}),
                (3, "p", {"p": "/sp/c", "d": {"n": {".value": 1, ".priority": ts}}}),
                (4, "p", {"p": "/sp/d/.priority", "d": ts}),
                (5, "m", {"p": "/sp", "d": {"e/.priority": {".sv": {"increment": 2}},
                                            "e/v": 1}})):
            self.send(ws, r, action, body)
            self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok", body)
        ws.close()
        status, value = http("GET", self.server.url("/sp", "?ns=rt&format=export"))
        self.assertEqual(status, 200)
        for prio in (value["a"][".priority"], value["b"][".priority"],
                     value["c"]["n"][".priority"]):
            self.assertGreaterEqual(prio, before)
        self.assertEqual(value["e"][".priority"], 2)
        status, _ = http("PUT", self.server.url("/sp/e/.priority", "?ns=rt"),
                         {".sv": {"increment": 3}})
        self.assertEqual(status, 200)
        status, value = http("GET", self.server.url("/sp/e/.priority", "?ns=rt"))
        self.assertEqual(value, 5)

    def test_rest_and_websocket_share_writes(self):
        ws = self.connect()
        self.send(ws, 1, "q", {"p": "/shared", "h": "",
                               "q": {"i": "n", "l": 1, "vf": "r"}, "t": 7})
        first = self.recv(ws)["d"]["b"]
        self.assertEqual(first, {"p": "/shared", "d": None, "t": 7})
        self.assertEqual(self.recv(ws)["d"]["r"], 1)
        http("PUT", self.server.url("/shared", "?ns=rt"), {"x": {"n": 1}, "y": {"n": 5}})
        pushed = self.recv(ws)["d"]["b"]
        self.assertEqual(pushed, {"p": "/shared", "d": {"y": {"n": 5}}, "t": 7})
        ws.close()

    def test_ondisconnect_runs_when_the_client_goes(self):
        ws = self.connect()
        self.send(ws, 1, "o", {"p": "/presence/me", "d": "offline"})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        self.send(ws, 2, "om", {"p": "/presence", "d": {"count": 0}})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        self.send(ws, 3, "o", {"p": "/presence/never", "d": 1})
        self.send(ws, 4, "oc", {"p": "/presence/never"})
        self.assertEqual(self.recv(ws)["d"]["r"], 3)
        self.assertEqual(self.recv(ws)["d"]["r"], 4)
        ws.close()
        deadline = time.time() + 5
        while time.time() < deadline:
            status, value = http("GET", self.server.url("/presence", "?ns=rt"))
            if value:
                break
            time.sleep(0.05)
        self.assertEqual(value, {"me": "offline", "count": 0})

    def test_rules_over_the_realtime_protocol(self):
        status, _ = http("PUT", self.server.url("/.settings/rules", "?ns=rtguard"),
                         {"rules": {"users": {"$uid": {
                             ".read": "auth != null && auth.uid == $uid",
                             ".write": "auth != null && auth.uid == $uid"}}}},
                         {"Authorization": "Bearer owner"})
        self.assertEqual(status, 200)
        ada = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZGEifQ."  # unsigned, sub ada
        ws = self.connect("rtguard")
        self.send(ws, 1, "q", {"p": "/users/ada", "h": ""})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "permission_denied")
        self.send(ws, 2, "auth", {"cred": "not a token"})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "invalid_token")
        self.send(ws, 3, "auth", {"cred": ada})
        answer = self.recv(ws)["d"]["b"]
        self.assertEqual(answer["s"], "ok")
        self.assertEqual(answer["d"]["auth"]["uid"], "ada")
        self.send(ws, 4, "p", {"p": "/users/bob/x", "d": 1})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "permission_denied")
        self.send(ws, 5, "m", {"p": "/users", "d": {"ada/x": 1, "bob/x": 1}})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "permission_denied")
        self.send(ws, 6, "p", {"p": "/users/ada/x", "d": 1})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        self.send(ws, 7, "q", {"p": "/users/ada", "h": ""})
        self.assertEqual(self.recv(ws)["d"]["b"]["d"], {"x": 1})  # data, then ok
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        self.send(ws, 8, "g", {"p": "/users/bob"})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "permission_denied")
        self.send(ws, 9, "gauth", {"cred": "owner"})  # the admin
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        self.send(ws, 10, "p", {"p": "/users/bob/x", "d": 2})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        self.send(ws, 11, "unauth", {})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        # Nobody may read ada's data now: her listen is revoked.
        self.assertEqual(self.recv(ws)["d"], {"a": "c", "b": {"p": "/users/ada"}})
        self.send(ws, 12, "g", {"p": "/users/bob"})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "permission_denied")
        ws.close()
        # Nothing a refused write sent landed.
        status, value = http("GET", self.server.url("/users", "?ns=rtguard"),
                             headers={"Authorization": "Bearer owner"})
        self.assertEqual(value, {"ada": {"x": 1}, "bob": {"x": 2}})

    def test_rules_change_revokes_listens(self):
        owner = {"Authorization": "Bearer owner"}
        url = self.server.url("/.settings/rules", "?ns=rtrevoke")
        status, _ = http("PUT", url, {"rules": {"public": {".read": True}}}, owner)
        self.assertEqual(status, 200)
        ws = self.connect("rtrevoke")
        self.send(ws, 1, "q", {"p": "/public", "h": ""})
        self.assertEqual(self.recv(ws)["d"]["a"], "d")
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        status, _ = http("PUT", url, {"rules": {"public": {".read": False}}}, owner)
        self.assertEqual(status, 200)
        self.assertEqual(self.recv(ws)["d"], {"a": "c", "b": {"p": "/public"}})
        # Revoked: later writes no longer reach this session.
        http("PUT", self.server.url("/public/x", "?ns=rtrevoke"), 1, owner)
        self.send(ws, 2, "s", {"c": {}})
        self.assertEqual(self.recv(ws)["d"], {"r": 2, "b": {"s": "ok", "d": {}}})
        ws.close()

    def test_expired_token_gets_ac(self):
        owner = {"Authorization": "Bearer owner"}
        url = self.server.url("/.settings/rules", "?ns=rtexpire")
        status, _ = http("PUT", url, {"rules": {"users": {"$uid": {
            ".read": "auth.uid == $uid"}}}}, owner)
        self.assertEqual(status, 200)
        token = subprocess.run([HEARTH, "token", "--uid", "ada", "--ttl", "2"],
                               capture_output=True, text=True, check=True).stdout.strip()
        ws = self.connect("rtexpire")
        self.send(ws, 1, "auth", {"cred": token})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        self.send(ws, 2, "q", {"p": "/users/ada", "h": ""})
        self.assertEqual(self.recv(ws)["d"]["a"], "d")
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        ws.settimeout(6)
        self.assertEqual(self.recv(ws)["d"],
                         {"a": "ac", "b": {"s": "expired_token", "d": "Auth token is expired."}})
        self.assertEqual(self.recv(ws)["d"], {"a": "c", "b": {"p": "/users/ada"}})
        self.send(ws, 3, "auth", {"cred": token})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "expired_token")
        ws.close()

    def test_ondisconnect_data_is_checked_when_queued(self):
        ws = self.connect()
        self.send(ws, 1, "o", {"p": "/od", "d": {"a.b": 1}})
        answer = self.recv(ws)["d"]
        self.assertEqual(answer["b"]["s"], "invalid_args")
        self.assertIn("a.b", answer["b"]["d"])
        self.send(ws, 2, "om", {"p": "/od", "d": 5})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "invalid_args")
        self.send(ws, 3, "om", {"p": "/od", "d": {"a": 1, "b/c": {".sv": "timestamp"}}})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "ok")
        ws.close()

    def test_pieces_past_the_message_limit_end_the_connection(self):
        ws = self.connect()
        import websocket
        ws.send("999")
        piece = "x" * (1 << 20)
        closed = False
        try:
            for _ in range(18):
                ws.send(piece)
            ws.settimeout(5)
            closed = ws.recv() == ""  # the close frame
        except (websocket.WebSocketConnectionClosedException, BrokenPipeError,
                ConnectionResetError):
            closed = True
        except websocket.WebSocketTimeoutException:
            closed = False
        self.assertTrue(closed, "the server kept the connection open")
        status, _ = http("GET", self.server.url("/", "?ns=rt"))
        self.assertEqual(status, 200)
        self.connect().close()

    def test_protocol_odds_and_ends(self):
        ws = self.connect()
        ws.send("0")  # the client's keep-alive: ignored
        ws.send(json.dumps({"t": "c", "d": {"t": "p", "d": {}}}))
        self.assertEqual(self.recv(ws), {"t": "c", "d": {"t": "o", "d": {}}})
        self.send(ws, 1, "auth", {"cred": "token"})  # not a JWT
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "invalid_token")
        self.send(ws, 2, "zz", {})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "invalid_args")
        self.send(ws, 3, "p", {"p": "/bad.key", "d": 1})
        self.assertEqual(self.recv(ws)["d"]["b"]["s"], "invalid_args")
        # A message in pieces: the count, then the parts.
        big = json.dumps({"t": "d", "d": {"r": 4, "a": "p",
                                          "b": {"p": "/big", "d": "x" * 40000}}})
        parts = [big[i:i + 16384] for i in range(0, len(big), 16384)]
        ws.send(str(len(parts)))
        for part in parts:
            ws.send(part)
        self.assertEqual(self.recv(ws)["d"], {"r": 4, "b": {"s": "ok", "d": {}}})
        # A long answer arrives in pieces too.
        self.send(ws, 5, "g", {"p": "/big"})
        count = int(ws.recv())
        answer = json.loads("".join(ws.recv() for _ in range(count)))
        self.assertEqual(len(answer["d"]["b"]["d"]), 40000)
        ws.close()
        # Garbage on a WebSocket ends that connection, not the server.
        raw = socket.create_connection(("127.0.0.1", self.server.port))
        raw.sendall(b"GET /.ws?v=5 HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                    b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    b"Sec-WebSocket-Version: 13\r\n\r\n" + b"\xff" * 64)
        raw.settimeout(5)
        data = b""
        try:
            while chunk := raw.recv(4096):
                data += chunk
        except socket.timeout:
            pass
        self.assertIn(b"101 Switching Protocols", data)
        self.assertIn(b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", data)
        raw.close()
        status, _ = http("GET", self.server.url("/", "?ns=rt"))
        self.assertEqual(status, 200)


def run_tests(module_name):
    """Runs a module's tests verbosely; exits 1 when any failed."""
    runner = unittest.TextTestRunner(verbosity=2)
    result = runner.run(unittest.defaultTestLoader.loadTestsFromModule(
        sys.modules[module_name]))
    failed = len(result.failures) + len(result.errors)
    print(f"{result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    run_tests(__name__)
