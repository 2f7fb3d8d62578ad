"""The serving peak estimated jointly from every step's queries, with a 90% interval, and the search that places the
steps. Where the plan knows the queue (:mod:`.queue_model`), the steps are read through it: one load scale from their
late counts, the peak the model's over it. Elsewhere the late share is fitted to every step as a logistic curve in the
log of the load, the peak where it reaches the allowed share, the interval a block bootstrap less its median bias
(docs/serving.md, "The joint estimate").
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from functools import cached_property
from statistics import NormalDist
from typing import Any, Callable, Literal, Optional, Sequence

import numpy as np

from trtbench.scenarios.serving.loadgen.queue_model import (Posterior, QueueModel, posterior, steady_peak,
                                                            steady_share)
from trtbench.scenarios.serving.loadgen.search import Bracket

BLOCK = 100  # consecutive query indices resampled together: longer than a queue's bursts of late queries
REPLICATES = 400  # bootstrap replicates of an interval
LEVEL = 0.9  # the interval's coverage
Z_LEVEL = NormalDist().inv_cdf((1 + LEVEL) / 2)
SPREAD = 0.04  # a step beside the estimate is this share below or above it
QUEUE_STEPS = (0.96, 1.04, 1.12)  # read through a queue model: the steps over the estimate, in turn, past the capacity
MIN_LATE = 30  # fewer late queries in all, and the interval is not trusted to stop a search
NEWTON_STEPS = 30
CONFIRM_SHARE = 0.3  # the most of a search's budget kept back for its confirming run
FLOOR = 0.1  # at this share of the capacity queries hardly queue: late there, no lower step tells more
RIDGE = 1e-6  # keeps the fit's Hessian invertible where a replicate saw no late query


@dataclass(frozen=True)
class Step:
    """One step of a search: its load, repeat, each query's late flag in issue order, its ``run``."""

    qps: float
    repeat: int
    late: np.ndarray = field(compare=False)
    run: Any = field(default=None, compare=False)

    @property
    def queries(self) -> int:
        return len(self.late)

    @cached_property
    def share(self) -> float:
        return float(np.mean(self.late)) if len(self.late) else 0.0


@dataclass(frozen=True)
class Estimate:
    """The peak and its 90% interval (nan where the steps fix no crossing yet)."""

    qps: float
    low: float
    high: float

    @property
    def width(self) -> float:
        """The interval's width over the estimate (inf where there is none)."""
        return (self.high - self.low) / self.qps if self.qps > 0 and math.isfinite(self.high - self.low) else math.inf


@dataclass(frozen=True)
class Budget:
    """What a search may spend: ``queries`` in all (the confirming run included) and, where given, ``seconds``."""

    queries: int
    seconds: Optional[float] = None


@dataclass(frozen=True)
class SearchPlan:
    """How a search runs; ``verdict_queries``: what LoadGen's verdict needs at a late share (None: no run);
    ``queue``: the queue the steps so far were served by (None: none known, the logistic curve reads them)."""

    allowed: float
    capacity: float
    min_queries: int
    min_duration_s: float
    resolution: float
    budget: Budget
    verdict_queries: Optional[Callable[[float], Optional[int]]] = None
    queue: Optional[Callable[[Sequence[Step]], QueueModel]] = None

    def queries_at(self, qps: float) -> int:
        """The queries of a step at ``qps``: LoadGen issues until both its minimums are met."""
        return max(self.min_queries, math.ceil(qps * self.min_duration_s))

    def confirm_queries(self, qps: float, share: float) -> Optional[int]:
        """The queries of a confirming run at ``qps`` at an expected late ``share`` (None where no run passes)."""
        needed = self.verdict_queries(share) if self.verdict_queries is not None else 0
        return None if needed is None else max(self.queries_at(qps), needed)


# why a search stopped: its query or time budget spent, its interval narrow enough, or late at a tenth of the capacity
StopReason = Literal["budget", "resolution", "floor"]
# what read the steps: the logistic curve fitted to them, or the queue model
ReadBy = Literal["curve", "queue"]


@dataclass(frozen=True)
class ConfirmNeeds:
    """What a confirming run at the interval's low end needs: the ``late_share`` expected there (nan: no estimate) and
    its ``queries`` (None: no run passes)."""

    late_share: float = math.nan
    queries: Optional[int] = None


@dataclass(frozen=True)
class Search:
    """A finished search: why it stopped, its confirming run at the interval's low end (or None), and what that run
    needs (``expected``)."""

    steps: tuple[Step, ...]
    estimate: Estimate
    stopped_by: StopReason
    confirm: Optional[Step]
    queries: int
    seconds: float
    expected: ConfirmNeeds = ConfirmNeeds()
    read_by: ReadBy = "curve"


