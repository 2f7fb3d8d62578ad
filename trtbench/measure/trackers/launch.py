"""Launch-bound calls on CUDA: each block's median host ms until return (why: docs/measuring.md)."""

from __future__ import annotations

import statistics
from typing import Optional

from trtbench.measure.trackers.base import Calls

LAUNCH_BOUND_SHARE = 0.8  # host time until the call returns over its synchronised time, at or above which it is named


class LaunchTracker:
    """The median host ms until a call of the block returned, before synchronising (CUDA only)."""

    key = "launch"

    def start(self) -> None:
        """Nothing: :func:`~trtbench.measure.timing.time_calls` stamps each call's return."""

    def stop(self, calls: Calls) -> Optional[float]:
        return statistics.median(calls.returned_ms) if calls.returned_ms else None


def launch_metrics(returned_ms: list[float], host_ms: list[float]) -> Optional[dict]:
    """A record's ``metrics.launch``: median host ms until return, synchronised, and their ratio."""
    if not returned_ms or not host_ms:
        return None
    returned, synchronised = statistics.median(returned_ms), statistics.median(host_ms)
    return {"returned_ms_median": round(returned, 4), "synchronized_ms_median": round(synchronised, 4),
            "share": round(returned / synchronised, 3) if synchronised > 0 else None}


def launch_bound_share(metrics: dict) -> Optional[float]:
    """The share of a record's ``metrics`` where it is at least :data:`LAUNCH_BOUND_SHARE`, else None."""
    share = (metrics.get("launch") or {}).get("share")
    return share if share is not None and share >= LAUNCH_BOUND_SHARE else None
