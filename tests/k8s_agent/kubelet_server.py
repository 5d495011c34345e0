"""The part of the kubelet API the apiserver proxies pods/log to:
GET /containerLogs/{namespace}/{pod}/{container}?follow=&tailLines=&previous=&limitBytes=
over HTTPS, client certificates required (the apiserver's kubelet client
certificate, signed by the testbed CA)."""
import re
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import streams
from kapi import log

_LOGS = re.compile(r"^/containerLogs/([^/]+)/([^/]+)/([^/]+)/?$")
_EXEC = re.compile(r"^/exec/([^/]+)/([^/]+)/([^/]+)/?$")
_ATTACH = re.compile(r"^/attach/([^/]+)/([^/]+)/([^/]+)/?$")
FOLLOW_POLL = 0.1
APISERVER_CN = "kube-apiserver-kubelet-client"


def tail(data, n):
    if n < 0:
        return data
    if n == 0:
        return b""
    lines = data.splitlines(keepends=True)
    return b"".join(lines[-n:])


class Handler(BaseHTTPRequestHandler):
    runner = None  # set by serve()
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        log("kubelet api: " + (fmt % args))

    def _text(self, code, text):
        b = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def _chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def _from_apiserver(self):
        cert = self.connection.getpeercert() or {}
        names = [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"]
        return APISERVER_CN in names

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        if u.path in ("/healthz", "/readyz", "/livez"):
            return self._text(200, "ok")
        if not self._from_apiserver():
            return self._text(403, "only the kube-apiserver's kubelet client certificate may read logs here\n")
        if _EXEC.match(u.path):
            return self._exec(u)
        if _ATTACH.match(u.path):
            return self._attach(u)
        m = _LOGS.match(u.path)
        if not m:
            return self._text(404, f"not served by the tandem node agent: {u.path}\n")
        ns, pod, container = (urllib.parse.unquote(g) for g in m.groups())
        q = urllib.parse.parse_qs(u.query)

        def flag(name):
            return q.get(name, ["false"])[0] in ("true", "1")

        try:
            tail_lines = int(q.get("tailLines", ["-1"])[0])
            limit = int(q.get("limitBytes", ["-1"])[0])
        except ValueError:
            return self._text(400, "tailLines and limitBytes must be integers\n")
        run = self.runner.find_container(ns, pod, container)
        if run is None:
            return self._text(404, f"container {container!r} of pod {ns}/{pod} is not running on this node\n")
        if flag("previous"):
            if run.restart_count == 0:
                return self._text(
                    400, f'previous terminated container "{container}" in pod "{pod}" not found\n'
                )
            path, exited, follow = run.log_path(run.restart_count - 1), None, False
        else:
            path, exited, follow = run.log_path(), run.exited, flag("follow")
        try:
            f = open(path, "rb")
        except FileNotFoundError:
            return self._text(404, f"no log for container {container!r} of pod {ns}/{pod}\n")
        with f:
            data = tail(f.read(), tail_lines)  # f stays at the end: following goes on from there
            if limit >= 0:
                data = data[:limit]
            if not follow:
                return self._text(200, data.decode(errors="replace"))
            self._follow(f, data, exited, limit)

    def do_POST(self):
        u = urllib.parse.urlparse(self.path)
        if not self._from_apiserver():
            return self._text(403, "only the kube-apiserver's kubelet client certificate may exec here\n")
        if _EXEC.match(u.path):
            return self._exec(u)
        if _ATTACH.match(u.path):
            return self._attach(u)
        return self._text(404, f"not served by the tandem node agent: {u.path}\n")

    def _exec(self, u):
        ns, pod, container = (urllib.parse.unquote(g) for g in _EXEC.match(u.path).groups())
        run = self.runner.find_container(ns, pod, container)
        if run is None or run.exited.is_set():
            return self._text(404, f"container {container!r} of pod {ns}/{pod} is not running on this node\n")
        streams.exec_in(self, run, urllib.parse.parse_qs(u.query))

    def _attach(self, u):
        ns, pod, container = (urllib.parse.unquote(g) for g in _ATTACH.match(u.path).groups())
        run = self.runner.find_container(ns, pod, container)
        if run is None or run.exited.is_set():
            return self._text(404, f"container {container!r} of pod {ns}/{pod} is not running on this node\n")
        streams.attach_to(self, run, urllib.parse.parse_qs(u.query))

    def _follow(self, f, data, exited, limit):
        """Chunked stream until the process has exited and its output is all sent."""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = len(data)
        try:
            self._chunk(data)
            while limit < 0 or sent < limit:
                done = exited.is_set()
                more = f.read(65536)
                if more:
                    if limit >= 0:
                        more = more[: limit - sent]
                    self._chunk(more)
                    sent += len(more)
                elif done:
                    break
                else:
                    time.sleep(FOLLOW_POLL)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass
        self.close_connection = True


def serve(runner, port, cert, key, client_ca):
    """Starts the HTTPS server in a daemon thread; returns the server."""
    Handler.runner = runner
    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(client_ca)
    ctx.verify_mode = ssl.CERT_REQUIRED
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, name="kubelet-api", daemon=True).start()
    log(f"kubelet API on https://127.0.0.1:{port} (client certificates of the testbed CA only)")
    return srv
