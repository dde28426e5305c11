"""Security regressions: the outsider's attacks on `hearth serve`, each a test.

The server runs as the attacker found it: `hearth serve --rules R
--auth-secret S` (plus an admin secret where a test needs the admin), where
R lets a user read and write only /users/$uid, /secret is closed, /wo is
write-only, /counter must stay <= 100 and /public is open. Every test talks
to the real server over real sockets (REST with urllib, the v5 protocol
with websocket-client) and proves that something did not arrive with a
barrier: a later request whose answer must come after it.

Run: HEARTH_BIN=.build/debug/hearth python Tests/e2e/test_security.py
"""

import base64
import hashlib
import hmac
import json
import os
import shutil
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from test_python_clients import Server, http, run_tests  # noqa: E402

SECRET = "attack-test-secret"
ADMIN_SECRET = "0123456789abcdef-admin"
ADMIN = {"Authorization": "Bearer " + ADMIN_SECRET}

RULES = {"rules": {
    "users": {"$uid": {".read": "auth != null && auth.uid == $uid",
                       ".write": "auth != null && auth.uid == $uid"}},
    "secret": {".read": False, ".write": False},
    "wo": {".write": True},
    "counter": {".read": True, ".write": True,
                ".validate": "newData.isNumber() && newData.val() <= 100"},
    "public": {".read": True, ".write": True},
}}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(uid, secret=SECRET, ttl=3600, **claims):
    """An HS256 token for uid (no exp when ttl is None)."""
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = {"sub": uid, "iat": int(time.time()), **claims}
    if ttl is not None:
        body["exp"] = int(time.time()) + ttl
    payload = b64url(json.dumps(body).encode())
    signed = f"{header}.{payload}".encode()
    sig = hmac.new(secret.encode(), signed, hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(sig)}"


def raw_http(port, method, target, headers=None, body=b""):
    """(status, headers dict with lower-case names, body bytes)."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request(method, target, body=body, headers=headers or {})
    r = conn.getresponse()
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
    conn.close()
    return out


class SecuredServer(unittest.TestCase):
    """One server with the attacker's rules and keys for the whole class."""

    extra_args = ["--admin-secret", ADMIN_SECRET]

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="hearth-sec-")
        rules = os.path.join(cls.dir, "rules.json")
        with open(rules, "w") as f:
            json.dump(RULES, f)
        cls.server = Server(os.path.join(cls.dir, "data"))
        cls.server.extra_args = ["--rules", rules, "--auth-secret", SECRET,
                                 *cls.extra_args]
        cls.server.start()
        cls.port = cls.server.port

    @classmethod
    def tearDownClass(cls):
        code, out = cls.server.stop()
        assert code == 0, out
        shutil.rmtree(cls.dir)

    def url(self, path, query=""):
        return self.server.url(path, query)

    def admin_put(self, path, value):
        status, _ = http("PUT", self.url(path), value, ADMIN)
        self.assertEqual(status, 200)

    # ---- the v5 protocol ----

    def connect(self):
        import websocket
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{self.port}/.ws?v=5&ns=default", timeout=5)
        self.assertEqual(json.loads(ws.recv())["d"]["t"], "h")
        self.r = 0
        return ws

    def request(self, ws, action, body):
        """Sends a request; returns its number."""
        self.r += 1
        ws.send(json.dumps({"t": "d", "d": {"r": self.r, "a": action, "b": body}}))
        return self.r

    def messages_until_reply(self, ws, r):
        """Every message up to and including the answer to request r."""
        seen = []
        while True:
            msg = json.loads(ws.recv())
            seen.append(msg)
            if msg.get("d", {}).get("r") == r:
                return seen

    def answer(self, ws, action, body):
        """(status, data, pushes before the answer) of one request."""
        seen = self.messages_until_reply(ws, self.request(ws, action, body))
        reply = seen[-1]["d"]["b"]
        return reply["s"], reply.get("d"), seen[:-1]

    def barrier(self, ws):
        """A round trip: every push the server sent before it is returned."""
        _, _, pushes = self.answer(ws, "g", {"p": "/public/barrier"})
        return pushes

    def wait_value(self, path, want, headers=ADMIN):
        deadline = time.time() + 10
        value = None
        while time.time() < deadline:
            _, value = http("GET", self.url(path), headers=headers)
            if value == want:
                return value
            time.sleep(0.02)
        self.fail(f"{path} is {value!r}, expected {want!r}")


