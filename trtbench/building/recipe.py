"""How a timing worker gets its variant: the deployed file, loaded with the variant's own ``load()``, or else the
same build from the parent's weights and inputs (:func:`write_payload`) (docs/measuring.md, "Each runtime in its own
process")."""

from __future__ import annotations

import dataclasses
import importlib
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

import torch

from trtbench.building.copies import PrecisionCopy, cast_to_precision
from trtbench.building.stage import BuildList, build_variants
from trtbench.core.allocator import mmap_threshold
from trtbench.core.deprecation import silenced
from trtbench.core.env import pin_fp32_math, torch_thread_facts
from trtbench.core.fsutil import save_through_memory
from trtbench.core.outdir import FailureLog
from trtbench.core.precision import dtype_name, precision_dtype
from trtbench.variants import Artifact, BuildContext, Built, build_order, get_variant

if TYPE_CHECKING:  # the config's and the plan's types; a worker imports this module, not theirs
    from trtbench.config.config import Config
    from trtbench.config.plan import BuildGroup


HOSTED_FILE = "hosted_file"  # worker fact: the suffix of the variant's saved file that the worker loaded and ran
# worker facts of a rebuild: what its first call cost, and whether torch.compile's replicate processes found
# Inductor's on-disk cache (one per user, shared by a run's processes) warm
REBUILD_FACTS = ("first_call_s", "fxgraph_cache_hits", "fxgraph_cache_misses")
# worker fact: glibc's mmap threshold once built and warmed up (core/allocator.py)
ALLOCATOR_STATE = "mmap_threshold_bytes"
KERNELS = "kernels"  # worker fact: the precision its first call's kernels ran (KernelProof.to_dict; None: unread)
FP32_MATH = "fp32_math"  # worker fact: torch's fp32 math as pinned (core/env.py pin_fp32_math)


def write_payload(path: Path, model: torch.nn.Module, example: tuple, inputs: dict[str, tuple]) -> Path:
    """The weights and inputs a group's workers load (``path`` is removed by the caller); a full disk is a
    DiskFullError naming the folder (torch.save's own error there names no cause)."""
    payload = {"state_dict": model.state_dict(), "example": list(example),
               "inputs": {label: list(values) for label, values in inputs.items()}}
    save_through_memory(path, lambda file: torch.save(payload, file), "the timing workers' weights and inputs",
                        "free some space there, or set TMPDIR to a folder with more: it is a temporary folder")
    return path


def write_payloads(folder: Path, copies: dict[str, PrecisionCopy], precisions: Iterable[str],
                   inputs: Callable[[PrecisionCopy], dict[str, tuple]], stem: str = "payload") -> dict[str, Path]:
    """The payload each of ``precisions`` loads: one file per compute dtype in ``folder`` (``<stem>-<dtype>.pt``),
    of that dtype's copy, its example and ``inputs(copy)``; precisions of one dtype share it (int8 loads fp32's)."""
    by_dtype: dict[torch.dtype, Path] = {}
    for precision in precisions:
        at = copies[precision]
        if at.dtype not in by_dtype:
            by_dtype[at.dtype] = write_payload(folder / f"{stem}-{dtype_name(at.dtype)}.pt", at.model, at.example,
                                               inputs(at))
    return {precision: by_dtype[copies[precision].dtype] for precision in precisions}


def _owned(value: Any) -> Any:
    """An input of a file-backed payload in memory of its own, as a deployment's inputs are."""
    return value.clone() if isinstance(value, torch.Tensor) else value


