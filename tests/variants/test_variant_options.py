"""Variant options users reach for (traced/exported strict, cuda_graphs, compile and AOTInductor settings),
the onnx build step in a config, and variants whose runtime is missing."""

from __future__ import annotations

import pytest
import torch

from trtbench.artifacts.store import read_manifest, verify_artifact
from trtbench.config.config import config_from_dict
from trtbench.core.errors import UserInputError


def run(config, tmp_path, save=False):
    from conftest import run_dict

    config["output"] = {"dir": str(tmp_path / "out"), "save_artifacts": save, "cold_start": False}
    return run_dict(config)


def test_listing_the_onnx_build_step_says_to_list_ort(tiny_config):
    tiny_config["variants"] = ["eager", "onnx"]
    with pytest.raises(UserInputError) as info:
        config_from_dict(tiny_config)
    assert info.value.where == "variants[1]"
    assert "'onnx' is a build step" in info.value.problem
    assert info.value.hint.startswith("list ort instead") and "openvino" in info.value.hint


@pytest.mark.parametrize("options, where, text", [
    ({"compiled": {"mode": "fastest"}}, "variants[1].compiled.mode", "unknown value 'fastest'"),
    ({"compiled": {"backend": "eager", "mode": "max-autotune"}}, "variants[1].compiled.mode", "Inductor mode"),
    ({"compiled": {"cuda_graphs": True, "mode": "reduce-overhead"}}, "variants[1].compiled.cuda_graphs",
     "already replays CUDA graphs"),
    ({"aoti": {"inductor_configs": {"max_autotun": True}}}, "variants[1].aoti.inductor_configs.max_autotun",
     "not an Inductor config setting"),
    ({"ort": {"graph_optimization": "max"}}, "variants[1].ort.graph_optimization", "unknown value 'max'"),
    # one way to ask for bf16: list it under precisions (openvino reaches it by its inference precision hint)
    ({"openvino": {"inference_precision": "bf16"}}, "variants[1].openvino.inference_precision", "unknown key"),
])
def test_bad_options_name_the_key(tiny_config, options, where, text):
    tiny_config["variants"] = ["eager", options]
    with pytest.raises(UserInputError) as info:
        config_from_dict(tiny_config)
    assert info.value.where == where and text in info.value.problem


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU refusal")
def test_cuda_graphs_on_the_cpu_fail_with_the_reason(tiny_config, tmp_path):
    tiny_config["inputs"] = [{"name": "input", "shape": [2, 3, 16, 16]}]
    tiny_config["variants"] = ["eager", {"compiled": {"cuda_graphs": True}}]
    outcome = run(tiny_config, tmp_path)
    assert [(r.case.label, r.status) for r in outcome.results] == [("eager", "ok"),
                                                                   ('compiled{"cuda_graphs":true}', "failed")]
    assert "cuda_graphs: true needs a CUDA device and this run uses 'cpu'" in outcome.results.records[1].reason


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU refusal")
def test_eager_options_are_not_dropped(tiny_config, tmp_path):
    tiny_config["inputs"] = [{"name": "input", "shape": [2, 3, 16, 16]}]
    tiny_config["variants"] = [{"eager": {"cuda_graphs": True}}]
    outcome = run(tiny_config, tmp_path)
    assert any("cuda_graphs: true needs a CUDA device and this run uses 'cpu'" in r.reason for r in outcome.results)


class FakeGraph:
    """A fake of ``torch.cuda.CUDAGraph`` (capture needs CUDA): like the real one, ``replay()`` takes no inputs
    and reruns the captured work on the buffers the capture used, writing its output tensors in place
    (torch/cuda/graphs.py: "replay() ... the graph's memory is reused"; the capture's input buffers are the
    only inputs a replay reads)."""

    def __init__(self, fn, static_inputs: tuple, static_output: torch.Tensor):
        self.fn, self.static_inputs, self.static_output = fn, static_inputs, static_output

    def replay(self) -> None:
        self.static_output.copy_(self.fn(*self.static_inputs))


