"""One diagnosis: a variant at a precision on one point's inputs, localised by its taps and by splice bisection,
its builds announced before they start and bounded by a budget in minutes (docs/accuracy.md, "Splices")."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

from trtbench.core.outdir import describe_error
from trtbench.core.status import DiagnosisStatus
from trtbench.diagnose import floor
from trtbench.diagnose.build import PathUnavailable, Recipe, build, unavailable
from trtbench.diagnose.graph import LayerGraph, UntraceableModel
from trtbench.diagnose.splice import bisect, splice_count
from trtbench.diagnose.taps import LayerError, json_db, layer_errors, output_leaves
from trtbench.measure.accuracy import elementwise_accuracy, flatten_outputs, sqnr_db
from trtbench.measure.kernels import KernelProof

Judge = Callable[[Any, Any], tuple[bool, str]]  # (output, fp32 reference) -> (within tolerance, the figures)


class OutOfBudget(Exception):
    """The diagnosis's minutes ran out before its next build."""


@dataclass(frozen=True)
class Settings:
    """The tolerance the output is held to (a ``Judge``), the budget in minutes and where progress lines go."""

    judge: Judge
    minutes: float = 10.0
    say: Callable[[str], None] = print


@dataclass(frozen=True)
class Subject:
    """What one diagnosis diagnoses: a variant at a precision on one point's inputs."""

    variant: str
    precision: str
    point: str


@dataclass(frozen=True)
class TapFindings:
    """What the tapped build found: the precision's line (None: not tapped), each layer's errors in graph order,
    the layer that stands out (None: none), and why there are no taps where there are none."""

    line_db: Optional[float] = None
    layers: tuple[LayerError, ...] = ()
    named: Optional[str] = None
    reason: str = ""

    @property
    def median_own_db(self) -> Optional[float]:
        return floor.median_own_db(self.layers)


@dataclass(frozen=True)
class SpliceFindings:
    """What the splice bisection found: the layer named (None: no splice loses ``OUTLIER_DB`` at one layer), each
    boundary built and whether it missed, and the output SQNR lost at the bisection's last layer."""

    layer: Optional[str] = None
    tried: dict = field(default_factory=dict)
    step_db: Optional[float] = None


@dataclass(frozen=True)
class Diagnosis:
    """What one diagnosis found (``status``: :class:`~trtbench.core.status.DiagnosisStatus`), with the precision the
    whole build's kernels ran (``kernels``: None where its runtime cannot say, or it was not built)."""

    subject: Subject
    status: DiagnosisStatus
    reason: str = ""
    output: str = ""  # the whole build's figures against fp32
    taps: TapFindings = TapFindings()
    splices: SpliceFindings = SpliceFindings()
    builds_announced: int = 0
    builds: int = 0
    kernels: Optional[KernelProof] = None

    @property
    def layers(self) -> tuple[LayerError, ...]:
        return self.taps.layers

    @property
    def named(self) -> Optional[str]:
        """The layer named: the splices' (which confirm the taps' where both name one)."""
        return self.splices.layer

    @property
    def confirmed(self) -> bool:
        return self.taps.named is not None and self.taps.named == self.named

    @property
    def stem(self) -> str:
        return f"{self.subject.variant}-{self.subject.precision}-{self.subject.point}"

    def sentence(self) -> str:
        """The named layer in one sentence, with what to do about it."""
        variant, precision = self.subject.variant, self.subject.precision
        if self.status == DiagnosisStatus.AGREES:
            return f"Nothing diverges: {variant} at {precision} keeps the tolerance ({self.output})."
        if self.status != DiagnosisStatus.DIVERGES:
            return f"Not diagnosed: {self.reason}"
        if self.named is None:
            return (f"{variant} at {precision} misses the tolerance ({self.output}), but no single layer "
                    f"makes its splice lose {floor.OUTLIER_DB:g} dB: the error builds up across layers (or comes from "
                    f"fusing across them); no layer is named.")
        error = next((e for e in self.layers if e.path == self.named), None)
        how = "by its splice and its taps" if self.confirmed else (
            f"by its splice (the taps named {self.taps.named})" if self.taps.named else "by its splice")
        if error is not None and error.own_sqnr_db is not None and error.own_sqnr_db == -math.inf:
            do = f"its output leaves {precision}'s range: keep {self.named} in fp32, or scale it down"
        elif precision == "int8":
            do = f"keep {self.named} in fp32 (calibration.max_fp32_layers), or calibrate it with another method"
        else:
            do = f"keep {self.named} in fp32"
        own = "" if error is None or error.own_sqnr_db is None else f" (own SQNR {error.own_sqnr_db:.1f} dB)"
        return f"{variant} at {precision} diverges at {self.named}{own}, named {how}: {do}."

    def to_dict(self) -> dict:
        taps, splices = self.taps, self.splices
        return {**dataclasses.asdict(self.subject), "status": self.status, "reason": self.reason,
                "output": self.output, "named": self.named, "tap_layer": taps.named, "splice_layer": self.named,
                "confirmed": self.confirmed, "tap_reason": taps.reason,
                "splices": {str(k): v for k, v in splices.tried.items()}, "splice_step_db": json_db(splices.step_db),
                "builds_announced": self.builds_announced, "builds": self.builds, "line_db": taps.line_db,
                "median_own_db": taps.median_own_db, "sentence": self.sentence(),
                "layers": [e.to_dict() for e in self.layers],
                "kernels": self.kernels.to_dict() if self.kernels else None}


