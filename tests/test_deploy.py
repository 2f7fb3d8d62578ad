"""deploy/: the Kubernetes manifests against the real Kubernetes schemas (kubernetes-validate), and
the shell the Kubernetes pods and the Slurm script run, executed with stub trtbench and sbatch."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from trtbench.config.config import config_from_dict

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
    assert len(config.models) * len(config.thread_counts) == shards
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
    env = {**stub, "JOB_COMPLETION_INDEX": "1", "STUB_EXIT": str(trtbench_exit)}
    # what the kubelet does to $(VAR) references before the container starts
    script = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], container["args"][0])
    proc = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == pod_exit, proc.stderr
    assert logged(env) == ["run", "--config", "/config/matrix.yaml", "--shard", f"1/{shards}",
                           "--output", "/results/shard-1", "--quiet"]


def test_slurm_script_parses_and_keeps_a_requeued_task_s_log():
    proc = subprocess.run(["bash", "-n", str(SLURM)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = SLURM.read_text()
    assert re.search(r'--shard "\$\{SLURM_ARRAY_TASK_ID\}/\$shards"', text)
    directives = re.findall(r"^#SBATCH (\S+)", text, re.M)
    assert "--requeue" in directives and "--open-mode=append" in directives, "a requeue appends to the first log"
    assert "--open-mode=append" in text.split("--dependency=")[1].split("--wrap")[0], "the merge job's log too"
    documented = (DEPLOY / "README.md").read_text()
    for name in ("TRTBENCH_CPUS", "TRTBENCH_GPUS", "TRTBENCH_TIME"):
        assert name in text.split("\n#SBATCH")[0] and name in documented, f"{name} is documented"


def array_task(stub, task: int, count: int, trtbench_exit: int = 0, top: int | None = None, bottom: int = 0,
               shards: int | None = None):
    env = {**stub, "SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_COUNT": str(count),
           "SLURM_ARRAY_TASK_MIN": str(bottom), "SLURM_ARRAY_TASK_MAX": str(count - 1 if top is None else top),
           "SLURM_JOB_ID": "77", "STUB_EXIT": str(trtbench_exit)}
    args = ["m.yaml", "/scratch/out", *([str(shards)] if shards is not None else [])]
    return env, subprocess.run(["bash", str(SLURM), *args], env=env, capture_output=True, text=True, timeout=60)


def test_slurm_array_task_runs_the_shard_of_its_task_id(stub):
    env, proc = array_task(stub, task=1, count=3)
    assert proc.returncode == 0, proc.stderr
    assert logged(env) == ["run", "--config", "m.yaml", "--shard", "1/3", "--output", "/scratch/out/shard-1", "--quiet"]
    assert "matrix.sbatch: shard 1/3, job 77" in proc.stderr and "attempt 1" in proc.stderr
    assert array_task(stub, 1, 3, trtbench_exit=1)[1].returncode == 0, "exit 1: results complete, merge reports it"
    assert array_task(stub, 1, 3, trtbench_exit=2)[1].returncode == 2
    _, stepped = array_task(stub, 1, 3, top=4)
    assert stepped.returncode == 2 and "the array must be 0-(N-1)" in stepped.stderr


def test_slurm_reruns_some_shards_of_n_when_n_is_given(stub):
    # sbatch --array=1 matrix.sbatch m.yaml /scratch/out 3: one task, numbered 1, of a 3-shard matrix
    env, proc = array_task(stub, task=1, count=1, bottom=1, top=1, shards=3)
    assert proc.returncode == 0, proc.stderr
    assert logged(env) == ["run", "--config", "m.yaml", "--shard", "1/3", "--output", "/scratch/out/shard-1", "--quiet"]
    _, without_n = array_task(stub, task=1, count=1, bottom=1, top=1)
    assert without_n.returncode == 2
    assert "pass N: sbatch --array=1 matrix.sbatch CONFIG OUTPUT_DIR N" in without_n.stderr
    _, beyond = array_task(stub, task=3, count=1, bottom=3, top=3, shards=3)
    assert beyond.returncode == 2 and "array task 3 is not a shard of 3 (0-2)" in beyond.stderr


@pytest.fixture
def sbatch(stub, tmp_path) -> Path:
    """An ``sbatch`` on the stub PATH that writes each call's arguments to calls/<n> and answers as sbatch
    does: --test-only with $TEST_ONLY_ERROR on stderr and exit 1 when that is set, --parsable with a job id."""
    calls = tmp_path / "calls"
    calls.mkdir()
    path = Path(stub["PATH"].split(":")[0]) / "sbatch"
    path.write_text(f"""#!/bin/bash
n=$(ls {calls} | wc -l)
printf '%s\\n' "$@" > {calls}/$n
if [[ " $* " == *" --test-only "* ]]; then
    [[ -z "${{TEST_ONLY_ERROR:-}}" ]] || {{ echo "$TEST_ONLY_ERROR" >&2; exit 1; }}
    echo "sbatch: Job 499 to start at 2030-01-01T00:00:00 using 1 processors on nodes n1 in partition p" >&2
    exit 0
