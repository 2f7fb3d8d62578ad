"""Torch-TensorRT variants: availability, config->API translation, range guard, segments, saving.

Translation tests run against tests/fake_torch_tensorrt.py (a FAKE that enforces the real 2.14.0
front-end's argument rules but builds no engine); nothing here builds an engine or measures one.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import fake_torch_tensorrt as fake_trt
from helpers.fakes import CUDA0, Net, context, dynamic_spec, install_fake, static_spec
from trtbench.artifacts.store import ArtifactSource, ArtifactStore, PublishCheck, verify_artifact, verify_manifest
from trtbench.config.config import InputConfig, Tolerance
from trtbench.core.errors import UserInputError
from trtbench.core.schema import from_dict
from trtbench.core.target import Target
from trtbench.variants import Built, BuildContext, get_variant
from trtbench.variants.trt_common import (DynamoOptions, TorchScriptOptions, check_input_ranges, fx_segments,
                                          has_ts_frontend, ts_segments)
from helpers.paths import REPO, TESTS

TRT_VARIANTS = ("trt", "trt_traced", "trt_scripted")
CPU = torch.device("cpu")


@pytest.fixture
def cuda_present(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


@pytest.fixture
def fake(monkeypatch):
    return install_fake(monkeypatch)


# --- availability -----------------------------------------------------------------------

@pytest.mark.parametrize("name", TRT_VARIANTS)
def test_without_cuda_every_trt_variant_is_unavailable(monkeypatch, name):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert get_variant(name).unavailable_reason(Target(torch.device("cuda"), "fp32")) == (
        "CUDA is not available on this machine (Torch-TensorRT builds TensorRT engines for NVIDIA GPUs)")


@pytest.mark.parametrize("name", TRT_VARIANTS)
def test_without_torch_tensorrt_every_trt_variant_is_unavailable(cuda_present, name):
    if importlib.util.find_spec("torch_tensorrt") is not None:
        pytest.skip("torch_tensorrt is installed here, so its absence cannot be observed")
    assert get_variant(name).unavailable_reason(Target(torch.device("cuda"), "fp32")) == (
        "torch_tensorrt is not installed (No module named 'torch_tensorrt')")


def test_a_torch_tensorrt_that_fails_to_import_is_a_skip_reason(cuda_present, monkeypatch, tmp_path):
    (tmp_path / "torch_tensorrt.py").write_text("raise KeyError('getpwuid(): uid not found: 43210')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch_tensorrt", raising=False)
    assert get_variant("trt").unavailable_reason(Target(torch.device("cuda"), "fp32")) == (
        "torch_tensorrt cannot be loaded (KeyError: 'getpwuid(): uid not found: 43210')")


def test_cpu_device_is_refused_even_with_cuda(cuda_present, fake):
    reason = get_variant("trt").unavailable_reason(Target(CPU, "fp32"))
    assert reason == "Torch-TensorRT needs a CUDA device, this run uses 'cpu'"


def test_available_with_cuda_and_torch_tensorrt(cuda_present, fake):
    for name in TRT_VARIANTS:
        assert get_variant(name).unavailable_reason(Target(torch.device("cuda:0"), "fp16")) is None


@pytest.mark.parametrize("name", ["trt_traced", "trt_scripted"])
def test_torchscript_variants_skip_when_the_ts_frontend_is_absent(monkeypatch, cuda_present, name):
    install_fake(monkeypatch, version="2.99.0", ts_frontend=False)
    assert get_variant(name).unavailable_reason(Target(torch.device("cuda"), "fp32")) == (
        "torch_tensorrt 2.99.0 has no TorchScript frontend (ir=\"ts\"); the 'trt' variant uses the dynamo frontend")
    assert get_variant("trt").unavailable_reason(Target(torch.device("cuda"), "fp32")) is None


@pytest.mark.parametrize("has_ts", [True, False])
def test_ts_frontend_detection_without_feature_flags(has_ts):
    trt = fake_trt.make_fake(ts_frontend=has_ts)
    del trt.ENABLED_FEATURES  # releases before the feature flags: the ts submodule tells
    assert has_ts_frontend(trt) is has_ts


def test_importing_trtbench_variants_does_not_import_torch_tensorrt():
    code = ("import sys, trtbench.variants as v; v.variant_names(); "
            "print('torch_tensorrt' in sys.modules)")
    root = REPO
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.strip() == "False"


# --- config -> torch_tensorrt.compile ----------------------------------------------------

def test_trt_exports_at_opt_and_compiles_with_config_ranges(fake):
    options = DynamoOptions(optimization_level=3, min_block_size=2, workspace_size=1 << 30,
                            torch_executed_ops=["torch.ops.aten.relu.default"], truncate_double=True, allow_tf32=False)
    built = get_variant("trt").build(Net().eval(), context(dynamic_spec(), options))

    (inp,) = fake_trt.calls_named(fake, "Input")
    assert inp == {"min_shape": (1, 3, 8, 8), "opt_shape": (2, 3, 8, 8), "max_shape": (4, 3, 8, 8),
                   "dtype": torch.float32}
    (call,) = fake_trt.calls_named(fake, "compile")
    program = call.pop("module")
    assert isinstance(program, torch.export.ExportedProgram)
    batch = next(n for n in program.graph.nodes if n.op == "placeholder" and n.name == "x").meta["val"].shape[0]
    assert isinstance(batch, torch.SymInt)  # dynamic batch, exported from the batch-2 opt example
    assert call.pop("inputs")[0].kwargs == inp
    assert call.pop("device").gpu_id == 0
    assert call == {"ir": "dynamo", "disable_tf32": True, "require_full_compilation": False,
                    "optimization_level": 3, "min_block_size": 2, "workspace_size": 1 << 30,
                    "torch_executed_ops": {"torch.ops.aten.relu.default"}, "truncate_double": True}
    assert fake_trt.calls_named(fake, "dynamo.compile")  # the frontend accepted every setting
    assert built.info["frontend"] == "dynamo" and built.info["torch_tensorrt"] == "2.14.0"
    assert built.info["compile_settings"]["device"] == "Device(type=DeviceType.GPU, gpu_id=0)"
    assert built.info["inputs"] == [{"name": "input", "min_shape": [1, 3, 8, 8], "opt_shape": [2, 3, 8, 8],
                                     "max_shape": [4, 3, 8, 8], "dtype": "torch.float32"}]
    json.dumps(built.info)


def test_trt_at_an_opt_of_1_exports_from_2_and_keeps_opt_1_in_the_engine_profile(fake):
    spec = InputConfig(name="input", min_shape=[1, 3, 8, 8], opt_shape=[1, 3, 8, 8], max_shape=[8, 3, 8, 8])
    spec.validate("inputs[0]")
    get_variant("trt").build(Net().eval(), context(spec, DynamoOptions()))
    (inp,) = fake_trt.calls_named(fake, "Input")
    assert (inp["min_shape"], inp["opt_shape"], inp["max_shape"]) == ((1, 3, 8, 8), (1, 3, 8, 8), (8, 3, 8, 8))
    (call,) = fake_trt.calls_named(fake, "compile")
    x = next(n for n in call["module"].graph.nodes if n.op == "placeholder" and n.name == "x").meta["val"]
    assert isinstance(x.shape[0], torch.SymInt)  # the batch stayed dynamic, over the config's whole range
    assert call["module"].range_constraints[x.shape[0].node.expr].lower == 1


def test_fp16_on_the_2_14_dynamo_frontend_is_carried_by_dtypes_only(fake):
    get_variant("trt").build(Net().eval().half(), context(dynamic_spec(), DynamoOptions(), torch.float16))
    (inp,) = fake_trt.calls_named(fake, "Input")
    assert inp["dtype"] == torch.float16
    (call,) = fake_trt.calls_named(fake, "compile")
    assert "enabled_precisions" not in call and "use_explicit_typing" not in call
    assert call["disable_tf32"] is False


@pytest.mark.parametrize("device, current, gpu_id", [(torch.device("cuda"), 1, 1), (torch.device("cuda:2"), 1, 2)])
def test_the_dynamo_frontend_gets_an_indexed_device(monkeypatch, device, current, gpu_id):
    """Bug: a bare 'cuda' gave Device(gpu_id=None) and the runtime targeted 'cuda:None'."""
    fake = install_fake(monkeypatch, current_device=current)
    get_variant("trt").build(Net().eval(), context(dynamic_spec(), DynamoOptions(), device=device))
    (call,) = fake_trt.calls_named(fake, "dynamo.compile")
    assert isinstance(call["device"], fake.Device) and call["device"].gpu_id == gpu_id


@pytest.mark.parametrize("name, parent", [("trt_traced", "traced"), ("trt_scripted", "scripted")])
@pytest.mark.parametrize("device", [torch.device("cuda"), CUDA0])
def test_the_torchscript_frontend_gets_a_torch_tensorrt_device(fake, name, parent, device):
    """Bug: ts/_compile_spec.py rejects any torch.device (TorchScriptDevice._from reads .gpu_id)."""
    model = Net().eval()
    script = torch.jit.trace(model, (torch.randn(2, 3, 8, 8),)) if parent == "traced" else torch.jit.script(model)
    get_variant(name).build(model, context(static_spec(), None, built={parent: Built(script)}, device=device))
    (call,) = fake_trt.calls_named(fake, "ts.compile")
    assert isinstance(call["device"], fake.Device) and call["device"].gpu_id == 0


@pytest.mark.parametrize("name", ["trt", "trt_traced"])
def test_engines_are_compiled_from_a_copy_without_grad(fake, name):
    model = Net().eval()
    traced = torch.jit.trace(model, (torch.randn(2, 3, 8, 8),))
    spec = dynamic_spec() if name == "trt" else static_spec()
    get_variant(name).build(model, context(spec, None, built={"traced": Built(traced)}))
    (call,) = fake_trt.calls_named(fake, "compile")
    compiled_from = call["module"]
    params = list(compiled_from.parameters() if name == "trt_traced" else compiled_from.state_dict.values())
    assert params and not any(p.requires_grad for p in params)
    assert all(p.requires_grad for p in [*model.parameters(), *traced.parameters()])  # the shared ones untouched


@pytest.mark.parametrize("name", TRT_VARIANTS)
def test_trt_variants_are_fed_contiguous_nchw_inputs_outside_the_timed_call(name):
    """Bug: the TensorRT runtime makes inputs contiguous inside each (timed) call; prepare() does it first."""
    channels_last = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last)
    variant = get_variant(name)
    prepared = variant.prepare(Built(lambda x: x), (channels_last,))
    assert prepared[0].is_contiguous() and torch.equal(prepared[0], channels_last)
    assert variant.run(Built(lambda x: x), prepared).is_contiguous()


@pytest.mark.parametrize("params, expected", [
    (fake_trt.DYNAMO_WITH_EXPLICIT_TYPING, {"use_explicit_typing": True}),
    (fake_trt.DYNAMO_WITH_ENABLED_PRECISIONS, {"enabled_precisions": {torch.float16}}),
])
def test_older_dynamo_frontends_get_their_precision_switch(monkeypatch, params, expected):
    fake = install_fake(monkeypatch, version="2.12.0", dynamo_params=params)
    get_variant("trt").build(Net().eval().half(), context(dynamic_spec(), DynamoOptions(), torch.float16))
    (call,) = fake_trt.calls_named(fake, "compile")
    assert {k: call[k] for k in ("use_explicit_typing", "enabled_precisions") if k in call} == expected


def test_unset_options_are_not_passed(fake):
    get_variant("trt").build(Net().eval(), context(dynamic_spec(), None))
    (call,) = fake_trt.calls_named(fake, "compile")
    assert set(call) == {"module", "ir", "inputs", "device", "disable_tf32", "require_full_compilation"}
    (settings,) = fake_trt.calls_named(fake, "dynamo.compile")
    assert set(settings) == {"arg_inputs", "device", "disable_tf32", "require_full_compilation"}


@pytest.mark.parametrize("name, parent", [("trt_traced", "traced"), ("trt_scripted", "scripted")])
def test_torchscript_frontend_translation(fake, name, parent):
    model = Net().eval()
    spec = static_spec()
    example = torch.randn(spec.opt_shape)
    script = torch.jit.trace(model, (example,)) if parent == "traced" else torch.jit.script(model)
    options = TorchScriptOptions(min_block_size=1, torch_executed_ops=["aten::relu"], truncate_double=True)
    ctx = context(spec, options, built={parent: Built(script)})
    built = get_variant(name).build(model, ctx)

    (inp,) = fake_trt.calls_named(fake, "Input")
    assert inp == {"shape": (2, 3, 8, 8), "dtype": torch.float32}
    (call,) = fake_trt.calls_named(fake, "compile")
    compiled_from = call.pop("module")
    assert isinstance(compiled_from, torch.jit.ScriptModule) and compiled_from is not script  # an inference copy
    call.pop("inputs")
    assert call.pop("device").gpu_id == 0
    assert call == {"ir": "ts", "disable_tf32": False, "require_full_compilation": False,
                    "enabled_precisions": {torch.float32}, "min_block_size": 1,
                    "torch_executed_ops": ["aten::relu"], "truncate_long_and_double": True}
    assert fake_trt.calls_named(fake, "ts.compile")  # the frontend accepted every setting
    assert built.info["frontend"] == "torchscript"
    assert built.info["segments"]["trt_segments"] == 0  # the fake built no engine


def test_a_setting_the_frontend_lacks_is_a_clear_error(fake):
    spec = static_spec()
    script = torch.jit.trace(Net().eval(), (torch.randn(spec.opt_shape),))
    ctx = context(spec, TorchScriptOptions(optimization_level=4), built={"traced": Built(script)})
    with pytest.raises(ValueError, match=r"torch_tensorrt 2\.14\.0 torchscript frontend does not accept "
                                         r"optimization_level"):
        get_variant("trt_traced").build(Net().eval(), ctx)


def test_options_schema_rejects_bad_values():
    with pytest.raises(UserInputError, match="optimization_level"):
        from_dict(DynamoOptions, {"optimization_level": 6}, "variants[1].trt")
    with pytest.raises(UserInputError, match=r"torch_executed_ops\[0\]: 'aten::add' is not an ATen overload name"):
        from_dict(DynamoOptions, {"torch_executed_ops": ["aten::add"]}, "variants[1].trt")
    with pytest.raises(UserInputError,
                       match=r"torch_executed_ops\[0\]: '.*' is not a TorchScript op name\n.*'aten::add'"):
        from_dict(TorchScriptOptions, {"torch_executed_ops": ["torch.ops.aten.add.Tensor"]}, "variants[1].trt_traced")
    with pytest.raises(UserInputError, match="require_full_compilation"):
        from_dict(TorchScriptOptions, {"require_full_compilation": True, "torch_executed_ops": ["aten::add"]}, "v")


# --- range guard ---------------------------------------------------------------------------

def test_range_guard_names_input_dim_and_range(fake):
    built = get_variant("trt").build(Net().eval(), context(dynamic_spec(), DynamoOptions()))
    assert built.module(torch.randn(4, 3, 8, 8)).shape == (4, 5)  # in range: reaches the (fake-compiled) module
    with pytest.raises(ValueError) as err:
        built.module(torch.randn(5, 3, 8, 8))
    assert str(err.value) == ("input 'input' dim 0 is 5, outside the range [1, 4] the TensorRT engine was built for "
                              "(min_shape [1, 3, 8, 8], max_shape [4, 3, 8, 8]); widen min_shape/max_shape in the "
                              "config and rebuild")


def test_range_guard_rank_and_count():
    spec = static_spec()
    with pytest.raises(ValueError, match=r"input 'image' has shape \[3, 8, 8\] \(3 dims\) but the TensorRT engine "
                                         r"was built for 4 dims"):
        check_input_ranges([spec], (torch.randn(3, 8, 8),))
    with pytest.raises(ValueError, match=r"takes 1 input\(s\), got 2"):
        check_input_ranges([spec], (torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8)))
    with pytest.raises(ValueError, match=r"dim 2 is 9, outside the range \[8, 8\]"):
        check_input_ranges([spec], (torch.randn(2, 3, 9, 8),))


# --- saving --------------------------------------------------------------------------------

def test_trt_saves_torchscript_and_exported_program(fake, tmp_path):
    variant = get_variant("trt")
    ctx = context(dynamic_spec(), DynamoOptions())
    built = variant.build(Net().eval(), ctx)
    artifacts = variant.save(built, tmp_path, "resnet_trt_fp32")
    ts_call, ep_call = fake_trt.calls_named(fake, "save")
    assert ts_call["output_format"] == "torchscript" and ts_call["file_path"] == str(tmp_path / "resnet_trt_fp32.ts")
    assert [t.shape for t in ts_call["arg_inputs"]] == [torch.Size([2, 3, 8, 8])]  # traced with opt-shape tensors
    assert ep_call["output_format"] == "exported_program"
    assert ep_call["file_path"] == str(tmp_path / "resnet_trt_fp32.pt2")
    assert [(a.path.name, a.loader, a.imports) for a in artifacts] == [
        ("resnet_trt_fp32.ts", "torch.jit.load", ["torch_tensorrt"]),
        ("resnet_trt_fp32.pt2", "torch.export.load", ["torch_tensorrt"])]
    program = variant.load(artifacts[1], CPU)
    for batch in (1, 4):  # the re-export kept the dynamic batch
        x = torch.randn(batch, 3, 8, 8)
        assert torch.allclose(program(x), built.state["compiled"](x))


class TwoInputs(torch.nn.Module):
    def forward(self, image, tokens):
        return image.mean(dim=(1, 2, 3)).sum() + tokens.float().mean(dim=1).sum()


def test_trt_saves_a_multi_input_dynamic_model_as_an_exported_program(fake, tmp_path):
    """Bug: save() re-exported with every unnamed Input's dynamic dim named "_0"; two inputs with
    different ranges then failed with "Found different definitions"."""
    specs = [InputConfig(name="image", min_shape=[1, 3, 8, 8], opt_shape=[2, 3, 8, 8], max_shape=[4, 3, 8, 8]),
             InputConfig(name="tokens", dtype="int64", value_range=[0, 9], min_shape=[1, 5], opt_shape=[3, 5],
                         max_shape=[8, 5])]
    for i, spec in enumerate(specs):
        spec.validate(f"inputs[{i}]")
    examples = (torch.randn(2, 3, 8, 8), torch.randint(0, 9, (3, 5)))
    ctx = BuildContext(device=CUDA0, precision="fp32", dtype=torch.float32, example_inputs=examples,
                       shape_inputs={"opt": examples}, input_specs=specs)
    variant = get_variant("trt")
    built = variant.build(TwoInputs(), ctx)
    artifacts = variant.save(built, tmp_path, "two_trt_fp32")
    program = variant.load(artifacts[1], CPU)
    for image_batch, token_batch in ((1, 8), (4, 1)):  # each input anywhere in its own range
        image, tokens = torch.randn(image_batch, 3, 8, 8), torch.randint(0, 9, (token_batch, 5))
        assert torch.allclose(program(image, tokens), TwoInputs()(image, tokens))


@pytest.fixture(scope="module")
def fake_shim(tmp_path_factory) -> Path:
    """A folder holding a ``torch_tensorrt`` module that imports the fake (one for this module: the same
    PYTHONPATH in each test lets the verify worker started for the first serve the others)."""
    shim = tmp_path_factory.mktemp("shim")
    (shim / "torch_tensorrt.py").write_text("import fake_torch_tensorrt  # noqa: F401  (registers the engine op)\n")
    return shim


@pytest.fixture
def fresh_processes_import_the_fake(fake_shim, monkeypatch):
    """A ``torch_tensorrt`` for fresh processes (the verify worker): a shim over the fake, whose import
    registers the stand-in engine op the fake's compiled modules call, as the real import registers
    ``tensorrt::execute_engine``."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(fake_shim), str(TESTS)]))


