"""The resolve step: a loaded config plus this machine -> what to run, and why a variant cannot run here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import torch

from trtbench.core.knobs import CHOICES as KNOB_CHOICES, Knobs
from trtbench.core.case import Case
from trtbench.config.config import Config, ModelConfig, VariantEntry
from trtbench.core.env import default_threads
from trtbench.core.errors import UserInputError
from trtbench.core.inputs import batch_shapes
from trtbench.core.precision import REFERENCE, is_quantized, unsupported_reason
from trtbench.core.target import Target
from trtbench.measure.timing import TimingSettings
from trtbench.decoders import get_decoder
from trtbench.models import transformers_model_type
from trtbench.variants import build_order, get_variant, variant_names


@dataclass(frozen=True)
class ShapePoint:
    """A labelled point of the input space: ``opt`` (min/max) or ``b8`` (a swept batch size)."""

    label: str
    shapes: tuple[tuple[int, ...], ...]


def slot_id(name: str, precision: str, reference_precision: str) -> str:
    """A variant's id in a build group: its name, or ``name@precision`` off the reference (``ort@int8``)."""
    return name if precision == reference_precision else f"{name}@{precision}"


@dataclass
class BuildGroup:
    """Cases one set of builds serves: one model at one thread count, every point and every precision."""

    model: ModelConfig
    precisions: list[str]
    threads: int
    points: list[ShapePoint]
    variants: list[VariantEntry]  # requested, eager first
    listed: list[str]  # the precisions the config lists: there every variant has a case, elsewhere eager alone
    unavailable: dict[str, str] = field(default_factory=dict)  # slot id -> why that variant cannot run here
    device: str = "cpu"
    knobs: Knobs = Knobs()  # the deployment knobs its worker processes start with (trtbench.core.knobs)
    decodes: bool = False  # its variants are decoders, which its scenario builds (trtbench.decoders)

    @property
    def reference_precision(self) -> str:
        """The group's first precision, that of its eager reference."""
        return self.precisions[0]

    def slot_id(self, name: str, precision: str) -> str:
        """The :func:`slot_id` of variant ``name`` at ``precision`` in this group."""
        return slot_id(name, precision, self.reference_precision)

    def variant_options(self) -> dict[str, Any]:
        """Each requested variant's options by its name, as builds take them."""
        return {entry.name: entry.options for entry in self.variants}

    def entries_at(self, precision: str) -> list[VariantEntry]:
        """The variants with a case at ``precision``: all requested ones where it is listed, else eager only."""
        return list(self.variants) if precision in self.listed else [self.variants[0]]

    def slots(self) -> list[tuple[VariantEntry, str]]:
        """(variant, precision) of every case at a point, in table order."""
        return [(entry, precision) for precision in self.precisions for entry in self.entries_at(precision)]

    def build_names_at(self, precision: str) -> list[str]:
        """Runnable variants with a case at ``precision`` and what they build from, in build order."""
        if self.decodes:
            return []
        runnable = [e.name for e in self.entries_at(precision)
                    if self.slot_id(e.name, precision) not in self.unavailable]
        return build_order(runnable)

    def case(self, entry: VariantEntry, point: ShapePoint, precision: str) -> Case:
        return Case(model=self.model.id, variant=entry.name, precision=precision,
                    point=point.label, input_shapes=point.shapes, threads=self.threads, device=self.device,
                    options=entry.options_text, knobs=self.knobs.text)

    def cases(self) -> list[Case]:
        return [self.case(entry, point, precision) for point in self.points for entry, precision in self.slots()]


@dataclass
class RunPlan:
    """What a run does on this machine."""

    config: Config
    device: torch.device
    groups: list[BuildGroup]
    timing: TimingSettings  # how long each point is timed: the config's benchmark.timing
    shard: Optional[tuple[int, int]] = None  # (index, count)
    matrix_groups: int = 0  # build groups of the whole matrix, every shard's
    matrix_cases: int = 0

    @property
    def cases(self) -> list[Case]:
        return [case for group in self.groups for case in group.cases()]

    def shard_lines(self) -> list[str]:
        """This shard's share of the matrix, and a warning when there are more shards than build groups."""
        if self.shard is None:
            return []
        index, count = self.shard
        lines = [f"shard {index}/{count}: {len(self.groups)} of {self.matrix_groups} build groups, "
                 f"{len(self.cases)} of {self.matrix_cases} cases"]
        if count > self.matrix_groups:
            idle = [f"{i}/{count}" for i in range(self.matrix_groups, count)]
            lines.append(f"warning: {count} shards, but the matrix has only {self.matrix_groups} build group(s) "
                         f"(models x thread counts), and shards split by build group: shard(s) "
                         f"{', '.join(idle)} have nothing to run; use at most {self.matrix_groups} shard(s)")
        return lines


