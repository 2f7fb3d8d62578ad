"""Saved artifacts reload in a fresh process with torch.jit.load / torch.export.load alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trtbench.artifacts import read_manifest, sha256_of, verify
from trtbench.errors import UserInputError
from trtbench.variants import Variant, get_variant, variant_names


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory):
    from conftest import TINY_CONFIG, run_dict

    out = tmp_path_factory.mktemp("run") / "out"
    config = dict(TINY_CONFIG, variants=["eager", "traced", "scripted", "exported"],
                  output={"dir": str(out), "cold_start": True})
    assert run_dict(config).exit_code == 0
    return out


def test_records_carry_the_cold_start_of_their_saved_artifact(saved_run):
    from trtbench.resultset import ResultSet

    for record in ResultSet.load(saved_run):
        cold = record.metrics.get("cold_start")
        if record.case.variant == "eager":
            assert cold is None  # eager saves nothing
            continue
        (entry,) = cold
        assert entry["file"] == f"{record.case.variant}_fp32.{'pt2' if record.case.variant == 'exported' else 'ts'}"
        assert entry["ok"] and entry["load_s"] > 0 and entry["first_call_ms"] > 0


def test_manifest_lists_each_artifact_with_hash_and_reference(saved_run):
    manifest = read_manifest(saved_run)
    files = {a["file"]: a for a in manifest["artifacts"]}
    assert set(files) == {"traced_fp32.ts", "scripted_fp32.ts", "exported_fp32.pt2"}
    for name, entry in files.items():
        path = saved_run / "artifacts" / name
        assert entry["sha256"] == sha256_of(path) and entry["bytes"] == path.stat().st_size
        assert (saved_run / "artifacts" / entry["reference"]["file"]).is_file()
        assert entry["reference"]["input_shapes"] == [[2, 3, 16, 16]]
        assert entry["reload_check"]["shapes"] == ["min", "opt", "max"]
        assert entry["reload_check"]["max_abs_err"] <= 1e-5
    assert manifest["environment"]["torch"] and manifest["inputs"][0]["max_shape"] == [4, 3, 16, 16]
    assert not list((saved_run / "artifacts").glob(".*")), "no staging leftovers"


def test_verify_reloads_every_artifact_in_a_fresh_process(saved_run):
    rows = verify(saved_run)
    assert len(rows) == 3
    assert all(row["ok"] for row in rows), rows
    assert all(row["max_abs_err"] <= 1e-5 for row in rows)


def test_verify_cli_exit_codes(saved_run, subprocess_env):
    proc = subprocess.run([sys.executable, "-m", "trtbench", "verify", str(saved_run)], capture_output=True,
                          text=True, env=subprocess_env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "3 verified, 0 failed" in proc.stdout


def copy_of_run(saved_run, tmp_path, keep=("traced_fp32.ts", "scripted_fp32.ts")):
    """A copy of the run whose manifest lists only ``keep`` (each verified artifact costs a fresh process)."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(saved_run, copy)
    manifest_path = copy / "artifacts" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["artifacts"] = [a for a in manifest["artifacts"] if a["file"] in keep]
    manifest_path.write_text(json.dumps(manifest))
    return copy


def test_verify_detects_a_changed_file(saved_run, tmp_path):
    copy = copy_of_run(saved_run, tmp_path)
    with (copy / "artifacts" / "traced_fp32.ts").open("ab") as fh:
        fh.write(b"tampered")
    rows = {row["file"]: row for row in verify(copy)}
    assert not rows["traced_fp32.ts"]["ok"] and "sha256" in rows["traced_fp32.ts"]["error"]
    assert rows["scripted_fp32.ts"]["ok"]


