"""cluster_bench.py - `make bench-cluster`: cluster mode's figures beside
their anchors, measured in the same run on this machine.

Writes: acknowledged PUTs per second to one namespace (wrk over HTTP
keep-alive), one at a time and with 64 in flight, through the leader and
through a follower of a 3-node cluster on 3 clustered nats-servers
(3 replicas); beside single-node Hearth with --fsync always and beside raw
JetStream publish-with-ack (same servers, 3 replicas).
Fan-out: one write to 3 x N server-sent event streams spread over the 3
nodes against N on one node (N = BENCH_STREAMS_PER_NODE, default 3,000:
the issue's 10,000 per node needs more than this machine's 20,000 open
files per process for the one client process holding all 30,000); and N
spread over the 3 nodes, the same total work as N on one.
"""
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Tests", "cluster"))
os.environ.setdefault("HEARTH_BIN", "build/hearth-serve")
import cluster  # noqa: E402

DIRS = []  # removed at the end
SECONDS = int(os.environ.get("BENCH_SECONDS", "5"))
LUA = """counter = 0
request = function()
  counter = counter + 1
  return wrk.format("PUT", "/bench/k" .. (counter % 1000) .. ".json", nil, "12345")
end
"""


def wrk(url, conns):
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(LUA)
    out = subprocess.run(["wrk", "-t", "1" if conns == 1 else "2", "-c", str(conns),
                          "-d", "%ds" % SECONDS, "-s", f.name, url],
                         capture_output=True, text=True).stdout
    os.unlink(f.name)
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return float(m.group(1)) if m else 0.0, int(errors.group(1)) if errors else 0


def raw_js(c, inflight):
    out = subprocess.run(["build/jetstream-raw", c.nats_urls(), "3", str(SECONDS),
                          str(inflight)], capture_output=True, text=True)
    return float(out.stdout.strip() or 0)


def single_node():
    port = cluster.free_port()
    d = tempfile.mkdtemp(prefix="hearth-bench-single-")
    DIRS.append(d)
    p = subprocess.Popen(["build/hearth-serve", str(port), d, "always"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    url = "http://127.0.0.1:%d" % port
    try:
        return wrk(url, 1)[0], wrk(url, 64)[0], port, p
    except BaseException:
        p.terminate()
        raise


def leader_index(c):
    """The node whose own status says it leads "default" (a write through
    each node opens the namespace there first), once exactly one does."""
    for _ in range(100):
        roles = []
        for i in range(3):
            subprocess.run(["curl", "-s", "-XPUT", c.url(i) + "/warm.json", "-d", "1"],
                           capture_output=True)
            roles.append(c.status(i)["namespaces"].get("default", {}).get("role"))
        if roles.count("leader") == 1:
            return roles.index("leader")
        time.sleep(0.2)
    raise RuntimeError("no single leader of the namespace")


def fanout(ports, streams):
    out = subprocess.run(["build/sse-fanout", ",".join(map(str, ports)), str(streams), "5"],
                         capture_output=True, text=True)
    return out.stdout.strip() or out.stderr.strip()


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    per_node = int(os.environ.get("BENCH_STREAMS_PER_NODE",
                                  "3000"))
    c = cluster.Cluster()
    single = None
    try:
        c.start()
        leader = leader_index(c)
        follower = (leader + 1) % 3
        print("cluster of 3 on 3 nats-servers (3 replicas); leader n%d; %d s per figure"
              % (leader + 1, SECONDS))
        for name, i in (("leader", leader), ("follower", follower)):
            serial, e1 = wrk(c.url(i), 1)
            many, e2 = wrk(c.url(i), 64)
            moved = leader_index(c) != leader
            print("cluster writes through the %-8s: serial %8.0f/s, 64 in flight %8.0f/s"
                  "%s%s" % (name, serial, many,
                            "  (%d errors)" % (e1 + e2) if e1 + e2 else "",
                            "  (the lease moved: figure not valid)" if moved else ""))
        print("raw JetStream publish-with-ack (R3): serial %8.0f/s, 64 in flight %8.0f/s"
              % (raw_js(c, 1), raw_js(c, 64)))
        s1, s64, sport, single = single_node()
        print("single node, --fsync always:          serial %8.0f/s, 64 in flight %8.0f/s"
              % (s1, s64))
        print("fan-out, one write to %d streams on 3 nodes: %s"
              % (3 * per_node, fanout(c.http_ports, 3 * per_node)))
        print("fan-out, one write to %d streams on 1 node (cluster): %s"
              % (per_node, fanout([c.http_ports[leader]], per_node)))
        # The same total spread over the 3 nodes: what the cluster adds to
        # one write's delivery when the machine does the same work (the
        # rows above triple the work on the same 2 cores).
        print("fan-out, one write to %d streams over 3 nodes (same total): %s"
              % (per_node, fanout(c.http_ports, per_node)))
    finally:
        c.stop()
        if single:
            single.terminate()
            single.wait()
        for d in DIRS + [c.root]:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
