"""Pod networking for the node agent, as a CNI bridge plugin sets it up:
each pod gets a network namespace of its own (`ip netns`), a veth pair whose
host end joins the bridge BRIDGE (BRIDGE_IP/24 on the host) and whose pod end
is the pod's eth0 with an address from the bridge's range and a default route
through the bridge. Two pods may then listen on the same port, a Service's
Endpoints point at real addresses, and the host (where the agent runs its
probes) reaches every pod.

Needs root (CAP_NET_ADMIN) and iproute2. Addresses are handed out by a file
of leases in the agent's state folder (one line per pod uid), so a restarted
agent neither reuses a live pod's address nor forgets to free one.

pods.py runs every container under `nsenter --net=/run/netns/NAME`, exec
enters the same namespace, and the lease is the pod's status.podIP."""
import fcntl
import ipaddress
import os
import subprocess

BRIDGE = "tandem0"
NETWORK = ipaddress.ip_network("10.244.0.0/24")
BRIDGE_IP = next(NETWORK.hosts())  # 10.244.0.1


class NetworkError(Exception):
    pass


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise NetworkError(f"ip {' '.join(args)}: {r.stderr.strip() or 'exit ' + str(r.returncode)}")
    return r


def ns_name(uid):
    return "tp-" + uid.replace("-", "")[:12]


def _veth_names(uid):
    short = uid.replace("-", "")[:10]
    return "th" + short, "tc" + short  # host end, pod end before it is renamed eth0 (15 chars at most)


def ensure_bridge():
    """The bridge with the gateway address, up (idempotent)."""
    if _ip("link", "show", BRIDGE, check=False).returncode != 0:
        _ip("link", "add", BRIDGE, "type", "bridge")
    addrs = _ip("-o", "addr", "show", "dev", BRIDGE).stdout
    if f"{BRIDGE_IP}/" not in addrs:
        _ip("addr", "add", f"{BRIDGE_IP}/{NETWORK.prefixlen}", "dev", BRIDGE)
    _ip("link", "set", BRIDGE, "up")


class Leases:
    """pod uid -> address, kept in a file under a lock."""

    def __init__(self, path):
        self.path = path

    def _locked(self, change):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(self.path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            leases = dict(line.split() for line in f.read().splitlines() if len(line.split()) == 2)
            result = change(leases)
            f.seek(0)
            f.truncate()
            f.write("".join(f"{uid} {ip}\n" for uid, ip in sorted(leases.items())))
            return result

    LAST = "-last-reserved"  # not a uid: where the next search starts

    def take(self, uid):
        """As the host-local IPAM plugin most clusters use: the next free address after the last one
        handed out, wrapping around, so a pod that replaces another gets a new address."""

        def change(leases):
            if uid in leases:
                return leases[uid]
            used = {ip for key, ip in leases.items() if key != self.LAST} | {str(BRIDGE_IP)}
            hosts = [str(h) for h in NETWORK.hosts()]
            last = leases.get(self.LAST)
            start = hosts.index(last) + 1 if last in hosts else 0
            for host in hosts[start:] + hosts[:start]:
                if host not in used:
                    leases[uid] = host
                    leases[self.LAST] = host
                    return host
            raise NetworkError(f"no free address in {NETWORK}")

        return self._locked(change)

    def give_back(self, uid):
        return self._locked(lambda leases: leases.pop(uid, None))


def set_up(uid, leases):
    """The pod's namespace, veth and address; returns (namespace name, pod IP). Idempotent."""
    ensure_bridge()
    ip = leases.take(uid)
    ns = ns_name(uid)
    host_end, pod_end = _veth_names(uid)
    if _ip("netns", "list").stdout.split().count(ns) == 0:
        _ip("netns", "add", ns)
    if _ip("link", "show", host_end, check=False).returncode != 0:
        _ip("link", "add", host_end, "type", "veth", "peer", "name", pod_end)
        _ip("link", "set", pod_end, "netns", ns)
        _ip("link", "set", host_end, "master", BRIDGE)
        _ip("link", "set", host_end, "up")
        _ip("-n", ns, "link", "set", pod_end, "name", "eth0")
        _ip("-n", ns, "addr", "add", f"{ip}/{NETWORK.prefixlen}", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "route", "add", "default", "via", str(BRIDGE_IP))
        # An address comes back to a new pod soon after its last pod went: the host's neighbour entry
        # for it still names the old pod's MAC, and packets to it would go nowhere until that entry
        # expires (probes time out, a Service's endpoint looks dead). Forget it now.
        _ip("neigh", "flush", "to", ip, "dev", BRIDGE, check=False)
    return ns, ip


def tear_down(uid, leases):
    """Removes the namespace (its veth end goes with it, and so the host end) and frees the address."""
    ns = ns_name(uid)
    host_end, _ = _veth_names(uid)
    _ip("link", "del", host_end, check=False)
    _ip("netns", "del", ns, check=False)
    leases.give_back(uid)


def enter(ns):
    """The argv prefix that runs a command in the pod's network namespace."""
    return ["ip", "netns", "exec", ns]
