"""Built-in study models: registration, output shapes, parameter counts, TorchScript and torch.export."""

from __future__ import annotations

import pytest
import torch
import torchvision
from torch import nn

from trtbench.config.config import ModelConfig
from trtbench.core.errors import UserInputError
from trtbench.models import build_model, builtin_model_names
from trtbench.models.seed_resnet34 import RESNET34_ARGS
from trtbench.models.study_resnets import STAGE_DEPTHS

# torch.jit.script/trace warn that they are deprecated; trtbench still benchmarks both.
pytestmark = [pytest.mark.filterwarnings("ignore:`torch.jit:FutureWarning"),
              pytest.mark.usefixtures("one_torch_thread")]

DEPTHS = sorted(STAGE_DEPTHS)
EXPECTED_NAMES = (
    {"seed_resnet34", "cifar_resnet20", "cifar_resnet32", "cifar_resnet56", "planted_net"}
    | {f"plain_resnet{d}" for d in DEPTHS}
    | {f"bottleneck_resnet{d}" for d in DEPTHS}
)
# (name, kwargs) for every registered model, plus the large-mode bottleneck nets.
CASES = ([(name, {}) for name in builtin_model_names()]
         + [(f"bottleneck_resnet{d}", {"large_mode": True}) for d in DEPTHS])


def build(name: str, **kwargs) -> nn.Module:
    return build_model(ModelConfig(name=name, source="builtin", kwargs=kwargs))


def build_on_meta(name: str, **kwargs) -> nn.Module:
    """The model with shape-only parameters: for counting, without the cost of initialising weights."""
    with torch.device("meta"):
        return build(name, **kwargs)


def input_size(name: str) -> int:
    """The smallest convenient square input: 224 for the fixed-head seed net, 32 otherwise."""
    return 224 if name == "seed_resnet34" else 32


def num_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def case_id(case) -> str:
    name, kwargs = case
    return name + "".join(f"-{key}" for key, value in kwargs.items() if value)


def test_all_study_models_registered():
    assert EXPECTED_NAMES <= set(builtin_model_names())


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_builds_runs_and_scripts(case):
    name, kwargs = case
    model = build(name, num_classes=7, **kwargs)
    assert not model.training
    batch = 1 if name == "seed_resnet34" else 2
    x = torch.randn(batch, 3, input_size(name), input_size(name))
    scripted = torch.jit.script(model)
    with torch.no_grad():
        out = model(x)
        assert out.shape == (batch, 7)
        assert torch.isfinite(out).all()
        torch.testing.assert_close(scripted(x), out)


@pytest.mark.parametrize("name", ["cifar_resnet20", "plain_resnet18", "bottleneck_resnet18", "seed_resnet34"])
def test_trace_and_export_with_dynamic_batch(name):
    model = build(name, num_classes=5)
    size = input_size(name)
    example, other = torch.randn(2, 3, size, size), torch.randn(1, 3, size, size)
    with torch.no_grad():
        traced = torch.jit.trace(model, example, check_trace=False)  # checked against eager below
        program = torch.export.export(model, (example,),
                                      dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=16)},))
        expected = model(other)
        torch.testing.assert_close(traced(other), expected)
        torch.testing.assert_close(program.module()(other), expected)


def cifar_resnet_params(n: int, num_classes: int = 10) -> int:
    """Parameter count of a CIFAR ResNet with n blocks per stage and 1x1 projection shortcuts."""
    def conv_bn(cin: int, cout: int, k: int) -> int:  # bias-free conv + BN weight and bias
        return cin * cout * k * k + 2 * cout

    total = conv_bn(3, 16, 3) + 64 * num_classes + num_classes
    for cin, cout in ((16, 16), (16, 32), (32, 64)):
        total += conv_bn(cin, cout, 3) + conv_bn(cout, cout, 3)  # first block
        total += conv_bn(cin, cout, 1) if cin != cout else 0  # its projection shortcut
        total += (n - 1) * 2 * conv_bn(cout, cout, 3)
    return total


def test_cifar_resnet_parameter_counts():
    model = build_on_meta("cifar_resnet20")
    assert num_params(model) == cifar_resnet_params(3) == 272_474  # ~0.27M as in He et al. (2016)
    assert num_params(build_on_meta("cifar_resnet56")) == cifar_resnet_params(9)
    assert sum(isinstance(m, nn.Conv2d) for m in model.modules()) == 21  # 19 weighted layers + 2 projections


