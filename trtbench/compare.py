"""Noise-aware comparison of two runs' results.json (same config, e.g. before/after a change).

Each matching result (variant, precision, shape) is compared on its raw per-iteration samples:
the ratio of medians with a seeded bootstrap 95% confidence interval. A change is reported only
when the whole interval lies beyond ``threshold`` (default 5%); otherwise it is within noise.
The interval reflects noise within each run, not drift between runs (other load, clock changes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from trtbench.errors import UserInputError

BOOTSTRAP_SAMPLES = 2000


@dataclass(frozen=True)
class Change:
    """One result of the new run against the same result of the baseline."""

    variant: str
    precision: str
    shape: str
    base_ms: Optional[float]
    new_ms: Optional[float]
    ratio: Optional[float]  # new median / base median
    ci_low: Optional[float]
    ci_high: Optional[float]
    verdict: str  # faster | slower | no change | within noise | not comparable: <why>


def load_results(path: str | Path) -> dict:
    """A run's results.json (given the file or its output directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise UserInputError(str(path), "no results.json here", "pass a run's output directory or its results.json")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise UserInputError(str(path), f"not valid JSON: {err}", "pass a results.json written by trtbench") from err


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


def compare_runs(base: dict, new: dict, threshold: float = 0.05) -> list[Change]:
    """Compare every result of ``new`` with the baseline result of the same variant, precision and shape."""
    by_key = {(r["variant"], r["precision"], r["shape"]): r for r in base["results"]}
    changes = []
    for r in new["results"]:
        key = (r["variant"], r["precision"], r["shape"])
        old = by_key.get(key)
        why = None
        if old is None:
            why = "not in the baseline"
        elif old.get("input_shapes") != r.get("input_shapes"):
            why = f"shapes differ ({old.get('input_shapes')} vs {r.get('input_shapes')})"
        elif not (old.get("samples_ms") and r.get("samples_ms")):
            why = "no timings in one of the runs"
        if why:
            changes.append(Change(*key, None, None, None, None, None, f"not comparable: {why}"))
            continue
        base_samples, new_samples = np.asarray(old["samples_ms"]), np.asarray(r["samples_ms"])
        base_ms, new_ms = float(np.median(base_samples)), float(np.median(new_samples))
        low, high = ratio_ci(base_samples, new_samples)
        changes.append(Change(*key, base_ms, new_ms, new_ms / base_ms, low, high, _verdict(low, high, threshold)))
    return changes


def changes_table(changes: list[Change]) -> str:
    """The comparison as a Markdown table."""
    lines = ["| variant | precision | shape | base ms | new ms | new/base | 95% CI | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for c in changes:
        if c.ratio is None:
            lines.append(f"| {c.variant} | {c.precision} | {c.shape} |  |  |  |  | {c.verdict} |")
        else:
            lines.append(f"| {c.variant} | {c.precision} | {c.shape} | {c.base_ms:.3f} | {c.new_ms:.3f} | "
                         f"{c.ratio:.3f} | {c.ci_low:.3f}-{c.ci_high:.3f} | {c.verdict} |")
    return "\n".join(lines) + "\n"
