"""The fp32 fallback's own steps on the planted nets (the built-in planted_net, trtbench/models/planted.py), called
directly: eager fp16 on the CPU (for accuracy only, never timed) keeps the fp16 range fault's module in fp32, at two
positions, with what it cost and the precision its kernels ran; a clean net keeps nothing; a cap of 0 keeps nothing
and says why; the precision's copy keeps the module in fp32 with casts at its edges, a timing worker's rebuild from
its recipe is the copy the parent built; scripted, which cannot compile the casts, is skipped saying so."""

from __future__ import annotations

import pytest
import torch

from helpers.planted import planted_inputs
from trtbench.models.planted import planted_net, planted_path
from trtbench.building.copies import Fp32Fallback, cast_to_precision
from trtbench.config.config import default_tolerances
from trtbench.diagnose.fallback import FallbackCase, float_fallback

CPU = torch.device("cpu")


def _case(model, precision: str, cap: int = 4) -> FallbackCase:
    inputs = {"opt": planted_inputs()}
    with torch.inference_mode():
        references = {"opt": model(*inputs["opt"])}
    return FallbackCase(inputs, references, default_tolerances()[precision], cap)


@pytest.mark.parametrize("at", [0, 3])
def test_the_fp16_range_fault_alone_is_kept_in_fp32(at):
    model = planted_net("fp16", at)
    found = float_fallback(model, "fp16", _case(model, "fp16"), CPU)
    assert found.modules == (planted_path(at),)
    assert found.outcome.own_sqnr_db[planted_path(at)] == "-inf"  # it overflows fp16's range
    facts = found.outcome.to_dict()
    assert facts["fallback_cost"]["full_fp16_ms"] == found.outcome.cost.reduced_ms > 0
    assert found.outcome.kernels.source == "oneDNN verbose" and "f32" in found.outcome.kernels.shares("conv")
    assert facts["kernels"]["text"] == found.outcome.kernels.text  # the kept module's conv ran f32
    cast = cast_to_precision(planted_net("fp16", at), "fp16", CPU, found.modules)
    with torch.inference_mode():
        out = cast(*(t.half() for t in planted_inputs()))
    assert out.dtype == torch.float16 and torch.isfinite(out).all()  # fp16 out of the kept module's edge
    assert cast.blocks[at].conv.weight.dtype == torch.float32 and cast.stem.weight.dtype == torch.float16


def test_a_clean_net_keeps_nothing_and_a_cap_of_zero_says_why():
    clean = planted_net(None, 2)
    assert float_fallback(clean, "bf16", _case(clean, "bf16"), CPU) == Fp32Fallback()
    faulty = planted_net("bf16", 2)
    found = float_fallback(faulty, "bf16", _case(faulty, "bf16", cap=0), CPU)
    assert found.modules == () and "calibration.max_fp32_layers is 0" in found.outcome.reason
    assert found.outcome.to_dict()["missed"] == found.outcome.reason and found.outcome.to_dict()["cap"] == 0


def test_a_worker_rebuilds_the_kept_modules_from_its_recipe(tmp_path):
    from trtbench.building.recipe import VariantRecipe, write_payload
    from trtbench.core.inputs import InputConfig
    from trtbench.models import ModelConfig

    kept = (planted_path(1),)
    parent = cast_to_precision(planted_net("bf16", 1), "bf16", CPU, kept)
    inputs = tuple(t.bfloat16() for t in planted_inputs())
    payload = write_payload(tmp_path / "payload.pt", parent, inputs, {"opt": inputs})
    model = ModelConfig(source="builtin", name="planted_net", kwargs={"fault": "bf16", "at": 1})
    recipe = VariantRecipe(model=model, variant="eager", options={}, precision="bf16", device="cpu", threads=1,
                           cudnn_benchmark=False, channels_last=False,
                           input_specs=[InputConfig(name="input", shape=[2, 3, 8, 8])], payload=str(payload))
    calls, _ = recipe.keeping(kept).materialize()
    plain, _ = recipe.materialize()
    with torch.inference_mode():
        built, rebuilt, whole = parent(*inputs), calls["opt"](), plain["opt"]()
    assert torch.equal(rebuilt, built)
    assert not torch.allclose(whole.float(), built.float(), atol=0.1)  # without the kept module: the fault


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:FutureWarning")
def test_scripted_is_skipped_where_modules_are_kept_saying_why():
    from trtbench.core.errors import Unavailable
    from trtbench.variants import BuildContext, get_variant

    def model(kept: tuple) -> torch.nn.Module:
        return cast_to_precision(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)), "bf16", CPU,
                                 kept)

    example = (torch.rand(2, 4).bfloat16(),)
    ctx = BuildContext(CPU, "bf16", torch.bfloat16, example, {"opt": example}, [], fp32_modules=("1",))
    with pytest.raises(Unavailable, match=r"cannot compile the casts .* keeps \(1\)"):
        get_variant("scripted").build(model(("1",)), ctx)
    ctx.fp32_modules = ()
    assert get_variant("scripted").build(model(()), ctx).module(*example).dtype == torch.bfloat16
