"""Shared Torch-TensorRT plumbing for the ``trt*`` variants (more: docs/tensorrt.md, "Module notes")."""

from __future__ import annotations

import copy
import importlib
import inspect
import operator
from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from trtbench.core.deprecation import Deprecation
from trtbench.core.errors import UserInputError
from trtbench.core.fsutil import save_through_memory
from trtbench.core.precision import dtype_name, precision_dtype
from trtbench.core.schema import join
from trtbench.core.target import Target
from trtbench.variants import Artifact, Built, BuildContext, Variant
from trtbench.variants.torchscript_common import TORCHSCRIPT_WARNINGS

DYNAMO = "dynamo"
TORCHSCRIPT = "torchscript"
# the dtypes the TorchScript frontend takes: those _enums.py ``dtype.to(_C.dtype)`` maps (no bfloat16)
TS_DTYPES = (torch.bool, torch.int8, torch.int32, torch.long, torch.float16, torch.float32, torch.float64)

TS_FRONTEND_DEPRECATION = Deprecation("Torch-TensorRT's TorchScript frontend", "torch_tensorrt 2.14", ("trt",),
                                      (r"The torchscript frontend for Torch-TensorRT has been deprecated",))
# the TorchScript the frontend compiles and saves: its way out is the dynamo frontend's variant
TORCHSCRIPT_TO_TRT = Deprecation("TorchScript", "torch 2.14", ("trt",), TORCHSCRIPT_WARNINGS)


def import_torch_tensorrt():
    """The ``torch_tensorrt`` module (imported on first use)."""
    return importlib.import_module("torch_tensorrt")


def why_no_torch_tensorrt(device: torch.device, install: str = "") -> str | None:
    """Why Torch-TensorRT cannot build engines for ``device`` here (``install``: its install line), or None."""
    if not torch.cuda.is_available():
        return "CUDA is not available on this machine (Torch-TensorRT builds TensorRT engines for NVIDIA GPUs)"
    if device.type != "cuda":
        return f"Torch-TensorRT needs a CUDA device, this run uses '{device}'"
    try:
        import_torch_tensorrt()
    except ImportError as err:
        return f"torch_tensorrt is not installed ({err})" + (f": {install}" if install else "")
    except Exception as err:  # a broken install raises OSError, RuntimeError, AttributeError...
        return f"torch_tensorrt cannot be loaded ({type(err).__name__}: {err})"
    return None


def version_of(trt) -> str:
    return str(getattr(trt, "__version__", "unknown"))


def has_ts_frontend(trt) -> bool:
    """Whether this torch_tensorrt build has the TorchScript frontend (``ir="ts"``)."""
    features = getattr(trt, "ENABLED_FEATURES", None)
    return bool(features.torchscript_frontend) if features is not None else hasattr(trt, "ts")


@dataclass
class TRTOptions:
    """Torch-TensorRT compile settings (the ``{trt: {...}}`` keys of a config); unset (null) ones are not passed."""

    optimization_level: Optional[int] = None  # TensorRT builder optimization level 0-5
    min_block_size: Optional[int] = None  # fewest consecutive convertible ops that form a TRT segment
    workspace_size: Optional[int] = None  # bytes of builder workspace
    require_full_compilation: bool = False  # fail instead of running unsupported ops in PyTorch
    torch_executed_ops: list[str] = field(default_factory=list)  # ops forced to run in PyTorch
    truncate_double: bool = False  # convert float64 weights/ops to float32
    allow_tf32: bool = True  # false: FP32 layers without TF32 (disable_tf32), as PyTorch's default FP32 matmul

    def validate(self, path: str) -> None:
        if self.optimization_level is not None and not 0 <= self.optimization_level <= 5:
            raise UserInputError(join(path, "optimization_level"), f"got {self.optimization_level}",
                                 "use a TensorRT builder optimization level from 0 to 5")
        if self.min_block_size is not None and self.min_block_size < 1:
            raise UserInputError(join(path, "min_block_size"), f"got {self.min_block_size}", "use 1 or more")
        if self.workspace_size is not None and self.workspace_size < 0:
            raise UserInputError(join(path, "workspace_size"), f"got {self.workspace_size}",
                                 "give a size in bytes (0 or more)")
        if self.require_full_compilation and self.torch_executed_ops:
            raise UserInputError(join(path, "torch_executed_ops"), "is set together with require_full_compilation",
                                 "ops forced to PyTorch contradict full compilation: drop one of the two")
        for i, op in enumerate(self.torch_executed_ops):
            wrong = self.misnamed_op(op)
            if wrong:
                raise UserInputError(join(join(path, "torch_executed_ops"), i), f"'{op}' {wrong[0]}", wrong[1])

    def misnamed_op(self, op: str) -> Optional[tuple[str, str]]:
        """Why ``op`` is not an op name its frontend matches, and the fix (None: it is, or no frontend is set)."""
        return None