def saved_run(name: str, spec, out: Path) -> list[dict]:
    """Build ``name`` through the fake, save it with the ArtifactStore (its reload check included) and
    write the manifest, as a run does; the manifest entries."""
    model = Net().eval()
    example = torch.randn(spec.opt_shape)
    parents = {"traced": Built(torch.jit.trace(model, (example,))), "scripted": Built(torch.jit.script(model))}
    ctx = context(spec, None, built=parents, device=CPU)
    variant = get_variant(name)
    built = variant.build(model, ctx)
    inputs = {"opt": (example,), "min": (torch.randn(spec.min_shape),)}
    store = ArtifactStore(out / "artifacts")
    entries = store.save(ArtifactSource(variant, built, "fp32", CPU, model="net"),
                         PublishCheck(inputs, "opt", Tolerance(atol=1e-5, rtol=1e-5)))
    store.write_manifest({"inputs": []}, {})
    return entries


@pytest.mark.parametrize("name, spec", [("trt", dynamic_spec), ("trt_traced", static_spec),
                                        ("trt_scripted", dynamic_spec)])
def test_trt_artifacts_load_in_a_fresh_process_with_the_imports_their_manifest_names(
        fake, fresh_processes_import_the_fake, tmp_path, name, spec):
    entries = saved_run(name, spec(), tmp_path / "out")
    rows = verify_manifest(tmp_path / "out")
    assert entries and len(rows) == len(entries) and all(row["ok"] for row in rows), rows
    assert all(entry["imports"] == ["torch_tensorrt"] for entry in entries)


