"""End-to-end tests of `hearth serve` options that the official SDKs'
wire habits need (issue 24).

The realtime hello's "h" is the host the SDKs connect to next time (and
keep across launches: firebase-ios-sdk FirebaseDatabase/Sources/Realtime/
FConnection.m 206-209, firebase-android-sdk firebase-database/.../
connection/Connection.java 207). Behind a reverse proxy the Host header is
the proxy's upstream, so `hearth serve --public-host HOST` (config key
`public-host`) is sent instead. Spoken over a raw WebSocket so the Host
header is the proxy's.

Run: HEARTH_BIN=.build/debug/hearth python Tests/e2e/test_sdk_wire.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from test_python_clients import HEARTH, Server, run_tests  # noqa: E402
from wsraw import WebSocket  # noqa: E402


def hello(port, host_header):
    """The first message of a /.ws connection that says Host: host_header."""
    ws = WebSocket(f"ws://127.0.0.1:{port}/.ws?v=5&ns=demo", host=host_header,
                   timeout=10)
    try:
        return json.loads(ws.recv())["d"]["d"]
    finally:
        ws.close()


class PublicHost(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hearth-e2e-sdk-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_public_host_option_is_the_hellos_host(self):
        server = Server(os.path.join(self.dir, "a"))
        server.extra_args = ["--public-host", "db.example.com"]
        server.start()
        try:
            self.assertEqual(hello(server.port, "10.0.0.7:9000")["h"], "db.example.com")
        finally:
            server.stop()

    def test_public_host_config_key(self):
        path = os.path.join(self.dir, "hearth.json")
        with open(path, "w") as f:
            json.dump({"public-host": "cfg.example.com:8443"}, f)
        server = Server(os.path.join(self.dir, "b"))
        server.extra_args = ["--config", path]
        server.start()
        try:
            self.assertEqual(hello(server.port, "10.0.0.7:9000")["h"],
                             "cfg.example.com:8443")
        finally:
            server.stop()

    def test_without_it_the_host_header(self):
        server = Server(os.path.join(self.dir, "c")).start()
        try:
            self.assertEqual(hello(server.port, "10.0.0.7:9000")["h"], "10.0.0.7:9000")
        finally:
            server.stop()

    def test_a_malformed_public_host_fails_the_start(self):
        proc = subprocess.run(
            [HEARTH, "serve", "--port", "0", "--data", os.path.join(self.dir, "d"),
             "--public-host", "https://db.example.com/"],
            capture_output=True, text=True, timeout=20)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("invalid public host", proc.stdout + proc.stderr)


if __name__ == "__main__":
    run_tests(__name__)
