"""The custom metrics API (custom.metrics.k8s.io/v1beta1) for the testbed's
HorizontalPodAutoscalers, served as an aggregated API: the kube-apiserver
proxies /apis/custom.metrics.k8s.io/v1beta1/... here (APIService
v1beta1.custom.metrics.k8s.io, made by `up`) with its front-proxy client
certificate, and the real HPA controller reads per-pod values from it.

Values come from a JSON file a test writes (VALUES, in the agent's state
folder): {"<namespace>": {"<metric>": {"<pod name>" or "*": <number>}}}; a
pod without its own value takes "*", a metric without any value is absent
(404, as a real adapter answers). Only pod metrics, only GET.
"""
import datetime
import json
import os
import ssl
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kapi import log

GROUP_VERSION = "custom.metrics.k8s.io/v1beta1"
PREFIX = "/apis/" + GROUP_VERSION


def matches(labels, selector):
    """Equality-based label selectors (what an HPA passes: its target's matchLabels): a=b,c!=d,e."""
    for term in filter(None, (t.strip() for t in (selector or "").split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.strip().rstrip("=")) != v.strip().lstrip("="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def quantity(value):
    """A number as a Kubernetes quantity: whole numbers plain, fractions in milli-units."""
    milli = round(float(value) * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


class Handler(BaseHTTPRequestHandler):
    server_version = "tandem-custom-metrics"
    runner = None
    values_path = None

    def log_message(self, fmt, *args):
        pass

    def _json(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code, reason, message):
        self._json(code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": message, "reason": reason, "code": code})

    def _values(self):
        try:
            with open(self.values_path) as f:
                data = json.load(f)
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        path = u.path.rstrip("/")
        if path == PREFIX:
            metrics = sorted({m for ns in self._values().values() if isinstance(ns, dict) for m in ns})
            return self._json(200, {
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
                "resources": [{"name": f"pods/{m}", "singularName": "", "namespaced": True,
                               "kind": "MetricValueList", "verbs": ["get"]} for m in metrics],
            })
        parts = path[len(PREFIX):].strip("/").split("/") if path.startswith(PREFIX + "/") else []
        parts = [urllib.parse.unquote(p) for p in parts]  # the apiserver sends pods/%2A for pods/*
        # namespaces/NS/pods/NAME|*/METRIC
        if len(parts) != 5 or parts[0] != "namespaces" or parts[2] != "pods":
            return self._status(404, "NotFound", f"the custom metrics API of the testbed serves pod metrics only: {u.path}")
        ns, name, metric = parts[1], parts[3], parts[4]
        selector = urllib.parse.parse_qs(u.query).get("labelSelector", [""])[0]
        table = (self._values().get(ns) or {}).get(metric)
        if not isinstance(table, dict) or not table:
            return self._status(404, "NotFound", f'the server could not find the metric {metric} for pods')
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        items = []
        for pod in self.runner.running_pods(ns):
            md = pod["metadata"]
            if name != "*" and md["name"] != name:
                continue
            if name == "*" and not matches(md.get("labels") or {}, selector):
                continue
            value = table.get(md["name"], table.get("*"))
            if value is None:
                continue
            items.append({
                "describedObject": {"kind": "Pod", "namespace": ns, "name": md["name"], "apiVersion": "/v1"},
                "metricName": metric, "timestamp": now, "value": quantity(value),
            })
        if name != "*" and not items:
            return self._status(404, "NotFound", f"no value of {metric} for pod {ns}/{name}")
        self._json(200, {"kind": "MetricValueList", "apiVersion": GROUP_VERSION, "metadata": {}, "items": items})


def serve(runner, address, port, cert, key, client_ca, values_path):
    """Starts the HTTPS server in a daemon thread (client certificates of client_ca only: the apiserver's
    front-proxy client)."""
    Handler.runner, Handler.values_path = runner, values_path
    srv = ThreadingHTTPServer((address, port), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(client_ca)
    ctx.verify_mode = ssl.CERT_REQUIRED
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, name="custom-metrics", daemon=True).start()
    log(f"custom metrics API on https://{address}:{port} (values from {values_path})")
    return srv
