"""Report columns: each module declares a :class:`ColumnSet` (its report columns and CSV fields) and
registers it (:mod:`trtbench.report.columns.registry`); the tables iterate the registry. The built-in
ones are imported here, in the order of their columns."""

# registration: each module registers its columns on import
from trtbench.report.columns import (build_time, latency, throughput, speedup, precision_speedup,  # noqa: F401
                                     flops, accuracy, kernels, processes, energy)
from trtbench.report.columns.registry import Column, ColumnSet, register, registered, unregister

__all__ = ["Column", "ColumnSet", "register", "registered", "unregister"]
