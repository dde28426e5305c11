"""test_faults.py - `make test-cluster` (after test_cluster.py): faults
injected into a live cluster (three nats-servers, three `hearth serve
--cluster` nodes, cluster.py) under acknowledged writes, Jepsen style.

    python3 Tests/cluster/test_faults.py              every scenario
    python3 Tests/cluster/test_faults.py pause-leader [more names or numbers;
                                                       a name again repeats it]
    python3 Tests/cluster/test_faults.py --list
    (--keep: keep the logs and data of a cluster that passed too;
    HEARTH_FAULT_CONVERGE_S: how long to wait for the nodes to agree, 30)

Each scenario writes through all three nodes at once (2 writer threads per
node, each PUTting distinct keys /w/<scenario>-<thread>-<n> with a short
timeout; a PUT answered 200 is acknowledged, one that failed or timed out
is not, but may still have been applied), injects its fault, stops the
writers once every thread has had a write acknowledged again, and then:

- a barrier: a write through each node that every node must show;
- waits (at most CONVERGE_S) until the three nodes agree, then checks
  that every acknowledged write is on every node, that the three exports
  (GET /.json?format=export) are identical and that the three root hashes
  (the ETag of GET /.json with X-Firebase-ETag: true) are identical.

Scenarios:
1. pause-leader: SIGSTOP of the namespace's leader node for 10 s, then
   SIGCONT, with PUTs waiting for it as it resumes (sent in its last
   second and at once after); the paused node must hold every
   acknowledged write;
2. pause-follower: SIGSTOP of a follower node for 10 s;
3. pause-leader-nats: SIGSTOP for 10 s of the nats-server the leader node
   is connected to;
4. kill-leader-big-write: kill -9 of the leader midway through a write
   bigger than one NATS message (about 1.5 MB; the default largest message
   is 1 MB), then the node started again; the big write may or may not be
   there, but whole or not at all, and the same on every node;
5. cut-off-node: the nats-server a follower talks to killed for 10 s while
   writes go on, then started again;
6. restart-paused-leader: SIGSTOP of the leader for 10 s (as in 1),
   SIGCONT, then SIGINT and a start again; it must hold every acknowledged
   write, before its restart (behind a barrier) and after.

One cluster serves every scenario; a scenario that fails keeps that
cluster's logs and data (the directory is printed) and the next scenario
starts on a fresh cluster. Exits 1 if any scenario failed.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster  # noqa: E402
from test_cluster import (check, export, get, leader_of, put,  # noqa: E402
                          request)

PAUSE_S = 10           # how long a process stays stopped (the 10 s)
WRITE_TIMEOUT_S = 3    # a PUT not answered by then is not acknowledged
WRITE_GAP_S = 0.05     # a writer's rest between PUTs (a moderate rate)
WRITERS_PER_NODE = 2
WARMUP_ACKS = 5        # acks per writer before the fault
RECOVER_S = 30         # bound on every thread having an ack again
CONVERGE_S = float(os.environ.get("HEARTH_FAULT_CONVERGE_S", "30"))
BIG_BYTES = 1536 * 1024  # bigger than NATS's default max_payload (1 MB)
BIG_PART = 1000 * 1000   # about one message of it sent


# ---- the processes ----

def pause(proc):
    os.kill(proc.pid, signal.SIGSTOP)


def resume(proc):
    if proc and proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)


def resume_all(c):
    for p in list(c.nodes) + list(c.nats):
        try:
            resume(p)
        except OSError:
            pass


def paused_for(proc, seconds, before_resume=None, after_resume=None):
    """SIGSTOP proc, SIGCONT it after seconds (also if interrupted);
    before_resume() is called a second before, after_resume() at once
    after."""
    pause(proc)
    try:
        if before_resume:
            time.sleep(max(0, seconds - 1))
            before_resume()
            time.sleep(min(1, seconds))
        else:
            time.sleep(seconds)
    finally:
        resume(proc)
    if after_resume:
        after_resume()


def nats_index_of_url(c, url):
    try:
        port = urllib.parse.urlsplit(url).port
    except ValueError:
        return None
    return c.nats_ports.index(port) if port in c.nats_ports else None


def nats_of(c, i):
    """Which nats-server (index into c.nats) node i is connected to: the
    status's "nats" URL, else its TCP connection to one of c.nats_ports."""
    try:
        url = c.status(i).get("nats")
        if isinstance(url, str):
            s = nats_index_of_url(c, url)
            if s is not None:
                return s
    except Exception:
        pass
    out = subprocess.run(["ss", "-tnpH", "state", "established"],
                         capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        if "pid=%d," % c.nodes[i].pid not in line:
            continue
        fields = line.split()
        # Recv-Q Send-Q Local Peer Process (state filtered away)
        peer = fields[3] if len(fields) > 3 else ""
        m = re.search(r":(\d+)$", peer)
        if m and int(m.group(1)) in c.nats_ports:
            found.append(c.nats_ports.index(int(m.group(1))))
    if not found:
        raise AssertionError("no connection of n%d to a nats-server found"
                             % (i + 1))
    return max(set(found), key=found.count)


def leaders_seen(c):
    """{node index: the leader it names} for every running node answering."""
    seen = {}
    for i in range(3):
        if c.nodes[i]:
            try:
                name = c.status(i)["leaders"].get("default")
                seen[i] = int(name[1:]) - 1 if name else None
            except Exception:
                seen[i] = None
    return seen


def wait_leader(c, timeout=30):
    """The leader of namespace default once every running node names it."""
    end = time.time() + timeout
    while time.time() < end:
        seen = leaders_seen(c)
        names = set(seen.values())
        if len(names) == 1 and None not in names:
            return names.pop()
        time.sleep(0.2)
    leader = leader_of(c)
    if leader is None:
        raise AssertionError("no leader of namespace default within %d s"
                             % timeout)
    return leader


def stop_node(c, i):
    """SIGINT, as an operator's stop; kill -9 only if it hangs."""
    p = c.nodes[i]
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=15)
    except subprocess.TimeoutExpired:
        print("note: n%d ignored SIGINT for 15 s, killed" % (i + 1))
        c.kill(c.nodes, i)
    c.nodes[i] = None


