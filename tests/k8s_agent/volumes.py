"""configMap volumes, projected the way the kubelet does it (its configmap
volume plugin and pkg/volume/util/atomic_writer.go).

Pods here are host processes on the host filesystem (no mount namespace), so
a configMap volume mounted at mountPath is projected right there, at that
host path: a timestamped directory `..<UTC time>.<random>` holds the files,
the symlink `..data` points at it and is swapped by rename(2), and every
top-level entry of the payload is a symlink `name -> ..data/name`. A reader
sees the old or the new content, never a half-written file.

All the agent's nodes are this one host, so pods that a cluster would run on
different nodes (the members of a job group, say) may mount the same path:
they share one projection, removed when the last of them ends.

Pure filesystem logic (the ConfigMap is fetched through a callable), so it is
unit-tested on its own (test_volumes.py).
"""
import base64
import os
import shutil
import tempfile
import threading
import time

DATA = "..data"
DATA_TMP = "..data_tmp"
DEFAULT_MODE = 0o644  # v1.ConfigMapVolumeSourceDefaultMode


class MountError(Exception):
    """The volume cannot be set up (yet): the kubelet's FailedMount."""


def _check_path(path):
    """A payload path as the AtomicWriter accepts it: relative, no '..' element, not starting with '..'."""
    if not path or os.path.isabs(path):
        raise MountError(f"invalid path {path!r}: must be relative")
    if path.startswith(".."):
        raise MountError(f"invalid path {path!r}: must not start with '..'")
    if ".." in path.split("/"):
        raise MountError(f"invalid path {path!r}: must not contain '..'")
    return os.path.normpath(path)


def payload(source, configmap):
    """The files of a configMap volume: {relative path: (bytes, mode)}.

    `source` is the pod's `configMap` volume source, `configmap` the object
    (None when it does not exist). Like the kubelet: an absent optional
    ConfigMap is an empty volume; `items` selects keys (a missing key is an
    error unless optional) and places them at their paths; `mode` per item,
    else `defaultMode`, else 0644; binaryData is projected too."""
    name = source.get("name", "")
    optional = bool(source.get("optional"))
    if configmap is None:
        if optional:
            return {}
        raise MountError(f'configmap "{name}" not found')
    data = {k: v.encode() for k, v in (configmap.get("data") or {}).items()}
    for k, v in (configmap.get("binaryData") or {}).items():
        data[k] = base64.b64decode(v)
    mode = source.get("defaultMode")
    mode = DEFAULT_MODE if mode is None else int(mode)
    items = source.get("items")
    files = {}
    if not items:
        for k, v in data.items():
            files[_check_path(k)] = (v, mode)
        return files
    for item in items:
        key = item.get("key", "")
        if key not in data:
            if optional:
                continue
            raise MountError(f"configmap references non-existent config key: {key}")
        m = item.get("mode")
        files[_check_path(item.get("path") or key)] = (data[key], mode if m is None else int(m))
    return files


# Directories the agent created for projections (targets and missing parents), agent-wide: a parent made
# for one pod's target is removed by whichever projection under it ends last. Creating and removing them
# holds _DIRS_LOCK, so that one pod's cleanup never removes a parent another pod is creating under.
_MADE = set()
_DIRS_LOCK = threading.Lock()


def _top(paths):
    return {p.split("/", 1)[0] for p in paths}


def _read_tree(root):
    """{relative path: (bytes, mode)} of the regular files under root."""
    out = {}
    for d, _dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                content = f.read()
            out[os.path.relpath(p, root)] = (content, os.stat(p).st_mode & 0o7777)
    return out


