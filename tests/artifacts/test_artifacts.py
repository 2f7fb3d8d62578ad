"""Saved artifacts reload in a fresh process with torch.jit.load / torch.export.load alone."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trtbench.artifacts.store import read_manifest, sha256_of, verify_manifest
from trtbench.core.errors import UserInputError
from trtbench.variants import Variant, get_variant, variant_names
from helpers.paths import TESTS


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory):
    from conftest import TINY_CONFIG, run_dict

    out = tmp_path_factory.mktemp("run") / "out"
    config = dict(TINY_CONFIG, variants=["eager", "traced", "scripted", "exported"],
                  output={"dir": str(out), "cold_start": True})
    assert run_dict(config).exit_code == 0
    return out


def test_records_carry_the_cold_start_of_their_saved_artifact(saved_run):
    from trtbench.results.resultset import ResultSet

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
    rows = verify_manifest(saved_run)
    assert len(rows) == 3
    assert all(row["ok"] for row in rows), rows
    assert all(row["max_abs_err"] <= 1e-5 for row in rows)


def test_verify_cli_exit_codes(saved_run, capsys):
    from trtbench.cli import main

    code = main(["verify", str(saved_run)])  # the command's entry point here; it reloads each file in a fresh process
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "3 verified, 0 failed" in out


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
    rows = {row["file"]: row for row in verify_manifest(copy)}
    assert not rows["traced_fp32.ts"]["ok"] and "sha256" in rows["traced_fp32.ts"]["error"]
    assert rows["scripted_fp32.ts"]["ok"]


def test_verify_without_manifest_is_a_user_error(tmp_path):
    with pytest.raises(UserInputError) as info:
        verify_manifest(tmp_path)
    assert "no manifest" in info.value.problem


def test_results_json_is_never_half_written(tmp_path, monkeypatch):
    from trtbench.core import fsutil

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
    refused = {row["file"]: row for row in verify_manifest(copy)}
    assert not refused["traced_fp32.ts"]["ok"]
    assert "TensorRT 11.1.0" in refused["traced_fp32.ts"]["error"] and "--force" in refused["traced_fp32.ts"]["error"]
    assert refused["scripted_fp32.ts"]["ok"]
    forced = {row["file"]: row for row in verify_manifest(copy, force=True)}
    assert forced["traced_fp32.ts"]["ok"]


# Where each variant's saved artifacts are reloaded with `trtbench verify` in a fresh process, which
# imports only what the manifest names: only that shows the manifest names what the loader needs.
BACKEND_RELOAD = ("test_backends.py::"
                  "test_trtbench_verify_reloads_each_artifact_with_its_runtime_and_times_the_cold_start")
TRT_RELOAD = "test_trt_variants.py::test_trt_artifacts_load_in_a_fresh_process_with_the_imports_their_manifest_names"
VERIFIED_IN_A_FRESH_PROCESS = {
    "traced": "test_artifacts.py::test_verify_reloads_every_artifact_in_a_fresh_process",
    "scripted": "test_artifacts.py::test_verify_reloads_every_artifact_in_a_fresh_process",
    "exported": "test_artifacts.py::test_verify_reloads_every_artifact_in_a_fresh_process",
    "aoti": BACKEND_RELOAD,
    "compiled": "test_int8_pt2e.py::test_trtbench_verify_reloads_the_int8_files_in_a_fresh_process",  # saves at int8
    "ort": BACKEND_RELOAD,
    "openvino": BACKEND_RELOAD,
    "trt": TRT_RELOAD,
    "trt_traced": TRT_RELOAD,
    "trt_scripted": TRT_RELOAD,
}


def test_every_variant_that_saves_is_verified_in_a_fresh_process():
    """A variant with its own save() needs a test that reloads what it saved through the manifest alone
    (ort_cuda and ort_trt need CUDA; they save with OrtVariant.save, as ort does: the same file and loader)."""
    saves = {name: type(get_variant(name)).save for name in variant_names()}
    verified = {saves[name] for name in VERIFIED_IN_A_FRESH_PROCESS}
    assert [name for name, save in saves.items() if save is not Variant.save and save not in verified] == []
    for test in set(VERIFIED_IN_A_FRESH_PROCESS.values()):
        file, name = test.split("::")
        assert f"def {name}(" in (next(TESTS.rglob(file))).read_text(), test


# ---- what is published: only files that load in a fresh process -----------------------------

# the deployment path: a bare Python process with only torch imported loads and runs a saved TorchScript file and
# an exported program (one process for both: each costs a torch import)
BARE_LOAD = ("import sys, torch; scripted = torch.jit.load(sys.argv[1])(torch.randn(3, 3, 16, 16));"
             "out = torch.export.load(sys.argv[2]).module()(torch.randn(3, 3, 16, 16));"
             "assert not any(m.startswith(('toy_models', 'trtbench')) for m in sys.modules);"
             "print(tuple(scripted.shape)); print(type(out).__name__, [tuple(t.shape) for t in out])")


def test_a_scripted_file_and_a_model_returning_a_registered_dataclass_exported_flat_load_with_torch_alone(
        saved_run, tiny_config, tmp_path):
    from conftest import run_dict

    tiny_config["model"]["name"] = "toy_models:dataclass_output"
    tiny_config["variants"] = ["eager", "exported"]
    tiny_config["benchmark"]["shapes"] = ["opt"]  # the batch stays dynamic: the bare load below runs batch 3
    tiny_config["output"]["dir"] = str(tmp_path / "out")
    outcome = run_dict(tiny_config)
    assert outcome.exit_code == 0, [r.reason for r in outcome.results]
    proc = subprocess.run([sys.executable, "-c", BARE_LOAD, str(saved_run / "artifacts" / "scripted_fp32.ts"),
                           str(tmp_path / "out" / "artifacts" / "exported_fp32.pt2")],
                          capture_output=True, text=True, timeout=300, cwd="/", env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    ran_scripted, ran_exported = proc.stdout.strip().splitlines()
    assert ran_scripted == "(3, 10)", "the scripted file ran with torch alone"
    assert ran_exported == "tuple [(3, 10), (3, 10)]"
    exported = [r for r in outcome.results if r.case.variant == "exported"]
    assert all(r.status == "ok" and r.accuracy["ok"] for r in exported)  # compared with eager's Prediction
    assert exported[0].build["info"]["outputs"] == ["logits", "probs"]
    assert exported[0].build["info"]["outputs_flattened_from"] == "toy_models.Prediction"
    (entry,) = read_manifest(tmp_path / "out")["artifacts"]
    assert entry["file"] == "exported_fp32.pt2" and entry["outputs"] == ["logits", "probs"]


def test_a_file_that_does_not_load_in_a_fresh_process_is_not_published(tiny_config, tmp_path):
    """Its TorchScript calls an operator only this process registered; cold_start is off, the check still runs."""
    from conftest import run_dict

    tiny_config["model"]["name"] = "toy_models:uses_custom_op"
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["output"].update(dir=str(tmp_path / "out"), cold_start=False)
    outcome = run_dict(tiny_config)
    assert outcome.exit_code == 1
    traced = [r for r in outcome.results if r.case.variant == "traced"]
    assert len(traced) == 3 and all(r.status == "failed" and r.rounds for r in traced), "failed, timings kept"
    assert all("traced_fp32.ts fails to load and run in a fresh process (torch.jit.load): "
               "RuntimeError: Unknown builtin op: toy_models::twice." in r.reason for r in traced), traced[0].reason
    assert all(r.status == "ok" for r in outcome.results if r.case.variant == "eager")
    artifacts = tmp_path / "out" / "artifacts"
    assert list(artifacts.iterdir()) == [], "neither the file, its reference, a manifest nor a staging folder"


def test_output_names_follow_the_pytree_order_of_any_container():
    import collections

    from toy_models import Prediction
    from trtbench.variants.exported import output_names

    class ModelOutputLike(collections.OrderedDict):
        """Registered as transformers registers ModelOutput: no key paths, its keys as the context."""

    torch.utils._pytree.register_pytree_node(
        ModelOutputLike, lambda d: (list(d.values()), list(d.keys())), lambda v, keys: ModelOutputLike(zip(keys, v)))
    t = torch.zeros(1)
    assert output_names(t) == ["output"]
    assert output_names((t, t)) == ["0", "1"]
    assert output_names(Prediction(logits=t, probs=t)) == ["logits", "probs"]
    assert output_names({"a": t, "b": (t, 3, t)}) == ["a", "b.0", "b.2"]  # non-tensors are not outputs
    assert output_names(ModelOutputLike(last_hidden_state=t, hidden_states=(t, t))) == [
        "last_hidden_state", "hidden_states.0", "hidden_states.1"]


def test_an_output_pytree_cannot_flatten_is_refused_before_export():
    import dataclasses

    from trtbench.variants.exported import flat_outputs

    @dataclasses.dataclass
    class Unregistered:
        logits: torch.Tensor

    class Model(torch.nn.Module):
        def forward(self, x):
            return Unregistered(x)

    with pytest.raises(TypeError, match="holds .*Unregistered, which torch's pytree cannot flatten; register it"):
        flat_outputs(Model(), (torch.zeros(1),))


# ---- a full disk --------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs mounted for the test (root only: skipped where mounting is not permitted)."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)],
                              capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.skip("no mount command here: cannot make a small filesystem")
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here ({done.stderr.strip()}); "
                    "test_no_space_at_the_write_call_is_a_clear_error simulates it instead")
    yield mount_point
    subprocess.run(["umount", str(mount_point)], check=True, timeout=60)


def run_into(out, config, write_config, capsys) -> subprocess.CompletedProcess:
    """``trtbench --config ... --quiet`` into ``out`` through the command's entry point in this process (a process
    of its own would only import torch again): its exit code and output."""
    from trtbench.cli import main

    config["variants"] = ["eager", "traced"]
    config["output"]["dir"] = str(out)
    path = write_config(config)
    capsys.readouterr()
    code = main(["--config", str(path), "--quiet"])
    captured = capsys.readouterr()
    return subprocess.CompletedProcess([], code, captured.out, captured.err)


def assert_no_space_failure(proc, out, needed_at_least: int):
    from trtbench.results.resultset import ResultSet

    assert proc.returncode == 1, proc.stdout + proc.stderr  # a fault: not 134 (abort), not 2 (bad input)
    message = re.search(rf"not enough space in {re.escape(str(out / 'artifacts'))}: saving traced_fp32"
                        r"[^\n]* needs ([\d,]+) bytes, ([\d,]+) bytes are free", proc.stdout)
    assert message, proc.stdout + proc.stderr
    needed, free = (int(n.replace(",", "")) for n in message.groups())
    assert needed >= needed_at_least and free < needed
    assert not list((out / "artifacts").iterdir()), "no staging folder or partial file left behind"
    results = ResultSet.load(out)
    assert len(results) == 6 and all(r.rounds for r in results), "every measured case kept"
    traced = [r for r in results if r.case.variant == "traced"]
    assert all(r.status == "failed" and "DiskFullError: not enough space" in r.reason for r in traced)
    assert all(r.status == "ok" for r in results if r.case.variant == "eager"), "eager saves nothing: unaffected"


def test_a_disk_too_small_for_the_weights_is_a_clear_error_before_writing(small_disk, tiny_config, write_config,
                                                                         capsys):
    tiny_config["model"]["name"] = "toy_models:heavy_head"  # 3 MiB of weights for a 1 MiB disk
    proc = run_into(small_disk / "out", tiny_config, write_config, capsys)
    assert_no_space_failure(proc, small_disk / "out", needed_at_least=3 << 20)
    assert "(about the model's weights)" in proc.stdout


def test_a_disk_that_fills_while_writing_is_a_clear_error(small_disk, tiny_config, write_config, capsys):
    """The weights would fit; the 2 MiB constant the trace embeds does not, and torch.jit.save meets the full disk."""
    tiny_config["model"]["name"] = "toy_models:hidden_table"
    proc = run_into(small_disk / "out", tiny_config, write_config, capsys)
    assert_no_space_failure(proc, small_disk / "out", needed_at_least=2 << 20)
    assert "(about the model's weights)" not in proc.stdout


def test_a_temporary_folder_too_small_for_the_workers_weights_is_a_clear_error(small_disk, tiny_config, write_config,
                                                                              capsys, monkeypatch, tmp_path):
    """The timing workers' weights and inputs go to a temporary folder: where it is full, the run stops saying which
    folder, what needed how many bytes and how to choose another (TMPDIR), not torch.save's "unexpected pos"."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(small_disk))  # TMPDIR, as this process read it
    tiny_config["model"]["name"] = "toy_models:heavy_head"  # 3 MiB of weights for a 1 MiB disk
    tiny_config["benchmark"]["isolation"] = "process"
    tiny_config["output"]["save_artifacts"] = False  # the fresh-process check's server would outlive the run there
    proc = run_into(tmp_path / "out", tiny_config, write_config, capsys)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    message = re.search(rf"not enough space in {re.escape(str(small_disk))}/trtbench-workers-\w+: the timing workers' "
                        r"weights and inputs needs ([\d,]+) bytes, [\d,]+ bytes are free \(free some space there, "
                        r"or set TMPDIR to a folder with more: it is a temporary folder\)", proc.stdout)
    assert message and int(message.group(1).replace(",", "")) >= 3 << 20, proc.stdout + proc.stderr
    assert "--output" not in message.group(0)
    assert "unexpected pos" not in proc.stdout + proc.stderr
    assert not [p for p in small_disk.rglob("*") if p.is_file()], "no partial payload left behind"


