"""The run config: dataclasses that are the YAML schema and the Python API, validated without reading the machine."""

from __future__ import annotations

import dataclasses
import os
import itertools
from types import SimpleNamespace
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Optional, Union

import yaml

from trtbench.core import schema
from trtbench.quantize.calibration import CalibrationConfig
from trtbench.core.case import options_text
from trtbench.core.knobs import CHOICES as KNOB_CHOICES, Knobs
from trtbench.core.errors import UserInputError
from trtbench.core.fsutil import require_readable_file
from trtbench.core.outdir import DEFAULT_HISTORY, RESULTS_ROOT
from trtbench.core.inputs import SHAPE_LABELS, InputConfig
from trtbench.models import ModelConfig
from trtbench.core.precision import DECODER_PRECISIONS, PRECISIONS
from trtbench.decoders import DECODERS
from trtbench.profiling.config import ProfileConfig
from trtbench.scenarios.entries import DEFAULT as DEFAULT_SCENARIOS, check_scenarios, parse_scenarios
from trtbench.scenarios.profile.scenario import Profile
from trtbench.scenarios.serving.vision.config import ServingConfig
from trtbench.measure.timing import SCHEDULES, TimingSettings
from trtbench.variants import VARIANTS, variant_class, variant_names

ISOLATION_METHODS = ("process", "in_process")  # see trtbench.workers.isolation
PROCESSES = 3  # benchmark.processes' default where a point is not raced: replicate worker processes per variant
RACE_PROCESSES = 4  # ... and where it is: the most a variant gets on demand
PROCESSES_VAR = "TRTBENCH_PROCESSES"  # an environment variable that sets another default (the test suite's: 1)


def default_processes(racing: bool) -> int:
    """benchmark.processes' default where the points are ``racing`` or not, or ``TRTBENCH_PROCESSES``'."""
    text, default = os.environ.get(PROCESSES_VAR), RACE_PROCESSES if racing else PROCESSES
    if text is None:
        return default
    if not text.strip().isdigit() or int(text) < 1:
        raise UserInputError(PROCESSES_VAR, f"is '{text}', not a count of processes",
                             f"set {PROCESSES_VAR} to an integer of 1 or more, or unset it (default {default})")
    return int(text)


TIMING_KEYS = tuple(f.name for f in dataclasses.fields(TimingSettings))  # benchmark keys the timing settings take