def resolve_device(device: str) -> torch.device:
    """The configured device on this machine; a CUDA device it lacks is bad input (``device``)."""
    if device == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise UserInputError("device", f"'{device}' requested but CUDA is not available on this machine",
                             "use 'device: cpu' or 'device: auto' (or --device cpu), or run on a machine with an "
                             "NVIDIA GPU (docker run --gpus all ...)")
    index = int(device.partition(":")[2] or torch.cuda.current_device())
    if index >= torch.cuda.device_count():
        raise UserInputError("device", f"'{device}' requested but only {torch.cuda.device_count()} GPU(s) exist",
                             f"use an index below {torch.cuda.device_count()}")
    return torch.device("cuda", index)


def shape_points(config: Config) -> list[ShapePoint]:
    """The swept batch sizes, else the shape labels (static inputs: ``opt``), each shape once."""
    specs = config.inputs
    if config.sweep is not None and config.sweep.batch:
        candidates = [(f"b{n}", batch_shapes(specs, n)) for n in config.sweep.batch]
    elif not any(spec.is_dynamic for spec in specs):
        candidates = [("opt", [spec.opt_shape for spec in specs])]
    else:
        candidates = [(label, [spec.shape_for(label) for spec in specs]) for label in config.benchmark.shapes]
    labels: dict[tuple, str] = {}  # shapes -> the first label that has them
    for label, shapes in candidates:
        labels.setdefault(tuple(tuple(s) for s in shapes), label)
    return [ShapePoint(label, shapes) for shapes, label in labels.items()]


def why_unavailable(name: str, device: torch.device, precision: str) -> str | None:
    """Why variant ``name``, or one it builds from, cannot run here; None when it can."""
    reason = unsupported_reason(precision, device)
    if reason:
        return reason
    if is_quantized(precision) and not get_variant(name).quantizes:
        quantizing = ", ".join(n for n in variant_names() if get_variant(n).quantizes)
        return f"{name} has no {precision.upper()} path (variants that quantize: {quantizing})"
    step = name
    while step:  # the variant itself, then each variant it builds from
        variant = get_variant(step)
        reason = variant.unavailable_reason(Target(device, precision))
        if reason:
            return reason if step == name else f"needs {step}, which cannot run here: {reason}"
        step = variant.depends_on
    return None


def _unavailable(group: BuildGroup, device: torch.device) -> dict[str, str]:
    """Why each variant (or decoder) of the group that cannot run here cannot, by slot id."""
    missing = group.knobs.unavailable_reason(Target(device, threads=group.threads))
    reasons = {group.slot_id(entry.name, precision): missing or (
        get_decoder(entry.name).unavailable_reason(Target(device, precision, transformers_model_type(group.model)))
        if group.decodes else why_unavailable(entry.name, device, precision)) for entry, precision in group.slots()}
    return {key: reason for key, reason in reasons.items() if reason}


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (0 <= I < N) from ``--shard``."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit()) or not 0 <= int(index) < int(count):
        raise UserInputError("--shard", f"expected I/N with 0 <= I < N, got '{text}'",
                             "e.g. --shard 0/4 (the first of four shards); on Kubernetes use $JOB_COMPLETION_INDEX")
    return int(index), int(count)


def resolve(config: Config, shard: Optional[tuple[int, int]] = None) -> RunPlan:
    """The run's build groups on this machine; with ``shard=(i, n)`` only every n-th group from the i-th."""
    device = resolve_device(config.device)
    threads_default = default_threads()["threads"]
    listed_eager = next((v for v in config.variants if v.name == "eager"), VariantEntry("eager"))
    entries = [listed_eager] + [v for v in config.variants if v.name != "eager"]
    decodes = any(s.decodes for s in config.scenarios)
    points = [] if decodes else shape_points(config)  # a decoding scenario has points of its own
    groups = []
    precisions = [REFERENCE] + [p for p in config.precisions if p != REFERENCE]  # the reference first
    settings = config.knob_settings
    swept = config.sweep is not None and any(getattr(config.sweep, knob) for knob in KNOB_CHOICES)
    if swept and Knobs() not in settings:
        settings = [Knobs()] + settings  # eager alone there: what the knobs buy (Config.knob_settings)
    for model in config.models:
        for threads in config.thread_counts:
            for knobs in settings:
                group = BuildGroup(model=model, precisions=list(precisions),
                                   listed=list(config.precisions), threads=threads or threads_default, points=points,
                                   variants=entries if knobs in config.knob_settings else entries[:1],
                                   device=str(device), knobs=knobs, decodes=decodes)
                group.unavailable = _unavailable(group, device)
                groups.append(group)
    matrix_groups, matrix_cases = len(groups), sum(len(g.cases()) for g in groups)
    if shard is not None:
        index, count = shard
        groups = [g for i, g in enumerate(groups) if i % count == index]
    return RunPlan(config=config, device=device, groups=groups, timing=config.benchmark.timing, shard=shard,
                   matrix_groups=matrix_groups, matrix_cases=matrix_cases)
