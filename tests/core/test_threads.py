"""The default thread count follows the CPUs the process may use (affinity, cgroup quota, Slurm
allocation), not every core of the host, and the run records where it came from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trtbench.core.env import cgroup_cpu_quota, default_threads

HOST_CPUS = os.cpu_count()
NO_LIMITS = {"environ": {}, "affinity": set(range(HOST_CPUS)), "self_cgroup": "0::/\n"}
needs_two_cpus = pytest.mark.skipif(HOST_CPUS < 2, reason="a limit of 1 CPU limits nothing on a 1-CPU host")


def write(root: Path, files: dict[str, str]) -> Path:
    """A fake cgroup tree under ``root``: {relative path: content}."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("layout, self_cgroup, files, cpus, named", [
    # cgroup v2, a Kubernetes container with its own cgroup namespace: its cgroup is the mount's root
    ("v2 namespaced", "0::/\n", {"cpu.max": "150000 100000\n"}, 1.5, "cpu.max"),
    # cgroup v2 seen from the host (a Slurm step, a systemd unit): the quota is set on an ancestor
    ("v2 ancestor", "0::/kubepods.slice/pod1.slice/cri-c1.scope\n",
     {"cpu.max": "max 100000\n", "kubepods.slice/pod1.slice/cpu.max": "200000 100000\n",
      "kubepods.slice/pod1.slice/cri-c1.scope/cpu.max": "max 100000\n"}, 2.0, "pod1.slice/cpu.max"),
    # the tightest of several levels wins
    ("v2 nested", "0::/a/b\n", {"a/cpu.max": "300000 100000\n", "a/b/cpu.max": "50000 100000\n"}, 0.5, "a/b/cpu.max"),
    # a hybrid host: the unified hierarchy mounted at <root>/unified
    ("v2 hybrid", "1:cpu:/\n0::/job\n", {"unified/job/cpu.max": "400000 100000\n"}, 4.0, "unified/job/cpu.max"),
    # cgroup v1, controllers mounted together (Docker, Kubernetes on v1 nodes)
    ("v1 cpu,cpuacct", "4:cpu,cpuacct:/kubepods/burstable/pod1/c1\n3:memory:/kubepods/burstable/pod1/c1\n",
     {"cpu,cpuacct/kubepods/burstable/pod1/c1/cpu.cfs_quota_us": "100000\n",
      "cpu,cpuacct/kubepods/burstable/pod1/c1/cpu.cfs_period_us": "100000\n"}, 1.0, "cpu.cfs_quota_us"),
    # cgroup v1, the cpu controller alone, the container's cgroup at the mount's root
    ("v1 cpu", "2:cpuacct:/docker/abc\n1:cpu:/docker/abc\n",
     {"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3.0, "cpu/cpu.cfs_quota_us"),
])
def test_cgroup_quota_is_found_in_v1_and_v2_layouts(tmp_path, layout, self_cgroup, files, cpus, named):
    quota = cgroup_cpu_quota(write(tmp_path, files), self_cgroup)
    assert quota is not None, layout
    assert quota[0] == pytest.approx(cpus) and named in quota[1]


@pytest.mark.parametrize("self_cgroup, files", [
    ("0::/\n", {"cpu.max": "max 100000\n"}),  # v2 without a limit
    ("1:cpu:/\n", {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}),  # v1 without a limit
    ("0::/\n", {}),  # no cgroup files at all (a v2 root, or not Linux)
    ("garbage\n", {"cpu.max": "100000 100000\n"}),  # unreadable /proc/self/cgroup: nothing is guessed
])
def test_no_quota_where_none_is_set(tmp_path, self_cgroup, files):
    assert cgroup_cpu_quota(write(tmp_path, files), self_cgroup) is None