def wait_port(port, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)


def restart_node(c, i):
    binary_changed()
    c.start_node(i)
    c.wait_ready()


def crash_lines(c, i):
    """What node i's log says about how it ended (its last run)."""
    try:
        path = os.path.join(c.root, "n%d.log" % (i + 1))
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    starts = [k for k, l in enumerate(lines) if " listening on " in l]
    run = lines[starts[-1] if starts else 0:]
    keep = [l for l in run if l.startswith("hearth:") or "crashed" in l
            or "Program" in l]
    frames = [l for l in run if re.match(r"\s+\d+ \[ra\]", l)]
    return keep[-6:] + frames[:4]


def reap_crashed(c, failures, when):
    """A node that exited by itself is a failure; start it again so that
    the checks can still compare its data."""
    for i in range(3):
        p = c.nodes[i]
        if p is not None and p.poll() is not None:
            what = ("n%d exited by itself %s (status %s); its log: %s"
                    % (i + 1, when, p.returncode,
                       os.path.join(c.root, "n%d.log" % (i + 1))))
            print("FAIL " + what)
            for line in crash_lines(c, i):
                print("   | " + line)
            failures.append(what)
            c.nodes[i] = None
            restart_node(c, i)


KEEP = [False]  # --keep: keep every cluster's directory, passed or not
BINARY = os.environ.get("HEARTH_BIN", ".build/debug/hearth")
BINARY_MTIME = [None]


def binary_changed():
    """Warns when the binary was rebuilt since the run started (a node
    started again then runs another build than its peers)."""
    try:
        mtime = os.stat(BINARY).st_mtime
    except OSError:
        return
    if BINARY_MTIME[0] is None:
        BINARY_MTIME[0] = mtime
    elif mtime != BINARY_MTIME[0]:
        print("note: %s was rebuilt during this run (%s); nodes started "
              "since run the new build" % (BINARY, time.ctime(mtime)))
        BINARY_MTIME[0] = mtime


# ---- the writers ----