def test_a_trt_artifact_whose_manifest_omits_torch_tensorrt_does_not_verify(fake, fresh_processes_import_the_fake,
                                                                             tmp_path):
    """What the test above guards against: the saved modules call the engine op that only
    ``import torch_tensorrt`` registers, so a fresh process that skips the import cannot load them."""
    out = tmp_path / "out"
    entry = next(e for e in saved_run("trt_traced", static_spec(), out) if e["file"] == "trt_traced_fp32.ts")
    row = verify_artifact(dict(entry, imports=[]), out / "artifacts")
    assert not row["ok"] and "Unknown builtin op: fake_tensorrt::execute_engine" in row["error"], row


# --- fallback counting ---------------------------------------------------------------------

def test_fx_segments_counts_trt_and_pytorch_segments():
    class TorchPart(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) + 1

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_module("_run_on_acc_0", (x,))
    b = graph.call_module("_run_on_gpu_1", (a,))
    c = graph.call_module("_run_on_acc_2", (b,))
    graph.output(c)
    gm = torch.fx.GraphModule({"_run_on_acc_0": torch.nn.Identity(),
                               "_run_on_gpu_1": torch.fx.symbolic_trace(TorchPart()),
                               "_run_on_acc_2": torch.nn.Identity()}, graph)
    assert fx_segments(gm) == {"trt_segments": 2, "torch_segments": 1, "torch_ops": 2}


