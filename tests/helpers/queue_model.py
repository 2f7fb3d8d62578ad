"""The M/D/c queue that a sleeper served by ``c`` workers is: Poisson arrivals, ``c`` servers, one service time; its
latencies simulated, M/D/1's late share from Erlang's formula, and the true peak at the p99 bound. And the M/G/c
queue that a real run is: the same arrivals, each query's service time drawn from those the run recorded."""

from __future__ import annotations

import heapq
import math

import numpy as np

PERCENTILE = 0.99


def md_c_latencies(qps: float, service_s: float, servers: int, gaps: np.ndarray) -> np.ndarray:
    """The latency (s) of each query of an M/D/c queue, empty at its start: Poisson arrivals at ``qps`` (gaps of
    ``gaps / qps``: ``gaps`` are unit exponential draws, one per query), FIFO, ``servers`` servers of ``service_s``
    a query.

    With one service time for every query, query ``i`` starts when query ``i - c`` ends, or on its arrival:
    ``end[i] = max(arrival[i], end[i - c]) + service``; in each residue class mod ``c`` that unrolls to
    ``end[r + jc] = (j + 1) service + max over m <= j of (arrival[r + mc] - m service)``."""
    queries = len(gaps)
    rows = -(-queries // servers)
    padded = np.concatenate([gaps, np.ones(rows * servers - queries)])
    arrivals = np.cumsum(padded / qps).reshape(rows, servers)
    j = np.arange(rows)[:, None]
    ends = (j + 1) * service_s + np.maximum.accumulate(arrivals - j * service_s, axis=0)
    return (ends - arrivals).ravel()[:queries]


def md1_late_share(qps: float, service_s: float, bound_s: float) -> float:
    """The steady-state share of an M/D/1 queue's queries whose latency exceeds ``bound_s``: Erlang's formula
    for the waiting time W (latency = W + service), ``P(W <= t) = (1 - rho) sum over k <= t/D of
    (lam (kD - t))^k / k! exp(-lam (kD - t))``."""
    t, rho = bound_s - service_s, qps * service_s
    return 1 - (1 - rho) * math.fsum((qps * (k * service_s - t)) ** k / math.factorial(k)
                                     * math.exp(-qps * (k * service_s - t)) for k in range(int(t // service_s) + 1))


def highest_qps(late_share, capacity: float) -> float:
    """The highest QPS below ``capacity`` whose late share ``late_share(qps)`` is at most 1 - PERCENTILE."""
    lo, hi = 0.0, capacity
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if late_share(mid) <= 1 - PERCENTILE else (lo, mid)
    return lo


def simulated_late_share(service_s: float, servers: int, bound_s: float, queries: int = 1_000_000):
    """The late share of one long run at each QPS, from the same draws (so monotone in the QPS)."""
    gaps = np.random.default_rng(1).exponential(1.0, queries)
    return lambda qps: float(np.mean(md_c_latencies(qps, service_s, servers, gaps) > bound_s))


def md_c_true_peak(service_s: float, servers: int, bound_s: float) -> float:
    """The M/D/c queue's true peak at the p99 bound (steady state): M/D/1's from Erlang's formula, more
    servers' from a long simulation (benchmarks/serving_peak.py compares the sleeper's peaks with it)."""
    share = ((lambda qps: md1_late_share(qps, service_s, bound_s)) if servers == 1
             else simulated_late_share(service_s, servers, bound_s))
    return highest_qps(share, servers / service_s)


def mg_c_latencies(qps: float, services_s: np.ndarray, servers: int, gaps: np.ndarray) -> np.ndarray:
    """The latency (s) of each query of an M/G/c queue, empty at its start: Poisson arrivals at ``qps`` (``gaps``
    as for :func:`md_c_latencies`), FIFO from one queue, ``servers`` servers, query ``i`` served for ``services_s[i]``:
    it starts when it arrives or when the first server frees, whichever is later."""
    arrivals = np.cumsum(gaps / qps).tolist()
    free = [0.0] * servers
    ends = []
    for arrival, service in zip(arrivals, services_s.tolist()):
        end = max(arrival, free[0]) + service
        heapq.heapreplace(free, end)
        ends.append(end)
    return np.array(ends) - np.array(arrivals)


def mg_c_true_peak(services_s: np.ndarray, servers: int, bound_s: float, queries: int = 1_000_000) -> float:
    """The M/G/c queue's peak at the p99 bound (steady state, from one long simulation): ``queries`` service times
    drawn with replacement from ``services_s`` (a run's recorded ones), the same draws and arrivals at every QPS."""
    rng = np.random.default_rng(2)
    gaps, services = rng.exponential(1.0, queries), rng.choice(np.asarray(services_s, float), queries)
    return highest_qps(lambda qps: float(np.mean(mg_c_latencies(qps, services, servers, gaps) > bound_s)),
                       servers / float(np.mean(services)))
