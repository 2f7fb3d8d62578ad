"""LoadGen's server scenario with token latencies, over servers that each serve one query or static batch at a time
(more: docs/serving.md, "Module notes", trtbench/scenarios/serving/tokens/run.py)."""

from __future__ import annotations

import array
import itertools
import math
import queue
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional, Sequence

from trtbench.scenarios.serving.loadgen.peak_estimate import Search, SearchPlan, StepFailed, search_or_stop
from trtbench.scenarios.serving.loadgen.batch_window import gather
from trtbench.scenarios.serving.loadgen.harness import LatencyBound, Query, ServerLoad, run_loadgen
from trtbench.scenarios.serving.loadgen.summary import LoadGenSummary, percentile_label
from trtbench.scenarios.serving.loadgen.settings import BatchingConfig
from trtbench.scenarios.serving.loadgen.rule import passes
from trtbench.scenarios.serving.loadgen.search import Bracket

# serve(lengths, reached) -> the request's step stamps; lengths: each sequence's (prompt_tokens, new_tokens); it
# calls reached(k) as soon as its k-th step exists, for k = 1 and each sequence's new_tokens
Serve = Callable[[Sequence[tuple[int, int]], Callable[[int], None]], Sequence[float]]
PERCENTILES = (50.0, 90.0, 99.0)


@dataclass(frozen=True)
class TokenLoad:
    """One step's settings: both bounds (ms), the run's minimums, the rule's confidence, the seed."""

    ttft_ms: float
    tpot_ms: float
    min_duration_s: float = 1.0
    min_queries: int = 230
    percentile: float = 0.99
    confidence: float = 0.9
    seed: int = 0


@dataclass(frozen=True)
class DecoderServing:
    """The query sample library of (prompt_tokens, new_tokens) pairs, and static batching."""

    samples: tuple[tuple[int, int], ...]
    batching: Optional[BatchingConfig] = None


@dataclass(frozen=True)
class PeakSearch:
    """The peak search's bisection from [0, ``capacity``] (QPS)."""

    capacity: float
    resolution: float = 0.02
    max_steps: int = 7


@dataclass(frozen=True)
class QueryStamps:
    """One query's token stamps in ms from its issue, its issue time and sample."""

    tokens_ms: tuple[float, ...]
    issued_s: float = 0.0
    sample: int = 0

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
class DecoderRun:
    """One LoadGen run at ``qps`` offered; ``error``: why a server failed (the run does not pass)."""

    qps: float
    summary: LoadGenSummary
    queries: tuple[QueryStamps, ...]
    late: int
    passed: bool
    duration_s: float
    error: str = ""
    batches: dict[int, int] = field(default_factory=dict)

    @property
    def request_per_s(self) -> float:
        return len(self.queries) / self.duration_s

    @property
    def output_tokens_per_s(self) -> float:
        return sum(len(q.tokens_ms) for q in self.queries) / self.duration_s

    @property
    def most_in_flight(self) -> int:
        """The most queries generating at once, each from its first token to its last."""
        events = sorted((q.issued_s + ms / 1e3, change) for q in self.queries
                        for ms, change in ((q.tokens_ms[0], 1), (q.tokens_ms[-1], -1)))
        return max(itertools.accumulate(change for _, change in events), default=0)

    def percentiles_ms(self) -> dict[str, dict[str, float]]:
        """TTFT, TPOT and ITL percentiles (p50, p90, p99) from the queries' own stamps."""
        series = {"ttft": [q.ttft_ms for q in self.queries], "tpot": [q.tpot_ms for q in self.queries],
                  "itl": [gap for q in self.queries for gap in q.itl_ms]}
        return {name: {percentile_label(p): nearest_rank(values, p) for p in PERCENTILES}
                for name, values in series.items() if values}