@dataclass(frozen=True, kw_only=True)
class VariantRecipe:
    """Everything a fresh process needs to rebuild ``variant`` as the parent built it."""

    model: Any  # trtbench.models.ModelConfig (a worker unpickles it without importing the config layer)
    variant: str
    options: dict  # variant name -> its options, for the variant and what it builds from
    precision: str
    device: str
    threads: int
    cudnn_benchmark: bool
    channels_last: bool
    input_specs: list  # trtbench.core.inputs.InputConfig
    payload: str  # write_payload's file
    artifact: Optional[Artifact] = None  # the parent's saved build, loaded instead of building
    fp32_modules: tuple[str, ...] = ()  # the modules the accuracy fallback kept in fp32 (PrecisionCopy.fp32_modules)

    @classmethod
    def for_group(cls, config: Config, group: BuildGroup, variant: str, precision: str, payload: Path,
                  device: torch.device) -> "VariantRecipe":
        """The recipe of ``variant`` at ``precision`` of build ``group`` under the run's ``config``, loading
        ``payload`` (:func:`write_payloads`), rebuilt in the worker (:meth:`hosting` loads a saved file instead)."""
        return cls(model=group.model, variant=variant, options=group.variant_options(), precision=precision,
                   device=str(device), threads=group.threads, cudnn_benchmark=config.benchmark.cudnn_benchmark,
                   channels_last=config.channels_last, input_specs=config.inputs, payload=str(payload))

    def hosting(self, artifact: Optional[Artifact], threads: Optional[int] = None) -> "VariantRecipe":
        """This recipe loading ``artifact`` (None: rebuilt), at ``threads`` where given (a serving worker's)."""
        return dataclasses.replace(self, artifact=artifact, threads=self.threads if threads is None else threads)

    def keeping(self, fp32_modules: tuple[str, ...]) -> "VariantRecipe":
        """This recipe rebuilding with ``fp32_modules`` kept in fp32, as its precision's copy in the parent."""
        return dataclasses.replace(self, fp32_modules=tuple(fp32_modules))

    def materialize(self) -> tuple[dict[str, Any], dict]:
        fp32_math = pin_fp32_math()
        torch.set_num_threads(self.threads)
        torch.backends.cudnn.benchmark = self.cudnn_benchmark
        device = torch.device(self.device)
        if device.type == "cuda":
            torch.cuda.set_device(device)
        # file-backed (mmap): a plain load would free the weights it copied from before the timed calls, and
        # glibc would keep its mmap threshold raised to the largest, unlike a deployment (core/allocator.py)
        payload = torch.load(self.payload, map_location=device, weights_only=True, mmap=True)
        inputs = {label: tuple(_owned(v) for v in values) for label, values in payload["inputs"].items()}
        variant = get_variant(self.variant)
        if self.artifact is not None:
            for module in self.artifact.imports:  # e.g. torch_tensorrt registers its runtime ops
                importlib.import_module(module)
            with silenced(variant.deprecations):  # the parent's build and save said them in the rows
                built = Built(variant.load(self.artifact, device), {"loaded": self.artifact.path.name})
        else:
            built = self._build(payload, inputs, device)
        calls, proof = {}, None
        with torch.inference_mode():
            for label, values in inputs.items():
                prepared = variant.prepare(built, values)
                if not calls:  # the process's first call, with the precision its kernels ran (the build's)
                    proof = variant.kernels(built, prepared, device)
                calls[label] = (lambda p=prepared: variant.run(built, p))
        del payload  # its file mapping (a rebuild copied the weights it needs)
        facts = {**torch_thread_facts(), ALLOCATOR_STATE: mmap_threshold(), FP32_MATH: fp32_math,
                 KERNELS: proof.to_dict() if proof is not None else None,
                 "hosts": f"the saved {self.artifact.path.suffix} file" if self.artifact else "a rebuild",
                 **({HOSTED_FILE: self.artifact.path.suffix} if self.artifact else {}),
                 **{key: built.info[key] for key in REBUILD_FACTS if key in built.info},
                 **variant.thread_settings(built)}
        return calls, facts

    def _build(self, payload: dict, inputs: dict, device: torch.device) -> Built:
        from trtbench.models import build_model
        from trtbench.core.precision import is_quantized

        if is_quantized(self.precision):  # its calibration and accuracy fallback ran in the parent, once
            raise RuntimeError(f"{self.variant} at {self.precision} saves no file for its timing worker to load, and "
                               f"a quantized build is not redone in a worker; use benchmark.isolation: in_process")

        model = cast_to_precision(build_model(self.model), self.precision, device, self.fp32_modules,
                                  channels_last=self.channels_last)
        model.load_state_dict(payload["state_dict"])
        ctx = BuildContext(device=device, precision=self.precision, dtype=precision_dtype(self.precision),
                           example_inputs=tuple(_owned(v) for v in payload["example"]), shape_inputs=inputs,
                           input_specs=self.input_specs, fp32_modules=self.fp32_modules)
        with tempfile.TemporaryDirectory(prefix="trtbench-worker-") as logs:
            outcomes = build_variants(BuildList(build_order([self.variant]), self.options), model, ctx,
                                      FailureLog(Path(logs)))
            outcome = outcomes[self.variant]
            if outcome.built is None:
                log = (Path(logs) / "failures.log")
                raise RuntimeError(f"{self.variant} did not build in its worker ({outcome.status}: {outcome.reason})\n"
                                   + (log.read_text() if log.exists() else ""))
        return outcome.built
