"""Quantize within the accuracy budget, keeping the layers that break it in fp32 (docs/int8.md, "Fallback")."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional, Protocol

from trtbench.measure.accuracy import Int8Accuracy
from trtbench.quantize.calibration import CalibrationFacts
from trtbench.quantize.common import QuantSettings
from trtbench.quantize.setup import Int8Setup


class AccuracyBudgetMissed(RuntimeError):
    """No quantization within the fallback's cap keeps the accuracy budget (the message has the figures)."""


@dataclass(frozen=True)
class FallbackCost:
    """What keeping layers in fp32 cost: the median ms of the full build and of the fallback, on one batch."""

    precision: str
    reduced_ms: float
    with_fp32_layers_ms: float
    slowdown: float  # with_fp32_layers_ms / reduced_ms
    batch: Optional[int]

    def to_dict(self) -> dict:
        return {f"full_{self.precision}_ms": self.reduced_ms, "with_fp32_layers_ms": self.with_fp32_layers_ms,
                "slowdown": self.slowdown, "batch": self.batch}


@dataclass
class Quantized:
    """The quantized model that met the budget, how it was quantized, and what the fallback found."""

    model: Any
    settings: QuantSettings
    accuracy: Int8Accuracy
    full_int8: Int8Accuracy  # every layer quantized
    sensitivity: dict[str, float] = field(default_factory=dict)  # layer -> SQNR dB with it alone quantized
    attempts: int = 1  # quantizations run
    cost: Optional[FallbackCost] = None  # the fp32 layers' cost in speed (None: none kept)
    calibration: Optional[CalibrationFacts] = None  # where the calibration samples came from

    def info(self, layer_names: dict[str, str] | None = None) -> dict:
        """Build facts: the accuracy, the layers kept in fp32 (with their module names where known)."""
        names = layer_names or {}
        return {"accuracy": self.accuracy.to_dict(), "full_int8_accuracy": self.full_int8.to_dict(),
                "fp32_layers": list(self.settings.exclude),
                "fp32_modules": [names.get(layer, layer) for layer in self.settings.exclude],
                "sensitivity_sqnr_db": {names.get(k, k): round(v, 2) for k, v in self.sensitivity.items()},
                "calibration_method": self.settings.method, "per_channel": self.settings.per_channel,
                "quantizations": self.attempts, "fallback_cost": self.cost.to_dict() if self.cost else {},
                "calibration": self.calibration.to_dict() if self.calibration else {}}


class Verdict(Protocol):
    """A judge's verdict on a build (INT8's or a float fallback's): whether it passes, why not, its figures in words."""

    @property
    def ok(self) -> bool: ...

    @property
    def reason(self) -> str: ...

    def text(self) -> str: ...


@dataclass(frozen=True)
class Excluding:
    """What the fallback loop runs: ``build(kept)``, the model with ``kept`` in fp32, and ``judge(model)``."""

    build: Callable[[tuple[str, ...]], Callable[..., Any]]
    judge: Callable[[Callable[..., Any]], Verdict]
    what: str
    cap_key: str = "calibration.max_fp32_layers"


@dataclass(frozen=True)
class Found:
    """What the loop found: the passing model and the full one, with their verdicts, and the builds run."""

    model: Callable[..., Any]
    kept: tuple[str, ...]
    verdict: Verdict
    full_model: Callable[..., Any]
    full: Verdict
    attempts: int