@dataclass
class BenchmarkConfig:
    """How to time, which shapes, threads, seed; the timing keys (``mode``, ``warmup``, ...) make up ``timing``."""

    timing: TimingSettings = schema.inline(TimingSettings)  # keys: TIMING_KEYS
    shapes: list[str] = field(default_factory=lambda: list(SHAPE_LABELS))
    threads: Optional[int] = None  # intra-op threads; default: the CPUs this process may use (env.default_threads)
    cudnn_benchmark: bool = True
    seed: int = 0
    measure_ceiling: bool = True  # time dense matmuls (latency) and a memory triad (generate): a few seconds each
    isolation: str = "process"  # process: each variant timed in a worker process of its own | in_process
    allocator: str = "default"  # the state every worker starts in: default | tuned | jemalloc | tcmalloc
    openmp: str = "default"  # the OpenMP runtime every worker starts with: default (PyTorch's libgomp) | intel
    binding: str = "none"  # none | cores: every worker bound to cores of its own (trtbench.core.knobs)
    worker_timeout_s: float = 600.0  # a worker that does not answer (build, or one block) in this time is killed
    max_build_s: Optional[float] = None  # a variant not built within it is skipped (its building worker killed)
    # replicate worker processes per variant x precision (raced: the most at a point); None until resolved
    processes: Optional[int] = None

    def _key(self, name: str) -> Any:
        """The value of the section's key ``name``: its timing settings' or its own."""
        return getattr(self.timing if name in TIMING_KEYS else self, name)

    def validate(self, path: str) -> None:
        schema.require_choice(self.isolation, ISOLATION_METHODS, schema.join(path, "isolation"))
        for knob, choices in KNOB_CHOICES.items():
            value = getattr(self, knob)
            schema.require_choice(value, choices, schema.join(path, knob))
            if value != getattr(Knobs(), knob) and self.isolation != "process":
                raise UserInputError(schema.join(path, knob),
                                     f"'{value}' sets the {knob} a worker process starts with, and isolation "
                                     f"'{self.isolation}' times in this process, whose {knob} is set",
                                     f"use isolation: process (the default), or {knob}: {getattr(Knobs(), knob)}")
        for name in ("iterations", "threads", "max_time_s", "min_iterations", "target_rel_ci", "block_s",
                     "worker_timeout_s", "max_build_s", "processes", "budget_s"):
            schema.require_positive(self._key(name), schema.join(path, name))
        if not 0 <= self.timing.race_margin < 1:
            raise UserInputError(schema.join(path, "race_margin"), f"{self.timing.race_margin} is not a share",
                                 "use a number from 0 to 1, e.g. 0.05 (5% slower than the leader)")
        self._check_stopping_rule(path)
        for name, zero in (("warmup", "no warm-up"), ("warmup_s", "no warm-up"),
                           ("switch_in_below_s", "no switch-in call")):
            if self._key(name) < 0:
                raise UserInputError(schema.join(path, name), f"must not be negative, got {self._key(name)}",
                                     f"set it to 0 ({zero}) or more")
        schema.require_choice(self.timing.mode, ("fixed", "adaptive"), schema.join(path, "mode"))
        schema.require_choice(self.timing.schedule, SCHEDULES, schema.join(path, "schedule"))
        if not self.shapes:
            raise UserInputError(schema.join(path, "shapes"), "is empty", "list at least one of: min, opt, max")
        for i, label in enumerate(self.shapes):
            schema.require_choice(label, SHAPE_LABELS, schema.join(path, f"shapes[{i}]"))

    def _check_stopping_rule(self, path: str) -> None:
        """Adaptive timing stops by one rule: the race's budget, or (race: false) each variant's own interval."""
        timing = self.timing
        if timing.mode != "adaptive":
            return
        if timing.race:
            for key in ("target_rel_ci", "max_time_s"):
                if getattr(timing, key) is not None:
                    raise UserInputError(schema.join(path, key), "stops each variant on its own median's interval, "
                                         "which only race: false does: the variants of a point race (the default)",
                                         f"remove {key} and give the point's time as budget_s, or set race: false")
        elif timing.budget_s is not None:
            raise UserInputError(schema.join(path, "budget_s"), "is the race's budget, and race is false",
                                 "remove budget_s (race: false stops on target_rel_ci and max_time_s), or remove "
                                 "race: false")

    def to_dict(self) -> dict:
        """The section as plain data, keyed as the YAML is: the timing settings' keys among its own."""
        data = dataclasses.asdict(self)
        return {**data.pop("timing"), **data}


@dataclass
class SweepConfig:
    """A matrix: batch sizes, precisions, thread counts and deployment knobs (:attr:`Config.knob_settings`)."""

    batch: list[int] = field(default_factory=list)
    precisions: list[str] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)
    allocator: list[str] = field(default_factory=list)
    openmp: list[str] = field(default_factory=list)
    binding: list[str] = field(default_factory=list)

    def validate(self, path: str) -> None:
        choices = {"precisions": tuple(PRECISIONS), **KNOB_CHOICES}
        for key in ("batch", "threads", *choices):
            values = getattr(self, key)
            for i, value in enumerate(values):
                if key in choices:
                    schema.require_choice(value, choices[key], schema.join(path, f"{key}[{i}]"))
                else:
                    schema.require_positive(value, schema.join(path, f"{key}[{i}]"))
            if key != "precisions" and len(set(values)) != len(values):
                raise UserInputError(schema.join(path, key), f"has duplicates: {values}", "list each value once")


@dataclass
class BudgetConfig:
    """A latency budget: recommend the highest-throughput point whose measured p99 stays within it."""

    p99_ms: Optional[float] = None

    def validate(self, path: str) -> None:
        schema.require_positive(self.p99_ms, schema.join(path, "p99_ms"))


