"""The settings of a serving scenario: one ``{server: {...}}`` entry of a config's ``scenarios:`` list."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Optional

from trtbench.core import schema
from trtbench.core.errors import UserInputError

LOADGEN_MODULE = "mlperf_loadgen"
INSTALL_HINT = "pip install 'trtbench[serving]' (it installs mlcommons-loadgen, the MLPerf LoadGen bindings)"
VALIDITY_RULES = ("bound", "loadgen")


@dataclass(frozen=True)
class BatchingConfig:
    """Dynamic batching: queued queries are gathered until ``max_batch`` of them or ``window_ms`` after
    the first, whichever comes first, and run as one call at that batch size."""

    max_batch: int = 4
    window_ms: float = 2.0

    def validate(self, path: str) -> None:
        for name in ("max_batch", "window_ms"):
            schema.require_positive(getattr(self, name), schema.join(path, name))


@dataclass(frozen=True)
class ServingConfig:
    """LoadGen's Server scenario: Poisson arrivals at ``target_qps``, or the peak QPS found by a search
    (``find_peak``), valid while the ``percentile`` latency stays within ``p99_ms``.

    ``validity``: ``bound`` judges a run by its measured percentile (with min duration and queries met);
    ``loadgen`` takes LoadGen's own verdict, which also needs its early-stopping test to pass (about 460
    queries at the 99th percentile before a single late one is allowed). Both are reported either way.
    """

    p99_ms: Optional[float] = None  # the latency bound, in ms, at ``percentile``
    percentile: float = 0.99
    target_qps: Optional[float] = None
    find_peak: bool = False
    min_duration_s: float = 10.0
    min_queries: int = 100
    workers: list[int] = field(default_factory=lambda: [1])
    threads: Optional[int] = None  # intra-op threads per worker; default: the run's threads over the workers
    batching: Optional[BatchingConfig] = None
    repeats: int = 3  # peak searches (or runs at target_qps); the spread is reported
    search_steps: int = 5  # LoadGen runs per peak search (bisection below the pool's capacity)
    query_timeout_s: float = 30.0  # a query unanswered this long is reported lost and its worker killed
    validity: str = "bound"
    seed: int = 0  # LoadGen's schedule seed (each repeat adds its index)

    def validate(self, path: str) -> None:
        if self.p99_ms is None:
            raise UserInputError(schema.join(path, "p99_ms"), "required key is missing",
                                 "give the latency bound in ms, e.g. p99_ms: 40")
        if (self.target_qps is None) == (not self.find_peak):
            raise UserInputError(path, "give exactly one of 'target_qps' and 'find_peak: true'",
                                 "write e.g. find_peak: true (search the peak QPS) or target_qps: 50")
        for name in ("p99_ms", "target_qps", "min_duration_s", "min_queries", "threads", "repeats", "search_steps",
                     "query_timeout_s"):
            schema.require_positive(getattr(self, name), schema.join(path, name))
        if not 0 < self.percentile < 1:
            raise UserInputError(schema.join(path, "percentile"), f"must be between 0 and 1, got {self.percentile}",
                                 "write e.g. percentile: 0.99 (the bound applies to the 99th percentile)")
        if not self.workers:
            raise UserInputError(schema.join(path, "workers"), "is empty", "list worker counts, e.g. workers: [1, 2]")
        for i, count in enumerate(self.workers):
            schema.require_positive(count, schema.join(path, f"workers[{i}]"))
        if len(set(self.workers)) != len(self.workers):
            raise UserInputError(schema.join(path, "workers"), f"has duplicates: {self.workers}",
                                 "list each count once")
        schema.require_choice(self.validity, VALIDITY_RULES, schema.join(path, "validity"))
        require_loadgen(path)

    def check_against_inputs(self, inputs: list, path: str) -> None:
        """Batched calls must fit the build's dynamic batch range: one query is one sample (leading dim 1)."""
        if self.batching is None:
            return
        where = schema.join(schema.join(path, "batching"), "max_batch")
        for spec in inputs:
            lo, hi = spec.min_shape[0], spec.max_shape[0]
            if lo != 1 or self.batching.max_batch > hi:
                raise UserInputError(where, f"batches of 1 to {self.batching.max_batch} do not fit input "
                                     f"'{spec.name}''s batch range [{lo}, {hi}]",
                                     f"give the inputs min_shape[0] = 1 and max_shape[0] >= {self.batching.max_batch}, "
                                     f"or lower max_batch")


def require_loadgen(path: str) -> None:
    """Exit 2 naming the extra when MLPerf LoadGen cannot be imported."""
    if importlib.util.find_spec(LOADGEN_MODULE) is None:
        raise UserInputError(path, f"serving scenarios need MLPerf LoadGen ('{LOADGEN_MODULE}'), which is not "
                             "installed",
                             INSTALL_HINT)