def test_ts_segments_of_a_module_without_engines():
    traced = torch.jit.trace(Net().eval(), (torch.randn(2, 3, 8, 8),))
    counts = ts_segments(traced)
    assert counts["trt_segments"] == 0 and counts["torch_segments"] == 1 and counts["torch_ops"] >= 4


@pytest.mark.parametrize("name, parent", [("trt_traced", "traced"), ("trt_scripted", "scripted")])
def test_the_torchscript_frontend_s_deprecation_becomes_the_row_s_note(fake, name, parent, tmp_path):
    from trtbench.building.stage import capture_warnings
    from trtbench.variants.trt_common import TORCHSCRIPT_TO_TRT, TS_FRONTEND_DEPRECATION

    model, variant = Net().eval(), get_variant(name)
    script = torch.jit.trace(model, (torch.randn(2, 3, 8, 8),)) if parent == "traced" else torch.jit.script(model)
    ctx = context(static_spec(), None, built={parent: Built(script)})
    built, said = capture_warnings(lambda: variant.build(model, ctx), variant.deprecations)
    assert TS_FRONTEND_DEPRECATION.note in said and not [line for line in said if "deprecated." in line], said
    _, saved = capture_warnings(lambda: variant.save(built, tmp_path, name), variant.deprecations)
    assert saved == [TORCHSCRIPT_TO_TRT.note]


def test_trt_s_torchscript_file_says_its_deprecation_and_its_pt2_successor(fake, tmp_path):
    from trtbench.building.stage import capture_warnings

    variant = get_variant("trt")
    built = variant.build(Net().eval(), context(dynamic_spec(), None))
    _, saved = capture_warnings(lambda: variant.save(built, tmp_path, "trt"), variant.deprecations)
    assert ("TorchScript (its .ts file): deprecated in torch 2.14; successor: its .pt2 file (ExportedProgram), saved "
            "beside it") in saved
    assert not [line for line in saved if "torch.jit" in line], "torch.jit's own warnings are said as the note"