class Writers:
    """WRITERS_PER_NODE threads per node, each PUTting /w/<scenario>-<t>-<n>
    through its node; keeps which PUTs were acknowledged (200) and which
    were not (an error or no answer within WRITE_TIMEOUT_S)."""

    def __init__(self, c, scenario, failures):
        self.c, self.scenario = c, scenario
        self.failures = failures  # the scenario's, for checks on the way
        self.count = 3 * WRITERS_PER_NODE
        self.acked, self.unacked = [], []
        self.ack_times = []  # (thread, when) of each of acked; burst: -1
        self.last_ack = [0.0] * self.count
        self.counts = [0] * self.count  # acks per thread
        self.stopping = False
        self.threads = [threading.Thread(target=self.run, args=(t,),
                                         daemon=True)
                        for t in range(self.count)]
        for th in self.threads:
            th.start()

    def node(self, t):
        return t // WRITERS_PER_NODE

    def run(self, t):
        i, n = self.node(t), 0
        while not self.stopping:
            key = "%s-%d-%d" % (self.scenario, t, n)
            n += 1
            try:
                status = request(self.c.url(i) + "/w/" + key + ".json", "PUT",
                                 n - 1, timeout=WRITE_TIMEOUT_S)[0]
            except Exception:
                status = None
            if status == 200:
                now = time.time()
                self.acked.append(key)
                self.ack_times.append((t, now))
                self.last_ack[t] = now
                self.counts[t] += 1
                time.sleep(WRITE_GAP_S)
            else:
                self.unacked.append(key)
                time.sleep(0.2)

    def burst(self, i, k, tag="b"):
        """k PUTs through node i at once, one each (keys
        /w/<scenario>-<tag><j>-0), answered whenever the node can: sent to
        a paused node, they are waiting for it the moment it resumes."""
        def one(j):
            key = "%s-%s%d-0" % (self.scenario, tag, j)
            try:
                status = request(self.c.url(i) + "/w/" + key + ".json", "PUT",
                                 j, timeout=PAUSE_S)[0]
            except Exception:
                status = None
            (self.acked if status == 200 else self.unacked).append(key)
            if status == 200:
                self.ack_times.append((-1, time.time()))
        for j in range(k):
            th = threading.Thread(target=one, args=(j,), daemon=True)
            th.start()
            self.threads.append(th)

    def wait_all_acked_since(self, t0, timeout, why, tick=None):
        """Until every thread has had a write acknowledged after t0 (tick:
        called meanwhile)."""
        end = time.time() + timeout
        while time.time() < end:
            if all(a > t0 for a in self.last_ack):
                return True
            if tick:
                tick()
            time.sleep(0.1)
        late = ["t%d(n%d)" % (t, self.node(t) + 1)
                for t in range(self.count) if self.last_ack[t] <= t0]
        print("note: no write acknowledged %s within %d s by %s"
              % (why, timeout, ", ".join(late)))
        return False

    def longest_gaps(self, since):
        """Per node, the longest time since `since` without an ack through
        it (up to its first ack after since, or now)."""
        gaps = []
        for i in range(3):
            times = sorted(a for t, a in self.ack_times
                           if t >= 0 and self.node(t) == i and a >= since)
            marks = [since] + times + ([] if times else [time.time()])
            gaps.append(max(b - a for a, b in zip(marks, marks[1:])))
        return gaps

    def stop(self):
        self.stopping = True
        for th in self.threads:
            th.join()


# ---- the checks ----

def read_or_none(read, c, i):
    try:
        return read(c, i)
    except Exception:
        return None


def root_hash(c, i):
    headers = request(c.url(i) + "/.json",
                      headers={"X-Firebase-ETag": "true"})[1]
    for k, v in headers.items():
        if k.lower() == "etag":
            return v
    return None


def print_statuses(c):
    """Each node's /.cluster/status.json, for the logs of a failure."""
    for i in range(3):
        try:
            print("n%d status: %s" % (i + 1, json.dumps(c.status(i))))
        except Exception as e:
            print("n%d status: none (%s)" % (i + 1, e))


