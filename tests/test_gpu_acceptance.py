"""scripts/gpu_acceptance_check.py: the verdicts of the first GPU run, from results.json and the manifest."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from trtbench.config.config import config_from_dict
from trtbench.config.plan import resolve, why_unavailable
from trtbench.results.resultset import ResultSet
from trtbench.pipeline.runner import run_config

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_acceptance_check.py"
spec = importlib.util.spec_from_file_location("gpu_acceptance_check", SCRIPT)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

VARIANTS = ("eager", "traced", "scripted", "trt", "trt_traced", "trt_scripted", "compiled")
# What trtbench records for the CPU-only and ONNX Runtime GPU variants of resnet34.yaml on --device cuda
# in the trtbench image (which has no onnxruntime): each variant's own unavailable_reason.
SKIPPED_IN_IMAGE = {
    "ort": "ort runs ONNX Runtime on the CPU and this run uses 'cuda:0'; list ort_cuda or ort_trt",
    "openvino": "openvino runs on the CPU and this run uses 'cuda:0'",
    "ort_cuda": "onnxruntime is not installed (pip install onnxruntime-gpu)",
    "ort_trt": "onnxruntime is not installed (pip install onnxruntime-gpu)",
}
SHAPES = ("min", "opt", "max")


def v1_row(variant, precision, shape, median, status="ok", parity_ok=True, reason=""):
    ran = status != "skipped"
    return {"variant": variant, "precision": precision, "shape": shape, "input_shapes": "2x3x8x8",
            "status": status, "reason": reason, "parity": {"ok": parity_ok} if ran else None,
            "samples_ms": [median] * 3 if median and ran else None}


def skipped_row(variant, precision, shape, reason):
    return v1_row(variant, precision, shape, None, status="skipped", reason=reason)


def write_run(out: Path, rows: list[dict], trt_saved=True) -> Path:
    (out / "artifacts").mkdir(parents=True)
    (out / "results.json").write_text(json.dumps({"schema_version": 1, "environment": {"device": "cuda:0"},
                                                  "config": {},
                                                        "results": rows}))
    artifacts = [{"variant": v, "precision": p, "file": f"{v}_{p}.ts"} for v, p in check.REQUIRED if trt_saved]
    (out / "artifacts" / "manifest.json").write_text(json.dumps({"artifacts": artifacts}))
    return out


def no_int8_path(variant: str) -> str:
    return why_unavailable(variant, torch.device("cuda:0"), check.INT8)


def all_rows(fp16_trt_ms=1.0):
    """A CUDA run of the acceptance config: every row that can run in the image ran (trt the only one at
    int8), the rest skipped."""
    ran = [v1_row(v, p, s, fp16_trt_ms if (v.startswith("trt") and p == "fp16") else 4.0)
           for v in VARIANTS for p in check.PRECISIONS for s in SHAPES]
    ran += [v1_row("trt", check.INT8, s, 0.5) for s in SHAPES]
    no_int8 = [skipped_row(v, check.INT8, s, no_int8_path(v)) for v in VARIANTS if v != "trt" for s in SHAPES]
    return ran + no_int8 + [skipped_row(v, p, s, reason) for v, reason in SKIPPED_IN_IMAGE.items()
                            for p in (*check.PRECISIONS, check.INT8) for s in SHAPES]


def replace_row(rows, variant, precision, shape, new_row):
    (i,) = [i for i, r in enumerate(rows) if (r["variant"], r["precision"], r["shape"]) == (variant, precision, shape)]
    return rows[:i] + [new_row] + rows[i + 1:]


def test_a_good_run_passes_every_check_and_warns_of_each_skipped_variant(tmp_path, capsys):
    assert check.main(str(write_run(tmp_path, all_rows())), "0") == 0
    lines = capsys.readouterr().out.splitlines()
    warnings, verdicts = lines[:10], lines[10:]
    assert [line.split(":")[0] for line in verdicts] == [
        "PASS  every TRT row ok", "PASS  skipped rows may be skipped here", "PASS  parity ok",
        "PASS  TRT fp16 faster than eager fp16 and compiled fp16 at opt", "PASS  artifacts reload in a fresh process"]
    assert verdicts[0].endswith("every TRT row ok: 21 rows")  # 3 variants x fp32, fp16 and trt int8, x 3 shapes
    assert "54 rows, each with a reason that holds here" in verdicts[1]
    assert "45 rows" in verdicts[2]  # parity: only the rows that ran
    assert ("over eager fp16 (4.000 ms): trt 4.00x, trt_traced 4.00x, trt_scripted 4.00x; "
            "over compiled fp16 (4.000 ms): trt 4.00x") in verdicts[3]
    assert [line.split(" (")[0] for line in warnings[:6]] == [
        f"WARN  skipped {v}" for v in ("eager", "traced", "scripted", "trt_traced", "trt_scripted", "compiled")]
    assert all("(int8/min int8/opt int8/max): " in line and "has no INT8 path" in line for line in warnings[:5])
    warnings = warnings[6:]
    where = "(fp32/min fp32/opt fp32/max fp16/min fp16/opt fp16/max int8/min int8/opt int8/max)"
    assert warnings[0] == f"WARN  skipped ort {where}: {SKIPPED_IN_IMAGE['ort']}"
    assert warnings[1] == f"WARN  skipped openvino {where}: {SKIPPED_IN_IMAGE['openvino']}"
    for line, variant in zip(warnings[2:], ("ort_cuda", "ort_trt")):  # and why the image lacks onnxruntime-gpu
        assert line.startswith(f"WARN  skipped {variant} {where}: {SKIPPED_IN_IMAGE[variant]} [the trtbench image "
                               f"installs no onnxruntime-gpu: ")
        assert "links TensorRT 10 (libnvinfer.so.10) while the image has TensorRT 11" in line


def test_each_check_fails_on_its_own_evidence(tmp_path, capsys):
    rows = all_rows(fp16_trt_ms=5.0)
    failed = v1_row("trt_scripted", "fp16", "max", None, status="failed",
                    reason="build failed: RuntimeError: Invalid device string: 'cuda:None'")
    rows = replace_row(rows, "trt_scripted", "fp16", "max", failed)
    missed = v1_row("trt", "int8", "min", None, status="failed", reason="INT8 misses the accuracy budget: SQNR 12 dB")
    rows = replace_row(rows, "trt", "int8", "min", missed)
    rows = replace_row(rows, "eager", "fp32", "min", v1_row("eager", "fp32", "min", 4.0, parity_ok=False))
    rows = replace_row(rows, "ort", "fp32", "min", skipped_row("ort", "fp32", "min", ""))
    assert check.main(str(write_run(tmp_path, rows, trt_saved=False)), "1") == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("WARN")]
    assert all(line.startswith("FAIL") for line in lines), lines
    assert "trt_scripted fp16 max failed (build failed: RuntimeError: Invalid device string: 'cuda:None')" in lines[0]
    assert "trt int8 min failed (INT8 misses the accuracy budget: SQNR 12 dB)" in lines[0]
    assert lines[1].endswith("skipped rows may be skipped here: ort fp32 min skipped with no reason")
    assert "eager fp32 min ok parity failed" in lines[2]
    assert "not saved: trt fp32" in lines[4] and "trtbench verify exited 1" in lines[4]


def test_trt_fp16_must_beat_eager_and_compiled_at_fp16_not_only_eager_fp32(tmp_path, capsys):
    """Bug: the check compared TRT fp16 with eager fp32 only, which passed while TRT was slower than eager fp16."""
    rows = all_rows(fp16_trt_ms=2.0)  # 2x eager fp32 (4 ms)
    rows = replace_row(rows, "eager", "fp16", "opt", v1_row("eager", "fp16", "opt", 1.5))
    assert check.main(str(write_run(tmp_path, rows)), "0") == 1
    (verdict,) = [line for line in capsys.readouterr().out.splitlines() if "TRT fp16 faster" in line]
    assert verdict.startswith("FAIL") and "over eager fp16 (1.500 ms): trt 0.75x" in verdict, verdict


@pytest.mark.parametrize("compiled_fp16, passes, named", [
    (v1_row("compiled", "fp16", "opt", 0.5), False, "over compiled fp16 (0.500 ms): trt 0.50x"),
    (skipped_row("compiled", "fp16", "opt", "compiled fp16 exceeded max_build_s"), True,
     "compiled fp16 not timed (skipped: compiled fp16 exceeded max_build_s)"),
    (skipped_row("compiled", "fp16", "opt", ""), False, "compiled fp16 not timed (skipped: no reason)"),
    (None, False, "compiled fp16 not timed (not in the run)"),
])
def test_compiled_fp16_is_beaten_or_why_it_was_not_timed_is_named(tmp_path, capsys, compiled_fp16, passes, named):
    rows = all_rows()
    (i,) = [i for i, r in enumerate(rows) if (r["variant"], r["precision"], r["shape"]) == ("compiled", "fp16", "opt")]
    rows = rows[:i] + ([compiled_fp16] if compiled_fp16 else []) + rows[i + 1:]
    check.main(str(write_run(tmp_path, rows)), "0")
    (verdict,) = [line for line in capsys.readouterr().out.splitlines() if "TRT fp16 faster" in line]
    assert verdict.startswith("PASS" if passes else "FAIL") and named in verdict, verdict


@pytest.mark.parametrize("variant, precision, reason, problem", [
    ("trt", "fp16", "CUDA is not available on this machine (Torch-TensorRT builds TensorRT engines for NVIDIA GPUs)",
     "trt fp16 must run on a GPU machine"),
    ("trt_scripted", "fp16", "torch_tensorrt 2.14.0 has no TorchScript frontend (ir=\"ts\"); the 'trt' variant uses "
                             "the dynamo frontend", "trt_scripted fp16 must run on a GPU machine"),
    ("trt", "int8", "NVIDIA ModelOpt is not installed: pip install nvidia-modelopt",
     "trt int8 must run on a GPU machine"),
    ("eager", "fp16", "CUDA is not available on this machine", "eager fp16 must run on a GPU machine"),
    ("openvino", "fp16", "", "skipped with no reason"),
    # traced runs anywhere: the reason is false
    ("traced", "fp16", "it felt slow", "yet traced can run on cuda:0 here"),
])
def test_a_skipped_row_fails_unless_it_may_be_skipped_here(tmp_path, capsys, variant, precision, reason, problem):
    """A skipped TensorRT or eager row fails whatever its reason (on this CUDA-less machine trtbench itself
    would skip trt too, so the rule cannot lean on that judgement); any other needs a reason that holds here."""
    rows = replace_row(all_rows(), variant, precision, "opt", skipped_row(variant, precision, "opt", reason))
    assert check.main(str(write_run(tmp_path, rows)), "0") == 1
    (verdict,) = [line for line in capsys.readouterr().out.splitlines() if "skipped rows may be skipped here" in line]
    assert verdict.startswith("FAIL") and problem in verdict, verdict


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    from conftest import TINY_CONFIG

    out = tmp_path_factory.mktemp("run") / "out"
    run_config(resolve(config_from_dict(dict(TINY_CONFIG, variants=["eager", "traced"],
                                             output={"dir": str(out), "save_artifacts": False, "cold_start": False}))))
    return out


def test_reads_the_results_json_trtbench_writes(cpu_run):
    rows = check.result_rows(ResultSet.load(cpu_run))
    assert {(r["variant"], r["shape"]) for r in rows} == {(v, s) for v in ("eager", "traced")
                                                          for s in ("min", "opt", "max")}
    assert all(r["status"] == "ok" and r["parity_ok"] is True and r["median_ms"] > 0 for r in rows)
    ok, detail = check.check_trt_rows(rows)
    assert not ok and detail.startswith("missing trt fp32 max")
