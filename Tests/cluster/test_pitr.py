"""test_pitr.py - point-in-time recovery of a cluster (README
"Point-in-time recovery"), part of `make test-cluster`: three nats-servers
and three `hearth serve --cluster --retain 8s` nodes (sealed, as in
production), written to through every node over time, anonymous and as
the admin:

1. `hearth backup --at TIME --url NODE` equals the state the test kept at
   that instant, for instants inside the window, through every node;
   `--at-seq N` (N from `hearth log --url`) equals the state after that
   write;
   (the log read back past a burst of 300 writes, more than a reader's
   batch, and a write of 1.5 MB, a chain of parts);
2. the log is trimmed (the leader's status shows it purged) and an
   instant from before the oldest checkpoint kept (before the first
   write) is refused as not retained, never answered wrong;
3. `hearth log --url` lists every write of the window in order with its
   time, stream sequence, path and identity (admin or anonymous);
4. `hearth restore --path /items FILE --url` through one node is seen on
   the others, writes elsewhere kept;
5. /.log and /.backup?at= refuse anyone but the admin; `hearth log --data`
   on a node's directory is refused, pointing to --url;
6. nothing of it needs more than the NATS user's permissions (the
   nats-servers log no violation).

Run: HEARTH_BIN=.build/debug/hearth python3 Tests/cluster/test_pitr.py
"""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
import cluster  # noqa: E402
from cluster import Cluster  # noqa: E402

NS = "pitr"
WINDOW_S = 8
SETTLE_S = 10  # every node has applied a write within this
BURST = 300


def rest(c, i, method, path, body=None, admin=True, token=None):
    headers = {}
    if admin or token:
        headers["Authorization"] = "Bearer " + (token or c.admin)
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request("%s%s.json?ns=%s" % (c.url(i), path, NS),
                                 data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=20) as r:
        return json.loads(r.read() or b"null")