def test_no_space_at_the_write_call_is_a_clear_error(tiny_config, tmp_path, monkeypatch):
    """ENOSPC simulated where the file is written (a full disk without mounting one), after some bytes went out."""
    import errno

    from conftest import run_dict
    from trtbench.core import fsutil

    real_open = open

    artifacts = tmp_path / "out" / "artifacts"

    class FillsUp:
        """The artifacts' disk is full; the report's files (written through the same function) go elsewhere."""

        def __init__(self, path, mode):
            self.fh = real_open(path, mode)
            self.full = artifacts in Path(path).parents

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, data):
            if not self.full:
                return self.fh.write(data)
            self.fh.write(bytes(data)[:100])
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsutil, "open", FillsUp, raising=False)
    tiny_config["variants"] = ["eager", "traced"]
    tiny_config["benchmark"]["shapes"] = ["opt"]
    tiny_config["output"]["dir"] = str(tmp_path / "out")
    outcome = run_dict(tiny_config)
    assert outcome.exit_code == 1
    traced = [r for r in outcome.results if r.case.variant == "traced"]
    assert all(r.status == "failed" and r.rounds for r in traced)
    assert re.search(rf"DiskFullError: not enough space in {re.escape(str(tmp_path / 'out' / 'artifacts'))}: "
                     r"saving traced_fp32 needs [1-9][\d,]* bytes, [\d,]+ bytes are free", traced[0].reason)
    assert not list((tmp_path / "out" / "artifacts").iterdir())