def barrier(c, scenario, failures, bound=CONVERGE_S):
    """A write through each node; every node must show all three (within
    bound seconds). Each node's tail is then past every write
    acknowledged before them."""
    token = "%s@%.3f" % (scenario, time.time())
    path = "/barrier/" + scenario
    for i in range(3):
        end, done = time.time() + bound, False
        while not done and time.time() < end:
            try:
                done = put(c, i, "%s/n%d" % (path, i + 1), token)[0] == 200
            except Exception:
                time.sleep(0.3)
        if not done:
            failures.append("the barrier write through n%d was not "
                            "acknowledged in %d s" % (i + 1, bound))
            print_statuses(c)
    want = {"n%d" % (i + 1): token for i in range(3)}
    end = time.time() + bound
    for j in range(3):
        seen = None
        while time.time() < end:
            try:
                seen = get(c, j, path)
            except Exception:
                seen = None
            if seen == want:
                break
            time.sleep(0.1)
        if seen != want:
            failures.append("n%d does not show the barrier writes of every "
                            "node: %r" % (j + 1, seen))


def divergences(c, i):
    return c.status(i)["divergences"]


def verify(c, scenario, writers, failures, paused=None, big=None):
    """After the writers stopped: the barrier, a bounded wait for the nodes
    to agree, then the checks. paused: a node that must hold every
    acknowledged write; big: (key, value, acknowledged) of a big write."""
    barrier(c, scenario, failures)
    acked = writers.acked
    views, hashes = [None] * 3, [None] * 3
    t0 = time.time()
    while True:
        views = [read_or_none(export, c, i) for i in range(3)]
        hashes = [read_or_none(root_hash, c, i) for i in range(3)]
        have = [set((v or {}).get("w", {})) for v in views]
        if (None not in views and None not in hashes
                and views[0] == views[1] == views[2]
                and hashes[0] == hashes[1] == hashes[2]
                and all(k in h for h in have for k in acked)):
            break
        if time.time() - t0 > CONVERGE_S:
            break
        time.sleep(0.5)
    took = time.time() - t0
    for i in range(3):
        if views[i] is None or hashes[i] is None:
            failures.append("n%d did not answer its export or root hash"
                            % (i + 1))
    have = [set((v or {}).get("w", {})) for v in views]
    present = [sum(1 for k in acked if k in h) for h in have]
    unacked_present = [sum(1 for k in writers.unacked if k in h) for h in have]
    print("%s: acknowledged %d / present on n1 %d, n2 %d, n3 %d "
          "(agreed after %.1f s)" % (scenario, len(acked), *present, took))
    print("%s: not acknowledged %d / present on n1 %d, n2 %d, n3 %d"
          % (scenario, len(writers.unacked), *unacked_present))
    print("%s: root hashes n1 %s, n2 %s, n3 %s" % (scenario, *hashes))
    sys.stdout.flush()

    def soft(cond, what):
        try:
            check(cond, what)
        except AssertionError:
            print("FAIL " + what)
            failures.append(what)

    for j in range(3):
        missing = [k for k in acked if k not in have[j]]
        soft(not missing, "n%d holds every acknowledged write (%d missing %s)"
             % (j + 1, len(missing), missing[:5]))
    if paused is not None:
        missing = [k for k in acked if k not in have[paused]]
        soft(not missing, "the paused node n%d holds every acknowledged "
             "write (%d missing)" % (paused + 1, len(missing)))
    soft(views[0] is not None and views[0] == views[1] == views[2],
         "the three exports are identical")
    soft(hashes[0] is not None and hashes[0] == hashes[1] == hashes[2],
         "the three root hashes are identical (%s)" % hashes[0])
    # Every tree stays exactly the log: anti-entropy, the net under that,
    # must have had nothing to rebuild (a count is a hole it caught, or a
    # false alarm; either is a failure here).
    found = [read_or_none(divergences, c, i) for i in range(3)]
    soft(found == [0, 0, 0],
         "no node found its tree differing from its peers' (%s)" % found)
    if big:
        key, value, was_acked = big
        got = [(v or {}).get("big", {}).get(key) for v in views]
        whole = ["whole" if g == value else "absent" if g is None
                 else "PARTIAL" for g in got]
        print("%s: big write %s; on n1 %s, n2 %s, n3 %s" % (
            scenario, "acknowledged" if was_acked else "not acknowledged",
            *whole))
        soft(all(w != "PARTIAL" for w in whole),
             "the big write is whole or absent on every node")
        soft(len(set(whole)) == 1, "the big write is the same on every node")
        if was_acked:
            soft(all(w == "whole" for w in whole),
                 "the acknowledged big write is on every node")


