"""cluster.py - three nats-servers (JetStream, clustered) and three Hearth
nodes on loopback, for `make cluster` and the cluster test.

    python3 Tests/cluster/cluster.py [--base PORT] [--dir DIR]

prints the nodes' URLs and runs until Ctrl-C, then stops everything. Ports:
NATS clients base+1..3, NATS routes base+11..13, Hearth base+21..23
(base 0: free ports picked by the system)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HEARTH_BIN = os.environ.get("HEARTH_BIN", ".build/debug/hearth")
NATS_BIN = shutil.which("nats-server") or "/usr/sbin/nats-server"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, base=0, root=None, admin="owner"):
        self.root = root or tempfile.mkdtemp(prefix="hearth-cluster-")
        pick = (lambda i: base + i) if base else (lambda i: free_port())
        self.nats_ports = [pick(1 + i) for i in range(3)]
        self.route_ports = [pick(11 + i) for i in range(3)]
        self.http_ports = [pick(21 + i) for i in range(3)]
        self.admin = admin
        self.nats = [None] * 3
        self.nodes = [None] * 3

    # ---- NATS ----
    def nats_conf(self, i):
        routes = ",".join("nats-route://127.0.0.1:%d" % p
                          for j, p in enumerate(self.route_ports) if j != i)
        path = os.path.join(self.root, "nats%d.conf" % i)
        with open(path, "w") as f:
            f.write("server_name: s%d\nlisten: 127.0.0.1:%d\n"
                    "jetstream { store_dir: \"%s\" }\n"
                    "cluster { name: hearth\n listen: 127.0.0.1:%d\n"
                    " routes: [%s] }\n" % (
                        i, self.nats_ports[i],
                        os.path.join(self.root, "js%d" % i),
                        self.route_ports[i], routes))
        return path

    def start_nats(self, i):
        log = open(os.path.join(self.root, "nats%d.log" % i), "ab")
        self.nats[i] = subprocess.Popen([NATS_BIN, "-c", self.nats_conf(i)],
                                        stdout=log, stderr=log)

    def nats_urls(self):
        return ",".join("nats://127.0.0.1:%d" % p for p in self.nats_ports)

    # ---- Hearth ----
    def url(self, i):
        return "http://127.0.0.1:%d" % self.http_ports[i]

    def serve_args(self, i):
        data = os.path.join(self.root, "data%d" % (i + 1))
        node = "n%d" % (i + 1)
        if HEARTH_BIN.endswith("hearth-serve"):  # examples/serve.c (benchmarks)
            return [HEARTH_BIN, str(self.http_ports[i]), data, "always",
                    self.nats_urls(), node]
        return [HEARTH_BIN, "serve", "--port", str(self.http_ports[i]),
                "--data", data, "--cluster", self.nats_urls(), "--node", node]

    def start_node(self, i):
        log = open(os.path.join(self.root, "n%d.log" % (i + 1)), "ab")
        self.nodes[i] = subprocess.Popen(self.serve_args(i), stdout=log,
                                         stderr=log)

    def status(self, i):
        req = urllib.request.Request(self.url(i) + "/.cluster/status.json",
                                     headers={"Authorization": "Bearer " + self.admin})
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.load(r)

    def wait_ready(self, count=3, timeout=60):
        """Until every running node answers and sees count live nodes."""
        end = time.time() + timeout
        while time.time() < end:
            try:
                if all(len(self.status(i)["nodes"]) >= count
                       for i in range(3) if self.nodes[i]):
                    return
            except Exception:
                pass
            time.sleep(0.3)
        raise RuntimeError("the cluster did not come up; logs in " + self.root)

    def start(self):
        for i in range(3):
            self.start_nats(i)
        time.sleep(1.0)  # the routes and JetStream's meta leader
        for i in range(3):
            self.start_node(i)
        self.wait_ready()

    def kill(self, procs, i):
        p = procs[i]
        if p and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()
        procs[i] = None

    def stop(self):
        for i in range(3):
            p = self.nodes[i]
            if p and p.poll() is None:
                p.send_signal(signal.SIGINT)
        for i in range(3):
            p = self.nodes[i]
            if p:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for i in range(3):
            p = self.nats[i]
            if p and p.poll() is None:
                p.terminate()
                p.wait()


def main():
    base, root = 0, None
    args = sys.argv[1:]
    if "--base" in args:
        base = int(args[args.index("--base") + 1])
    if "--dir" in args:
        root = args[args.index("--dir") + 1]
        os.makedirs(root, exist_ok=True)
    c = Cluster(base, root)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        c.start()
        print("NATS (JetStream, 3 servers): " + c.nats_urls())
        for i in range(3):
            print("node n%d: %s  (status: %s/.cluster/status.json, "
                  "Authorization: Bearer owner)" % (i + 1, c.url(i), c.url(i)))
        print("logs and data: " + c.root + "\nCtrl-C stops everything")
        sys.stdout.flush()
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        c.stop()
        print("stopped")


if __name__ == "__main__":
    main()