@dataclass
class DynamoOptions(TRTOptions):
    """Options of the dynamo-frontend variant; ops are named like ``torch.ops.aten.add.Tensor``."""

    def misnamed_op(self, op: str) -> Optional[tuple[str, str]]:
        if not op.startswith("torch.ops."):
            return "is not an ATen overload name", "the dynamo frontend matches names like 'torch.ops.aten.add.Tensor'"
        return None


@dataclass
class TorchScriptOptions(TRTOptions):
    """Options of the TorchScript-frontend variants; ops are named like ``aten::add``."""

    def misnamed_op(self, op: str) -> Optional[tuple[str, str]]:
        if "::" not in op:
            return "is not a TorchScript op name", "the TorchScript frontend matches names like 'aten::add'"
        return None


def trt_inputs(trt, input_specs, example_inputs) -> list:
    """One ``torch_tensorrt.Input`` per config input: its min/opt/max shapes and the run dtype."""
    return [trt.Input(min_shape=tuple(spec.min_shape), opt_shape=tuple(spec.opt_shape),
                      max_shape=tuple(spec.max_shape), dtype=example.dtype) if spec.is_dynamic
            else trt.Input(shape=tuple(spec.opt_shape), dtype=example.dtype)
            for spec, example in zip(input_specs, example_inputs)]


def trt_device(trt, device: torch.device):
    """``torch_tensorrt.Device`` for ``device``: its index, or the current CUDA device for a bare ``cuda``."""
    return trt.Device(gpu_id=torch.cuda.current_device() if device.index is None else device.index)


def inference_copy(module):
    """A copy of ``module`` without grad, to compile from (under ``no_grad``: a ScriptModule's copy has no leaves)."""
    with torch.no_grad():
        frozen = copy.deepcopy(module)
    for param in frozen.parameters():
        param.requires_grad_(False)
    return frozen


def compile_kwargs(trt, frontend: str, options: TRTOptions, dtype: torch.dtype, device: torch.device) -> dict:
    """``torch_tensorrt.compile``'s keyword arguments from the options, TensorRT keeping ``dtype``."""
    fn = trt.dynamo.compile if frontend == DYNAMO else trt.ts.compile
    params = {name for name, p in inspect.signature(fn).parameters.items() if p.kind is not p.VAR_KEYWORD}
    kwargs: dict[str, Any] = {"device": trt_device(trt, device), "disable_tf32": not options.allow_tf32,
                              "require_full_compilation": options.require_full_compilation}
    if "use_explicit_typing" in params:
        kwargs["use_explicit_typing"] = True
    elif "enabled_precisions" in params:
        kwargs["enabled_precisions"] = {dtype}
    kwargs.update({name: getattr(options, name) for name in ("optimization_level", "min_block_size", "workspace_size")
                   if getattr(options, name) is not None})
    if options.torch_executed_ops:
        ops = options.torch_executed_ops
        kwargs["torch_executed_ops"] = set(ops) if frontend == DYNAMO else list(ops)
    if options.truncate_double:
        kwargs["truncate_double" if "truncate_double" in params else "truncate_long_and_double"] = True
    unsupported = sorted(set(kwargs) - params)
    if unsupported:
        raise ValueError(f"torch_tensorrt {version_of(trt)} {frontend} frontend does not accept "
                         f"{', '.join(unsupported)}; remove it from the variant options")
    return kwargs


def describe_settings(kwargs: dict) -> dict:
    """The compile settings as JSON-serialisable data for results."""
    def plain(value):
        if isinstance(value, (set, frozenset)):
            return sorted(str(v) for v in value)
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, (bool, int, float, str, type(None))):
            return value
        return str(value)  # torch.dtype, torch_tensorrt.Device

    return {key: plain(value) for key, value in kwargs.items()}


def check_input_ranges(input_specs, inputs) -> None:
    """Raise ValueError when an input's rank or any dim lies outside the engine's [min, max]."""
    if len(inputs) != len(input_specs):
        raise ValueError(f"the TensorRT engine takes {len(input_specs)} input(s), got {len(inputs)}")
    for spec, tensor in zip(input_specs, inputs):
        lo, hi = list(spec.min_shape), list(spec.max_shape)
        shape = list(tensor.shape)
        if len(shape) != len(lo):
            raise ValueError(f"input '{spec.name}' has shape {shape} ({len(shape)} dims) but the TensorRT engine "
                             f"was built for {len(lo)} dims (min_shape {lo}, max_shape {hi})")
        for dim, (size, low, high) in enumerate(zip(shape, lo, hi)):
            if not low <= size <= high:
                raise ValueError(f"input '{spec.name}' dim {dim} is {size}, outside the range [{low}, {high}] the "
                                 f"TensorRT engine was built for (min_shape {lo}, max_shape {hi}); "
                                 f"widen min_shape/max_shape in the config and rebuild")


