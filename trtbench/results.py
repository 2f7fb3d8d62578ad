"""The data a run produces (kept apart from how reports present it).

``results.json`` layout (``schema_version`` 1):

- ``schema_version``, ``trtbench_version``, ``started_at``, ``finished_at``, ``status``
  (``complete`` | ``interrupted``)
- ``environment``: see :func:`trtbench.env.collect_environment`
- ``config``: the resolved config
- ``results``: one :class:`Result` per variant x precision x shape
- ``profiles`` (only with an enabled ``profile:`` config section): see
  :func:`trtbench.profiling.runner.run_profiles`
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional

SCHEMA_VERSION = 1
STATUSES = ("ok", "failed", "skipped", "interrupted")


@dataclass
class Result:
    """One variant at one precision and one shape point."""

    variant: str
    precision: str
    shape: str  # label: min | opt | max
    input_shapes: str  # e.g. "2x3x224x224"
    status: str = "ok"
    reason: str = ""
    build_s: Optional[float] = None
    batch_size: Optional[int] = None
    latency_ms: Optional[dict] = None  # host latency stats (see trtbench.stats.Stats)
    device_ms: Optional[dict] = None  # CUDA-event stats (CUDA only)
    throughput: Optional[float] = None  # samples/s from the mean host latency
    iterations: Optional[int] = None
    stopped_by: Optional[str] = None
    speedup: Optional[float] = None  # eager median / this median, same shape and precision
    parity: Optional[dict] = None
    noisy: bool = False
    warnings: list = field(default_factory=list)
    build_info: dict = field(default_factory=dict)
    samples_ms: Optional[list] = None  # raw host latency per iteration
    device_samples_ms: Optional[list] = None  # raw CUDA-event time per iteration

    @property
    def parity_failed(self) -> bool:
        return self.parity is not None and not self.parity.get("ok", False)

    def to_dict(self) -> dict:
        return asdict(self)


def add_speedups(results: list[Result]) -> None:
    """Fill ``speedup`` from the eager result at the same precision and shape."""
    baseline = {(r.precision, r.shape): r.latency_ms["median"] for r in results
                if r.variant == "eager" and r.status == "ok" and r.latency_ms}
    for r in results:
        base = baseline.get((r.precision, r.shape))
        if r.status == "ok" and r.latency_ms and base:
            r.speedup = base / r.latency_ms["median"]


def exit_code(results: list[Result], interrupted: bool) -> int:
    """130 if interrupted, 1 if any variant failed or failed its accuracy check, else 0."""
    if interrupted:
        return 130
    return 1 if any(r.status == "failed" or r.parity_failed for r in results) else 0
