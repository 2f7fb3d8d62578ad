"""The timing process's minor page faults per timed call of a block (why: docs/measuring.md)."""

from __future__ import annotations

import resource
import statistics

from trtbench.measure.trackers.base import Calls


class FaultsTracker:
    """Minor page faults (``getrusage``) per timed call of a block."""

    key = "faults"
    at = 0

    def start(self) -> None:
        self.at = resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    def stop(self, calls: Calls) -> float:
        return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - self.at) / len(calls.host_ms)


def faults_metrics(per_call: list[float]) -> dict:
    """A record's page-fault facts (``metrics.isolation``) from its blocks' faults per call: their median and range."""
    return {"minor_faults_per_call_median": round(statistics.median(per_call), 3) if per_call else None,
            "minor_faults_per_call_range": [round(min(per_call), 1), round(max(per_call), 1)] if per_call else None}