class _Servers:
    """A dispatcher thread per server, each taking LoadGen's issued queries from one queue."""

    def __init__(self, lg, servers: Sequence[Serve], serving: DecoderServing):
        self.lg, self.samples, self.batching, self.pending = lg, serving.samples, serving.batching, queue.Queue()
        self.lock = threading.Lock()
        self.stamps: list[QueryStamps] = []
        self.batches: Counter[int] = Counter()
        self.errors: list[str] = []
        self.reply = array.array("B", [0])  # LoadGen needs a response buffer; the tokens stay in the server
        self.threads = [threading.Thread(target=self._loop, args=(serve,), daemon=True) for serve in servers]
        for thread in self.threads:
            thread.start()

    def issue(self, samples) -> None:
        issued = time.perf_counter()
        for sample in samples:
            self.pending.put(Query(sample.id, sample.index, issued))

    def _loop(self, serve: Serve) -> None:
        closing = False
        while not closing and (first := self.pending.get()) is not None:
            batching = self.batching
            batch, closing = (gather(self.pending, first, first.issued_s + batching.window_ms / 1e3,
                                     batching.max_batch) if batching is not None else ([first], False))
            self._serve(serve, batch)

    def _serve(self, serve: Serve, batch: list[Query]) -> None:
        """One request of ``batch``'s queries, each member's first token and completion reported as they exist."""
        lg, (pointer, size) = self.lg, self.reply.buffer_info()
        lengths = [self.samples[q.sample] for q in batch]
        reported: set[int] = set()

        def reached(step: int) -> None:
            if step == 1:
                lg.FirstTokenComplete([lg.QuerySampleResponse(q.id, 0, 0) for q in batch])
            finished = [lg.QuerySampleResponse(q.id, pointer, size, step)
                        for q, (_, new_tokens) in zip(batch, lengths) if new_tokens == step]
            if finished:
                lg.QuerySamplesComplete(finished)
            reported.add(step)

        try:
            tokens = serve(lengths, reached)
        except Exception as err:  # noqa: BLE001 - a dead server fails the run; LoadGen still needs the queries
            with self.lock:
                self.errors.append(str(err))
            lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, pointer, size, 2)
                                     for q, (_, new_tokens) in zip(batch, lengths) if new_tokens not in reported])
            return
        for step in sorted({1, *(new_tokens for _, new_tokens in lengths)} - reported):
            reached(step)
        with self.lock:
            self.batches[len(batch)] += 1
            self.stamps += [QueryStamps(tuple((stamp - q.issued_s) * 1e3 for stamp in tokens[:new_tokens]),
                                        q.issued_s, q.sample)
                            for q, (_, new_tokens) in zip(batch, lengths)]

    def flush(self) -> None:
        """Nothing is held back: every query is queued as it is issued."""

    def close(self) -> None:
        for _ in self.threads:
            self.pending.put(None)
        for thread in self.threads:
            thread.join()


def decoder_run(servers: Sequence[Serve], load: TokenLoad, serving: DecoderServing, qps: float,
                folder: Path) -> DecoderRun:
    """One LoadGen run offering ``qps`` to ``servers``, its logs in ``folder``, judged by the late share's bound."""
    start = time.perf_counter()
    pool, summary = run_loadgen(lambda lg: _Servers(lg, servers, serving), len(serving.samples),
                                ServerLoad(qps, load.seed, load.min_duration_s, load.min_queries,
                                           LatencyBound(load.percentile, ttft_ms=load.ttft_ms, tpot_ms=load.tpot_ms)),
                                folder)
    duration = time.perf_counter() - start
    queries, error = tuple(pool.stamps), "; ".join(dict.fromkeys(pool.errors))
    late = sum(1 for q in queries if q.late(load))
    passed = not error and summary.minimums_met and passes(late, len(queries), load.percentile, load.confidence)
    return DecoderRun(qps, summary, queries, late, passed, duration, error, dict(sorted(pool.batches.items())))


def decoder_peak(servers: Sequence[Serve], load: TokenLoad, serving: DecoderServing, search: PeakSearch,
               folder: Path) -> tuple[float, list[DecoderRun]]:
    """The highest offered QPS that passes, bisected by ``search``, and the runs."""
    bracket, runs = Bracket(0.0, search.capacity), []
    while not bracket.done(search.resolution, search.max_steps):
        run = decoder_run(servers, load, serving, bracket.qps, folder / f"step-{bracket.steps + 1}")
        runs.append(run)
        if run.error:
            break
        bracket = bracket.after(run.passed)
    return bracket.lo, runs


def decoder_estimate(servers: Sequence[Serve], load: TokenLoad, serving: DecoderServing, plan: SearchPlan,
                   folder: Path) -> tuple[Optional[Search], list[DecoderRun]]:
    """The joint estimate's search (None where a server failed), and the runs."""
    runs: list[DecoderRun] = []

    def step(qps: float, index: int, queries: int) -> tuple[list[bool], DecoderRun]:
        step_load = replace(load, seed=load.seed + index, min_queries=queries)
        runs.append(decoder_run(servers, step_load, serving, qps, folder / f"step-{index + 1}"))
        if runs[-1].error:
            raise StepFailed(runs[-1].error)
        return [q.late(load) for q in sorted(runs[-1].queries, key=lambda q: q.issued_s)], runs[-1]

    search = search_or_stop(step, plan, load.seed)
    return (None if isinstance(search, StepFailed) else search), runs
