"""Runs the containers of the pods bound to the agent's nodes as local
processes (the image is ignored) and reports their lifecycle as a kubelet
would: Pending -> Running -> Succeeded/Failed, restarts in place for
restartPolicy OnFailure/Always, and graceful deletion (TERM, KILL after the
grace period, then the final delete with gracePeriodSeconds=0).

configMap volumes are projected at their mountPath on the host before the
containers start (volumes.py): a missing non-optional ConfigMap keeps the pod
Pending (ContainerCreating, FailedMount events) until it exists; while the pod
runs they are re-synced every VOLUME_SYNC seconds, and removed when it ends.

emptyDir volumes are a folder of the pod's own, bind-mounted at each
container's mountPath inside a mount namespace of the container's own
(unshare; the agent must run as root), so the pods of one host never see each
other's, as with a container runtime; exec enters the same namespace
(nsenter). The mountPath folder itself is created on the host, empty.
persistentVolumeClaim volumes are mounted the same way from the bound
PersistentVolume's hostPath (or local) folder, shared by every pod using it;
an unbound claim keeps the pod waiting (CreateContainerConfigError, retried).

initContainers run one after the other before the containers, as a kubelet
runs them: the pod stays Pending (Initialized False, the containers waiting
in PodInitializing) while one runs; one that fails fails the pod under
restartPolicy Never and is restarted otherwise.
Other volume types are ignored.

Every pod gets a network namespace and an address of its own on the
agent's bridge (podnet.py), reported as status.podIP; readiness probes
(probes.py) decide the containers' `ready` and the pod's Ready condition."""
import copy
import errno
import os
import shutil
import signal
import subprocess
import threading
import time

import envres
import podnet
import probes
import volumes
from events import post_event
from kapi import log, now_rfc3339

POLL = 0.1
RESTART_DELAY = 1.0
VOLUME_SYNC = 1.0  # seconds between configMap volume re-syncs (the kubelet's is about a minute)
HOST_IP = "127.0.0.1"  # every node of the agent is this machine

# Runs a container's command after bind-mounting its emptyDir volumes (pairs of host folder and
# mountPath, then "--", then an optional working directory and "--", then the argv).
MOUNT_SCRIPT = (
    'while [ "$1" != -- ]; do mkdir -p "$2" && mount --bind "$1" "$2" || exit 127; shift 2; done; shift; '
    'if [ "$1" != -- ]; then cd "$1" || exit 127; shift; fi; shift; exec "$@"'
)


def _exit_code(rc):
    return 128 - rc if rc < 0 else rc  # killed by signal N -> 128+N, as a runtime reports it