@dataclass
class Tolerance:
    """Accuracy bounds against eager fp32: pass when ``max |out - ref| <= atol + rtol * max |ref|``."""

    atol: float
    rtol: float

    def validate(self, path: str) -> None:
        for name in ("atol", "rtol"):
            if getattr(self, name) < 0:
                raise UserInputError(schema.join(path, name), "must not be negative", "use 0 or a positive number")


@dataclass
class Int8Budget:
    """The accuracy a quantized build must keep against eager fp32: top-1 agreement and each output's SQNR."""

    top1_agree_min: float = 0.99
    sqnr_db_min: float = 20.0

    def validate(self, path: str) -> None:
        if not 0 <= self.top1_agree_min <= 1:
            raise UserInputError(schema.join(path, "top1_agree_min"), f"{self.top1_agree_min} is not a share",
                                 "use a number from 0 to 1, e.g. 0.99")


TOLERANCE_TYPES = {"fp32": Tolerance, "fp16": Tolerance, "bf16": Tolerance, "int8": Int8Budget}


@dataclass
class LogitTolerance:
    """What a decoder's teacher-forced logits must keep against eager fp32's (docs/accuracy.md)."""

    cosine_min: float = 0.9999
    top1_agree_min: float = 1.0
    top1_margin: float = 1e-4

    def validate(self, path: str) -> None:
        for name in ("cosine_min", "top1_agree_min"):
            if not 0 <= getattr(self, name) <= 1:
                raise UserInputError(schema.join(path, name), f"{getattr(self, name)} is not within [0, 1]",
                                     "use a number from 0 to 1, e.g. 0.99")
        if self.top1_margin < 0:
            raise UserInputError(schema.join(path, "top1_margin"), "must not be negative", "use 0 or more, e.g. 1e-3")


def default_logit_tolerances() -> dict[str, LogitTolerance]:
    """A decoder's logit tolerances at each precision (``tolerances:`` of a generate config)."""
    return {"fp32": LogitTolerance(), "fp16": LogitTolerance(0.99, 0.9, 1e-2), "bf16": LogitTolerance(0.99, 0.9, 1e-2),
            "int8": LogitTolerance(0.98, 0.8, 1e-2), "int4": LogitTolerance(0.9, 0.6, 5e-2)}


def default_tolerances() -> dict[str, Any]:
    """The default tolerance at each precision (docs/accuracy.md says why these bounds)."""
    return {"fp32": Tolerance(atol=1e-5, rtol=5e-3), "fp16": Tolerance(atol=1e-3, rtol=5e-2),
            "bf16": Tolerance(atol=1e-2, rtol=1e-1), "int8": Int8Budget()}


@dataclass
class OutputConfig:
    """Where results go and whether deployable artifacts are saved."""

    dir: Optional[str] = None
    save_artifacts: bool = True
    cold_start: bool = True  # rows carry their file's load time and first call in a fresh process
    # a SQLite file's path, a postgresql:// URL or false; unset: results/history.sqlite with the default output dir
    history: Union[str, bool, None] = None
    label: Optional[str] = None  # the run's label in the history (a commit, say)

    def validate(self, path: str) -> None:
        if self.history is True:
            raise UserInputError(schema.join(path, "history"), "true names no store",
                                 "give a SQLite file's path or a postgresql:// URL, or false for no history")


@dataclass
class VariantEntry:
    """One requested variant and its options (the variant's own Options dataclass)."""

    name: str
    options: Any = None

    @property
    def options_text(self) -> str:
        """The options that differ from the defaults, as canonical JSON ("" when none)."""
        return options_text(self.options)


def _listed_once(name: str, key: str, parsed: list[VariantEntry], noun: str) -> None:
    if any(v.name == name for v in parsed):
        raise UserInputError(key, f"{noun} '{name}' is listed twice", f"list each {noun} once")


