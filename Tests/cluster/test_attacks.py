"""test_attacks.py - `make test-cluster`: NATS is untrusted transport and
storage. An attacker holding the nodes' own NATS credentials (every
permission a Hearth node has, TLS with the run's CA) but not the cluster
secret speaks the raw NATS protocol (stdlib only) to a secure cluster
(Tests/cluster/cluster.py) and tries to:

1. write: an unjudged forwarded write to hearth.fwd.default
   ({"j": false} would pass any rules), a forged log record and a genuine
   one sent again to the namespace's log subject, and an onDisconnect list
   of a dead node put straight into KV hearth_ondisconnect;
2. change the rules: {".read": true, ".write": true} put straight into KV
   hearth_rules;
3. read: ask hearth.snap.default for the tree, and read the log's
   messages and the rules' value back through the JetStream API
   (STREAM.MSG.GET), looking for a value written through REST.

Through REST it then shows that nothing changed (the rules still closed,
/secret as written, every node the same, writes still working), that
no answer reached the attacker, and that /.metrics counts the drops
(hearth_cluster_rejected_total{kind}).
"""
import base64
import json
import os
import secrets
import select
import shutil
import socket
import ssl
import sys
import time
import urllib.error
import urllib.request
import zlib

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster  # noqa: E402

NS = "default"
MARKER = "plaintext-marker-%s" % secrets.token_hex(6)
CLOSED = {"rules": {".read": "auth != null", ".write": "auth != null"}}
OPEN = {"rules": {".read": True, ".write": True}}


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok  " + what)
    sys.stdout.flush()


# ---- REST ----