def fake_capture(fn, static_inputs: tuple) -> tuple:
    """Stands in for ``cuda_graphs.capture``: the graph and the output tensors a capture returns."""
    output = fn(*static_inputs)
    return FakeGraph(fn, static_inputs, output), output


@pytest.mark.parametrize("name, options", [("eager", {"cuda_graphs": True}),
                                           ("compiled", {"cuda_graphs": True, "backend": "eager"})])
def test_a_cuda_graph_copies_each_calls_input_inside_the_timed_call(monkeypatch, name, options):
    """Bug: ``prepare`` copied the inputs into the captured buffers, outside the timed call, while
    ``compiled`` with ``mode: reduce-overhead`` pays that copy inside its call. Now the timed call (``run``)
    copies the request's input, then replays; ``prepare`` leaves the buffers alone."""
    from trtbench.variants import BuildContext, cuda_graphs, get_variant, variant_class

    monkeypatch.setattr(cuda_graphs, "capture", fake_capture)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)  # compiled's build syncs a CUDA device
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    example = torch.randn(2, 8)
    variant = get_variant(name)
    ctx = BuildContext(device=torch.device("cuda"), precision="fp32", dtype=torch.float32, example_inputs=(example,),
                       shape_inputs={"opt": (example,)}, input_specs=[], options=variant_class(name).Options(**options))
    with torch.inference_mode():
        built = variant.build(model, ctx)
        assert isinstance(built.module, cuda_graphs.GraphReplay)
        for x in (torch.randn(2, 8), torch.randn(2, 8)):
            prepared = variant.prepare(built, (x,))
            assert not torch.equal(built.module.static_inputs[0], x)  # nothing copied before the timed call
            output = variant.run(built, prepared)  # the timed call
            assert torch.equal(built.module.static_inputs[0], x) and torch.allclose(output, model(x))


@pytest.mark.parametrize("version, device, skipped", [
    ("2.11.0+cu130", "cuda:0", True),  # the torch whose aoti_load_package crashed the worker on an H100
    ("2.10.1", "cuda", True),
    ("2.12.0", "cuda:0", False),
    ("2.14.1+cu130", "cuda:1", False),
    ("2.11.0+cpu", "cpu", False),  # aoti runs on the CPU with it
])
def test_aoti_on_cuda_with_a_torch_whose_load_crashed_is_skipped_naming_the_crash(monkeypatch, version, device,
                                                                                    skipped):
    from trtbench.config.plan import why_unavailable

    monkeypatch.setattr(torch, "__version__", version)
    reason = why_unavailable("aoti", torch.device(device), "fp32")
    assert (reason is not None) is skipped, reason
    if skipped:
        assert "aoti_load_package crashed the timing worker with SIGSEGV" in reason and version in reason
        assert "scripts/aoti_cuda_repro.py" in reason


def test_missing_runtimes_are_skipped_with_the_install_command(tiny_config, tmp_path, monkeypatch):
    from trtbench.variants import openvino, ort_common

    def missing():
        raise ImportError("not installed")

    monkeypatch.setattr(ort_common, "import_onnxruntime", missing)
    monkeypatch.setattr(openvino, "import_openvino", missing)
    tiny_config["variants"] = ["eager", "ort", "openvino"]
    outcome = run(tiny_config, tmp_path)
    reasons = {r.case.variant: r.reason for r in outcome.results if r.status == "skipped"}
    assert reasons == {"ort": "onnxruntime is not installed (pip install onnxruntime)",
                       "openvino": "openvino is not installed (pip install openvino "
                                   "(or pip install 'trtbench[openvino]'))"}
    assert outcome.exit_code == 0