class RealtimeRequests(SecuredServer):
    def setUp(self):
        self.admin_put("/secret", {"launch": "codes"})
        self.admin_put("/wo", {"hidden": 42})

    def test_invalid_put_with_a_hash_gets_invalid_args_and_nothing_else(self):
        ws = self.connect()
        for body in ({"p": "/", "d": {"a.b": 1}, "h": "wrong"},
                     {"p": "/", "d": {"a.b": 1}},
                     {"p": "/x", "d": {"ok": 1}, "h": 7},
                     {"p": "/bad.path", "d": 1, "h": "wrong"}):
            status, data, pushes = self.answer(ws, "p", body)
            self.assertEqual(status, "invalid_args", body)
            self.assertEqual(pushes, [], body)
            self.assertNotIn("codes", json.dumps(data))
        self.assertEqual(self.barrier(ws), [])
        ws.close()

    def test_compare_and_set_needs_read_permission(self):
        ws = self.connect()
        for path in ("/", "/secret", "/wo"):
            status, _, pushes = self.answer(
                ws, "p", {"p": path, "d": {"x": 1}, "h": "wrong"})
            self.assertEqual(status, "permission_denied", path)
            self.assertEqual(pushes, [], path)
        self.assertEqual(self.barrier(ws), [])
        _, value = http("GET", self.url("/wo"), headers=ADMIN)
        self.assertEqual(value, {"hidden": 42})
        ws.close()

    def test_a_readers_stale_compare_and_set_still_gets_the_data(self):
        self.admin_put("/public/cas", 1)
        ws = self.connect()
        status, _, pushes = self.answer(ws, "p", {"p": "/public/cas", "d": 2,
                                                  "h": "wrong"})
        self.assertEqual(status, "datastale")
        self.assertEqual([m["d"]["b"] for m in pushes],
                         [{"p": "/public/cas", "d": 1}])
        ws.close()

    def test_refused_writes_change_nothing(self):
        ws = self.connect()
        for action, body in (("p", {"p": "/secret", "d": "mine"}),
                             ("m", {"p": "/", "d": {"secret/launch": "x"}}),
                             ("m", {"p": "/", "d": {"public/a": 1, "secret": 2}}),
                             ("p", {"p": "/counter", "d": 101})):
            status, _, _ = self.answer(ws, action, body)
            self.assertEqual(status, "permission_denied", body)
        _, value = http("GET", self.url("/secret"), headers=ADMIN)
        self.assertEqual(value, {"launch": "codes"})
        _, value = http("GET", self.url("/public/a"), headers=ADMIN)
        self.assertIsNone(value)
        ws.close()


class OwnerWithKeys(SecuredServer):
    extra_args = []  # keys but no admin secret: no admin over the network

    def test_owner_is_not_the_admin_when_keys_are_configured(self):
        for headers, query in (({"Authorization": "Bearer owner"}, ""),
                               ({}, "?auth=owner"),
                               ({}, "?access_token=owner")):
            status, body = http("GET", self.url("/secret", query), headers=headers)
            self.assertEqual(status, 401, (headers, query))
            self.assertNotIn("codes", json.dumps(body))
            status, _ = http("PUT", self.url("/.settings/rules", query),
                             {"rules": {".read": True}}, headers)
            self.assertEqual(status, 401)
        ws = self.connect()
        for action in ("auth", "gauth"):
            status, _, _ = self.answer(ws, action, {"cred": "owner"})
            self.assertEqual(status, "invalid_token")
        status, _, _ = self.answer(ws, "g", {"p": "/secret"})
        self.assertEqual(status, "permission_denied")
        ws.close()

    def test_the_server_says_there_is_no_admin(self):
        other = Server(os.path.join(self.dir, "other"))
        other.extra_args = ["--auth-secret", SECRET]
        other.start()
        code, out = other.stop()
        self.assertEqual(code, 0, out)
        self.assertIn("no admin over the network", out)


