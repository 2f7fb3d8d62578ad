"""How a timing worker rebuilds one variant: the model, its weights and inputs, and the build.

The parent writes the cast model's state dict and the inputs of every point to one file (a
plain ``torch.save`` of tensors, loaded with ``weights_only=True``); the worker builds the model
from its config, loads those exact weights, and builds the variant and whatever it builds from
with the same code the parent used (:func:`trtbench.build.build_variants`). It then runs each
point once, so first-call work (torch.compile's compile, lazy initialisation) stays out of the
timed blocks, as the parent's accuracy check keeps it out there.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trtbench.build import build_variants
from trtbench.outdir import FailureLog
from trtbench.precision import precision_dtype
from trtbench.variants import BuildContext, build_order, get_variant


def write_payload(path: Path, model: torch.nn.Module, example: tuple, inputs: dict[str, tuple]) -> Path:
    """The weights and inputs a group's workers load (``path`` is removed by the caller)."""
    torch.save({"state_dict": model.state_dict(), "example": list(example),
                "inputs": {label: list(values) for label, values in inputs.items()}}, path)
    return path


@dataclass(frozen=True)
class VariantRecipe:
    """Everything a fresh process needs to rebuild ``variant`` as the parent built it."""

    model: Any  # trtbench.config.ModelConfig
    variant: str
    options: dict  # variant name -> its options, for the variant and what it builds from
    precision: str
    device: str
    threads: int
    cudnn_benchmark: bool
    channels_last: bool
    input_specs: list  # InputConfig
    payload: str  # write_payload's file

    def materialize(self) -> tuple[dict[str, Any], dict]:
        from trtbench.models import build_model

        torch.set_num_threads(self.threads)
        torch.backends.cudnn.benchmark = self.cudnn_benchmark
        device = torch.device(self.device)
        if device.type == "cuda":
            torch.cuda.set_device(device)
        payload = torch.load(self.payload, map_location=device, weights_only=True)
        dtype = precision_dtype(self.precision)
        model = build_model(self.model).to(device, dtype)
        if self.channels_last:
            model = model.to(memory_format=torch.channels_last)
        model.load_state_dict(payload["state_dict"])
        inputs = {label: tuple(values) for label, values in payload["inputs"].items()}
        ctx = BuildContext(device=device, precision=self.precision, dtype=dtype,
                           example_inputs=tuple(payload["example"]), shape_inputs=inputs,
                           input_specs=self.input_specs)
        with tempfile.TemporaryDirectory(prefix="trtbench-worker-") as logs:
            outcomes = build_variants(build_order([self.variant]), model, ctx, self.options, {}, FailureLog(Path(logs)))
            outcome = outcomes[self.variant]
            if outcome.built is None:
                log = (Path(logs) / "failures.log")
                raise RuntimeError(f"{self.variant} did not build in its worker ({outcome.status}: {outcome.reason})\n"
                                   + (log.read_text() if log.exists() else ""))
        variant, built = get_variant(self.variant), outcome.built
        calls = {}
        with torch.inference_mode():
            for label, values in inputs.items():
                prepared = variant.prepare(built, values)
                variant.run(built, prepared)  # first-call work stays out of the timed blocks
                calls[label] = (lambda p=prepared: variant.run(built, p))
        facts = {"intra_op_threads": torch.get_num_threads(), "inter_op_threads": torch.get_num_interop_threads(),
                 "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset (runtime default)"),
                 **variant.thread_settings(built)}
        return calls, facts
