"""Statistics derived from raw per-iteration samples (docs/measuring.md, "Module notes")."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

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
        return {**asdict(self), "noisy": self.noisy}


def median_ci_halfwidth(sorted_samples: np.ndarray, z: float = 1.96) -> float:
    """Distribution-free 95% confidence half-width of the median (order-statistic interval)."""
    n = len(sorted_samples)
    if n < 3:
        return math.inf
    offset = z * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - offset)) - 1)
    hi = min(n - 1, int(math.ceil(n / 2 + offset)))
    return float(sorted_samples[hi] - sorted_samples[lo]) / 2


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
    """A value with its interval at ``level``; its JSON form is ``{"value", "low", "high"}``."""

    value: float
    low: float
    high: float
    level: float = 0.95

    @property
    def rel_width(self) -> float:
        """The interval's width over the value (inf where the value is not positive)."""
        return (self.high - self.low) / self.value if self.value > 0 else math.inf

    @property
    def rel_halfwidth(self) -> float:
        """Half the interval's width relative to the value."""
        return self.rel_width / 2

    def to_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high}

    def with_value(self, value: float) -> "Interval":
        """This interval about ``value`` instead, widened to hold it."""
        return replace(self, value=value, low=min(self.low, value), high=max(self.high, value))

    def text(self, spec: str = ".2f", unit: str = "", sep: str = "-") -> str:
        """``1.52x [1.49-1.55]``, numbers in format ``spec``; the value alone where the low end is -inf."""
        value = f"{self.value:{spec}}{unit}"
        return value if self.low == -math.inf else f"{value} [{self.low:{spec}}{sep}{self.high:{spec}}]"