# ---- the scenarios ----

def with_writers(c, scenario, fault, failures):
    """Writers through all nodes; fault(c, w) once each has an ack; then
    until each has an ack again, then stop them and verify. fault returns
    the extra arguments of verify (paused=, big=)."""
    t_start = time.time()
    w = Writers(c, scenario, failures)
    try:
        end = time.time() + RECOVER_S  # some history before the fault
        while min(w.counts) < WARMUP_ACKS and time.time() < end:
            time.sleep(0.05)
        t_fault = time.time()
        extra = fault(c, w) or {}
        t_end = time.time()
        during = [a for _, a in w.ack_times if t_fault <= a < t_end]
        print("%s: %d writes acknowledged during the fault's %.1f s (%s), "
              "%d before it" % (
                  scenario, len(during), t_end - t_fault,
                  "the first %.1f s in, the last %.1f s in" % (
                      during[0] - t_fault, during[-1] - t_fault)
                  if during else "none",
                  len([a for _, a in w.ack_times if a < t_fault])))
        w.wait_all_acked_since(
            t_end, RECOVER_S, "after the fault",
            lambda: reap_crashed(c, failures, "after the fault"))
        t_back = time.time()
    finally:
        w.stop()
    print("%s: every writer acknowledged again %.1f s after the fault; the "
          "longest wait for an ack through n1 %.1f s, n2 %.1f s, n3 %.1f s"
          % (scenario, t_back - t_end, *w.longest_gaps(t_fault)))
    reap_crashed(c, failures, "while the writers ran")
    t_check = time.time()
    verify(c, scenario, w, failures, **extra)
    reap_crashed(c, failures, "during the checks")
    print("%s: %.1f s writing before the fault, %.1f s of fault, %.1f s "
          "until every writer was acknowledged again, %.1f s of checks"
          % (scenario, t_fault - t_start, t_end - t_fault, t_back - t_end,
             time.time() - t_check))


BURST = 8  # PUTs waiting for a paused leader when it resumes


def pause_leader_resumed(c, w, then=""):
    """SIGSTOP of the leader for PAUSE_S, with writes waiting for it as it
    resumes: BURST PUTs sent in its last second and BURST more at once
    after (the writers' own are stuck in their timeouts then); what it
    still takes as the leader is refused by the stream. Said first, with
    `then` (what the scenario does after) at the end; returns the leader."""
    leader = wait_leader(c)
    print("SIGSTOP of the leader n%d for %d s (%d more PUTs sent to it in "
          "its last second, %d as it resumes)%s"
          % (leader + 1, PAUSE_S, BURST, BURST, then))
    paused_for(c.nodes[leader], PAUSE_S,
               lambda: w.burst(leader, BURST, "b"),
               lambda: w.burst(leader, BURST, "a"))
    return leader


def holds_acked_so_far(c, w, i, failures, when):
    """While the writers go on: node i holds every write acknowledged
    before a barrier written through every node (a node that lost some
    keeps the loss: the wait for it is short)."""
    acked = list(w.acked)
    barrier(c, w.scenario + "-" + when.split()[0], failures, 10)
    end, missing = time.time() + 5, acked
    while missing and time.time() < end:
        have = set((read_or_none(export, c, i) or {}).get("w", {}))
        missing = [k for k in acked if k not in have]
        if missing:
            time.sleep(0.5)
    print("%s: %s, n%d holds %d of the %d writes acknowledged so far"
          % (w.scenario, when, i + 1, len(acked) - len(missing), len(acked)))
    if missing:
        what = ("n%d holds every acknowledged write %s (%d missing %s)"
                % (i + 1, when, len(missing), missing[:5]))
        print("FAIL " + what)
        failures.append(what)


def pause_leader(c, w):
    return {"paused": pause_leader_resumed(c, w)}


