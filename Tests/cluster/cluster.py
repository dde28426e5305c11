"""cluster.py - three nats-servers (JetStream, clustered) and three Hearth
nodes on loopback, for `make cluster` and the cluster test.

    python3 Tests/cluster/cluster.py [--base PORT] [--dir DIR] [--insecure]

prints the nodes' URLs and how to reach NATS, and runs until Ctrl-C, then
stops everything. Ports: NATS clients base+1..3, NATS routes base+11..13,
Hearth base+21..23, NATS monitoring base+31..33 (loopback; base 0: free
ports picked by the system).

Secure by default, as a production cluster (examples/nats-server.conf):
NATS is untrusted, so the nats-servers take TLS only (a CA and a server
certificate made for the run with the openssl command) and a user and
password whose permissions are those a Hearth node needs (PUBLISH and
SUBSCRIBE below, the same as the example's), and every node runs with
--cluster-secret-file, --nats-user-file and --nats-ca, all in ROOT/secrets.
Cluster(secure=False) (--insecure) is the old way: plain NATS without
authorization, nodes with --cluster-insecure."""
import json
import os
import random
import secrets
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


# What a Hearth node does on NATS (CSources/cluster/), and so all its
# user may: the same lists as examples/nats-server.conf (test_cluster.py
# checks that they are). Publish: its namespaces' logs (hearth.ns.<p>.<ns>,
# through JetStream), forwarded writes (hearth.fwd.<ns>) and snapshot
# requests (hearth.snap.<ns>), triggers' events and dead letters
# (hearth.trig.<t>.<ns>, hearth.dead.<t>.<ns>); the JetStream API (streams
# HEARTH_P<n>, HEARTH_TRIGGERS, HEARTH_DEAD, the KV buckets, consumers,
# direct gets, purges, a retried dead letter's delete); puts to its KV
# buckets;
# answers to inboxes (forwarded writes, snapshots) and the flow control of
# its consumers, and the acknowledgements of the triggers' events it
# delivered. Subscribe: the forwarded writes and snapshot requests it
# serves, and inboxes (answers, JetStream acks, its consumers' deliveries).
KV_BUCKETS = ["hearth_leases", "hearth_nodes", "hearth_ondisconnect",
              "hearth_retained", "hearth_rules", "hearth_triggers"]
PUBLISH = (["hearth.>", "$JS.API.>"] +
           ["$KV.%s.>" % b for b in KV_BUCKETS] +
           ["_INBOX.>", "$JS.FC.>", "$JS.ACK.HEARTH_TRIGGERS.>"])
SUBSCRIBE = ["hearth.>", "_INBOX.>"]
NATS_USER = "hearth"


_picked = set()


def free_port():
    """A free port below Linux's ephemeral range (32768 and up): a port the
    kernel hands out would be free when asked, then taken by a node's own
    outgoing connection to NATS before the node listened on it (CI saw
    'address already in use'). Never the same one twice in a run."""
    for _ in range(2000):
        port = random.randint(20000, 32000)
        if port in _picked:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _picked.add(port)
        return port
    raise RuntimeError("no free port between 20000 and 32000")


def conf_list(items):
    return "[%s]" % ", ".join('"%s"' % x for x in items)