def bootstrap_median_ratio(base, this, seed: int = 0) -> Interval:
    """median(base) / median(this) with its seeded bootstrap 95% interval, each series resampled on its own."""
    base, this = np.asarray(base, dtype=np.float64), np.asarray(this, dtype=np.float64)
    rng = np.random.default_rng(seed)
    base_picks = rng.integers(0, base.size, size=(BOOTSTRAP_SAMPLES, base.size))
    this_picks = rng.integers(0, this.size, size=(BOOTSTRAP_SAMPLES, this.size))
    ratios = np.median(base[base_picks], axis=1) / np.median(this[this_picks], axis=1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return Interval(float(np.median(base)) / float(np.median(this)), float(low), float(high))


RESOLVED_PROCESSES = 10  # a row with this many processes has its own between-process variance resolved
_DRAWS_PER_CHUNK = 500  # bootstrap draws weighed at once (bounds memory for series of thousands of blocks)


@dataclass(frozen=True)
class BlockSeries:
    """One variant's block medians (ms) at one point, with the replicate process and the global round of each."""

    medians: tuple[float, ...]
    processes: tuple[int, ...]
    rounds: tuple[int, ...]

    def __post_init__(self) -> None:
        if not len(self.medians) == len(self.processes) == len(self.rounds):
            raise ValueError(f"a block series needs one process and one round per median: {len(self.medians)} "
                             f"medians, {len(self.processes)} processes, {len(self.rounds)} rounds")

    @classmethod
    def of_blocks(cls, blocks, processes, rounds) -> "BlockSeries":
        """Each block's median (ms) of ``blocks`` (lists of calls) with its process and round; empty blocks left out."""
        kept = [(float(np.median(block)), p, r) for block, p, r in zip(blocks, processes, rounds) if len(block)]
        return cls(*(tuple(column) for column in zip(*kept))) if kept else cls((), (), ())

    @property
    def process_count(self) -> int:
        return len(set(self.processes))

    def only_rounds(self, rounds) -> "BlockSeries":
        """The blocks timed in ``rounds`` (global round indices)."""
        return self._kept(self.rounds, rounds)

    def only_processes(self, processes) -> "BlockSeries":
        """The blocks timed by ``processes`` (replicate process indices)."""
        return self._kept(self.processes, processes)

    def _kept(self, column: tuple[int, ...], wanted) -> "BlockSeries":
        keep = np.isin(np.asarray(column, dtype=np.int64), np.asarray(list(wanted), dtype=np.int64))
        return BlockSeries(*(tuple(np.asarray(values)[keep].tolist()) for values in
                             (self.medians, self.processes, self.rounds)))

    def process_medians(self) -> dict[int, float]:
        """Each process's median block (ms)."""
        medians, processes = np.asarray(self.medians, dtype=np.float64), np.asarray(self.processes)
        return {int(p): float(np.median(medians[processes == p])) for p in np.unique(processes)}

    def between_variance(self) -> float | None:
        """The variance (ddof 1) of the log of each process's median block; None under 2 processes."""
        logs = np.log(list(self.process_medians().values()))
        return float(np.var(logs, ddof=1)) if logs.size > 1 else None


def pooled_between_variance(series) -> float | None:
    """The rows' between-process variances weighted by their processes - 1 (None: no row has 2)."""
    weighted, dof = 0.0, 0
    for one in series:
        own = one.between_variance()
        if own is not None:
            weighted += own * (one.process_count - 1)
            dof += one.process_count - 1
    return weighted / dof if dof else None


def _process_variance_shortfall(series: BlockSeries, between_var: float | None) -> float:
    """The log variance that tops the series' process level up to max(own, pooled) / processes (docs/measuring.md)."""
    count, own = series.process_count, series.between_variance()
    if count >= RESOLVED_PROCESSES or between_var is None and own is None:
        return 0.0
    wanted = max(v for v in (own, between_var) if v is not None)
    carried = (own or 0.0) * (count - 1) / count
    return max(0.0, wanted - carried) / count


def _resample_counts(rng: np.random.Generator, draws: int, size: int) -> np.ndarray:
    """How often each of ``size`` items is picked by each of ``draws`` resamples with replacement (draws x size)."""
    picks = rng.integers(0, size, size=(draws, size)) + np.arange(draws)[:, None] * size
    return np.bincount(picks.ravel(), minlength=draws * size).reshape(draws, size).astype(np.int32)


def _codes(values) -> tuple[np.ndarray, int]:
    uniques, codes = np.unique(np.asarray(values, dtype=np.int64), return_inverse=True)
    return codes, uniques.size


def _weighted_medians(values: np.ndarray, factors) -> np.ndarray:
    """Per draw, the median of ``values`` weighed by how often the draw picked each of their codes in ``factors``."""
    order = np.argsort(values)
    weights = None
    for codes, counts in factors:
        picked = np.take(counts, codes[order], axis=1)
        weights = picked if weights is None else np.multiply(weights, picked, out=weights)
    cumulative = np.cumsum(weights, axis=1, out=weights)
    total = cumulative[:, -1].copy()
    chosen = np.argmax(cumulative >= (total[:, None] + 1) // 2, axis=1)
    result = values[order][chosen]
    result[total == 0] = np.nan
    return result


def _bootstrap(values: np.ndarray, rounds, process_columns, topup: float, seed: int,
               resample_processes: bool = True) -> np.ndarray:
    """Bootstrap draws of the median of ``values`` over resampled rounds and processes, plus a ``topup`` offset."""
    rng = np.random.default_rng(seed)
    round_codes, round_count = _codes(rounds)
    process_codes = [_codes(column) for column in process_columns]
    chunks = []
    for done in range(0, BOOTSTRAP_SAMPLES, _DRAWS_PER_CHUNK):
        draws = min(_DRAWS_PER_CHUNK, BOOTSTRAP_SAMPLES - done)
        factors = [(round_codes, _resample_counts(rng, draws, round_count))]
        factors += [(codes, _resample_counts(rng, draws, count) if resample_processes
                     else np.ones((draws, count), dtype=np.int32)) for codes, count in process_codes]
        chunks.append(_weighted_medians(values, factors) + rng.normal(size=draws) * topup)
    return np.concatenate(chunks)


def _median_draws(series: BlockSeries, between_var: float | None, seed: int) -> np.ndarray:
    """Bootstrap draws of the series' log median: its rounds and its processes resampled, plus its top-up."""
    return _bootstrap(np.log(np.asarray(series.medians, dtype=np.float64)), series.rounds, [series.processes],
                      math.sqrt(_process_variance_shortfall(series, between_var)), seed)


def _interval(value: float, log_draws: np.ndarray) -> Interval:
    draws = log_draws[np.isfinite(log_draws)]
    if draws.size == 0:
        return Interval(value, -math.inf, math.inf)
    low, high = np.exp(np.percentile(draws, [2.5, 97.5]))
    return Interval(value, float(min(low, value)), float(max(high, value)))


def median_interval(series: BlockSeries, between_var: float | None = None, seed: int = 0) -> Interval:
    """The median block (ms) with its two-level 95% interval; infinite under 3 rounds."""
    if not series.medians:
        raise ValueError("no blocks to take the median of")
    value = float(np.median(series.medians))
    if len(set(series.rounds)) < 3:
        return Interval(value, -math.inf, math.inf)
    return _interval(value, _median_draws(series, between_var, seed))


def _round_pairs(base: BlockSeries, this: BlockSeries) -> tuple[np.ndarray, ...]:
    """Each pair of same-round blocks: the log of their medians' ratio, its round and their processes."""
    mine: dict[int, list[tuple[float, int]]] = {}
    for median, process, index in zip(this.medians, this.processes, this.rounds):
        mine.setdefault(index, []).append((math.log(median), process))
    pairs = [(math.log(median) - log_this, index, process, process_this)
             for median, process, index in zip(base.medians, base.processes, base.rounds)
             for log_this, process_this in mine.get(index, ())]
    columns = list(zip(*pairs)) if pairs else [(), (), (), ()]
    return (np.asarray(columns[0], dtype=np.float64),
            *(np.asarray(column, dtype=np.int64) for column in columns[1:]))


def speedup_interval(base: BlockSeries, this: BlockSeries, between_var: float | None = None,
                     seed: int = 0, resample_processes: bool = True) -> Interval:
    """``this``'s speedup over ``base`` (median round ratio), two-level 95% interval; infinite under 3 rounds."""
    ratios, rounds, base_processes, this_processes = _round_pairs(base, this)
    if not ratios.size:
        raise ValueError("the two series share no round to pair on")
    value = math.exp(float(np.median(ratios)))
    common = np.unique(rounds)
    if common.size < 3:
        return Interval(value, -math.inf, math.inf)
    topup = math.sqrt(sum(_process_variance_shortfall(s.only_rounds(common), between_var) for s in (base, this))
                      if resample_processes else 0.0)
    draws = _bootstrap(ratios, rounds, [base_processes, this_processes], topup, seed, resample_processes)
    return _interval(value, draws)


def unpaired_interval(base: BlockSeries, this: BlockSeries, between_var: float | None = None,
                      seed: int = 0) -> Interval:
    """median(base) / median(this) with each resampled on its own; infinite under 3 rounds."""
    value = float(np.median(base.medians) / np.median(this.medians))
    if min(len(set(base.rounds)), len(set(this.rounds))) < 3:
        return Interval(value, -math.inf, math.inf)
    draws = _median_draws(base, between_var, seed) - _median_draws(this, between_var, seed + 1)
    return _interval(value, draws)
