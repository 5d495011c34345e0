"""Unit tests of the agent's configMap volume projection (no API): the
payload a kubelet would build and the AtomicWriter layout on disk."""
import base64
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import volumes  # noqa: E402


def cm(data=None, binary=None):
    obj = {"data": data or {}}
    if binary:
        obj["binaryData"] = {k: base64.b64encode(v).decode() for k, v in binary.items()}
    return obj


class PayloadTest(unittest.TestCase):
    def test_all_keys_with_the_default_mode(self):
        got = volumes.payload({"name": "c"}, cm({"a": "1", "b.conf": "x=y"}, {"bin": b"\x00\xff"}))
        self.assertEqual(got, {"a": (b"1", 0o644), "b.conf": (b"x=y", 0o644), "bin": (b"\x00\xff", 0o644)})

    def test_default_mode_and_items_with_paths_and_modes(self):
        src = {
            "name": "c",
            "defaultMode": 0o400,
            "items": [{"key": "a", "path": "conf/a.ini"}, {"key": "b", "path": "b", "mode": 0o755}],
        }
        got = volumes.payload(src, cm({"a": "1", "b": "2", "c": "not selected"}))
        self.assertEqual(got, {"conf/a.ini": (b"1", 0o400), "b": (b"2", 0o755)})

    def test_absent_configmap(self):
        with self.assertRaisesRegex(volumes.MountError, '^configmap "c" not found$'):
            volumes.payload({"name": "c"}, None)
        self.assertEqual(volumes.payload({"name": "c", "optional": True}, None), {})

    def test_missing_item_key(self):
        src = {"name": "c", "items": [{"key": "nope", "path": "x"}, {"key": "a", "path": "a"}]}
        with self.assertRaisesRegex(volumes.MountError, "non-existent config key: nope"):
            volumes.payload(src, cm({"a": "1"}))
        self.assertEqual(volumes.payload(dict(src, optional=True), cm({"a": "1"})), {"a": (b"1", 0o644)})

    def test_paths_must_stay_inside(self):
        for bad in ("/etc/passwd", "../x", "a/../../x", "..data"):
            with self.assertRaises(volumes.MountError, msg=bad):
                volumes.payload({"name": "c", "items": [{"key": "a", "path": bad}]}, cm({"a": "1"}))


class AtomicDirTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.target = os.path.join(self.root, "made", "mnt")

    def tearDown(self):
        shutil.rmtree(self.root)

    def entries(self):
        return sorted(os.listdir(self.target))

    def read(self, rel):
        with open(os.path.join(self.target, rel)) as f:
            return f.read()

    def test_layout_update_and_removal(self):
        d = volumes.AtomicDir(self.target)
        self.assertTrue(d.write({"a": (b"1", 0o644), "conf/b.ini": (b"2", 0o600)}))
        names = self.entries()
        ts = [n for n in names if n.startswith("..") and n != "..data"]
        self.assertEqual(len(ts), 1)
        self.assertEqual(sorted(set(names) - set(ts)), ["..data", "a", "conf"])
        self.assertEqual(os.readlink(os.path.join(self.target, "..data")), ts[0])
        self.assertEqual(os.readlink(os.path.join(self.target, "a")), "..data/a")
        self.assertEqual(os.readlink(os.path.join(self.target, "conf")), "..data/conf")
        self.assertEqual(self.read("conf/b.ini"), "2")
        self.assertEqual(os.stat(os.path.join(self.target, "conf/b.ini")).st_mode & 0o777, 0o600)

        self.assertFalse(d.write({"a": (b"1", 0o644), "conf/b.ini": (b"2", 0o600)}), "unchanged: no new dir")
        self.assertEqual(self.entries(), names)

        self.assertTrue(d.write({"a": (b"new", 0o644), "c": (b"3", 0o644)}))
        names2 = self.entries()
        ts2 = [n for n in names2 if n.startswith("..") and n != "..data"]
        self.assertEqual(len(ts2), 1)
        self.assertNotEqual(ts2, ts, "the old timestamped directory is gone")
        self.assertEqual(sorted(set(names2) - set(ts2)), ["..data", "a", "c"], "conf is no longer projected")
        self.assertEqual((self.read("a"), self.read("c")), ("new", "3"))

        d.remove()
        self.assertFalse(os.path.exists(os.path.join(self.root, "made")), "the directories it made are removed")
        self.assertTrue(os.path.isdir(self.root))

    def test_empty_then_filled(self):
        d = volumes.AtomicDir(self.target)
        d.write({})
        self.assertEqual([n for n in self.entries() if not n.startswith("..")], [])
        d.write({"k": (b"v", 0o644)})
        self.assertEqual(self.read("k"), "v")

    def test_removes_only_its_own(self):
        os.makedirs(self.target)
        with open(os.path.join(self.target, "theirs"), "w") as f:
            f.write("keep")
        with open(os.path.join(self.target, "k"), "w") as f:
            f.write("not replaced")
        d = volumes.AtomicDir(self.target)
        d.write({"k": (b"v", 0o644), "m": (b"w", 0o644)})
        self.assertEqual(self.read("k"), "not replaced", "an existing entry is left alone")
        self.assertEqual(self.read("m"), "w")
        d.remove()
        self.assertEqual(self.entries(), ["k", "theirs"])

    def test_target_that_is_a_file(self):
        os.makedirs(os.path.dirname(self.target))
        open(self.target, "w").close()
        with self.assertRaisesRegex(volumes.MountError, "not a directory"):
            volumes.AtomicDir(self.target).write({})


class PodVolumesTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.root)

    def pod(self, optional, mounts):
        return {
            "spec": {
                "volumes": [
                    {"name": "cfg", "configMap": {"name": "c", "optional": optional}},
                    {"name": "scratch", "emptyDir": {}},
                ],
                "containers": [{"name": "main", "volumeMounts": mounts}],
            }
        }

    def test_optional_appears_later_and_is_removed_on_close(self):
        mnt = os.path.join(self.root, "m")
        vols = volumes.PodVolumes(self.pod(True, [{"name": "cfg", "mountPath": mnt}, {"name": "scratch", "mountPath": "/x"}]))
        store = {}
        self.assertEqual(vols.sync(store.get)[0], {})
        self.assertTrue(os.path.isdir(mnt))
        store["c"] = cm({"greeting": "hi"})
        errors, changed = vols.sync(store.get)
        self.assertEqual((errors, len(changed)), ({}, 1))
        with open(os.path.join(mnt, "greeting")) as f:
            self.assertEqual(f.read(), "hi")
        vols.close()
        self.assertFalse(os.path.exists(mnt))
        self.assertEqual(vols.sync(store.get), ({}, []), "no writes after close")
        self.assertFalse(os.path.exists(mnt))

    def test_required_missing_is_a_mount_error(self):
        mnt = os.path.join(self.root, "m")
        vols = volumes.PodVolumes(self.pod(False, [{"name": "cfg", "mountPath": mnt}]))
        errors, _ = vols.sync({}.get)
        self.assertEqual(errors, {"cfg": 'MountVolume.SetUp failed for volume "cfg" : configmap "c" not found'})
        self.assertFalse(os.path.exists(mnt), "nothing is created before the ConfigMap exists")

    def test_pods_mounting_one_path_share_it(self):
        mnt = os.path.join(self.root, "shared")
        store = {"c": cm({"book": "addresses"})}
        a = volumes.PodVolumes(self.pod(True, [{"name": "cfg", "mountPath": mnt}]))
        b = volumes.PodVolumes(self.pod(True, [{"name": "cfg", "mountPath": mnt}]))
        self.assertIs(a.targets["cfg"][0], b.targets["cfg"][0])
        self.assertEqual(len(a.sync(store.get)[1]), 1)
        self.assertEqual(b.sync(store.get), ({}, []), "same content: nothing rewritten")
        self.assertEqual(a.close(), [], "b still uses it")
        with open(os.path.join(mnt, "book")) as f:
            self.assertEqual(f.read(), "addresses")
        self.assertEqual(b.close(), [mnt])
        self.assertFalse(os.path.exists(mnt))
        c = volumes.PodVolumes(self.pod(True, [{"name": "cfg", "mountPath": mnt}]))
        self.assertIsNot(c.targets["cfg"][0], a.targets["cfg"][0], "a fresh projection after the last one ended")
        c.close()

    def test_a_parent_made_for_one_pod_goes_with_the_last_under_it(self):
        a = volumes.PodVolumes(self.pod(True, [{"name": "cfg", "mountPath": os.path.join(self.root, "run/a")}]))
        b = volumes.PodVolumes(self.pod(True, [{"name": "cfg", "mountPath": os.path.join(self.root, "run/b")}]))
        a.sync({}.get)
        b.sync({}.get)  # finds run/ made by a
        self.assertEqual(a.close(), [os.path.join(self.root, "run/a")])
        self.assertTrue(os.path.isdir(os.path.join(self.root, "run/b")))
        b.close()
        self.assertFalse(os.path.exists(os.path.join(self.root, "run")), "the agent made it: removed by the last")

    def test_sub_path_is_reported(self):
        vols = volumes.PodVolumes(self.pod(True, [{"name": "cfg", "mountPath": "/etc/x.conf", "subPath": "x"}]))
        self.assertEqual(len(vols.unsupported), 1)
        self.assertEqual(vols.targets, {})


if __name__ == "__main__":
    unittest.main()
