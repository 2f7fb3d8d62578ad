"""LoadGen's server scenario with token latencies, over servers that each serve one query (one sequence) at a time.

LoadGen runs with ``TestSettings.use_token_latencies`` and its ``ttft_latency`` / ``tpot_latency`` bounds
(nanoseconds). A query's server reports its first token as soon as it exists (``FirstTokenComplete``) and
completes the query with its token count (``QuerySampleResponse(id, ptr, size, n_tokens)``, at least 2), so
LoadGen's summary gives the TTFT and TPOT percentiles. The run keeps its own stamps too, one per token from
the query's issue: TTFT (issue to first token), TPOT ((E2E - TTFT) / (tokens - 1)), ITL (the gaps between
consecutive tokens).

A step passes by :mod:`.serving_rule`'s one-sided bound on the share of late queries, where a query is late
when its TTFT is over the TTFT bound or its TPOT over the TPOT bound; goodput is the share that is not.
:func:`token_peak` bisects the offered QPS for the highest that passes (:mod:`.serving_search`).
"""

from __future__ import annotations

import array
import dataclasses
import math
import queue
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from trtbench.scenarios.loadgen_summary import LoadGenSummary, percentile_key, read_summary
from trtbench.scenarios.serving_rule import passes
from trtbench.scenarios.serving_search import Bracket

# serve(first_token) -> the query's token stamps (time.perf_counter(), one per token, at least 2); it calls
# first_token() as soon as its first token exists
Serve = Callable[[Callable[[], None]], Sequence[float]]
PERCENTILES = (50.0, 90.0, 99.0)


@dataclass(frozen=True)
class TokenLoad:
    """One step's settings: both bounds (ms, at ``percentile``), the run's minimums, the ``confidence`` of the pass
    rule's bound and LoadGen's schedule ``seed`` (a search's step N runs at ``seed + N - 1``)."""

    ttft_ms: float
    tpot_ms: float
    min_duration_s: float = 1.0
    min_queries: int = 230
    percentile: float = 0.99
    confidence: float = 0.9
    seed: int = 0


@dataclass(frozen=True)
class QueryStamps:
    """One query's token stamps, in ms from its issue."""

    tokens_ms: tuple[float, ...]

    @property
    def ttft_ms(self) -> float:
        return self.tokens_ms[0]

    @property
    def tpot_ms(self) -> float:
        return (self.tokens_ms[-1] - self.tokens_ms[0]) / (len(self.tokens_ms) - 1)

    @property
    def itl_ms(self) -> list[float]:
        return [b - a for a, b in zip(self.tokens_ms, self.tokens_ms[1:])]

    def late(self, load: TokenLoad) -> bool:
        return self.ttft_ms > load.ttft_ms or self.tpot_ms > load.tpot_ms