def tolerance_judge(tolerance) -> Judge:
    """A row's check as a ``Judge``: ``atol``/``rtol`` element-wise (float precisions) or an INT8 budget's SQNR."""
    if hasattr(tolerance, "sqnr_db_min"):
        def by_sqnr(output, reference) -> tuple[bool, str]:
            db = sqnr_db(flatten_outputs(output), flatten_outputs(reference))
            return db >= tolerance.sqnr_db_min, f"SQNR {db:.1f} dB, at least {tolerance.sqnr_db_min:g} dB asked"
        return by_sqnr

    def by_elements(output, reference) -> tuple[bool, str]:
        accuracy = elementwise_accuracy(output, reference, tolerance.atol, tolerance.rtol)
        return accuracy.ok, f"max abs err {accuracy.max_abs_err:.3g}, rel {accuracy.max_rel_err:.3g}"
    return by_elements


class _Builds:
    """Counts the builds and stops when the minutes are spent."""

    def __init__(self, recipe: Recipe, settings: Settings):
        self.recipe, self.settings = recipe, settings
        self.start, self.count, self.announced = time.monotonic(), 0, 0

    def announce(self, count: int, what: str) -> None:
        self.announced += count
        self.settings.say(f"diagnose {self.recipe.variant} {self.recipe.precision}: {count} build(s): {what}")

    def make(self, module: torch.nn.Module, example: tuple):
        spent = (time.monotonic() - self.start) / 60
        if spent > self.settings.minutes:
            raise OutOfBudget(f"the budget of {self.settings.minutes:g} min ran out after {self.count} of "
                              f"{self.announced} builds ({spent:.1f} min)")
        self.count += 1
        return build(self.recipe, module, example)


