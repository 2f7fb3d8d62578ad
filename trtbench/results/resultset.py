"""A set of results: records by (case, environment), other parts by kind and key; load, save (docs/outputs.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Iterator, Optional

from trtbench.analysis.records import Analysis
from trtbench.core.case import BASELINE_VARIANT, Case, parse_shapes_text
from trtbench.core.env import environment_id
from trtbench.core.errors import UserInputError
from trtbench.core.fsutil import atomic_write_json
from trtbench.core.part import Part, PartsByKind, part_type, part_types
from trtbench.core.precision import REFERENCE, is_quantized
from trtbench.core.record import Record
from trtbench.core.status import RunStatus
from trtbench.core.stats import Interval
from trtbench.core.version import __version__
from trtbench.measure.bandwidth import MemoryCeiling
from trtbench.measure.ceiling import Ceiling

SCHEMA_VERSION = 6  # what each version changed: docs/outputs.md, "Module notes"
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6)
NOT_PARTS = ("schema_version", "trtbench_version", "environments", "runs", "records", "part_lists")
SERVED_KIND = "served"  # schema 3 kept a case's serving results in its record, as this kind's part
RENAMED_KEYS = {"llm_serving": "decoder_serving"}  # a part list's former key -> its key now: read as the new one


def record_parts(item: dict) -> list[Part]:
    """A record as written, and the parts that schema 3 and earlier kept in it (its ceilings, its serving results)."""
    metrics = dict(item.get("metrics") or {})
    ceiling_values = metrics.pop("ceiling", None)
    record = Record.from_dict({**item, "metrics": metrics})
    parts: list[Part] = [record]
    if ceiling_values:
        parts.append(Ceiling(*Ceiling.scope_of(record), values=dict(ceiling_values)))
    served = part_type(SERVED_KIND)
    if item.get("serving") and served is not None:
        parts.append(served.from_dict({"case_key": record.case.key, "environment": record.environment,
                                       "results": item["serving"]}))
    return parts


@dataclass
class ResultSet:
    """Records of one or more runs, the other parts (by kind, then key), and the environments they ran in."""

    environments: dict[str, dict] = field(default_factory=dict)
    runs: list[dict] = field(default_factory=list)
    _records: dict[tuple[str, str], Record] = field(default_factory=dict)
    # (Case.baseline_id, precision, environment) -> {case key: eager record}, whatever eager's options
    _eager: dict[tuple, dict[str, Record]] = field(default_factory=dict)
    _parts: PartsByKind = field(default_factory=PartsByKind)  # every part but the records
    _unread: dict[str, list] = field(default_factory=dict)  # results.json lists of no registered kind, kept

    def add(self, part: Part) -> None:
        """Add or replace a part (a record, a ceiling, a served case...) of the same key."""
        self.__dict__.pop("analysis", None)
        if not isinstance(part, Record):
            self._parts.add(part)
            return
        self._records[part.key] = part
        if part.case.variant == BASELINE_VARIANT:
            key = (part.case.baseline_id, part.case.precision, part.environment)
            self._eager.setdefault(key, {})[part.case.key] = part

    def parts(self, kind: str) -> list[Part]:
        """Every part of ``kind`` (not records: iterate the set for those)."""
        return self._parts.of(kind)

    def part(self, kind: str, key: tuple) -> Optional[Part]:
        return self._parts.get(kind, key)

    def other_parts(self) -> list[Part]:
        """Every part that is not a record, of every kind."""
        return list(self._parts)

    def record_of(self, key: tuple) -> Optional[Record]:
        """The record whose key (case key, environment) is ``key``."""
        return self._records.get(key)

    def ceiling_of(self, record: Record) -> Optional[Ceiling]:
        """The ceilings of the device ``record`` ran on, at its dtype and threads (None when not measured)."""
        return self.part(Ceiling.KIND, Ceiling.scope_of(record))

    def __iter__(self) -> Iterator[Record]:
        return iter(self._records.values())

    def __len__(self) -> int:
        return len(self._records)

    @property
    def records(self) -> list[Record]:
        return list(self._records.values())

    def get(self, case: Case, environment: str) -> Optional[Record]:
        return self._records.get((case.key, environment))

    def _eager_at(self, record: Record, precision: str) -> Optional[Record]:
        """The eager record at ``precision`` at the record's point; None where none, or several (merged runs)."""
        candidates = list(self._eager.get((record.case.baseline_id, precision, record.environment), {}).values())
        return candidates[0] if len(candidates) == 1 else None

    def baseline(self, record: Record) -> Optional[Record]:
        """Eager fp32 at the same point: the baseline of every precision's rows (eager fp32's own)."""
        if record.case.variant == BASELINE_VARIANT and record.case.precision == REFERENCE:
            return record
        return self._eager_at(record, REFERENCE)

    def precision_baseline(self, record: Record) -> Optional[Record]:
        """Eager at the record's reduced float precision (fp16, bf16), else None."""
        if record.case.precision == REFERENCE or is_quantized(record.case.precision):
            return None
        return self._eager_at(record, record.case.precision)

    @cached_property
    def analysis(self) -> Analysis:
        """The statistics of the set's records, speedups over :meth:`baseline`; made again after an add."""
        return Analysis(self, self.baseline)

    def speedup(self, record: Record) -> Optional[Interval]:
        """The record's speedup over eager fp32 (:meth:`baseline`), paired by round, with its two-level 95% CI."""
        return self.analysis.paired_speedup(self.baseline(record), record)

    def precision_speedup(self, record: Record) -> Optional[Interval]:
        """Eager's median at the record's own precision (:meth:`precision_baseline`) over the record's, as above."""
        return self.analysis.paired_speedup(self.precision_baseline(record), record)

    def median_interval(self, record: Record) -> Optional[Interval]:
        """The record's median block with its two-level 95% CI (None when not timed)."""
        return self.analysis.median_interval(record)

    def exit_code(self, interrupted: bool = False) -> int:
        """130 if interrupted; 1 if the run stopped on an error or any part fails the run; else 0."""
        if interrupted:
            return 130
        stopped = any(run.get("status") == RunStatus.FAILED for run in self.runs)  # by an error outside a variant
        return 1 if stopped or any(part.fails_run for part in [*self, *self._parts]) else 0

    def to_dict(self) -> dict:
        data = {"schema_version": SCHEMA_VERSION, "trtbench_version": __version__,
                "environments": self.environments, "runs": self.runs, "records": [r.to_dict() for r in self]}
        for kind in part_types():
            if kind is not Record:
                data[kind.RESULTS_KEY] = [p.to_dict() for p in self.parts(kind.KIND)]
        data = {**self._unread, **data}
        data["part_lists"] = [key for key in data if key not in NOT_PARTS]  # what from_dict reads back as parts
        return data

    def save(self, path: Path) -> None:
        atomic_write_json(Path(path), self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> "ResultSet":
        """A run's results.json (the file or its output directory), schema version 1 to 6."""
        path = Path(path)
        if path.is_dir():
            path = path / "results.json"
        if not path.is_file():
            raise UserInputError(str(path), "no results.json here", "pass a run's output directory or its results.json")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise UserInputError(str(path), f"not valid JSON: {err}",
                                 "pass a results.json written by trtbench") from err
        version = data.get("schema_version") if isinstance(data, dict) else None
        if version not in READABLE_VERSIONS:
            raise UserInputError(str(path), f"unknown schema_version {version!r}",
                                 f"this trtbench reads versions {READABLE_VERSIONS}; upgrade trtbench")
        try:
            return cls.from_v1(data) if version == 1 else cls.from_dict(data)  # 2 and 3: parts lifted from records
        except (KeyError, TypeError, ValueError) as err:
            raise UserInputError(str(path), f"malformed results ({type(err).__name__}: {err})",
                                 "pass a results.json written by trtbench, unedited") from err

    @classmethod
    def from_dict(cls, data: dict) -> "ResultSet":
        data = {RENAMED_KEYS.get(key, key): value for key, value in data.items()}
        data["part_lists"] = [RENAMED_KEYS.get(key, key) for key in data.get("part_lists", ())]
        result = cls(environments=dict(data["environments"]), runs=list(data.get("runs", [])))
        for item in data["records"]:
            for part in record_parts(item):
                if result.part(part.KIND, part.key) is None or isinstance(part, Record):
                    result.add(part)
        kinds = {kind.RESULTS_KEY: kind for kind in part_types() if kind is not Record}
        for key, items in data.items():
            if key in kinds:
                for item in items:
                    result.add(kinds[key].from_dict(item))
            elif key in data.get("part_lists", ()):  # parts of a scenario not registered in this process: kept
                result._unread[key] = items  # (a report's entries, recommendations say, are recomputed instead)
        return result

    @classmethod
    def from_v1(cls, data: dict) -> "ResultSet":
        """Convert a version 1 document: one round per row, the model and threads from its config/environment."""
        env_id = environment_id(data["environment"])
        env = {**data["environment"], "id": env_id}
        config = data.get("config", {})
        model = config.get("model", {})
        model_id = f"{model.get('source', 'torchvision')}:{model.get('name', config.get('name', '?'))}"
        threads = int(env.get("threads") or 0)
        result = cls(environments={env_id: env},
                     runs=[{"name": config.get("name"), "config": config, "environment": env_id,
                            "started_at": data.get("started_at"), "finished_at": data.get("finished_at"),
                            "status": data.get("status"), "schema_version": 1,
                            **({"profiles": data["profiles"]} if "profiles" in data else {})}])
        for row in data["results"]:
            case = Case(model=model_id, variant=row["variant"], precision=row["precision"], point=row["shape"],
                        input_shapes=parse_shapes_text(row.get("input_shapes", "")), threads=threads,
                        device=str(env.get("device", "cpu")))
            samples = row.get("samples_ms")
            device_samples = row.get("device_samples_ms")
            result.add(Record(case=case, environment=env_id, status=row["status"], reason=row.get("reason", ""),
                              rounds=[samples] if samples else [],
                              device_rounds=[device_samples] if device_samples else None,
                              stopped_by=row.get("stopped_by"), accuracy=row.get("parity"),
                              build={"build_s": row.get("build_s"), "info": row.get("build_info", {})},
                              warnings=row.get("warnings", [])))
        return result

    @classmethod
    def merge(cls, sets: list["ResultSet"]) -> tuple["ResultSet", list[str]]:
        """One set with every record and part, and notes (docs/matrices.md, "Merge")."""
        merged, notes = cls(), []
        source: dict[tuple, int] = {}  # a kept record's key -> its input's number
        for i, other in enumerate(sets):
            merged.environments.update(other.environments)
            merged.runs.extend(other.runs)
            for record in other:
                if merged.get(record.case, record.environment) is not None:
                    notes.append(f"{record.case.model} {record.case.label} {record.case.precision} "
                                 f"{record.case.point}: measured in more than one input; kept input {i + 1}'s")
                    merged._parts.drop_joined(record.key)  # a part that joins the earlier record goes with it
                merged.add(record)
                source[record.key] = i + 1
            for part in other._parts:
                earlier = merged.part(part.KIND, part.key)
                # a device's ceilings measured by several inputs on one machine are one fact, not noted
                if (not part.JOINS_RECORD and earlier is not None and earlier != part
                        and not isinstance(part, (Ceiling, MemoryCeiling))):
                    notes.append(f"{part.KIND} {', '.join(map(str, part.key))}: in more than one input; "
                                 f"kept input {i + 1}'s")
                merged.add(part)
            for section, items in other._unread.items():
                merged._unread[section] = merged._unread.get(section, []) + items
        return merged, notes + _mixed_point_notes(merged, source)


def _mixed_point_notes(merged: ResultSet, source: dict[tuple, int]) -> list[str]:
    """A note per point whose kept records came from several inputs: their rounds were not timed together."""
    inputs: dict[tuple, set[int]] = {}
    for record in merged:
        inputs.setdefault((record.case.baseline_id, record.environment), set()).add(source[record.key])
    return [f"{model} {point} in environment {environment}: its records come from inputs "
            f"{', '.join(map(str, sorted(numbers)))}, whose runs share no rounds, so its speedups pair blocks that "
            "were not timed together; merge each point from one run"
            for ((model, point, *_), environment), numbers in inputs.items() if len(numbers) > 1]
