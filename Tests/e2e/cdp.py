"""A headless Chromium driven over the DevTools protocol, with the standard
library only: a minimal WebSocket client (RFC 6455: text frames, masked,
fragments joined, pings answered) and the protocol's commands and events.

    with Browser() as b:
        page = b.page()
        page.call("Page.navigate", url="http://...")
        page.evaluate("document.title")
"""

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request


class WebSocket:
    def __init__(self, url):
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        host, port, path = m.group(1), int(m.group(2)), m.group(3)
        self.sock = socket.create_connection((host, port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed during the handshake")
            head += chunk
        head, self.pending = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError("DevTools refused the WebSocket: %r" % head[:80])

    def _read(self, n):
        while len(self.pending) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("DevTools closed the WebSocket")
            self.pending += chunk
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def _send_frame(self, opcode, payload):
        head = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + body)

    def send(self, text):
        self._send_frame(0x1, text.encode())

    def recv(self):
        """The next whole text message."""
        message = b""
        while True:
            b0, b1 = self._read(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            if opcode == 0x9:  # ping
                self._send_frame(0xA, payload)
                continue
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            message += payload
            if b0 & 0x80:
                return message.decode()

    def close(self):
        self.sock.close()


class Page:
    """One tab: commands answered in order, events kept for the test."""

    def __init__(self, ws_url):
        self.ws = WebSocket(ws_url)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def evaluate(self, expression):
        """The value of a JavaScript expression (awaited when a promise)."""
        r = self.call("Runtime.evaluate", expression=expression,
                      returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait_for(self, expression, timeout=5.0, what=None):
        """Polls until the expression is truthy in JavaScript; its value (an
        element comes back as {})."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value not in (None, False, 0, ""):
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {timeout} s: {what or expression}")
            time.sleep(0.05)

    def key(self, key, code=None, vk=0, text=None):
        """A key pressed and released, as a user's keyboard does."""
        down = {"type": "keyDown", "key": key, "code": code or key,
                "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk}
        if text:
            down["text"] = text
        self.call("Input.dispatchKeyEvent", **down)
        self.call("Input.dispatchKeyEvent", type="keyUp", key=key,
                  code=code or key, windowsVirtualKeyCode=vk,
                  nativeVirtualKeyCode=vk)

    def type(self, text):
        self.call("Input.insertText", text=text)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        self.ws.close()


class Browser:
    """Headless Chromium on a free DevTools port, in a profile of its own."""

    def __init__(self, binary=None):
        self.binary = binary or shutil.which("chromium") or shutil.which("chromium-browser")
        if not self.binary:
            raise RuntimeError("chromium is not installed")

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="hearth-chromium-")
        self.log = open(os.path.join(self.profile, "stderr.log"), "w")
        self.proc = subprocess.Popen(
            [self.binary, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             "--window-size=1280,860", "--remote-debugging-port=0",
             "--remote-allow-origins=*", f"--user-data-dir={self.profile}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        # Chromium writes the port it chose into the profile.
        active = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 30
        self.port = None
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with open(active) as f:
                    first = f.readline().strip()
                if first:
                    self.port = int(first)
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        if not self.port:
            self.__exit__(None, None, None)
            raise RuntimeError("chromium did not start its DevTools")
        return self

    def page(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list") as r:
            targets = json.load(r)
        page = next(t for t in targets if t["type"] == "page")
        return Page(page["webSocketDebuggerUrl"])

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)
