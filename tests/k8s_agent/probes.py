"""Container probes as the kubelet runs them (pkg/kubelet/prober): httpGet
(success: a status in 200..399), tcpSocket (a connection), exec (exit 0),
each bounded by timeoutSeconds; results counted against successThreshold and
failureThreshold after initialDelaySeconds, one probe every periodSeconds.
The messages are the kubelet's, so an event or a reason reads as on a real
node ("HTTP probe failed with statuscode: 503").

pods.py runs the readiness probes: their result sets the container's
`ready` and the pod's Ready condition, which the real endpoints controller
reads to fill a Service's Endpoints. Liveness and startup probes are not run."""
import http.client
import socket
import subprocess
import time

from envres import expand

DEFAULTS = {"initialDelaySeconds": 0, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1,
            "failureThreshold": 3}


def _port(value, container):
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    for p in container.get("ports") or []:
        if p.get("name") == value:
            return int(p["containerPort"])
    raise ValueError(f"port {value!r} is not a number or a named port of the container")


def probe_once(probe, container, pod_ip, enter=(), env=None):
    """One run of `probe` against a container at pod_ip: (succeeded, message). `enter` is the argv prefix
    that runs a command in the container (its namespaces), for exec probes."""
    timeout = probe.get("timeoutSeconds", DEFAULTS["timeoutSeconds"])
    try:
        if "httpGet" in probe:
            h = probe["httpGet"]
            if h.get("scheme", "HTTP").upper() != "HTTP":
                return False, "HTTPS probes are not run by the node agent"
            host = h.get("host") or pod_ip
            port = _port(h.get("port"), container)
            path = h.get("path") or "/"
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
            headers = {x["name"]: x["value"] for x in h.get("httpHeaders") or []}
            headers.setdefault("User-Agent", "kube-probe/1.20")
            try:
                conn.request("GET", path, headers=headers)
                code = conn.getresponse().status
            finally:
                conn.close()
            if 200 <= code < 400:
                return True, ""
            return False, f"HTTP probe failed with statuscode: {code}"
        if "tcpSocket" in probe:
            t = probe["tcpSocket"]
            port = _port(t.get("port"), container)
            with socket.create_connection((t.get("host") or pod_ip, port), timeout=timeout):
                return True, ""
        if "exec" in probe:
            # As the kubelet's prober does (ExpandContainerCommandOnlyStatic): $(NAME) from the container's
            # environment, $$ -> $.
            argv = list(enter) + [expand(str(w), env or {}) for w in probe["exec"].get("command") or []]
            try:
                r = subprocess.run(argv, capture_output=True, timeout=timeout, env=env)
            except subprocess.TimeoutExpired:
                return False, f"command timed out after {timeout}s"
            if r.returncode == 0:
                return True, ""
            return False, (r.stdout + r.stderr).decode(errors="replace").strip()[:1024] or f"exit {r.returncode}"
        return False, "the probe has no handler (httpGet, tcpSocket or exec)"
    except (OSError, http.client.HTTPException, ValueError) as e:
        target = f"{pod_ip}:{probe.get('httpGet', probe.get('tcpSocket', {})).get('port')}"
        return False, f"dial tcp {target}: {e}"


class Tracker:
    """The thresholds of one probe over time: ready() flips after successThreshold successes in a row,
    back after failureThreshold failures in a row; nothing runs before initialDelaySeconds."""

    def __init__(self, probe, started):
        self.probe = {**DEFAULTS, **probe}
        self.started = started
        self.next_at = started + self.probe["initialDelaySeconds"]
        self.ready = False
        self.successes = self.failures = 0
        self.last_message = ""

    def due(self, now=None):
        return (time.monotonic() if now is None else now) >= self.next_at

    def record(self, ok, message, now=None):
        """Counts one result; True when ready() changed."""
        now = time.monotonic() if now is None else now
        self.next_at = now + self.probe["periodSeconds"]
        before = self.ready
        if ok:
            self.successes, self.failures = self.successes + 1, 0
            if self.successes >= self.probe["successThreshold"]:
                self.ready = True
        else:
            self.successes, self.failures = 0, self.failures + 1
            self.last_message = message
            if self.failures >= self.probe["failureThreshold"]:
                self.ready = False
        return self.ready != before