def test_without_the_onnx_exporter_ort_is_skipped_with_the_reason(tiny_config, tmp_path, monkeypatch):
    import importlib.util

    from trtbench.variants import onnx

    real = importlib.util.find_spec
    monkeypatch.setattr(onnx.importlib.util, "find_spec", lambda name: None if name == "onnxscript" else real(name))
    tiny_config["variants"] = ["eager", "ort"]
    outcome = run(tiny_config, tmp_path)
    ort = [r for r in outcome.results if r.case.variant == "ort"]
    assert all(r.status == "skipped" for r in ort)
    # the resolve step follows the chain ort -> onnx before anything is built
    assert ort[0].reason == "needs onnx, which cannot run here: onnxscript not installed (pip install onnx onnxscript)"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the skip path on a machine without CUDA")
def test_gpu_runtimes_are_skipped_without_cuda(tiny_config, tmp_path):
    tiny_config["variants"] = ["eager", "ort_cuda", "ort_trt"]
    outcome = run(tiny_config, tmp_path)
    gpu = [r for r in outcome.results if r.case.variant != "eager"]
    assert len(gpu) == 6 and all(r.status == "skipped" and r.reason.startswith("CUDA is not available") for r in gpu)


@pytest.mark.filterwarnings("ignore:`torch.jit.trace:FutureWarning")
def test_a_dict_returning_model_traces_only_with_strict_false(tiny_config):
    from trtbench.variants import BuildContext, get_variant
    from trtbench.variants.traced import TraceOptions

    model, x = __import__("toy_models").dict_output().eval(), torch.randn(2, 3, 16, 16)
    ctx = BuildContext(device=torch.device("cpu"), precision="fp32", dtype=torch.float32, example_inputs=(x,),
                       shape_inputs={"opt": (x,)}, input_specs=config_from_dict(tiny_config).inputs)
    with pytest.raises(RuntimeError, match="Encountering a dict at the output of the tracer"):
        get_variant("traced").build(model, ctx)
    ctx.options = TraceOptions(strict=False)
    assert get_variant("traced").build(model, ctx).module(x).keys() == {"logits", "probs"}


def test_dict_outputs_trace_export_save_and_reload_in_a_fresh_process(tiny_config, tmp_path):
    tiny_config["model"]["name"] = "toy_models:dict_output"
    tiny_config["variants"] = ["eager", {"traced": {"strict": False}}, {"exported": {"strict": True}}]
    outcome = run(tiny_config, tmp_path, save=True)
    assert all(r.status == "ok" and r.accuracy["ok"] for r in outcome.results), [r.reason for r in outcome.results]
    info = {r.case.variant: r.build["info"] for r in outcome.results}
    assert info["traced"]["strict"] is False and info["exported"]["strict"] is True
    manifest = read_manifest(tmp_path / "out")
    assert [a["file"] for a in manifest["artifacts"]] == ["traced_fp32.ts", "exported_fp32.pt2"]
    assert verify_artifact(manifest["artifacts"][0], tmp_path / "out" / "artifacts")["ok"]


def test_a_hugging_face_bert_traces_with_strict_false(tiny_config, tmp_path):
    pytest.importorskip("transformers")
    tiny_config["model"]["name"] = "toy_models:tiny_bert"
    tiny_config["inputs"] = [{"name": "input_ids", "dtype": "int64", "value_range": [0, 100],
                              "min_shape": [1, 4], "opt_shape": [2, 8], "max_shape": [4, 16]}]
    tiny_config["variants"] = ["eager", {"traced": {"strict": False}}]
    outcome = run(tiny_config, tmp_path)
    traced = [r for r in outcome.results if r.case.variant == "traced"]
    assert all(r.status == "ok" and r.accuracy["ok"] for r in traced), [r.reason for r in traced]


def test_each_onnx_runtime_provider_is_given_its_device():
    from types import SimpleNamespace

    from trtbench.variants import get_variant

    ctx = SimpleNamespace(device=torch.device("cuda:1"), input_specs=[])
    assert get_variant("ort").provider_options(ctx, []) == {}
    assert get_variant("ort_cuda").provider_options(ctx, []) == {"device_id": "1"}
    assert get_variant("ort_trt").providers(ctx, []) == [["TensorrtExecutionProvider", {"device_id": "1"}],
                                                         ["CUDAExecutionProvider", {"device_id": "1"}]]