class ContainerRun:
    """One container of a pod: the current process and its restarts."""

    def __init__(self, spec, argv, env, cwd, log_dir, mounts=(), netns=None):
        self.spec, self.env, self.cwd, self.log_dir = spec, env, cwd, log_dir
        self.mounts = list(mounts)  # [(host folder, mountPath)] of its emptyDir volumes
        self.netns = netns  # the pod's network namespace (podnet)
        self.command = list(argv)  # the container's own command, before any wrapper
        self.argv = argv
        self.probe = None  # probes.Tracker of its readinessProbe; None: ready while running
        if self.mounts:
            words = [w for host, path in self.mounts for w in (host, path)] + ["--"]
            wd = spec.get("workingDir")
            words += ([wd] if wd else []) + ["--"]
            self.argv = ["unshare", "-m", "--propagation", "private", "/bin/sh", "-c", MOUNT_SCRIPT,
                         "tandem-agent-mounts"] + words + list(argv)
        if netns:
            self.argv = ["nsenter", f"--net=/run/netns/{netns}", "--"] + self.argv
        self.name = spec["name"]
        self.restart_count = 0
        self.proc = None
        self.stdin = None  # the process's stdin pipe, for a container made with stdin: true (attach)
        self.started_at = None
        self.state = None  # {"running": ...} / {"terminated": ...}
        self.last_state = {}
        self.exited = threading.Event()  # the current run ended (for log streaming)

    def log_path(self, restart=None):
        return os.path.join(self.log_dir, f"{self.restart_count if restart is None else restart}.log")

    def start(self):
        self.exited = threading.Event()
        self.started_at = now_rfc3339()
        with open(self.log_path(), "ab") as out:
            try:
                # Wrapped (nsenter, unshare), a missing program would be the wrapper's exit 127: look
                # first, so it is ContainerCannotRun as from a runtime.
                program = self.command[0]
                found = shutil.which(program, path=self.env.get("PATH")) if "/" not in program else program
                if not found or not os.access(found, os.X_OK) or os.path.isdir(found):
                    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
                self.proc = subprocess.Popen(
                    self.argv,
                    cwd=self.cwd,
                    env=self.env,
                    stdin=subprocess.PIPE if self.spec.get("stdin") else subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group, killed as a whole
                )
            except OSError as e:
                out.write(f"node agent: cannot start {self.command[0]!r}: {e.strerror}\n".encode())
                self.proc = None
                self.finish(127, "ContainerCannotRun", str(e.strerror))
                return
        self.stdin = self.proc.stdin
        self.state = {"running": {"startedAt": self.started_at}}

    def poll(self):
        """The exit code once the current process has ended, else None."""
        if self.proc is None or self.state is None or "terminated" in self.state:
            return None
        rc = self.proc.poll()
        if rc is None:
            return None
        code = _exit_code(rc)
        self.finish(code, "Completed" if code == 0 else "Error")
        return code

    def finish(self, code, reason, message=None):
        term = {
            "exitCode": code,
            "reason": reason,
            "startedAt": self.started_at,
            "finishedAt": now_rfc3339(),
            "containerID": self.container_id(),
        }
        if message:
            term["message"] = message
        self.state = {"terminated": term}
        self.exited.set()

    def container_id(self):
        return f"local://{os.path.basename(os.path.dirname(self.log_dir))}/{self.name}/{self.restart_count}"

    def restart(self):
        self.last_state = self.state
        self.restart_count += 1
        self.start()

    def signal(self, sig):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def enter(self):
        """The argv prefix that runs a command inside this container's mount and
        network namespaces (for exec and exec probes)."""
        if self.mounts and self.running():
            return ["nsenter", "-t", str(self.proc.pid), "-m", "-n", "--"]
        if self.netns:
            return ["nsenter", f"--net=/run/netns/{self.netns}", "--"]
        return []

    def ready(self):
        running = bool(self.state and "running" in self.state)
        return running and (self.probe is None or self.probe.ready)

    def status(self):
        running = bool(self.state and "running" in self.state)
        image = self.spec.get("image", "")
        return {
            "name": self.name,
            "image": image,
            "imageID": "local://" + image,
            "containerID": self.container_id(),
            "restartCount": self.restart_count,
            "ready": self.ready(),
            "started": running,
            "state": self.state,
            "lastState": self.last_state,
        }


class PodState:
    def __init__(self, api, node, pod, pod_dir):
        md = pod["metadata"]
        self.api, self.node, self.pod, self.dir = api, node, pod, pod_dir
        self.uid, self.ns, self.name = md["uid"], md["namespace"], md["name"]
        self.path = f"/api/v1/namespaces/{self.ns}/pods/{self.name}"
        self.runs = {}  # container name -> ContainerRun
        self.init_runs = {}  # init container name -> ContainerRun
        self.volumes = None  # volumes.PodVolumes once _run_pod has set them up
        self.netns, self.ip = None, None  # the pod's network (podnet) once _run_pod has set it up
        self.deleting = False
        self.gone = False
        self.lock = threading.Lock()


def _should_restart(policy, code):
    return policy == "Always" or (policy == "OnFailure" and code != 0)


