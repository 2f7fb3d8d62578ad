"""Throughput: samples per second at the median latency."""

from trtbench.report.columns.registry import Column, ColumnSet, register
from trtbench.report.rows import Row


def _throughput(row: Row):
    return row.record.throughput if row.record.timed else None


THROUGHPUT = register(ColumnSet(
    "throughput", columns=(Column("samples/s", lambda row: "" if not _throughput(row) else f"{_throughput(row):.1f}"),),
    fields=("throughput",), values=lambda row: {"throughput": _throughput(row)}))
