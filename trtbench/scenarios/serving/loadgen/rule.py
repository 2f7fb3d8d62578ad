"""Whether one LoadGen run is within the latency bound: the pass rule of a serving step, the queries a
step needs, and the name a result records its rule under (``peak_rule``).

The rule is LoadGen's early-stopping test (``loadgen/early_stopping.cc``) at the scenario's
``confidence``: of ``n`` queries, ``k`` took longer than the bound (*late*). The percentile allows a
share ``1 - percentile`` of late queries (1% at p99). The run passes when the one-sided upper
confidence bound on the late share is within that: when seeing ``k`` or fewer late queries would be
unlikely (probability at most ``1 - confidence``) were the true share exactly the allowed one, i.e.
``P(Binomial(n, 1 - percentile) <= k) <= 1 - confidence`` (the Clopper-Pearson bound; LoadGen asks
``I_percentile(n - k, k + 1) <= 1 - confidence`` of the regularized incomplete beta, the same sum).

More: docs/serving.md, "Module notes", trtbench/scenarios/serving/loadgen/rule.py.
"""

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
    """The name results record the rule under: the joint estimate from every step (``joint-estimate/1 at 90%``), a
    step judged by the late share's bound at ``confidence`` (``late-share-bound/1 at 0.9``), or by LoadGen's verdict.
    Peaks of different rules do not compare."""
    if validity == "estimate":
        return ESTIMATE_RULE
    return LOADGEN_RULE if validity == "loadgen" else f"late-share-bound/1 at {confidence:g}"


def late_count(latencies_ms: Iterable[float], bound_ms: float) -> int:
    """The queries that took longer than the bound."""
    return sum(1 for latency in latencies_ms if latency > bound_ms)


def binomial_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)``: scipy's, imported on first use (scipy.stats takes seconds)."""
    from scipy.stats import binom

    return float(binom.cdf(k, n, p))


def passes(late: int, queries: int, percentile: float, confidence: float) -> bool:
    """Whether ``late`` of ``queries`` queries over the bound pass at ``percentile`` (see the module docstring)."""
    return queries > 0 and binomial_cdf(late, queries, 1 - percentile) <= 1 - confidence


def least_queries(percentile: float, confidence: float) -> int:
    """The fewest queries with which a run can pass at all: with none late, ``percentile ** n <= 1 - confidence``
    (459 at p99 and LoadGen's 0.99; 230 at p99 and 0.9)."""
    n = math.ceil(math.log(1 - confidence) / math.log(percentile))
    return n if passes(0, n, percentile, confidence) else n + 1  # the float rounding of the logs, either way


def early_stopping_queries(share: float, percentile: float, confidence: float = LOADGEN_CONFIDENCE,
                           most: int = 100_000) -> Optional[int]:
    """The queries with which a run whose late share is ``share`` passes LoadGen's early stopping (``k = ceil(share
    n)`` late of ``n``; :func:`passes`), by bisection (about the fewest: the rounding of ``k`` makes passing not quite
    monotone in ``n``): 838 at 0.2% and p99, 1596 at 0.4%, 13,795 at 0.8%; None where none up to ``most`` do (a share
    at or over the allowed one)."""
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
    """The default queries per step of a peak search: enough that the bound's margin over the late share,
    ``z * sqrt(share * (1 - share) / n)`` near the allowed share, is :data:`MARGIN` of that share (``z`` the
    normal quantile at ``confidence``): 7227 at p99 and 0.9, 23813 at 0.99, 657 at p90 and 0.9. Fewer make
    the steps below the true peak fail more often, and the peak found lower: on the M/D/1 queue at a bound
    four service times long (tests/scenarios/serving/test_serving_peak.py), the search's median peak is 0.96 of the true
    one with these, 0.95 with a margin of 0.2, 0.80 with 1000 queries at 0.99."""
    share, z = 1 - percentile, NormalDist().inv_cdf(confidence)
    return max(least_queries(percentile, confidence), math.ceil(z * z * (1 - share) / (share * MARGIN ** 2)))