# run(qps, repeat, queries) -> (each query's late flag in issue order, what the step made)
RunStep = Callable[[float, int, int], tuple[np.ndarray, Any]]


def _fit(late: np.ndarray, queries: np.ndarray, log_qps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The logistic curve's (a, b) per row of ``late`` and ``queries`` (replicates x steps)."""
    rows = late.shape[0]
    pooled = np.clip(late.sum(1) / np.maximum(queries.sum(1), 1), 1e-4, 1 - 1e-4)
    a, b = np.log(pooled / (1 - pooled)), np.full(rows, 5.0)
    for _ in range(NEWTON_STEPS):
        share = _logistic(a[:, None], b[:, None], log_qps)
        residual, weight = late - queries * share, queries * share * (1 - share)
        g0, g1 = residual.sum(1), (residual * log_qps).sum(1)
        h00, h01, h11 = weight.sum(1) + RIDGE, (weight * log_qps).sum(1), (weight * log_qps ** 2).sum(1) + RIDGE
        det = h00 * h11 - h01 ** 2
        da, db = (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det
        scale = np.minimum(1.0, 5.0 / np.maximum(np.abs(da) + np.abs(db), 1e-12))  # damped: no overshoot to +-inf
        a, b = a + scale * da, b + scale * db
        if np.all(np.abs(scale * da) + np.abs(scale * db) < 1e-9):
            break
    return a, b


def _logistic(a, b, log_qps):
    """The late share the curve ``(a, b)`` gives at ``log_qps`` (centred)."""
    return 1 / (1 + np.exp(-(a + b * log_qps)))


def _crossing(a: np.ndarray, b: np.ndarray, allowed: float, centre: float) -> np.ndarray:
    """The load where each curve reaches ``allowed`` (nan where the curve does not rise with the load)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_qps = (math.log(allowed / (1 - allowed)) - a) / b
        return np.where(b > 0, np.exp(log_qps + centre), np.nan)


def block_counts(steps: Sequence[Step]) -> tuple[np.ndarray, np.ndarray]:
    """Each step's late queries and queries per block of :data:`BLOCK` query indices (steps x blocks)."""
    blocks = max(-(-s.queries // BLOCK) for s in steps)
    late, queries = np.zeros((len(steps), blocks)), np.zeros((len(steps), blocks))
    for i, step in enumerate(steps):
        starts = np.arange(0, step.queries, BLOCK)
        late[i, :len(starts)] = np.add.reduceat(step.late.astype(float), starts) if step.queries else 0
        queries[i, :len(starts)] = np.diff(np.append(starts, step.queries))
    return late, queries


def _centred(steps: Sequence[Step]) -> tuple[np.ndarray, float]:
    """Each step's log load less their mean, and that mean."""
    log_qps = np.log([s.qps for s in steps])
    return log_qps - log_qps.mean(), float(log_qps.mean())


def fit_curve(steps: Sequence[Step]) -> tuple[float, float, float]:
    """The logistic curve fitted to every step: ``(a, b, centre)``, the late share at ``qps`` being
    ``1 / (1 + exp(-(a + b (log(qps) - centre))))``."""
    log_qps, centre = _centred(steps)
    late, queries = np.array([s.late.sum() for s in steps], float), np.array([s.queries for s in steps], float)
    a, b = _fit(late[None], queries[None], log_qps[None])
    return float(a[0]), float(b[0]), centre


def point_estimate(steps: Sequence[Step], allowed: float) -> tuple[float, float]:
    """The load where the curve fitted to every step reaches ``allowed`` (nan where none), and the width over it of
    the 90% interval were the queries independent (from the fit's Fisher information)."""
    steps = [s for s in steps if s.queries]
    if not any(s.late.any() for s in steps):
        return math.nan, math.inf
    a, b, centre = fit_curve(steps)
    log_qps = np.log([s.qps for s in steps]) - centre
    queries = np.array([s.queries for s in steps], float)
    a, b = np.array([a]), np.array([b])
    point = float(_crossing(a, b, allowed, centre)[0])
    if not math.isfinite(point):
        return point, math.inf
    share = _logistic(a[0], b[0], log_qps)
    weight = queries * share * (1 - share)
    info = np.array([[weight.sum(), (weight * log_qps).sum()],
                     [(weight * log_qps).sum(), (weight * log_qps ** 2).sum()]])
    gradient = np.array([-1 / b[0], -(math.log(allowed / (1 - allowed)) - a[0]) / b[0] ** 2])
    try:
        spread = math.sqrt(max(float(gradient @ np.linalg.solve(info, gradient)), 0.0))
    except np.linalg.LinAlgError:
        return point, math.inf
    # no overflow where the fit is loose
    return point, math.exp(min(Z_LEVEL * spread, 50.0)) - math.exp(-Z_LEVEL * spread)


def replicate_counts(steps: Sequence[Step], rng: np.random.Generator, replicates: int) -> tuple[np.ndarray, np.ndarray]:
    """Each bootstrap replicate's late queries and queries per step (replicates x steps): repeats drawn with
    replacement, and within each one blocks of query indices, the same blocks at every step of the repeat."""
    late, queries = block_counts(steps)
    repeats = sorted({s.repeat for s in steps})
    index = np.array([repeats.index(s.repeat) for s in steps])
    blocks = late.shape[1]
    # weights[r, j, c]: how often replicate r drew block j of repeat c (a repeat drawn twice adds two block draws)
    drawn = rng.integers(0, len(repeats), (replicates, len(repeats)))
    weights = np.zeros((replicates, blocks, len(repeats)))
    for slot in range(len(repeats)):
        weights[np.arange(replicates), :, drawn[:, slot]] += rng.multinomial(blocks, np.full(blocks, 1 / blocks),
                                                                            replicates)
    step_weights = weights[:, :, index]  # replicates x blocks x steps
    return np.einsum("rjs,sj->rs", step_weights, late), np.einsum("rjs,sj->rs", step_weights, queries)


def estimate(steps: Sequence[Step], allowed: float, rng: np.random.Generator) -> Estimate:
    """The peak from every step together, and its 90% interval by the block bootstrap."""
    steps = [s for s in steps if s.queries]
    point, _ = point_estimate(steps, allowed)
    if not math.isfinite(point):
        return Estimate(point, math.nan, math.nan)
    log_qps, centre = _centred(steps)
    boot_late, boot_queries = replicate_counts(steps, rng, REPLICATES)
    crossings = _crossing(*_fit(boot_late, boot_queries, np.broadcast_to(log_qps, boot_late.shape)), allowed, centre)
    crossings = np.where(np.isnan(crossings), np.inf, crossings)  # no crossing: the curve never rose, a peak unbounded
    low, middle, high = np.quantile(crossings, [(1 - LEVEL) / 2, 0.5, (1 + LEVEL) / 2], method="inverted_cdf")
    bias = middle - point  # the replicates' median bias about the fit: the fit's, about the true crossing
    return Estimate(float(point - bias), float(max(low - bias, 0.0)), float(high - bias))


def _bracket(steps: Sequence[Step], plan: SearchPlan) -> Optional[Bracket]:
    """The bisection's bracket while no step within the allowed share lies below one over it; None once one does."""
    over = [s.qps for s in steps if s.share > plan.allowed]
    under = [s.qps for s in steps if s.share <= plan.allowed]
    if min(under, default=math.inf) < max(over, default=0.0):
        return None
    hi = min(over, default=_ceiling(plan))
    return Bracket(max((q for q in under if q < hi), default=0.0), hi, len(steps))


def _next_qps(steps: Sequence[Step], plan: SearchPlan, point: float) -> float:
    """Where the next step goes: bisection until the peak is bracketed (read through a queue model: until a step is
    late), then beside the estimate."""
    bracket = _bracket(steps, plan)
    if plan.queue is not None and math.isfinite(point):
        return point * QUEUE_STEPS[len(steps) % len(QUEUE_STEPS)]
    if bracket is None and math.isfinite(point):
        return min(point * (1 + (SPREAD if len(steps) % 2 else -SPREAD)), plan.capacity)
    return (bracket or Bracket(0.0, _ceiling(plan))).qps


def _ceiling(plan: SearchPlan) -> float:
    """The highest load a search offers: the capacity, or read through a queue model, past it by the last step."""
    return plan.capacity * (QUEUE_STEPS[-1] if plan.queue is not None else 1.0)


def search_peak(run: RunStep, plan: SearchPlan, rng: np.random.Generator) -> Search:
    """The steps ``run`` makes until the interval is within the resolution or the budget is spent."""
    started, steps, used, point, stopped_by = time.monotonic(), [], 0, math.nan, "budget"
    current = Estimate(math.nan, math.nan, math.nan)
    while True:
        qps = _next_qps(steps, plan, point)
        # the confirming run's low end: the current interval's, or before one, SPREAD twice below the crossing
        low = current.low if math.isfinite(current.low) else point * (1 - 2 * SPREAD)
        need = plan.queries_at(qps) + _reserved(steps, plan, low)
        over_time = plan.budget.seconds is not None and time.monotonic() - started + need / qps > plan.budget.seconds
        if used + need > plan.budget.queries or over_time:
            break
        late, made = run(qps, len(steps), plan.queries_at(qps))
        steps.append(Step(qps, len(steps), np.asarray(late, dtype=bool), made))
        used += len(late)
        if plan.queue is not None:
            current = queue_estimate(plan.queue(steps), steps, plan.allowed)
            point, independent_width = current.qps, current.width
        else:
            point, independent_width = point_estimate(steps, plan.allowed)
        bracket = _bracket(steps, plan)
        if bracket is not None and bracket.lo == 0 and bracket.hi <= FLOOR * plan.capacity:
            return Search(tuple(steps), Estimate(0.0, 0.0, bracket.hi), "floor", None, used,
                          time.monotonic() - started, read_by=_read_by(plan))
        # read through a queue model, a step that is not late says how far the load is from the peak
        closes = plan.queue is None or not any(s.late.any() for s in steps)
        if closes and bracket is not None and bracket.hi - bracket.lo <= plan.resolution * bracket.lo:
            # no crossing within the bracket: the peak is its low end
            bracketed = Estimate(bracket.lo, bracket.lo, bracket.hi)
            return _confirmed(run, plan, steps, bracketed, used, started)
        if independent_width <= plan.resolution and sum(int(s.late.sum()) for s in steps) >= MIN_LATE:
            current = current if plan.queue is not None else estimate(steps, plan.allowed, rng)
            if current.width <= plan.resolution:
                stopped_by = "resolution"
                break
    if stopped_by == "budget" and steps and plan.queue is None:
        current = estimate(steps, plan.allowed, rng)
    return dataclasses.replace(_confirmed(run, plan, steps, current, used, started),
                               stopped_by=stopped_by)


def _load_scale(model: QueueModel, steps: Sequence[Step]) -> Posterior:
    return posterior(model, [s.qps for s in steps], [s.queries for s in steps], [int(s.late.sum()) for s in steps])


def queue_estimate(model: QueueModel, steps: Sequence[Step], allowed: float) -> Estimate:
    """The model's steady-state peak over the load scale the steps' late counts give (its posterior's median), and the
    90% interval from the posterior's 5% and 95% (nan where no step saw a late query)."""
    steps = [s for s in steps if s.queries]
    if not any(s.late.any() for s in steps):
        return Estimate(math.nan, math.nan, math.nan)
    scale, peak = _load_scale(model, steps), steady_peak(model, allowed)
    return Estimate(peak / scale.kappa(0.5), peak / scale.kappa((1 + LEVEL) / 2), peak / scale.kappa((1 - LEVEL) / 2))


def expected_share(steps: Sequence[Step], plan: SearchPlan, qps: float) -> float:
    """The late share expected at ``qps`` in the steady state: the plan's queue's at the load scale the steps give,
    or the curve fitted to every step's (0 where no step saw a late query)."""
    steps = [s for s in steps if s.queries]
    if not any(s.late.any() for s in steps):
        return 0.0
    if plan.queue is not None:
        model = plan.queue(steps)
        return steady_share(model, qps * _load_scale(model, steps).kappa(0.5))
    a, b, centre = fit_curve(steps)
    return float(_logistic(a, b, math.log(qps) - centre))


def _reserved(steps: Sequence[Step], plan: SearchPlan, low: float) -> int:
    """The queries a search keeps back for its confirming run at ``low``: what LoadGen's verdict needs there, or one
    step where that is more than :data:`CONFIRM_SHARE` of the budget (or no run passes)."""
    if not (math.isfinite(low) and low > 0):
        return plan.queries_at(plan.capacity)
    needed = plan.confirm_queries(low, expected_share(steps, plan, low))
    cap = max(plan.queries_at(low), int(CONFIRM_SHARE * plan.budget.queries))
    return needed if needed is not None and needed <= cap else plan.queries_at(low)


def _confirmed(run: RunStep, plan: SearchPlan, steps: list[Step], current: Estimate, used: int,
               started: float) -> Search:
    """The search, ``used`` queries since ``started``, with its confirming run where the budget allows."""
    confirm, expected = None, ConfirmNeeds()
    if current.low > 0:
        share = expected_share(steps, plan, current.low)
        expected = ConfirmNeeds(share, plan.confirm_queries(current.low, share))
    if expected.queries is not None and used + expected.queries <= plan.budget.queries:
        late, made = run(current.low, len(steps), expected.queries)
        confirm = Step(current.low, len(steps), np.asarray(late, dtype=bool), made)
        used += len(late)
    return Search(tuple(steps), current, "resolution", confirm, used, time.monotonic() - started, expected,
                  _read_by(plan))


def _read_by(plan: SearchPlan) -> ReadBy:
    return "curve" if plan.queue is None else "queue"


class StepFailed(Exception):
    """A step of a search that failed (a lost query, a server that failed): the search stops."""


def search_or_stop(run: RunStep, plan: SearchPlan, seed: int) -> Search | StepFailed:
    """:func:`search_peak` over ``run``'s steps, seeded with ``seed``; or the :class:`StepFailed` a step raised."""
    try:
        return search_peak(run, plan, np.random.default_rng(seed))
    except StepFailed as failed:
        return failed