class RangeGuard:
    """Calls a compiled TensorRT module after checking every input against the engine's shape range."""

    def __init__(self, module, input_specs):
        self.module = module
        self.input_specs = list(input_specs)

    def __call__(self, *inputs):
        check_input_ranges(self.input_specs, inputs)
        return self.module(*inputs)


def fx_segments(gm: torch.fx.GraphModule) -> dict:
    """TensorRT vs PyTorch segments and ops of a dynamo-compiled GraphModule (tuple indexing excluded)."""
    trt = torch_segments = torch_ops = 0
    for name, child in gm.named_children():
        if name.startswith("_run_on_acc"):
            trt += 1
        elif name.startswith("_run_on_gpu"):
            torch_segments += 1
            torch_ops += sum(1 for n in child.graph.nodes if n.op == "call_function")
    torch_ops += sum(1 for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem)
    return {"trt_segments": trt, "torch_segments": torch_segments, "torch_ops": torch_ops}


def ts_segments(module: torch.jit.ScriptModule) -> dict:
    """TensorRT engines vs PyTorch segments (runs of ``aten::`` nodes) of a TorchScript-frontend module."""
    trt = torch_segments = torch_ops = 0
    in_torch_run = False
    for node in module.inlined_graph.nodes():
        kind = node.kind()
        if kind == "tensorrt::execute_engine":
            trt += 1
            in_torch_run = False
        elif kind.startswith("aten::"):
            torch_ops += 1
            if not in_torch_run:
                torch_segments += 1
                in_torch_run = True
    return {"trt_segments": trt, "torch_segments": torch_segments, "torch_ops": torch_ops}


def build_info(trt, frontend: str, kwargs: dict, ctx: BuildContext, segments: dict) -> dict:
    inputs = [{"name": spec.name, "min_shape": list(spec.min_shape), "opt_shape": list(spec.opt_shape),
               "max_shape": list(spec.max_shape), "dtype": str(example.dtype)}
              for spec, example in zip(ctx.input_specs, ctx.example_inputs)]
    return {"frontend": frontend, "torch_tensorrt": version_of(trt), "compile_settings": describe_settings(kwargs),
            "inputs": inputs, "segments": segments}


class TensorRTVariant(Variant):
    """What every TensorRT variant shares: contiguous inputs, and reloading its artifacts."""

    runtime = "tensorrt"

    def prepare(self, built: Built, inputs: tuple) -> tuple:
        """The inputs in contiguous (NCHW for 4-D) layout, the one the TensorRT runtime copies them into."""
        return tuple(t.contiguous() if isinstance(t, torch.Tensor) else t for t in inputs)

    def load(self, artifact: Artifact, device: torch.device):
        import_torch_tensorrt()  # registers the TensorRT engine class first
        if artifact.loader == "torch.jit.load":
            return torch.jit.load(str(artifact.path), map_location=device)
        return torch.export.load(str(artifact.path)).module()


class TorchScriptFrontendVariant(TensorRTVariant):
    """Compiles the ScriptModule of ``depends_on`` with Torch-TensorRT's TorchScript frontend."""

    Options = TorchScriptOptions
    deprecations = (TS_FRONTEND_DEPRECATION, TORCHSCRIPT_TO_TRT)

    def unavailable_reason(self, target: Target) -> str | None:
        device = target.device
        if precision_dtype(target.precision) not in TS_DTYPES:
            return (f"Torch-TensorRT's TorchScript frontend takes no {target.precision} (its dtypes: "
                    f"{', '.join(dtype_name(d) for d in TS_DTYPES)}); list trt, whose strongly typed engine is "
                    f"{target.precision}")
        reason = why_no_torch_tensorrt(device)
        if reason is None:
            trt = import_torch_tensorrt()
            if not has_ts_frontend(trt):
                reason = (f"torch_tensorrt {version_of(trt)} has no TorchScript frontend (ir=\"ts\"); "
                          f"the 'trt' variant uses the dynamo frontend")
        return reason

    def build(self, model, ctx: BuildContext) -> Built:
        trt = import_torch_tensorrt()
        options = self.options_of(ctx)
        script_module = inference_copy(ctx.built[self.depends_on].module)
        kwargs = compile_kwargs(trt, TORCHSCRIPT, options, ctx.dtype, ctx.device)
        compiled = trt.compile(script_module, ir="ts", inputs=trt_inputs(trt, ctx.input_specs, ctx.example_inputs),
                               **kwargs)
        info = build_info(trt, TORCHSCRIPT, kwargs, ctx, ts_segments(compiled))
        return Built(RangeGuard(compiled, ctx.input_specs), info, state=compiled)

    def save(self, built: Built, directory, stem: str) -> list[Artifact]:
        path = directory / f"{stem}.ts"
        save_through_memory(path, lambda fh: torch.jit.save(built.state, fh))
        return [Artifact(path=path, loader="torch.jit.load", imports=["torch_tensorrt"])]
