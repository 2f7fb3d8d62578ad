"""The CPU deployment knobs a timed process starts with (more: docs/measuring.md, "Module notes")."""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Optional

from trtbench.core import allocator as allocator_state
from trtbench.core.target import Target

OPENMP = ("default", "intel")
BINDING = ("none", "cores")
CHOICES = {"allocator": allocator_state.ALLOCATORS, "openmp": OPENMP, "binding": BINDING}
INTEL_OPENMP = ("libiomp5.so", "pip install intel-openmp, or the extra trtbench[openmp]")
BOUND_CPUS = "TRTBENCH_BOUND_CPUS"  # the cores a worker binds itself to when it starts (apply_binding)
BINDING_VARS = ("OMP_PROC_BIND", "OMP_PLACES", "KMP_AFFINITY", BOUND_CPUS)


def _intel_openmp() -> Optional[Path]:
    """libiomp5.so where pip's intel-openmp puts it (this environment's lib), or in a system directory."""
    return allocator_state.find_library(INTEL_OPENMP[0], (str(Path(sys.prefix) / "lib"), *allocator_state.LIBRARY_DIRS))


@dataclass(frozen=True)
class Knobs:
    """One setting of every knob (the defaults: what a process gets when nobody sets one)."""

    allocator: str = "default"
    openmp: str = "default"
    binding: str = "none"

    @property
    def text(self) -> str:
        """The knobs set away from their defaults, canonical (``allocator=tcmalloc,binding=cores``)."""
        default = Knobs()
        return ",".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                        if getattr(self, f.name) != getattr(default, f.name))

    @property
    def label(self) -> str:
        """:attr:`text`, or ``defaults``, for tables."""
        return self.text or "defaults"

    def to_dict(self) -> dict:
        return asdict(self)

    def unavailable_reason(self, target: Target) -> Optional[str]:
        """Why a process cannot start with these knobs on ``target``, with the fix (None: it can)."""
        threads, processes = target.threads, target.processes
        reason = allocator_state.missing_library(self.allocator)
        if reason is None and self.openmp == "intel" and _intel_openmp() is None:
            reason = f"openmp intel: {INTEL_OPENMP[0]} is not installed here ({INTEL_OPENMP[1]})"
        if reason is None and self.binding == "cores" and threads * processes > len(os.sched_getaffinity(0)):
            reason = (f"binding cores: {processes} process(es) of {threads} thread(s) need {threads * processes} "
                      f"cores, and this process may use {len(os.sched_getaffinity(0))}; lower the threads or "
                      f"workers, or use binding: none")
        return reason

    def env(self, base: dict, threads: int = 1, slot: int = 0) -> dict:
        """``base`` for a process that starts with these knobs (``slot``: its place, for the binding)."""
        out = allocator_state.process_env(self.allocator, {k: v for k, v in base.items() if k not in BINDING_VARS})
        if self.openmp == "intel":
            library = _intel_openmp()
            if library is None:
                raise ValueError(self.unavailable_reason(Target()))
            out["LD_PRELOAD"] = " ".join(p for p in (out.get("LD_PRELOAD"), str(library)) if p)
        if self.binding == "cores":
            allowed = sorted(os.sched_getaffinity(0))
            cores = allowed[slot * threads:(slot + 1) * threads]
            if len(cores) < threads:
                raise ValueError(self.unavailable_reason(Target(threads=threads, processes=slot + 1)))
            out[BOUND_CPUS] = ",".join(map(str, cores))
            out["OMP_PROC_BIND"], out["OMP_PLACES"] = "close", "cores"
            if self.openmp == "intel":
                out["KMP_AFFINITY"] = "granularity=fine,compact,1,0"
        return out


def apply_binding() -> None:
    """In a worker as it starts: bind this process to the cores its :meth:`Knobs.env` named, if any."""
    cpus = os.environ.get(BOUND_CPUS)
    if cpus:
        os.sched_setaffinity(0, [int(cpu) for cpu in cpus.split(",")])


def worker_env(knobs: Knobs, threads: int = 1, slot: int = 0) -> dict:
    """This process's environment for a worker that starts with ``knobs``."""
    return knobs.env(dict(os.environ), threads, slot)


def own_temp_env(env: dict, folder: str) -> dict:
    """``env`` for a child whose temporary files go to ``folder``, which its parent removes once the child has ended
    however it ended (torch's AOTI loader extracts each package into the temporary folder and removes it only at a
    clean exit; workers leave by os._exit or are killed), torch.compile's cache kept where this process has it."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    return {**env, "TMPDIR": folder,
            "TORCHINDUCTOR_CACHE_DIR": env.get("TORCHINDUCTOR_CACHE_DIR") or default_cache_dir()}
