"""A minimal WebSocket client of our own (RFC 6455 with the standard library
only: text frames, masked, fragments joined, pings answered), so that the
end-to-end tests speak to the server and to Chromium's DevTools without a
client library in between. The C tests and benchmarks have theirs in
Tests/CTests/ws_wire.c.

    ws = WebSocket("ws://127.0.0.1:8080/.ws?v=5&ns=demo")
    hello = json.loads(ws.recv())
"""

import base64
import os
import re
import socket
import struct


class WebSocket:
    def __init__(self, url, host=None, timeout=30):
        """Connects and upgrades; `host` replaces the Host header (as a
        proxy in front would send it)."""
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        addr, port, path = m.group(1), int(m.group(2)), m.group(3)
        self.sock = socket.create_connection((addr, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host or f'{addr}:{port}'}\r\n"
                           "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the WebSocket handshake")
            head += chunk
        head, self.pending = head.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError("the WebSocket was refused: %r" % head[:80])

    def settimeout(self, seconds):
        self.sock.settimeout(seconds)

    def _read(self, n):
        while len(self.pending) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the WebSocket closed")
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
                raise ConnectionError("the WebSocket closed")
            message += payload
            if b0 & 0x80:
                return message.decode()

    def close(self):
        self.sock.close()