def pause_follower(c, w):
    leader = wait_leader(c)
    f = (leader + 1) % 3
    print("SIGSTOP of follower n%d for %d s (leader n%d)"
          % (f + 1, PAUSE_S, leader + 1))
    paused_for(c.nodes[f], PAUSE_S)
    return {}


def pause_leader_nats(c, w):
    leader = wait_leader(c)
    s = nats_of(c, leader)
    print("SIGSTOP of nats-server s%d (port %d), the leader n%d's, for %d s"
          % (s, c.nats_ports[s], leader + 1, PAUSE_S))
    paused_for(c.nats[s], PAUSE_S)
    return {}


def nats_bytes_sent(c, i):
    """Bytes node i has sent on its connections to the nats-servers (the
    kernel's count, from ss)."""
    out = subprocess.run(["ss", "-tinpH", "state", "established"],
                         capture_output=True, text=True).stdout
    total, mine = 0, False
    for line in out.splitlines():
        if not line[:1].isspace():  # a socket; its details follow
            fields = line.split()
            m = re.search(r":(\d+)$", fields[3]) if len(fields) > 3 else None
            mine = bool(m and int(m.group(1)) in c.nats_ports
                        and "pid=%d," % c.nodes[i].pid in line)
        elif mine:
            m = re.search(r"bytes_sent:(\d+)", line)
            total += int(m.group(1)) if m else 0
    return total


