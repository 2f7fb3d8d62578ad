"""What both kinds of serving entry share: batching, the load settings (rate or peak search, LoadGen's minimums, the
rule's confidence, the search's limits), and LoadGen's presence."""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass, field
from typing import Optional

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.scenarios.serving.loadgen.peak_estimate import Budget, SearchPlan
from trtbench.scenarios.serving.loadgen.rule import (ESTIMATE_QUERIES, early_stopping_queries, least_queries,
                                                     resolving_queries, rule_name)

LOADGEN_MODULE = "mlperf_loadgen"
INSTALL_HINT = "pip install 'trtbench[serving]' (it installs mlcommons-loadgen, the MLPerf LoadGen bindings)"


@dataclass(frozen=True)
class BatchingConfig:
    """Dynamic batching: up to ``max_batch`` queued queries within ``window_ms`` as one call."""

    max_batch: int = 4
    window_ms: float = 2.0

    def validate(self, path: str) -> None:
        schema.require_positive_fields(self, ("max_batch", "window_ms"), path)


@dataclass(frozen=True)
class LoadSettings:
    """What both kinds of ``serving`` entry share: the load, its percentile, the workers, the limits."""

    percentile: float = 0.99
    find_peak: bool = False
    workers: list[int] = field(default_factory=lambda: [1])
    batching: Optional[BatchingConfig] = None
    min_duration_s: float = 10.0
    min_queries: Optional[int] = None  # LoadGen's min query count per run; default: see queries
    confidence: float = 0.9  # of the late share's upper bound (LoadGen's early stopping: 0.99)
    repeats: int = 3  # peak searches (or runs at a fixed rate); the spread is reported
    resolution: float = 0.02  # a search stops once the peak is bracketed within this share of itself
    search_steps: int = 10  # at most this many LoadGen runs per peak search (bisection below the pool's capacity)
    query_timeout_s: float = 30.0  # a query unanswered this long fails its worker (killed)
    seed: int = 0  # LoadGen's schedule seed (each repeat adds its index)
    search_queries: int = 10_000  # validity: estimate: the queries a search may use, its confirming run's included
    search_minutes: Optional[float] = None  # validity: estimate: and the minutes it may take (None: no limit)
    validity: str = "estimate"  # estimate: the joint estimate; bound: each step judged by the late share's bound

    def validate_load(self, path: str, rate: str) -> None:
        """Exit 2 naming the key where the shared settings are wrong; ``rate``: the fixed rate's key."""
        if (getattr(self, rate) is None) == (not self.find_peak):
            raise UserInputError(path, f"give exactly one of '{rate}' and 'find_peak: true'",
                                 f"write e.g. find_peak: true (search the peak QPS) or {rate}: 50")
        schema.require_positive_fields(self, (rate, "min_duration_s", "min_queries", "repeats", "search_steps",
                                              "query_timeout_s", "search_queries", "search_minutes"), path)
        if self.estimates and self.search_queries < 2 * self.queries:
            raise UserInputError(schema.join(path, "search_queries"),
                                 f"{self.search_queries} queries cannot hold a step and its confirming run of "
                                 f"{self.queries} queries each", f"give search_queries: {20 * self.queries} or more "
                                 "(the default is 10000), or fewer min_queries")
        for name, example in (("percentile", "0.99 (the bound applies to the 99th percentile)"),
                              ("confidence", "0.9 (LoadGen's early stopping uses 0.99)"),
                              ("resolution", "0.02 (the search brackets the peak within 2% of it)")):
            if not 0 < getattr(self, name) < 1:
                raise UserInputError(schema.join(path, name), f"must be between 0 and 1, got {getattr(self, name)}",
                                     f"write e.g. {name}: {example}")
        least = least_queries(self.percentile, self.confidence)
        if self.find_peak and self.validity == "bound" and self.min_queries is not None and self.min_queries < least:
            raise UserInputError(schema.join(path, "min_queries"),
                                 f"{self.min_queries} queries are too few for any step of the peak search to pass: "
                                 f"with none late, the late share's upper bound at confidence {self.confidence:g} "
                                 f"reaches {1 - self.percentile:g} from {least} queries",
                                 f"give min_queries: {least} or more (or a lower percentile), or leave it out "
                                 f"(default: {resolving_queries(self.percentile, self.confidence)}, which resolves "
                                 f"the peak)")
        if not self.workers:
            raise UserInputError(schema.join(path, "workers"), "is empty", "list worker counts, e.g. workers: [1, 2]")
        for i, count in enumerate(self.workers):
            schema.require_positive(count, schema.join(path, f"workers[{i}]"))
        if len(set(self.workers)) != len(self.workers):
            raise UserInputError(schema.join(path, "workers"), f"has duplicates: {self.workers}",
                                 "list each count once")
        require_loadgen(path)

    def search_plan(self, capacity: float) -> SearchPlan:
        """The joint estimate's plan for these settings, from [0, ``capacity``] QPS."""
        return SearchPlan(1 - self.percentile, capacity, self.queries, self.min_duration_s, self.resolution,
                          Budget(self.search_queries, self.search_minutes and self.search_minutes * 60),
                          functools.partial(early_stopping_queries, percentile=self.percentile))

    @property
    def peak_rule(self) -> str:
        """The name of the rule that judges its runs (or found its peaks), as results record it."""
        return rule_name(self.validity, self.confidence)

    @property
    def estimates(self) -> bool:
        """Whether a search's peak is the joint estimate (``validity: estimate``), not a bisection's."""
        return self.find_peak and self.validity == "estimate"

    @property
    def queries(self) -> int:
        """LoadGen's min query count per run: ``min_queries``, or its default for the kind of run."""
        if self.min_queries is not None:
            return self.min_queries
        if self.estimates:
            return ESTIMATE_QUERIES
        rule = resolving_queries if self.find_peak else least_queries
        return rule(self.percentile, self.confidence)


def require_loadgen(path: str) -> None:
    """Exit 2 naming the extra when MLPerf LoadGen cannot be imported."""
    if importlib.util.find_spec(LOADGEN_MODULE) is None:
        raise UserInputError(path, f"serving scenarios need MLPerf LoadGen ('{LOADGEN_MODULE}'), which is not "
                             "installed", INSTALL_HINT)
