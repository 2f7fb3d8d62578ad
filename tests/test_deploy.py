"""deploy/: the Kubernetes manifests against the real Kubernetes schemas (kubernetes-validate), and
the shell the Kubernetes pods and the Slurm script run, executed with stub trtbench and sbatch."""

from __future__ import annotations

import copy
import os
import re
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from trtbench.config import config_from_dict

DEPLOY = Path(__file__).parent.parent / "deploy"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
SLURM = DEPLOY / "slurm" / "matrix.sbatch"
# the oldest Kubernetes the Job's fields (backoffLimitPerIndex, podFailurePolicy) are meant for, and the newest known
VERSIONS = ("1.31.0", kubernetes_validate.latest_version())

STUB = """#!/bin/bash
printf '%s\\n' "$@" > "$STUB_LOG"
exit "${STUB_EXIT:-0}"
"""


def documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def validate(doc: dict) -> None:
    """Strict: unknown fields are errors too (a misspelt key would otherwise be ignored by the API server)."""
    for version in VERSIONS:
        kubernetes_validate.validate(doc, version, strict=True)


def kinds() -> dict[str, dict]:
    return {f"{d['kind']}/{d['metadata']['name']}": d for path in MANIFESTS for d in documents(path)}


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifests_validate_against_the_kubernetes_schemas(path):
    docs = documents(path)
    assert docs
    for doc in docs:
        validate(doc)


def test_validation_rejects_an_invalid_manifest():
    job = kinds()["Job/trtbench-matrix"]
    misspelt = copy.deepcopy(job)
    misspelt["spec"]["completionMod"] = misspelt["spec"].pop("completionMode")
    wrong_type = copy.deepcopy(job)
    wrong_type["spec"]["completions"] = "four"
    nameless = copy.deepcopy(job)
    del nameless["spec"]["template"]["spec"]["containers"][0]["name"]
    for bad in (misspelt, wrong_type, nameless):
        with pytest.raises(kubernetes_validate.ValidationError):
            validate(bad)


def shard_job() -> tuple[dict, dict, int]:
    job = kinds()["Job/trtbench-matrix"]
    container = job["spec"]["template"]["spec"]["containers"][0]
    return job, container, job["spec"]["completions"]


def test_indexed_job_shards_by_completion_index_with_one_gpu_each():
    job, container, shards = shard_job()
    assert job["spec"]["completionMode"] == "Indexed"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    script = container["args"][0]
    assert re.search(rf'--shard "\$\(JOB_COMPLETION_INDEX\)/{shards}"', script), "N in --shard must be completions"
    assert '--output "/results/shard-$(JOB_COMPLETION_INDEX)"' in script
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in job["spec"]["template"]["spec"]["volumes"]}
    assert mounts["results"] == "/results"
    claim = volumes["results"]["persistentVolumeClaim"]["claimName"]
    assert f"PersistentVolumeClaim/{claim}" in kinds()


def test_merge_job_reads_every_shard_from_the_same_volume():
    _, _, shards = shard_job()
    merge = kinds()["Job/trtbench-matrix-merge"]["spec"]["template"]["spec"]
    args = merge["containers"][0]["args"]
    assert args[0] == "merge" and args[-2:] == ["--output", "/results/merged"]
    assert args[1:-2] == [f"/results/shard-{i}" for i in range(shards)]
    assert merge["volumes"][0]["persistentVolumeClaim"]["claimName"] == "trtbench-results"
    assert "nvidia.com/gpu" not in str(merge), "merging needs no GPU"


def test_configmap_matrix_is_a_valid_config_with_one_build_group_per_shard():
    _, _, shards = shard_job()
    text = kinds()["ConfigMap/trtbench-matrix-config"]["data"]["matrix.yaml"]
    config = config_from_dict(yaml.safe_load(text))
    assert len(config.models) * len(config.precisions) * len(config.thread_counts) == shards
    assert config.budget.p99_ms is not None


@pytest.fixture
def stub(tmp_path) -> dict:
    """PATH with a ``trtbench`` that logs its arguments to $STUB_LOG and exits with $STUB_EXIT."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "trtbench").write_text(STUB)
    (bin_dir / "trtbench").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "STUB_LOG": str(tmp_path / "args.log")}


def logged(env: dict) -> list[str]:
    return Path(env["STUB_LOG"]).read_text().splitlines()


@pytest.mark.parametrize("trtbench_exit, pod_exit", [(0, 0), (1, 0), (2, 2), (137, 137)])
def test_pod_script_runs_its_shard_and_passes_on_failures_to_retry(stub, trtbench_exit, pod_exit):
    _, container, shards = shard_job()
    env = {**stub, "JOB_COMPLETION_INDEX": "2", "STUB_EXIT": str(trtbench_exit)}
    # what the kubelet does to $(VAR) references before the container starts
    script = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], container["args"][0])
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == pod_exit, proc.stderr
    assert logged(env) == ["run", "--config", "/config/matrix.yaml", "--shard", f"2/{shards}",
                           "--output", "/results/shard-2", "--quiet"]


def test_slurm_script_parses():
    proc = subprocess.run(["bash", "-n", str(SLURM)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r'--shard "\$\{SLURM_ARRAY_TASK_ID\}/', SLURM.read_text())


def array_task(stub, task: int, count: int, trtbench_exit: int = 0, top: int | None = None):
    env = {**stub, "SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_COUNT": str(count),
           "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": str(count - 1 if top is None else top),
           "STUB_EXIT": str(trtbench_exit)}
    return env, subprocess.run(["bash", str(SLURM), "m.yaml", "/scratch/out"], env=env, capture_output=True,
                               text=True, timeout=60)


def test_slurm_array_task_runs_the_shard_of_its_task_id(stub):
    env, proc = array_task(stub, task=1, count=3)
    assert proc.returncode == 0, proc.stderr
    assert logged(env) == ["run", "--config", "m.yaml", "--shard", "1/3", "--output", "/scratch/out/shard-1", "--quiet"]
    assert array_task(stub, 1, 3, trtbench_exit=1)[1].returncode == 0, "exit 1: results complete, merge reports it"
    assert array_task(stub, 1, 3, trtbench_exit=2)[1].returncode == 2
    _, stepped = array_task(stub, 1, 3, top=4)
    assert stepped.returncode == 2 and "the array must be 0-(N-1)" in stepped.stderr


def test_slurm_submits_the_array_and_a_dependent_merge(stub, tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    (Path(stub["PATH"].split(":")[0]) / "sbatch").write_text(f"""#!/bin/bash
n=$(ls {calls} | wc -l)
printf '%s\\n' "$@" > {calls}/$n
echo "$((500 + n));cluster"
""")
    (Path(stub["PATH"].split(":")[0]) / "sbatch").chmod(0o755)
    out = tmp_path / "my results"
    proc = subprocess.run(["bash", str(SLURM), "m.yaml", str(out), "3"], env=stub, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    array = (calls / "0").read_text().splitlines()
    assert "--array=0-2" in array and array[-3:] == [str(SLURM), "m.yaml", str(out)]
    merge = (calls / "1").read_text().splitlines()
    assert "--dependency=afterany:500" in merge
    wrapped = merge[merge.index("--wrap") + 1]
    run = subprocess.run(["bash", "-c", wrapped], env=stub, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert logged(stub) == ["merge", *(f"{out}/shard-{i}" for i in range(3)), "--output", f"{out}/merged"]