class WriteOnly(SecuredServer):
    """/wo may be written but not read: nothing may reveal what it holds."""

    def setUp(self):
        self.admin_put("/wo", {"hidden": 42, "n": 7})

    def test_if_match_needs_read_permission(self):
        for method in ("PUT", "DELETE"):
            status, headers, body = raw_http(
                self.port, method, "/wo.json", {"if-match": "bogus"},
                b'{"x":1}' if method == "PUT" else b"")
            self.assertEqual(status, 401, method)
            self.assertNotIn(b"42", body)
            self.assertNotIn("etag", headers)
        _, value = http("GET", self.url("/wo"), headers=ADMIN)
        self.assertEqual(value, {"hidden": 42, "n": 7})

    def test_increment_echo_does_not_show_the_stored_value(self):
        status, headers, body = raw_http(
            self.port, "PUT", "/wo/n.json", {"X-Firebase-ETag": "true"},
            json.dumps({".sv": {"increment": 1}}).encode())
        self.assertEqual(status, 200)
        self.assertNotIn(b"8", body)
        self.assertEqual(json.loads(body), {".sv": {"increment": 1}})
        self.assertNotIn("etag", headers)
        status, headers, body = raw_http(
            self.port, "PATCH", "/wo.json", {"X-Firebase-ETag": "true"},
            json.dumps({"n": {".sv": {"increment": 1}}}).encode())
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body), {"n": {".sv": {"increment": 1}}})
        self.assertNotIn("etag", headers)
        _, value = http("GET", self.url("/wo/n"), headers=ADMIN)
        self.assertEqual(value, 9)

    def test_plain_write_gives_no_etag(self):
        status, headers, body = raw_http(self.port, "PUT", "/wo/x.json",
                                         {"X-Firebase-ETag": "true"}, b"5")
        self.assertEqual((status, json.loads(body)), (200, 5))
        self.assertNotIn("etag", headers)

    def test_realtime_stale_hash_pushes_nothing(self):
        ws = self.connect()
        status, _, pushes = self.answer(ws, "p", {"p": "/wo", "d": 1, "h": "x"})
        self.assertEqual(status, "permission_denied")
        self.assertEqual(pushes, [])
        self.assertEqual(self.barrier(ws), [])
        ws.close()


class OnDisconnectAtRunTime(SecuredServer):
    def close_and_wait(self, ws, marker):
        """Closes ws and waits until its onDisconnect writes ran: the last
        one queued writes marker (a barrier: they run in order)."""
        ws.close()
        self.wait_value(f"/public/{marker}", True)

    def test_judged_against_the_data_when_it_runs(self):
        self.admin_put("/counter", 5)
        ws = self.connect()
        self.assertEqual(self.answer(ws, "o", {"p": "/counter",
                                               "d": {".sv": {"increment": 50}}})[0],
                         "ok")  # 55 would be valid now
        self.assertEqual(self.answer(ws, "o", {"p": "/public/m1", "d": True})[0], "ok")
        self.admin_put("/counter", 90)
        self.close_and_wait(ws, "m1")
        _, value = http("GET", self.url("/counter"), headers=ADMIN)
        self.assertEqual(value, 90)  # 140 would break .validate <= 100

    def test_judged_as_the_identity_the_session_has_then(self):
        ws = self.connect()
        self.assertEqual(self.answer(ws, "auth", {"cred": token("ada")})[0], "ok")
        self.assertEqual(self.answer(ws, "o", {"p": "/users/ada/status",
                                               "d": "offline"})[0], "ok")
        self.assertEqual(self.answer(ws, "om", {"p": "/users/ada",
                                                "d": {"seen": 1}})[0], "ok")
        self.assertEqual(self.answer(ws, "o", {"p": "/public/m2", "d": True})[0], "ok")
        self.assertEqual(self.answer(ws, "unauth", {})[0], "ok")
        self.close_and_wait(ws, "m2")
        _, value = http("GET", self.url("/users/ada"), headers=ADMIN)
        self.assertIsNone(value)

    def test_still_runs_for_the_identity_that_may(self):
        ws = self.connect()
        self.assertEqual(self.answer(ws, "auth", {"cred": token("bob")})[0], "ok")
        self.assertEqual(self.answer(ws, "o", {"p": "/users/bob/status",
                                               "d": "offline"})[0], "ok")
        self.assertEqual(self.answer(ws, "o", {"p": "/public/m3", "d": True})[0], "ok")
        self.close_and_wait(ws, "m3")
        _, value = http("GET", self.url("/users/bob/status"), headers=ADMIN)
        self.assertEqual(value, "offline")


