"""Bad input: a clear message naming the key or file and the fix, exit code 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trtbench.cli import main
from trtbench.config.config import require_readable_file
from trtbench.core.errors import UserInputError


def run_cli(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def expect_error(config_path: Path, capsys, *fragments: str) -> str:
    out_dir = config_path.parent / "out"
    code, _, err = run_cli(["--config", str(config_path)], capsys)
    assert code == 2, err
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in {err!r}"
    assert "fix:" in err
    assert not out_dir.exists(), "a bad config must not create the output directory"
    return err


def test_unknown_key_suggests_close_match(tiny_config, write_config, capsys):
    tiny_config["benchmark"]["iteratoins"] = 10
    expect_error(write_config(tiny_config), capsys, "benchmark.iteratoins", "unknown key", "did you mean 'iterations'")


def test_unknown_top_level_key(tiny_config, write_config, capsys):
    tiny_config["precison"] = ["fp32"]
    expect_error(write_config(tiny_config), capsys, "precison", "did you mean 'precisions'")


def test_wrong_type(tiny_config, write_config, capsys):
    tiny_config["benchmark"]["iterations"] = "many"
    expect_error(write_config(tiny_config), capsys, "benchmark.iterations", "expected an integer", "'many'")


def test_wrong_type_in_shape_list(tiny_config, write_config, capsys):
    tiny_config["inputs"][0]["max_shape"] = [4, 3, "16", 16]
    expect_error(write_config(tiny_config), capsys, "inputs[0].max_shape[2]", "expected an integer")


def test_min_opt_max_violated(tiny_config, write_config, capsys):
    tiny_config["inputs"][0]["opt_shape"] = [8, 3, 16, 16]
    expect_error(write_config(tiny_config), capsys, "inputs[0].opt_shape", "dim 0", "1 <= 8 <= 4")


def test_min_opt_max_violated_in_inner_dim(tiny_config, write_config, capsys):
    tiny_config["inputs"][0]["min_shape"] = [1, 3, 32, 16]
    expect_error(write_config(tiny_config), capsys, "dim 2", "32 <= 16 <= 16")


def test_shape_rank_mismatch(tiny_config, write_config, capsys):
    tiny_config["inputs"][0]["max_shape"] = [4, 3, 16]
    expect_error(write_config(tiny_config), capsys, "inputs[0]", "different ranks")


@pytest.mark.parametrize("key,fix", [("warmup", "no warm-up"), ("switch_in_below_s", "no switch-in call")])
def test_negative_warmup_or_switch_in(tiny_config, write_config, capsys, key, fix):
    tiny_config["benchmark"][key] = -1
    expect_error(write_config(tiny_config), capsys, f"benchmark.{key}", "must not be negative", fix)


def test_an_unknown_schedule_names_the_key_and_the_choices(tiny_config, write_config, capsys):
    tiny_config["benchmark"]["schedule"] = "busy"
    expect_error(write_config(tiny_config), capsys, "benchmark.schedule", "interleaved", "steady")


@pytest.mark.parametrize("key,value", [("iterations", 0), ("min_iterations", 0), ("max_time_s", 0), ("threads", 0),
                                       ("max_build_s", 0)])
def test_non_positive_counts(tiny_config, write_config, capsys, key, value):
    tiny_config["benchmark"][key] = value
    expect_error(write_config(tiny_config), capsys, f"benchmark.{key}", "must be positive")


def test_non_positive_dimension(tiny_config, write_config, capsys):
    tiny_config["inputs"][0]["min_shape"] = [0, 3, 16, 16]
    expect_error(write_config(tiny_config), capsys, "inputs[0].min_shape", "dim 0 is 0")


def test_unknown_torchvision_model(tiny_config, write_config, capsys):
    tiny_config["model"] = {"source": "torchvision", "name": "resnet35"}
    expect_error(write_config(tiny_config), capsys, "model.name", "unknown torchvision model 'resnet35'",
                 "did you mean")


def test_unknown_model_source(tiny_config, write_config, capsys):
    tiny_config["model"]["source"] = "hub"
    expect_error(write_config(tiny_config), capsys, "model.source", "unknown value 'hub'")


def test_python_factory_not_importable(tiny_config, write_config, capsys):
    tiny_config["model"]["name"] = "no_such_module_xyz:build"
    expect_error(write_config(tiny_config), capsys, "model.name", "cannot import module 'no_such_module_xyz'")


def test_python_factory_returns_non_module(tiny_config, write_config, capsys):
    tiny_config["model"]["name"] = "toy_models:not_a_module"
    expect_error(write_config(tiny_config), capsys, "model.name", "not an nn.Module")


def test_unknown_variant(tiny_config, write_config, capsys):
    tiny_config["variants"] = ["eager", "tracedd"]
    expect_error(write_config(tiny_config), capsys, "variants[1]", "unknown variant 'tracedd'", "did you mean 'traced'")


def test_unknown_variant_from_flag(tiny_config, write_config, capsys):
    path = write_config(tiny_config)
    code, _, err = run_cli(["--config", str(path), "--variants", "eager,scriptd"], capsys)
    assert code == 2 and "unknown variant 'scriptd'" in err
    assert not (path.parent / "out").exists()


def test_unknown_precision(tiny_config, write_config, capsys):
    tiny_config["precisions"] = ["fp23"]
    expect_error(write_config(tiny_config), capsys, "precisions[0]", "unknown value 'fp23'")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_cuda_requested_without_gpu_is_refused_by_run_but_the_config_loads(tiny_config, write_config, capsys, device):
    """Whether CUDA is present is decided when a run is resolved: the config itself loads anywhere."""
    from trtbench.config.config import load_config

    tiny_config["device"] = device
    path = write_config(tiny_config)
    assert load_config(path).device == device
    code, out, _ = run_cli(["validate", str(path)], capsys)
    assert code == 0 and f"device {device}" in out
    err = expect_error(path, capsys, "CUDA is not available", "device: cpu")
    assert err.startswith("trtbench: error: device: ")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without CUDA")
def test_cuda_from_the_device_flag_without_gpu(tiny_config, write_config, capsys):
    path = write_config(tiny_config)
    code, _, err = run_cli(["--config", str(path), "--device", "cuda"], capsys)
    assert code == 2 and "device: " in err and "CUDA is not available" in err
    assert not (path.parent / "out").exists()


def test_malformed_device(tiny_config, write_config, capsys):
    tiny_config["device"] = "gpu0"
    expect_error(write_config(tiny_config), capsys, "device", "unknown device 'gpu0'")


def test_missing_config_file(tmp_path, capsys):
    code, _, err = run_cli(["--config", str(tmp_path / "nope.yaml")], capsys)
    assert code == 2 and "--config" in err and "file not found" in err


def test_missing_weights_file(tiny_config, write_config, capsys, tmp_path):
    tiny_config["model"]["weights"] = str(tmp_path / "missing.pt")
    expect_error(write_config(tiny_config), capsys, "model.weights", "file not found")


def test_unreadable_file_names_the_key(tmp_path, monkeypatch):
    path = tmp_path / "weights.pt"
    path.write_bytes(b"x")
    real_open = Path.open

    def deny(self, *args, **kwargs):
        if self == path:
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", deny)
    with pytest.raises(UserInputError) as info:
        require_readable_file(str(path), "model.weights")
    assert info.value.where == "model.weights" and "Permission denied" in info.value.problem


def test_yaml_syntax_error_has_line_number(write_config, capsys):
    path = write_config("name: x\nmodel: {source: torchvision, name: resnet18\ninputs: []\n")
    code, _, err = run_cli(["--config", str(path)], capsys)
    assert code == 2 and "YAML syntax error" in err
    assert f"{path}:" in err and any(f":{n}:" in err for n in (2, 3, 4))


def test_validate_command_reports_bad_config(tiny_config, write_config, capsys):
    tiny_config["benchmark"]["mode"] = "adaptiv"
    code, _, err = run_cli(["validate", str(write_config(tiny_config))], capsys)
    assert code == 2 and "benchmark.mode" in err and "did you mean 'adaptive'" in err


def test_validate_command_accepts_good_config(tiny_config, write_config, capsys):
    code, out, _ = run_cli(["validate", str(write_config(tiny_config))], capsys)
    assert code == 0 and "ok" in out


def test_bad_model_kwargs_are_a_config_error(tiny_config, write_config, capsys):
    tiny_config["model"] = {"source": "torchvision", "name": "resnet18", "kwargs": {"nonsense": 1}}
    expect_error(write_config(tiny_config), capsys, "model.kwargs", "nonsense")


def test_validate_builds_the_model_to_check_kwargs(tiny_config, write_config, capsys):
    tiny_config["model"]["kwargs"] = {"width": 3}
    code, _, err = run_cli(["validate", str(write_config(tiny_config))], capsys)
    assert code == 2 and "model.kwargs" in err


def test_an_opt_size_of_1_on_a_dynamic_dim_is_accepted_for_every_variant(tiny_config):
    """Serving at batch 1 with room for dynamic batching: the builds by torch.export export from 2 there."""
    from trtbench.config.config import config_from_dict

    tiny_config["inputs"][0]["opt_shape"] = [1, 3, 16, 16]  # min 1, max 4
    config = config_from_dict(dict(tiny_config, variants=["eager", "traced", "exported", "aoti", "ort", "openvino",
                                                          "trt", "compiled"]))
    assert config.inputs[0].opt_shape == [1, 3, 16, 16]


def test_torch_export_really_fails_on_a_size_1_example_of_a_dynamic_dim(tiny_config):
    """Why the builds by torch.export grow such an example (variants.exported.export_examples), with this torch."""
    from toy_models import tiny_cnn
    from trtbench.config.config import InputConfig
    from trtbench.variants.exported import dynamic_shapes

    spec = InputConfig(**dict(tiny_config["inputs"][0], opt_shape=[1, 3, 16, 16]))
    spec.validate("inputs[0]")
    model = tiny_cnn().eval()
    with pytest.raises(Exception, match="Constraints violated"):
        torch.export.export(model, (torch.randn(1, 3, 16, 16),), dynamic_shapes=dynamic_shapes([spec]))
    torch.export.export(model, (torch.randn(2, 3, 16, 16),), dynamic_shapes=dynamic_shapes([spec]))  # opt 2 exports


def test_parsing_converts_the_config_and_validate_changes_nothing(tiny_config):
    """The config is a validated model: parsing converts (a static shape, model into models, typed variants,
    the profile's default precision); validate only checks; the benchmark section holds the TimingSettings,
    read from its own keys and written back as them."""
    import dataclasses

    from trtbench.config.config import BenchmarkConfig, VariantEntry, config_from_dict
    from trtbench.config.plan import resolve
    from trtbench.measure.timing import TimingSettings

    data = {**tiny_config, "inputs": [{"name": "input", "shape": [2, 3, 16, 16]}], "profile": {"variants": ["eager"]}}
    config = config_from_dict(data)
    spec = config.inputs[0]
    assert spec.shape == spec.min_shape == spec.opt_shape == spec.max_shape == [2, 3, 16, 16]
    assert config.model is None and [m.name for m in config.models] == ["toy_models:tiny_cnn"]
    assert all(isinstance(v, VariantEntry) for v in config.variants) and config.profile.precision == "fp32"
    before = config.to_dict()
    for section, path in ((spec, "inputs[0]"), (config.benchmark, "benchmark"), (config.profile, "profile"),
                          (config.models[0], "model")):
        section.validate(path)
    assert config.to_dict() == before
    assert not issubclass(BenchmarkConfig, TimingSettings) and BenchmarkConfig().timing == TimingSettings()
    assert resolve(config).timing == dataclasses.replace(TimingSettings(), mode="fixed", warmup=1, warmup_s=0,
                                                         iterations=5)
    assert before["benchmark"]["mode"] == "fixed" and "timing" not in before["benchmark"]
    with pytest.raises(UserInputError) as info:
        config_from_dict({**data, "benchmark": {"timing": {"mode": "fixed"}}})
    assert info.value.where == "benchmark.timing" and info.value.problem == "unknown key"
