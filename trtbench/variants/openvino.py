"""OpenVINO's CPU plugin on the ``onnx`` step's model, saved as OpenVINO IR (more: docs/backends.md, "Module notes")."""

from __future__ import annotations

import importlib
import importlib.util
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import torch

from trtbench.core.env import NATIVE, bf16_compute
from trtbench.core.errors import Unavailable
from trtbench.core.precision import is_quantized
from trtbench.core.target import Target
from trtbench.measure.kernels import KernelProof, read_openvino
from trtbench.variants import Artifact, Built, BuildContext, RunnerVariant, register

INSTALL = "pip install openvino (or pip install 'trtbench[openvino]')"
INFERENCE_PRECISION = {"bf16": "bf16"}  # the CPU plugin's inference precision hint at each hinted precision; else f32
# ov::DisablePrecisionConversion in IR rt_info: keep the original precision (docs/backends.md, OpenVINO fp32 fallback)
KEEP_ORIGINAL = {"name": "DisablePrecisionConversion", "version": "0", "value": "dynamic:f16"}
KEPT_KEY = "DisablePrecisionConversion_0"  # the attribute's key in a read model's rt_info (name_version)


def onnx_nodes_in(path: Path, modules: tuple[str, ...]) -> set[str]:
    """Names of the nodes of the ONNX model at ``path`` placed inside one of ``modules`` (by their name scopes)."""
    import ast

    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return {node.name for node in model.graph.node for prop in node.metadata_props
            if prop.key == "pkg.torch.onnx.name_scopes" and set(ast.literal_eval(prop.value)) & set(modules)}


def keep_f32(core, ov_model, nodes: set[str]):
    """``ov_model`` with its operations made from ONNX ``nodes`` marked to keep their original precision, through its
    IR (Python cannot make the typed attribute; docs/backends.md)."""
    import xml.etree.ElementTree as ElementTree

    import numpy as np

    ov = import_openvino()
    with tempfile.TemporaryDirectory(prefix="trtbench-openvino-") as folder:
        xml, weights = Path(folder) / "model.xml", Path(folder) / "model.bin"
        ov.save_model(ov_model, str(xml), compress_to_fp16=False)
        tree = ElementTree.parse(xml)
        for layer in tree.getroot().iter("layer"):
            if layer.get("name", "").split("/")[0] in nodes:
                info = layer.find("rt_info")
                info = ElementTree.SubElement(layer, "rt_info") if info is None else info
                ElementTree.SubElement(info, "attribute", KEEP_ORIGINAL)
        return core.read_model(ElementTree.tostring(tree.getroot(), encoding="unicode"),
                               ov.Tensor(np.fromfile(weights, dtype=np.uint8)))


def kept_names(ov_model) -> frozenset[str]:
    """The friendly names of ``ov_model``'s operations marked to keep their original precision."""
    return frozenset(op.get_friendly_name() for op in ov_model.get_ops()
                     if KEPT_KEY in op.get_rt_info().keys())


def import_openvino():
    return importlib.import_module("openvino")


def no_kernels(core, precision: str) -> str | None:
    """Why OpenVINO's CPU plugin cannot compute at inference ``precision`` (bf16) here, or None."""
    capabilities = list(core.get_property("CPU", "OPTIMIZATION_CAPABILITIES"))
    if precision.upper() in capabilities:
        return None
    return (f"OpenVINO's CPU plugin has no {precision} kernels on this CPU ({bf16_compute('cpu').why.split(':')[0]}; "
            f"its optimization capabilities: {', '.join(capabilities)})")


