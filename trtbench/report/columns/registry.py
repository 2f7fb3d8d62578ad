"""The column registry: a :class:`ColumnSet` declares report columns and CSV fields; the tables iterate it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from trtbench.report.rows import Row


@dataclass(frozen=True)
class Column:
    """A column of the speedup table: its header (text, or made from the table's rows) and a row's cell."""

    header: str | Callable[[Sequence[Row]], str]
    cell: Callable[[Row], str]

    def heading(self, rows: Sequence[Row]) -> str:
        """The header over ``rows``."""
        return self.header if isinstance(self.header, str) else self.header(rows)


@dataclass(frozen=True)
class ColumnSet:
    """A named set of report columns (shown when ``shown(rows)``) and CSV fields with a row's values."""

    name: str
    columns: tuple[Column, ...]
    fields: tuple[str, ...]
    values: Callable[[Row], Mapping[str, Any]]
    shown: Callable[[Sequence[Row]], bool] = lambda rows: True


_REGISTRY: dict[str, ColumnSet] = {}


def register(column_set: ColumnSet) -> ColumnSet:
    """Add ``column_set`` after those registered before it (its columns follow theirs)."""
    if column_set.name in _REGISTRY:
        raise ValueError(f"a column set named {column_set.name!r} is registered already")
    taken = {f for c in _REGISTRY.values() for f in c.fields}
    clash = taken.intersection(column_set.fields)
    if clash:
        raise ValueError(f"column set {column_set.name!r}: CSV field(s) {', '.join(sorted(clash))} belong to "
                         f"another column set")
    _REGISTRY[column_set.name] = column_set
    return column_set


def unregister(name: str) -> None:
    """Remove a column set (a plug-in that is unloaded, or a test's toy columns)."""
    _REGISTRY.pop(name, None)


def registered() -> tuple[ColumnSet, ...]:
    """The column sets in registration order: the order of their columns."""
    return tuple(_REGISTRY.values())
