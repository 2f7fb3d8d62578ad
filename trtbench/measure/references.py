"""The accuracy reference: eager fp32's outputs at every point, and the FLOPs of one forward pass there."""

from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass
from typing import Any

import torch

from trtbench.core.flops import forward_flops
from trtbench.core.outdir import describe_error


@dataclass(frozen=True)
class MissingReference:
    """Stands in for eager fp32's output at a point where eager fp32 itself failed."""

    reason: str


@dataclass(frozen=True)
class References:
    """Per point label: eager fp32's output (or why there is none), and its FLOPs where counted."""

    outputs: dict[str, Any]
    flops: dict[str, int]


def eager_references(model: torch.nn.Module, inputs: dict[str, tuple], device: torch.device) -> References:
    """Run a float32 copy of ``model`` on ``device`` at each point's ``inputs`` (label -> fp32 inputs)."""
    reference_model = copy.deepcopy(model).to(device, torch.float32)
    outputs, flops = {}, {}
    with torch.inference_mode():
        for label, point_inputs in inputs.items():
            try:
                outputs[label] = reference_model(*point_inputs)
            except Exception as err:  # every check at this point fails with this reason
                outputs[label] = MissingReference(
                    f"no eager fp32 reference: eager fp32 failed here ({describe_error(err)})")
                continue
            with contextlib.suppress(Exception):  # a model the counter cannot run: no FLOP/s columns, nothing else lost
                flops[label] = forward_flops(reference_model, point_inputs)
    return References(outputs, flops)
