"""test_cluster.py - `make test-cluster`: three nats-servers (JetStream,
clustered) and three `hearth serve --cluster` nodes on loopback, driven
over REST and server-sent events:

1. writes through two nodes: a listener on the third sees every write
   once, in order;
2. compare-and-set (if-match) increments from clients on two nodes end
   exact;
3. kill -9 of the namespace's leader node during acknowledged writes:
   writes succeed again within 15 s; then kill -9 of each nats-server in
   turn (restarted, and JetStream whole again, between): writes
   succeed again within 8 s each time (or within 6 s of JetStream's own
   election of new leaders, when that alone took longer); no
   acknowledged write lost;
4. once quiet, every node (the killed one restarted) holds the same data;
5. an onDisconnect write of a session on a node killed -9 is run by the
   namespace's leader;
6. a stalled JetStream (every nats-server stopped) does not stall a node's
   other requests: an onDisconnect set waits for the cluster's copy, a get
   behind it on the same connection is answered meanwhile;
7. rules set through one node are every node's: a read they deny is
   denied on the others too;
8. a REST write through a follower echoes the data as stored (a server
   timestamp resolved) with its ETag, as one server does;
9. trust (the cluster is secure: TLS, a NATS user with the permissions of
   examples/nats-server.conf, a cluster secret): a node without a secret
   or --cluster-insecure refuses to start, saying why; one whose URLs
   carry the NATS password joins, its banner masking it; one given its
   files by --config joins; the example configuration is valid and holds
   the permissions the test cluster runs with;
10. with every nats-server dead, SIGTERM and SIGINT stop a node within
   5 s, exit status 0.
"""
import signal
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import cluster  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from wsraw import WebSocket  # noqa: E402
from cluster import Cluster  # noqa: E402

EXAMPLE_CONF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                            "..", "examples", "nats-server.conf")

FAILOVER_S = 15  # a leader node's kill -9: its lease expires first
# A nats-server's kill -9: JetStream elects new leaders for what it led
# (nats-server 2.9 waits 4 to 9 s, at random, before it does); writes
# resume within NATS_FAILOVER_S of the kill, or within
# AFTER_JETSTREAM_S of that election when it alone took longer (at most
# 3.8 s after it in 23 kills on this machine: a new leader waits for its
# tail to bring the log's end, and a tail whose consumer libnats never
# made again waits for the watchdog's 1.5 s and a read of the records by
# sequence, on a worker).
NATS_FAILOVER_S = 8
AFTER_JETSTREAM_S = 6
NATS_KILLS = 3
# A node's stop with every nats-server dead: at once, but for an append
# already on its way, which fails at its 5 s bound; the session's
# onDisconnect write run at the stop is one on the namespace's leader.
STOP_S = 5.5


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


def longest_gap_after(times, t0, end):
    """The longest time between t0 and end without a write acknowledged."""
    marks = [t0] + [t for t in times if t0 < t < end] + [end]
    return max(b - a for a, b in zip(marks, marks[1:]))


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
    gap = longest_gap_after(w.times, t0 + 0.5, time.time())
    check(gap <= FAILOVER_S,
          "after kill -9 of the leader n%d, writes succeeded again in %.1f s"
          % (leader + 1, gap))
    return leader, w.acked


class JetStreamWatch(threading.Thread):
    """When, after a nats-server's death, JetStream serves writes again
    (cluster.py's jetstream_serves_writes, polled)."""

    def __init__(self, c):
        super().__init__(daemon=True)
        self.c, self.at = c, None
        self.start()

    def run(self):
        end = time.time() + 60
        while self.at is None and time.time() < end:
            if self.c.jetstream_serves_writes():
                self.at = time.time()
            time.sleep(0.1)


def kill_nats_under_writes(c, s, prefix):
    """kill -9 of nats-server s while a Writer writes (keys prefix...),
    then s restarted: (how long writes went unacknowledged from the kill,
    seconds from the kill to JetStream leading again (inf: never), the
    keys acknowledged). Also soak_failover.py's."""
    c.wait_jetstream_whole()  # else a second loss may cost a quorum
    w = Writer(c, prefix)
    time.sleep(2)
    t0 = time.time()
    c.kill(c.nats, s)
    js = JetStreamWatch(c)
    while time.time() < t0 + 40 and (
            js.at is None or time.time() < max(
                t0 + NATS_FAILOVER_S, js.at + AFTER_JETSTREAM_S) + 1):
        time.sleep(0.2)
    w.stop = True
    w.join()
    gap = longest_gap_after(w.times, t0, time.time())
    elected = (js.at or float("inf")) - t0
    c.start_nats(s)
    return gap, elected, w.acked