def _variant_entry(entry: Any, key: str, parsed: list[VariantEntry]) -> VariantEntry:
    if isinstance(entry, VariantEntry):
        return entry
    if isinstance(entry, dict) and len(entry) == 1:
        name, options = next(iter(entry.items()))
    elif isinstance(entry, str):
        name, options = entry, None
    else:
        raise UserInputError(key, f"expected a variant name or {{name: {{options}}}}, got {entry!r}",
                             "write e.g. 'traced' or '{trt: {min_block_size: 3}}'")
    cls = variant_class(name)
    if cls is None:
        raise UserInputError(key, f"unknown variant '{name}'", VARIANTS.hint(name))
    if not cls.timed:
        dependents = [n for n in variant_names() if variant_class(n).depends_on == name]
        first, *others = sorted(dependents, key=lambda n: (len(n), n))  # the plainest one first: ort
        also = f"; {', '.join(others)} build from it too" if others else ""
        raise UserInputError(key, f"'{name}' is a build step, not a variant to time",
                             f"list {first} instead (it builds {name} first){also}")
    _listed_once(name, key, parsed, "variant")
    return VariantEntry(name=name, options=schema.from_dict(cls.Options, options, f"{key}.{name}"))


def _decoder_entry(entry: Any, key: str, parsed: list[VariantEntry]) -> VariantEntry:
    name = entry.name if isinstance(entry, VariantEntry) else entry
    if not isinstance(name, str):
        raise UserInputError(key, f"expected a decoder name, got {entry!r}",
                             "decoders take no options: write e.g. 'compiled'")
    if DECODERS.find(name) is None:
        raise UserInputError(key, f"unknown decoder '{name}' (the generate scenario's variants are decoders)",
                             DECODERS.hint(name))
    _listed_once(name, key, parsed, "decoder")
    return VariantEntry(name=name)


