"""A small Kubernetes API client (standard library only): JSON calls and
watches, as one identity (a bearer token), CA-verified TLS."""
import datetime
import json
import ssl
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

_LOG_LOCK = threading.Lock()


def log(msg):
    t = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
    with _LOG_LOCK:
        print(f"{t} {msg}", file=sys.stdout, flush=True)


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ApiError(Exception):
    def __init__(self, method, path, code, message):
        super().__init__(f"{method} {path}: HTTP {code}: {message}")
        self.code = code


class Api:
    def __init__(self, server, ca, token, who):
        self.server = server.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=ca)
        self._token = token  # never logged
        self.who = who

    def _request(self, method, path, body, ctype):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self._token)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", ctype)
        return req

    def call(self, method, path, body=None, ctype="application/json", timeout=30):
        """Returns (HTTP code, decoded body). Connection errors raise OSError."""
        req = self._request(method, path, body, ctype)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as r:
                return r.status, json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw or b"{}")
            except ValueError:
                return e.code, {"message": raw.decode(errors="replace")[:300]}

    def must(self, method, path, body=None, ctype="application/json", ok=(200, 201)):
        code, out = self.call(method, path, body, ctype)
        if code not in ok:
            raise ApiError(method, path, code, out.get("message", ""))
        return out

    def patch_status(self, path, status):
        """Strategic merge patch of a status subresource (conditions merge by type)."""
        return self.call("PATCH", path + "/status", {"status": status}, "application/strategic-merge-patch+json")

    def watch(self, path, resource_version, timeout_seconds=300):
        """Yields watch events (dicts with type and object) until the server
        ends the watch. Raises ApiError on a non-200 answer."""
        q = urllib.parse.urlencode(
            {
                "watch": "true",
                "resourceVersion": resource_version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": str(timeout_seconds),
            }
        )
        sep = "&" if "?" in path else "?"
        req = self._request("GET", f"{path}{sep}{q}", None, None)
        try:
            r = urllib.request.urlopen(req, context=self.ctx, timeout=timeout_seconds + 30)
        except urllib.error.HTTPError as e:
            raise ApiError("GET", path + " (watch)", e.code, e.read().decode(errors="replace")[:300]) from None
        with r:
            while True:
                line = r.readline()
                if not line:
                    return
                line = line.strip()
                if line:
                    yield json.loads(line)