class OnDisconnectBounded(SecuredServer):
    """Queued onDisconnect writes are held until the connection closes: a
    session may queue at most 1,000 of them, 16 MB in all."""

    def test_count_is_bounded(self):
        ws = self.connect()
        for i in range(1000):
            self.request(ws, "o", {"p": f"/public/od/{i}", "d": i})
        last = self.request(ws, "o", {"p": "/public/od/x", "d": 1})
        answers = [m["d"]["b"]["s"] for m in self.messages_until_reply(ws, last)]
        self.assertEqual(answers, ["ok"] * 1000 + ["too_big"])
        # Cancelling makes room again.
        self.assertEqual(self.answer(ws, "oc", {"p": "/public/od/5"})[0], "ok")
        self.assertEqual(self.answer(ws, "o", {"p": "/public/od/y", "d": 1})[0], "ok")
        ws.close()

    def test_bytes_are_bounded(self):
        ws = self.connect()
        big = "x" * (1024 * 1024)
        statuses = [self.answer(ws, "o", {"p": f"/public/big/{i}", "d": big})[0]
                    for i in range(17)]
        self.assertEqual(statuses, ["ok"] * 15 + ["too_big"] * 2)
        ws.close()


class ListensFollowTheIdentity(SecuredServer):
    def listen(self, ws, path):
        status, _, pushes = self.answer(ws, "q", {"p": path, "h": ""})
        return status, pushes

    def test_unauth_revokes_listens(self):
        self.admin_put("/users/ada", {"name": "Ada"})
        ws = self.connect()
        self.assertEqual(self.answer(ws, "auth", {"cred": token("ada")})[0], "ok")
        status, pushes = self.listen(ws, "/users/ada")
        self.assertEqual(status, "ok")
        self.assertEqual(pushes[0]["d"]["b"]["d"], {"name": "Ada"})
        status, _, pushes = self.answer(ws, "unauth", {})
        self.assertEqual(status, "ok")
        revoked = pushes + self.barrier(ws)
        self.assertEqual([m["d"] for m in revoked],
                         [{"a": "c", "b": {"p": "/users/ada"}}])
        self.admin_put("/users/ada/name", "Ada L.")
        self.assertEqual(self.barrier(ws), [])
        ws.close()

    def test_reauth_as_another_user_revokes_listens(self):
        self.admin_put("/users/ada", {"name": "Ada"})
        ws = self.connect()
        self.assertEqual(self.answer(ws, "auth", {"cred": token("ada")})[0], "ok")
        self.assertEqual(self.listen(ws, "/users/ada")[0], "ok")
        self.assertEqual(self.listen(ws, "/public/room")[0], "ok")
        status, _, pushes = self.answer(ws, "auth", {"cred": token("eve")})
        self.assertEqual(status, "ok")
        revoked = pushes + self.barrier(ws)
        self.assertEqual([m["d"] for m in revoked],
                         [{"a": "c", "b": {"p": "/users/ada"}}])
        self.admin_put("/users/ada/name", "changed")
        self.admin_put("/public/room", "still heard")
        pushes = self.barrier(ws)
        self.assertEqual([m["d"]["b"] for m in pushes],
                         [{"p": "/public/room", "d": "still heard"}])
        ws.close()


class Tokens(SecuredServer):
    def test_a_signed_token_without_exp_is_refused(self):
        forever = token("ada", ttl=None)
        status, body = http("GET", self.url("/users/ada", "?auth=" + forever))
        self.assertEqual(status, 401)
        self.assertIn("exp", body["error"])
        ws = self.connect()
        self.assertEqual(self.answer(ws, "auth", {"cred": forever})[0],
                         "invalid_token")
        ws.close()


if __name__ == "__main__":
    run_tests(__name__)
