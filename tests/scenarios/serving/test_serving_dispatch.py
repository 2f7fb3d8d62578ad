"""The serving SUT's dispatch is one queue served by whichever worker is free, as the M/D/c queue that
the peak search is held against assumes (tests/scenarios/serving/test_serving_peak.py, benchmarks/serving_peak.py).

Per-worker queues (round-robin) would be ``c`` M/D/1 queues at ``1/c`` of the rate each, whose peak is
far lower. Here one of two real worker processes never answers: with one shared queue the other
answers every query but the one the stuck worker took; with per-worker queues half would be lost.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

from trtbench.scenarios.serving.vision.pool import ServerSession, ServingPool
from toy_runtimes import SleepsPerCall

QUERIES = 20


def test_a_free_worker_takes_the_queued_queries_of_a_stuck_one():
    pool = ServingPool([SleepsPerCall(0.0, hang_from=1), SleepsPerCall(0.0)], timeout_s=120.0, threads=1)
    completed, done = [], threading.Event()

    def complete(ids: list[int]) -> None:
        completed.extend(ids)
        if len(completed) >= QUERIES:
            done.set()
    try:
        session = ServerSession(pool, 2, complete, timeout_s=1.0)  # the stuck worker is killed after 1 s
        session.issue([SimpleNamespace(id=i) for i in range(QUERIES)])
        assert done.wait(60.0), f"{len(completed)} of {QUERIES} queries came back"
        session.close()
    finally:
        pool.close()
    assert sorted(completed) == list(range(QUERIES))
    assert session.lost <= 1, "the queries queued behind the stuck worker were lost, not served by the free one"
    assert sum(session.batches.values()) == QUERIES - session.lost == len(session.latencies_ms)