def test_a_disk_that_fills_while_the_report_is_written_ends_in_a_clear_message(tiny_config, write_config, tmp_path,
                                                                                monkeypatch, capsys):
    """ENOSPC at the report's files: exit 1 with the folder named, no partial file, the measured cases in the
    journal, and the same command (with room again) resumes them rather than measuring again."""
    import errno

    from trtbench.core import fsutil
    from trtbench.results.journal import JOURNAL_NAME

    real_open, out = open, tmp_path / "out"

    def full(path, mode):  # the report's files; the artifacts (saved before) fit
        if out / "artifacts" in Path(path).parents:
            return real_open(path, mode)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsutil, "open", full, raising=False)
    tiny_config["benchmark"]["shapes"] = ["opt"]
    proc = run_into(out, tiny_config, write_config, capsys)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(rf"trtbench: error: not enough space in {re.escape(str(out))}\S*: \S+ needs [\d,]+ bytes.*"
                     r"journal.*resumes", proc.stderr), proc.stderr
    assert not (out / "results.json").exists() and not list(out.glob(".*.tmp")), "nothing half-written"
    assert (out / JOURNAL_NAME).stat().st_size > 0
    monkeypatch.setattr(fsutil, "open", real_open, raising=False)
    again = run_into(out, tiny_config, write_config, capsys)
    assert again.returncode == 0 and "resumed: kept" in again.stderr, again.stderr
