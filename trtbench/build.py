"""The build stage: every variant of one build group, each after what it builds from.

A variant that cannot run here comes back ``skipped`` with the reason (known before it builds, or
a quantizer's :class:`~trtbench.quantize.common.QuantizationUnavailable`); one whose build raises
comes back ``failed`` (its traceback in the failure log); its dependents skip or fail with it.
Warnings are captured, not printed, and reported with the variant.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

from trtbench.outdir import FailureLog
from trtbench.profiling.memory import track_peak
from trtbench.quantize.common import QuantizationUnavailable
from trtbench.status import Status
from trtbench.variants import BuildContext, Built, Variant, get_variant


@dataclass
class BuildOutcome:
    """A variant's build: the built variant, or why there is none (status skipped/failed)."""

    variant: Variant
    built: Optional[Built] = None
    status: Status = Status.OK
    reason: str = ""
    build_s: Optional[float] = None
    peak_memory: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def facts(self) -> dict:
        """What records report about the build."""
        return {"build_s": self.build_s, "info": dict(self.built.info) if self.built else {},
                "peak_memory": self.peak_memory}


def capture_warnings(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Call ``fn`` recording its warnings (e.g. torch.jit's FutureWarning) instead of printing them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return value, sorted({f"{w.category.__name__}: {w.message}" for w in caught})


def build_variants(names: list[str], model: torch.nn.Module, ctx: BuildContext, options: dict[str, Any],
                   unavailable: dict[str, str], failures: FailureLog,
                   on_build: Callable[[str], None] = lambda name: None) -> dict[str, BuildOutcome]:
    """Build ``names`` in order (dependencies first); ``on_build(name)`` runs before each build."""
    outcomes: dict[str, BuildOutcome] = {}
    for name in names:
        variant = get_variant(name)
        ctx.options = options.get(name) or variant.Options()
        parent = outcomes.get(variant.depends_on) if variant.depends_on else None
        if name in unavailable:
            outcomes[name] = BuildOutcome(variant, status=Status.SKIPPED, reason=unavailable[name])
        elif parent is not None and parent.built is None:
            outcomes[name] = BuildOutcome(variant, status=parent.status,
                                          reason=f"needs {parent.variant.name}, which did not build "
                                                 f"({parent.status}: {parent.reason})")
        else:
            on_build(name)
            outcomes[name] = _build_one(variant, model, ctx, failures)
            if outcomes[name].built is not None:
                ctx.built[name] = outcomes[name].built
    return outcomes


def _build_one(variant: Variant, model: torch.nn.Module, ctx: BuildContext, failures: FailureLog) -> BuildOutcome:
    start = time.perf_counter()
    try:
        with torch.no_grad():
            (built, caught), memory = track_peak(lambda: capture_warnings(lambda: variant.build(model, ctx)),
                                                 ctx.device)
    except KeyboardInterrupt:
        raise
    except QuantizationUnavailable as err:  # its INT8 path cannot run here (a library, CUDA, a setting it lacks)
        return BuildOutcome(variant, status=Status.SKIPPED, reason=err.reason)
    except Exception as err:  # this variant's failure; the others go on
        return BuildOutcome(variant, status=Status.FAILED,
                            reason=failures.reason(f"build {variant.name} {ctx.precision}", err))
    return BuildOutcome(variant, built=built, build_s=time.perf_counter() - start, peak_memory=memory,
                        warnings=caught)
