"""Profiling sections and report plots, run for real on a tiny CNN (single-threaded for stable timings)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch
from matplotlib.image import imread
from torch import nn

from trtbench.config.config import config_from_dict
from trtbench.core.errors import UserInputError
from trtbench.profiling import NotSupported
from trtbench.profiling.config import ProfileConfig
from trtbench.profiling.layers import profile_layers
from trtbench.profiling.memory import HWM_METHOD, artifact_sizes, parameter_summary, peak_memory
from trtbench.profiling.operators import profile_operators
from trtbench.profiling.runner import ProfiledVariant, run_profiles
from trtbench.profiling.structure import layer_table
from trtbench.profiling.training import profile_training
from trtbench.core.case import Case
from trtbench.core.record import Record
from trtbench.report.plots import DPI, latency_plot, speedup_plot, top_layers_plot
from helpers.plots import save_plots
from trtbench.scenarios.profile.report import layer_plots, profile_markdown
from trtbench.results.resultset import ResultSet
from trtbench.core.schema import from_dict
from trtbench.measure.timing import TimingSettings
from trtbench.variants import BuildContext, get_variant

CPU = torch.device("cpu")


def fixed(iterations: int) -> TimingSettings:
    return TimingSettings(mode="fixed", warmup=1, warmup_s=0, iterations=iterations)


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.act = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.act(self.bn1(self.conv1(x)))
        x = self.act(self.conv2(x))
        return self.fc(torch.flatten(self.pool(x), 1))


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def model():
    torch.manual_seed(0)
    return TinyCNN().eval()


@pytest.fixture
def inputs():
    return (torch.randn(8, 3, 64, 64, generator=torch.Generator().manual_seed(0)),)


def leaf_module_names(module: nn.Module) -> set[str]:
    return {name for name, m in module.named_modules() if name and not list(m.children())}


def test_layers_cover_every_leaf_module_and_sum_to_the_whole_run(model, inputs):
    result = profile_layers(model, inputs, CPU, runs=8, warmup=2)
    nodes = result["nodes"]
    assert {n["target"] for n in nodes if n["op"] == "call_module"} == leaf_module_names(model)
    assert [n["name"] for n in nodes] == ["conv1", "bn1", "act", "conv2", "act_1", "pool", "flatten", "fc"]
    whole = result["interpreted_ms"]["mean"]
    assert 0.5 * whole <= result["nodes_sum_ms"] <= whole
    assert result["overhead_ms"] == pytest.approx(whole - result["nodes_sum_ms"])
    assert 0.3 < result["nodes_sum_ms"] / result["model_ms"]["mean"] < 3
    assert result["model_ms"]["iterations"] == 8
    by_type = {row["type"]: row for row in result["by_type"]}
    assert by_type["Conv2d"]["count"] == 2 and by_type["ReLU"]["count"] == 2 and by_type["flatten"]["count"] == 1
    convs = sum(n["mean_ms"] for n in nodes if n["type"] == "Conv2d")
    assert by_type["Conv2d"]["total_ms"] == pytest.approx(convs)
    assert by_type["Conv2d"]["pct"] == pytest.approx(100 * convs / whole)


def test_layers_refuse_torchscript_with_a_reason(model, inputs):
    with pytest.raises(NotSupported, match="TorchScript"):
        profile_layers(torch.jit.script(model), inputs, CPU, runs=1, warmup=1)


def test_operator_table_and_chrome_trace(model, inputs, tmp_path):
    trace = tmp_path / "profiles" / "tiny.trace.json"
    result = profile_operators(lambda: model(*inputs), CPU, runs=2, top_k=8, trace_path=trace)
    names = [row["name"] for row in result["top"]]
    assert len(names) == 8 and result["operators"] >= 8
    assert any("convolution" in name for name in names), names
    selfs = [row["self_cpu_ms"] for row in result["top"]]
    assert selfs == sorted(selfs, reverse=True) and selfs[0] > 0
    conv = next(row for row in result["top"] if "convolution" in row["name"])
    assert conv["calls"] == 2  # per run: two Conv2d layers
    assert 0 < sum(row["pct"] for row in result["top"]) <= 100.0 + 1e-6
    events = json.loads(trace.read_text())["traceEvents"]
    assert any("convolution" in str(e.get("name", "")) for e in events)
    assert not list(trace.parent.glob("*.tmp"))


def test_parameter_counts_and_artifact_sizes(model, tmp_path):
    summary = parameter_summary(model)
    expected = sum(p.numel() for p in model.parameters())
    assert summary["parameters"] == summary["trainable_parameters"] == expected
    assert summary["parameter_bytes"] == 4 * expected
    assert summary["buffers"] == sum(b.numel() for b in model.buffers()) > 0
    path = tmp_path / "w.pt"
    torch.save(model.state_dict(), path)
    assert artifact_sizes([path]) == [{"path": str(path), "bytes": path.stat().st_size}]
    assert artifact_sizes([path], root=tmp_path) == [{"path": "w.pt", "bytes": path.stat().st_size}]


def test_peak_memory_sees_a_known_allocation(model, inputs):
    forward = peak_memory(lambda: model(*inputs), CPU)
    assert forward["peak_bytes"] > 0 and forward["step_bytes"] >= 0 and forward["method"]
    if forward["method"] != HWM_METHOD:
        pytest.skip("RSS high-water mark cannot be reset here; only the lower-bound method is available")
    size = 64 * 2**20
    allocation = peak_memory(lambda: torch.ones(size // 4).sum(), CPU)
    assert 0.95 * size <= allocation["step_bytes"] < 2 * size
    assert allocation["peak_bytes"] == allocation["baseline_bytes"] + allocation["step_bytes"]


def test_structure_output_shapes_and_parameters(model, inputs):
    rows = {row["name"]: row for row in layer_table(model, inputs)["layers"]}
    assert rows["conv1"]["output_shape"] == [8, 16, 64, 64]
    assert rows["conv2"]["output_shape"] == [8, 32, 31, 31]  # (64 - 3) // 2 + 1
    assert rows["flatten"]["output_shape"] == [8, 32]
    assert rows["fc"]["output_shape"] == [8, 10]
    assert rows["conv2"]["parameters"] == 16 * 32 * 9 + 32 and rows["conv2"]["type"] == "Conv2d"
    assert rows["act"]["parameters"] == 0


def test_training_step_on_a_copy(model, inputs):
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result = profile_training(model, inputs, CPU, fixed(iterations=3), optimizer="sgd", lr=0.1)
    assert len(result["step_samples_ms"]) == 3 and min(result["step_samples_ms"]) > 0
    assert result["forward_ms"]["iterations"] == result["step_ms"]["iterations"] == 3
    assert result["step_ms"]["median"] > result["forward_ms"]["median"]
    assert result["loss"] == "cross_entropy"
    assert not model.training
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    scripted = profile_training(torch.jit.script(model), inputs, CPU, fixed(iterations=2))
    assert len(scripted["step_samples_ms"]) == 2


def test_training_refuses_modules_without_trainable_parameters(model, inputs):
    model.requires_grad_(False)
    with pytest.raises(NotSupported, match="require grad"):
        profile_training(model, inputs, CPU, fixed(iterations=1))


def build(name: str, model: nn.Module, inputs: tuple) -> ProfiledVariant:
    variant = get_variant(name)
    ctx = BuildContext(device=CPU, precision="fp32", dtype=torch.float32, example_inputs=inputs,
                       shape_inputs={"opt": inputs}, input_specs=[])
    return ProfiledVariant(name, variant, variant.build(model, ctx))


def test_run_profiles_end_to_end(model, inputs, tmp_path):
    cfg = from_dict(ProfileConfig, {"precision": "fp32", "variants": ["eager", "scripted", "traced"],
                                    "layers": {"runs": 3, "top_k": 4}, "operators": {"runs": 1, "top_k": 5},
                                    "train": {"enabled": True, "iterations": 2}}, "profile")
    eager, scripted = (build(name, model, inputs) for name in ("eager", "scripted"))  # traced: "failed to build"
    artifact = tmp_path / "artifacts" / "scripted.ts"
    artifact.parent.mkdir()
    torch.jit.save(scripted.built.module, str(artifact))
    scripted = dataclasses.replace(scripted, files=(artifact,))
    profiles = run_profiles(cfg, [eager, scripted], {"opt": inputs}, CPU, tmp_path)
    profiles = json.loads(json.dumps(profiles))  # JSON-serialisable
    save_plots(tmp_path, layer_plots(profiles))  # the report draws the slowest-layers figures, the writer saves them

    eager = profiles["variants"]["eager"]["shapes"]["opt"]
    assert eager["shape"] == "8x3x64x64"
    assert all(eager[k]["status"] == "ok" for k in ("structure", "memory", "layers", "operators", "train"))
    assert imread(tmp_path / eager["layers"]["plot"]).shape[0] > 0
    assert json.loads((tmp_path / eager["operators"]["trace"]).read_text())["traceEvents"]

    scripted = profiles["variants"]["scripted"]
    assert scripted["artifacts"] == [{"path": "artifacts/scripted.ts", "bytes": artifact.stat().st_size}]
    for key in ("layers", "structure"):
        assert scripted["shapes"]["opt"][key]["status"] == "unsupported"
        assert "TorchScript" in scripted["shapes"]["opt"][key]["reason"]
    assert scripted["shapes"]["opt"]["operators"]["status"] == "ok"
    assert scripted["shapes"]["opt"]["train"]["status"] == "ok"
    assert profiles["variants"]["traced"]["status"] == "skipped"

    markdown = profile_markdown(profiles)
    assert "## Profile (fp32, cpu)" in markdown and "### Training step" in markdown
    assert f"![slowest layers]({eager['layers']['plot']})" in markdown
    assert "not supported for this variant: TorchScript" in markdown
    # the top-4 layer table holds the four nodes measured slowest (which ones, a busy machine may change), and
    # the structure table every layer: conv1 is in both when it is among them
    slowest = [n["name"] for n in sorted(eager["layers"]["nodes"], key=lambda n: n["mean_ms"], reverse=True)[:4]]
    assert all(f"| {name} | `" in markdown for name in slowest), slowest
    assert markdown.count("| conv1 |") == 1 + ("conv1" in slowest)


def test_run_profiles_needs_inputs_for_every_shape(model, inputs, tmp_path):
    cfg = from_dict(ProfileConfig, {"precision": "fp32", "shapes": ["min", "opt"]}, "profile")
    with pytest.raises(ValueError, match="min"):
        run_profiles(cfg, [build("eager", model, inputs)], {"opt": inputs}, CPU, tmp_path)


BASE = {"name": "t", "model": {"name": "resnet18"}, "inputs": [{"shape": [1, 3, 32, 32]}],
        "variants": ["eager", "traced"]}


@pytest.mark.parametrize("profile, where", [
    ({"variants": ["eagr"]}, "profile.variants[0]"),
    ({"variants": []}, "profile.variants"),
    ({"variants": ["eager", "eager"]}, "profile.variants"),
    ({"variants": ["scripted"]}, "profile.variants[0]"),  # registered, but not among the run's variants
    ({"shapes": ["mid"]}, "profile.shapes[0]"),
    ({"layers": {"runs": 0}}, "profile.layers.runs"),
    ({"operators": {"top_k": -1}}, "profile.operators.top_k"),
    ({"train": {"optimizer": "lbfgs"}}, "profile.train.optimizer"),
    ({"precision": "fp16"}, "profile.precision"),  # valid precision, but the run only builds fp32
    ({"memroy": True}, "profile.memroy"),
])
def test_profile_config_errors_name_the_key(profile, where):
    with pytest.raises(UserInputError) as err:
        config_from_dict({**BASE, "profile": profile})
    assert err.value.where == where


def test_profile_config_defaults():
    cfg = config_from_dict({**BASE, "precisions": ["fp32"], "profile": {"variants": ["eager", "traced"]}})
    assert cfg.profile.precision == "fp32" and cfg.profile.shapes == ["opt"] and cfg.profile.layers.runs == 20
    assert not cfg.profile.train.enabled
    assert config_from_dict(BASE).profile is None


def plot_results() -> ResultSet:
    """eager/traced at min (10 / 8 ms) and max (120 / 109 ms), scripted failed at max; three rounds each."""
    results = ResultSet(environments={"e": {"id": "e"}})
    rows = [("eager", "min", 1, 10.0), ("traced", "min", 1, 8.0), ("eager", "max", 16, 120.0),
            ("traced", "max", 16, 109.0), ("scripted", "max", 16, None)]
    for variant, point, batch, median in rows:
        case = Case(model="m", variant=variant, precision="fp32", point=point, input_shapes=((batch, 3, 224, 224),),
                    threads=1, device="cpu")
        if median is None:
            results.add(Record(case=case, environment="e", status="failed", reason="build failed"))
        else:
            results.add(Record(case=case, environment="e", rounds=[[median * 0.99, median, median * 1.01]] * 3))
    return results


def assert_png(path, width_in: float | None = None):
    image = imread(path)
    assert image.ndim == 3 and image.shape[2] in (3, 4)
    if width_in is not None:
        assert image.shape[1] == round(width_in * DPI)
    assert float(np.var(image[..., :3])) > 1e-3  # not blank
    return image


def test_latency_plot(tmp_path):
    results = plot_results()
    plot = latency_plot(results, "latency.png")
    assert sorted(plot.values) == pytest.approx([8.0, 10.0, 109.0, 120.0])
    assert_png(save_plots(tmp_path, [plot])[0])
    failed_only = ResultSet()
    failed_only.add(next(r for r in results if r.status == "failed"))
    assert latency_plot(failed_only, "none.png") is None


def test_speedup_plot(tmp_path):
    plot = speedup_plot(plot_results(), "speedup.png")
    assert plot.bars == 2 and sorted(plot.values) == pytest.approx([120 / 109, 1.25])  # eager is the baseline
    assert_png(save_plots(tmp_path, [plot])[0])


def test_top_layers_plot(tmp_path):
    nodes = [{"name": f"n{i}", "type": "Conv2d", "mean_ms": float(i), "pct": float(i)} for i in range(10)]
    plot = top_layers_plot(nodes, "layers.png", top_k=4)
    assert list(plot.values) == [6.0, 7.0, 8.0, 9.0]  # slowest four, largest at the top
    assert_png(save_plots(tmp_path, [plot])[0], width_in=8.0)


def test_pipeline_writes_profiles_and_plots(tiny_config, tmp_path):
    from conftest import run_dict

    tiny_config["benchmark"].update(iterations=3, shapes=["min", "opt"])
    tiny_config["output"]["dir"] = str(tmp_path / "out")
    tiny_config.update({
        "variants": ["eager", "traced"],
        "profile": {"variants": ["eager", "traced"], "shapes": ["opt"], "layers": {"runs": 2},
                    "operators": {"runs": 1}, "train": {"enabled": True, "iterations": 2}},
    })
    outcome = run_dict(tiny_config)
    out = tmp_path / "out"
    doc = json.loads((out / "results.json").read_text())
    profiles = doc["profiles"][0]["data"]
    assert outcome.exit_code == 0 and profiles["status"] == "ok" and profiles["precision"] == "fp32"
    eager, traced = profiles["variants"]["eager"], profiles["variants"]["traced"]
    assert eager["shapes"]["opt"]["shape"] == "2x3x16x16"
    assert eager["shapes"]["opt"]["layers"]["status"] == "ok"
    assert traced["shapes"]["opt"]["layers"]["status"] == "unsupported"
    assert "train" in traced["shapes"]["opt"]  # its status: test_a_run_profiles_the_training_step
    (ts,) = traced["artifacts"]
    assert ts == {"path": "artifacts/traced_fp32.ts", "bytes": (out / "artifacts" / "traced_fp32.ts").stat().st_size}
    assert (out / eager["shapes"]["opt"]["operators"]["trace"]).is_file()

    report = (out / "report.md").read_text()
    assert "![latency](plots/latency.png)" in report and "![speedup](plots/speedup.png)" in report
    assert "## Profile (fp32, cpu)" in report and "### Training step" in report
    latency = imread(out / "plots" / "latency.png")
    assert latency.shape[0] > 0 and float(np.var(latency[..., :3])) > 1e-3


def test_a_run_profiles_the_training_step(tiny_config, tmp_path):
    from conftest import run_dict

    tiny_config["benchmark"].update(iterations=2, shapes=["opt"])
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    tiny_config.update({"variants": ["eager", "traced"],
                        "profile": {"variants": ["eager", "traced"], "shapes": ["opt"], "layers": {"enabled": False},
                                    "operators": {"enabled": False}, "memory": False, "structure": False,
                                    "train": {"enabled": True, "iterations": 2}}})
    run_dict(tiny_config)
    profiles = json.loads((tmp_path / "out" / "results.json").read_text())["profiles"][0]["data"]
    eager, traced = (profiles["variants"][name]["shapes"]["opt"]["train"] for name in ("eager", "traced"))
    assert eager["status"] == "ok", eager
    assert traced["status"] == "ok" and "note" in traced, traced


def test_profile_shapes_a_batch_sweep_does_not_have_are_said_not_dropped(tiny_config, tmp_path):
    from conftest import run_dict

    tiny_config["benchmark"].update(iterations=2)
    tiny_config["output"].update(dir=str(tmp_path / "out"), save_artifacts=False)
    tiny_config.update({"variants": ["eager"], "sweep": {"batch": [1, 2]},
                        "profile": {"variants": ["eager"], "shapes": ["opt"], "layers": {"runs": 1},
                                    "operators": {"enabled": False}, "train": {"enabled": False}}})
    run_dict(tiny_config)
    profiles = json.loads((tmp_path / "out" / "results.json").read_text())["profiles"][0]["data"]
    assert profiles["variants"]["eager"]["shapes"] == {}
    warning = profiles["warnings"][0]
    assert "profile.shapes opt: not profiled, this run has no such point (its points are b1, b2" in warning


def test_pipeline_reports_a_profile_precision_it_cannot_run(tiny_config, tmp_path):
    from conftest import run_dict

    tiny_config["output"]["dir"] = str(tmp_path / "out")
    tiny_config.update({"precisions": ["fp16"], "variants": ["eager"], "profile": {}})
    run_dict(tiny_config)
    profiles = json.loads((tmp_path / "out" / "results.json").read_text())["profiles"][0]["data"]
    assert profiles["status"] == "skipped" and "CUDA" in profiles["reason"]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Profile (fp16, cpu)" in report and "_skipped: fp16" in report
    # eager fp32, the fp16 rows' reference, is timed (its latency plots); no profile plot is drawn
    assert not any("layer" in p.name for p in (tmp_path / "out" / "plots").iterdir())


def test_study_resnet_profile_config_is_the_studys_setup():
    from trtbench.config.config import load_config

    config = load_config("study_resnet_profile")
    (spec,) = config.inputs
    assert (spec.min_shape, spec.max_shape) == ([1, 3, 500, 334], [1, 3, 1024, 2048])
    assert config.benchmark.shapes == config.profile.shapes == ["min", "max"]
    assert config.profile.layers.enabled and config.profile.memory and config.profile.structure


def test_a_report_of_two_profiles_names_each_and_keeps_each_plot(tiny_config, tmp_path):
    """Two profiled models (a merge of two runs, say) each get their own heading and their own plot files."""
    import copy

    from conftest import run_dict
    from trtbench.pipeline.sections import report_sections
    from trtbench.results.resultset import ResultSet
    from trtbench.scenarios.profile.scenario import ProfilePart

    tiny_config["variants"] = ["eager"]
    tiny_config["benchmark"].update(iterations=3, shapes=["opt"])
    tiny_config["profile"] = {"variants": ["eager"], "shapes": ["opt"], "layers": {"runs": 2},
                              "operators": {"runs": 1}}
    tiny_config["output"] = {"dir": str(tmp_path / "run"), "save_artifacts": False}
    (part,) = run_dict(tiny_config).results.parts(ProfilePart.KIND)
    results = ResultSet(environments={"e": {"id": "e"}})
    results.add(ProfilePart("e", "model-a", "fp32", copy.deepcopy(part.data)))
    results.add(ProfilePart("e", "model-b", "fp32", copy.deepcopy(part.data)))
    (section,) = [s for s in report_sections(results, None) if "## Profile" in s.markdown]
    save_plots(tmp_path / "report", section.plots)
    assert "## Profile (model-a, " in section.markdown and "## Profile (model-b, " in section.markdown
    assert sorted(p.name for p in (tmp_path / "report" / "plots").iterdir()) == [
        "layers_0_eager_opt.png", "layers_1_eager_opt.png"]
