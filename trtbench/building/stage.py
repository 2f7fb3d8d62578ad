"""The build stage: a build group's variants at a precision, each after what it builds from (:func:`build_at`): those
that cannot run here ``skipped``, a build that raises ``failed`` with its dependents; warnings kept with the variant."""

from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Mapping, Optional, Sequence

import torch

from trtbench.core.deprecation import Deprecation, warning_lines
from trtbench.core.env import bf16_compute
from trtbench.core.errors import Unavailable
from trtbench.core.inflight import InFlight, in_flight
from trtbench.core.outdir import FailureLog
from trtbench.core.precision import is_quantized, precision_dtype
from trtbench.profiling.memory import track_peak
from trtbench.core.status import Status
from trtbench.variants import BuildContext, Built, Variant, build_order, get_variant

if TYPE_CHECKING:
    # the plan's types; a worker rebuilding a variant imports this module, not the plan's
    from trtbench.config.context import RunContext
    from trtbench.config.plan import BuildGroup


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


def capture_warnings(fn: Callable[[], Any], deprecations: Sequence[Deprecation] = ()) -> tuple[Any, list[str]]:
    """Call ``fn`` recording its warnings instead of printing them: each once, those that say one of
    ``deprecations`` (torch.jit's FutureWarning) as its note (:func:`trtbench.core.deprecation.warning_lines`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return value, warning_lines(caught, deprecations)


@dataclass(frozen=True)
class BuildList:
    """The variants to build, by name, in order (dependencies first); each one's options, by name (absent: its
    defaults); the ones that cannot build here (skipped) and those whose build crashed an earlier process of the
    run (failed), with the reason; and ``max_build_s``: a build that took longer comes back skipped."""

    names: Sequence[str]
    options: Mapping[str, Any] = field(default_factory=dict)
    unavailable: Mapping[str, str] = field(default_factory=dict)
    crashed: Mapping[str, str] = field(default_factory=dict)
    max_build_s: Optional[float] = None


def build_variants(todo: BuildList, model: torch.nn.Module, ctx: BuildContext, failures: FailureLog,
                   building: Callable[[str], ContextManager] = lambda name: contextlib.nullcontext()
                   ) -> dict[str, BuildOutcome]:
    """Build ``todo``'s variants in order, each inside ``building(name)``."""
    outcomes: dict[str, BuildOutcome] = {}
    for name in todo.names:
        variant = get_variant(name)
        ctx.options = todo.options.get(name) or variant.Options()
        parent = outcomes.get(variant.depends_on) if variant.depends_on else None
        if name in todo.unavailable:
            outcomes[name] = BuildOutcome(variant, status=Status.SKIPPED, reason=todo.unavailable[name])
        elif name in todo.crashed:
            outcomes[name] = BuildOutcome(variant, status=Status.FAILED, reason=todo.crashed[name])
        elif parent is not None and parent.built is None:
            outcomes[name] = BuildOutcome(variant, status=parent.status,
                                          reason=f"needs {parent.variant.name}, which did not build "
                                                 f"({parent.status}: {parent.reason})")
        else:
            with building(name):
                outcomes[name] = _within(_build_one(variant, model, ctx, failures), todo.max_build_s)
            if outcomes[name].built is not None:
                ctx.built[name] = outcomes[name].built
    return outcomes


def _within(outcome: BuildOutcome, max_build_s: Optional[float]) -> BuildOutcome:
    """``outcome``, or skipped where its build took longer than ``max_build_s``."""
    if max_build_s is None or outcome.build_s is None or outcome.build_s <= max_build_s:
        return outcome
    return BuildOutcome(outcome.variant, status=Status.SKIPPED, build_s=outcome.build_s, warnings=outcome.warnings,
                        reason=f"built in more than max_build_s={max_build_s:g} s (took {outcome.build_s:.1f} s in "
                               f"the run's process; benchmark.max_build_s)")


def quantizes(group: BuildGroup, precision: str) -> bool:
    """Whether some variant of ``group`` is built at the quantized ``precision`` here (no decoder: its builder does)."""
    return is_quantized(precision) and not group.decodes and any(
        group.slot_id(e.name, precision) not in group.unavailable for e in group.entries_at(precision))


def run_calibration(plan):
    """The calibration data of ``plan``'s run where some variant quantizes, else None."""
    if not any(quantizes(group, p) for group in plan.groups for p in group.precisions):
        return None
    from trtbench.quantize.calibration import load_calibration

    config = plan.config
    return load_calibration(config.calibration, config.inputs, config.benchmark.seed)


