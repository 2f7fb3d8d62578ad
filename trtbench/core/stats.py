"""Statistics derived from raw per-iteration samples (the samples themselves are kept too)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

NOISY_IQR_RATIO = 0.10  # IQR/median above this marks a result as noisy


@dataclass(frozen=True)
class Stats:
    """Summary of one timing series, in milliseconds."""

    mean: float
    median: float
    std: float
    min: float
    max: float
    p90: float
    p95: float
    p99: float
    iqr: float
    iterations: int
    median_ci_rel: float  # 95% CI half-width of the median, relative to the median

    @property
    def noisy(self) -> bool:
        """True when the spread (IQR/median) exceeds 10%: compare such results with care."""
        return self.median > 0 and self.iqr / self.median > NOISY_IQR_RATIO

    def to_dict(self) -> dict:
        data = asdict(self)
        data["noisy"] = self.noisy
        return data


def median_ci_halfwidth(sorted_samples: np.ndarray, z: float = 1.96) -> float:
    """Distribution-free 95% confidence half-width of the median (order-statistic interval)."""
    n = len(sorted_samples)
    if n < 3:
        return math.inf
    offset = z * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - offset)) - 1)
    hi = min(n - 1, int(math.ceil(n / 2 + offset)))
    return float(sorted_samples[hi] - sorted_samples[lo]) / 2


def relative_median_ci(samples) -> float:
    """:func:`median_ci_halfwidth` divided by the median (inf when undefined)."""
    data = np.sort(np.asarray(samples, dtype=np.float64))
    median = float(np.median(data)) if len(data) else 0.0
    return median_ci_halfwidth(data) / median if median > 0 else math.inf


def summarize(samples_ms) -> Stats:
    """Derive :class:`Stats` from raw samples in milliseconds."""
    data = np.sort(np.asarray(samples_ms, dtype=np.float64))
    if data.size == 0:
        raise ValueError("no samples to summarize")
    p25, p50, p75, p90, p95, p99 = np.percentile(data, [25, 50, 75, 90, 95, 99])
    return Stats(
        mean=float(data.mean()), median=float(p50), std=float(data.std(ddof=1)) if data.size > 1 else 0.0,
        min=float(data[0]), max=float(data[-1]), p90=float(p90), p95=float(p95), p99=float(p99),
        iqr=float(p75 - p25), iterations=int(data.size),
        median_ci_rel=median_ci_halfwidth(data) / float(p50) if p50 > 0 else math.inf,
    )


BOOTSTRAP_SAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    """A point estimate with its 95% confidence interval."""

    value: float
    low: float
    high: float

    @property
    def rel_halfwidth(self) -> float:
        """Half the interval's width relative to the value."""
        return (self.high - self.low) / 2 / self.value if self.value else math.inf

    def to_dict(self) -> dict:
        return asdict(self)


def paired_ratio(base_rounds, rounds, seed: int = 0) -> Interval | None:
    """median(base) / median(this) with a 95% CI from the rounds both were timed in.

    Round ``i`` of both series was timed back to back (interleaved), so drift of the machine
    hits both alike; resampling whole rounds (a paired bootstrap) keeps that pairing, so the
    interval covers the noise that is left. None without at least one common round.
    """
    n = min(len(base_rounds), len(rounds))
    if n == 0:
        return None
    base = [np.asarray(r, dtype=np.float64) for r in base_rounds[:n]]
    this = [np.asarray(r, dtype=np.float64) for r in rounds[:n]]
    value = float(np.median(np.concatenate(base)) / np.median(np.concatenate(this)))
    if n < 3:
        return Interval(value, -math.inf, math.inf)
    # the ratio of the medians of the resampled rounds' medians: robust, and cheap for many samples
    low, high = bootstrap_median_ratio([np.median(r) for r in base], [np.median(r) for r in this], paired=True,
                                       seed=seed)
    return Interval(value, float(min(low, value)), float(max(high, value)))


def bootstrap_median_ratio(base, this, paired: bool, seed: int = 0) -> tuple[float, float]:
    """Seeded bootstrap 95% interval of median(base) / median(this): a speedup's, when they are times.

    ``paired``: ``base[i]`` and ``this[i]`` were measured together (round ``i`` of interleaved timing),
    so they are resampled together, which keeps the pairing (:func:`paired_ratio`); otherwise each
    series is resampled on its own (two runs' samples: :mod:`trtbench.results.compare`).
    """
    base, this = np.asarray(base, dtype=np.float64), np.asarray(this, dtype=np.float64)
    if paired and base.size != this.size:
        raise ValueError(f"paired series differ in length: {base.size} and {this.size}")
    rng = np.random.default_rng(seed)
    base_picks = rng.integers(0, base.size, size=(BOOTSTRAP_SAMPLES, base.size))
    this_picks = base_picks if paired else rng.integers(0, this.size, size=(BOOTSTRAP_SAMPLES, this.size))
    ratios = np.median(base[base_picks], axis=1) / np.median(this[this_picks], axis=1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(low), float(high)
