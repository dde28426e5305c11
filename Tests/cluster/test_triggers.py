"""test_triggers.py - `make test-cluster`: database triggers on a cluster
(README "Triggers", docs/ARCHITECTURE.md "Triggers in a cluster").

Three nats-servers and three `hearth serve --cluster` nodes (cluster.py),
each given the same `--triggers FILE`: a webhook trigger on /msgs/{id}
pointing at a real HTTP endpoint run here (http.server on loopback) that
records every event it is sent, and answers 503 while told to fail.

1. order: writes to three paths, each path written in turn through the
   three nodes (each write acknowledged before the next); every write's
   event reaches the endpoint, and per path in the order written
   (repeats allowed: at least once); then a write with triggers=off (an
   import's) through each node, which fires on none;
2. takeover: the endpoint fails; more writes; the node whose deliverer
   holds the batch (its /.metrics shows the failed attempts) is killed
   with -9; the endpoint recovers; another node delivers everything that
   was written, none lost, per path in order, and its metrics say so;
   the killed node restarted, a trigger whose endpoint always fails: its
   events become dead letters on the node that gave up (X), a second node
   (Y) lists them, in order, with every node's gauge the cluster's
   count; X is killed with -9 and Y still lists them (a forged letter
   dropped and counted); the endpoint fixed, a retry through the third
   node (Z) delivers each once, in order, and empties the dead set;
3. a registration through one node's admin endpoint reaches every node
   and fires for a write through another; its removal reaches them too;
   a forged batch of events and a forged registration (an attacker with
   NATS's credentials, not the cluster secret) are dropped and counted.

    python3 Tests/cluster/test_triggers.py [--keep]
"""
import http.server
import json
import os
import shutil
import signal
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster  # noqa: E402
from test_attacks import Nats, rejected  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


