"""What a result set gives the history: each run in it (:class:`StoredRun`) with every figure of every row and its
interval (docs/outputs.md, "The history"); a run of schema 5 or earlier with a derived id and model hash."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from enum import Enum
from typing import Mapping, Optional

from trtbench.core.case import Case
from trtbench.core.env import machine_fingerprint
from trtbench.core.record import Record
from trtbench.core.stats import Interval
from trtbench.core.status import Status
from trtbench.results.resultset import ResultSet

VERSION_KEYS = ("python", "torch", "torchvision", "driver", "cuda", "cudnn")


class FigureKind(Enum):
    """A figure the history keeps of a row (its name), with its unit and whether it grows as things get better."""

    MEDIAN = ("median", "ms", False)
    P99 = ("p99", "ms", False)
    SPEEDUP = ("speedup", "x over eager", True)
    ACCURACY = ("accuracy", "max abs error", False)
    PEAK_QPS = ("peak_qps", "QPS", True)
    TTFT = ("ttft", "ms", False)
    TPOT = ("tpot", "ms", False)

    def __new__(cls, name: str, unit: str, higher_is_better: bool) -> "FigureKind":
        kind = object.__new__(cls)
        kind._value_, kind.unit, kind.higher_is_better = name, unit, higher_is_better
        return kind

    def worse(self, change: float) -> bool:
        """Whether a relative ``change`` of this figure is for the worse."""
        return change < 0 if self.higher_is_better else change > 0


@dataclass(frozen=True)
class FigureName:
    """A series' figure: its kind and, for a serving peak, the setting it was found at (``batching``: its JSON with
    sorted keys, empty without batching). A series' key keeps it as :attr:`text`, read back by :meth:`from_text`."""

    kind: FigureKind
    scenario: str = ""
    workers: int = 0
    threads: int = 0
    batching: str = ""

    @property
    def text(self) -> str:
        """``median``; ``peak_qps server w2 t4``, with `` batching {...}`` where it batched."""
        if not self.scenario:
            return self.kind.value
        return f"{self.kind.value} {self.scenario} w{self.workers} t{self.threads}" + \
            (f" batching {self.batching}" if self.batching else "")

    @classmethod
    def from_text(cls, text: str) -> "FigureName":
        head, _, batching = text.partition(" batching ")
        kind, *setting = head.split(" ")
        if not setting:
            return cls(FigureKind(kind))
        scenario, workers, threads = setting
        return cls(FigureKind(kind), scenario, int(workers[1:]), int(threads[1:]), batching)


