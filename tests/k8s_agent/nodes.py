"""The nodes the agent plays the kubelet for: registration (labels, taints,
capacity) and heartbeats (Lease renewals, node status with Ready)."""
import threading
import time

from kapi import log, now_micro, now_rfc3339

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}

NODES = [
    {
        "name": "cpu-node",
        "capacity": {"cpu": "16", "memory": "64Gi"},
        "labels": {},
        "taints": [],
    },
    {
        "name": "gpu-node",
        "capacity": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"},
        "labels": {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.memory": "81559",
        },
        "taints": [GPU_TAINT],
    },
    {
        "name": "mig-node",
        "capacity": {"cpu": "32", "memory": "256Gi", "nvidia.com/mig-1g.10gb": "7"},
        "labels": {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
            "nvidia.com/gpu.count": "1",
            "nvidia.com/mig.strategy": "mixed",
            "nvidia.com/mig-1g.10gb.count": "7",
        },
        "taints": [GPU_TAINT],
    },
]

LEASE_SECONDS = 40
LEASE_RENEW = 10
STATUS_EVERY = 30


def node_status(spec, port):
    t = now_rfc3339()
    res = dict(spec["capacity"], pods="110")
    res.setdefault("ephemeral-storage", "100Gi")
    conds = [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        ("Ready", "True", "KubeletReady"),
    ]
    return {
        "capacity": res,
        "allocatable": res,
        "conditions": [
            {
                "type": c,
                "status": s,
                "reason": r,
                "message": "tandem node agent",
                "lastHeartbeatTime": t,
                "lastTransitionTime": t,
            }
            for c, s, r in conds
        ],
        "addresses": [
            {"type": "InternalIP", "address": "127.0.0.1"},
            {"type": "Hostname", "address": spec["name"]},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        "nodeInfo": {
            "machineID": spec["name"],
            "systemUUID": spec["name"],
            "bootID": "tandem-node-agent",
            "kernelVersion": "local",
            "osImage": "tandem node agent (local processes)",
            "containerRuntimeVersion": "local://1",
            "kubeletVersion": "v1.20.2",
            "kubeProxyVersion": "v1.20.2",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }


def register(api, spec, port):
    name = spec["name"]
    code, out = api.call("GET", f"/api/v1/nodes/{name}")
    if code == 404:
        labels = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
        }
        labels.update(spec["labels"])
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            # A node may set its taints only when it registers (NodeRestriction).
            "spec": {"taints": spec["taints"]},
        }
        code, out = api.call("POST", "/api/v1/nodes", body)
        log(f"node {name}: registered (HTTP {code})")
        if code not in (201, 409):
            raise RuntimeError(f"node {name}: register: HTTP {code}: {out.get('message', '')}")
    elif code != 200:
        raise RuntimeError(f"node {name}: GET: HTTP {code}: {out.get('message', '')}")
    code, out = api.patch_status(f"/api/v1/nodes/{name}", node_status(spec, port))
    if code != 200:
        raise RuntimeError(f"node {name}: status: HTTP {code}: {out.get('message', '')}")


def renew_lease(api, name):
    path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
    code, lease = api.call("GET", path)
    if code == 404:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now_micro()},
        }
        code, lease = api.call("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", body)
    elif code == 200:
        lease["spec"]["renewTime"] = now_micro()
        code, lease = api.call("PUT", path, lease)
    if code not in (200, 201):
        raise RuntimeError(f"lease {name}: HTTP {code}: {lease.get('message', '')}")


class Heartbeat(threading.Thread):
    """Registers the node (again, whenever it is missing) and keeps it Ready."""

    def __init__(self, api, spec, port, stop):
        super().__init__(name=f"heartbeat-{spec['name']}", daemon=True)
        self.api, self.spec, self.port, self.stop = api, spec, port, stop
        self.registered = threading.Event()

    def run(self):
        name = self.spec["name"]
        last_status = 0.0
        failing = False
        while not self.stop.is_set():
            try:
                if not self.registered.is_set() or time.monotonic() - last_status >= STATUS_EVERY:
                    register(self.api, self.spec, self.port)
                    last_status = time.monotonic()
                    self.registered.set()
                renew_lease(self.api, name)
                if failing:
                    log(f"node {name}: heartbeat ok again")
                failing = False
            except (OSError, RuntimeError) as e:
                if not failing:
                    log(f"node {name}: heartbeat failed: {e}")
                failing = True
                self.stop.wait(1)
                continue
            self.stop.wait(LEASE_RENEW)
