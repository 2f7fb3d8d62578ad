"""Whether one LoadGen run is within the latency bound (``k`` late of ``n`` passing when ``P(Binomial(n, 1 -
percentile) <= k) <= 1 - confidence``), the queries a step needs, the rule's name (more: docs/serving.md, "Which step
passes", "Module notes", trtbench/scenarios/serving/loadgen/rule.py)."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Iterable, Optional

LEGACY_RULE = "measured-percentile"  # results written before peak_rule: the measured percentile within the bound
LOADGEN_RULE = "loadgen-verdict"  # validity: loadgen: LoadGen's VALID (its early stopping at 0.99, and more)
ESTIMATE_RULE = "joint-estimate/1 at 90%"  # validity: estimate: the late share fitted to every step together
# the default min_queries of a joint estimate's step (trtbench.scenarios.serving.loadgen.peak_estimate)
ESTIMATE_QUERIES = 500
LOADGEN_CONFIDENCE = 0.99  # LoadGen's early stopping's confidence (its Server scenario's VALID)
MARGIN = 0.15  # the default queries per step put the bound's margin at 15% of the allowed late share


def rule_name(validity: str, confidence: float) -> str:
    """The name results record the rule under (``late-share-bound/1 at 0.9``, ...)."""
    if validity == "estimate":
        return ESTIMATE_RULE
    return LOADGEN_RULE if validity == "loadgen" else f"late-share-bound/1 at {confidence:g}"


def late_count(latencies_ms: Iterable[float], bound_ms: float) -> int:
    """The queries that took longer than the bound."""
    return sum(1 for latency in latencies_ms if latency > bound_ms)


def binomial_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)``, by scipy's ufunc (``scipy.stats.binom.cdf`` costs far more a call:
    the peak search asks this thousands of times)."""
    from scipy.special import bdtr

    return float(bdtr(k, n, p))


def passes(late: int, queries: int, percentile: float, confidence: float) -> bool:
    """Whether ``late`` of ``queries`` queries over the bound pass at ``percentile`` (see the module docstring)."""
    return queries > 0 and binomial_cdf(late, queries, 1 - percentile) <= 1 - confidence


def least_queries(percentile: float, confidence: float) -> int:
    """The fewest queries with which a run can pass at all: with none late, ``percentile ** n <= 1 - confidence``."""
    n = math.ceil(math.log(1 - confidence) / math.log(percentile))
    return n if passes(0, n, percentile, confidence) else n + 1  # the float rounding of the logs, either way


def early_stopping_queries(share: float, percentile: float, confidence: float = LOADGEN_CONFIDENCE,
                           most: int = 100_000) -> Optional[int]:
    """About the fewest queries with which a run whose late share is ``share`` passes LoadGen's early stopping
    (``ceil(share n)`` late of ``n``), by bisection; None where none up to ``most`` do."""
    def ok(n: int) -> bool:
        return passes(math.ceil(share * n - 1e-9), n, percentile, confidence)
    if not ok(most):
        return None
    lo, hi = least_queries(percentile, confidence) - 1, most  # ok(hi), and no n below the least passes
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def resolving_queries(percentile: float, confidence: float) -> int:
    """The default queries per step of a bisection: enough that the bound's margin ``z * sqrt(share * (1 - share) /
    n)`` near the allowed share is :data:`MARGIN` of it (``z`` the normal quantile at ``confidence``)."""
    share, z = 1 - percentile, NormalDist().inv_cdf(confidence)
    return max(least_queries(percentile, confidence), math.ceil(z * z * (1 - share) / (share * MARGIN ** 2)))