def test_kill_nats(c):
    """kill -9 of s0, then s1, then s2 (a server restarted holds nothing:
    killing it again would test nothing), each restarted and JetStream
    whole again before the next."""
    acked = []
    for k in range(NATS_KILLS):
        s = k % 3
        gap, elected, keys = kill_nats_under_writes(c, s, "b%d" % k)
        check(gap <= max(NATS_FAILOVER_S, elected + AFTER_JETSTREAM_S),
              "kill -9 of nats-server s%d: writes succeeded again in %.1f s "
              "(JetStream led again in %.1f s)" % (s, gap, elected))
        acked += keys
    c.wait_jetstream_whole()
    c.wait_ready()
    return acked


def test_stop_without_nats(c):
    """Every nats-server killed: a node stops at once (nothing waits for a
    NATS that cannot answer), cleanly, with a session's onDisconnect kept
    in the cluster (its delete at the session's end fails fast)."""
    session = Realtime(c.http_ports[1])
    answer = session.request(1, "o", {"p": "/presence/u3", "d": "gone"})
    check(answer.get("s") == "ok", "onDisconnect set registered on n2")
    for i in range(3):
        c.kill(c.nats, i)
    time.sleep(1)  # the nodes' leases' rounds meet the dead link
    for i, sig in ((1, signal.SIGTERM), (2, signal.SIGINT)):
        t0 = time.time()
        c.nodes[i].send_signal(sig)
        try:
            rc = c.nodes[i].wait(timeout=30)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.time() - t0
        c.kill(c.nodes, i)
        check(rc == 0 and took <= STOP_S,
              "with every nats-server dead, %s stopped n%d in %.1f s "
              "(exit status %s)" % (sig.name, i + 1, took, rc))
    session.ws.close()


class Realtime:
    """A v5 session over our own WebSocket client (stdlib only)."""

    def __init__(self, port):
        try:
            self.ws = WebSocket(f"ws://127.0.0.1:{port}/.ws?v=5&ns=default",
                                host="127.0.0.1", timeout=10)
        except ConnectionError as e:
            raise AssertionError("a realtime session opened: %s" % e)
        check(True, "a realtime session opened")

    def send(self, msg):
        self.ws.send(json.dumps(msg))

    def recv(self):
        return json.loads(self.ws.recv())

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
        session.ws.settimeout(5)
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
    session.ws.settimeout(30)
    kept = session.recv()
    while kept.get("t") != "d" or kept["d"].get("r") != 2:
        kept = session.recv()
    check(kept["d"]["b"].get("s") == "ok",
          "the onDisconnect set is answered once JetStream is back, in %.1f s"
          % (time.time() - t0))
    session.ws.close()
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


def extra_node(c, name, args, until_joined=True, timeout=30):
    """Runs `hearth serve --cluster ... --node name` with args beside the
    cluster until it has joined (its name among the cluster's live nodes)
    or exited; stops it. Its exit status (None: it was running) and its
    output."""
    data = os.path.join(c.root, "extra-" + name)
    out_path = data + ".log"
    port = cluster.free_port()
    with open(out_path, "wb") as out:
        p = subprocess.Popen([cluster.HEARTH_BIN, "serve", "--port", str(port),
                              "--data", data] + args,
                             stdout=out, stderr=subprocess.STDOUT)
        end = time.time() + timeout
        rc = None
        while time.time() < end:
            rc = p.poll()
            if rc is not None:
                break
            try:
                if until_joined and name in c.status(0)["nodes"]:
                    break
            except Exception:
                pass
            time.sleep(0.2)
        if rc is None:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    with open(out_path, errors="replace") as f:
        return rc, f.read()


def conf_allow(text, kind):
    """The subjects of a permissions block's `kind { allow: [...] }`."""
    m = re.search(kind + r"\s*:\s*\{\s*allow\s*:\s*\[(.*?)\]", text, re.S)
    body = re.sub(r"#[^\n]*", "", m.group(1)) if m else ""
    return re.findall(r'"([^"]+)"', body)