def diagnose(model: torch.nn.Module, inputs: tuple, recipe: Recipe, settings: Settings, point: str = "opt"
             ) -> Diagnosis:
    """Where ``recipe``'s variant at its precision diverges from eager fp32 on ``inputs`` (fp32, on the device)."""
    subject = Subject(recipe.variant, recipe.precision, point)
    reason = unavailable(recipe)
    if reason:
        return Diagnosis(subject, DiagnosisStatus.UNAVAILABLE, reason)
    try:
        graph = LayerGraph(model, inputs)
    except UntraceableModel as err:
        return Diagnosis(subject, DiagnosisStatus.UNAVAILABLE, str(err))
    builds = _Builds(recipe, settings)
    try:
        return _diagnose(graph, inputs, builds, subject)
    except OutOfBudget as err:
        status, why = DiagnosisStatus.STOPPED, str(err)
    except PathUnavailable as err:
        status, why = DiagnosisStatus.UNAVAILABLE, err.reason
    except Exception as err:  # a build that runs and raises: this diagnosis fails, the others go on
        status, why = DiagnosisStatus.FAILED, describe_error(err)
    return Diagnosis(subject, status, why, builds_announced=builds.announced, builds=builds.count)


def _diagnose(graph: LayerGraph, inputs: tuple, builds: _Builds, subject: Subject) -> Diagnosis:
    judge = builds.settings.judge
    with torch.inference_mode():
        reference = graph.module(*inputs)
    builds.announce(2, "the variant whole, and with every layer's output tapped")
    whole = builds.make(graph.module, inputs)
    whole_output = whole(*inputs)
    kernels = whole.kernels(*inputs)
    ok, figures = judge(whole_output, reference)
    del whole
    taps = _tapped(graph, inputs, builds)
    if ok:
        return Diagnosis(subject, DiagnosisStatus.AGREES, output=figures, taps=taps, builds_announced=builds.announced,
                         builds=builds.count, kernels=kernels)
    builds.announce(splice_count(len(graph.layers)), f"splices bisecting {len(graph.layers)} layers")

    output_db = {0: math.inf, len(graph.layers): sqnr_db(flatten_outputs(whole_output), flatten_outputs(reference))}

    def fails(boundary: int) -> bool:
        prefix, suffix = graph.split(boundary)
        built = builds.make(prefix, inputs)
        cut = tuple(t.to(inputs[0].device, torch.float32) if t.is_floating_point() else t.to(inputs[0].device)
                    for t in output_leaves(built(*inputs)))
        with torch.inference_mode():
            spliced = suffix(*inputs, *cut)
        missed = not judge(spliced, reference)[0]
        output_db[boundary] = sqnr_db(flatten_outputs(spliced), flatten_outputs(reference))
        builds.settings.say(f"  splice of layers before {boundary} ({graph.layers[boundary - 1].path} last): "
                            f"{'misses' if missed else 'keeps'} the tolerance, output SQNR "
                            f"{output_db[boundary]:.1f} dB")
        return missed

    result = bisect(graph, fails)
    step = None if result.layer is None else output_db[result.layer] - output_db[result.layer + 1]
    spliced = graph.layers[result.layer].path if step is not None and step >= floor.OUTLIER_DB else None
    return Diagnosis(subject, DiagnosisStatus.DIVERGES, output=figures, taps=taps,
                     splices=SpliceFindings(spliced, result.tried, step), builds_announced=builds.announced,
                     builds=builds.count, kernels=kernels)


def _tapped(graph: LayerGraph, inputs: tuple, builds: _Builds) -> TapFindings:
    """Each layer's errors from the tapped build, or none and why (a path whose build does not take the taps)."""
    precision = builds.recipe.precision
    line = round(floor.line_db(precision), 2)
    try:
        tapped = builds.make(graph.tapped(), inputs)
    except PathUnavailable as err:
        return TapFindings(line, reason=f"the tapped build did not build: {err.reason}")
    try:
        leaves = output_leaves(tapped(*inputs))
    except Exception as err:  # the path takes the build and not the call: the splices localise alone
        return TapFindings(line, reason=f"the tapped build did not run: {describe_error(err)}")
    taps = leaves[len(leaves) - len(graph.tap_names()):]
    with torch.inference_mode():
        layers = tuple(layer_errors(graph, inputs, taps))
    named = floor.named_layer(layers, precision)
    return TapFindings(line, layers, named.path if named else None)
