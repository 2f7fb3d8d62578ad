"""Energy: joules per inference above the idle draw, with its interval, and the average power (``metrics.energy``)."""

from __future__ import annotations

from typing import Optional, Sequence

from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.rows import Row


def _energy(row: Row) -> dict:
    return (row.record.metrics.get("energy") or {}) if row.record.timed else {}


def _joules_text(row: Row) -> str:
    energy = _energy(row)
    joules = energy.get("joules_per_call")
    if joules is None:
        return ""
    ci = energy.get("joules_per_call_ci")
    return f"{joules:.3g}" + (f" [{ci[0]:.3g}-{ci[1]:.3g}]" if ci else "")


def _state_text(start: Optional[dict], end: Optional[dict]) -> str:
    if not start or not end:
        return ""
    parts = [f"{label} {start[key]}->{end[key]}{unit}" for key, label, unit in
             (("sm_clock_mhz", "SM", " MHz"), ("memory_clock_mhz", "memory", " MHz"), ("temperature_c", "", " C"))
             if key in start and key in end]
    return ", ".join(p.strip() for p in parts)


def energy_notes(rows: Sequence[Row]) -> list[str]:
    """Why energy is absent (once per reason), or how it was measured, with each point's clocks and temperatures."""
    reasons = sorted({_energy(row)["unavailable"] for row in rows if "unavailable" in _energy(row)})
    notes = [f"energy not measured: {reason}." for reason in reasons]
    measured = [row for row in rows if _energy(row).get("joules_per_call") is not None]
    if measured:
        sources = sorted({_energy(row)["source"] for row in measured})
        notes.append(f"J/inference: the device's energy counter ({', '.join(sources)}) read around each block of "
                     "timed calls in the process that made them, less the idle draw read just before the point's "
                     "rounds, per call; its interval is one process's (the spread of its blocks); avg W: the draw "
                     "while the calls ran.")
    states = {}
    for row in measured:
        text = _state_text(_energy(row).get("state_start"), _energy(row).get("state_end"))
        case = row.record.case
        if text:
            states.setdefault(f"{case.model} {case.precision} {case.point}", text)
    notes += [f"device state over the rounds at {where}: {text}." for where, text in states.items()]
    return notes


def _values(row: Row) -> dict:
    energy = _energy(row)
    ci = energy.get("joules_per_call_ci") or [None, None]
    return {"energy_j_per_inference": energy.get("joules_per_call"), "energy_j_low": ci[0], "energy_j_high": ci[1],
            "average_power_w": energy.get("average_power_w"), "idle_power_w": energy.get("idle_power_w"),
            "energy_source": energy.get("source")}


ENERGY = register(ColumnSet(
    "energy", columns=(Column("J/inference (95% CI)", _joules_text),
                       Column("avg W", lambda row: "" if (power := _energy(row).get("average_power_w")) is None
                              else f"{power:.0f}")),
    fields=("energy_j_per_inference", "energy_j_low", "energy_j_high", "average_power_w", "idle_power_w",
            "energy_source"), values=_values,
    shown=lambda rows: any(_energy(row).get("joules_per_call") is not None for row in rows)))
