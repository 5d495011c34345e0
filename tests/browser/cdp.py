#!/usr/bin/env python3
"""Drives a real headless Chromium through the DevTools protocol, for the dashboard's tests.

Usage: cdp.py STEP... where each STEP is one of
  goto URL               navigate and wait for the load event
  text                   print the page's visible text
  html                   print the page's HTML (after scripts ran)
  wait-text TEXT SECS    wait until the visible text contains TEXT
  click SELECTOR         click the element (no navigation expected)
  click-nav SELECTOR     click the element and wait for the page it leads to
  open SELECTOR          open a <details> element
  eval EXPRESSION        print the value of a JavaScript expression
  screenshot PATH        save a PNG of the page
  dark                   from now on, prefers-color-scheme: dark
Each step prints one JSON line {"step": ..., "value": ...}; a failing step prints the reason on stderr
and exits 1. Only the standard library: the websocket client is the few lines below (RFC 6455)."""

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request


def fail(message):
    sys.stderr.write("cdp.py: " + message + "\n")
    sys.exit(1)


class WebSocket:
    def __init__(self, url):
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                fail("the browser closed the DevTools connection")
            head += chunk
        head, _, self.buffer = head.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            fail("DevTools refused the websocket: " + head.decode(errors="replace"))

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                fail("the browser closed the DevTools connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def receive(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            if b1 & 0x80:
                mask = self._read(4)
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(self._read(n)))
            else:
                data = self._read(n)
            opcode = b0 & 0x0F
            if opcode == 0x8:
                fail("the browser closed the DevTools connection")
            if opcode in (0x9, 0xA):
                continue
            message += data
            if b0 & 0x80:
                return message.decode()


class Browser:
    def __init__(self):
        exe = shutil.which("chromium") or fail("chromium is not installed (apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="tandem-chromium-")
        self.process = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             "--disable-dev-shm-usage", "--remote-debugging-port=0", "--window-size=1280,900",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 60
        while not os.path.exists(port_file) or len(open(port_file).read().split()) < 2:
            if time.time() > deadline or self.process.poll() is not None:
                fail("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30))
        page = next((t for t in targets if t.get("type") == "page"), None) or fail("no page target")
        self.ws = WebSocket(page["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events = []
        self.call("Page.enable")
        self.call("Runtime.enable")

    def close(self):
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == self.next_id:
                if "error" in message:
                    fail(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_event(self, method, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    del self.events[: i + 1]
                    return e
            self.ws.sock.settimeout(max(0.1, deadline - time.time()))
            try:
                self.events.append(json.loads(self.ws.receive()))
            except socket.timeout:
                break
            finally:
                self.ws.sock.settimeout(60)
        fail(f"no {method} within {timeout} s")

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            fail(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")


def main(argv):
    steps = argv[1:]
    browser = Browser()
    try:
        i = 0
        while i < len(steps):
            step = steps[i]
            value = None
            if step == "goto":
                url = steps[i + 1]
                i += 1
                browser.events.clear()
                browser.call("Page.navigate", url=url)
                browser.wait_event("Page.loadEventFired")
                value = browser.evaluate("location.pathname")
            elif step in ("text", "html"):
                value = browser.evaluate("document.body.innerText" if step == "text"
                                         else "document.documentElement.outerHTML")
            elif step == "wait-text":
                text, seconds = steps[i + 1], float(steps[i + 2])
                i += 2
                deadline = time.time() + seconds
                while text not in (browser.evaluate("document.body.innerText") or ""):
                    if time.time() > deadline:
                        fail(f"the page never showed {text!r} within {seconds} s; it shows:\n"
                             + (browser.evaluate("document.body.innerText") or ""))
                    time.sleep(0.25)
                value = True
            elif step in ("click", "click-nav", "open"):
                selector = steps[i + 1]
                i += 1
                browser.events.clear()
                found = browser.evaluate(
                    f"(function(){{var e=document.querySelector({json.dumps(selector)});if(!e)return false;"
                    + ("e.open=true;" if step == "open" else "e.click();") + "return true;})()")
                if not found:
                    fail(f"no element {selector!r} on {browser.evaluate('location.href')}")
                if step == "click-nav":
                    browser.wait_event("Page.loadEventFired")
                value = browser.evaluate("location.pathname")
            elif step == "dark":
                browser.call("Emulation.setEmulatedMedia",
                             features=[{"name": "prefers-color-scheme", "value": "dark"}])
                value = True
            elif step == "eval":
                value = browser.evaluate(steps[i + 1])
                i += 1
            elif step == "screenshot":
                path = steps[i + 1]
                i += 1
                data = browser.call("Page.captureScreenshot", format="png")["data"]
                with open(path, "wb") as f:
                    f.write(base64.b64decode(data))
                value = os.path.getsize(path)
            else:
                fail(f"unknown step {step!r}")
            print(json.dumps({"step": step, "value": value}), flush=True)
            i += 1
    finally:
        browser.close()


if __name__ == "__main__":
    main(sys.argv)
