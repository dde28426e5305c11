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

The writes are measured on the same plain nats-servers (no TLS, no
authorization) with the nodes insecure (--cluster-insecure: nothing
sealed, as before the cluster secret) and with a cluster secret
(everything sealed: cluster/sealing.h), so the two differ by the sealing
alone: the nodes are restarted on fresh data for each (a namespace of
its own each time, all in one stream), alternating BENCH_ROUNDS times
(default 2), and the summary gives each mode's median and the
sealed/insecure ratio, with the CPU the three nodes spent per write at 64
in flight: on this machine where a restart puts the leader and each
node's nats-server moves the figures by +-20 %, more than sealing costs,
and the CPU per write shows the cost itself. The fan-out rows run on the
sealed nodes.
BENCH_CLUSTER_SECURE=1 runs only the cluster `make cluster` runs (TLS, a
NATS user, the cluster secret: examples/serve.c takes them from its
environment), without the raw JetStream row (jetstream_raw speaks plain
NATS).
"""
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "Tests", "cluster"))
os.environ.setdefault("HEARTH_BIN", "build/hearth-serve")
import cluster  # noqa: E402

DIRS = []  # removed at the end
SECONDS = int(os.environ.get("BENCH_SECONDS", "5"))
LUA = """counter = 0
request = function()
  counter = counter + 1
  return wrk.format("PUT", "/bench/k" .. (counter % 1000) .. ".jsonQUERY", nil, "12345")
end
"""


def wrk(url, conns, ns=None):
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(LUA.replace("QUERY", "?ns=" + ns if ns else ""))
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


def leader_index(c, ns="default"):
    """The node whose own status says it leads ns (a write through each
    node opens the namespace there first), once exactly one does."""
    for _ in range(100):
        roles = []
        for i in range(3):
            subprocess.run(["curl", "-s", "-XPUT", c.url(i) + "/warm.json?ns=" + ns,
                            "-d", "1"], capture_output=True)
            roles.append(c.status(i)["namespaces"].get(ns, {}).get("role"))
        if roles.count("leader") == 1:
            return roles.index("leader")
        time.sleep(0.2)
    raise RuntimeError("no single leader of the namespace")


def cpu_seconds(c):
    """The CPU time the Hearth nodes have used (user and system)."""
    total = 0
    for p in c.nodes:
        with open("/proc/%d/stat" % p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def writes(c, mode, figures, ns="default"):
    """The write rows to ns through its leader and a follower (kept in
    figures by row); the leader. Beside each 64-in-flight figure, the CPU
    the three nodes spent per write: what sealing adds shows there even
    when where the leader and the stream's leader landed moves the
    figure itself more (this machine's cores are all busy)."""
    leader = leader_index(c, ns)
    follower = (leader + 1) % 3
    wrk(c.url(leader), 64, ns)  # warm: the namespace open everywhere, caches
    for name, i in (("leader", leader), ("follower", follower)):
        serial, e1 = wrk(c.url(i), 1, ns)
        cpu = cpu_seconds(c)
        many, e2 = wrk(c.url(i), 64, ns)
        per_write = (cpu_seconds(c) - cpu) / max(many * SECONDS, 1) * 1e6
        moved = leader_index(c, ns) != leader
        print("cluster writes, %-8s through the %-8s: serial %8.0f/s, 64 in flight "
              "%8.0f/s (nodes' CPU %5.1f us/write)%s%s" % (
                  mode, name, serial, many, per_write,
                  "  (%d errors)" % (e1 + e2) if e1 + e2 else "",
                  "  (the lease moved: figure not valid)" if moved else ""))
        sys.stdout.flush()
        if not moved and not e1 + e2:
            figures.setdefault((mode, name, "serial"), []).append(serial)
            figures.setdefault((mode, name, "64"), []).append(many)
            figures.setdefault((mode, name, "cpu"), []).append(per_write)
    return leader


def restart(c, key):
    """The nodes stopped, their data removed, and started again with the
    cluster secret in file key (None: insecure), on the same nats-servers."""
    for i in range(3):
        c.nodes[i].send_signal(signal.SIGINT)
    for i in range(3):
        c.nodes[i].wait(timeout=20)
        shutil.rmtree(os.path.join(c.root, "data%d" % (i + 1)), ignore_errors=True)
    env = dict(os.environ)
    if key:
        env["HEARTH_CLUSTER_SECRET_FILE"] = key
    c.serve_env = lambda: env
    for i in range(3):
        c.start_node(i)
    c.wait_ready()


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def sealing_summary(figures):
    for name in ("leader", "follower"):
        for kind, label, unit in (("serial", "serial", "/s"),
                                  ("64", "64 in flight", "/s"),
                                  ("cpu", "CPU per write", " us")):
            plain = figures.get(("insecure", name, kind))
            sealed = figures.get(("sealed", name, kind))
            if plain and sealed:
                print("sealing, through the %-8s %-13s: insecure %8.1f%s, sealed "
                      "%8.1f%s (medians of %d): %.2fx" % (
                          name, label, median(plain), unit, median(sealed), unit,
                          min(len(plain), len(sealed)),
                          median(sealed) / median(plain)))


def fanout(ports, streams):
    out = subprocess.run(["build/sse-fanout", ",".join(map(str, ports)), str(streams), "5"],
                         capture_output=True, text=True)
    return out.stdout.strip() or out.stderr.strip()


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    per_node = int(os.environ.get("BENCH_STREAMS_PER_NODE",
                                  "3000"))
    secure = os.environ.get("BENCH_CLUSTER_SECURE") == "1"
    c = cluster.Cluster(secure=secure)
    single = None
    try:
        c.start()
        print("cluster of 3 on 3 nats-servers (3 replicas, %s); %d s per figure"
              % ("secure: TLS, NATS user, cluster secret" if secure
                 else "plain NATS; nodes insecure, then sealed", SECONDS))
        figures = {}
        if secure:
            leader = writes(c, "secure", figures)
        else:
            key = os.path.join(c.root, "bench-cluster.key")
            with open(key, "wb") as f:
                os.fchmod(f.fileno(), 0o600)
                f.write(subprocess.run(["openssl", "rand", "-base64", "32"],
                                       capture_output=True, check=True).stdout)
            # Each run writes a namespace of its own (another run's log is
            # not theirs to read, sealed or not, nor to replay first), all
            # in one stream (the same partition: the stream's leader, where
            # every append goes, is the same server for all of them).
            names = (n for n in ("bench%d" % k for k in range(100000))
                     if zlib.crc32(n.encode()) % 32 == zlib.crc32(b"bench0") % 32)
            run = 0
            for r in range(int(os.environ.get("BENCH_ROUNDS", "2"))):
                for mode in ("insecure", "sealed"):
                    if run:
                        restart(c, key if mode == "sealed" else None)
                    writes(c, mode, figures, next(names))
                    run += 1
            sealing_summary(figures)
            leader = leader_index(c)
        if secure:
            print("raw JetStream publish-with-ack (R3): skipped (BENCH_CLUSTER_SECURE)")
        else:
            print("raw JetStream publish-with-ack (R3):            serial %8.0f/s, "
                  "64 in flight %8.0f/s" % (raw_js(c, 1), raw_js(c, 64)))
        s1, s64, sport, single = single_node()
        print("single node, --fsync always:                     serial %8.0f/s, "
              "64 in flight %8.0f/s" % (s1, s64))
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
