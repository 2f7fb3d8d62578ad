"""OpenVINO on the CPU: the ``onnx`` build step's model, compiled by OpenVINO's CPU plugin.

Threads are matched to the run's (``INFERENCE_NUM_THREADS``), with the ``LATENCY`` hint (one
stream, as each timed call is one synchronous request). The inference precision is pinned:
on CPUs with bf16 units OpenVINO otherwise computes an fp32 model in bf16 by default. The
model is saved as OpenVINO IR, an ``.xml`` graph plus a ``.bin`` of weights (kept in fp32:
``save_model`` would compress them to fp16 by default).
"""

from __future__ import annotations

import importlib
import importlib.util
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from trtbench.core.precision import is_quantized
from trtbench.core.schema import join, require_choice
from trtbench.core.target import Target
from trtbench.variants import Artifact, Built, BuildContext, Variant, register

INSTALL = "pip install openvino (or pip install 'trtbench[openvino]')"
PRECISIONS = ("f32", "bf16")


def import_openvino():
    return importlib.import_module("openvino")


@dataclass
class OpenVinoOptions:
    """``inference_precision: bf16`` lets the CPU plugin compute in bfloat16 (on CPUs with bf16 units:
    faster, less accurate; the build info records it). The default, f32, matches an fp32 run."""

    inference_precision: str = "f32"

    def validate(self, path: str) -> None:
        require_choice(self.inference_precision, PRECISIONS, join(path, "inference_precision"))


class OpenVinoRunner:
    """A compiled OpenVINO model with one infer request, taking and returning torch tensors."""

    def __init__(self, compiled):
        self.compiled = compiled
        self.request = compiled.create_infer_request()

    def prepare(self, inputs: tuple) -> list:
        if len(inputs) != len(self.compiled.inputs):
            raise ValueError(f"the OpenVINO model takes {len(self.compiled.inputs)} input(s), got {len(inputs)}")
        return [t.detach().cpu().contiguous().numpy() for t in inputs]

    def run(self, prepared: list) -> list[torch.Tensor]:
        # share_inputs: the request reads the arrays in place; outputs are copied out of the request.
        return [torch.from_numpy(out) for out in self.request.infer(prepared, share_inputs=True).to_tuple()]

    def __call__(self, *inputs):
        return self.run(self.prepare(inputs))


@register
class OpenVino(Variant):
    name = "openvino"
    description = "OpenVINO CPU plugin on the onnx export, threads matched (int8: NNCF); saves OpenVINO IR (.xml + .bin)"
    Options = OpenVinoOptions
    depends_on = "onnx"
    quantizes = True  # INT8: NNCF's post-training quantization (trtbench.quantize.openvino)

    def unavailable_reason(self, target: Target) -> str | None:
        device, precision = target.device, target.precision
        if device.type != "cpu":
            return f"openvino runs on the CPU and this run uses '{device}'"
        try:
            import_openvino()
        except ImportError:
            return f"openvino is not installed ({INSTALL})"
        if is_quantized(precision) and importlib.util.find_spec("nncf") is None:
            return "nncf is not installed (pip install 'trtbench[int8]')"
        return None

    def build(self, model, ctx: BuildContext) -> Built:
        ov = import_openvino()
        options = ctx.options or OpenVinoOptions()
        config = {"INFERENCE_NUM_THREADS": torch.get_num_threads(), "PERFORMANCE_HINT": "LATENCY",
                  "INFERENCE_PRECISION_HINT": options.inference_precision}
        core = ov.Core()
        ov_model = core.read_model(str(ctx.built[self.depends_on].state.path))
        quantization = {}
        if is_quantized(ctx.precision):
            ov_model, quantization = self._quantize(core, ov_model, config, ctx)
        compiled = core.compile_model(ov_model, "CPU", config)
        info = {"openvino": ov.get_version(),  # the plugin's settings as it applied them, read back
                "inference_num_threads": int(compiled.get_property("INFERENCE_NUM_THREADS")),
                "inference_precision": compiled.get_property("INFERENCE_PRECISION_HINT").to_string(),
                "performance_hint": str(compiled.get_property("PERFORMANCE_HINT")),
                "onnx": ctx.built[self.depends_on].info, **quantization}
        return Built(OpenVinoRunner(compiled), info, state={"model": ov_model, "config": config})

    @staticmethod
    def _quantize(core, ov_model, config: dict, ctx: BuildContext) -> tuple[Any, dict]:
        """The model quantized to INT8 by NNCF within the accuracy budget (layers that break it kept in
        fp32 through NNCF's ignored scope), and the build facts (accuracy, the layers kept in fp32)."""
        from trtbench.quantize.fallback import quantize_within_budget
        from trtbench.quantize.openvino import quantizable_layers_openvino, quantize_openvino

        models: dict[int, Any] = {}

        def quantize(settings) -> OpenVinoRunner:
            quantized = quantize_openvino(ov_model, ctx.int8.calibration, settings)
            runner = OpenVinoRunner(core.compile_model(quantized, "CPU", config))
            models[id(runner)] = quantized
            return runner

        result = quantize_within_budget(quantize, quantizable_layers_openvino(ov_model), ctx.int8)
        return models[id(result.model)], {"int8": result.info(), "accuracy": result.accuracy.to_dict()}

    def thread_settings(self, built: Built) -> dict:
        return {"runtime_threads": int(built.module.compiled.get_property("INFERENCE_NUM_THREADS")),
                "spinning": "TBB workers, no setting (the timer waits for them to go idle)"}

    def prepare(self, built: Built, inputs: tuple):
        return built.module.prepare(inputs)

    def run(self, built: Built, prepared):
        return built.module.run(prepared)

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        ov = import_openvino()
        xml, weights = directory / f"{stem}.xml", directory / f"{stem}.bin"
        ov.save_model(built.state["model"], str(xml), compress_to_fp16=False)
        return [Artifact(path=xml, loader="openvino", companions=[weights],
                         settings={"device": "CPU", "config": built.state["config"]})]

    def at_threads(self, artifact: Artifact, threads: int) -> Artifact:
        return dataclasses.replace(artifact, settings={**artifact.settings, "config": {
            **artifact.settings["config"], "INFERENCE_NUM_THREADS": threads}})

    def load(self, artifact: Artifact, device: torch.device):
        ov = import_openvino()
        return OpenVinoRunner(ov.Core().compile_model(str(artifact.path), artifact.settings["device"],
                                                      artifact.settings["config"]))