def test_trust(c):
    # No secret and no --cluster-insecure: refused before anything is made.
    rc, out = extra_node(c, "nx", ["--cluster", c.nats_urls(), "--node", "nx"])
    check(rc not in (None, 0) and
          "a cluster secret is required: --cluster-secret-file FILE "
          "(every node the same; e.g. `openssl rand -base64 32 > FILE`), "
          "or --cluster-insecure for experiments" in out and
          not os.path.exists(os.path.join(c.root, "extra-nx")),
          "a node without --cluster-secret-file or --cluster-insecure "
          "refuses to start, saying why")
    if not c.secure:
        return
    # The password in the URLs (visible in ps, but still accepted).
    user, password = c.credentials("nats.user")
    urls = ",".join("tls://%s:%s@127.0.0.1:%d" % (user, password, p)
                    for p in c.nats_ports)
    rc, out = extra_node(c, "nu", ["--cluster", urls, "--node", "nu",
                                   "--cluster-secret-file",
                                   c.secret("cluster.key"),
                                   "--nats-ca", c.secret("ca.pem")])
    banner = [line for line in out.splitlines() if line.startswith("cluster:")]
    check(rc is None and password not in out and
          "cluster: node nu on tls://***@127.0.0.1:%d," % c.nats_ports[0]
          in out and any("masked" in line and "--nats-user-file" in line
                         for line in banner),
          "a node with the NATS password in its URLs joins; its banner "
          "masks it and suggests --nats-user-file")
    # A wrong one: refused, the URL masked in the error too.
    wrong = urls.replace(password, "wrong-" + password[:6])
    rc, out = extra_node(c, "nw", ["--cluster", wrong, "--node", "nw",
                                   "--cluster-secret-file",
                                   c.secret("cluster.key"),
                                   "--nats-ca", c.secret("ca.pem")])
    check(rc not in (None, 0) and "wrong-" not in out and
          "cluster: cannot connect" in out,
          "a node with a wrong NATS password is refused, the password not "
          "shown: " + out.strip().splitlines()[-1][:120])
    # No CA: the servers' certificate is not trusted.
    rc, out = extra_node(c, "nc", ["--cluster", c.nats_urls(), "--node", "nc",
                                   "--cluster-secret-file",
                                   c.secret("cluster.key"),
                                   "--nats-user-file", c.secret("nats.user")])
    check(rc not in (None, 0), "a node that does not trust the NATS CA is "
          "refused")
    # Every file from the config file, cluster-insecure a JSON boolean.
    conf = os.path.join(c.root, "extra.json")
    with open(conf, "w") as f:
        json.dump({"cluster": c.nats_urls(), "node": "nf",
                   "cluster-secret-file": c.secret("cluster.key"),
                   "nats-user-file": c.secret("nats.user"),
                   "nats-ca": c.secret("ca.pem")}, f)
    rc, out = extra_node(c, "nf", ["--config", conf])
    check(rc is None and "NATS user from " + c.secret("nats.user") in out,
          "a node given its secret, NATS user and CA files by --config "
          "joins")
    rc, out = extra_node(c, "nb", ["--config", conf, "--cluster-insecure"])
    check(rc not in (None, 0) and "not both" in out,
          "--cluster-insecure beside a secret file is refused")
    # The example configuration: valid, and the permissions it gives are
    # the ones every node above has worked with.
    with open(EXAMPLE_CONF) as f:
        example = f.read()
    check(sorted(conf_allow(example, "publish")) == sorted(cluster.PUBLISH)
          and sorted(conf_allow(example, "subscribe")) ==
          sorted(cluster.SUBSCRIBE),
          "examples/nats-server.conf gives the permissions the test "
          "cluster runs with")
    tried = os.path.join(c.root, "example.conf")
    with open(tried, "w") as f:
        f.write(example.replace("/etc/nats/tls/server", c.secret("server"))
                .replace("/etc/nats/tls/ca.pem", c.secret("ca.pem"))
                .replace("/var/lib/nats/jetstream",
                         os.path.join(c.root, "example-js")))
    r = subprocess.run([cluster.NATS_BIN, "-c", tried, "-t"],
                       capture_output=True, text=True)
    check(r.returncode == 0, "examples/nats-server.conf is a valid "
          "configuration " + (r.stdout + r.stderr).strip()[-200:])


def main():
    started = time.time()
    c = Cluster()
    try:
        c.start()
        print("cluster up in %.1f s (%s)" % (time.time() - started, c.root))
        test_trust(c)
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
        test_stop_without_nats(c)
    except BaseException:
        print("logs in " + c.root)
        raise
    finally:
        c.stop()
    shutil.rmtree(c.root, ignore_errors=True)  # kept above when a check failed
    print("cluster test passed in %.1f s" % (time.time() - started))


if __name__ == "__main__":
    main()
