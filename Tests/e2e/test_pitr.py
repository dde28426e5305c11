"""Point-in-time recovery through the CLI, as an operator uses it: a real
`hearth serve --retain 1h`, `hearth log` to find the moment, `hearth
backup --at / --at-seq` by --data and by --url, `hearth restore --path`
putting one subtree back into the running server; kill -9 of a restore
leaves the target as it was (or, killed after its write was sent
whole, restored: never a part); a damaged log refuses, naming the file and
offset.

Run: HEARTH_BIN=.build/debug/hearth python Tests/e2e/test_pitr.py
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from test_python_clients import HEARTH, Server, http, run_tests  # noqa: E402

OWNER = {"Authorization": "Bearer owner"}


def hearth(*args):
    proc = subprocess.run([HEARTH, *args], capture_output=True, text=True,
                          timeout=120)
    return proc.returncode, proc.stdout, proc.stderr


class PointInTime(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hearth-e2e-pitr-")
        self.data = os.path.join(self.dir, "data")
        self.server = Server(self.data)
        self.server.extra_args = ["--retain", "1h", "--fsync", "off"]
        self.server.start()
        self.url = f"http://127.0.0.1:{self.server.port}/?ns=shop"

    def tearDown(self):
        self.server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def put(self, path, value, headers=None):
        status, _ = http("PUT", self.server.url(path, "?ns=shop"), value,
                         headers)
        self.assertEqual(status, 200)

    def log(self, *args):
        code, out, err = hearth("log", "--data", self.data, "--namespace",
                                "shop", *args)
        self.assertEqual(code, 0, err)
        return [json.loads(line) for line in out.splitlines()]

    def test_bad_deploy_undone(self):
        self.put("/users/ada", {"name": "Ada"})
        self.put("/users/bob", {"name": "Bob"}, OWNER)
        good = http("GET", self.server.url("/", "?ns=shop"))[1]
        time.sleep(0.01)
        self.put("/users", {"broken": True}, OWNER)  # the bad deploy
        self.put("/motd", "hello")                   # written after it
        changes = self.log()
        # The server lists the same lines (GET /.log, the admin's).
        code, out, err = hearth("log", "--url", self.url)
        self.assertEqual(code, 0, err)
        self.assertEqual([json.loads(x) for x in out.splitlines()], changes)
        code, out, err = hearth("log", "--url", self.url, "--path", "/motd")
        self.assertEqual([json.loads(x)["path"] for x in out.splitlines()],
                         ["/motd"])
        status, _ = http("GET", f"http://127.0.0.1:{self.server.port}"
                         "/.log?ns=shop")
        self.assertEqual(status, 401)
        self.assertEqual([c["sequence"] for c in changes], [1, 2, 3, 4])
        self.assertEqual([c["path"] for c in changes],
                         ["/users/ada", "/users/bob", "/users", "/motd"])
        self.assertEqual([c["identity"] for c in changes],
                         ["anonymous", "admin", "admin", "anonymous"])
        self.assertEqual(set(changes[0]), {"time", "sequence", "path",
                                           "identity", "bytes"})
        self.assertEqual(changes[0]["bytes"], len('{"name":"Ada"}'))
        # --path and a time window find the moment.
        at_users = self.log("--path", "/users", "--since", changes[1]["time"])
        self.assertEqual([c["sequence"] for c in at_users], [2, 3])
        before = self.log("--until", changes[1]["time"])
        self.assertEqual([c["sequence"] for c in before], [1, 2])
        moment = changes[1]["time"]
        # The namespace as it was then, by time and by sequence, by both
        # doors.
        copies = []
        for source in (["--data", self.data, "--namespace", "shop"],
                       ["--url", self.url]):
            for target in (["--at", moment], ["--at-seq", "2"]):
                out = os.path.join(self.dir, f"b{len(copies)}.json")
                code, _, err = hearth("backup", *target, *source, out)
                self.assertEqual(code, 0, err)
                with open(out) as f:
                    copies.append(json.load(f))
        self.assertEqual(copies, [good] * 4)
        # One subtree back, in one write; what came after stays.
        code, _, err = hearth("restore", "--path", "/users",
                              os.path.join(self.dir, "b0.json"),
                              "--url", self.url)
        self.assertEqual(code, 0, err)
        now = http("GET", self.server.url("/", "?ns=shop"))[1]
        self.assertEqual(now, {"users": good["users"], "motd": "hello"})
        last = self.log()[-1]
        self.assertEqual((last["sequence"], last["path"], last["identity"]),
                         (5, "/users", "admin"))

    def test_refusals(self):
        self.put("/a", 1)
        code, _, err = hearth("backup", "--at-seq", "9", "--data", self.data,
                              "--namespace", "shop",
                              os.path.join(self.dir, "x.json"))
        self.assertEqual(code, 1)
        self.assertIn("not written yet", err)
        code, _, err = hearth("backup", "--at", "2001-01-01T00:00:00Z",
                              "--url", self.url,
                              os.path.join(self.dir, "x.json"))
        self.assertEqual(code, 0, err)  # before the first write: empty
        code, _, err = hearth("backup", "--at", "yesterday", "--url",
                              self.url, os.path.join(self.dir, "x.json"))
        self.assertEqual(code, 64)
        code, _, err = hearth("serve", "--retain", "7 days")
        self.assertEqual(code, 64)

    def test_kill_9_during_restore_leaves_target_untouched(self):
        self.put("/users", {"ada": {"name": "Ada"}}, OWNER)
        before = http("GET", self.server.url("/", "?ns=shop"))[1]
        big = {"users": {f"u{i}": {"name": "x" * 200, "n": i}
                         for i in range(60000)}}
        path = os.path.join(self.dir, "big.json")
        with open(path, "w") as f:
            json.dump(big, f)
        restored = {"users": big["users"]}
        untouched = 0
        for delay in (0.05, 0.1, 0.2, 0.4, 0.8):
            restore = subprocess.Popen(
                [HEARTH, "restore", "--path", "/users", path, "--url",
                 self.url], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            time.sleep(delay)
            if restore.poll() is not None:
                break  # it finished first: the target is the whole file
            restore.send_signal(signal.SIGKILL)
            restore.wait(timeout=30)
            # A write barrier: whatever reached the server before is
            # answered before this is.
            self.put("/barrier", delay, OWNER)
            now = http("GET", self.server.url("/", "?ns=shop"))[1]
            now.pop("barrier", None)
            # Killed before its write was whole: untouched. Killed after
            # (waiting for the answer): the whole subtree. Never a part.
            self.assertTrue(now == before or now == restored,
                            f"killed after {delay} s: a partial restore")
            if now != before:
                self.put("/users", before["users"], OWNER)  # again
            untouched += now == before
        self.assertGreater(untouched, 0)
        code, _, err = hearth("restore", "--path", "/users", path, "--url",
                              self.url)
        self.assertEqual(code, 0, err)
        status, users = http("GET", self.server.url("/users", "?ns=shop&shallow=true"))
        self.assertEqual(len(users), 60000)

    def test_damaged_log_refused_with_file_and_offset(self):
        for i in range(5):
            self.put(f"/n/{i}", i)
        self.server.stop()
        log = os.path.join(self.data, "shop", "log.1")
        with open(log, "r+b") as f:
            f.seek(40)
            byte = f.read(1)
            f.seek(40)
            f.write(bytes([byte[0] ^ 0x55]))
        code, _, err = hearth("log", "--data", self.data, "--namespace", "shop")
        self.assertEqual(code, 1)
        self.assertIn(f"{log} is damaged at offset 13", err)
        code, _, err = hearth("backup", "--at-seq", "1", "--data", self.data,
                              "--namespace", "shop",
                              os.path.join(self.dir, "x.json"))
        self.assertEqual(code, 1)
        self.assertIn(f"{log} is damaged at offset 13", err)
        self.server.start()  # for tearDown (it refuses the namespace only)


if __name__ == "__main__":
    run_tests(__name__)