class Endpoint:
    """Records each event's (path, after) in arrival order; 503 while
    failing (counting the refusals)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.events = []
        self.failing = False
        self.dead_failing = True  # /dead answers 500 while set
        self.refused = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                with outer.lock:
                    fail = (outer.dead_failing if self.path == "/dead"
                            else outer.failing)
                    if fail:
                        outer.refused += 1
                    else:
                        ev = json.loads(body)
                        outer.events.append((ev["path"], ev["after"]))
                self.send_response(503 if fail else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seen(self):
        with self.lock:
            return list(self.events)


def put(c, i, path, value, timeout=10, query=""):
    req = urllib.request.Request(
        c.url(i) + path + ".json" + query, data=json.dumps(value).encode(),
        method="PUT", headers={"Authorization": "Bearer " + c.admin})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status


def put_retrying(c, nodes, path, value, bound=30):
    """A write acknowledged through one of nodes (a leader may be moving)."""
    end = time.time() + bound
    while True:
        for i in nodes:
            try:
                if put(c, i, path, value, timeout=5) == 200:
                    return
            except Exception:
                pass
        if time.time() > end:
            raise RuntimeError("no node acknowledged %s" % path)
        time.sleep(0.2)


def admin(c, i, method, path, body):
    req = urllib.request.Request(
        c.url(i) + path + ".json", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + c.admin})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, None


def names(c, i):
    code, listed = admin(c, i, "GET", "/.settings/triggers", None)
    return [t["name"] for t in listed["triggers"]] if code == 200 else []


def metric(c, i, name, trigger="ct"):
    """A trigger's line of node i's /.metrics (trigger None: the line of
    kind "trig", hearth_cluster_rejected_total's)."""
    req = urllib.request.Request(c.url(i) + "/.metrics",
                                 headers={"Authorization": "Bearer " + c.admin})
    with urllib.request.urlopen(req, timeout=5) as r:
        text = r.read().decode()
    key = ('%s{trigger="%s"} ' % (name, trigger) if trigger
           else '%s{kind="trig"} ' % name)
    for line in text.splitlines():
        if line.startswith(key):
            return int(float(line[len(key):]))
    return None


def in_order(seen, written, show=False):
    """Whether every path's values arrive as written (each value may be
    repeated: at least once), none missing."""
    for path, values in written.items():
        got = [a["n"] for p, a in seen if p.strip("/") == path and a]
        firsts = []
        for v in got:
            if not firsts or firsts[-1] != v:
                if v in firsts:  # a repeat of an earlier one: allowed only
                    continue     # as part of a redelivered batch
                firsts.append(v)
        if firsts != values:
            if show:
                print("  %s: written %s, delivered %s" % (path, values, got))
            return False
    return True


def wait_for(cond, bound):
    end = time.time() + bound
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


def main():
    keep = "--keep" in sys.argv
    hook = Endpoint()
    c = Cluster()
    spec = {"triggers": [{"name": "ct", "ref": "/msgs/{id}",
                          "event": "written", "format": "webhook",
                          "url": "http://127.0.0.1:%d/hook" % hook.port,
                          "retry_min_ms": 100, "retry_max_ms": 500,
                          "max_attempts": 1000},
                         {"name": "dl", "ref": "/dl/{id}", "format": "webhook",
                          "url": "http://127.0.0.1:%d/dead" % hook.port,
                          "retry_min_ms": 10, "retry_max_ms": 20,
                          "max_attempts": 3}]}
    path = os.path.join(c.root, "triggers.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    c.extra_args = ["--triggers", path]
    started = time.time()
    finished = False
    try:
        c.start()
        # 1. writes through every node, in order per path
        written = {}
        paths = ["msgs/a", "msgs/b", "msgs/c"]
        for k in range(12):
            for j, p in enumerate(paths):
                i = (k + j) % 3
                put_retrying(c, [i], "/" + p, {"n": k})
                written.setdefault(p, []).append(k)
        total = sum(len(v) for v in written.values())
        wait_for(lambda: in_order(hook.seen(), written), 20)
        check(in_order(hook.seen(), written, True),
              "every write through three nodes delivered, in order per "
              "path (%d events)" % total)
        counts = [metric(c, i, "hearth_trigger_delivered_total") or 0
                  for i in range(3)]
        check(sum(counts) >= total,
              "the nodes' metrics count what they delivered: %s" % counts)

        # an import through each node (forwarded to the leader) with
        # triggers=off fires on no node: the events after it arrive, and
        # none of it before them
        for i in range(3):
            check(put(c, i, "/msgs/quiet", {"n": i}, query="?triggers=off")
                  == 200, "a write with triggers=off through n%d" % (i + 1))

        # an attacker with the nodes' NATS user but not the cluster
        # secret: a forged batch of events, and a registration put
        # straight into KV hearth_triggers
        kinds_before = rejected(c)
        user, password = c.credentials("nats.user")
        nats = Nats(c.nats_ports[0], user, password, c.secret("ca.pem"))
        event = json.dumps({"path": "/msgs/forged", "after": {"n": 9}}).encode()
        forged = struct.pack("<IIQ", len(event), zlib.crc32(event), 0) + event
        ack = nats.request("hearth.trig.ct.default", forged,
                           headers={"Nats-Msg-Id": "default:999999:ct:0"})
        check(ack is not None and b'"seq"' in ack[2],
              "the stream takes a forged batch of events")
        evil = {"name": "evil", "ref": "/msgs/{id}", "format": "webhook",
                "url": "http://127.0.0.1:%d/evil" % hook.port}
        ack = nats.request("$KV.hearth_triggers.evil",
                           json.dumps(evil).encode())
        check(ack is not None and b'"seq"' in ack[2],
              "KV hearth_triggers takes a registration put into it")
        nats.close()

        def dropped():
            kinds = rejected(c)
            return (kinds.get("trig", 0) > kinds_before.get("trig", 0) and
                    kinds.get("kv", 0) > kinds_before.get("kv", 0))
        check(wait_for(dropped, 10),
              "/.metrics counts the forged batch and registration dropped "
              "(%s)" % rejected(c))
        check(all("evil" not in names(c, i) for i in range(3)),
              "the forged registration is registered nowhere")

        # 2. the delivering node killed with events undelivered
        hook.failing = True
        before = [metric(c, i, "hearth_trigger_failed_total") or 0
                  for i in range(3)]
        for k in range(12, 20):
            for j, p in enumerate(paths):
                put_retrying(c, [(k + j) % 3], "/" + p, {"n": k})
                written[p].append(k)
        holder = None
        end = time.time() + 15
        while holder is None and time.time() < end:
            for i in range(3):
                f = metric(c, i, "hearth_trigger_failed_total") or 0
                if f > before[i]:
                    holder = i
            time.sleep(0.2)
        check(holder is not None, "a node is retrying the failing endpoint")
        if holder is None:
            return
        check(wait_for(lambda: (metric(c, holder, "hearth_trigger_lag") or 0)
                       > 0, 5),
              "its lag shows the events waiting (%s)"
              % metric(c, holder, "hearth_trigger_lag"))
        delivered_before = [metric(c, i, "hearth_trigger_delivered_total") or 0
                            for i in range(3)]
        c.kill(c.nodes, holder)
        killed_at = time.time()
        hook.failing = False
        others = [i for i in range(3) if i != holder]
        # writes go on through the others (a new leader, perhaps)
        for j, p in enumerate(paths):
            put_retrying(c, others, "/" + p, {"n": 20})
            written[p].append(20)
        wait_for(lambda: in_order(hook.seen(), written), 30)
        check(in_order(hook.seen(), written, True), "after kill -9 of the delivering node n%d, another node "
              "delivered every event, in order per path (%.1f s)"
              % (holder + 1, time.time() - killed_at))
        after = [metric(c, i, "hearth_trigger_delivered_total") or 0
                 for i in others]
        check(not [p for p, _ in hook.seen() if "quiet" in p],
              "the writes with triggers=off fired nothing")
        check(not [p for p, _ in hook.seen() if "forged" in p],
              "the forged batch reached no endpoint")
        check(any(a > delivered_before[i] for a, i in zip(after, others)),
              "a surviving node's delivered count grew: %s" % after)
        check(wait_for(lambda: all((metric(c, i, "hearth_trigger_lag") or 0)
                                   == 0 for i in others), 10),
              "the surviving nodes' lag is back to 0: %s"
              % [metric(c, i, "hearth_trigger_lag") for i in others])

        # dead letters: every node's. The killed node comes back, so that
        # the letters are given up on one node, listed through a second,
        # and retried through the third once the first is killed.
        c.start_node(holder)
        c.wait_ready()
        gave_before = [metric(c, i, "hearth_trigger_dead_total", "dl") or 0
                       for i in range(3)]
        for k in range(3):
            put_retrying(c, [k], "/dl/x%d" % k, {"n": k})

        def gave_up():
            return [(metric(c, i, "hearth_trigger_dead_total", "dl") or 0)
                    - gave_before[i] for i in range(3)]
        check(wait_for(lambda: sum(gave_up()) >= 3, 20),
              "three events failing max_attempts times are dead letters "
              "(given up per node: %s)" % gave_up())
        x = max(range(3), key=lambda i: gave_up()[i])
        y, z = [i for i in range(3) if i != x]
        want = ["/dl/x0", "/dl/x1", "/dl/x2"]

        def listed(i):
            code, dead = admin(c, i, "GET", "/.settings/triggers/dl/dead",
                               None)
            return [d["path"] for d in dead] if code == 200 else code
        check(listed(y) == want,
              "n%d lists every dead letter, n%d's %d among them, in order: "
              "%s" % (y + 1, x + 1, gave_up()[x], listed(y)))
        check(wait_for(lambda: all(
            metric(c, i, "hearth_trigger_dead_letters", "dl") == 3
            for i in range(3)), 5),
            "every node's dead_letters gauge is the cluster's: %s"
            % [metric(c, i, "hearth_trigger_dead_letters", "dl")
               for i in range(3)])
        # an outsider's dead letter (NATS's credentials, not the secret)
        def trig_rejected(i):
            return metric(c, i, "hearth_cluster_rejected_total", None) or 0
        rejected_before = trig_rejected(y)
        nats = Nats(c.nats_ports[0], user, password, c.secret("ca.pem"))
        ack = nats.request("hearth.dead.dl.default", forged,
                           headers={"Nats-Msg-Id": "forged:0"})
        check(ack is not None and b'"seq"' in ack[2],
              "stream HEARTH_DEAD takes a forged dead letter")
        nats.close()
        c.kill(c.nodes, x)
        check(listed(y) == want,
              "after kill -9 of n%d, n%d still lists its letters, the forged "
              "one not: %s" % (x + 1, y + 1, listed(y)))
        check(trig_rejected(y) > rejected_before,
              "the forged dead letter is dropped and counted by n%d (%d)"
              % (y + 1, trig_rejected(y)))
        hook.dead_failing = False
        code, body = admin(c, z, "POST", "/.settings/triggers/dl/retry", None)
        check(code == 200 and body and body.get("requeued") == 3,
              "retried through n%d (%d, %s)" % (z + 1, code, body))

        def dl_seen():
            return ["/" + p.strip("/") for p, _ in hook.seen()
                    if p.strip("/").startswith("dl/")]
        check(wait_for(lambda: dl_seen() == want, 20),
              "the dead letters retried are delivered, once each, in "
              "order: %s" % dl_seen())
        check(listed(y) == [] and listed(z) == [],
              "no node lists them any more")
        check(wait_for(lambda: all(
            metric(c, i, "hearth_trigger_dead_letters", "dl") == 0
            for i in (y, z)), 5),
            "the gauges are back to 0: %s"
            % [metric(c, i, "hearth_trigger_dead_letters", "dl")
               for i in (y, z)])
        others = [y, z]

        # 3. a registration through one node's admin endpoint reaches
        # the others, and fires from there; its removal too
        code, _ = admin(c, others[0], "PUT", "/.settings/triggers/viaadmin",
                        {"ref": "/adm/{id}", "format": "webhook",
                         "url": "http://127.0.0.1:%d/hook" % hook.port})
        check(code == 200, "a registration through n%d's admin endpoint "
              "(%d)" % (others[0] + 1, code))
        check(wait_for(lambda: all(
            "viaadmin" in names(c, i) for i in others), 10),
            "it is registered on every node")
        put_retrying(c, [others[1]], "/adm/one", {"n": 1})
        check(wait_for(lambda: ("/adm/one", {"n": 1}) in
                       [(("/" + p.strip("/")), a) for p, a in hook.seen()], 20),
              "a write through n%d fires it" % (others[1] + 1))
        code, _ = admin(c, others[1], "DELETE",
                        "/.settings/triggers/viaadmin", None)
        check(code == 200, "removed through n%d (%d)" % (others[1] + 1, code))
        check(wait_for(lambda: all(
            "viaadmin" not in names(c, i) for i in others), 10),
            "it is removed from every node")
        code, _ = admin(c, others[0], "PUT", "/.settings/triggers/bad",
                        {"ref": "/x"})
        check(code == 400, "a bad registration is refused (%d)" % code)
        running = [p for p in c.nodes if p]
        t0 = time.time()
        c.stop()
        check(all(p.returncode == 0 for p in running),
              "the nodes stop cleanly, deliverers and all (%.1f s): %s"
              % (time.time() - t0, [p.returncode for p in running]))
        finished = True
    finally:
        c.stop()
        hook.server.shutdown()
        print("took %.1f s" % (time.time() - started))
        if failures or keep or not finished:
            print("logs and data kept in " + c.root)
        else:
            shutil.rmtree(c.root, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
    main()
