"""End-to-end test of keeping Firebase Auth: `hearth serve --firebase-project
ID --auth-keys-url URL` against a local HTTPS key server publishing
Google's form (kid -> PEM certificate, Cache-Control max-age), its CA made
here and trusted through SSL_CERT_FILE; tokens minted by `hearth token
--key --kid --firebase-project`; the start banner's key state; rotation
seen with no restart; SIGHUP fetching again; the same settings from a
`--config` file.
Run: HEARTH_BIN=.build/debug/hearth python Tests/e2e/test_auth_keys.py
"""
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(__file__))
from test_operator import make_ca, make_cert, openssl  # noqa: E402
from test_python_clients import HEARTH, Server, http, run_tests  # noqa: E402

PROJECT = "demo-e2e"


class KeyServer:
    """Google's certificate map over HTTPS, changeable while it runs."""

    def __init__(self, cert, key):
        self.doc, self.max_age, self.requests = "{}", 2, 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                owner.requests += 1
                body = owner.doc.encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Cache-Control", f"public, max-age={owner.max_age}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


class FirebaseProject(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="hearth-e2e-authk-")
        pki = cls.pki = os.path.join(cls.dir, "pki")
        os.mkdir(pki)
        make_ca(pki, "ca")
        make_cert(pki, "ca", "keyserver")
        cls.certs = {}
        for kid in ("k1", "k2"):  # the signing keys and their certificates
            openssl(pki, "genpkey", "-algorithm", "RSA", "-pkeyopt",
                    "rsa_keygen_bits:2048", "-out", f"{kid}.pem")
            openssl(pki, "req", "-x509", "-key", f"{kid}.pem", "-days", "2",
                    "-subj", f"/CN={kid}", "-out", f"{kid}.crt")
            with open(os.path.join(pki, f"{kid}.crt")) as f:
                cls.certs[kid] = f.read()
        cls.keys = KeyServer(os.path.join(pki, "keyserver.pem"),
                             os.path.join(pki, "keyserver.key"))
        cls.publish("k1")
        rules = os.path.join(cls.dir, "rules.json")
        with open(rules, "w") as f:
            json.dump({"rules": {"data": {".read": "auth.token.email_verified == true && "
                                          "auth.token.firebase.sign_in_provider == 'google.com' "
                                          "&& auth.provider == 'google'"}}}, f)
        os.environ["SSL_CERT_FILE"] = os.path.join(pki, "ca.pem")
        cls.server = Server(os.path.join(cls.dir, "data"))
        cls.server.extra_args = [
            "--firebase-project", PROJECT, "--rules", rules,
            "--auth-keys-url", f"https://127.0.0.1:{cls.keys.port}/robot/v1/certs",
            "--admin-secret", "0123456789abcdef-admin"]
        cls.server.start()
        cls.banner = []
        for line in cls.server.proc.stdout:
            cls.banner.append(line)
            if line.startswith("stop with"):
                break

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.keys.httpd.shutdown()
        shutil.rmtree(cls.dir)

    @classmethod
    def publish(cls, *kids):
        cls.keys.doc = json.dumps({k: cls.certs[k] for k in kids})

    def token(self, kid, verified=True):
        claims = {"email": "ada@example.com", "email_verified": verified,
                  "firebase": {"sign_in_provider": "google.com",
                               "identities": {"google.com": ["1234"],
                                              "email": ["ada@example.com"]}}}
        out = subprocess.run(
            [HEARTH, "token", "--uid", "ada", "--key",
             os.path.join(self.pki, f"{kid}.pem"), "--kid", kid,
             "--firebase-project", PROJECT, "--claims", json.dumps(claims)],
            check=True, capture_output=True, text=True)
        return out.stdout.strip()

    def read(self, token):
        return http("GET", self.server.url("/data", f"?auth={token}"))[0]

    def test_1_banner_says_where_the_keys_come_from(self):
        text = "".join(self.banner)
        self.assertIn(f"Firebase ID tokens, RS256/ES256 with the keys of "
                      f"https://127.0.0.1:{self.keys.port}/robot/v1/certs: 1 keys (kid k1)",
                      text)
        self.assertIn("SIGHUP reads the token keys again", text)

    def test_2_id_tokens_and_rules(self):
        self.assertEqual(self.read(self.token("k1")), 200)
        self.assertEqual(self.read(self.token("k1", verified=False)), 401)

    def test_3_rotation_without_restart(self):
        t1, t2 = self.token("k1"), self.token("k2")
        self.publish("k1", "k2")
        deadline, t1_failures = time.time() + 8, 0
        while time.time() < deadline and self.read(t2) != 200:
            t1_failures += self.read(t1) != 200
            time.sleep(0.05)
        self.assertEqual(self.read(t2), 200)
        self.assertEqual(t1_failures, 0)
        self.publish("k2")
        deadline = time.time() + 8
        while time.time() < deadline and self.read(t1) != 401:
            self.assertEqual(self.read(t2), 200)
            time.sleep(0.05)
        self.assertEqual(self.read(t1), 401)

    def test_4_sighup_fetches_again(self):
        before = self.keys.requests
        self.server.proc.send_signal(signal.SIGHUP)
        line = self.server.proc.stdout.readline()
        self.assertIn("token keys: fetching the key URL again", line)
        deadline = time.time() + 5
        while time.time() < deadline and self.keys.requests == before:
            time.sleep(0.05)
        self.assertGreater(self.keys.requests, before)

    def test_5_config_file_keys(self):
        """The config file's "firebase-project" and "auth-keys-url"."""
        config = os.path.join(self.dir, "hearth.json")
        url = f"https://127.0.0.1:{self.keys.port}/robot/v1/certs"
        with open(config, "w") as f:
            json.dump({"firebase-project": PROJECT, "auth-keys-url": url}, f)
        other = Server(os.path.join(self.dir, "data2"))
        other.extra_args = ["--config", config]
        other.start()
        banner = ""
        for line in other.proc.stdout:
            banner += line
            if line.startswith("stop with"):
                break
        other.stop()
        self.assertIn(f"Firebase ID tokens, RS256/ES256 with the keys of {url}:", banner)


if __name__ == "__main__":
    run_tests(__name__)
