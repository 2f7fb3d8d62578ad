"""Shared ONNX Runtime plumbing for the ``ort*`` variants (more: docs/backends.md, "Module notes")."""

from __future__ import annotations

import importlib
import shutil
import tempfile
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import torch

from trtbench.core.errors import Unavailable
from trtbench.core.precision import is_quantized
from trtbench.core.schema import join, require_choice
from trtbench.core.target import Target
from trtbench.measure.kernels import KernelProof, read_ort_profile
from trtbench.variants import Artifact, Built, BuildContext, RunnerVariant

OPTIMIZATION_LEVELS = {"all": "ORT_ENABLE_ALL", "layout": "ORT_ENABLE_LAYOUT", "extended": "ORT_ENABLE_EXTENDED",
                       "basic": "ORT_ENABLE_BASIC", "disabled": "ORT_DISABLE_ALL"}
CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
TENSORRT = "TensorrtExecutionProvider"
INSTALL = {CPU: "pip install onnxruntime", CUDA: "pip install onnxruntime-gpu", TENSORRT: "pip install onnxruntime-gpu"}


@dataclass
class OrtOptions:
    """``graph_optimization``: ONNX Runtime's graph optimization level (all, layout, extended, basic, disabled)."""

    graph_optimization: str = "all"

    def validate(self, path: str) -> None:
        require_choice(self.graph_optimization, OPTIMIZATION_LEVELS, join(path, "graph_optimization"))


def import_onnxruntime():
    return importlib.import_module("onnxruntime")


def _config_entry(options, key: str, default: str) -> str:
    """A session config entry as set, or ``default`` where it was left unset (ORT raises then)."""
    try:
        return options.get_session_config_entry(key)
    except RuntimeError:
        return default


def session_options(ort, settings: dict):
    """``SessionOptions`` with the ``settings``' intra-op threads and graph optimization (none: ORT's defaults)."""
    options = ort.SessionOptions()
    if settings:
        options.intra_op_num_threads = settings["intra_op_num_threads"]
        options.graph_optimization_level = getattr(ort.GraphOptimizationLevel,
                                                   OPTIMIZATION_LEVELS[settings["graph_optimization"]])
    return options


def inference_session(ort, path: Path, options, providers: list):
    """An ``InferenceSession`` on the file at ``path`` with ``[[provider, options], ...]``."""
    return ort.InferenceSession(str(path), options, providers=[(name, opts) for name, opts in providers])


def cuda_device_id(device: torch.device) -> str:
    """The CUDA device index of ``device`` ('cuda' is the current device) as a provider option."""
    return str(device.index if device.index is not None else torch.cuda.current_device())


@dataclass
class QuantizedOnnx:
    """An INT8 ONNX model written by the quantizer, in a temporary directory kept with the build."""

    path: Path
    workdir: tempfile.TemporaryDirectory
    input_names: list[str]

    def save(self, destination: Path) -> list[Path]:
        """Copy the model to ``destination``; it needs no other file."""
        shutil.copyfile(self.path, destination)
        return []