class OpenVinoRunner:
    """A compiled OpenVINO model called with torch tensors; ``kept``: its operations marked to keep their precision."""

    def __init__(self, compiled, kept: frozenset[str] = frozenset()):
        self.compiled, self.kept = compiled, kept
        self.request = compiled.create_infer_request()

    def prepare(self, inputs: tuple) -> list:
        """The inputs as arrays; a bf16 row's in fp32, as the model takes them (its bf16 is the plugin's)."""
        if len(inputs) != len(self.compiled.inputs):
            raise ValueError(f"the OpenVINO model takes {len(self.compiled.inputs)} input(s), got {len(inputs)}")
        return [t.detach().cpu().contiguous().to(torch.float32 if t.dtype == torch.bfloat16 else t.dtype).numpy()
                for t in inputs]

    def run(self, prepared: list) -> list[torch.Tensor]:
        return [torch.from_numpy(out) for out in self.request.infer(prepared, share_inputs=True).to_tuple()]

    def __call__(self, *inputs):
        return self.run(self.prepare(inputs))


@register
class OpenVino(RunnerVariant):
    name = "openvino"
    description = ("OpenVINO CPU plugin on the onnx export, threads matched (int8: NNCF; bf16: the inference precision "
                   "hint); saves OpenVINO IR (.xml + .bin)")
    depends_on = "onnx"
    quantizes = True  # INT8: NNCF's post-training quantization (trtbench.quantize.openvino)
    hints = tuple(INFERENCE_PRECISION)
    runtime = "openvino"

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
        if precision in INFERENCE_PRECISION:
            return no_kernels(import_openvino().Core(), INFERENCE_PRECISION[precision])
        return None

    def build(self, model, ctx: BuildContext) -> Built:
        ov = import_openvino()
        asked = INFERENCE_PRECISION.get(ctx.precision, "f32")
        config = {"INFERENCE_NUM_THREADS": torch.get_num_threads(), "PERFORMANCE_HINT": "LATENCY",
                  "INFERENCE_PRECISION_HINT": asked}
        core = ov.Core()
        ov_model = core.read_model(str(ctx.built[self.depends_on].state.path))
        kept = {}  # what stays at fp32: INT8's fallback's layers, or the float fallback's modules' nodes
        if is_quantized(ctx.precision):
            ov_model, kept = self._quantize(core, ov_model, config, ctx)
        elif ctx.fp32_modules:
            ov_model = keep_f32(core, ov_model, onnx_nodes_in(ctx.built[self.depends_on].state.path, ctx.fp32_modules))
            kept = {"f32_nodes": len(kept_names(ov_model))}
        compiled = core.compile_model(ov_model, "CPU", config)
        applied = compiled.get_property("INFERENCE_PRECISION_HINT").to_string()
        if applied != asked:  # the plugin quietly stays at f32 where the CPU cannot compute bf16
            raise Unavailable(f"OpenVINO's CPU plugin read back inference precision {applied} for the {asked} hint: "
                              + (no_kernels(core, asked) or "it did not apply the hint"))
        info = {"openvino": ov.get_version(),  # the plugin's settings as it applied them, read back
                "inference_num_threads": int(compiled.get_property("INFERENCE_NUM_THREADS")),
                "inference_precision": applied,
                **({"bf16": f"{NATIVE} (OpenVINO's CPU plugin read back {applied})"} if applied == "bf16" else {}),
                "performance_hint": str(compiled.get_property("PERFORMANCE_HINT")),
                "onnx": ctx.built[self.depends_on].info, **kept}
        return Built(OpenVinoRunner(compiled, kept_names(ov_model)), info, state={"model": ov_model, "config": config})

    @staticmethod
    def _quantize(core, ov_model, config: dict, ctx: BuildContext) -> tuple[Any, dict]:
        """The model quantized to INT8 by NNCF within the accuracy budget, and the build facts."""
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

    def kernels(self, built: Built, prepared, device: torch.device) -> KernelProof:
        """The compiled model's conv and matmul nodes after a call, by the precision they ran, and its kept nodes'."""
        built.module.run(prepared)
        return read_openvino(built.module.compiled.get_runtime_model(), built.module.kept)

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
        core = import_openvino().Core()
        model = core.read_model(str(artifact.path))
        return OpenVinoRunner(core.compile_model(model, artifact.settings["device"], artifact.settings["config"]),
                              kept_names(model))
