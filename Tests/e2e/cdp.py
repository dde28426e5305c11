"""A headless Chromium driven over the DevTools protocol, with the standard
library only: the protocol's commands and events over our own minimal
WebSocket client (wsraw.py).

    with Browser() as b:
        page = b.page()
        page.call("Page.navigate", url="http://...")
        page.evaluate("document.title")
"""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request

from wsraw import WebSocket


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
