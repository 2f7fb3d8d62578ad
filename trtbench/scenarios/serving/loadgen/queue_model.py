"""The queue a served variant forms without batching (M/G/c over the steps' service times), simulated from an empty
queue, and its load scale (kappa) read from the steps' late counts (docs/serving.md, "The queue model")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Sequence

import numpy as np

RUNS = 4000  # simulated steps per table load
TABLE_LO, TABLE_HI, TABLE_POINTS = 0.25, 1.6, 100  # the table's loads, over the capacity
KAPPAS = np.exp(np.linspace(math.log(0.5), math.log(2.0), 400))  # the load scale's grid (flat prior in its log)
BIN_EDGES = np.array([0, 1, 2, 3, 5, 9, 17, 33, 65, 129, 257, 10**9])  # a step's late count's bins: 0, 1, 2, 3-4...
SMOOTH = 0.5  # pseudo-count a bin
STEADY_ROWS, STEADY_QUERIES, WARM_UP = 64, 20_000, 2_000  # steady-state runs a load: rows of queries, less warm-up
CURVE_LOADS = np.linspace(0.2, 1.0, 33)  # the steady share's curve, over the capacity
STEADY_LOADS, STEADY_ROUNDS = 16, 3  # loads a round of the steady peak's search, and its rounds


@dataclass(frozen=True)
class QueueModel:
    """``servers`` servers, each query's service drawn from ``services_s``, late past ``bound_s``."""

    services_s: tuple[float, ...]
    servers: int
    bound_s: float

    @property
    def capacity(self) -> float:
        return self.servers / float(np.mean(self.services_s))

    @classmethod
    def recorded(cls, services_s: Sequence[float], servers: int, bound_s: float) -> QueueModel:
        """The model of the first ``2**k`` recorded service times, the most there are: it changes as their count
        doubles, not at every step."""
        return cls(tuple(services_s[:1 << max(len(services_s).bit_length() - 1, 0)]), servers, bound_s)

    def counts(self, loads: np.ndarray, gaps: np.ndarray, services: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Late counts (sizes x loads x rows) after each of ``sizes`` queries from an empty queue: arrivals ``gaps /
        load`` apart (rows x queries), query ``i`` served for ``services[:, i]`` by the first server to free."""
        arrivals, services = np.ascontiguousarray(np.cumsum(gaps, 1).T), np.ascontiguousarray(services.T)
        scale = 1 / np.asarray(loads, float)[:, None]
        free = np.zeros((self.servers, len(loads), gaps.shape[0]))
        count, out = np.zeros(free.shape[1:], np.int32), np.empty((len(sizes), *free.shape[1:]), np.int32)
        arrival, spare, late = np.empty(free.shape[1:]), np.empty(free.shape[1:]), np.empty(free.shape[1:], bool)
        snapshots = {int(size) - 1: k for k, size in enumerate(sizes)}
        for i in range(len(arrivals)):  # in place: each step's arrays are the largest this loop makes
            np.multiply(arrivals[i], scale, out=arrival)
            np.maximum(arrival, free[0], out=free[0])
            free[0] += services[i]
            np.greater(np.subtract(free[0], arrival, out=spare), self.bound_s, out=late)
            count += late
            for k in range(self.servers - 1):  # the freed server sorted in among the others
                np.minimum(free[k], free[k + 1], out=spare)
                np.maximum(free[k], free[k + 1], out=free[k + 1])
                free[k] = spare
            if i in snapshots:
                out[snapshots[i]] = count
        return out


def table_loads(model: QueueModel) -> np.ndarray:
    """The table's log-spaced loads (QPS)."""
    return model.capacity * np.exp(np.linspace(math.log(TABLE_LO), math.log(TABLE_HI), TABLE_POINTS))


@lru_cache(maxsize=2)
def late_counts(model: QueueModel, sizes: tuple[int, ...], runs: int = RUNS) -> dict[int, np.ndarray]:
    """The late count (table loads x ``runs``) of a step of each of ``sizes`` queries."""
    rng = np.random.default_rng(11)
    gaps = rng.exponential(1.0, (runs, max(sizes)))
    services = rng.choice(np.asarray(model.services_s), gaps.shape)
    return dict(zip(sizes, model.counts(table_loads(model), gaps, services, np.array(sizes))))


@lru_cache(maxsize=32)
def _bin_probabilities(model: QueueModel, sizes: tuple[int, ...], size: int) -> np.ndarray:
    """P(a ``size``-query step's late count falls in each bin | table load): loads x bins, smoothed."""
    which = np.searchsorted(BIN_EDGES, late_counts(model, sizes)[size], side="right") - 1
    hist = np.stack([np.bincount(row, minlength=len(BIN_EDGES) - 1) for row in which]).astype(float)
    return (hist + SMOOTH) / (RUNS + SMOOTH * hist.shape[1])


@dataclass(frozen=True)
class Posterior:
    """The load scale's posterior over :data:`KAPPAS` from its log likelihood there (a flat prior in its log): the real
    queue is the model at ``kappa`` times the load."""

    loglik: np.ndarray

    @cached_property
    def cdf(self) -> np.ndarray:
        density = np.exp(self.loglik - self.loglik.max())
        return np.cumsum(density) / density.sum()

    def kappa(self, level: float) -> float:
        return float(KAPPAS[min(int(np.searchsorted(self.cdf, level)), len(KAPPAS) - 1)])


def posterior(model: QueueModel, qps: Sequence[float], queries: Sequence[int], late: Sequence[int]) -> Posterior:
    """The load scale from the steps' late counts, each scored against the model's counts at its load and size."""
    sizes = tuple(sorted({int(n) for n in queries}))
    log_loads = np.log(table_loads(model))
    at = np.clip((np.log(KAPPAS)[:, None] + np.log(np.asarray(qps))[None] - log_loads[0])
                 / (log_loads[1] - log_loads[0]), 0, len(log_loads) - 1.000001)  # kappas x steps
    below, weight = np.floor(at).astype(int), at - np.floor(at)
    loglik = np.zeros(len(KAPPAS))
    for j, (size, count) in enumerate(zip(queries, late)):
        probs = _bin_probabilities(model, sizes, int(size))
        b = int(np.searchsorted(BIN_EDGES, count, side="right") - 1)
        loglik += np.log((1 - weight[:, j]) * probs[below[:, j], b] + weight[:, j] * probs[below[:, j] + 1, b])
    return Posterior(loglik)


@lru_cache(maxsize=4)
def _steady_draws(model: QueueModel) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    gaps = rng.exponential(1.0, (STEADY_ROWS, STEADY_QUERIES))
    return gaps, rng.choice(np.asarray(model.services_s), gaps.shape)


def steady_shares(model: QueueModel, loads: np.ndarray) -> np.ndarray:
    """The steady-state late share at each of ``loads`` (the same draws at each: monotone in the load)."""
    warm, end = model.counts(np.asarray(loads, float), *_steady_draws(model), np.array([WARM_UP, STEADY_QUERIES]))
    return np.maximum.accumulate((end - warm).mean(1) / (STEADY_QUERIES - WARM_UP))


@lru_cache(maxsize=4)
def _share_curve(model: QueueModel) -> np.ndarray:
    """The steady-state late share at :data:`CURVE_LOADS` over the capacity."""
    return steady_shares(model, CURVE_LOADS * model.capacity)


def steady_share(model: QueueModel, qps: float) -> float:
    """The steady-state late share at ``qps``: linear in its log between the curve's loads."""
    curve = np.maximum(_share_curve(model), 1e-9)
    return float(np.exp(np.interp(qps / model.capacity, CURVE_LOADS, np.log(curve))))


@lru_cache(maxsize=4)
def steady_peak(model: QueueModel, allowed: float) -> float:
    """The highest load whose steady-state late share is ``allowed``: a grid search narrowed in rounds, then linear
    in the log of the share between the two loads around it."""
    lo, hi = 0.2 * model.capacity, model.capacity
    for _ in range(STEADY_ROUNDS):
        loads = np.linspace(lo, hi, STEADY_LOADS)
        shares = steady_shares(model, loads)
        over = int(np.searchsorted(shares, allowed, side="right"))
        if over == 0:  # late beyond the allowed share at a fifth of the capacity: the service time's own tail
            lo, hi = 0.01 * loads[0], loads[0]
            continue
        if over == len(loads):
            return float(loads[-1])
        lo, hi = loads[over - 1], loads[over]
    low_share, high_share = steady_shares(model, np.array([lo, hi]))
    if not 0 < low_share < allowed < high_share:
        return float(lo)
    return float(lo + (hi - lo) * math.log(allowed / low_share) / math.log(high_share / low_share))