def keep_in_fp32(path: Excluding, rank: Callable[[], list[str]], cap: int,
                 on_step: Callable[[str], None] = lambda text: None) -> Found:
    """The first build of ``path`` its judge passes: full, else with ``rank()``'s first ``cap`` kept in fp32 in turn."""
    full_model = path.build(())
    full = path.judge(full_model)
    if full.ok:
        return Found(full_model, (), full, full_model, full, 1)
    missed = f"{path.what}: {full.reason} ({full.text()})"
    if cap == 0:
        raise AccuracyBudgetMissed(f"{missed}; no fallback ({path.cap_key} is 0)")
    ranked = rank()
    if not ranked:
        raise AccuracyBudgetMissed(missed)
    attempts, last, kept = 1, full, ()
    for count in range(1, min(cap, len(ranked)) + 1):
        kept = tuple(ranked[:count])
        on_step(f"fallback: {', '.join(kept)} in fp32")
        model = path.build(kept)
        last = path.judge(model)
        attempts += 1
        if last.ok:
            return Found(model, kept, last, full_model, full, attempts)
    raise AccuracyBudgetMissed(f"{missed}; with the {len(kept)} most sensitive layer(s) kept in fp32 "
                               f"({', '.join(kept)}; {path.cap_key}) still {last.reason} ({last.text()})")


def quantize_within_budget(quantize: Callable[[QuantSettings], Any], layers: list[str], setup: Int8Setup,
                           on_step: Callable[[str], None] = lambda text: None) -> Quantized:
    """The first quantization that keeps ``setup.budget``: full INT8, else the most sensitive ``layers`` in fp32."""
    settings = setup.settings
    path = Excluding(lambda kept: quantize(replace(settings, exclude=settings.exclude + kept)), setup.evaluate,
                     "INT8 misses the accuracy budget")
    sensitivity: dict[str, float] = {}

    def rank() -> list[str]:
        alone: dict[str, Int8Accuracy] = {}
        for layer in layers:  # sensitivity: each layer alone quantized
            on_step(f"sensitivity: {layer} alone in INT8")
            alone[layer] = setup.evaluate(path.build(tuple(n for n in layers if n != layer)))
        ranked = sorted(layers, key=lambda n: (alone[n].sqnr_db, alone[n].top1_agree or 0))  # the most sensitive first
        sensitivity.update({n: alone[n].sqnr_db for n in ranked})
        return ranked

    found = keep_in_fp32(path, rank, setup.max_fp32_layers, on_step)
    if not found.kept:
        return Quantized(found.model, settings, found.verdict, found.full, calibration=setup.data.facts)
    return Quantized(found.model, replace(settings, exclude=settings.exclude + found.kept), found.verdict, found.full,
                     sensitivity, found.attempts + len(sensitivity),
                     fallback_cost(found.full_model, found.model, setup.data.evaluation[0]), setup.data.facts)


def judged(shipped: Callable[..., Any], quantized: Quantized, setup: Int8Setup, what: str) -> dict:
    """Build facts of ``shipped`` (made from ``quantized.model``), whose own accuracy must keep the budget too."""
    accuracy = setup.evaluate(shipped)
    if not accuracy.ok:
        raise AccuracyBudgetMissed(f"{what} misses the accuracy budget that its quantized graph kept: "
                                   f"{accuracy.reason} ({accuracy.text()})")
    return {"int8": quantized.info(), "accuracy": accuracy.to_dict(), "graph_accuracy": quantized.accuracy.to_dict()}


def fallback_cost(full_model: Any, model: Any, batch: tuple, precision: str = "int8") -> FallbackCost:
    """What keeping layers in fp32 cost: both models timed interleaved on one batch."""
    import statistics

    import torch

    from trtbench.measure.timing import TimingSettings, measure_interleaved

    timing = TimingSettings(mode="fixed", warmup=2, warmup_s=0.0, iterations=30)
    with torch.inference_mode():
        measured = measure_interleaved({"full": lambda: full_model(*batch), "fallback": lambda: model(*batch)},
                                       batch[0].device if batch else torch.device("cpu"), timing)
    full_ms, fallback_ms = (statistics.median(measured[k].samples) for k in ("full", "fallback"))
    return FallbackCost(precision, round(full_ms, 4), round(fallback_ms, 4), round(fallback_ms / full_ms, 3),
                        int(batch[0].shape[0]) if batch else None)