def test_cifar_resnet_rejects_depth_not_6n_plus_2():
    from trtbench.models.cifar_resnet import cifar_resnet

    with pytest.raises(ValueError, match="6n \\+ 2"):
        cifar_resnet(21)


def seed_args_params(args: dict) -> int:
    """Parameters implied by a seed ResNet34 argument dict (biased convs, BN after every conv but the shortcut)."""
    def conv(kw: dict) -> int:
        return kw["in_channels"] * kw["out_channels"] * kw["kernel_size"] ** 2 + kw["out_channels"]

    total = conv(args["conv_1"]) + 2 * args["conv_1"]["out_channels"]
    for stage in ("conv2_x", "conv3_x", "conv4_x", "conv5_x"):
        for block in args[stage]["blocks"].values():
            for key in ("conv1", "conv2"):
                total += conv(block[key]) + 2 * block[key]["out_channels"]
            if block.get("downsample", False):
                total += conv(block["conv1"])
    final = args["final_layer"]
    return total + final["in_features"] * final["out_features"] + final["out_features"]


def test_seed_resnet34_registers_every_parameter():
    model = build("seed_resnet34")
    assert num_params(model) == seed_args_params(RESNET34_ARGS)
    assert len(model.Conv3_x.layers) == len(RESNET34_ARGS["conv3_x"]["blocks"])
    model.to(torch.float64)
    assert all(p.dtype == torch.float64 for p in model.state_dict().values() if p.is_floating_point())
    copy = build("seed_resnet34")
    copy.load_state_dict(model.state_dict())
    torch.testing.assert_close(copy.Conv5_x.layers[0].downsample.weight,
                               model.Conv5_x.layers[0].downsample.weight.float())


def test_seed_resnet34_kwargs_override_args():
    model = build("seed_resnet34", num_classes=10, avgpool={"kernel_size": 7}, final_layer={"in_features": 512})
    assert (model.Final_layer.in_features, model.Final_layer.out_features) == (512, 10)
    assert RESNET34_ARGS["final_layer"] == {"in_features": 4608, "out_features": 1000}
    with torch.no_grad():
        assert model(torch.randn(1, 3, 224, 224)).shape == (1, 10)
    with pytest.raises(UserInputError, match="conv6_x") as info:
        build("seed_resnet34", conv6_x={})
    assert info.value.where == "model.kwargs"


def test_plain_resnets_match_torchvision_layout():
    model = build("plain_resnet18")
    reference = torchvision.models.resnet18(weights=None).eval()
    model.load_state_dict(reference.state_dict())
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        torch.testing.assert_close(model(x), reference(x))
    assert num_params(build_on_meta("plain_resnet50")) == num_params(build_on_meta("plain_resnet34")) == 21_797_672


@pytest.mark.parametrize("depth", DEPTHS)
def test_study_resnet_sizes(depth):
    """Convolution counts follow study 000's profiler tables; bottleneck < large mode < plain in parameters."""
    plain = build_on_meta(f"plain_resnet{depth}")
    bottleneck = build_on_meta(f"bottleneck_resnet{depth}")
    large = build_on_meta(f"bottleneck_resnet{depth}", large_mode=True)
    def convs(model: nn.Module) -> int:
        return sum(isinstance(layer, nn.Conv2d) for layer in model.modules())

    blocks = sum(STAGE_DEPTHS[depth])
    assert convs(plain) == 1 + 2 * blocks + 3  # 20, 36, 36, 70, 104 as profiled
    assert convs(bottleneck) == convs(large) == 1 + 3 * blocks + 3  # 28 for ResNet18 as profiled
    assert num_params(bottleneck) < num_params(large) < num_params(plain)
    assert large.layer1[0].conv1.out_channels == 4 * bottleneck.layer1[0].conv1.out_channels == 64


@pytest.mark.parametrize("kwargs, key", [({"fault": "fp8"}, "model.kwargs.fault"), ({"at": 5}, "model.kwargs.at")])
def test_planted_net_names_a_bad_fault_or_block(kwargs, key):
    with pytest.raises(UserInputError) as info:
        build("planted_net", **kwargs)
    assert info.value.where == key


def test_planted_net_agrees_with_the_clean_net_in_fp32():
    x = torch.rand(2, 3, 8, 8) * 4
    with torch.no_grad():
        clean = build("planted_net")(x)
        torch.testing.assert_close(build("planted_net", fault="fp16", at=1)(x), clean, rtol=0, atol=0)  # 2^20: exact
        torch.testing.assert_close(build("planted_net", fault="bf16", at=1)(x), clean, rtol=0, atol=1e-2)
