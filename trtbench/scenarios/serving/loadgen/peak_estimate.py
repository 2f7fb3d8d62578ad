"""The serving peak estimated jointly from every step's queries, with a 90% interval, and the search that places the
steps, read after each by the plan's :class:`StepReader` (:class:`QueueReader` or :class:`CurveReader`)
(docs/serving.md, "The joint estimate")."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property
from statistics import NormalDist
from typing import Any, Callable, ClassVar, Literal, Optional, Protocol, Sequence

import numpy as np

from trtbench.core.stats import Interval
from trtbench.scenarios.serving.loadgen.queue_model import QueueModel, posterior, steady_peak, steady_share
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
class LoadStep:
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


NO_ESTIMATE = Interval(math.nan, math.nan, math.nan, LEVEL)  # the steps fix no crossing yet


@dataclass(frozen=True)
class Budget:
    """What a search may spend: ``queries`` in all (the confirming run included) and, where given, ``seconds``."""

    queries: int
    seconds: Optional[float] = None


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


def block_counts(steps: Sequence[LoadStep]) -> tuple[np.ndarray, np.ndarray]:
    """Each step's late queries and queries per block of :data:`BLOCK` query indices (steps x blocks)."""
    blocks = max(-(-s.queries // BLOCK) for s in steps)
    late, queries = np.zeros((len(steps), blocks)), np.zeros((len(steps), blocks))
    for i, step in enumerate(steps):
        starts = np.arange(0, step.queries, BLOCK)
        late[i, :len(starts)] = np.add.reduceat(step.late.astype(float), starts) if step.queries else 0
        queries[i, :len(starts)] = np.diff(np.append(starts, step.queries))
    return late, queries


def _centred(steps: Sequence[LoadStep]) -> tuple[np.ndarray, float]:
    """Each step's log load less their mean, and that mean."""
    log_qps = np.log([s.qps for s in steps])
    return log_qps - log_qps.mean(), float(log_qps.mean())


@dataclass(frozen=True)
class Curve:
    """The logistic curve fitted to every step: the late share at ``qps`` is
    ``1 / (1 + exp(-(a + b (log(qps) - centre))))``."""

    a: float
    b: float
    centre: float

    @classmethod
    def fit(cls, steps: Sequence[LoadStep]) -> Curve:
        log_qps, centre = _centred(steps)
        late, queries = np.array([s.late.sum() for s in steps], float), np.array([s.queries for s in steps], float)
        a, b = _fit(late[None], queries[None], log_qps[None])
        return cls(float(a[0]), float(b[0]), centre)

    def share(self, log_qps):
        """The late share at ``log_qps``, the log of the load (a number or an array)."""
        return _logistic(self.a, self.b, log_qps - self.centre)

    def crossing(self, steps: Sequence[LoadStep], allowed: float) -> tuple[float, float]:
        """The load where the curve reaches ``allowed`` (nan where none), and the width over it of the 90% interval
        were the queries of ``steps`` (those it was fitted to) independent (from the fit's Fisher information)."""
        log_qps = np.log([s.qps for s in steps]) - self.centre
        queries = np.array([s.queries for s in steps], float)
        point = float(_crossing(np.array([self.a]), np.array([self.b]), allowed, self.centre)[0])
        if not math.isfinite(point):
            return point, math.inf
        share = _logistic(self.a, self.b, log_qps)
        weight = queries * share * (1 - share)
        info = np.array([[weight.sum(), (weight * log_qps).sum()],
                         [(weight * log_qps).sum(), (weight * log_qps ** 2).sum()]])
        gradient = np.array([-1 / self.b, -(math.log(allowed / (1 - allowed)) - self.a) / self.b ** 2])
        try:
            spread = math.sqrt(max(float(gradient @ np.linalg.solve(info, gradient)), 0.0))
        except np.linalg.LinAlgError:
            return point, math.inf
        # no overflow where the fit is loose
        return point, math.exp(min(Z_LEVEL * spread, 50.0)) - math.exp(-Z_LEVEL * spread)


def replicate_counts(steps: Sequence[LoadStep], rng: np.random.Generator,
                     replicates: int) -> tuple[np.ndarray, np.ndarray]:
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


def _bootstrap(steps: Sequence[LoadStep], allowed: float, point: float, rng: np.random.Generator) -> Interval:
    """The peak ``point`` the curve fitted to ``steps`` gives, with its 90% interval by the block bootstrap, both less
    the replicates' median bias."""
    if not math.isfinite(point):
        return Interval(point, math.nan, math.nan, LEVEL)
    log_qps, centre = _centred(steps)
    boot_late, boot_queries = replicate_counts(steps, rng, REPLICATES)
    crossings = _crossing(*_fit(boot_late, boot_queries, np.broadcast_to(log_qps, boot_late.shape)), allowed, centre)
    crossings = np.where(np.isnan(crossings), np.inf, crossings)  # no crossing: the curve never rose, a peak unbounded
    low, middle, high = np.quantile(crossings, [(1 - LEVEL) / 2, 0.5, (1 + LEVEL) / 2], method="inverted_cdf")
    bias = middle - point  # the replicates' median bias about the fit: the fit's, about the true crossing
    return Interval(float(point - bias), float(max(low - bias, 0.0)), float(high - bias), LEVEL)


def _bracket(steps: Sequence[LoadStep], allowed: float, ceiling: float) -> Optional[Bracket]:
    """The bisection's bracket up to ``ceiling`` while no step within the ``allowed`` share lies below one over it;
    None once one does."""
    over = [s.qps for s in steps if s.share > allowed]
    under = [s.qps for s in steps if s.share <= allowed]
    if min(under, default=math.inf) < max(over, default=0.0):
        return None
    hi = min(over, default=ceiling)
    return Bracket(max((q for q in under if q < hi), default=0.0), hi, len(steps))


def _readable(steps: Sequence[LoadStep]) -> list[LoadStep]:
    """The steps with queries, or none where no step saw a late query (nothing to read yet)."""
    counted = [s for s in steps if s.queries]
    return counted if any(s.late.any() for s in counted) else []


@dataclass(frozen=True)
class Reading:
    """One reading of a search's steps: the peak (with its 90% interval where given at once), the interval's width were
    the queries independent, the bisection's bracket (None once it no longer holds), the next load, whether a bracket
    within the resolution ends the search, the steady late share at a load, and the peak's 90% interval drawn."""

    estimate: Interval
    width: float
    bracket: Optional[Bracket]
    next_qps: float
    closes: bool
    expected_share: Callable[[float], float]
    interval: Callable[[np.random.Generator], Interval]


class StepReader(Protocol):
    """How a search reads its steps: ``name``, what results.json's ``read_by`` holds; ``label``, what the text calls
    it; ``expected_shares``, the late share it expects at each of ``qps`` from the steps alone (None: none drawn)."""

    name: ClassVar[str]
    label: ClassVar[str]

    def read(self, steps: Sequence[LoadStep], plan: SearchPlan) -> Reading: ...

    @staticmethod
    def expected_shares(steps: Sequence[LoadStep], qps: np.ndarray) -> Optional[np.ndarray]: ...


@dataclass(frozen=True)
class CurveReader:
    """The logistic curve fitted to every step; past the bracket the steps go :data:`SPREAD` either side of it."""

    name: ClassVar[str] = "curve"
    label: ClassVar[str] = "the fitted curve"

    def read(self, steps: Sequence[LoadStep], plan: SearchPlan) -> Reading:
        read = _readable(steps)
        curve = Curve.fit(read) if read else None
        point, width = curve.crossing(read, plan.allowed) if curve else (math.nan, math.inf)
        bracket = _bracket(steps, plan.allowed, plan.capacity)
        next_qps = (min(point * (1 + (SPREAD if len(steps) % 2 else -SPREAD)), plan.capacity)
                    if bracket is None and math.isfinite(point) else (bracket or Bracket(0.0, plan.capacity)).qps)
        return Reading(Interval(point, math.nan, math.nan, LEVEL), width, bracket, next_qps, closes=True,
                       expected_share=lambda qps: float(curve.share(math.log(qps))) if curve else 0.0,
                       interval=lambda rng: _bootstrap(read, plan.allowed, point, rng))

    @staticmethod
    def expected_shares(steps: Sequence[LoadStep], qps: np.ndarray) -> Optional[np.ndarray]:
        return Curve.fit(steps).share(np.log(qps))


@dataclass(frozen=True)
class QueueReader:
    """The queue the steps were served by (``queue``: its model from the steps): the model's steady-state peak over the
    load scale their late counts give (the posterior's median, 5% and 95%); steps at :data:`QUEUE_STEPS` times it."""

    queue: Callable[[Sequence[LoadStep]], QueueModel]
    name: ClassVar[str] = "queue"
    label: ClassVar[str] = "the queue model"

    def read(self, steps: Sequence[LoadStep], plan: SearchPlan) -> Reading:
        read, ceiling = _readable(steps), plan.capacity * QUEUE_STEPS[-1]
        bracket = _bracket(steps, plan.allowed, ceiling)
        if not read:
            return Reading(NO_ESTIMATE, math.inf, bracket, (bracket or Bracket(0.0, ceiling)).qps, closes=True,
                           expected_share=lambda qps: 0.0, interval=lambda rng: NO_ESTIMATE)
        model = self.queue(steps)
        scale = posterior(model, [s.qps for s in read], [s.queries for s in read], [int(s.late.sum()) for s in read])
        peak = steady_peak(model, plan.allowed)
        estimate = Interval(peak / scale.kappa(0.5), peak / scale.kappa((1 + LEVEL) / 2),
                            peak / scale.kappa((1 - LEVEL) / 2), LEVEL)
        next_qps = estimate.value * QUEUE_STEPS[len(steps) % len(QUEUE_STEPS)]
        return Reading(estimate, estimate.rel_width, bracket, next_qps, closes=False,
                       expected_share=lambda qps: steady_share(model, qps * scale.kappa(0.5)),
                       interval=lambda rng: estimate)

    @staticmethod
    def expected_shares(steps: Sequence[LoadStep], qps: np.ndarray) -> Optional[np.ndarray]:
        return None


READERS: dict[str, type[StepReader]] = {reader.name: reader for reader in (CurveReader, QueueReader)}


@dataclass(frozen=True)
class SearchPlan:
    """How a search runs; ``verdict_queries``: what LoadGen's verdict needs at a late share (None: no run);
    ``reader``: how the steps are read."""

    allowed: float
    capacity: float
    min_queries: int
    min_duration_s: float
    resolution: float
    budget: Budget
    verdict_queries: Optional[Callable[[float], Optional[int]]] = None
    reader: StepReader = CurveReader()

    def queries_at(self, qps: float) -> int:
        """The queries of a step at ``qps``: LoadGen issues until both its minimums are met."""
        return max(self.min_queries, math.ceil(qps * self.min_duration_s))

    def confirm_queries(self, qps: float, share: float) -> Optional[int]:
        """The queries of a confirming run at ``qps`` at an expected late ``share`` (None where no run passes)."""
        needed = self.verdict_queries(share) if self.verdict_queries is not None else 0
        return None if needed is None else max(self.queries_at(qps), needed)


# why a search stopped: its query or time budget spent, its interval narrow enough, or late at a tenth of the capacity
StopReason = Literal["budget", "resolution", "floor"]


@dataclass(frozen=True)
class ConfirmNeeds:
    """What a confirming run at the interval's low end needs: the ``late_share`` expected there (nan: no estimate) and
    its ``queries`` (None: no run passes)."""

    late_share: float = math.nan
    queries: Optional[int] = None


@dataclass(frozen=True)
class Search:
    """A finished search: why it stopped, its confirming run at the interval's low end (or None), what that run needs
    and the name of the reader that read the steps."""

    steps: tuple[LoadStep, ...]
    estimate: Interval
    stopped_by: StopReason
    confirm: Optional[LoadStep]
    queries: int
    seconds: float
    confirm_needs: ConfirmNeeds = ConfirmNeeds()
    read_by: str = CurveReader.name


# run(qps, repeat, queries) -> (each query's late flag in issue order, what the step made)
RunStep = Callable[[float, int, int], tuple[np.ndarray, Any]]


@dataclass
class SearchState:
    """A search under way: its steps, their queries and reading, when it started, and the last interval drawn."""

    plan: SearchPlan
    reading: Reading
    started: float = field(default_factory=time.monotonic)
    steps: list[LoadStep] = field(default_factory=list)
    used: int = 0
    drawn: Interval = NO_ESTIMATE

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    @property
    def latest(self) -> Interval:
        """The latest 90% interval: the reading's own, or the last drawn."""
        return self.reading.estimate if math.isfinite(self.reading.estimate.low) else self.drawn

    def reserved(self, low: float) -> int:
        """The queries kept back for the confirming run at ``low``: what LoadGen's verdict needs there, or one step
        where that is more than :data:`CONFIRM_SHARE` of the budget (or no run passes)."""
        plan = self.plan
        if not (math.isfinite(low) and low > 0):
            return plan.queries_at(plan.capacity)
        needed = plan.confirm_queries(low, self.reading.expected_share(low))
        cap = max(plan.queries_at(low), int(CONFIRM_SHARE * plan.budget.queries))
        return needed if needed is not None and needed <= cap else plan.queries_at(low)

    def confirmed(self, run: RunStep, estimate: Interval, stopped_by: StopReason) -> Search:
        """The search ending at ``estimate``, with its confirming run at the low end where the budget allows."""
        confirm, needs = None, ConfirmNeeds()
        if estimate.low > 0:
            share = self.reading.expected_share(estimate.low)
            needs = ConfirmNeeds(share, self.plan.confirm_queries(estimate.low, share))
        if needs.queries is not None and self.used + needs.queries <= self.plan.budget.queries:
            late, made = run(estimate.low, len(self.steps), needs.queries)
            confirm = LoadStep(estimate.low, len(self.steps), np.asarray(late, dtype=bool), made)
            self.used += len(late)
        return Search(tuple(self.steps), estimate, stopped_by, confirm, self.used, self.seconds, needs,
                      self.plan.reader.name)


def search_peak(run: RunStep, plan: SearchPlan, rng: np.random.Generator) -> Search:
    """The steps ``run`` makes until the interval is within the resolution or the budget is spent."""
    state, stopped_by = SearchState(plan, plan.reader.read([], plan)), "budget"
    while True:
        qps, latest, steps = state.reading.next_qps, state.latest, state.steps
        # the confirming run's low end: the interval's, or before one, SPREAD twice below the estimate
        low = latest.low if math.isfinite(latest.low) else state.reading.estimate.value * (1 - 2 * SPREAD)
        need = plan.queries_at(qps) + state.reserved(low)
        over_time = plan.budget.seconds is not None and state.seconds + need / qps > plan.budget.seconds
        if state.used + need > plan.budget.queries or over_time:
            break
        late, made = run(qps, len(steps), plan.queries_at(qps))
        steps.append(LoadStep(qps, len(steps), np.asarray(late, dtype=bool), made))
        state.used += len(late)
        state.reading = reading = plan.reader.read(steps, plan)
        bracket = reading.bracket
        if bracket is not None and bracket.lo == 0 and bracket.hi <= FLOOR * plan.capacity:
            return Search(tuple(steps), Interval(0.0, 0.0, bracket.hi, LEVEL), "floor", None, state.used, state.seconds,
                          read_by=plan.reader.name)
        if reading.closes and bracket is not None and bracket.hi - bracket.lo <= plan.resolution * bracket.lo:
            # no crossing within the bracket: the peak is its low end
            return state.confirmed(run, Interval(bracket.lo, bracket.lo, bracket.hi, LEVEL), "resolution")
        if reading.width <= plan.resolution and sum(int(s.late.sum()) for s in steps) >= MIN_LATE:
            state.drawn = reading.interval(rng)
            if state.drawn.rel_width <= plan.resolution:
                stopped_by = "resolution"
                break
    final = state.reading.interval(rng) if stopped_by == "budget" and state.steps else state.latest
    return state.confirmed(run, final, stopped_by)


class StepFailed(Exception):
    """A step of a search that failed (a lost query, a server that failed): the search stops."""


def search_or_stop(run: RunStep, plan: SearchPlan, seed: int) -> Search | StepFailed:
    """:func:`search_peak` over ``run``'s steps, seeded with ``seed``; or the :class:`StepFailed` a step raised."""
    try:
        return search_peak(run, plan, np.random.default_rng(seed))
    except StepFailed as failed:
        return failed