def request(url, method="GET", body=None, admin=None, timeout=20):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": "Bearer " + admin} if admin else {}
    req = urllib.request.Request(url, data=data, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def get_json(c, i, path, admin=True):
    status, body = request(c.url(i) + path + ".json",
                           admin=c.admin if admin else None)
    return status, json.loads(body or b"null")


def rejected(c):
    """hearth_cluster_rejected_total{kind} summed over the nodes."""
    total = {}
    for i in range(3):
        status, body = request(c.url(i) + "/.metrics", admin=c.admin)
        if status != 200:
            raise AssertionError("n%d's /.metrics: %d" % (i + 1, status))
        for line in body.decode().splitlines():
            if line.startswith("hearth_cluster_rejected_total{kind=\""):
                kind = line.split('"')[1]
                total[kind] = total.get(kind, 0) + int(line.split()[-1])
    return total


# ---- a raw NATS client (the text protocol, over TLS) ----

class Nats:
    def __init__(self, port, user, password, ca):
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        info = b""
        while not info.endswith(b"\r\n"):
            info += raw.recv(1)
        info = json.loads(info.split(b" ", 1)[1])
        check(info.get("tls_required") or info.get("tls_available"),
              "the nats-server takes TLS only")
        ctx = ssl.create_default_context(cafile=ca)
        self.s = ctx.wrap_socket(raw, server_hostname="localhost")
        self.s.setblocking(False)
        self.buf = b""
        self.s.sendall(b"CONNECT %s\r\nPING\r\n" % json.dumps({
            "user": user, "pass": password, "verbose": False,
            "pedantic": False, "headers": True, "no_responders": True,
            "protocol": 1, "name": "attacker"}).encode())
        self.sid = 0
        self.inbox = "_INBOX.attacker.%s" % secrets.token_hex(4)
        self.sub(self.inbox + ".>")
        self.send(b"PING\r\n")
        self.expect_pong()

    def send(self, data):
        end = time.time() + 10
        while data:
            try:
                data = data[self.s.send(data):]
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError,
                    BlockingIOError):
                if time.time() > end:
                    raise
                select.select([], [self.s], [], 0.1)

    def fill(self, deadline):
        """More bytes into buf; False once deadline passed with none."""
        while True:
            try:
                got = self.s.recv(65536)
                if not got:
                    raise ConnectionError("NATS closed the connection")
                self.buf += got
                return True
            except (ssl.SSLWantReadError, BlockingIOError):
                left = deadline - time.time()
                if left <= 0:
                    return False
                select.select([self.s], [], [], min(left, 0.1))

    def readline(self, deadline):
        while b"\r\n" not in self.buf:
            if not self.fill(deadline):
                return None
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read_bytes(self, n):
        while len(self.buf) < n:
            self.fill(time.time() + 10)
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def next_msg(self, deadline):
        """The next message (subject, headers, data), None at deadline."""
        while True:
            line = self.readline(deadline)
            if line is None:
                return None
            if line.startswith(b"PING"):
                self.send(b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                raise AssertionError("NATS refused: %r" % line)
            elif line.startswith((b"MSG", b"HMSG")):
                parts = line.split()
                if parts[0] == b"MSG":
                    hlen, size = 0, int(parts[-1])
                else:
                    hlen, size = int(parts[-2]), int(parts[-1])
                body = self.read_bytes(size + 2)
                return parts[1].decode(), body[:hlen], body[hlen:size]

    def expect_pong(self):
        deadline = time.time() + 10
        while True:
            line = self.readline(deadline)
            if line is None:
                raise AssertionError("no PONG from NATS")
            if line.startswith(b"PONG"):
                return
            if line.startswith(b"-ERR"):
                raise AssertionError("NATS refused: %r" % line)

    def sub(self, subject):
        self.sid += 1
        self.send(b"SUB %s %d\r\n" % (subject.encode(), self.sid))

    def pub(self, subject, payload, reply=None, headers=None):
        reply_part = b" " + reply.encode() if reply else b""
        if headers is None:
            self.send(b"PUB %s%s %d\r\n%s\r\n" % (
                subject.encode(), reply_part, len(payload), payload))
        else:
            h = b"NATS/1.0\r\n" + b"".join(
                b"%s: %s\r\n" % (k.encode(), v.encode())
                for k, v in headers.items()) + b"\r\n"
            self.send(b"HPUB %s%s %d %d\r\n%s%s\r\n" % (
                subject.encode(), reply_part, len(h), len(h) + len(payload),
                h, payload))

    def messages(self, seconds):
        """Every message to the attacker's inbox within seconds."""
        got = []
        deadline = time.time() + seconds
        while True:
            msg = self.next_msg(deadline)
            if msg is None:
                return got
            got.append(msg)

    def request(self, subject, payload, seconds=5, headers=None):
        """The first answer (subject, headers, data), or None."""
        reply = "%s.%s" % (self.inbox, secrets.token_hex(4))
        self.pub(subject, payload, reply, headers)
        deadline = time.time() + seconds
        while True:
            msg = self.next_msg(deadline)
            if msg is None or msg[0] == reply:
                return msg

    def api(self, subject, body):
        answer = self.request(subject, json.dumps(body).encode())
        if answer is None:
            raise AssertionError("JetStream does not answer " + subject)
        return json.loads(answer[2])

    def close(self):
        self.s.close()


# ---- the attacks ----

def stream_of(ns):
    p = zlib.crc32(ns.encode()) % 32
    return "HEARTH_P%d" % p, "hearth.ns.%d.%s" % (p, ns)


def read_log(nats, ns):
    """Every message of ns's log: [(seq, headers, data)]."""
    stream, subject = stream_of(ns)
    info = nats.api("$JS.API.STREAM.INFO." + stream, {})
    state = info["state"]
    out = []
    for seq in range(state["first_seq"], state["last_seq"] + 1):
        got = nats.api("$JS.API.STREAM.MSG.GET." + stream, {"seq": seq})
        msg = got.get("message")
        if msg and msg["subject"] == subject:
            out.append((seq, base64.b64decode(msg.get("hdrs") or b""),
                        base64.b64decode(msg.get("data") or b"")))
    return out


def attack(c, nats):
    stream, subject = stream_of(NS)
    # forged writes: no answer carries anything back
    forged = (b'{"a":null,"j":false,"h":null,'
              b'"w":[["/secret/password","PWNED"]]}')
    answer = nats.request("hearth.fwd." + NS, forged, seconds=3)
    check(answer is None, "an unjudged forwarded write gets no answer")
    answer = nats.request("hearth.snap." + NS, b"", seconds=3)
    check(answer is None, "a snapshot request gets no answer")
    answer = nats.request("hearth.snap." + NS, b"\x01" + b"x" * 60, seconds=2)
    check(answer is None, "a garbage snapshot request gets no answer")

    # the log and the rules hold no plaintext
    log = read_log(nats, NS)
    check(log, "the attacker reads the log's %d message(s)" % len(log))
    check(not any(MARKER.encode() in data for _, _, data in log),
          "no message of the log holds the value written")
    got = nats.api("$JS.API.STREAM.MSG.GET.KV_hearth_rules",
                   {"last_by_subj": "$KV.hearth_rules." + NS})
    rules_value = base64.b64decode(got["message"]["data"])
    check(b"auth != null" not in rules_value,
          "the rules' value in KV holds no plaintext")

    # a genuine record sent again, and a forged one, to the log
    seq, hdrs, data = log[-1]
    headers = {}
    for line in hdrs.decode().split("\r\n")[1:]:
        if ": " in line:
            k, v = line.split(": ", 1)
            headers[k] = v
    ack = nats.request(subject, data, headers=headers or None)
    check(ack is not None and b'"seq"' in ack[2],
          "the stream takes a genuine record (seq %d) sent again" % seq)
    ack = nats.request(subject, b"HEARTH-LOG 2\nnot a record")
    check(ack is not None and b'"seq"' in ack[2],
          "the stream takes a forged record")

    # the rules, straight into KV; an onDisconnect list of a dead node
    ack = nats.request("$KV.hearth_rules." + NS, json.dumps(OPEN).encode())
    check(ack is not None and b'"seq"' in ack[2],
          "KV hearth_rules takes open rules put straight into it")
    orphan = json.dumps([{"a": None, "j": False, "h": None,
                          "w": [["/secret/password", "PWNED"]]}]).encode()
    ack = nats.request("$KV.hearth_ondisconnect.%s.n9.dead.1" % NS, orphan)
    check(ack is not None and b'"seq"' in ack[2],
          "KV hearth_ondisconnect takes a dead node's onDisconnect list")
    check(not nats.messages(1.0), "nothing else reached the attacker")


def main():
    started = time.time()
    c = Cluster()  # secure: TLS, a NATS user, the cluster secret
    nats = None
    try:
        c.start()
        print("cluster up in %.1f s (%s)" % (time.time() - started, c.root))
        status, _ = request(c.url(0) + "/secret/password.json", "PUT",
                            MARKER, admin=c.admin)
        check(status == 200, "the admin writes /secret/password")
        status, _ = request(c.url(1) + "/.settings/rules.json", "PUT", CLOSED,
                            admin=c.admin)
        check(status == 200, "rules closed to the unauthenticated")
        for i in range(3):
            end = time.time() + 10
            while time.time() < end and get_json(
                    c, i, "/.settings/rules")[1] != CLOSED:
                time.sleep(0.1)
        before = rejected(c)
        user, password = c.credentials("nats.user")
        nats = Nats(c.nats_ports[0], user, password, c.secret("ca.pem"))
        check(True, "the attacker connects with the nodes' NATS user")
        attack(c, nats)
        time.sleep(3)  # a sweep of onDisconnect lists (every 2 s) and more

        # nothing changed
        for i in range(3):
            check(get_json(c, i, "/.settings/rules")[1] == CLOSED,
                  "n%d still holds the closed rules" % (i + 1))
            check(get_json(c, i, "/secret/password", admin=False)[0] == 401,
                  "n%d still denies an unauthenticated read" % (i + 1))
            status, _ = request(c.url(i) + "/x.json", "PUT", 1)
            check(status == 401,
                  "n%d still denies an unauthenticated write" % (i + 1))
        status, _ = request(c.url(2) + "/after.json", "PUT", 1, admin=c.admin)
        check(status == 200, "a write through n3 still succeeds")
        for i in range(3):
            end = time.time() + 10
            while time.time() < end and get_json(c, i, "/after")[1] != 1:
                time.sleep(0.1)
            check(get_json(c, i, "/secret/password")[1] == MARKER,
                  "n%d: /secret/password is as written" % (i + 1))
            check(get_json(c, i, "/after")[1] == 1,
                  "n%d holds the write made after the attacks" % (i + 1))
        data = [get_json(c, i, "/")[1] for i in range(3)]
        check(data[0] == data[1] == data[2], "all three nodes hold the same "
              "data")
        after = rejected(c)
        for kind in ("log", "fwd", "snap", "kv"):
            check(after.get(kind, 0) > before.get(kind, 0),
                  "/.metrics counts the %s messages dropped (%d, was %d)"
                  % (kind, after.get(kind, 0), before.get(kind, 0)))
    except BaseException:
        print("logs in " + c.root)
        raise
    finally:
        if nats:
            nats.close()
        c.stop()
    shutil.rmtree(c.root, ignore_errors=True)
    print("attack test passed in %.1f s" % (time.time() - started))


if __name__ == "__main__":
    main()