class OrtRunner:
    """An ``InferenceSession`` on the model file at ``path``, called with and returning torch tensors."""

    def __init__(self, session, device: torch.device, path: Path):
        self.session, self.device, self.path = session, device, path
        self.input_names = [value.name for value in session.get_inputs()]
        self.output_names = [value.name for value in session.get_outputs()]

    def prepare(self, inputs: tuple):
        """numpy arrays (CPU) or an IOBinding plus the tensors it points into (CUDA)."""
        if len(inputs) != len(self.input_names):
            raise ValueError(f"the ONNX model takes {len(self.input_names)} input(s) ({', '.join(self.input_names)}), "
                             f"got {len(inputs)}")
        if self.device.type != "cuda":
            return {name: t.detach().cpu().contiguous().numpy() for name, t in zip(self.input_names, inputs)}
        tensors = [t.detach().contiguous() for t in inputs]
        binding = self.session.io_binding()
        for name, t in zip(self.input_names, tensors):
            numpy_dtype = torch.empty((), dtype=t.dtype).numpy().dtype
            binding.bind_input(name, "cuda", t.device.index, numpy_dtype, tuple(t.shape), t.data_ptr())
        for name in self.output_names:
            binding.bind_output(name, "cuda", tensors[0].device.index if tensors else 0)
        torch.cuda.synchronize(self.device)  # the inputs are written before ONNX Runtime's stream reads them
        return binding, tensors

    def run(self, prepared) -> list[torch.Tensor]:
        if self.device.type != "cuda":
            return [torch.from_numpy(out) for out in self.session.run(None, prepared)]
        binding, _ = prepared
        self.session.run_with_iobinding(binding)  # returns once the outputs are ready
        return [torch.from_dlpack(value) for value in binding.get_outputs()]

    def __call__(self, *inputs):
        return self.run(self.prepare(inputs))

    def profile(self, prepared) -> KernelProof:
        """The kernels a call ran (CPU inputs), from the profile of a session set up as this one."""
        ort = import_onnxruntime()
        options = self.session.get_session_options()
        options.enable_profiling = True
        with tempfile.TemporaryDirectory(prefix="trtbench-ort-profile-") as folder:
            options.profile_file_prefix = str(Path(folder) / "profile")
            providers = self.session.get_provider_options()
            session = inference_session(ort, self.path, options, [[name, providers.get(name, {})]
                                                                  for name in self.session.get_providers()])
            session.run(None, prepared)
            return read_ort_profile(session.end_profiling())


