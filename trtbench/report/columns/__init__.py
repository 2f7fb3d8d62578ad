"""Report columns: each module registers a :class:`ColumnSet`; the built-in ones are imported here, in column order."""

from trtbench.report.columns import (build_time, latency, throughput, speedup, precision_speedup,  # noqa: F401
                                     flops, accuracy, kernels, processes, energy)
from trtbench.report.columns.registry import Column, ColumnSet, register, registered, unregister

__all__ = ["Column", "ColumnSet", "register", "registered", "unregister"]