@dataclass
class Config:
    """A whole run (:func:`load_config`, :func:`config_from_dict`): ``model`` names one model, ``models`` several."""

    name: str
    inputs: list[InputConfig] = field(default_factory=list)  # needed where a scenario needs it (all built in do)
    model: Optional[ModelConfig] = None
    models: list[ModelConfig] = field(default_factory=list)
    device: str = "auto"
    precisions: list[str] = field(default_factory=lambda: ["fp32"])
    channels_last: bool = False
    variants: list[Any] = field(default_factory=lambda: ["eager", "traced", "scripted"])
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    sweep: Optional[SweepConfig] = None
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    tolerances: dict = field(default_factory=dict)
    output: OutputConfig = field(default_factory=OutputConfig)
    profile: Optional[ProfileConfig] = None
    scenarios: Any = field(default_factory=lambda: list(DEFAULT_SCENARIOS))  # trtbench.scenarios.entries
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)
    diagnose: bool = True  # a row that fails its check is diagnosed layer by layer after the run (docs/accuracy.md)

    @staticmethod
    def prepare(fields: dict, path: str) -> dict:
        """The parsed sections as a run reads them, checked in the order they depend on each other."""
        f = dict(fields)
        if (f["model"] is None) == (not f["models"]):
            raise UserInputError("model", "give exactly one of 'model' (one model) and 'models' (a list)",
                                 "write model: {source: torchvision, name: resnet18} or models: [{...}, {...}]")
        if f["model"] is not None:
            f["models"], f["model"] = [f["model"]], None
        ids = [m.id for m in f["models"]]
        if len(set(ids)) != len(ids):
            raise UserInputError("models", f"two models have the same id {ids}",
                                 "give each a distinct 'label' (e.g. label: resnet18-plain)")
        inputs, sweep = f["inputs"], f["sweep"]
        f["scenarios"] = parse_scenarios(f["scenarios"], "scenarios")
        decoding = [s.name for s in f["scenarios"] if s.decodes]
        bench = f["benchmark"]
        if bench.processes is None:  # decoders are not raced
            bench.processes = default_processes(racing=bench.timing.racing and not decoding)
        timing = bench.timing  # its stopping rule's keys resolved, as the run records them
        if timing.racing:
            bench.timing = dataclasses.replace(timing, budget_s=timing.cap_s)
        elif timing.mode == "adaptive":
            bench.timing = dataclasses.replace(timing, target_rel_ci=timing.ci_target, max_time_s=timing.cap_s)
        if decoding and len(decoding) != len(f["scenarios"]):
            others = [s.name for s in f["scenarios"] if not s.decodes]
            raise UserInputError("scenarios", f"'{decoding[0]}' times decoders (its variants: are decoders, built from "
                                 f"a causal LM's folder) and cannot share a config with {', '.join(others)}",
                                 f"put {decoding[0]} in a config of its own")
        choices = DECODER_PRECISIONS if decoding else tuple(PRECISIONS)
        if not inputs and any("inputs" in s.needs for s in f["scenarios"]):
            raise UserInputError("inputs", "is empty", "list at least one input with a shape")
        names = [i.name for i in inputs]
        if len(set(names)) != len(names):
            raise UserInputError("inputs", f"duplicate input names {names}", "give each input a unique name")
        check_device(f["device"], "device")
        if sweep is not None and sweep.precisions:
            f["precisions"] = list(sweep.precisions)
        if not f["precisions"]:
            raise UserInputError("precisions", "is empty", "list at least one of: " + ", ".join(choices))
        for i, p in enumerate(f["precisions"]):
            schema.require_choice(p, choices, f"precisions[{i}]")
        if sweep is not None:
            check_sweep_batches(sweep, inputs)
            for knob in KNOB_CHOICES:
                values = getattr(sweep, knob)
                if any(v != getattr(Knobs(), knob) for v in values) and f["benchmark"].isolation != "process":
                    raise UserInputError(f"sweep.{knob}", f"{values} sets the {knob} each worker process starts with, "
                                         f"and isolation '{f['benchmark'].isolation}' times in this process, whose "
                                         f"{knob} is set", "use benchmark.isolation: process (the default)")
        parse, example = ((_decoder_entry, "[eager, compiled, ort_genai]") if decoding
                          else (_variant_entry, "[eager, traced, scripted]"))  # decoders take no options
        entries, f["variants"] = f["variants"], []
        if not isinstance(entries, list) or not entries:
            raise UserInputError("variants", f"expected a non-empty list, got {entries!r}",
                                 f"write e.g. variants: {example}")
        for i, entry in enumerate(entries):  # each entry parsed knowing those before it
            f["variants"].append(parse(entry, f"variants[{i}]", f["variants"]))
        tolerances = default_logit_tolerances() if decoding else default_tolerances()
        for key, value in f["tolerances"].items():
            schema.require_choice(key, choices, schema.join("tolerances", key))
            kind = LogitTolerance if decoding else TOLERANCE_TYPES[key]
            tolerances[key] = schema.from_dict(kind, value, schema.join("tolerances", key))
        f["tolerances"] = tolerances
        if f["output"].dir is None:
            history = f["output"].history
            f["output"] = dataclasses.replace(f["output"], dir=str(RESULTS_ROOT / f["name"]),
                                              history=DEFAULT_HISTORY if history is None else history)
        if f["profile"] is not None:
            f["profile"] = f["profile"].for_run([v.name for v in f["variants"]], f["precisions"], "profile")
            if f["profile"].enabled:
                f["scenarios"].append(Profile(f["profile"]))
        check_scenarios(f["scenarios"], SimpleNamespace(**f), "scenarios")
        return f

    @property
    def variant_names(self) -> list[str]:
        return [v.name for v in self.variants]

    @property
    def serving(self) -> list[ServingConfig]:
        """The settings of the server scenarios that serve the latency scenario's variants, in the order listed."""
        return [s.settings for s in self.scenarios if isinstance(s.settings, ServingConfig)]

    @property
    def knob_settings(self) -> list[Knobs]:
        """Every combination of the swept knobs, each other knob as ``benchmark`` sets it."""
        axes = [getattr(self.sweep, knob, None) or [getattr(self.benchmark, knob)] for knob in KNOB_CHOICES]
        return [Knobs(**dict(zip(KNOB_CHOICES, values))) for values in itertools.product(*axes)]

    @property
    def thread_counts(self) -> list[Optional[int]]:
        """The thread counts to run at (None: the default, the CPUs this process may use)."""
        return list(self.sweep.threads) if self.sweep is not None and self.sweep.threads else [self.benchmark.threads]

    def to_dict(self) -> dict:
        """The resolved config as plain data (for results.json and the manifest), keyed as the YAML is."""
        data = dataclasses.asdict(dataclasses.replace(self, scenarios=[]))
        data["benchmark"] = self.benchmark.to_dict()
        data["scenarios"] = [s.entry() for s in self.scenarios if s.listed]
        return data