fi
echo "$((500 + n));cluster"
""")
    path.chmod(0o755)
    return calls


def submitted(calls: Path) -> list[list[str]]:
    return [(calls / str(n)).read_text().splitlines() for n in range(len(list(calls.iterdir())))]


def test_slurm_submits_the_array_and_a_dependent_merge(stub, sbatch, tmp_path):
    out = tmp_path / "my results"
    proc = subprocess.run(["bash", str(SLURM), "m.yaml", str(out), "3"], env=stub, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    check, array, merge = submitted(sbatch)
    assert check == ["--test-only", *array[1:]], "the array's request is checked before it is submitted"
    assert array[:2] == ["--parsable", "--array=0-2"] and array[-4:] == [str(SLURM), "m.yaml", str(out), "3"]
    assert not [a for a in array if a.startswith(("--cpus-per-task", "--gres", "--time"))], "the #SBATCH defaults"
    assert "--dependency=afterany:501" in merge and "--open-mode=append" in merge
    wrapped = merge[merge.index("--wrap") + 1]
    run = subprocess.run(["bash", "-c", wrapped], env=stub, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert logged(stub) == ["merge", *(f"{out}/shard-{i}" for i in range(3)), "--output", f"{out}/merged"]


@pytest.mark.parametrize("gpus, gres", [("2", "--gres=gpu:2"), ("0", "--gres=none")])
def test_slurm_resources_are_set_at_submit_time(stub, sbatch, gpus, gres):
    env = {**stub, "TRTBENCH_CPUS": "2", "TRTBENCH_GPUS": gpus, "TRTBENCH_TIME": "00:30:00"}
    proc = subprocess.run(["bash", str(SLURM), "m.yaml", "/scratch/out", "2"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    check, array, merge = submitted(sbatch)
    for request in (check, array):
        assert {"--cpus-per-task=2", gres, "--time=00:30:00"} <= set(request)
    assert not [a for a in merge if a.startswith(("--cpus-per-task", "--gres"))], "merging needs no GPU"


def test_slurm_submits_a_subset_of_shards_and_merges_all_of_them(stub, sbatch):
    proc = subprocess.run(["bash", str(SLURM), "m.yaml", "/scratch/out", "4", "1,3"], env=stub, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "shard(s) 1,3 of 4" in proc.stdout
    _, array, merge = submitted(sbatch)
    assert "--array=1,3" in array and array[-1] == "4", "the tasks are told N"
    wrapped = merge[merge.index("--wrap") + 1]
    assert all(f"/scratch/out/shard-{i} " in wrapped for i in range(4))


@pytest.mark.parametrize("args, env, message", [
    (["4", "4"], {}, "TASKS '4' names shard 4, but there are 4 (0-3)"),
    (["4", "1-5"], {}, "TASKS '1-5' names shard 5, but there are 4 (0-3)"),
    (["4", "a"], {}, "TASKS must be shard numbers and ranges like 1 or 0,2-3, got 'a'"),
    (["0"], {}, "SHARDS must be a positive number, got '0'"),
    (["2"], {"TRTBENCH_CPUS": "0"}, "TRTBENCH_CPUS must be a positive number, got '0'"),
    (["2"], {"TRTBENCH_GPUS": "one"}, "TRTBENCH_GPUS must be a number (0: no GPU), got 'one'"),
    (["2"], {"TEST_ONLY_ERROR": "allocation failure: Requested node configuration is not available"},
     "no node can run a task with these resources (sbatch --test-only: allocation failure: Requested node "
     "configuration is not available); set TRTBENCH_CPUS, TRTBENCH_GPUS or TRTBENCH_TIME"),
])
def test_slurm_bad_requests_exit_2_before_anything_is_submitted(stub, sbatch, args, env, message):
    proc = subprocess.run(["bash", str(SLURM), "m.yaml", "/scratch/out", *args], env={**stub, **env},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and f"matrix.sbatch: {message}" in proc.stderr
    assert all("--test-only" in call for call in submitted(sbatch)), "no job was submitted"


def slurm_unavailable() -> str | None:
    """Why the real-Slurm check cannot run here (None when a controller answers)."""
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        return "Slurm's sbatch/sinfo are not installed (apt-get install slurm-client, and a running slurmctld)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%c %G"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "no Slurm controller answered sinfo within 20 s"
    if proc.returncode != 0:
        return f"no Slurm controller answers: sinfo: {proc.stderr.strip()}"
    return None


@pytest.mark.skipif(slurm_unavailable() is not None, reason=str(slurm_unavailable()))
def test_a_real_sbatch_accepts_the_recipe_s_directives_and_resources(tmp_path):
    """sbatch --test-only reads the script's #SBATCH lines and the recipe's flags as a submission would,
    and asks the controller whether a node could run it; no job is created."""
    proc = subprocess.run(["sbatch", "--test-only", "--array=0-1", "--cpus-per-task=1", "--gres=none",
                           "--time=00:05:00", "--export=ALL", str(SLURM), "m.yaml", str(tmp_path), "2"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0 and "to start at" in proc.stderr, proc.stderr
