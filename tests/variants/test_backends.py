"""The compiler and runtime variants (compiled, aoti, ort, openvino) on a tiny model: build, accuracy
against eager, save, and reload in a fresh process through ``trtbench verify``.

One run builds them all (torch.compile and AOTInductor take seconds even for a tiny model), with exported, on a
dynamic batch served at opt 1 (min 1, opt 1, max 8), and the tests share it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
import torch

from trtbench.artifacts.store import read_manifest, sha256_of, verify_artifact
from trtbench.config.config import config_from_dict

NEW_VARIANTS = ["compiled", "aoti", "ort", "openvino"]
# serving at batch 1 with room for dynamic batching: the variants built by torch.export export from batch 2
INPUTS = [{"name": "input", "dtype": "float32", "min_shape": [1, 3, 16, 16], "opt_shape": [1, 3, 16, 16],
           "max_shape": [8, 3, 16, 16]}]


@pytest.fixture(scope="module")
def backends_run(tmp_path_factory):
    from conftest import TINY_CONFIG, run_dict

    out = tmp_path_factory.mktemp("backends") / "out"
    config = dict(TINY_CONFIG, inputs=INPUTS, variants=["eager", "exported", *NEW_VARIANTS],
                  benchmark={**TINY_CONFIG["benchmark"], "shapes": ["opt", "max"]},  # min is opt's shape
                  output={"dir": str(out), "cold_start": False})
    outcome = run_dict(config)
    return outcome, out


def rows_of(outcome, variant):
    return [r for r in outcome.results if r.case.variant == variant]


def test_every_new_variant_builds_runs_and_matches_eager_at_every_shape(backends_run):
    outcome, _ = backends_run
    assert outcome.exit_code == 0
    assert {r.case.variant for r in outcome.results} == {"eager", "exported", *NEW_VARIANTS}, \
        "build steps are not result rows"
    for r in outcome.results:
        assert r.status == "ok", (r.case.variant, r.reason)
        assert r.accuracy["ok"] and r.accuracy["max_abs_err"] <= 1e-4, (r.case.variant, r.accuracy)
    assert {r.case.point for r in rows_of(outcome, "ort")} == {"opt", "max"}


def test_compiled_reports_its_first_call_and_points_to_aoti(backends_run):
    outcome, _ = backends_run
    info = rows_of(outcome, "compiled")[0].build["info"]
    assert 0 < info["first_call_s"] <= rows_of(outcome, "compiled")[0].build["build_s"]
    assert info["graphs"] >= 1 and info["graph_breaks"] == 0
    assert info["artifact"].startswith("none") and "aoti" in info["artifact"]


def test_runtimes_use_the_runs_threads(backends_run):
    outcome, _ = backends_run
    threads = rows_of(outcome, "ort")[0].case.threads  # the run's (this process's count when it ran, which an
    # earlier test file in the same test process may have changed since)
    ort = rows_of(outcome, "ort")[0].build["info"]
    assert ort["intra_op_num_threads"] == threads
    assert ort["providers"] == ["CPUExecutionProvider"]
    assert ort["onnx"]["inputs"]["x"].startswith("[s")  # the batch dim stayed symbolic
    openvino = rows_of(outcome, "openvino")[0].build["info"]
    assert openvino["inference_num_threads"] == threads
    assert openvino["inference_precision"] == "f32"


def test_manifest_hashes_every_file_of_each_artifact(backends_run):
    _, out = backends_run
    entries = {a["file"]: a for a in read_manifest(out)["artifacts"]}
    assert set(entries) == {"exported_fp32.pt2", "aoti_fp32.pt2", "ort_fp32.onnx", "openvino_fp32.xml"}
    assert [c["file"] for c in entries["openvino_fp32.xml"]["companions"]] == ["openvino_fp32.bin"]
    for entry in entries.values():
        for file in [entry, *entry["companions"]]:
            path = out / "artifacts" / file["file"]
            assert file["sha256"] == sha256_of(path) and file["bytes"] == path.stat().st_size
        assert entry["reload_check"]["shapes"] == ["opt", "max"]
    assert entries["ort_fp32.onnx"]["settings"]["providers"] == [["CPUExecutionProvider", {}]]
    assert entries["aoti_fp32.pt2"]["outputs"] == ["output"]  # the exported program's, which aoti compiles


def test_trtbench_verify_reloads_each_artifact_with_its_runtime_and_times_the_cold_start(backends_run, capsys):
    """``trtbench verify`` through the command line's entry point in this process: each artifact still loads in a
    fresh process (the verify worker's forks); a process of its own for the command would only import torch
    again (tests/test_cli.py runs the command as one)."""
    from trtbench.cli import main

    _, out = backends_run
    capsys.readouterr()
    code = main(["verify", str(out)])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stdout + stderr
    assert "4 verified, 0 failed" in stdout
    cold_starts = re.findall(r"^ok .*load ([\d.]+) s, first call ([\d.]+) ms$", stdout, re.M)
    assert len(cold_starts) == 4 and all(float(s) > 0 and float(ms) > 0 for s, ms in cold_starts), stdout


def test_a_changed_weights_file_fails_verification(backends_run, tmp_path):
    _, out = backends_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    with (copy / "artifacts" / "openvino_fp32.bin").open("ab") as fh:
        fh.write(b"tampered")
    entry = next(a for a in read_manifest(copy)["artifacts"] if a["file"] == "openvino_fp32.xml")
    row = verify_artifact(entry, copy / "artifacts")
    assert not row["ok"] and "openvino_fp32.bin changed since it was saved" in row["error"]


def test_the_onnx_file_runs_with_onnxruntime_alone(backends_run):
    """The deployment path: a process that imports onnxruntime and numpy, not torch."""
    _, out = backends_run
    code = ("import sys, numpy as np, onnxruntime as ort; s = ort.InferenceSession(sys.argv[1]);"
            "y = s.run(None, {s.get_inputs()[0].name: np.zeros((3, 3, 16, 16), np.float32)})[0];"
            "assert 'torch' not in sys.modules; print(y.shape)")
    proc = subprocess.run([sys.executable, "-c", code, str(out / "artifacts" / "ort_fp32.onnx")],
                          capture_output=True, text=True, timeout=120, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(3, 10)"


def test_compiled_counts_the_recompilations_the_benchmarked_shapes_cause(tiny_config):
    """dynamic: false compiles each new shape: opt at build, then min and max once each, then nothing."""
    from trtbench.variants import BuildContext, get_variant
    from trtbench.variants.compiled import CompileOptions

    config = config_from_dict(tiny_config)
    model = __import__("toy_models").tiny_cnn().eval()
    shapes = {label: (torch.randn([b, 3, 16, 16]),) for label, b in (("min", 1), ("opt", 2), ("max", 4))}
    ctx = BuildContext(device=torch.device("cpu"), precision="fp32", dtype=torch.float32,
                       example_inputs=shapes["opt"], shape_inputs=shapes, input_specs=config.inputs,
                       options=CompileOptions(dynamic=False))
    variant = get_variant("compiled")
    with torch.no_grad():
        built = variant.build(model, ctx)
    assert variant.run_info(built) == {"recompilations": 0}
    with torch.inference_mode():
        for _ in range(2):
            for inputs in shapes.values():
                torch.testing.assert_close(variant.run(built, variant.prepare(built, inputs)), model(*inputs))
    assert variant.run_info(built) == {"recompilations": 2}


def test_a_dynamic_batch_served_at_opt_1_exports_from_2_and_runs_at_1_and_8(backends_run):
    """min 1, opt 1, max 8 (serving at batch 1 with room for dynamic batching): the variants built by
    torch.export build, the ONNX graph keeps its batch dim symbolic, and every row times batch 1 at opt."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    from conftest import by_point

    outcome, out = backends_run
    rows = by_point(outcome.results)
    for variant in ("exported", "aoti", "ort", "openvino"):
        for point, batch in (("opt", 1), ("max", 8)):
            row = rows[(variant, point)]
            assert row.status == "ok" and row.accuracy["ok"], (variant, point, row.reason)
            assert row.case.input_shapes == ((batch, 3, 16, 16),)
    graph = onnx.load(out / "artifacts" / "ort_fp32.onnx").graph
    (dim, *_), = [value.type.tensor_type.shape.dim for value in graph.input]
    assert dim.dim_param and not dim.HasField("dim_value")  # the batch stayed symbolic
    session = ort.InferenceSession(str(out / "artifacts" / "ort_fp32.onnx"), providers=["CPUExecutionProvider"])
    for batch in (1, 8):
        (logits,) = session.run(None, {"x": np.zeros((batch, 3, 16, 16), np.float32)})
        assert logits.shape == (batch, 10)


def test_the_export_example_grows_only_a_dynamic_dim_that_is_1():
    from trtbench.config.config import InputConfig
    from trtbench.variants.exported import export_examples

    specs = [InputConfig(name="a", min_shape=[1, 3, 1, 4], opt_shape=[1, 3, 1, 4], max_shape=[8, 3, 1, 4]),
             InputConfig(name="b", min_shape=[1, 2], opt_shape=[4, 2], max_shape=[8, 2]),
             InputConfig(name="c", min_shape=[1, 5], opt_shape=[1, 5], max_shape=[1, 5])]
    a = torch.randn(1, 3, 1, 4).contiguous(memory_format=torch.channels_last)
    b, c = torch.randn(4, 2), torch.randn(1, 5)
    grown_a, grown_b, grown_c = export_examples(specs, (a, b, c))
    assert grown_a.shape == (2, 3, 1, 4) and grown_a.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(grown_a[1], a[0])
    assert grown_b is b and grown_c is c  # opt not 1, or a static dim: as given