class Runner:
    def __init__(self, state_dir, api_port, marker):
        self.state_dir, self.api_port, self.marker = state_dir, api_port, marker
        self.leases = podnet.Leases(os.path.join(state_dir, "podnet-leases"))
        self.pods = {}  # uid -> PodState
        self.lock = threading.Lock()

    # ---- called by the watch threads -------------------------------------

    def on_pod(self, api, node, pod):
        md = pod["metadata"]
        uid = md["uid"]
        with self.lock:
            st = self.pods.get(uid)
            if st is None:
                phase = (pod.get("status") or {}).get("phase", "Pending")
                if md.get("deletionTimestamp") is None and phase in ("Succeeded", "Failed"):
                    return  # finished before this agent started
                st = PodState(api, node, pod, os.path.join(self.state_dir, "pods", uid))
                self.pods[uid] = st
                new = True
            else:
                new = False
                st.pod = pod
        if md.get("deletionTimestamp") is not None:
            with st.lock:
                if st.deleting:
                    return
                st.deleting = True
            threading.Thread(target=self._terminate, args=(st,), name=f"delete-{st.name}", daemon=True).start()
            return
        if new:
            phase = (pod.get("status") or {}).get("phase", "Pending")
            if phase != "Pending":
                # Running, but not started by this agent (it was restarted): its process is lost.
                threading.Thread(target=self._lost, args=(st,), daemon=True).start()
                return
            threading.Thread(target=self._run_pod, args=(st,), name=f"pod-{st.name}", daemon=True).start()

    def on_gone(self, uid):
        """The pod object is gone (deleted with grace 0 by us or someone else)."""
        with self.lock:
            st = self.pods.pop(uid, None)
        if st is None:
            return
        with st.lock:
            st.gone = True
        for run in list(st.runs.values()) + list(st.init_runs.values()):
            run.signal(signal.SIGKILL)
            run.exited.set()
        self._release_volumes(st)
        self._release_network(st)

    def running_pods(self, ns):
        """The pod objects of namespace `ns` with a running container (for the custom metrics API)."""
        with self.lock:
            states = [st for st in self.pods.values() if st.ns == ns and not st.deleting and not st.gone]
        return [st.pod for st in states if any(r.running() for r in list(st.runs.values()))]

    def known_uids(self, node):
        with self.lock:
            return {uid for uid, st in self.pods.items() if st.node == node}

    def find_container(self, ns, name, container):
        with self.lock:
            for st in self.pods.values():
                if st.ns == ns and st.name == name:
                    return st.runs.get(container) or st.init_runs.get(container)
        return None

    def shutdown(self):
        with self.lock:
            runs = [r for st in self.pods.values() for r in list(st.runs.values()) + list(st.init_runs.values())]
        for r in runs:
            r.signal(signal.SIGTERM)
        end = time.monotonic() + 3
        while time.monotonic() < end and any(r.running() for r in runs):
            time.sleep(POLL)
        for r in runs:
            r.signal(signal.SIGKILL)
        with self.lock:
            states = list(self.pods.values())
        for st in states:
            self._release_volumes(st)
            self._release_network(st)

    # ---- status reporting -------------------------------------------------

    def _report(self, st, status, what):
        """Patch the pod status; retried while the API is unreachable."""
        end = time.monotonic() + 120
        while not st.gone:
            try:
                code, out = st.api.patch_status(st.path, status)
            except OSError as e:
                code, out = 0, {"message": str(e)}
            if code == 200:
                log(f"pod {st.ns}/{st.name} on {st.node}: {what}")
                return True
            if code == 404 or time.monotonic() > end:
                log(f"pod {st.ns}/{st.name}: status '{what}' not reported: HTTP {code}: {out.get('message', '')}")
                return False
            time.sleep(1)
        return False

    def _statuses(self, st):
        return [r.status() for r in st.runs.values()]

    def _fail_pod(self, st, reason, message):
        t = now_rfc3339()
        self._report(
            st,
            {"phase": "Failed", "reason": reason, "message": message, "startTime": t, "hostIP": HOST_IP},
            f"Failed ({reason}: {message})",
        )

    def _lost(self, st):
        self._fail_pod(st, "NodeAgentRestarted", "the node agent restarted; the pod's processes are gone")

    # ---- one pod's life ---------------------------------------------------

    @staticmethod
    def _get_object(st, kind, name):
        """A Secret or ConfigMap of the pod's namespace, read as the node: the
        object, or None when it does not exist; raises envres.ConfigError."""
        for _ in range(25):
            code, obj = st.api.call("GET", f"/api/v1/namespaces/{st.ns}/{kind}/{name}")
            if code == 200:
                return obj
            if code == 404:
                return None
            # 403 "no relationship found": the Node authorizer's graph has not yet seen this pod
            # reference the object. It catches up within moments, so ask again before reporting
            # (a kubelet's informer never shows this window as a pod error).
            if code != 403 or "no relationship found" not in obj.get("message", ""):
                break
            time.sleep(0.2)
        raise envres.ConfigError(f"cannot read {kind} {name!r}: HTTP {code}: {obj.get('message', '')}")

    def _resolve(self, st):
        """Environment and argv for every container; raises envres.ConfigError."""
        pod = copy.deepcopy(st.pod)
        pod.setdefault("status", {}).update({"podIP": st.ip or HOST_IP, "hostIP": HOST_IP})
        if st.volumes is not None and st.volumes.unsupported:
            raise envres.ConfigError("; ".join(st.volumes.unsupported))

        def getter(kind):
            def get(name):
                obj = self._get_object(st, kind, name)
                return None if obj is None else obj.get("data") or {}

            return get

        base = envres.base_env(pod, self.api_port, self.marker)
        base["HOME"] = os.path.join(st.dir, "work")
        os.makedirs(base["HOME"], exist_ok=True)
        empty_dirs = {
            v["name"]: os.path.join(st.dir, "volumes", v["name"])
            for v in pod["spec"].get("volumes") or []
            if v.get("emptyDir") is not None and v.get("name")
        }
        for v in pod["spec"].get("volumes") or []:
            claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
            if claim and v.get("name"):
                empty_dirs[v["name"]] = self._claim_path(st, claim)

        def plan(c):
            env = envres.container_env(pod, c, base, getter("secrets"), getter("configmaps"))
            mounts = []
            for m in c.get("volumeMounts") or []:
                host = empty_dirs.get(m.get("name", ""))
                if host is None:
                    continue
                path = m.get("mountPath", "")
                if not os.path.isabs(path) or m.get("subPath") or m.get("subPathExpr"):
                    raise envres.ConfigError(
                        f"container {c.get('name')}: emptyDir mount {m.get('name')!r} at {path!r}: the node "
                        "agent mounts emptyDir volumes at absolute paths, without subPath"
                    )
                if os.geteuid() != 0:
                    raise envres.ConfigError("emptyDir volumes need the node agent to run as root (mount namespaces)")
                os.makedirs(host, exist_ok=True)
                mounts.append((host, os.path.normpath(path)))
            return (c, envres.container_argv(c, env), env, mounts)

        spec = pod["spec"]
        return [plan(c) for c in spec.get("initContainers") or []], [plan(c) for c in spec["containers"]]

    def _claim_path(self, st, claim):
        """The host folder of a bound PersistentVolumeClaim's volume (hostPath or local PVs only); raises
        envres.ConfigError while it is not bound, as a kubelet keeps the pod in ContainerCreating."""
        pvc = self._get_object(st, "persistentvolumeclaims", claim)
        if pvc is None:
            raise envres.ConfigError(f'persistentvolumeclaim "{claim}" not found')
        name = (pvc.get("spec") or {}).get("volumeName")
        if (pvc.get("status") or {}).get("phase") != "Bound" or not name:
            raise envres.ConfigError(f'persistentvolumeclaim "{claim}" is not bound')
        code, pv = st.api.call("GET", f"/api/v1/persistentvolumes/{name}")
        if code != 200:
            raise envres.ConfigError(f"cannot read persistentvolume {name!r}: HTTP {code}: {pv.get('message', '')}")
        spec = pv.get("spec") or {}
        path = (spec.get("hostPath") or spec.get("local") or {}).get("path")
        if not path:
            raise envres.ConfigError(f"persistentvolume {name!r}: the node agent mounts only hostPath and local volumes")
        os.makedirs(path, exist_ok=True)
        return path

    # ---- configMap volumes ------------------------------------------------

    def _sync_volumes(self, st, vols):
        def get_configmap(name):
            try:
                return self._get_object(st, "configmaps", name)
            except envres.ConfigError as e:
                raise volumes.MountError(str(e)) from None

        errors, changed = vols.sync(get_configmap)
        for what in changed:
            log(f"pod {st.ns}/{st.name}: {what}")
        return errors

    def _mount_failed(self, st, errors, seen):
        """Log and record a FailedMount warning per volume, once per distinct message."""
        for vol, msg in errors.items():
            if seen.get(vol) != msg:
                log(f"pod {st.ns}/{st.name}: {msg}")
                post_event(st.api, st.pod, st.node, None, "FailedMount", msg, warning=True)
        seen.clear()
        seen.update(errors)

    def _setup_volumes(self, st, start_time):
        """Project the configMap volumes before the containers start, retrying
        (Pending, ContainerCreating) until every one can be set up. False when
        the pod was deleted meanwhile."""
        vols = volumes.PodVolumes(st.pod)
        with st.lock:
            if not (st.deleting or st.gone):
                st.volumes = vols
        if st.volumes is not vols:
            vols.close()  # deleted meanwhile: let go of the (shared) targets it took
            return False
        if not vols.sources:
            return True
        seen, reported = {}, False
        while True:
            errors = self._sync_volumes(st, vols)
            if not errors:
                break
            if not reported:
                reported = True
                self._report(
                    st,
                    {
                        "hostIP": HOST_IP,
                        "startTime": start_time,
                        "containerStatuses": self._waiting(st.pod["spec"], "ContainerCreating"),
                    },
                    "ContainerCreating: " + "; ".join(errors.values()),
                )
            self._mount_failed(st, errors, seen)
            if vols.stop.wait(VOLUME_SYNC) or st.deleting or st.gone:
                return False
        threading.Thread(target=self._keep_volumes, args=(st, vols), name=f"volumes-{st.name}", daemon=True).start()
        return True

    def _keep_volumes(self, st, vols):
        """Re-sync while the pod runs: a ConfigMap created or changed later shows up in its files."""
        seen = {}
        while not vols.stop.wait(VOLUME_SYNC):
            if st.gone:
                return
            self._mount_failed(st, self._sync_volumes(st, vols), seen)

    def _release_volumes(self, st):
        vols = st.volumes
        if vols is not None and not vols.closed:
            removed = vols.close()
            kept = [d.target for dirs in vols.targets.values() for d in dirs if d.target not in removed]
            if removed:
                log(f"pod {st.ns}/{st.name}: removed its configMap volumes at {', '.join(removed)}")
            if kept:
                log(f"pod {st.ns}/{st.name}: left {', '.join(kept)} to the other pods that mount it")

    @staticmethod
    def _waiting(spec, reason, message=None):
        state = {"reason": reason}
        if message:
            state["message"] = message
        return [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {"waiting": dict(state)},
            }
            for c in spec["containers"]
        ]

    def _started_event(self, st, run):
        if run.proc is not None:
            post_event(st.api, st.pod, st.node, run.name, "Started", f"Started container {run.name}")
        else:
            term = run.state["terminated"]
            post_event(st.api, st.pod, st.node, run.name, "Failed", f"Error: {term.get('message', '')}", warning=True)

    def _workdir(self, st, container):
        wd = container.get("workingDir")
        if not wd:
            return os.path.join(st.dir, "work")
        if os.path.isdir(wd):
            return wd
        # Not on this host: inside the pod's own directory, like a fresh image path.
        return os.path.join(st.dir, "rootfs", wd.lstrip("/"))

    def _run_pod(self, st):
        spec = st.pod["spec"]
        start_time = now_rfc3339()
        if not self._setup_volumes(st, start_time):
            return
        try:
            st.netns, st.ip = podnet.set_up(st.uid, self.leases)
        except (podnet.NetworkError, OSError) as e:
            return self._fail_pod(st, "NetworkNotReady", f"cannot set up the pod's network: {e}")
        if st.deleting or st.gone:
            self._release_network(st)
            return
        last_msg = None
        while True:
            if st.deleting or st.gone:
                return
            try:
                init_plans, plans = self._resolve(st)
                break
            except (envres.ConfigError, OSError) as e:
                msg = str(e)
                if msg != last_msg:
                    last_msg = msg
                    waiting = self._waiting(spec, "CreateContainerConfigError", msg)
                    self._report(
                        st,
                        {"hostIP": HOST_IP, "startTime": start_time, "containerStatuses": waiting},
                        f"CreateContainerConfigError: {msg}",
                    )
                    post_event(st.api, st.pod, st.node, None, "Failed", f"Error: {msg}", warning=True)
                time.sleep(2)
        policy = spec.get("restartPolicy", "Always")
        for c, argv, env, mounts in init_plans:
            if not self._run_init(st, c, argv, env, mounts, start_time, policy):
                return
        for c, argv, env, mounts in plans:
            run = self._container(st, c, argv, env, mounts)
            with st.lock:
                if st.deleting or st.gone:
                    return
                run.start()
                if c.get("readinessProbe"):
                    run.probe = probes.Tracker(c["readinessProbe"], time.monotonic())
                st.runs[c["name"]] = run
            self._started_event(st, run)
        if not any(r.proc for r in st.runs.values()):
            return self._supervise(st, policy)  # nothing started: no Running
        conds = self._conditions(st, start_time)
        status = {
            "phase": "Running",
            "hostIP": HOST_IP,
            "podIP": st.ip,
            "podIPs": [{"ip": st.ip}],
            "startTime": start_time,
            "conditions": conds,
            "containerStatuses": self._statuses(st),
        }
        if st.init_runs:
            status["initContainerStatuses"] = [r.status() for r in st.init_runs.values()]
        self._report(
            st,
            status,
            "Running (" + ", ".join(f"{r.name}: pid {r.proc.pid if r.proc else '-'}" for r in st.runs.values()) + ")",
        )
        if any(r.probe for r in st.runs.values()):
            threading.Thread(target=self._probe_loop, args=(st, start_time), name=f"probes-{st.name}",
                             daemon=True).start()
        self._supervise(st, policy)

    def _container(self, st, c, argv, env, mounts):
        log_dir = os.path.join(st.dir, "logs", c["name"])
        os.makedirs(log_dir, exist_ok=True)
        cwd = self._workdir(st, c) if not mounts else os.path.join(st.dir, "work")
        os.makedirs(cwd, exist_ok=True)
        return ContainerRun(c, argv, env, cwd, log_dir, mounts, st.netns)

    def _release_network(self, st):
        if st.netns is not None:
            podnet.tear_down(st.uid, self.leases)
            st.netns = None

    # ---- readiness probes -------------------------------------------------

    def _conditions(self, st, start_time):
        ready = "True" if st.runs and all(r.ready() for r in st.runs.values()) else "False"
        t = now_rfc3339()
        return [
            {"type": "Initialized", "status": "True", "lastTransitionTime": start_time},
            {"type": "Ready", "status": ready, "lastTransitionTime": t},
            {"type": "ContainersReady", "status": ready, "lastTransitionTime": t},
        ]

    def _probe_loop(self, st, start_time):
        """Runs the readiness probes of the running containers, reporting each change of readiness (the
        endpoints controller reads the pod's Ready condition) and a Unhealthy event per failure."""
        while not (st.deleting or st.gone):
            time.sleep(POLL)
            changed = []
            for run in list(st.runs.values()):
                t = run.probe
                if t is None or not run.running() or not t.due():
                    continue
                ok, message = probes.probe_once(run.spec["readinessProbe"], run.spec, st.ip, run.enter(), run.env)
                if not ok:
                    post_event(st.api, st.pod, st.node, run.name, "Unhealthy", f"Readiness probe failed: {message}",
                               warning=True)
                if t.record(ok, message):
                    changed.append(f"{run.name} {'ready' if t.ready else 'not ready: ' + message}")
            if changed:
                with st.lock:
                    statuses = self._statuses(st)
                self._report(st, {"conditions": self._conditions(st, start_time), "containerStatuses": statuses},
                             "; ".join(changed))
            if all(not r.running() for r in st.runs.values()):
                return

    def _init_status(self, st, start_time, what):
        """Pending while an init container runs: Initialized False, the containers in PodInitializing."""
        t = now_rfc3339()
        status = {
            "phase": "Pending",
            "hostIP": HOST_IP,
            "podIP": st.ip,
            "podIPs": [{"ip": st.ip}],
            "startTime": start_time,
            "conditions": [
                {"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized", "lastTransitionTime": t}
            ],
            "initContainerStatuses": [r.status() for r in st.init_runs.values()],
            "containerStatuses": self._waiting(st.pod["spec"], "PodInitializing"),
        }
        self._report(st, status, what)

    def _run_init(self, st, c, argv, env, mounts, start_time, policy):
        """Runs one init container to its successful end (restarting it unless the policy is Never).
        False when the pod failed or was deleted meanwhile."""
        run = self._container(st, c, argv, env, mounts)
        with st.lock:
            if st.deleting or st.gone:
                return False
            run.start()
            st.init_runs[c["name"]] = run
        self._started_event(st, run)
        self._init_status(st, start_time, f"Init:{run.name} running")
        while True:
            time.sleep(POLL)
            if st.deleting or st.gone:
                return False
            with st.lock:
                code = run.poll()
                if code is None and run.proc is not None:
                    continue
                code = run.state["terminated"]["exitCode"]
            if code == 0:
                return True
            if policy == "Never":
                t = now_rfc3339()
                self._report(
                    st,
                    {
                        "phase": "Failed",
                        "conditions": [
                            {"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized",
                             "lastTransitionTime": t}
                        ],
                        "initContainerStatuses": [r.status() for r in st.init_runs.values()],
                        "containerStatuses": self._waiting(st.pod["spec"], "PodInitializing"),
                    },
                    f"Failed (init container {run.name} exited {code})",
                )
                self._release_volumes(st)
                self._release_network(st)
                return False
            self._init_status(st, start_time, f"Init:Error ({run.name} exited {code}); restarting it")
            time.sleep(RESTART_DELAY)
            with st.lock:
                if st.deleting or st.gone:
                    return False
                run.restart()
            self._init_status(st, start_time, f"Init:{run.name} restarted ({run.restart_count})")

    def _supervise(self, st, policy):
        pending_restart = {}  # name -> monotonic time of restart
        handled = set()  # (container, restart count) whose end was seen
        while True:
            time.sleep(POLL)
            if st.deleting or st.gone:
                return  # _terminate / on_gone own the pod now
            changed, restarted = [], []
            with st.lock:
                if st.deleting:
                    return
                for run in st.runs.values():
                    run.poll()
                    term = (run.state or {}).get("terminated")
                    key = (run.name, run.restart_count)
                    if term is not None and key not in handled:
                        handled.add(key)
                        code = term["exitCode"]
                        changed.append(f"{run.name} exited {code}")
                        if _should_restart(policy, code):
                            pending_restart[run.name] = time.monotonic() + RESTART_DELAY
                    t = pending_restart.get(run.name)
                    if t is not None and time.monotonic() >= t:
                        del pending_restart[run.name]
                        run.restart()
                        changed.append(f"{run.name} restarted ({run.restart_count})")
                        restarted.append(run)
                done = not pending_restart and all(
                    "terminated" in (r.state or {}) for r in st.runs.values()
                )
                statuses = self._statuses(st)
            for run in restarted:
                self._started_event(st, run)
            if not changed:
                continue
            if not done:
                self._report(st, {"containerStatuses": statuses}, "; ".join(changed))
                continue
            ok = all(r.state["terminated"]["exitCode"] == 0 for r in st.runs.values())
            t = now_rfc3339()
            conds = [
                {"type": k, "status": "False", "reason": "PodCompleted", "lastTransitionTime": t}
                for k in ("Ready", "ContainersReady")
            ]
            phase = "Succeeded" if ok else "Failed"
            self._report(
                st,
                {"phase": phase, "conditions": conds, "containerStatuses": statuses},
                f"{phase} ({'; '.join(changed)})",
            )
            self._release_volumes(st)
            self._release_network(st)
            return

    def _terminate(self, st):
        """Graceful deletion: TERM the process groups, KILL after the grace
        period, report the terminal phase (restartPolicy Never), then remove
        the pod object (gracePeriodSeconds=0; its finalizers, such as the Job
        controller's job-tracking one, keep it until their owners let go)."""
        grace = st.pod["metadata"].get("deletionGracePeriodSeconds")
        grace = 30 if grace is None else int(grace)
        with st.lock:
            runs = [r for r in list(st.runs.values()) + list(st.init_runs.values()) if r.running()]
        if runs:
            log(f"pod {st.ns}/{st.name}: deleted; TERM {', '.join(str(r.proc.pid) for r in runs)} (grace {grace}s)")
            for r in runs:
                post_event(st.api, st.pod, st.node, r.name, "Killing", f"Stopping container {r.name}")
                r.signal(signal.SIGTERM)
            end = time.monotonic() + grace
            while time.monotonic() < end and any(r.running() for r in runs):
                time.sleep(POLL)
            for r in runs:
                if r.running():
                    log(f"pod {st.ns}/{st.name}: KILL {r.proc.pid} (still running after {grace}s)")
                    r.signal(signal.SIGKILL)
            for r in runs:
                r.proc.wait()
                r.finish(_exit_code(r.proc.returncode), "Error")
        policy = st.pod["spec"].get("restartPolicy", "Always")
        already = (st.pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if st.runs and policy == "Never" and not already:
            # As a kubelet computes the phase once every container has ended under restartPolicy Never
            # (getPhase): Failed unless every one exited 0. The status patch merges conditions by type, so
            # the DisruptionTarget the Eviction API (1.26+) set stays. The Job controller waits for this
            # terminal phase before it judges a deleted pod against a podFailurePolicy, and removes its
            # job-tracking finalizer only then.
            with st.lock:
                statuses = self._statuses(st)
                ok = all("terminated" in (r.state or {}) and r.state["terminated"]["exitCode"] == 0
                         for r in st.runs.values())
            t = now_rfc3339()
            conds = [{"type": k, "status": "False", "reason": "PodCompleted", "lastTransitionTime": t}
                     for k in ("Ready", "ContainersReady")]
            phase = "Succeeded" if ok else "Failed"
            self._report(st, {"phase": phase, "conditions": conds, "containerStatuses": statuses},
                         f"{phase} (deleted: its containers were stopped)")
        self._release_volumes(st)
        self._release_network(st)
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0, "preconditions": {"uid": st.uid}}
        for _ in range(60):
            if st.gone:
                return
            try:
                code, out = st.api.call("DELETE", st.path, body)
            except OSError as e:
                code, out = 0, {"message": str(e)}
            if code in (200, 404, 409):
                log(f"pod {st.ns}/{st.name}: removed (HTTP {code})")
                return
            time.sleep(1)
        log(f"pod {st.ns}/{st.name}: final delete failed: HTTP {code}: {out.get('message', '')}")
