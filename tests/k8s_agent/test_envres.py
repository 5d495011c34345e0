"""Unit tests of the agent's pure environment/command resolution (no API)."""
import base64
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envres  # noqa: E402

POD = {
    "metadata": {
        "name": "job-x-abcde",
        "namespace": "tandem-test",
        "uid": "u-1",
        "labels": {"job-name": "job-x"},
        "annotations": {"batch.kubernetes.io/job-completion-index": "3"},
    },
    "spec": {"nodeName": "gpu-node", "serviceAccountName": "default", "hostname": "job-x-3"},
    "status": {"podIP": "127.0.0.1", "hostIP": "127.0.0.1"},
}


def b64(s):
    return base64.b64encode(s.encode()).decode()


SECRETS = {"creds": {"token": b64("s3cret"), "user": b64("ann")}}
CONFIGMAPS = {"cfg": {"MODE": "fast"}}


def resolve(container, base=None):
    return envres.container_env(POD, container, base or {}, SECRETS.get, CONFIGMAPS.get)


class EnvTest(unittest.TestCase):
    def test_values_expand_earlier_variables_and_double_dollar(self):
        env = resolve({"env": [{"name": "A", "value": "x"}, {"name": "B", "value": "$(A)-$(NOPE)-$$(A)"}]})
        self.assertEqual(env["B"], "x-$(NOPE)-$(A)")

    def test_field_refs(self):
        env = resolve(
            {
                "env": [
                    {"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {
                        "name": "RANK",
                        "valueFrom": {
                            "fieldRef": {
                                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                            }
                        },
                    },
                    {"name": "JOB", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['job-name']"}}},
                ]
            }
        )
        self.assertEqual(
            (env["N"], env["NS"], env["IP"], env["RANK"], env["JOB"]),
            ("job-x-abcde", "tandem-test", "127.0.0.1", "3", "job-x"),
        )

    def test_unknown_field_ref_is_a_config_error(self):
        with self.assertRaisesRegex(envres.ConfigError, "spec.bogus"):
            resolve({"env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}]})

    def test_secret_and_configmap_keys(self):
        env = resolve(
            {
                "env": [
                    {"name": "T", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                    {"name": "M", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "MODE"}}},
                ]
            }
        )
        self.assertEqual((env["T"], env["M"]), ("s3cret", "fast"))

    def test_missing_secret_fails_unless_optional(self):
        with self.assertRaisesRegex(envres.ConfigError, "secret 'gone' not found"):
            resolve({"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k"}}}]})
        with self.assertRaisesRegex(envres.ConfigError, "key 'nokey' in secret 'creds'"):
            resolve({"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "nokey"}}}]})
        env = resolve(
            {"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k", "optional": True}}}]}
        )
        self.assertNotIn("T", env)

    def test_env_from_with_prefix_then_env_overrides(self):
        env = resolve(
            {
                "envFrom": [{"secretRef": {"name": "creds"}, "prefix": "S_"}, {"configMapRef": {"name": "cfg"}}],
                "env": [{"name": "MODE", "value": "slow"}],
            }
        )
        self.assertEqual((env["S_token"], env["S_user"], env["MODE"]), ("s3cret", "ann", "slow"))

    def test_resource_field_ref(self):
        c = {
            "resources": {"limits": {"memory": "1Gi", "cpu": "1500m"}, "requests": {"memory": "1.5G"}},
            "env": [
                {"name": "M", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
                {"name": "MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "C", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                {"name": "CM", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
                {"name": "R", "valueFrom": {"resourceFieldRef": {"resource": "requests.memory", "divisor": "1M"}}},
            ],
        }
        env = resolve(c)
        self.assertEqual([env[k] for k in ("M", "MI", "C", "CM", "R")], ["1073741824", "1024", "2", "1500", "1500"])

    def test_resource_field_ref_without_the_resource_is_a_config_error(self):
        c = {"env": [{"name": "M", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}}]}
        with self.assertRaisesRegex(envres.ConfigError, "sets no limits.memory"):
            resolve(c)

    def test_base_env(self):
        env = envres.base_env(POD, 6443, "/tmp/tb")
        self.assertEqual(env["HOSTNAME"], "job-x-3")
        self.assertEqual(env["KUBERNETES_SERVICE_PORT"], "6443")
        self.assertEqual(env["TANDEM_TESTBED_RUN"], "/tmp/tb")


class ArgvTest(unittest.TestCase):
    def test_command_and_args_expand(self):
        argv = envres.container_argv({"command": ["sh", "-c"], "args": ["echo $(A) $HOME"]}, {"A": "1"})
        self.assertEqual(argv, ["sh", "-c", "echo 1 $HOME"])

    def test_no_command_is_a_config_error(self):
        with self.assertRaisesRegex(envres.ConfigError, "no command"):
            envres.container_argv({"image": "busybox"}, {})


if __name__ == "__main__":
    unittest.main()
