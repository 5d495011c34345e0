#!/usr/bin/env python3
"""tandem's node agent: plays the kubelet for the Kubernetes testbed
(scripts/testbed/k8s), where no real kubelet or container runtime can run.

For each node in nodes.py (cpu-node, gpu-node, mig-node), as that node's own
identity (system:node:<name>, so the Node authorizer and NodeRestriction
apply): registers the Node with its GPU capacity, labels and taints, keeps it
Ready (Lease renewals, status), watches the pods bound to it (one watch,
fieldSelector spec.nodeName; re-list on errors and 410 Gone) and runs their
containers as local processes (pods.py), after projecting their configMap
volumes at each mountPath on the host (volumes.py). Serves container logs
over the kubelet API (kubelet_server.py). Standard library only.
"""
import argparse
import os
import signal
import sys
import threading
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import custom_metrics  # noqa: E402
import kubelet_server  # noqa: E402
from kapi import Api, ApiError, log  # noqa: E402
from nodes import NODES, Heartbeat  # noqa: E402
from pods import Runner  # noqa: E402


def watch_pods(api, node, runner, stop):
    path = "/api/v1/pods?" + urllib.parse.urlencode({"fieldSelector": f"spec.nodeName={node}"})
    rv = None
    failing = False
    while not stop.is_set():
        try:
            if rv is None:
                code, lst = api.call("GET", path)
                if code != 200:
                    raise ApiError("GET", path, code, lst.get("message", ""))
                rv = lst["metadata"]["resourceVersion"]
                listed = set()
                for pod in lst.get("items") or []:
                    listed.add(pod["metadata"]["uid"])
                    runner.on_pod(api, node, pod)
                for uid in runner.known_uids(node) - listed:
                    runner.on_gone(uid)
            if failing:
                log(f"node {node}: pod watch ok again")
                failing = False
            for ev in api.watch(path, rv):
                kind, obj = ev.get("type"), ev.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        log(f"node {node}: watch: 410 Gone, listing again")
                    else:
                        log(f"node {node}: watch error: {obj.get('message', obj)}")
                    rv = None
                    break
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if kind == "BOOKMARK":
                    continue
                if kind == "DELETED":
                    runner.on_gone(obj["metadata"]["uid"])
                else:
                    runner.on_pod(api, node, obj)
        except (OSError, ApiError, ValueError) as e:
            if not failing:
                log(f"node {node}: pod watch failed ({e}); retrying")
            failing = True
            rv = None
            stop.wait(1)


def read_tokens(path):
    tokens = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                name, token = line.split()
                tokens[name] = token
    return tokens


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True)
    p.add_argument("--ca", required=True, help="CA of the apiserver (and of kubelet API clients)")
    p.add_argument("--node-tokens", required=True, help="file: one 'node-name token' per line")
    p.add_argument("--cert", required=True, help="kubelet API serving certificate")
    p.add_argument("--key", required=True)
    p.add_argument("--client-ca", required=True)
    p.add_argument("--port", type=int, default=10250)
    p.add_argument("--state-dir", required=True, help="per-pod working dirs and container logs")
    p.add_argument("--metrics-address", help="serve the custom metrics API on this address (the pod gateway)")
    p.add_argument("--metrics-port", type=int, default=10260)
    p.add_argument("--metrics-cert", help="its serving certificate (DNS name of the APIService's Service)")
    p.add_argument("--metrics-key")
    a = p.parse_args()

    tokens = read_tokens(a.node_tokens)
    missing = [n["name"] for n in NODES if n["name"] not in tokens]
    if missing:
        print(f"node agent: error: no token for {', '.join(missing)} in {a.node_tokens}", file=sys.stderr)
        return 2
    os.makedirs(os.path.join(a.state_dir, "pods"), exist_ok=True)
    api_port = urllib.parse.urlparse(a.server).port or 443
    runner = Runner(a.state_dir, api_port, os.environ.get("TANDEM_TESTBED_RUN", ""))
    stop = threading.Event()

    def on_term(signum, _frame):
        log(f"signal {signum}: stopping the pod processes")
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    kubelet_server.serve(runner, a.port, a.cert, a.key, a.client_ca)
    if a.metrics_address:
        custom_metrics.serve(runner, a.metrics_address, a.metrics_port, a.metrics_cert, a.metrics_key, a.client_ca,
                             os.path.join(a.state_dir, "custom-metrics.json"))
    beats = []
    for spec in NODES:
        api = Api(a.server, a.ca, tokens[spec["name"]], f"system:node:{spec['name']}")
        hb = Heartbeat(api, spec, a.port, stop)
        hb.start()
        beats.append(hb)
        threading.Thread(
            target=watch_pods, args=(api, spec["name"], runner, stop), name=f"watch-{spec['name']}", daemon=True
        ).start()
    log(f"node agent: nodes {', '.join(n['name'] for n in NODES)} on {a.server}")
    while not stop.is_set():
        stop.wait(1)
    runner.shutdown()
    log("node agent: stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
