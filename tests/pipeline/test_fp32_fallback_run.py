"""fp16's and bf16's fp32 fallback through the real pipeline: the planted bf16 resolution fault
(the built-in planted_net, trtbench/models/planted.py) at two positions, one run of both nets at fp32 and bf16 on
eager and exported. Eager bf16
misses its tolerance, the fallback keeps exactly the planted module in fp32 in the bf16 copy, and both rows then
pass, saying so in results.json's build info and in report.md's table, with the kernels each ran (the kept
module's convolution in f32, read from oneDNN where the fallback's build ran)."""

from __future__ import annotations

import json

import pytest

from conftest import run_dict
from helpers.planted import planted_config
from trtbench.core.env import bf16_compute
from trtbench.measure.kernels import KernelProof
from trtbench.models.planted import planted_path

NATIVE_HERE = bf16_compute("cpu").mode == "native"

POSITIONS = (1, 3)


@pytest.fixture(scope="module")
def fallback_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fallback")
    config = planted_config(tmp, "bf16", POSITIONS[0])
    model = config.pop("model")
    config["models"] = [{**model, "kwargs": {"fault": "bf16", "at": at}} for at in POSITIONS]
    config.update(variants=["eager", "exported", "openvino"],
                  benchmark={"mode": "fixed", "warmup": 1, "warmup_s": 0, "iterations": 3, "measure_ceiling": False,
                             "isolation": "in_process"})
    config["output"]["cold_start"] = False
    outcome = run_dict(config)
    return json.loads((outcome.out_dir / "results.json").read_text()), (outcome.out_dir / "report.md").read_text()


@pytest.mark.parametrize("at", POSITIONS)
def test_the_planted_module_alone_stays_fp32_and_the_rows_pass(fallback_run, at):
    doc, report = fallback_run
    rows = {(r["case"]["variant"], r["case"]["precision"]): r for r in doc["records"]
            if f"at={at}" in r["case"]["model"]}
    assert set(rows) == {(v, p) for v in ("eager", "exported", "openvino") for p in ("fp32", "bf16")}
    for variant in ("eager", "exported"):
        bf16 = rows[(variant, "bf16")]
        assert bf16["status"] == "ok" and bf16["parity"]["ok"], bf16
        facts = bf16["build"]["info"]["fp32_fallback"]
        assert facts["fp32_modules"] == [planted_path(at)]
        assert facts["builds"] == 2  # the full bf16 copy, then the planted module kept
        assert facts["fallback_cost"]["slowdown"] > 0 and facts["fallback_cost"]["full_bf16_ms"] > 0
        assert "fp32_fallback" not in rows[(variant, "fp32")]["build"]["info"]
        proof = KernelProof.from_dict(facts["kernels"])  # the fallback's build: eager with the module kept
        assert proof.source == "oneDNN verbose" and "f32" in proof.shares("conv"), proof
    openvino = rows[("openvino", "bf16")]
    if NATIVE_HERE:  # its marked nodes proven f32 by the compiled model's runtimePrecision, the rest bf16
        kept = openvino["metrics"]["kernels"]["kept"]
        assert openvino["status"] == "ok" and kept["marked"] >= 1 and kept["ran_f32"] == kept["marked"], openvino
        assert openvino["build"]["info"]["f32_nodes"] >= 1 and "kept f32" in openvino["metrics"]["kernels"]["text"]
    else:
        assert openvino["status"] == "skipped" and "no bf16 kernels" in openvino["reason"]
    section = report[report.index("## Layers kept in fp32 (fp16, bf16)"):]
    for variant in ("eager", "exported"):
        start = f"| {variant} | bf16 | opt | {planted_path(at)} |"
        row = next(line for line in section.splitlines() if line.startswith(start))
        assert f"| {rows[(variant, 'bf16')]['metrics']['kernels']['text']} |" in row
    if NATIVE_HERE:  # openvino's row shows its kept nodes, proven f32
        assert f"| {openvino['metrics']['kernels']['text']} |" in section
