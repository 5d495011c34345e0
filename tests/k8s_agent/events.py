"""Pod events as the kubelet records them (Started, Killing, Failed), so that
`kubectl describe pod` and a launcher reading events see the container side."""
import uuid

from kapi import log, now_rfc3339


def post_event(api, pod, node, container, reason, message, warning=False):
    """Best effort, like the kubelet's event recorder: a failure is logged, never raised."""
    md = pod["metadata"]
    t = now_rfc3339()
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{md['name']}.{uuid.uuid4().hex[:16]}", "namespace": md["namespace"]},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": md["namespace"],
            "name": md["name"],
            "uid": md["uid"],
            "fieldPath": f"spec.containers{{{container}}}" if container else None,
        },
        "reason": reason,
        "message": message,
        "type": "Warning" if warning else "Normal",
        "source": {"component": "kubelet", "host": node},
        "firstTimestamp": t,
        "lastTimestamp": t,
        "count": 1,
    }
    if container is None:
        del body["involvedObject"]["fieldPath"]
    try:
        code, out = api.call("POST", f"/api/v1/namespaces/{md['namespace']}/events", body, timeout=5)
    except OSError as e:
        code, out = 0, {"message": str(e)}
    if code != 201:
        log(f"event {reason} for pod {md['namespace']}/{md['name']} not recorded: HTTP {code}: {out.get('message', '')}")