def hearth(*args):
    p = subprocess.run([cluster.HEARTH_BIN, *args], capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def node_url(c, i):
    return "%s/?ns=%s" % (c.url(i), NS)


def backup(c, i, out, *target):
    code, _, err = hearth("backup", *target, "--url", node_url(c, i), out)
    if code:
        return None, err
    with open(out) as f:
        return json.load(f), err


def write_phase(c, first, count, states, admin_every=2):
    """count writes of /items/kN (N from first), each through the next
    node, every other one as the admin: after each, the instant (ms) and
    the whole state then, as the leader ordered it."""
    for n in range(first, first + count):
        i = n % 3
        rest(c, i, "PUT", "/items/k%d" % n, n, admin=(n % admin_every == 0))
        # forwarded writes are acknowledged once this node has them; the
        # state is read back from the same node
        state = rest(c, i, "GET", "/")
        states.append((int(time.time() * 1000), n, state))
        time.sleep(0.06)  # the next write's time is past this instant


def wait_same(c, path, want, timeout=SETTLE_S):
    end = time.time() + timeout
    seen = None
    while time.time() < end:
        seen = [rest(c, i, "GET", path) for i in range(3)]
        if all(s == want for s in seen):
            return
        time.sleep(0.1)
    raise AssertionError("nodes disagree on %s: %r, want %r" % (path, seen,
                                                                 want))


def purged_through(c):
    return max(c.status(i)["namespaces"].get(NS, {}).get("purged_through", 0)
               for i in range(3))


def test_pitr(c):
    tmp = os.path.join(c.root, "pitr")
    os.makedirs(tmp)
    states = []
    before = int(time.time() * 1000) - 1  # nothing written yet
    write_phase(c, 0, 12, states)
    early = states[0]
    # The first phase ages past the window; the leader checkpoints and
    # trims meanwhile (a purge round every second with this window).
    time.sleep(WINDOW_S + 2)
    # A burst longer than a reader's batch (256 messages), replayed by
    # every backup below.
    for b in range(BURST):
        rest(c, 0, "PUT", "/burst/b%d" % b, b, admin=False)
    # A record past NATS's largest message: a chain of parts in the log.
    rest(c, 1, "PUT", "/big", "x" * (1536 * 1024))
    inside = len(states)
    write_phase(c, 12, 18, states)
    rest(c, 1, "PUT", "/other", "kept")  # not part of the restore below
    deadline = time.time() + 15
    while purged_through(c) == 0:
        assert time.time() < deadline, "the leader never purged its log"
        time.sleep(0.3)
    print("purged through %d" % purged_through(c))

    # 1. Instants inside the window, through every node.
    for k, (at, n, state) in enumerate(states[inside::4]):
        got, err = backup(c, k % 3, os.path.join(tmp, "b%d.json" % n),
                          "--at", str(at))
        assert got == state, "at %d (after k%d) node %d: %r (%s), want %r" % (
            at, n, k % 3, got, err, state)

    # 3. The log, through a follower: every write of the window, in order.
    code, out, err = hearth("log", "--url", node_url(c, 2), "--path",
                            "/items")
    assert code == 0, err
    changes = [json.loads(line) for line in out.splitlines()]
    by_key = {ch["path"]: ch for ch in changes}
    seqs = [ch["sequence"] for ch in changes]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    for _, n, _ in states[inside:]:
        ch = by_key["/items/k%d" % n]
        assert ch["identity"] == ("admin" if n % 2 == 0 else "anonymous"), ch
        assert ch["bytes"] == len(str(n)) and ch["time"].endswith("Z"), ch
    assert "/other" not in by_key  # --path
    code, out, err = hearth("log", "--url", node_url(c, 0), "--since",
                            str(states[-3][0]))
    assert code == 0, err
    assert [json.loads(x)["path"] for x in out.splitlines()] == [
        "/items/k%d" % states[-2][1], "/items/k%d" % states[-1][1], "/other"]

    # --at-seq: the state after a middle write of the window.
    at, n, state = states[inside + 9]
    got, err = backup(c, 1, os.path.join(tmp, "seq.json"), "--at-seq",
                      str(by_key["/items/k%d" % n]["sequence"]))
    assert got == state, (got, err, state)

    # 2. Trimmed: before the first write is older than every checkpoint
    # kept, and its records are gone; the first write's instant is too
    # (unless a checkpoint was noted within the same few ms): refused as
    # not retained, never answered wrong.
    got, err = backup(c, 0, os.path.join(tmp, "before.json"), "--at",
                      str(before))
    assert got is None and "not retained" in err, (got, err)
    got, err = backup(c, 0, os.path.join(tmp, "early.json"), "--at",
                      str(early[0]))
    assert got == early[2] or (got is None and "not retained" in err), (
        got, err)
    code, _, err = hearth("backup", "--at-seq", "999999999", "--url",
                          node_url(c, 0), os.path.join(tmp, "x.json"))
    assert code == 1 and "not written yet" in err, err

    # 4. One subtree back through node 2, seen on every node; /other stays.
    moment, n, then = states[inside + 4]
    path = os.path.join(tmp, "restore.json")
    assert backup(c, 2, path, "--at", str(moment))[0] == then
    code, _, err = hearth("restore", "--path", "/items", path, "--url",
                          node_url(c, 2))
    assert code == 0, err
    wait_same(c, "/items", then["items"])
    wait_same(c, "/other", "kept")

    # 5. The admin's doors; a node's own directory is not the history.
    for token in (None, "not-the-admin"):
        for door in ("/.log?ns=%s" % NS, "/.backup?ns=%s&at=%d" % (NS, moment)):
            req = urllib.request.Request(c.url(0) + door, headers=(
                {"Authorization": "Bearer " + token} if token else {}))
            try:
                urllib.request.urlopen(req, timeout=10)
                raise AssertionError("%s answered without the admin" % door)
            except urllib.error.HTTPError as e:
                assert e.code == 401, (door, e.code)
    code, _, err = hearth("log", "--data", os.path.join(c.root, "data1"),
                          "--namespace", NS)
    assert code == 1 and "--url" in err and "cluster" in err, err

    # All of it within the NATS user's permissions (examples/
    # nats-server.conf): a refused publish is only logged by the server.
    for i in range(3):
        with open(os.path.join(c.root, "nats%d.log" % i)) as f:
            refused = [x for x in f if "Violation" in x]
        assert not refused, refused[:3]


def main():
    started = time.time()
    c = Cluster(extra_args=["--retain", "%ds" % WINDOW_S])
    try:
        c.start()
        print("cluster up in %.1f s (%s)" % (time.time() - started, c.root))
        test_pitr(c)
    except BaseException:
        print("logs in " + c.root)
        raise
    finally:
        c.stop()
    shutil.rmtree(c.root, ignore_errors=True)
    print("cluster point-in-time test passed in %.1f s" %
          (time.time() - started))


if __name__ == "__main__":
    main()