@needs_two_cpus
def test_a_kubernetes_cpu_limit_sets_the_default_though_every_host_cpu_is_visible(tmp_path):
    root = write(tmp_path, {"cpu.max": "100000 100000\n"})  # limits: cpu: 1
    result = default_threads(**{**NO_LIMITS, "affinity": set(range(64))}, cgroup_root=root)
    assert result["threads"] == 1
    assert result["source"].startswith("CPU quota of 1 CPUs: cgroup v2") and str(root / "cpu.max") in result["source"]


def test_a_fractional_quota_rounds_down_to_at_least_one_thread(tmp_path):
    half = write(tmp_path / "half", {"cpu.max": "50000 100000\n"})
    assert default_threads(**{**NO_LIMITS, "affinity": set(range(8))}, cgroup_root=half)["threads"] == 1
    two_and_a_half = write(tmp_path / "more", {"cpu.max": "250000 100000\n"})
    assert default_threads(**{**NO_LIMITS, "affinity": set(range(8))}, cgroup_root=two_and_a_half)["threads"] == 2


@needs_two_cpus
def test_affinity_limits_the_default(tmp_path):
    result = default_threads(**{**NO_LIMITS, "affinity": {0}}, cgroup_root=tmp_path)
    assert result == {"threads": 1, "source": f"CPU affinity (sched_getaffinity): 1 of {HOST_CPUS} CPUs"}


def test_the_fewest_cpus_of_affinity_quota_and_slurm_wins(tmp_path):
    root = write(tmp_path, {"cpu.max": "300000 100000\n"})
    wide = {**NO_LIMITS, "affinity": set(range(8))}
    assert default_threads(**wide, cgroup_root=root)["threads"] == min(3, HOST_CPUS)
    slurm = default_threads(**{**wide, "environ": {"SLURM_CPUS_PER_TASK": "1"}}, cgroup_root=root)
    assert slurm == {"threads": 1, "source": "SLURM_CPUS_PER_TASK=1 (the Slurm job's CPUs per task)"}
    narrow = default_threads(**{**NO_LIMITS, "affinity": {0}}, cgroup_root=root)
    assert narrow["threads"] == 1 and narrow["source"].startswith("CPU affinity")


def test_omp_num_threads_is_what_the_user_asked_for(tmp_path):
    root = write(tmp_path, {"cpu.max": "100000 100000\n"})
    assert default_threads(**{**NO_LIMITS, "environ": {"OMP_NUM_THREADS": "3"}}, cgroup_root=root) == \
        {"threads": 3, "source": "OMP_NUM_THREADS=3"}


def test_without_limits_the_default_is_every_cpu(tmp_path):
    result = default_threads(**NO_LIMITS, cgroup_root=tmp_path)
    assert result["threads"] == HOST_CPUS and result["source"].startswith("os.cpu_count()")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 usable CPUs to tell a 1-CPU allocation apart")
def test_a_run_resolved_in_a_one_cpu_slurm_task_defaults_to_one_thread():
    """The reported case: a Slurm task with 1 CPU recorded 2 threads. Resolve in a fresh process as the
    task would, with the environment Slurm gives it (its CPUs per task, no OMP_NUM_THREADS)."""
    from conftest import ASSETS, REPO, TINY_CONFIG

    script = ("import json, sys; from trtbench.config.config import config_from_dict; "
              "from trtbench.config.plan import resolve; "
              "from trtbench.core.env import collect_environment; import torch; "
              "plan = resolve(config_from_dict(json.loads(sys.argv[1]))); "
              "print(json.dumps([[g.threads for g in plan.groups], "
              "collect_environment(torch.device('cpu'), True)['default_threads']]))")
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env.update(SLURM_CPUS_PER_TASK="1", PYTHONPATH=os.pathsep.join([str(REPO), str(ASSETS)]))
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(TINY_CONFIG)], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    threads, recorded = json.loads(proc.stdout)
    assert threads == [1]
    assert recorded == {"threads": 1, "source": "SLURM_CPUS_PER_TASK=1 (the Slurm job's CPUs per task)"}
