"""The metric registry: a metric declares its report columns and its CSV fields, and the tables
iterate :func:`registered`, so adding a metric is one module that calls :func:`register`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from trtbench.report.rows import Row


def _always(rows: Sequence[Row]) -> bool:
    return True


@dataclass(frozen=True)
class Column:
    """A column of the speedup table: its header and a row's cell ("" where the row has no value)."""

    header: str
    cell: Callable[[Row], str]


@dataclass(frozen=True)
class Metric:
    """A named metric: its table columns (shown when ``shown(rows)``), and its CSV fields with a
    row's values for them."""

    name: str
    columns: tuple[Column, ...]
    fields: tuple[str, ...]
    values: Callable[[Row], Mapping[str, Any]]
    shown: Callable[[Sequence[Row]], bool] = _always


_REGISTRY: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add ``metric`` after those registered before it (its columns follow theirs)."""
    if metric.name in _REGISTRY:
        raise ValueError(f"a metric named {metric.name!r} is registered already")
    taken = {f for m in _REGISTRY.values() for f in m.fields}
    clash = taken.intersection(metric.fields)
    if clash:
        raise ValueError(f"metric {metric.name!r}: CSV field(s) {', '.join(sorted(clash))} belong to another metric")
    _REGISTRY[metric.name] = metric
    return metric


def unregister(name: str) -> None:
    """Remove a metric (a plug-in that is unloaded, or a test's toy metric)."""
    _REGISTRY.pop(name, None)


def registered() -> tuple[Metric, ...]:
    """The metrics in registration order: the order of their columns."""
    return tuple(_REGISTRY.values())