class OrtVariant(RunnerVariant):
    """Runs the ``onnx`` step's model with ``provider`` (subclasses set ``name`` and ``provider``)."""

    depends_on = "onnx"
    runtime = "onnxruntime"
    provider: str
    Options = OrtOptions

    def unavailable_reason(self, target: Target) -> str | None:
        device = target.device
        if self.provider == CPU and device.type != "cpu":
            return f"{self.name} runs ONNX Runtime on the CPU and this run uses '{device}'; list ort_cuda or ort_trt"
        if self.provider != CPU:
            if not torch.cuda.is_available():
                return f"CUDA is not available on this machine ({self.name} runs ONNX Runtime's {self.provider})"
            if device.type != "cuda":
                return f"{self.name} needs a CUDA device, this run uses '{device}'"
        try:
            ort = import_onnxruntime()
        except ImportError:
            return f"onnxruntime is not installed ({INSTALL[self.provider]})"
        if self.provider not in ort.get_available_providers():
            return (f"onnxruntime {ort.__version__} has no {self.provider} "
                    f"(it has {', '.join(ort.get_available_providers())}; {INSTALL[self.provider]})")
        return None

    def provider_options(self, ctx: BuildContext, input_names: list[str]) -> dict:
        """Options of ``provider`` for this build (strings, as ONNX Runtime takes them): a GPU provider's device."""
        return {} if self.provider == CPU else {"device_id": cuda_device_id(ctx.device)}

    def providers(self, ctx: BuildContext, input_names: list[str]) -> list[list]:
        """``[[provider, options], ...]`` in priority order; a subclass may add a fallback."""
        return [[self.provider, self.provider_options(ctx, input_names)]]

    def build(self, model, ctx: BuildContext) -> Built:
        ort = import_onnxruntime()
        options = self.options_of(ctx)
        onnx_model = ctx.built[self.depends_on].state
        settings = {"intra_op_num_threads": torch.get_num_threads(), "graph_optimization": options.graph_optimization}
        providers = self.providers(ctx, onnx_model.input_names)
        quantization = {}
        if is_quantized(ctx.precision):
            onnx_model, quantization = self._quantize(onnx_model, ctx, session_options(ort, settings), providers)
        session = self._session(ort, onnx_model, session_options(ort, settings), providers, ctx)
        used = session.get_providers()
        if used[0] != self.provider:
            raise RuntimeError(f"onnxruntime could not start {self.provider} and fell back to {used[0]} "
                               f"(see its log above for why)")
        info = {"onnxruntime": ort.__version__, "providers": used, **settings, "onnx": ctx.built[self.depends_on].info,
                **quantization}
        return Built(OrtRunner(session, ctx.device, onnx_model.path), info,
                     state={"onnx": onnx_model, "providers": providers, "session": settings})

    def _session(self, ort, onnx_model, options, providers, ctx: BuildContext):
        """The build's session; Unavailable where the provider or ONNX has nothing for the reduced float precision."""
        from onnxruntime.capi.onnxruntime_pybind11_state import InvalidGraph, NotImplemented as OrtNotImplemented

        try:
            return inference_session(ort, onnx_model.path, options, providers)
        except (OrtNotImplemented, InvalidGraph) as err:
            message = next((line.strip() for line in str(err).splitlines() if line.strip()), "")
            if ctx.dtype == torch.float32 or (isinstance(err, InvalidGraph) and "Type Error" not in message):
                raise
            what = "kernel" if isinstance(err, OrtNotImplemented) else "operator schema (INVALID_GRAPH)"
            raise Unavailable(f"onnxruntime {ort.__version__}'s {self.provider} has no {ctx.precision} {what} for "
                              f"this model: {message.split(' : ', 2)[-1].split('failed:')[-1]}") from err

    def _quantize(self, onnx_model, ctx: BuildContext, options, providers) -> tuple["QuantizedOnnx", dict]:
        """The ONNX model quantized to INT8 within the accuracy budget, and the build facts."""
        from trtbench.quantize.fallback import quantize_within_budget
        from trtbench.quantize.ort import cpu_quant_types, onnx_layer_modules, quantizable_layers_onnx, quantize_onnx

        ort = import_onnxruntime()
        workdir = tempfile.TemporaryDirectory(prefix="trtbench-ort-int8-")
        files: dict[int, Path] = {}

        def quantize(settings) -> OrtRunner:
            path = quantize_onnx(onnx_model.path, Path(workdir.name) / f"int8-{len(files)}.onnx",
                                 onnx_model.input_names, ctx.int8.calibration, settings,
                                 calibration_cache=Path(workdir.name) / "ranges.json")
            runner = OrtRunner(inference_session(ort, path, options, providers), ctx.device, path)
            files[id(runner)] = path
            return runner

        result = quantize_within_budget(quantize, quantizable_layers_onnx(onnx_model.path), ctx.int8)
        quantized = QuantizedOnnx(files[id(result.model)], workdir, onnx_model.input_names)
        return quantized, {"int8": {**result.info(onnx_layer_modules(onnx_model.path)), **cpu_quant_types()},
                           "accuracy": result.accuracy.to_dict()}

    def thread_settings(self, built: Built) -> dict:
        options = built.module.session.get_session_options()
        spinning = _config_entry(options, "session.intra_op.allow_spinning", "1 (onnxruntime default)")
        return {"runtime_threads": options.intra_op_num_threads,
                "runtime_inter_op_threads": options.inter_op_num_threads,
                "spinning": "session.intra_op.allow_spinning=" + spinning}

    def kernels(self, built: Built, prepared, device: torch.device) -> Optional[KernelProof]:
        """One call, and the kernels a profiled session of the same file ran (CPU; None on a GPU provider, whose
        kernels it does not name)."""
        built.module.run(prepared)
        return built.module.profile(prepared) if self.provider == CPU else None

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        path = directory / f"{stem}.onnx"
        companions = built.state["onnx"].save(path)
        return [Artifact(path=path, loader="onnxruntime", companions=companions,
                         settings={"providers": built.state["providers"], "session": built.state["session"]})]

    def at_threads(self, artifact: Artifact, threads: int) -> Artifact:
        session = artifact.settings.get("session")
        if not session:
            return artifact
        return dataclasses.replace(artifact, settings={**artifact.settings,
                                                       "session": {**session, "intra_op_num_threads": threads}})

    def load(self, artifact: Artifact, device: torch.device):
        """The saved model in a session set up as the build's was (threads, graph optimization)."""
        ort = import_onnxruntime()
        options = session_options(ort, artifact.settings.get("session") or {})
        return OrtRunner(inference_session(ort, artifact.path, options, artifact.settings["providers"]), device,
                         artifact.path)
