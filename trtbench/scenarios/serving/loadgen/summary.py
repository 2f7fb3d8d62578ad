"""LoadGen's ``mlperf_log_summary.txt``, parsed: the verdict, its constraints, rates and latency percentiles (with
token latencies, TTFT and TPOT too)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from trtbench.core.codec import Coded

_LINE = re.compile(r"^\s*(?P<key>[^:]+?)\s*:\s*(?P<value>\S.*?)\s*$")
_PERCENTILE = re.compile(r"^(?P<pct>\d+(?:\.\d+)?) percentile (?P<metric>latency|first token latency|"
                         r"time to output token) \(ns\)$")
_NAMED = re.compile(r"^(?P<stat>Min|Max|Mean) (?P<metric>latency|First Token latency|Time per Output Token) \(ns\)$")
_METRIC = {"latency": "latency", "first token latency": "ttft", "time to output token": "tpot",
           "time per output token": "tpot"}


def percentile_label(pct: float) -> str:
    """``p99``, ``p99.9``: the key of a percentile (given in percent) in :attr:`LoadGenSummary.latency_ms`."""
    return f"p{pct:g}"


@dataclass(frozen=True)
class LoadGenSummary(Coded):
    """One LoadGen run's summary: ``valid`` is LoadGen's ``Result is : VALID``."""

    valid: bool
    scheduled_qps: Optional[float]
    completed_qps: Optional[float]
    latency_ms: dict[str, float] = field(default_factory=dict)  # min, mean, max, p50, p90, p95, p97, p99, p99.9
    constraints: dict[str, bool] = field(default_factory=dict)  # "Performance constraints satisfied": True, ...
    ttft_ms: dict[str, float] = field(default_factory=dict)  # with token latencies: as latency_ms, first token
    tpot_ms: dict[str, float] = field(default_factory=dict)  # with token latencies: as latency_ms, per output token
    completed_tokens_per_s: Optional[float] = None

    @property
    def performance_met(self) -> bool:
        """The latency percentile within the target latency (LoadGen's 'Performance constraints satisfied')."""
        return self.constraints.get("Performance constraints satisfied", False)

    @property
    def minimums_met(self) -> bool:
        return (self.constraints.get("Min duration satisfied", False)
                and self.constraints.get("Min queries satisfied", False))


def parse_summary(text: str) -> LoadGenSummary:
    """Parse the text of ``mlperf_log_summary.txt`` (lines ``key : value``; the first of a key counts)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match and match["key"] not in values:
            values[match["key"]] = match["value"]
    metrics: dict[str, dict[str, float]] = {"latency": {}, "ttft": {}, "tpot": {}}
    for key, value in values.items():
        percentile, named = _PERCENTILE.match(key), _NAMED.match(key)
        if percentile:
            metrics[_METRIC[percentile["metric"]]][percentile_label(float(percentile["pct"]))] = float(value) / 1e6
        elif named:
            metrics[_METRIC[named["metric"].lower()]][named["stat"].lower()] = float(value) / 1e6
    constraints = {key: value.lower() == "yes" for key, value in values.items()
                   if key.endswith("satisfied") and value.lower() in ("yes", "no")}

    def rate(key: str) -> Optional[float]:
        return float(values[key]) if key in values else None

    return LoadGenSummary(valid=values.get("Result is") == "VALID",
                          scheduled_qps=rate("Scheduled samples per second"),
                          completed_qps=rate("Completed samples per second"),
                          latency_ms=metrics["latency"], constraints=constraints, ttft_ms=metrics["ttft"],
                          tpot_ms=metrics["tpot"], completed_tokens_per_s=rate("Completed tokens per second"))


def read_summary(log_dir: Path) -> LoadGenSummary:
    return parse_summary((Path(log_dir) / "mlperf_log_summary.txt").read_text(encoding="utf-8", errors="replace"))