def kill_leader_big_write(c, w):
    leader = wait_leader(c)
    row = "x" * 1000
    value = {"k%05d" % k: row for k in range(BIG_BYTES // 1000)}
    result = {}

    def big_put():
        try:
            result["status"] = request(
                c.url(leader) + "/big/%s.json" % w.scenario, "PUT", value,
                timeout=60)[0]
        except Exception as e:
            result["error"] = repr(e)

    # Midway: once the leader has sent the first message of the chain
    # (about 1 MB) to its nats-server; the next part goes only once the
    # stream has acknowledged that one.
    before = nats_bytes_sent(c, leader)
    th = threading.Thread(target=big_put, daemon=True)
    t0 = time.time()
    th.start()
    sent = 0
    while th.is_alive() and time.time() - t0 < 10 and sent < BIG_PART:
        sent = nats_bytes_sent(c, leader) - before
    answered = not th.is_alive()
    c.kill(c.nodes, leader)
    at = time.time() - t0
    th.join()
    print("kill -9 of the leader n%d %.0f ms into a %.1f MB write, %s "
          "(%d bytes sent to NATS); the write: %s" % (
              leader + 1, at * 1000, len(str(value)) / 1e6,
              "after it was answered: not midway" if answered
              else "with its first message sent", sent,
              result.get("status") or result.get("error")))
    # Writes go on through the other two (a new leader's); then it is back.
    t_kill, end = time.time(), time.time() + RECOVER_S
    while time.time() < end and not all(
            w.last_ack[t] > t_kill for t in range(w.count)
            if w.node(t) != leader):
        time.sleep(0.1)
    restart_node(c, leader)
    return {"big": (w.scenario, value, result.get("status") == 200)}


def start_node_on(c, i, nats):
    """Node i started knowing one nats-server only (index nats): with it
    gone the node has no other to reconnect to, a real cut-off."""
    args = c.serve_args(i)
    at = args.index("--cluster") + 1
    scheme = args[at].split("://")[0]
    args[at] = "%s://127.0.0.1:%d" % (scheme, c.nats_ports[nats])
    log = open(os.path.join(c.root, "n%d.log" % (i + 1)), "ab")
    c.nodes[i] = subprocess.Popen(args, stdout=log, stderr=log,
                                  env=c.serve_env())
    c.wait_ready()


def cut_off_node(c, w):
    leader = wait_leader(c)
    spaces = {i: nats_of(c, i) for i in range(3)}
    followers = [i for i in range(3) if i != leader]
    cut = next((i for i in followers if spaces[i] != spaces[leader]),
               followers[0])
    s = next(k for k in range(3) if k != spaces[leader])
    print("n%d restarted knowing only nats-server s%d (port %d); s%d "
          "killed for %d s (leader n%d on s%d)" % (
              cut + 1, s, c.nats_ports[s], s, PAUSE_S, leader + 1,
              spaces[leader]))
    stop_node(c, cut)
    start_node_on(c, cut, s)
    c.kill(c.nats, s)
    try:
        time.sleep(PAUSE_S)
    finally:
        c.start_nats(s)
        wait_port(c.nats_ports[s])
    c.wait_ready()
    # Back to knowing every nats-server, for the scenarios after.
    stop_node(c, cut)
    restart_node(c, cut)
    return {}


def restart_paused_leader(c, w):
    leader = pause_leader_resumed(c, w, ", SIGCONT, SIGINT, start")
    holds_acked_so_far(c, w, leader, w.failures, "before its restart")
    stop_node(c, leader)
    restart_node(c, leader)
    return {"paused": leader}


SCENARIOS = [
    ("pause-leader", pause_leader),
    ("pause-follower", pause_follower),
    ("pause-leader-nats", pause_leader_nats),
    ("kill-leader-big-write", kill_leader_big_write),
    ("cut-off-node", cut_off_node),
    ("restart-paused-leader", restart_paused_leader),
]


def start_cluster():
    binary_changed()
    t0 = time.time()
    # Not hearth-cluster-*: kept logs stay out of other runs' clean-ups.
    c = Cluster(root=tempfile.mkdtemp(prefix="hearth-faults-"))
    try:
        c.start()
    except BaseException:
        print("logs in " + c.root)
        c.stop()
        raise
    print("cluster up in %.1f s (%s)" % (time.time() - t0, c.root))
    return c


def settle(c):
    """Every process of c running and the nodes seeing each other."""
    for s in range(3):
        if c.nats[s] is None or c.nats[s].poll() is not None:
            c.start_nats(s)
            wait_port(c.nats_ports[s])
    for i in range(3):
        if c.nodes[i] is None or c.nodes[i].poll() is not None:
            c.start_node(i)
    c.wait_ready()


def pick(args):
    if "--keep" in args:
        KEEP[0] = True
        args = [a for a in args if a != "--keep"]
    if "--list" in args:
        for k, (name, _) in enumerate(SCENARIOS):
            print("%d %s" % (k + 1, name))
        sys.exit(0)
    if not args:
        return SCENARIOS
    chosen = []
    for a in args:
        match = [s for k, s in enumerate(SCENARIOS)
                 if a == s[0] or a == str(k + 1)]
        if not match:
            sys.exit("unknown scenario %r; --list names them" % a)
        chosen += match
    return chosen


def main():
    chosen = pick(sys.argv[1:])
    started = time.time()
    results = []  # (name, seconds, failures, root)
    c = None
    try:
        runs = {}
        for name, fault in chosen:
            runs[name] = runs.get(name, 0) + 1
            if runs[name] > 1:  # again: keys of its own
                name = "%s_%d" % (name, runs[name])
            if c is None:
                c = start_cluster()
            print("\n== %s" % name)
            sys.stdout.flush()
            t0 = time.time()
            failures = []
            try:
                settle(c)
                with_writers(c, name, fault, failures)
            except Exception as e:
                traceback.print_exc()
                failures.append("%s: %r" % (type(e).__name__, e))
            took = time.time() - t0
            results.append((name, took, failures, c.root))
            print("== %s %s in %.1f s" % (name, "FAILED" if failures else
                                          "passed", took))
            if failures:  # keep its logs; the next scenario gets a new one
                print("logs and data kept in " + c.root)
                resume_all(c)
                c.stop()
                c = None
            sys.stdout.flush()
    finally:
        if c is not None:
            resume_all(c)
            c.stop()
            if KEEP[0]:
                print("kept " + c.root)
            elif all(r[3] != c.root or not r[2] for r in results):
                shutil.rmtree(c.root, ignore_errors=True)
    print("\nfault scenarios:")
    for name, took, failures, root in results:
        print("  %-22s %5.1f s  %s" % (name, took, "FAILED (logs in %s): %s"
                                       % (root, "; ".join(failures))
                                       if failures else "passed"))
    failed = [r for r in results if r[2]]
    print("%d of %d scenarios failed, in %.1f s" % (len(failed), len(results),
                                                    time.time() - started))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
