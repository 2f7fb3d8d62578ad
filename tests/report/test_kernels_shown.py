"""The precision each row's kernels ran, shown where the reduced-precision section lists rows (INT8's table and the
fp32 fallback's), and nothing where an older result set has none; a diagnosis's kernels line, openvino's kept nodes
with it. The proof read from real runtimes: tests/diagnose/ and tests/pipeline/test_fp32_fallback_run.py."""

from __future__ import annotations

import dataclasses

from trtbench.core.case import Case
from trtbench.core.record import Record
from trtbench.core.status import DiagnosisStatus
from trtbench.diagnose.harness import Diagnosis, Subject
from trtbench.measure.kernels import KernelGroup, KernelProof, KeptNodes
from trtbench.report.diagnosis import diagnosis_table
from trtbench.report.reduced import reduced_precision_markdown
from trtbench.results.resultset import ResultSet

INT8_PROOF = KernelProof("ONNX Runtime profile", (KernelGroup("conv", "i8", "CPUExecutionProvider", 2),))
KEPT_PROOF = KernelProof("OpenVINO runtimePrecision", (KernelGroup("conv", "bf16", "brgconv_avx512_amx", 5),
                                                       KernelGroup("conv", "f32", "jit_avx512", 1)), KeptNodes(1, 1))


def _record(variant: str, precision: str, proof: KernelProof | None = None, **kw) -> Record:
    case = Case(model="m", variant=variant, precision=precision, point="opt", input_shapes=((2, 1, 8, 8),), threads=2,
                device="cpu")
    rounds = [[5.0 * f for f in (0.98, 1.0, 1.03)] for _ in range(4)]
    return Record(case=case, environment="e", rounds=rounds, accuracy={"ok": True, "sqnr_db": 31.0},
                  metrics={"kernels": proof.to_dict()} if proof else {}, **kw)


def test_each_int8_and_fallback_row_shows_its_kernels():
    fallback = {"fp32_fallback": {"fp32_modules": ["blocks.1"], "missed": "", "full_accuracy": "max abs err 3",
                                  "fallback_cost": {"full_bf16_ms": 1.0, "slowdown": 1.2}}}
    results = ResultSet(environments={"e": {"id": "e"}})
    for record in (_record("eager", "fp32"), _record("ort", "int8", INT8_PROOF),
                   _record("openvino", "bf16", KEPT_PROOF, build={"info": fallback})):
        results.add(record)
    text = reduced_precision_markdown(results)
    int8_table = text[text.index("### m"):text.index("## Layers kept in fp32")]
    assert "| kept in fp32 | kernels | notes |" in int8_table
    assert "| conv i8 100% (CPUExecutionProvider) |" in int8_table
    fallback_table = text[text.index("## Layers kept in fp32"):]
    assert "| conv bf16 83%, f32 17% (brgconv_avx512_amx); kept f32 1 of 1 |" in fallback_table


def test_a_row_timed_before_kernels_were_read_shows_none():
    results = ResultSet(environments={"e": {"id": "e"}})
    for record in (_record("eager", "fp32"), _record("ort", "int8")):
        results.add(record)
    lines = reduced_precision_markdown(results).splitlines()
    header = next(line for line in lines if line.startswith("| variant |"))
    row = next(line for line in lines if line.startswith("| ort |"))
    cells = dict(zip(header.strip("|").split(" | "), row.strip("|").split(" | ")))
    assert cells["kernels"].strip() == "" and cells["SQNR dB"] == "31.0"  # nothing read, nothing said


def test_a_diagnosis_shows_its_whole_builds_kernels_and_openvinos_kept_nodes():
    diagnosis = Diagnosis(Subject("openvino", "bf16", "opt"), DiagnosisStatus.AGREES, output="max abs err 0.01",
                          kernels=KEPT_PROOF)
    line = next(line for line in diagnosis_table(diagnosis).splitlines() if line.startswith("Kernels"))
    assert line == ("Kernels of the whole build (OpenVINO runtimePrecision): conv bf16 83%, f32 17% "
                    "(brgconv_avx512_amx); kept f32 1 of 1.")
    assert diagnosis.to_dict()["kernels"]["kept"] == {"marked": 1, "ran_f32": 1}
    unread = dataclasses.replace(diagnosis, kernels=None)
    assert "Kernels" not in diagnosis_table(unread) and unread.to_dict()["kernels"] is None
