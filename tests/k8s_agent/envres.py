"""Container environment and command resolution, the way the kubelet does it.

Pure logic (the API is reached through the two lookup callables), so it is
unit-tested on its own (test_envres.py).
"""
import base64
import math
import re
from fractions import Fraction

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class ConfigError(Exception):
    """The container cannot start yet (the kubelet's CreateContainerConfigError)."""


_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text, env):
    """Kubernetes $(VAR) expansion: $(NAME) -> value when NAME is defined
    (else left as is), $$ -> $."""

    def sub(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _VAR.sub(sub, text)


_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['([^']*)'\]$")


def field_value(pod, path):
    md = pod.get("metadata", {})
    spec = pod.get("spec", {})
    status = pod.get("status", {})
    simple = {
        "metadata.name": md.get("name", ""),
        "metadata.namespace": md.get("namespace", ""),
        "metadata.uid": md.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": status.get("podIP", ""),
        "status.hostIP": status.get("hostIP", ""),
    }
    if path in simple:
        return simple[path]
    m = _SUBSCRIPT.match(path)
    if m:
        return (md.get(m.group(1)) or {}).get(m.group(2), "")
    raise ConfigError(f"fieldRef {path!r} is not supported by the node agent")


_SUFFIX = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|)$")


def quantity(text):
    """A Kubernetes resource quantity ("1.5Gi", "500m", "2") as an exact Fraction."""
    m = _QUANTITY.match(str(text))
    if not m:
        raise ConfigError(f"not a resource quantity: {text!r}")
    return Fraction(m.group(1)) * _SUFFIX[m.group(2)]


def _resource_value(container, ref):
    """resourceFieldRef as the kubelet renders it: ceil(value / divisor), e.g.
    limits.memory in bytes and limits.cpu in whole cores by default."""
    res = ref.get("resource", "")
    kind, _, name = res.partition(".")
    value = ((container.get("resources") or {}).get(kind) or {}).get(name)
    if value is None:
        raise ConfigError(f"resourceFieldRef {res!r}: the container sets no {res} (node allocatable is not used)")
    return str(math.ceil(quantity(value) / quantity(ref.get("divisor") or "1")))


def _key_ref(kind, ref, lookup, decode):
    name, key = ref.get("name", ""), ref.get("key", "")
    data = lookup(name)
    if data is None or key not in data:
        if ref.get("optional"):
            return None
        what = f"{kind} {name!r}" if data is None else f"key {key!r} in {kind} {name!r}"
        raise ConfigError(f"{what} not found")
    return base64.b64decode(data[key]).decode() if decode else data[key]


def container_env(pod, container, base, get_secret, get_configmap):
    """The process environment of `container`: `base`, then envFrom, then env,
    in order, with $(VAR) expansion against what is defined so far.
    get_secret/get_configmap(name) return the object's data dict or None."""
    env = dict(base)
    for src in container.get("envFrom") or []:
        prefix = src.get("prefix", "")
        if "secretRef" in src:
            ref = src["secretRef"]
            data = get_secret(ref.get("name", ""))
            if data is None:
                if ref.get("optional"):
                    continue
                raise ConfigError(f"secret {ref.get('name')!r} not found")
            env.update({prefix + k: base64.b64decode(v).decode() for k, v in data.items()})
        elif "configMapRef" in src:
            ref = src["configMapRef"]
            data = get_configmap(ref.get("name", ""))
            if data is None:
                if ref.get("optional"):
                    continue
                raise ConfigError(f"configmap {ref.get('name')!r} not found")
            env.update({prefix + k: v for k, v in data.items()})
    for var in container.get("env") or []:
        name = var["name"]
        if "valueFrom" not in var:
            env[name] = expand(var.get("value", ""), env)
            continue
        vf = var["valueFrom"]
        if "fieldRef" in vf:
            value = field_value(pod, vf["fieldRef"].get("fieldPath", ""))
        elif "secretKeyRef" in vf:
            value = _key_ref("secret", vf["secretKeyRef"], get_secret, True)
        elif "configMapKeyRef" in vf:
            value = _key_ref("configmap", vf["configMapKeyRef"], get_configmap, False)
        elif "resourceFieldRef" in vf:
            value = _resource_value(container, vf["resourceFieldRef"])
        else:
            raise ConfigError(f"env {name}: unsupported valueFrom {sorted(vf)}")
        if value is not None:
            env[name] = value
    return env


def container_argv(container, env):
    """command + args with $(VAR) expansion. The image's entrypoint is unknown
    here, so a container without a command cannot run."""
    argv = [expand(a, env) for a in (container.get("command") or []) + (container.get("args") or [])]
    if not argv:
        raise ConfigError("the container has no command or args (the node agent runs no images)")
    return argv


def base_env(pod, api_port, marker):
    """What every container gets before its own env, like a kubelet (service
    links aside) plus the testbed's process marker."""
    spec = pod.get("spec", {})
    md = pod.get("metadata", {})
    env = {
        "PATH": PATH,
        "HOSTNAME": spec.get("hostname") or md.get("name", ""),
        "KUBERNETES_SERVICE_HOST": "127.0.0.1",
        "KUBERNETES_SERVICE_PORT": str(api_port),
    }
    if marker:
        env["TANDEM_TESTBED_RUN"] = marker
    return env