def int8_setup_at(config, calibration, group: BuildGroup, model: torch.nn.Module, precision: str):
    """The :class:`~trtbench.quantize.setup.Int8Setup` a build at ``precision`` needs; None where none quantizes."""
    if not quantizes(group, precision):
        return None
    from trtbench.quantize.setup import int8_setup

    return int8_setup(config, calibration, model)


def build_at(ctx: RunContext, group: BuildGroup, names: list[str], model: torch.nn.Module, build: BuildContext,
             earlier: dict[str, BuildOutcome]) -> dict[str, BuildOutcome]:
    """Build ``names`` at ``build.precision``, by slot id, reusing what they only build from from ``earlier`` (the
    reference precision's) where the dtype is the same; ``build`` at fp32's dtype for a float ``precision`` is its
    hinted pass (:func:`hinted_names`); a variant in ``ctx.crashed`` fails with that reason instead of building."""
    precision, failures, log = build.precision, ctx.failures, ctx.log
    slots = {e.name for e in group.entries_at(precision)}
    # what builds anew: the variants of this precision; in the hinted pass (build.dtype is fp32's), those that hint it
    hinting = {n for n in names if precision in get_variant(n).hints}
    own = slots if build.dtype == precision_dtype(precision) else hinting
    same_dtype = build.dtype == precision_dtype(group.reference_precision)
    reuse = {n: earlier[n] for n in names if precision != group.reference_precision and same_dtype
             and n not in own and n in earlier and earlier[n].built is not None}
    build.built.update({n: outcome.built for n, outcome in reuse.items()})
    unavailable = {name: group.unavailable[group.slot_id(name, precision)] for name in slots
                   if group.slot_id(name, precision) in group.unavailable}
    crashed = {name: reason for (model_id, at, name), reason in ctx.crashed.items()
               if model_id == group.model.id and at == precision}

    def building(name: str) -> ContextManager:
        log(f"build {group.model.id} {name} {precision}")
        return in_flight(InFlight("build", group.model.id, name, precision, str(ctx.out_dir)))

    todo = BuildList([n for n in names if n not in reuse], group.variant_options(), unavailable, crashed,
                     ctx.config.benchmark.max_build_s)
    built = build_variants(todo, model, build, failures, building)
    outcomes = {}
    for name in slots:  # a variant that cannot run at this precision is skipped, even where others build from it
        if name in unavailable:
            outcomes[group.slot_id(name, precision)] = BuildOutcome(get_variant(name), status=Status.SKIPPED,
                                                                    reason=unavailable[name])
        elif name in built:
            outcomes[group.slot_id(name, precision)] = built[name]
    for name, outcome in built.items():  # build steps (onnx) stay available to the saves
        outcomes.setdefault(group.slot_id(name, precision), outcome)
    return outcomes


def hinted_names(names: list[str], precision: str) -> tuple[list[str], list[str]]:
    """``names`` (in build order) split in two passes at ``precision``: what builds from the precision's own copy, and
    what its runtime reaches by a hint (``Variant.hints``) with what that builds from, built from the reference's."""
    hinted = [n for n in names if precision in get_variant(n).hints]
    if not hinted:
        return names, []
    return build_order([n for n in names if n not in hinted and get_variant(n).timed]), build_order(hinted)


def _build_one(variant: Variant, model: torch.nn.Module, ctx: BuildContext, failures: FailureLog) -> BuildOutcome:
    start = time.perf_counter()
    try:
        with torch.no_grad():
            (built, caught), memory = track_peak(
                lambda: capture_warnings(lambda: variant.build(model, ctx), variant.deprecations), ctx.device)
    except Unavailable as err:  # it cannot run here (a library, CUDA, a kernel or a precision its runtime lacks)
        return BuildOutcome(variant, status=Status.SKIPPED, reason=err.reason)
    except Exception as err:  # this variant's failure; the others go on
        return BuildOutcome(variant, status=Status.FAILED,
                            reason=failures.reason(f"build {variant.name} {ctx.precision}", err))
    if ctx.dtype == torch.bfloat16 and variant.runtime == "torch":  # whether torch computes its bf16 natively
        built.info.setdefault("bf16", bf16_compute(ctx.device).text)
    return BuildOutcome(variant, built=built, build_s=time.perf_counter() - start, peak_memory=memory,
                        warnings=caught)
