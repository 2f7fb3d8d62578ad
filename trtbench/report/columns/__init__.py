"""Metrics: each is one module that declares its report columns and CSV fields and registers itself
(:mod:`trtbench.report.columns.registry`); the tables iterate the registry. The built-in ones are imported
here, in the order of their columns."""

from trtbench.report.columns import build_time, latency, throughput, speedup, precision_speedup, flops, accuracy  # noqa: F401  (registration)
from trtbench.report.columns.registry import Column, Metric, register, registered, unregister

__all__ = ["Column", "Metric", "register", "registered", "unregister"]
