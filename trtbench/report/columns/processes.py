"""Replicate processes: how many timed each row, their spread, and the rows whose processes disagreed."""

from __future__ import annotations

from typing import Sequence

from trtbench.analysis.records import process_spread
from trtbench.core.allocator import threshold_text
from trtbench.core.record import Record
from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.rows import Row

# what a process's facts say, and how the notes name each
FACTS = (("minor_faults_per_call_median", "page faults/call"), ("voluntary_ctx_switches", "voluntary context switches"),
         ("involuntary_ctx_switches", "involuntary context switches"), ("cpu_migrations", "CPU migrations"),
         ("rss_mb", "RSS MB"))


def _fact_text(value) -> str:
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 10 else f"{value:.2g}"
    return str(value)


def differences(record: Record) -> list[str]:
    """What differed between the record's processes (``metrics["processes"]``): ``page faults/call 0, 3700, 0``."""
    facts = sorted(record.metrics.get("processes") or [], key=lambda fact: fact.get("process", 0))
    out = []
    for key, name in FACTS:
        values = [fact.get(key) for fact in facts]
        if len({repr(v) for v in values if v is not None}) > 1:
            out.append(f"{name} {', '.join('?' if v is None else _fact_text(v) for v in values)}")
    allocators = [(fact.get("allocator") or {}) for fact in facts]
    if len({repr(sorted(a.items())) for a in allocators}) > 1:
        out.append("allocator " + " / ".join(_allocator_text(a) for a in allocators))
    return out


def _allocator_text(facts: dict) -> str:
    """A process's allocator facts: ``mmap threshold >= 16 MiB, trim threshold >= 32 MiB``."""
    return ", ".join(f"{key.removesuffix('_bytes').replace('_', ' ')} {threshold_text(value)}"
                     if key.endswith("threshold_bytes") else f"{key.replace('_', ' ')} {value}"
                     for key, value in sorted(facts.items())) or "?"


def disagreement_notes(disagreeing: Sequence[Record]) -> list[str]:
    """A note naming the rows whose processes disagreed, each with its process medians and what differed."""
    named = []
    for r in disagreeing:
        medians = ", ".join(f"{ms:.3f}" for _, ms in sorted(r.block_series.process_medians().items()))
        what = "; ".join(differences(r)) or "none of their page faults, context switches, CPU migrations, RSS " \
                                            "or allocator thresholds"
        named.append(f"{r.case.label} {r.case.precision} {r.case.point} (process medians {medians} ms; "
                     f"differed: {what})")
    if not named:
        return []
    return [f"processes disagreed beyond their own rounds' noise for: {'; '.join(named)}: each process has its own "
            "luck (where its memory landed, its allocator state, its cores), as each deployment's process does; the "
            "row's intervals cover that spread."]


def turn_notes(records: Sequence[Record]) -> list[str]:
    """A note naming the points whose processes took turns for memory (``metrics["process_turns"]``)."""
    turns = {f"{r.case.model} {r.case.point}": r.metrics["process_turns"] for r in records
             if (r.metrics.get("process_turns") or 0) > 1}
    if not turns:
        return []
    return ["processes took turns for memory at: " + ", ".join(f"{point} ({n} sets)" for point, n in turns.items())
            + ": each set of processes was timed interleaved, then the next set started, as every process at once "
              "would not have fitted in memory."]


def demand_notes(records: Sequence[Record]) -> list[str]:
    """How many processes raced rows got and why (``metrics["race"]["processes"]``)."""
    race = [(r, r.metrics["race"]) for r in records if "race" in r.metrics]
    if not race:
        return []
    grown = [f"{r.case.label} {r.case.precision} {r.case.point} ({r.process_count}: "
             + ", ".join(f"round {d['round']}, {d['between_share']:.0%} of its interval between processes"
                         + ("" if d["started"] else ", could not start") for d in part["processes"]) + ")"
             for r, part in race if part.get("processes")]
    return ["processes: raced rows started in 2 processes at each point (the spread between processes needs two); a "
            "contender got a further one, up to benchmark.processes, where that spread made most of its interval"
            + (f": {'; '.join(grown)}." if grown else " (none did).")]


def _spread_cell(row: Row) -> str:
    spread = process_spread(row.record)
    return "" if spread is None else f"{spread:.1%}"


def _values(row: Row) -> dict:
    spread = process_spread(row.record)
    return {"processes": row.processes if row.record.timed else None,
            "process_spread_pct": None if spread is None else round(spread * 100, 3)}


PROCESSES = register(ColumnSet(
    "processes", columns=(Column("processes", lambda row: str(row.processes) if row.record.timed else ""),
                           Column("process spread", _spread_cell)),
    fields=("processes", "process_spread_pct"), values=_values))
