"""test_cluster.py - `make test-cluster`: three nats-servers (JetStream,
clustered) and three `hearth serve --cluster` nodes on loopback, driven
over REST and server-sent events:

1. writes through two nodes: a listener on the third sees every write
   once, in order;
2. compare-and-set (if-match) increments from clients on two nodes end
   exact;
3. kill -9 of the namespace's leader node during acknowledged writes, then
   separately of one nats-server: no acknowledged write lost, writes
   succeed again within 15 s;
4. once quiet, every node (the killed one restarted) holds the same data;
5. an onDisconnect write of a session on a node killed -9 is run by the
   namespace's leader;
6. a stalled JetStream (every nats-server stopped) does not stall a node's
   other requests: an onDisconnect set waits for the cluster's copy, a get
   behind it on the same connection is answered meanwhile;
7. rules set through one node are every node's: a read they deny is
   denied on the others too;
8. a REST write through a follower echoes the data as stored (a server
   timestamp resolved) with its ETag, as one server does.
"""
import signal
import base64
import http.client
import json
import os
import shutil
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster  # noqa: E402

FAILOVER_S = 15


def request(url, method="GET", body=None, headers=None, timeout=20):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers=headers or {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, dict(r.headers), json.loads(r.read() or b"null")


def put(c, i, path, value, headers=None):
    return request(c.url(i) + path + ".json", "PUT", value, headers)


def get(c, i, path):
    return request(c.url(i) + path + ".json")[2]


class Listener(threading.Thread):
    """A server-sent event stream of path on node i: every put kept."""

    def __init__(self, c, i, path):
        super().__init__(daemon=True)
        self.conn = http.client.HTTPConnection("127.0.0.1", c.http_ports[i],
                                               timeout=60)
        self.conn.request("GET", path + ".json",
                          headers={"Accept": "text/event-stream"})
        self.resp = self.conn.getresponse()
        self.events = []
        self.ready = threading.Event()
        self.start()

    def run(self):
        event = None
        try:
            for raw in self.resp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event in ("put", "patch"):
                    self.events.append((event, json.loads(line[6:])))
                    self.ready.set()
        except Exception:
            pass

    def close(self):
        self.conn.close()


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok  " + what)
    sys.stdout.flush()


def leader_of(c, ns="default"):
    for i in range(3):
        if c.nodes[i]:
            try:
                name = c.status(i)["leaders"].get(ns)
                if name:
                    return int(name[1:]) - 1
            except Exception:
                pass
    return None


def test_order(c):
    put(c, 2, "/feed/start", True)  # so that each write is a child's put
    listener = Listener(c, 2, "/feed")
    listener.ready.wait(10)  # the initial put
    n = 60
    for k in range(n):
        put(c, k % 2, "/feed/k%03d" % k, k)
    put(c, 2, "/feed/done", True)  # the barrier: after every write above
    end = time.time() + 10
    while time.time() < end and not any(
            e[1]["path"] == "/done" for e in listener.events):
        time.sleep(0.05)
    listener.close()
    seen = [e[1]["path"] for e in listener.events[1:]
            if e[1]["path"].startswith("/k")]
    check(seen == ["/k%03d" % k for k in range(n)],
          "a listener on n3 saw %d writes through n1 and n2 once each, in order" % n)


def cas_increments(c, i, n, errors):
    path = c.url(i) + "/counter.json"
    done = 0
    while done < n:
        try:
            _, headers, value = request(path, headers={"X-Firebase-ETag": "true"})
            etag = headers.get("ETag") or headers.get("Etag")
            request(path, "PUT", (value or 0) + 1, {"if-match": etag})
            done += 1
        except urllib.error.HTTPError as e:
            if e.code != 412:
                errors.append("n%d: HTTP %d" % (i + 1, e.code))
                return


def test_cas(c):
    n = 25
    errors = []
    threads = [threading.Thread(target=cas_increments, args=(c, i, n, errors))
               for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, "compare-and-set increments met no error " + str(errors))
    put(c, 2, "/barrier", 1)  # acknowledged once n3's tail is past them all
    print("counter:", [get(c, i, "/counter") for i in range(3)])
    check(get(c, 2, "/counter") == 2 * n,
          "compare-and-set from n1 and n2: the counter is exactly %d" % (2 * n))


class Writer(threading.Thread):
    """Writes /log/<k> one at a time through the live nodes, round robin,
    retrying a failed write; keeps what was acknowledged and when."""

    def __init__(self, c, prefix):
        super().__init__(daemon=True)
        self.c, self.prefix = c, prefix
        self.acked, self.times, self.stop = [], [], False
        self.start()

    def run(self):
        k, turn = 0, 0
        while not self.stop:
            live = [i for i in range(3) if self.c.nodes[i]]
            i = live[turn % len(live)]
            turn += 1
            key = "%s%04d" % (self.prefix, k)
            try:
                put(self.c, i, "/log/" + key, k, {}, )
                self.acked.append(key)
                self.times.append(time.time())
                k += 1
            except Exception:
                time.sleep(0.1)


def longest_gap_after(times, t0):
    later = [t for t in times if t >= t0]
    return (later[0] - t0) if later else float("inf")


def test_kill_leader(c):
    w = Writer(c, "a")
    time.sleep(2)
    leader = leader_of(c)
    check(leader is not None, "n%d leads namespace default" % ((leader or 0) + 1))
    t0 = time.time()
    c.kill(c.nodes, leader)
    time.sleep(FAILOVER_S + 1)
    w.stop = True
    w.join()
    gap = longest_gap_after(w.times, t0 + 0.5)
    check(gap <= FAILOVER_S,
          "after kill -9 of the leader n%d, writes succeeded again in %.1f s"
          % (leader + 1, gap))
    return leader, w.acked


def test_kill_nats(c):
    w = Writer(c, "b")
    time.sleep(2)
    t0 = time.time()
    c.kill(c.nats, 0)
    time.sleep(FAILOVER_S + 1)
    w.stop = True
    w.join()
    gap = longest_gap_after(w.times, t0 + 0.5)
    check(gap <= FAILOVER_S,
          "after kill -9 of nats-server s0, writes succeeded again in %.1f s" % gap)
    return w.acked


class Realtime:
    """A v5 session over a WebSocket of our own (stdlib only)."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(("GET /.ws?v=5&ns=default HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                        % key).encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self.buf += self.s.recv(4096)
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        check(b" 101 " in head.split(b"\r\n")[0], "a realtime session opened")

    def send(self, msg):
        data = json.dumps(msg).encode()
        mask = os.urandom(4)
        assert len(data) < 126
        self.s.sendall(bytes([0x81, 0x80 | len(data)]) + mask +
                       bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _need(self, n):
        while len(self.buf) < n:
            self.buf += self.s.recv(65536)

    def recv(self):
        self._need(2)
        n = self.buf[1] & 0x7F
        at = 2
        if n == 126:
            self._need(4)
            n, at = int.from_bytes(self.buf[2:4], "big"), 4
        elif n == 127:
            self._need(10)
            n, at = int.from_bytes(self.buf[2:10], "big"), 10
        self._need(at + n)
        data, self.buf = self.buf[at:at + n], self.buf[at + n:]
        return json.loads(data)

    def request(self, r, action, body):
        self.send({"t": "d", "d": {"r": r, "a": action, "b": body}})
        while True:
            m = self.recv()
            if m.get("t") == "d" and m["d"].get("r") == r:
                return m["d"]["b"]


def test_ondisconnect_of_dead_node(c):
    leader = leader_of(c)
    victim = (leader + 1) % 3
    session = Realtime(c.http_ports[victim])
    answer = session.request(1, "o", {"p": "/presence/u1", "d": "offline"})
    check(answer.get("s") == "ok", "onDisconnect set registered on n%d" % (victim + 1))
    put(c, victim, "/presence/u1", "online")
    c.kill(c.nodes, victim)
    t0 = time.time()
    other = (victim + 1) % 3
    while time.time() - t0 < FAILOVER_S and get(c, other, "/presence/u1") != "offline":
        time.sleep(0.2)
    check(get(c, other, "/presence/u1") == "offline",
          "the leader ran the onDisconnect of dead n%d's session in %.1f s"
          % (victim + 1, time.time() - t0))
    c.start_node(victim)
    c.wait_ready()


def test_stalled_jetstream(c):
    leader = leader_of(c)
    i = (leader + 1) % 3
    session = Realtime(c.http_ports[i])
    check(session.request(1, "g", {"p": "/presence", "q": {}}).get("s") == "ok",
          "a realtime get on n%d" % (i + 1))
    for p in c.nats:
        os.kill(p.pid, signal.SIGSTOP)
    try:
        t0 = time.time()
        session.send({"t": "d", "d": {"r": 2, "a": "o",
                                      "b": {"p": "/presence/u2", "d": "gone"}}})
        session.send({"t": "d", "d": {"r": 3, "a": "g",
                                      "b": {"p": "/presence", "q": {}}}})
        session.s.settimeout(5)
        first = session.recv()
        while first.get("t") != "d" or "r" not in first["d"]:
            first = session.recv()
        took = time.time() - t0
    finally:
        for p in c.nats:
            os.kill(p.pid, signal.SIGCONT)
    check(first["d"]["r"] == 3 and took < 1.5,
          "with JetStream stalled, a get behind an onDisconnect set is answered "
          "first, in %.2f s (got r=%s)" % (took, first["d"].get("r")))
    session.s.settimeout(30)
    kept = session.recv()
    while kept.get("t") != "d" or kept["d"].get("r") != 2:
        kept = session.recv()
    check(kept["d"]["b"].get("s") == "ok",
          "the onDisconnect set is answered once JetStream is back, in %.1f s"
          % (time.time() - t0))
    session.s.close()
    c.wait_ready()


def rules_on(c, i):
    return request(c.url(i) + "/.settings/rules.json",
                   headers={"Authorization": "Bearer " + c.admin})[2]


def read_status(c, i, path):
    try:
        return request(c.url(i) + path + ".json")[0]
    except urllib.error.HTTPError as e:
        return e.code


def set_rules(c, i, doc):
    status = request(c.url(i) + "/.settings/rules.json", "PUT", doc,
                     {"Authorization": "Bearer " + c.admin})[0]
    check(status == 200, "rules set through n%d" % (i + 1))
    for j in range(3):  # each node takes them (a change, then a barrier)
        end = time.time() + 10
        while time.time() < end and rules_on(c, j) != doc:
            time.sleep(0.1)
        check(rules_on(c, j) == doc, "n%d holds the rules set through n%d"
              % (j + 1, i + 1))


def test_rules_everywhere(c):
    put(c, 0, "/secret/x", 1)
    locked = {"rules": {".write": True, "public": {".read": True}}}
    set_rules(c, 0, locked)
    for j in range(3):
        check(read_status(c, j, "/secret/x") == 401,
              "n%d denies the read the rules set through n1 deny" % (j + 1))
    open_rules = {"rules": {".read": True, ".write": True}}
    set_rules(c, 2, open_rules)
    for j in range(3):
        check(read_status(c, j, "/secret/x") == 200,
              "n%d allows it again once n3 opened it" % (j + 1))


def test_echo_on_a_follower(c):
    f = (leader_of(c) + 1) % 3
    etag = {"X-Firebase-ETag": "true"}
    _, headers, body = request(c.url(f) + "/echo/t.json", "PUT",
                               {".sv": "timestamp"}, etag)
    check(isinstance(body, (int, float)),
          "a PUT through follower n%d echoes the stored timestamp (%r)"
          % (f + 1, body))
    _, again, now = request(c.url(f) + "/echo/t.json", headers=etag)
    check(headers.get("ETag") and headers.get("ETag") == again.get("ETag")
          and now == body, "its ETag is the stored data's (%s)"
          % headers.get("ETag"))
    _, gone, _ = request(c.url(f) + "/echo/t.json", "DELETE", headers=etag)
    check(gone.get("ETag") == "null_etag",
          "a DELETE through it answers the ETag of nothing")
    # A caller who may write but not read gets back what it sent, and no
    # ETag: nothing of the stored data.
    set_rules(c, f, {"rules": {".write": True, "public": {".read": True}}})
    _, headers, body = request(c.url(f) + "/echo/t.json", "PUT",
                               {".sv": "timestamp"}, etag)
    check(body == {".sv": "timestamp"} and "ETag" not in headers,
          "a caller who may not read gets what it sent, without an ETag "
          "(%r, %r)" % (body, headers.get("ETag")))
    set_rules(c, f, {"rules": {".read": True, ".write": True}})


def export(c, i):
    return request(c.url(i) + "/.json?format=export")[2]


def test_same_data(c, acked):
    end = time.time() + 30
    while time.time() < end:
        try:
            views = [export(c, i) for i in range(3)]
            if views[0] == views[1] == views[2]:
                break
        except Exception:
            pass
        time.sleep(0.5)
    views = [export(c, i) for i in range(3)]
    check(views[0] == views[1] == views[2], "all three nodes hold the same data")
    log = views[0].get("log", {})
    lost = [k for k in acked if k not in log]
    check(not lost, "none of %d acknowledged writes was lost %s"
          % (len(acked), lost[:5]))


def main():
    started = time.time()
    c = Cluster()
    try:
        c.start()
        print("cluster up in %.1f s (%s)" % (time.time() - started, c.root))
        test_order(c)
        test_cas(c)
        test_ondisconnect_of_dead_node(c)
        test_stalled_jetstream(c)
        test_rules_everywhere(c)
        test_echo_on_a_follower(c)
        leader, acked = test_kill_leader(c)
        c.start_node(leader)  # back, from its local store and the log
        c.wait_ready()
        acked += test_kill_nats(c)
        test_same_data(c, acked)
    except BaseException:
        print("logs in " + c.root)
        raise
    finally:
        c.stop()
    shutil.rmtree(c.root, ignore_errors=True)  # kept above when a check failed
    print("cluster test passed in %.1f s" % (time.time() - started))


if __name__ == "__main__":
    main()