def check_sweep_batches(sweep: SweepConfig, inputs: list[InputConfig]) -> None:
    """Every swept batch size lies within every dynamic batch dim's [min, max]."""
    dynamic = [spec for spec in inputs if spec.min_shape[0] != spec.max_shape[0]]
    if sweep.batch and not dynamic:
        raise UserInputError("sweep.batch", "no input has a dynamic batch (leading) dim",
                             "give the inputs min_shape/max_shape with different leading dims")
    for i, batch in enumerate(sweep.batch):
        for spec in dynamic:
            if not spec.min_shape[0] <= batch <= spec.max_shape[0]:
                raise UserInputError(f"sweep.batch[{i}]", f"{batch} is outside input '{spec.name}''s batch range "
                                     f"[{spec.min_shape[0]}, {spec.max_shape[0]}]",
                                     "choose batch sizes within [min_shape[0], max_shape[0]], or widen them: "
                                     "one build serves every batch size in its range")


def check_device(device: str, path: str) -> None:
    """Reject malformed devices (whether this machine has them is checked when a run is resolved)."""
    if device not in ("auto", "cpu", "cuda") and not (device.startswith("cuda:") and device[5:].isdigit()):
        raise UserInputError(path, f"unknown device '{device}'", "use 'auto', 'cpu', 'cuda' or 'cuda:N'")


def bundled_config_dir() -> Path:
    """The folder of configs that ship with trtbench (resolved for bare ``--config`` names)."""
    return Path(str(resources.files("trtbench") / "configs"))


def resolve_config_path(name: str) -> Path:
    """A config path as given, or a bare name (``resnet34`` / ``resnet34.yaml``) from the bundled configs."""
    path = Path(name).expanduser()
    if path.is_file():
        return path
    if path.parent == Path("."):
        for candidate in (name, f"{name}.yaml"):
            bundled = bundled_config_dir() / candidate
            if bundled.is_file():
                return bundled
    known = sorted(p.name for p in bundled_config_dir().glob("*.yaml"))
    hint = schema.suggest(path.name, known) or f"bundled configs: {', '.join(known)}"
    raise UserInputError("--config", f"file not found: {name}", hint)


def read_yaml(path: Path) -> Any:
    """Parse a YAML file; syntax errors name the file and line."""
    require_readable_file(str(path), "--config")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or str(err)
        raise UserInputError(where, f"YAML syntax error: {problem}",
                             "fix the YAML at that line (indentation, colons, brackets)") from err


def config_from_dict(data: Any, *, device: str | None = None, variants: list[str] | None = None,
                     output_dir: str | None = None, profile: bool = False) -> Config:
    """Validate plain data (a dict it changes in place) into a :class:`Config`, with the command line's overrides."""
    if device is not None:
        data["device"] = device
    if variants is not None:
        data["variants"] = list(variants)
    for key, given, value in (("output", output_dir is not None, {"dir": str(output_dir)}),
                              ("profile", profile, {"enabled": True})):
        if given:  # one key set in the section, the others kept
            section = data.get(key)
            data[key] = {**(section if isinstance(section, dict) else {}), **value}
    return schema.from_dict(Config, data)


def load_config(path: str | Path, *, device: str | None = None, variants: list[str] | None = None,
                output_dir: str | None = None, profile: bool = False) -> Config:
    """Read a config file, apply command-line overrides, and validate it."""
    resolved = resolve_config_path(str(path))
    data = read_yaml(resolved)
    if not isinstance(data, dict):
        raise UserInputError(str(resolved), "the config must be a YAML mapping",
                             "start with 'name: ...' and 'model: ...' keys")
    return config_from_dict(data, device=device, variants=variants, output_dir=output_dir, profile=profile)