class AtomicDir:
    """One projection target (a mountPath), written like the kubelet's AtomicWriter.

    It remembers what it created (its timestamped directories; the target
    and missing parents in _MADE) so that remove() takes away only that, the
    `..data` link and the `name -> ..data/name` links."""

    def __init__(self, target):
        self.target = target
        self.ts_dirs = set()  # names of the timestamped directories created here
        self.lock = threading.RLock()  # one writer at a time (pods sharing the path)
        self.users = set()  # who projects here (see acquire/release)

    def _ensure_target(self):
        with _DIRS_LOCK:
            if os.path.isdir(self.target):
                return
            if os.path.lexists(self.target):
                raise MountError(f"{self.target} exists and is not a directory")
            missing, p = [], self.target
            while not os.path.lexists(p):
                missing.append(p)
                p = os.path.dirname(p)
            if not os.path.isdir(p):
                raise MountError(f"{p} is not a directory")
            for d in reversed(missing):
                try:
                    os.mkdir(d, 0o755)
                except FileExistsError:
                    if not os.path.isdir(d):
                        raise MountError(f"{d} exists and is not a directory") from None
                    continue  # made by someone else meanwhile: not ours to remove
                _MADE.add(d)

    def _data_link(self, name):
        return os.path.join(DATA, name)

    def write(self, files):
        """Project `files` ({path: (bytes, mode)}); True when the content changed."""
        with self.lock:
            return self._write(files)

    def _write(self, files):
        self._ensure_target()
        data_path = os.path.join(self.target, DATA)
        try:
            old = os.readlink(data_path)
        except OSError:
            old = None
        old_path = os.path.join(self.target, old) if old else None
        old_files = {}
        if old_path and os.path.isdir(old_path) and not os.path.islink(old_path):
            old_files = _read_tree(old_path)
            if old_files == files:
                self._link_visible(files)  # in case one was removed
                return False
        stamp = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime())
        ts = tempfile.mkdtemp(prefix=stamp, dir=self.target)
        os.chmod(ts, 0o755)
        ts_name = os.path.basename(ts)
        self.ts_dirs.add(ts_name)
        for rel, (content, mode) in files.items():
            p = os.path.join(ts, rel)
            os.makedirs(os.path.dirname(p), 0o755, exist_ok=True)
            with open(p, "wb") as f:
                f.write(content)
            os.chmod(p, mode)
        tmp = os.path.join(self.target, DATA_TMP)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        os.symlink(ts_name, tmp)
        os.rename(tmp, data_path)  # the atomic switch
        self._link_visible(files)
        for name in _top(old_files) - _top(files):
            p = os.path.join(self.target, name)
            if os.path.islink(p) and os.readlink(p) == self._data_link(name):
                os.unlink(p)
        if old_path and old != ts_name and old.startswith("..") and os.path.isdir(old_path):
            if not os.path.islink(old_path):
                shutil.rmtree(old_path, ignore_errors=True)
            self.ts_dirs.discard(old)
        return True

    def _link_visible(self, files):
        for name in _top(files):
            p = os.path.join(self.target, name)
            if not os.path.lexists(p):  # an existing entry of that name is left alone, as by the kubelet
                os.symlink(self._data_link(name), p)

    def remove(self):
        """Remove the projection: links, `..data`, the timestamped directories,
        then the directories created for it (if empty)."""
        with self.lock:
            self._remove()

    def _remove(self):
        if os.path.isdir(self.target):
            try:
                names = os.listdir(self.target)
            except OSError:
                names = []
            for name in names:
                p = os.path.join(self.target, name)
                if os.path.islink(p) and os.readlink(p) == self._data_link(name):
                    os.unlink(p)
            for name in (DATA, DATA_TMP):
                p = os.path.join(self.target, name)
                if os.path.islink(p):
                    os.unlink(p)
            for name in self.ts_dirs:
                shutil.rmtree(os.path.join(self.target, name), ignore_errors=True)
        self.ts_dirs.clear()
        with _DIRS_LOCK:
            d = self.target
            while d in _MADE:
                try:
                    os.rmdir(d)
                except FileNotFoundError:
                    pass
                except OSError:
                    break  # not empty: another projection or someone else's files are in it
                _MADE.discard(d)
                d = os.path.dirname(d)


_SHARED = {}  # host path -> AtomicDir, while some pod projects there
_SHARED_LOCK = threading.Lock()


def acquire(path, user):
    """The projection at `path`, shared by every user (pod volume) that mounts it."""
    with _SHARED_LOCK:
        d = _SHARED.get(path)
        if d is None:
            d = _SHARED[path] = AtomicDir(path)
        d.users.add(user)
        return d


def release(d, user):
    """`user` is done with the projection; the last one removes it."""
    with _SHARED_LOCK:
        d.users.discard(user)
        if d.users:
            return False
        if _SHARED.get(d.target) is d:
            del _SHARED[d.target]
        d.remove()
        return True


def mount_error(volume, why):
    return f'MountVolume.SetUp failed for volume "{volume}" : {why}'


class PodVolumes:
    """The configMap volumes of one pod: each (volume, mountPath) of its
    containers is an AtomicDir, re-synced by sync() until close()."""

    def __init__(self, pod):
        spec = pod.get("spec", {})
        self.sources = {v["name"]: v["configMap"] for v in spec.get("volumes") or [] if v.get("configMap") is not None}
        self.targets = {}  # volume name -> [AtomicDir], shared with other pods mounting the same path
        self.unsupported = []  # messages for mounts the agent cannot do
        self.me = object()  # this pod, as a user of shared projections
        for c in spec.get("containers") or []:
            for m in c.get("volumeMounts") or []:
                vol = m.get("name", "")
                if vol not in self.sources:
                    continue  # other volume types: ignored
                if m.get("subPath") or m.get("subPathExpr"):
                    self.unsupported.append(
                        f"container {c.get('name')}: volumeMount {vol!r} uses subPath, "
                        "which the node agent does not support for configMap volumes"
                    )
                    continue
                path = m.get("mountPath", "")
                if not os.path.isabs(path):
                    self.unsupported.append(f"container {c.get('name')}: mountPath {path!r} is not absolute")
                    continue
                path = os.path.normpath(path)
                dirs = self.targets.setdefault(vol, [])
                if all(d.target != path for d in dirs):
                    dirs.append(acquire(path, (self.me, vol)))
        self.lock = threading.Lock()
        self.closed = False
        self.stop = threading.Event()

    def sync(self, get_configmap):
        """Fetch every ConfigMap and bring its projections up to date.
        get_configmap(name) returns the object or None (404) and raises
        MountError/OSError when it cannot tell. Returns ({volume: error
        message}, [what changed]); a failed volume keeps its last content."""
        errors, changed = {}, []
        for vol, src in self.sources.items():
            try:
                files = payload(src, get_configmap(src.get("name", "")))
                with self.lock:
                    if self.closed:
                        break
                    for d in self.targets.get(vol, []):
                        if d.write(files):
                            changed.append(f"volume {vol}: {len(files)} file(s) at {d.target}")
            except (MountError, OSError) as e:
                errors[vol] = mount_error(vol, e)
        return errors, changed

    def close(self):
        """Stop syncing and let go of the projections: the paths no other pod
        uses are removed (returned). Idempotent."""
        removed = []
        with self.lock:
            if self.closed:
                return removed
            self.closed = True
            self.stop.set()
            for vol, dirs in self.targets.items():
                for d in dirs:
                    if release(d, (self.me, vol)):
                        removed.append(d.target)
        return removed