def test_fresh_process_uses_torch_alone(saved_run):
    """The deployment path: a bare Python process with only torch imported loads and runs the file."""
    code = ("import sys, torch; m = torch.jit.load(sys.argv[1]); y = m(torch.randn(3, 3, 16, 16));"
            "assert 'trtbench' not in sys.modules; print(tuple(y.shape))")
    proc = subprocess.run([sys.executable, "-c", code, str(saved_run / "artifacts" / "scripted_fp32.ts")],
                          capture_output=True, text=True, timeout=300, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(3, 10)"


def test_verify_without_manifest_is_a_user_error(tmp_path):
    with pytest.raises(UserInputError) as info:
        verify(tmp_path)
    assert "no manifest" in info.value.problem


def test_results_json_is_never_half_written(tmp_path, monkeypatch):
    from trtbench import fsutil

    target = tmp_path / "results.json"
    fsutil.atomic_write_json(target, {"complete": True})

    def crash(tmp):
        tmp.write_text('{"half": ')
        raise RuntimeError("crash mid-write")

    with pytest.raises(RuntimeError):
        fsutil.atomic_write(target, crash)
    assert json.loads(target.read_text()) == {"complete": True}
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_engine_built_elsewhere_is_refused_unless_forced(saved_run, tmp_path):
    """A manifest entry marked as a TensorRT engine from another TensorRT/GPU is not loaded without --force."""
    copy = copy_of_run(saved_run, tmp_path)
    manifest_path = copy / "artifacts" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entry = next(a for a in manifest["artifacts"] if a["file"] == "traced_fp32.ts")
    entry["engine"] = {"tensorrt": "11.1.0", "gpu": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
    manifest_path.write_text(json.dumps(manifest))
    refused = {row["file"]: row for row in verify(copy)}
    assert not refused["traced_fp32.ts"]["ok"]
    assert "TensorRT 11.1.0" in refused["traced_fp32.ts"]["error"] and "--force" in refused["traced_fp32.ts"]["error"]
    assert refused["scripted_fp32.ts"]["ok"]
    forced = {row["file"]: row for row in verify(copy, force=True)}
    assert forced["traced_fp32.ts"]["ok"]


# Where each variant's saved artifacts are reloaded with `trtbench verify` in a fresh process, which
# imports only what the manifest names: only that shows the manifest names what the loader needs.
VERIFIED_IN_A_FRESH_PROCESS = {
    "traced": "test_artifacts.py::test_verify_reloads_every_artifact_in_a_fresh_process",
    "scripted": "test_artifacts.py::test_verify_reloads_every_artifact_in_a_fresh_process",
    "exported": "test_artifacts.py::test_verify_reloads_every_artifact_in_a_fresh_process",
    "aoti": "test_backends.py::test_trtbench_verify_reloads_each_artifact_with_its_runtime_and_times_the_cold_start",
    "ort": "test_backends.py::test_trtbench_verify_reloads_each_artifact_with_its_runtime_and_times_the_cold_start",
    "openvino": "test_backends.py::test_trtbench_verify_reloads_each_artifact_with_its_runtime_and_times_the_cold_start",
    "trt": "test_trt_variants.py::test_trt_artifacts_load_in_a_fresh_process_with_the_imports_their_manifest_names",
    "trt_traced": "test_trt_variants.py::test_trt_artifacts_load_in_a_fresh_process_with_the_imports_their_manifest_names",
    "trt_scripted": "test_trt_variants.py::test_trt_artifacts_load_in_a_fresh_process_with_the_imports_their_manifest_names",
}


def test_every_variant_that_saves_is_verified_in_a_fresh_process():
    """A variant with its own save() needs a test that reloads what it saved through the manifest alone
    (ort_cuda and ort_trt need CUDA; they save with OrtVariant.save, as ort does: the same file and loader)."""
    saves = {name: type(get_variant(name)).save for name in variant_names()}
    verified = {saves[name] for name in VERIFIED_IN_A_FRESH_PROCESS}
    assert [name for name, save in saves.items() if save is not Variant.save and save not in verified] == []
    for test in set(VERIFIED_IN_A_FRESH_PROCESS.values()):
        file, name = test.split("::")
        assert f"def {name}(" in (Path(__file__).parent / file).read_text(), test