class Cluster:
    def __init__(self, base=0, root=None, admin="owner", secure=True,
                 extra_args=()):
        self.root = root or tempfile.mkdtemp(prefix="hearth-cluster-")
        pick = (lambda i: base + i) if base else (lambda i: free_port())
        self.nats_ports = [pick(1 + i) for i in range(3)]
        self.route_ports = [pick(11 + i) for i in range(3)]
        self.http_ports = [pick(21 + i) for i in range(3)]
        self.monitor_ports = [pick(31 + i) for i in range(3)]
        self.admin = admin
        self.secure = secure
        self.extra_args = list(extra_args)  # every node's (`hearth serve`)
        self.nats = [None] * 3
        self.nodes = [None] * 3
        if secure:
            self.make_secrets()

    # ---- secrets (secure only): ROOT/secrets ----
    def secret(self, name):
        return os.path.join(self.root, "secrets", name)

    def make_secrets(self):
        """A CA and a certificate it signs for 127.0.0.1 and localhost (the
        nats-servers', for clients and routes), the cluster secret, and
        the NATS users' passwords; kept when ROOT has them already (a
        cluster started again in the same directory)."""
        d = os.path.join(self.root, "secrets")
        os.makedirs(d, mode=0o700, exist_ok=True)
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
                 "check": True, "cwd": d}
        if not os.path.exists(self.secret("server.pem")):
            ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                  "-nodes"]
            subprocess.run(["openssl", "req", "-x509"] + ec +
                           ["-keyout", "ca.key", "-out", "ca.pem", "-days",
                            "30", "-subj", "/CN=hearth test NATS CA"], **quiet)
            with open(os.path.join(d, "san.ext"), "w") as f:
                f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
            subprocess.run(["openssl", "req"] + ec +
                           ["-keyout", "server.key", "-out", "server.csr",
                            "-subj", "/CN=localhost"], **quiet)
            subprocess.run(["openssl", "x509", "-req", "-in", "server.csr",
                            "-CA", "ca.pem", "-CAkey", "ca.key",
                            "-CAcreateserial", "-days", "30", "-extfile",
                            "san.ext", "-out", "server.pem"], **quiet)
        if not os.path.exists(self.secret("cluster.key")):
            with open(self.secret("cluster.key"), "wb") as f:
                os.fchmod(f.fileno(), 0o600)
                f.write(subprocess.run(["openssl", "rand", "-base64", "32"],
                                       capture_output=True,
                                       check=True).stdout)
        for name, user in (("nats.user", NATS_USER), ("route.user", "route")):
            if not os.path.exists(self.secret(name)):
                with open(self.secret(name), "w") as f:
                    os.fchmod(f.fileno(), 0o600)
                    f.write("%s\n%s\n" % (user, secrets.token_urlsafe(24)))
        for name in ("ca.key", "server.key"):
            os.chmod(self.secret(name), 0o600)

    def credentials(self, name):
        """(user, password) of a users file."""
        with open(self.secret(name)) as f:
            user, password = f.read().split("\n")[:2]
        return user, password

    # ---- NATS ----
    def nats_conf(self, i):
        route_auth = ""
        if self.secure:
            ruser, rpass = self.credentials("route.user")
            route_auth = "%s:%s@" % (ruser, rpass)
        routes = ",".join("nats-route://%s127.0.0.1:%d" % (route_auth, p)
                          for j, p in enumerate(self.route_ports) if j != i)
        tls = auth = cluster_secure = ""
        if self.secure:
            tls = ("tls { cert_file: \"%s\"\n key_file: \"%s\"\n"
                   " ca_file: \"%s\"\n timeout: 2 }\n" % (
                       self.secret("server.pem"), self.secret("server.key"),
                       self.secret("ca.pem")))
            user, password = self.credentials("nats.user")
            auth = ("authorization { users: [ { user: \"%s\"\n"
                    " password: \"%s\"\n permissions: {\n"
                    "  publish: { allow: %s }\n"
                    "  subscribe: { allow: %s } } } ] }\n" % (
                        user, password, conf_list(PUBLISH),
                        conf_list(SUBSCRIBE)))
            ruser, rpass = self.credentials("route.user")
            cluster_secure = (" authorization { user: \"%s\"\n"
                              " password: \"%s\" }\n %s" % (
                                  ruser, rpass, tls))
        path = os.path.join(self.root, "nats%d.conf" % i)
        with open(path, "w") as f:
            os.fchmod(f.fileno(), 0o600)  # passwords
            f.write("server_name: s%d\nlisten: 127.0.0.1:%d\n"
                    "http: 127.0.0.1:%d\n%s%s"
                    "jetstream { store_dir: \"%s\" }\n"
                    "cluster { name: hearth\n listen: 127.0.0.1:%d\n"
                    " routes: [%s]\n%s}\n" % (
                        i, self.nats_ports[i], self.monitor_ports[i], tls, auth,
                        os.path.join(self.root, "js%d" % i),
                        self.route_ports[i], routes, cluster_secure))
        return path

    def start_nats(self, i):
        log = open(os.path.join(self.root, "nats%d.log" % i), "ab")
        self.nats[i] = subprocess.Popen([NATS_BIN, "-c", self.nats_conf(i)],
                                        stdout=log, stderr=log)

    def jetstream_view(self, i):
        """nats-server i's view of JetStream (its monitoring port)."""
        url = ("http://127.0.0.1:%d/jsz?accounts=true&streams=true"
               % self.monitor_ports[i])
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.load(r)

    def jetstream_whole(self):
        """Whether JetStream is whole: three servers, a meta leader, and
        every stream led with both its other replicas current as its leader
        sees them. A server restarted after a loss catches up first; losing
        another before then may leave a stream with no quorum."""
        try:
            views = {"s%d" % i: self.jetstream_view(i)
                     for i in range(3) if self.nats[i]}
        except Exception:
            return False
        if len(views) < 3 or not all(v.get("meta_cluster", {}).get("leader")
                                     for v in views.values()):
            return False
        replicas = {}  # stream -> its replicas as its leader sees them
        for name, v in views.items():
            for account in v.get("account_details", []):
                for stream in account.get("stream_detail", []):
                    cluster = stream.get("cluster", {})
                    replicas.setdefault(stream["name"], None)
                    if cluster.get("leader") == name:
                        replicas[stream["name"]] = cluster.get("replicas", [])
        return bool(replicas) and all(
            r is not None and len(r) == 2 and all(x.get("current") for x in r)
            for r in replicas.values())

    def jetstream_serves_writes(self):
        """Whether JetStream serves Hearth's writes, as every running
        nats-server sees it: a meta leader (a follower's tail makes its
        consumer again through it), and a leader for the logs' streams
        (HEARTH_P*) and the leases' bucket, each a running server."""
        running = ["s%d" % i for i in range(3) if self.nats[i]]
        try:
            views = [self.jetstream_view(i) for i in range(3) if self.nats[i]]
        except Exception:
            return False
        for v in views:
            if v.get("meta_cluster", {}).get("leader") not in running:
                return False
            for account in v.get("account_details", []):
                for stream in account.get("stream_detail", []):
                    name = stream["name"]
                    if ((name.startswith("HEARTH_P") or
                         name == "KV_hearth_leases") and
                            stream.get("cluster", {}).get("leader")
                            not in running):
                        return False
        return True

    def wait_jetstream_whole(self, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if self.jetstream_whole():
                return
            time.sleep(0.5)
        raise RuntimeError("JetStream did not recover; logs in " + self.root)

    def nats_urls(self):
        scheme = "tls" if self.secure else "nats"
        return ",".join("%s://127.0.0.1:%d" % (scheme, p)
                        for p in self.nats_ports)

    # ---- Hearth ----
    def url(self, i):
        return "http://127.0.0.1:%d" % self.http_ports[i]

    def trust_args(self):
        """The `hearth serve` options of the cluster's trust."""
        if not self.secure:
            return ["--cluster-insecure"]
        return ["--cluster-secret-file", self.secret("cluster.key"),
                "--nats-user-file", self.secret("nats.user"),
                "--nats-ca", self.secret("ca.pem")]

    def serve_env(self):
        """examples/serve.c's environment for the same (benchmarks)."""
        env = dict(os.environ)
        if self.secure:
            env.update(HEARTH_CLUSTER_SECRET_FILE=self.secret("cluster.key"),
                       HEARTH_NATS_USER_FILE=self.secret("nats.user"),
                       HEARTH_NATS_CA=self.secret("ca.pem"))
        return env

    def serve_args(self, i):
        data = os.path.join(self.root, "data%d" % (i + 1))
        node = "n%d" % (i + 1)
        if HEARTH_BIN.endswith("hearth-serve"):  # examples/serve.c (benchmarks)
            return [HEARTH_BIN, str(self.http_ports[i]), data, "always",
                    self.nats_urls(), node]
        return [HEARTH_BIN, "serve", "--port", str(self.http_ports[i]),
                "--data", data, "--cluster", self.nats_urls(), "--node",
                node] + self.trust_args() + self.extra_args

    def start_node(self, i):
        log = open(os.path.join(self.root, "n%d.log" % (i + 1)), "ab")
        self.nodes[i] = subprocess.Popen(self.serve_args(i), stdout=log,
                                         stderr=log, env=self.serve_env())

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


    def describe(self):
        """How to reach the cluster, for `make cluster`."""
        lines = ["NATS (JetStream, 3 servers): " + self.nats_urls()]
        if self.secure:
            user, _ = self.credentials("nats.user")
            lines += [
                "  TLS: trust the CA in " + self.secret("ca.pem"),
                "  user %s, password in %s (line 2)" % (
                    user, self.secret("nats.user")),
                "  e.g. nats --server %s --tlsca %s --user %s --password "
                "\"$(sed -n 2p %s)\" stream ls" % (
                    self.nats_urls().split(",")[0], self.secret("ca.pem"),
                    user, self.secret("nats.user")),
                "  cluster secret: " + self.secret("cluster.key"),
                "  a node joins with: --cluster %s --node NAME %s" % (
                    self.nats_urls(), " ".join(self.trust_args()))]
        else:
            lines.append("  INSECURE: no TLS, no authorization; nodes run "
                         "--cluster-insecure (nothing sealed)")
        for i in range(3):
            lines.append("node n%d: %s  (status: %s/.cluster/status.json, "
                         "Authorization: Bearer %s)" % (
                             i + 1, self.url(i), self.url(i), self.admin))
        lines.append("logs and data: " + self.root)
        return "\n".join(lines)


def main():
    base, root = 0, None
    args = sys.argv[1:]
    if "--base" in args:
        base = int(args[args.index("--base") + 1])
    if "--dir" in args:
        root = args[args.index("--dir") + 1]
        os.makedirs(root, exist_ok=True)
    c = Cluster(base, root, secure="--insecure" not in args)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        c.start()
        print(c.describe() + "\nCtrl-C stops everything")
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