def nearest_rank(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile (in percent) of ``values`` by nearest rank, as LoadGen takes it."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(pct / 100 * len(ordered)) - 1))]


@dataclass(frozen=True)
class TokenRun:
    """One LoadGen run at ``qps`` offered: its summary, the queries' own stamps and whether it passed; ``error``:
    why a server failed (its queries were completed empty so that LoadGen ends, and the run does not pass)."""

    qps: float
    summary: LoadGenSummary
    queries: tuple[QueryStamps, ...]
    late: int
    passed: bool
    duration_s: float
    error: str = ""

    @property
    def goodput(self) -> float:
        """The share of queries within both bounds."""
        return 1 - self.late / len(self.queries) if self.queries else 0.0

    @property
    def request_per_s(self) -> float:
        return len(self.queries) / self.duration_s

    @property
    def output_tokens_per_s(self) -> float:
        return sum(len(q.tokens_ms) for q in self.queries) / self.duration_s

    def percentiles_ms(self) -> dict[str, dict[str, float]]:
        """TTFT, TPOT and ITL percentiles (p50, p90, p99) from the queries' own stamps."""
        series = {"ttft": [q.ttft_ms for q in self.queries], "tpot": [q.tpot_ms for q in self.queries],
                  "itl": [gap for q in self.queries for gap in q.itl_ms]}
        return {name: {percentile_key(p): nearest_rank(values, p) for p in PERCENTILES}
                for name, values in series.items() if values}


def _test_settings(lg, load: TokenLoad, qps: float):
    test = lg.TestSettings()
    test.scenario = lg.TestScenario.Server
    test.mode = lg.TestMode.PerformanceOnly
    test.server_target_qps = qps
    test.use_token_latencies = True
    test.ttft_latency = int(load.ttft_ms * 1e6)
    test.tpot_latency = int(load.tpot_ms * 1e6)
    test.server_target_latency_percentile = load.percentile
    test.min_duration_ms = int(load.min_duration_s * 1e3)
    test.min_query_count = load.min_queries
    test.schedule_rng_seed = load.seed
    return test


def _log_settings(lg, folder: Path):
    logs = lg.LogSettings()
    logs.log_output.outdir = str(folder)
    logs.log_output.copy_summary_to_stdout = False
    return logs


class _Servers:
    """A thread per server, each serving one query at a time from a queue of LoadGen's issued queries."""

    def __init__(self, lg, servers: Sequence[Serve]):
        self.lg, self.pending = lg, queue.Queue()
        self.stamps: list[QueryStamps] = []
        self.errors: list[str] = []
        self.reply = array.array("B", [0])  # LoadGen needs a response buffer; the tokens stay in the server
        self.threads = [threading.Thread(target=self._loop, args=(serve,), daemon=True) for serve in servers]
        for thread in self.threads:
            thread.start()

    def issue(self, samples) -> None:
        issued = time.perf_counter()
        for sample in samples:
            self.pending.put((sample.id, issued))

    def _loop(self, serve: Serve) -> None:
        lg, (pointer, size) = self.lg, self.reply.buffer_info()
        while (item := self.pending.get()) is not None:
            query_id, issued = item
            try:
                tokens = serve(lambda: lg.FirstTokenComplete([lg.QuerySampleResponse(query_id, 0, 0)]))
            except Exception as err:  # noqa: BLE001 - a dead server fails the run; LoadGen still needs the query
                self.errors.append(str(err))
                lg.QuerySamplesComplete([lg.QuerySampleResponse(query_id, pointer, size, 2)])
                continue
            lg.QuerySamplesComplete([lg.QuerySampleResponse(query_id, pointer, size, len(tokens))])
            self.stamps.append(QueryStamps(tuple((stamp - issued) * 1e3 for stamp in tokens)))

    def stop(self) -> None:
        for _ in self.threads:
            self.pending.put(None)
        for thread in self.threads:
            thread.join()


def token_run(servers: Sequence[Serve], load: TokenLoad, qps: float, folder: Path) -> TokenRun:
    """One LoadGen run offering ``qps`` to ``servers`` (each serving one query at a time), its logs in
    ``folder``, judged by the late share's bound."""
    import mlperf_loadgen as lg

    folder.mkdir(parents=True, exist_ok=True)
    pool = _Servers(lg, servers)
    sut = lg.ConstructSUT(pool.issue, lambda: None)
    qsl = lg.ConstructQSL(1, 1, lambda indices: None, lambda indices: None)  # the prompts live in the servers
    start = time.perf_counter()
    try:
        lg.StartTestWithLogSettings(sut, qsl, _test_settings(lg, load, qps), _log_settings(lg, folder))
    finally:
        pool.stop()
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
    duration = time.perf_counter() - start
    summary, queries, error = read_summary(folder), tuple(pool.stamps), "; ".join(dict.fromkeys(pool.errors))
    late = sum(1 for q in queries if q.late(load))
    passed = not error and summary.minimums_met and passes(late, len(queries), load.percentile, load.confidence)
    return TokenRun(qps, summary, queries, late, passed, duration, error)


def token_peak(servers: Sequence[Serve], load: TokenLoad, capacity: float, folder: Path,
               resolution: float = 0.02, max_steps: int = 7) -> tuple[float, list[TokenRun]]:
    """The highest offered QPS that passes, bisected from [0, ``capacity``], and the runs (logs under
    ``folder/step-N``). A run whose server failed stops the search: the peak is the highest that passed
    before it, and the last run's ``error`` says why."""
    bracket, runs = Bracket(0.0, capacity), []
    while not bracket.done(resolution, max_steps):
        run = token_run(servers, dataclasses.replace(load, seed=load.seed + bracket.steps), bracket.qps,
                        folder / f"step-{bracket.steps + 1}")
        runs.append(run)
        if run.error:
            break
        bracket = bracket.after(run.passed)
    return bracket.lo, runs