@dataclass(frozen=True)
class SeriesKey:
    """What a series is one figure of (the model's id is for people; its hash identifies it; ``figure``: the
    :class:`FigureName`'s text, as stored)."""

    model: str
    model_hash: str
    variant: str
    options: str
    precision: str
    point: str
    threads: int
    knobs: str
    device: str
    machine: str
    figure: str

    @property
    def series_id(self) -> str:
        text = json.dumps(list(self.__dict__.values()), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        """``m fp32 opt traced median`` with the options, threads and knobs where there are any."""
        parts = [self.model, f"{self.variant}{'(' + self.options + ')' if self.options else ''}", self.precision,
                 self.point, f"t{self.threads}", self.knobs, self.figure]
        return " ".join(p for p in parts if p)

    @property
    def figure_name(self) -> FigureName:
        return FigureName.from_text(self.figure)


@dataclass(frozen=True)
class Figure:
    """One figure of one row of a run: its series, status and value (None where the row did not run; without an
    interval, ``low`` and ``high`` equal the value)."""

    key: SeriesKey
    status: str
    value: Optional[Interval]
    reason: str = ""


@dataclass(frozen=True)
class Point:
    """A run's figure in a series."""

    run: RunRow
    figure: Figure

    @property
    def value(self) -> Optional[Interval]:
        """Its figure's value (None where the run gave none)."""
        return self.figure.value


@dataclass(frozen=True)
class Machine:
    """The machine a run measured on, as a series keys it (:func:`~trtbench.core.env.machine_fingerprint`)."""

    cpu: Optional[str]
    cpu_count: Optional[int]
    gpu_name: Optional[str]
    gpu_memory_gib: Optional[float]
    cpu_flags: tuple[str, ...]
    id: str

    @classmethod
    def from_dict(cls, data: dict) -> "Machine":
        return cls(**{**data, "cpu_flags": tuple(data["cpu_flags"])})


@dataclass(frozen=True)
class RunRow:
    """A run as the history stores it (``source``: the folder it was read from; ``versions``: name -> version)."""

    run_id: str
    started_at: str
    name: str
    status: str
    label: str
    source: str
    versions: Mapping[str, str]
    machine: Machine
    accepted: bool = False  # its levels the new normal from it on (``trtbench history accept``)


@dataclass(frozen=True)
class StoredRun:
    """A run of a result set as the history adds it: the run and its figures."""

    run: RunRow
    figures: tuple[Figure, ...]


def versions_of(environment: dict) -> dict[str, str]:
    """The versions a run ran with, flat: :data:`VERSION_KEYS` and each optional library."""
    versions = {key: str(environment[key]) for key in VERSION_KEYS if environment.get(key) is not None}
    versions.update({name: str(v) for name, v in sorted((environment.get("libraries") or {}).items())})
    return versions


def derived_run_id(run: dict) -> str:
    """The id of a run written before schema 6: a hash of its name, start, environment and config."""
    facts = [run.get("name"), run.get("started_at"), run.get("environment"), run.get("shard"), run.get("config")]
    return "d" + hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()[:15]


def model_hash_of(run: dict, model_id: str) -> str:
    """The run's hash of model ``model_id`` (schema 6), else one derived from its config's model entry."""
    stored = (run.get("models") or {}).get(model_id)
    if stored:
        return stored
    config = run.get("config") or {}
    entries = config.get("models") or [config.get("model")]
    entry = next((e for e in entries if isinstance(e, dict) and model_id in (e.get("label"), _entry_id(e))), None)
    text = json.dumps(entry if entry is not None else model_id, sort_keys=True, default=str)
    return "d" + hashlib.sha256(text.encode()).hexdigest()[:15]


def _entry_id(entry: dict) -> str:
    kwargs = ",".join(f"{k}={v}" for k, v in sorted((entry.get("kwargs") or {}).items()))
    return f"{entry.get('source', 'torchvision')}:{entry.get('path') or entry.get('name')}" + \
        (f"({kwargs})" if kwargs else "")


def _interval(value: Optional[float], low: Optional[float] = None, high: Optional[float] = None) -> Optional[Interval]:
    if value is None or not 0 < value < math.inf:
        return None
    low = value if low is None or not low > 0 else low
    high = value if high is None or not high > 0 else high
    return Interval(float(value), float(min(low, value)), float(max(high, value)))


def record_figures(results: ResultSet, record: Record, key_of) -> list[Figure]:
    """A record's figures: median, p99, speedup over eager fp32, accuracy (``key_of(case, figure)``: the key)."""

    def key(kind: FigureKind) -> SeriesKey:
        return key_of(record.case, FigureName(kind))

    if record.status is not Status.OK:
        kinds = [FigureKind.MEDIAN, FigureKind.P99, FigureKind.ACCURACY] + \
            ([] if results.baseline(record) is record else [FigureKind.SPEEDUP])
        return [Figure(key(kind), str(record.status), None, record.reason) for kind in kinds]
    figures = []
    median = results.median_interval(record)
    if median is not None:
        figures.append(Figure(key(FigureKind.MEDIAN), Status.OK, _interval(median.value, median.low, median.high)))
        figures.append(Figure(key(FigureKind.P99), Status.OK, _interval(record.stats.p99)))
    speedup = results.speedup(record)
    if speedup is not None:
        figures.append(Figure(key(FigureKind.SPEEDUP), Status.OK, _interval(speedup.value, speedup.low, speedup.high)))
    if record.accuracy is not None:
        status = Status.FAILED if record.accuracy_failed else Status.OK
        error = record.accuracy.get("max_abs_err")
        figures.append(Figure(key(FigureKind.ACCURACY), status, _interval(error),
                              "" if status == Status.OK else "accuracy below its tolerance"))
    return figures


def served_figures(results: ResultSet, part, key_of) -> list[Figure]:
    """A served case's peak per serving setting, with its joint estimate's interval."""
    record = results.record_of(part.key)
    if record is None:
        return []
    figures = []
    for item in part.to_dict()["results"]:
        name = FigureName(FigureKind.PEAK_QPS, item["scenario"], item["workers"], item["threads"],
                          json.dumps(item["batching"], sort_keys=True) if item.get("batching") else "")
        interval = item.get("interval") or {}
        value = _interval(item.get("peak_qps"), interval.get("low"), interval.get("high"))
        status = str(item.get("status", Status.OK))
        figures.append(Figure(key_of(record.case, name), status, value, item.get("reason", "")))
    return figures


def generate_figures(part, key) -> list[Figure]:
    """A generate row's TTFT and TPOT medians with their intervals (``key(figure)``: the key)."""
    data = part.to_dict()
    metrics = (data.get("data") or {}).get("metrics") or {}
    names = [FigureName(FigureKind.TTFT), FigureName(FigureKind.TPOT)]
    if data["status"] != Status.OK or not metrics:
        return [Figure(key(name), data["status"], None, data.get("reason", "")) for name in names]
    figures = []
    for name in names:
        metric = metrics.get(f"{name.kind.value}_ms") or {}
        median, rel = metric.get("median"), metric.get("median_ci_rel")
        finite = rel is not None and rel != float("inf")
        figures.append(Figure(key(name), Status.OK, _interval(median, median * (1 - rel) if finite else None,
                                                             median * (1 + rel) if finite else None)
                              if median else None))
    return figures


def _run_of_record(runs: list[dict], ids: list[str], record) -> Optional[int]:
    """The index of the run that measured ``record``: the one its ``run_id`` names (schema 6), else the last run in
    its environment (or the only run)."""
    if record.run_id in ids:
        return ids.index(record.run_id)
    same = [i for i, run in enumerate(runs) if run.get("environment") == record.environment]
    return same[-1] if same else (0 if len(runs) == 1 else None)


def stored_runs(results: ResultSet, source: str) -> list[StoredRun]:
    """Each run of ``results`` (read from folder ``source``) with the figures of the rows it measured; a run
    without a start time or without a row is left out (nothing to place in a series)."""
    runs = results.runs
    ids = [run.get("run_id") or derived_run_id(run) for run in runs]
    figures: dict[int, list[Figure]] = {i: [] for i in range(len(runs))}

    def keyer(index: int, environment: str):
        env = results.environments.get(environment) or {}
        machine = _machine(env).id

        def key_of(case, figure: FigureName) -> SeriesKey:
            return SeriesKey(case.model, model_hash_of(runs[index], case.model), case.variant, case.options,
                             case.precision, case.point, case.threads, case.knobs, case.device, machine, figure.text)
        return key_of

    for record in results:
        index = _run_of_record(runs, ids, record)
        if index is not None:
            figures[index] += record_figures(results, record, keyer(index, record.environment))
    for part in results.parts("served"):
        record = results.record_of(part.key)
        index = _run_of_record(runs, ids, record) if record is not None else None
        if index is not None:
            figures[index] += served_figures(results, part, keyer(index, part.environment))
    for part in results.parts("generate"):
        index = next((i for i in reversed(range(len(runs))) if runs[i].get("environment") == part.environment), None)
        if index is not None:
            key_of = keyer(index, part.environment)
            # a generate row as a case, for its series key: its slot in the options' place, no input shapes or device
            case = Case(part.model, part.decoder, part.precision, part.point, (), part.threads, "", options=part.slot)
            figures[index] += generate_figures(part, lambda name, c=case, k=key_of: k(c, name))
    stored = []
    for i, run in enumerate(runs):
        env = results.environments.get(run.get("environment")) or {}
        if run.get("started_at") and figures[i]:
            row = RunRow(ids[i], str(run["started_at"]), str(run.get("name") or ""), str(run.get("status") or ""),
                         str(run.get("label") or ""), source, versions_of(env), _machine(env))
            stored.append(StoredRun(row, tuple(figures[i])))
    return stored


def _machine(env: dict) -> Machine:
    """The machine ``env`` names (its fingerprint, derived where a run wrote none)."""
    return Machine.from_dict(env.get("machine") or machine_fingerprint(env))
