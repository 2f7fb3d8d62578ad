"""Noise-aware comparison of two runs' results.json (same config, e.g. before/after a change).

Each matching case (model, variant, options, precision, point, threads, device) is compared on its raw per-iteration samples:
the ratio of medians with a seeded bootstrap 95% confidence interval. A change is reported only
when the whole interval lies beyond ``threshold`` (default 5%); otherwise it is within noise.
The interval reflects noise within each run, not drift between runs (other load, clock changes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from trtbench.core.case import Case
from trtbench.results.resultset import ResultSet
from trtbench.core.stats import BOOTSTRAP_SAMPLES


@dataclass(frozen=True)
class Change:
    """One case of the new run against the same case of the baseline."""

    case: Case
    base_ms: Optional[float]
    new_ms: Optional[float]
    ratio: Optional[float]  # new median / base median
    ci_low: Optional[float]
    ci_high: Optional[float]
    verdict: str  # faster | slower | no change | within noise | not comparable: <why>


def ratio_ci(base: np.ndarray, new: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """Bootstrap 95% interval of median(new) / median(base), resampling each run's samples."""
    rng = np.random.default_rng(seed)
    base_medians = np.median(rng.choice(base, size=(BOOTSTRAP_SAMPLES, base.size)), axis=1)
    new_medians = np.median(rng.choice(new, size=(BOOTSTRAP_SAMPLES, new.size)), axis=1)
    low, high = np.percentile(new_medians / base_medians, [2.5, 97.5])
    return float(low), float(high)


def _verdict(low: float, high: float, threshold: float) -> str:
    if high < 1 - threshold:
        return "faster"
    if low > 1 + threshold:
        return "slower"
    if low >= 1 - threshold and high <= 1 + threshold:
        return "no change"
    return "within noise"


def compare_runs(base: ResultSet, new: ResultSet, threshold: float = 0.05) -> list[Change]:
    """Compare every record of ``new`` with the baseline's record of the same case (any environment)."""
    by_case = {record.case: record for record in base}
    changes = []
    for record in new:
        old = by_case.get(record.case)
        why = None
        if old is None:
            why = "not in the baseline"
        elif not (old.timed and record.timed):
            why = "no timings in one of the runs"
        if why:
            changes.append(Change(record.case, None, None, None, None, None, f"not comparable: {why}"))
            continue
        base_samples, new_samples = np.asarray(old.samples_ms), np.asarray(record.samples_ms)
        base_ms, new_ms = float(np.median(base_samples)), float(np.median(new_samples))
        low, high = ratio_ci(base_samples, new_samples)
        changes.append(Change(record.case, base_ms, new_ms, new_ms / base_ms, low, high, _verdict(low, high, threshold)))
    return changes


def changes_table(changes: list[Change]) -> str:
    """The comparison as a Markdown table."""
    lines = ["| model | variant | precision | threads | point | base ms | new ms | new/base | 95% CI | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in changes:
        k = c.case
        head = f"| {k.model} | {k.label} | {k.precision} | {k.threads} | {k.point} ({k.shapes}) |"
        if c.ratio is None:
            lines.append(f"{head}  |  |  |  | {c.verdict} |")
        else:
            lines.append(f"{head} {c.base_ms:.3f} | {c.new_ms:.3f} | "
                         f"{c.ratio:.3f} | {c.ci_low:.3f}-{c.ci_high:.3f} | {c.verdict} |")
    return "\n".join(lines) + "\n"
