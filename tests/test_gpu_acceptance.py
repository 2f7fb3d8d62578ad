"""scripts/gpu_acceptance_check.py: the verdicts of the first GPU run, from results.json and the manifest."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from trtbench.config import config_from_dict
from trtbench.plan import resolve
from trtbench.resultset import ResultSet
from trtbench.runner import run_config

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_acceptance_check.py"
spec = importlib.util.spec_from_file_location("gpu_acceptance_check", SCRIPT)
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

VARIANTS = ("eager", "traced", "scripted", "trt", "trt_traced", "trt_scripted")


def v1_row(variant, precision, shape, median, status="ok", parity_ok=True):
    return {"variant": variant, "precision": precision, "shape": shape, "input_shapes": "2x3x8x8",
            "status": status, "reason": "", "parity": {"ok": parity_ok},
            "samples_ms": [median] * 3 if median else None}


def write_run(out: Path, rows: list[dict], trt_saved=True) -> Path:
    (out / "artifacts").mkdir(parents=True)
    (out / "results.json").write_text(json.dumps({"schema_version": 1, "environment": {"device": "cuda:0"}, "config": {},
                                                        "results": rows}))
    artifacts = [{"variant": v, "precision": p, "file": f"{v}_{p}.ts"} for v in check.TRT for p in check.PRECISIONS
                 if trt_saved]
    (out / "artifacts" / "manifest.json").write_text(json.dumps({"artifacts": artifacts}))
    return out


def all_rows(fp16_trt_ms=1.0):
    return [v1_row(v, p, s, fp16_trt_ms if (v.startswith("trt") and p == "fp16") else 4.0)
            for v in VARIANTS for p in ("fp32", "fp16") for s in ("min", "opt", "max")]


def test_a_good_run_passes_every_check(tmp_path, capsys):
    assert check.main(str(write_run(tmp_path, all_rows())), "0") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "PASS  every TRT row ok", "PASS  parity ok", "PASS  TRT fp16 faster than eager fp32 at opt",
        "PASS  artifacts reload in a fresh process"]
    assert "trt 4.00x, trt_traced 4.00x, trt_scripted 4.00x" in lines[2]


def test_each_check_fails_on_its_own_evidence(tmp_path, capsys):
    rows = all_rows(fp16_trt_ms=5.0)
    rows[-1] = v1_row("trt_scripted", "fp16", "max", None, status="failed")
    rows[-1]["reason"] = "build failed: RuntimeError: Invalid device string: 'cuda:None'"
    rows[0]["parity"]["ok"] = False
    assert check.main(str(write_run(tmp_path, rows, trt_saved=False)), "1") == 1
    lines = capsys.readouterr().out.splitlines()
    assert all(line.startswith("FAIL") for line in lines), lines
    assert "trt_scripted fp16 max failed (build failed: RuntimeError: Invalid device string: 'cuda:None')" in lines[0]
    assert "eager fp32 min ok parity failed" in lines[1]
    assert "not saved: trt fp32" in lines[3] and "trtbench verify exited 1" in lines[3]


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    from conftest import TINY_CONFIG

    out = tmp_path_factory.mktemp("run") / "out"
    run_config(resolve(config_from_dict(dict(TINY_CONFIG, variants=["eager", "traced"], output={"dir": str(out)}))))
    return out


def test_reads_the_results_json_trtbench_writes(cpu_run):
    rows = check.result_rows(ResultSet.load(cpu_run))
    assert {(r["variant"], r["shape"]) for r in rows} == {(v, s) for v in ("eager", "traced")
                                                          for s in ("min", "opt", "max")}
    assert all(r["status"] == "ok" and r["parity_ok"] is True and r["median_ms"] > 0 for r in rows)
    ok, detail = check.check_trt_rows(rows)
    assert not ok and detail.startswith("missing trt fp32 max")
