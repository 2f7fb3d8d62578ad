"""A precision's model copy: the one cast step (cast_to_precision) that the build and a timing worker's rebuild
share, so that a worker rebuilds the bf16 model the parent built."""

from __future__ import annotations

import torch

from trtbench.building.copies import PrecisionCopy, cast_to_precision, precision_copies
from trtbench.building.recipe import VariantRecipe, write_payloads
from trtbench.config.config import config_from_dict
from trtbench.config.plan import resolve


def test_a_worker_rebuilds_eager_bf16_as_the_parent_built_it(tiny_config, tmp_path):
    tiny_config["precisions"] = ["fp32", "bf16"]
    tiny_config["benchmark"]["shapes"] = ["opt"]
    plan = resolve(config_from_dict(tiny_config))
    group = plan.groups[0]
    model = __import__("toy_models").tiny_cnn().eval()
    copies = precision_copies(model, group.precisions, plan.config, group.points, torch.device("cpu"))
    at: PrecisionCopy = copies["bf16"]
    assert at.dtype == torch.bfloat16 and all(p.dtype == torch.bfloat16 for p in at.model.parameters())
    assert all(p.dtype == torch.float32 for p in model.parameters())  # the copy is cast, the model is not
    payloads = write_payloads(tmp_path, copies, group.precisions, lambda c: c.inputs)
    recipe = VariantRecipe.for_group(plan.config, group, "eager", "bf16", payloads["bf16"], torch.device("cpu"))
    calls, facts = recipe.materialize()
    with torch.inference_mode():
        rebuilt, built = calls["opt"](), at.model(*at.inputs["opt"])
    assert rebuilt.dtype == torch.bfloat16 and torch.equal(rebuilt, built)
    assert facts["hosts"] == "a rebuild"


def test_the_cast_keeps_the_memory_format_asked_for():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3))
    cast = cast_to_precision(model, "bf16", torch.device("cpu"), channels_last=True)
    assert cast[0].weight.dtype == torch.bfloat16
    assert cast[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert cast_to_precision(torch.nn.Linear(2, 2), "int8", torch.device("cpu")).weight.dtype == torch.float32
