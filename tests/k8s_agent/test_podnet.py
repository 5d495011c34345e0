"""Pod networking of the node agent, for real (root, iproute2): two pods get
addresses of their own, both listen on the same port, the host reaches each,
and teardown leaves nothing behind."""
import ipaddress
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import podnet  # noqa: E402
import probes  # noqa: E402


def serve(ns, port, text):
    """An HTTP server in the pod's namespace answering `text` on every path."""
    code = (
        "import http.server, sys\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        f"        b = {text!r}.encode()\n"
        "        self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers()\n"
        "        self.wfile.write(b)\n"
        "    def log_message(self, *a): pass\n"
        f"http.server.HTTPServer(('0.0.0.0', {port}), H).serve_forever()\n"
    )
    return subprocess.Popen(podnet.enter(ns) + [sys.executable, "-c", code])


def get(url, tries=50):
    for _ in range(tries):
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                return r.read().decode()
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"no answer from {url}")


class PodNetworkTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.leases = podnet.Leases(os.path.join(self.dir, "leases"))
        self.uids = [str(uuid.uuid4()), str(uuid.uuid4())]
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
            p.wait()
        for uid in self.uids:
            podnet.tear_down(uid, self.leases)

    def test_two_pods_same_port_own_addresses(self):
        (ns_a, ip_a), (ns_b, ip_b) = (podnet.set_up(uid, self.leases) for uid in self.uids)
        self.assertNotEqual(ip_a, ip_b)
        self.assertEqual(podnet.set_up(self.uids[0], self.leases), (ns_a, ip_a))  # idempotent
        self.procs += [serve(ns_a, 8080, "replica-a"), serve(ns_b, 8080, "replica-b")]
        self.assertEqual(get(f"http://{ip_a}:8080/health"), "replica-a")
        self.assertEqual(get(f"http://{ip_b}:8080/health"), "replica-b")
        # Pod to pod through the bridge.
        out = subprocess.run(
            podnet.enter(ns_a)
            + [sys.executable, "-c", f"import urllib.request; print(urllib.request.urlopen('http://{ip_b}:8080/').read().decode())"],
            capture_output=True, text=True, timeout=20,
        )
        self.assertEqual(out.stdout.strip(), "replica-b")

    def test_teardown_frees_the_address_and_the_namespace(self):
        ns, ip = podnet.set_up(self.uids[0], self.leases)
        podnet.tear_down(self.uids[0], self.leases)
        self.assertNotIn(ns, subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout)
        with open(self.leases.path) as f:
            self.assertNotIn(f"{self.uids[0]} ", f.read())  # the address is free again
        # As host-local IPAM: the next pod gets the next address, not the one just freed.
        self.assertEqual(podnet.set_up(self.uids[1], self.leases)[1], str(ipaddress.ip_address(ip) + 1))


class ProbeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.leases = podnet.Leases(os.path.join(self.dir, "leases"))
        self.uid = str(uuid.uuid4())
        self.proc = None

    def tearDown(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
        podnet.tear_down(self.uid, self.leases)

    def test_http_tcp_and_exec_probes_against_a_pod(self):
        ns, ip = podnet.set_up(self.uid, self.leases)
        container = {"ports": [{"name": "http", "containerPort": 8080}]}
        http_probe = {"httpGet": {"path": "/health", "port": "http"}, "timeoutSeconds": 1}
        ok, message = probes.probe_once(http_probe, container, ip)
        self.assertFalse(ok)
        self.assertIn(f"dial tcp {ip}:http", message)
        self.proc = serve(ns, 8080, "ok")
        get(f"http://{ip}:8080/")
        self.assertEqual(probes.probe_once(http_probe, container, ip), (True, ""))
        self.assertEqual(probes.probe_once({"tcpSocket": {"port": 8080}}, container, ip), (True, ""))
        enter = podnet.enter(ns)
        self.assertEqual(probes.probe_once({"exec": {"command": ["true"]}}, container, ip, enter), (True, ""))
        # The command is expanded as a kubelet expands it: $(NAME) from the env, $$ -> $.
        self.assertEqual(probes.probe_once({"exec": {"command": ["sh", "-c", "test \"$$1\" = \"$(WHO)\"", "p", "me"]}},
                                           container, ip, enter, {"WHO": "me", "PATH": os.environ["PATH"]}), (True, ""))
        ok, message = probes.probe_once({"exec": {"command": ["sh", "-c", "echo not yet; exit 1"]}}, container, ip, enter)
        self.assertEqual((ok, message), (False, "not yet"))

    def test_thresholds(self):
        t = probes.Tracker({"initialDelaySeconds": 5, "periodSeconds": 2, "successThreshold": 2, "failureThreshold": 2}, 100.0)
        self.assertFalse(t.due(104.9))
        self.assertTrue(t.due(105.0))
        self.assertFalse(t.record(True, "", 105.0))
        self.assertTrue(t.record(True, "", 107.0))
        self.assertTrue(t.ready)
        self.assertFalse(t.record(False, "HTTP probe failed with statuscode: 503", 109.0))
        self.assertTrue(t.record(False, "HTTP probe failed with statuscode: 503", 111.0))
        self.assertFalse(t.ready)
        self.assertEqual(t.last_message, "HTTP probe failed with statuscode: 503")


if __name__ == "__main__":
    unittest.main()
