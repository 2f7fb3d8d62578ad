"""Every row shows the precision its kernels ran, read in the worker that times it, and a row whose kernels
contradict its precision fails saying so: here an fp32 row whose workers start with oneDNN's default math mode set
to bf16 (ONEDNN_DEFAULT_FPMATH_MODE=BF16, which torch's fp32 pin does not override)."""

from __future__ import annotations

import json

import copy

from conftest import TINY_CONFIG, run_dict


def _run(tmp_path, name: str):
    config = copy.deepcopy(TINY_CONFIG)
    config.update(variants=["eager", "ort"], output={"dir": str(tmp_path / name), "cold_start": False})
    config["benchmark"].update(shapes=["opt"], isolation="process", processes=1)
    outcome = run_dict(config)
    doc = json.loads((outcome.out_dir / "results.json").read_text())
    return outcome, {r["case"]["variant"]: r for r in doc["records"]}


def test_an_fp32_row_whose_workers_allow_bf16_math_fails_saying_so(tmp_path, monkeypatch):
    monkeypatch.setenv("ONEDNN_DEFAULT_FPMATH_MODE", "BF16")
    outcome, rows = _run(tmp_path, "bf32")
    eager, ort = rows["eager"], rows["ort"]
    assert eager["status"] == "failed" and "kernels contradict its precision" in eager["reason"], eager["reason"]
    assert "bf16" in eager["reason"] and eager["rounds"]  # flagged, its timings kept
    assert eager["metrics"]["kernels"]["source"] == "oneDNN verbose"
    assert ort["status"] == "ok" and ort["metrics"]["kernels"]["source"] == "ONNX Runtime profile"  # not oneDNN's
    assert outcome.exit_code == 1
