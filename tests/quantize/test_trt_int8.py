"""``trt`` at int8: NVIDIA ModelOpt quantizes within the accuracy budget (the fallback keeps layers in
floating point through ModelOpt's own config), Torch-TensorRT compiles the quantized model for the
config's min..max, the engine is judged again, and its files load with ModelOpt imported. Without CUDA
(here) the row is skipped with the reason, never failed and never passed.

The build runs through FAKES of both libraries (neither installs without CUDA): tests/fake_torch_tensorrt.py
and tests/helpers/fakes.py's ModelOpt, whose quantize here also flips the sign of a chosen
layer's weights unless the config disables that layer's quantizers (a quantization error made large, so
the fallback has something to find). tests/quantize/test_modelopt_contract.py holds the calls against the wheels."""

from __future__ import annotations

import json
import sys

import pytest
import torch

import fake_torch_tensorrt as fake_trt
from helpers.fakes import CUDA0, build_trt_int8, install_fakes
from trtbench.cli import main
from trtbench.config.config import config_from_dict
from trtbench.config.plan import resolve, why_unavailable
from trtbench.variants import get_variant


def test_trt_has_an_int8_path_that_cannot_run_without_cuda(tiny_config):
    tiny_config.update(precisions=["fp32", "int8"], variants=["eager", "trt", "trt_traced"])
    (group,) = resolve(config_from_dict(tiny_config)).groups
    assert group.unavailable["trt@int8"] == why_unavailable("trt", torch.device("cpu"), "int8")
    assert "CUDA is not available" in group.unavailable["trt@int8"]
    assert "has no INT8 path" in group.unavailable["trt_traced@int8"]


def test_with_cuda_and_torch_tensorrt_but_no_modelopt_trt_int8_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_tensorrt", fake_trt.make_fake())
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setitem(sys.modules, "modelopt", None)  # find_spec: not installed
    assert "NVIDIA ModelOpt is not installed" in why_unavailable("trt", CUDA0, "int8")
    assert why_unavailable("trt", CUDA0, "fp32") is None  # fp32 and fp16 need no ModelOpt


def test_with_cuda_torch_tensorrt_and_modelopt_trt_int8_can_run(monkeypatch):
    install_fakes(monkeypatch)
    assert why_unavailable("trt", CUDA0, "int8") is None


def test_the_int8_build_quantizes_calibrates_compiles_for_the_range_and_judges_the_engine(monkeypatch):
    built, trt, recorder = build_trt_int8(monkeypatch)
    assert [c[0] for c in recorder.calls] == ["mtq.quantize", "export_torch_mode"]  # full INT8 met the budget
    (compile_call,) = fake_trt.calls_named(trt, "dynamo.compile")
    assert compile_call["min_block_size"] == 1
    (spec,) = fake_trt.calls_named(trt, "Input")  # the engine's range: the config's min..max
    assert (spec["min_shape"], spec["opt_shape"], spec["max_shape"]) == ((1, 3, 8, 8), (2, 3, 8, 8), (4, 3, 8, 8))
    info = built.info
    assert info["quantizer"] == "modelopt" and info["accuracy"]["ok"] and info["int8"]["fp32_modules"] == []
    assert info["compile_settings"]["min_block_size"] == 1
    with pytest.raises(ValueError, match="outside the range"):  # the engine's range guard
        built.module(torch.randn(8, 3, 8, 8))


def test_a_weakly_typed_dynamo_frontend_is_told_int8_as_modelopts_example_does(monkeypatch):
    _, trt, _ = build_trt_int8(monkeypatch, dynamo_params=fake_trt.DYNAMO_WITH_ENABLED_PRECISIONS)
    (compile_call,) = fake_trt.calls_named(trt, "dynamo.compile")
    assert compile_call["enabled_precisions"] == {torch.float32, torch.int8}


def test_the_fallback_keeps_the_layer_that_breaks_the_budget_out_through_modelopts_config(monkeypatch):
    built, _, recorder = build_trt_int8(monkeypatch, sensitive=("fc",))
    info = built.info["int8"]
    assert info["fp32_modules"] == ["fc"] and not info["full_int8_accuracy"]["ok"] and built.info["accuracy"]["ok"]
    configs = [c[1][1] for c in recorder.calls if c[0] == "mtq.quantize"]
    assert configs[-1]["quant_cfg"][-1] == {"quantizer_name": "fc.*", "enable": False}
    assert set(info["sensitivity_sqnr_db"]) == {"conv", "fc"}


def test_the_int8_engine_saves_as_the_trt_variant_does_and_loads_with_modelopt_imported(monkeypatch, tmp_path):
    built, _, _ = build_trt_int8(monkeypatch)
    artifacts = get_variant("trt").save(built, tmp_path, "trt_int8")
    assert [a.path.name for a in artifacts] == ["trt_int8.ts", "trt_int8.pt2"]
    assert all(a.imports == ["torch_tensorrt", "modelopt.torch.quantization"] and a.path.is_file() for a in artifacts)


def test_a_cli_run_skips_trt_int8_with_the_reason(tiny_config, write_config, tmp_path, capsys):
    """Through the command line's entry point in this process (a process of its own, and its supervisor's run
    process, would only import torch twice more: tests/test_cli.py runs the command as one)."""
    tiny_config.update(precisions=["fp32", "int8"], variants=["eager", "trt"])
    tiny_config["benchmark"]["shapes"] = ["opt"]
    tiny_config["output"].update(save_artifacts=False)
    code = main(["--config", str(write_config(tiny_config)), "--output", str(tmp_path / "out"), "--quiet"])
    assert code == 0, capsys.readouterr().err
    records = {(r["case"]["variant"], r["case"]["precision"]): r
               for r in json.loads((tmp_path / "out" / "results.json").read_text())["records"]}
    trt_int8 = records[("trt", "int8")]
    assert trt_int8["status"] == "skipped" and "CUDA is not available" in trt_int8["reason"]
    assert not trt_int8["rounds"] and trt_int8["parity"] is None
    assert records[("eager", "fp32")]["status"] == "ok"
