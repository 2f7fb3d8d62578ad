"""The common interface every variant implements: build, run, save, load."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Optional

import torch

from trtbench.core.deprecation import Deprecation
from trtbench.core.target import Target
from trtbench.measure.kernels import KernelProof, onednn_lines, read_onednn


@dataclass
class NoOptions:
    """Options of a variant that takes none."""


@dataclass
class BuildContext:
    """What a variant needs to build itself for one precision."""

    device: torch.device
    precision: str
    dtype: torch.dtype
    example_inputs: tuple  # at the opt shape, on the device, in the run dtype
    shape_inputs: dict  # point label (min/opt/max, b8) -> inputs at that point, on the device
    input_specs: list  # InputConfig list
    options: Any = None
    built: dict = field(default_factory=dict)  # variant name -> Built, earlier builds at this precision
    int8: Any = None  # at a quantized precision: trtbench.quantize.setup.Int8Setup (calibration data, budget)
    fp32_modules: tuple = ()  # at fp16 or bf16: the modules the accuracy fallback keeps in fp32 (in the model's copy)


@dataclass
class Built:
    """A built variant: the callable to benchmark plus facts about its build."""

    module: Any
    info: dict = field(default_factory=dict)  # reported in results.json (JSON-serialisable)
    state: Any = None  # variant-private objects that save() needs, never reported


@dataclass
class Artifact:
    """A deployable file a variant saved, and how a fresh process loads it."""

    path: Path
    loader: str  # how the verify worker loads it: "torch.jit.load", "torch.export.load", "onnxruntime", ...
    imports: list[str] = field(default_factory=list)  # modules to import before loading (e.g. torch_tensorrt)
    companions: list[Path] = field(default_factory=list)  # files ``path`` needs beside it (OpenVINO .bin)
    settings: dict = field(default_factory=dict)  # what the loader needs besides the file (ONNX Runtime providers)
    outputs: list[str] = field(default_factory=list)  # names of the tensors the loaded file returns, where known


class Variant(ABC):
    """Base class: subclass, set ``name``, implement ``build``; register with ``@register``."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    Options: ClassVar[type] = NoOptions  # a dataclass: the YAML schema of the variant's options
    depends_on: ClassVar[Optional[str]] = None  # a variant whose build this one starts from (built first)
    timed: ClassVar[bool] = True  # False: a build step (onnx), built for its dependents, never timed or listed
    quantizes: ClassVar[bool] = False  # has an INT8 path: at int8 its build quantizes (BuildContext.int8)
    int8_reload_rtol: ClassVar[Optional[float]] = None  # its reloaded int8 file's tolerance (None: fp32's)
    deprecations: ClassVar[tuple[Deprecation, ...]] = ()  # what upstream deprecates of how it is built or loaded
    hints: ClassVar[tuple[str, ...]] = ()  # precisions its runtime reaches by a hint on fp32's build
    runtime: ClassVar[str] = "torch"  # whose kernels compute its calls: torch, onnxruntime, openvino or tensorrt

    def unavailable_reason(self, target: Target) -> str | None:
        """Why this variant cannot run at ``target``'s device and precision here, or None."""
        return None

    def options_of(self, ctx: BuildContext) -> Any:
        """The build's options: the config's, else the defaults of :attr:`Options`."""
        return ctx.options or self.Options()

    @abstractmethod
    def build(self, model: torch.nn.Module, ctx: BuildContext) -> Built:
        """Turn the eager model (already on the device, in the run dtype) into this variant."""

    def prepare(self, built: Built, inputs: tuple) -> Any:
        """Turn the harness's torch inputs into what ``run`` takes, outside the timed region, once per shape point."""
        return inputs

    def run(self, built: Built, prepared: Any) -> Any:
        """Run one forward pass on inputs from ``prepare``; return torch tensors (or a pytree of them)."""
        return built.module(*prepared)

    def kernels(self, built: Built, prepared: Any, device: torch.device) -> Optional[KernelProof]:
        """One call, and the precision its conv and matmul kernels ran as its runtime reports it (None: it cannot
        say)."""
        if device.type != "cpu":
            self.run(built, prepared)
            return None
        return read_onednn(onednn_lines(lambda: self.run(built, prepared)))

    def thread_settings(self, built: Built) -> dict:
        """The runtime's own thread settings (pool sizes, spinning) for the report's isolation table."""
        return {}

    def run_info(self, built: Built) -> dict:
        """Facts known only after every shape point ran (e.g. recompilations); merged into build info."""
        return {}

    def save(self, built: Built, directory: Path, stem: str) -> list[Artifact]:
        """Save deployable files under ``directory``; the default saves nothing."""
        return []

    @property
    def saves_files(self) -> bool:
        """Whether this variant has deployable files to save (it overrides :meth:`save`)."""
        return type(self).save is not Variant.save

    def load(self, artifact: Artifact, device: torch.device) -> Any:
        """Reload a saved artifact as a callable (only called for files this variant's save() wrote)."""
        raise NotImplementedError(f"variant {self.name} saves no artifacts")

    def at_threads(self, artifact: Artifact, threads: int) -> Artifact:
        """``artifact`` set up so that :meth:`load` runs it on ``threads`` threads (torch's follow the process's)."""
        return artifact

    @classmethod
    def option_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls.Options)]


class RunnerVariant(Variant):
    """A variant whose built module is a runtime's runner, which prepares and runs its own inputs."""

    def prepare(self, built: Built, inputs: tuple) -> Any:
        return built.module.prepare(inputs)

    def run(self, built: Built, prepared: Any) -> Any:
        return built.module.run(prepared)
