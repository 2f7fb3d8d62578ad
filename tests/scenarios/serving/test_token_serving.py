"""The LLM serving engine against a queue simulation of the same servers (issue 26's done-means): a stand-in decoder
of known times (tests/assets/sleeper_decoder.py) served by the real worker processes (DecoderPool) under LoadGen,
one at a time or in static batches gathered within a window, at fixed lengths or mixed ones (a seeded query sample
library), and the library itself.

The simulation (:func:`simulated_late`) is a discrete-event model of the same servers: FIFO dispatchers that each
take the first queued query, gather more within the window (an arriving query goes to the dispatcher that has
waited longest, idle or gathering, as the queue's getters are served), and serve the batch for the prefill plus a
per-token time that grows with the batch. A query is late on either bound. The real and the simulated search
offer the same arrivals (common random numbers): every step of :func:`decoder_peak` runs LoadGen's one schedule,
scaled to its QPS, and the simulation replays the arrivals the real first step recorded, scaled to each step's
QPS. So the two searches differ only in the servers. The simulated servers take the stand-in's times plus the
engine's own cost per request (the dispatcher, the worker's messages: about 0.5 ms here), measured at saturation
right before each search (:func:`engine_cost`), so at the load that search meets on a busy machine, since a peak
moves by more than its share of the service time (1 ms of 36 moves it 3-5%). The percentile is p50 and a step 70
queries: a tail percentile on a busy 2-core machine judges its hiccups, not the servers (the bisection and the rule are
the same at any percentile; tests/scenarios/serving/test_serving_peak.py proves them at p99 on many seeds). The bounds
put each peak where a 1 ms error in the engine's cost moves it by less than 5%.
"""

from __future__ import annotations

import dataclasses
import heapq
import statistics
from collections import deque

import numpy as np
import pytest

from sleeper_decoder import VOCAB, SleeperRecipe, SleeperTimes, write_sleeper
from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.scenarios.serving.loadgen import BatchingConfig
from trtbench.scenarios.serving.loadgen.rule import passes
from trtbench.scenarios.serving.loadgen.search import Bracket
from trtbench.scenarios.serving.tokens.lengths import QueryLengths
from trtbench.scenarios.serving.loadgen.peak_estimate import Budget, SearchPlan
from trtbench.scenarios.serving.tokens.run import (PeakSearch, TokenLoad, DecoderServing, decoder_estimate,
                                                   decoder_peak, decoder_run)
from trtbench.scenarios.serving.tokens.pool import DecoderPool, serving_requests

TIMES = SleeperTimes(prefill_s=0.018, per_token_s=0.006, batch_growth=0.5)  # steps of 6, 9, 12, 15 ms at batch 1-4
PROMPT, TOKENS = 8, 4  # a request at batch 1: 18 + 3 x 6 = 36 ms
FIXED = QueryLengths.fixed(PROMPT, TOKENS)
MIXED = QueryLengths(prompt_tokens=(4, PROMPT), new_tokens=(2, TOKENS), samples=16, seed=3)
BATCHING = BatchingConfig(max_batch=4, window_ms=10.0)
QUERIES, PERCENTILE, CONFIDENCE, STEPS, RESOLUTION = 70, 0.5, 0.9, 6, 0.02


def load(ttft_ms: float, tpot_ms: float) -> TokenLoad:
    """A step of exactly QUERIES queries (the minimum duration is below any step's)."""
    return TokenLoad(ttft_ms=ttft_ms, tpot_ms=tpot_ms, min_duration_s=0.01, min_queries=QUERIES, percentile=PERCENTILE,
                     confidence=CONFIDENCE)


def capacity(workers: int, batching: BatchingConfig | None) -> float:
    """The most queries a second the servers complete: full batches back to back."""
    batch = batching.max_batch if batching else 1
    return workers * batch / TIMES.request_s(batch, TOKENS)


def simulated_late(arrivals: list[tuple[float, int]], workers: int, batching: BatchingConfig | None,
                   bounds: TokenLoad, engine_s: float) -> int:
    """Late queries of the simulated servers (see the module docstring) offered ``arrivals`` ((s, new tokens),
    ascending), each request ``engine_s`` longer than the stand-in's times, before its prefill (the engine's own
    cost). A batch generates its members' most new tokens; each member's steps are the batch's, so its TPOT is the
    batch's step time whatever its own length."""
    max_batch, window = (batching.max_batch, batching.window_ms / 1e3) if batching else (1, 0.0)
    queued, waiting, gathering = deque(), deque(range(workers)), {}  # waiting: dispatchers in get(), longest first
    events: list[tuple[float, int, int]] = []  # (time, 0: a request ends / 1: a window ends, dispatcher)
    late = 0

    def serve(server: int, batch: list[tuple[float, int]], now: float) -> None:
        nonlocal late
        step_ms = TIMES.step_s(len(batch)) * 1e3
        late += sum((now + engine_s + TIMES.prefill_s - arrived) * 1e3 > bounds.ttft_ms or step_ms > bounds.tpot_ms
                    for arrived, _ in batch)
        longest = max(tokens for _, tokens in batch)
        heapq.heappush(events, (now + engine_s + TIMES.request_s(len(batch), longest), 0, server))

    def join(server: int, batch: list[tuple[float, int]], now: float) -> None:
        """``batch`` gathered so far by ``server``: served when full or past its window, else it waits for more."""
        if len(batch) >= max_batch or now >= batch[0][0] + window:
            gathering.pop(server, None)
            serve(server, batch, now)
            return
        if server not in gathering:
            heapq.heappush(events, (batch[0][0] + window, 1, server))
        gathering[server] = batch
        waiting.append(server)

    pending = iter(arrivals)
    arrival = next(pending, None)
    while arrival is not None or events:
        if arrival is not None and (not events or arrival[0] <= events[0][0]):
            now = arrival[0]
            if waiting:
                server = waiting.popleft()
                join(server, gathering.get(server, []) + [arrival], now)
            else:
                queued.append(arrival)
            arrival = next(pending, None)
            continue
        now, kind, server = heapq.heappop(events)
        if kind == 1:  # a window ended: the dispatcher serves what it gathered
            if server in gathering:
                waiting.remove(server)
                serve(server, gathering.pop(server), now)
        elif queued:  # a request ended: the dispatcher takes the queue's first, and what is queued behind it
            batch = [queued.popleft()]
            while len(batch) < max_batch and queued:
                batch.append(queued.popleft())
            join(server, batch, now)
        else:
            waiting.append(server)
    return late


Schedule = list[tuple[float, int]]  # LoadGen's arrivals at 1 QPS (s, ascending), each with its query's new tokens


def offered(schedule: Schedule, qps: float) -> list[tuple[float, int]]:
    """The arrivals (s, new tokens) of ``schedule`` scaled to ``qps``."""
    return [(at / qps, tokens) for at, tokens in schedule]


def simulated_peak(schedule: Schedule, workers: int, batching: BatchingConfig | None, bounds: TokenLoad,
                   engine_s: float, top_qps: float) -> float:
    """The search's peak over the simulated servers: the same bisection and pass rule, each step offered
    ``schedule`` scaled to its QPS."""
    bracket = Bracket(0.0, top_qps)
    while not bracket.done(RESOLUTION, STEPS):
        late = simulated_late(offered(schedule, bracket.qps), workers, batching, bounds, engine_s)
        bracket = bracket.after(passes(late, len(schedule), PERCENTILE, CONFIDENCE))
    return bracket.lo


def first_schedule(run, samples) -> Schedule:
    """LoadGen's schedule at 1 QPS as ``run`` offered it, each query with its new tokens (``samples``' lengths)."""
    queries = sorted(run.queries, key=lambda q: q.issued_s)
    return [((q.issued_s - queries[0].issued_s) * run.qps, samples[q.sample][1]) for q in queries]


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    """Two workers hosting the stand-in, with a request for every batch size and every length of MIXED."""
    folder = tmp_path_factory.mktemp("sleeper")
    recipe = SleeperRecipe("sleeper", "fp32", str(write_sleeper(folder / "model", TIMES)), str(folder / "build"), "cpu",
                           1, serving_requests(MIXED, BATCHING.max_batch, VOCAB), np.zeros((1, 4), dtype=np.int64))
    with DecoderPool(recipe, 2, 120.0, folder / "logs") as served:
        yield served


def engine_cost(pool, workers: int, folder) -> float:
    """The engine's own cost per request (the dispatchers' queue, the worker's messages) as this machine runs it now:
    ``workers`` workers offered three times what they can serve work back to back, and each one's request ends this
    much later than the stand-in's times alone would (the median span of ``workers`` consecutive ends)."""
    run = decoder_run(pool.servers(30.0)[:workers], dataclasses.replace(load(1e6, 1e6), min_queries=30),
                      DecoderServing(((PROMPT, TOKENS),)), 3 * capacity(workers, None), folder)
    ends = np.sort([q.issued_s + q.tokens_ms[-1] / 1e3 for q in run.queries])
    return max(0.0, float(np.median(ends[workers:] - ends[:-workers])) - TIMES.request_s(1, TOKENS))


CASES = {  # workers, batching, (TTFT, TPOT bounds in ms), lengths: which bound binds
    "2 workers, TTFT binds": (2, None, (36.0, 15.0), FIXED),
    "1 worker batching, TTFT binds": (1, BATCHING, (60.0, 20.0), FIXED),
    "2 workers batching, TPOT binds": (2, BatchingConfig(max_batch=2, window_ms=10.0), (500.0, 8.0), FIXED),  # at b2
    "2 workers batching mixed lengths, TTFT binds": (2, BATCHING, (45.0, 20.0), MIXED),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_stand_ins_peak_is_the_simulated_servers_peak_within_5_percent(pool, tmp_path, case):
    workers, batching, bounds, lengths = CASES[case]
    bounds, samples = load(*bounds), lengths.draw()
    top = capacity(workers, batching)  # the bracket's top: above either search's peak at any of these lengths
    tries = []
    for attempt in range(3):  # a step at the boundary passes or fails by a query or two of a busy machine's jitter:
        # another search settles a miss that is noise; a real bias misses every time. The engine's cost is measured
        # right before each search, so that the simulated servers run at the load the real ones meet
        (tmp_path / f"engine{attempt}").mkdir()
        engine_s = engine_cost(pool, workers, tmp_path / f"engine{attempt}")
        peak, runs = decoder_peak(pool.servers(30.0)[:workers], bounds, DecoderServing(samples, batching),
                                PeakSearch(top, RESOLUTION, STEPS), tmp_path / str(attempt))
        assert not any(run.error for run in runs) and all(len(run.queries) == QUERIES for run in runs)
        schedule = first_schedule(runs[0], samples)
        tokens = [n for _, n in schedule]
        assert all([n for _, n in first_schedule(run, samples)] == tokens for run in runs), "every step draws " \
            "LoadGen's one sequence of samples"
        simulated = simulated_peak(schedule, workers, batching, bounds, engine_s, top)
        tries.append((engine_s, peak, simulated, [(round(run.qps, 1), run.late, run.passed, simulated_late(
            offered(schedule, run.qps), workers, batching, bounds, engine_s)) for run in runs]))
        if peak == pytest.approx(simulated, rel=0.05):
            break
    assert peak == pytest.approx(simulated, rel=0.05), (case, tries)
    if batching is not None:
        assert max(max(run.batches) for run in runs) > 1, "the servers gathered batches"
    if batching is not None and bounds.tpot_ms < TIMES.step_s(batching.max_batch) * 1e3:
        late = [q for run in runs for q in run.queries if q.late(bounds)]
        assert late and all(q.ttft_ms <= bounds.ttft_ms for q in late), "the TPOT bound binds, not the TTFT"


def test_every_step_offers_loadgens_one_schedule_scaled_to_its_qps(pool, tmp_path):
    """The common random numbers the comparison rests on: two runs at different QPS, seeded alike, issue
    the same arrivals at 1 QPS (within the issue thread's jitter)."""
    bounds = dataclasses.replace(load(1000.0, 100.0), seed=7)
    servers = pool.servers(30.0)
    schedules = []
    for qps in (40.0, 80.0):
        run = decoder_run(servers, bounds, DecoderServing(((PROMPT, TOKENS),)), qps, tmp_path / str(qps))
        issued = np.sort([q.issued_s for q in run.queries])
        schedules.append((issued - issued[0]) * qps)
    assert statistics.median(np.abs(schedules[0] - schedules[1])) < 0.1  # of a mean gap of 1 at 1 QPS


def test_mixed_lengths_each_query_serves_its_sample_in_batches(pool, tmp_path):
    """Each query gets its sample's lengths and LoadGen its own token count, completed at its own last step: a
    short member of a longer batch is not held to the batch's end (LoadGen's TPOT would triple for it)."""
    samples = MIXED.draw()
    run = decoder_run(pool.servers(30.0), load(1000.0, 100.0), DecoderServing(samples, BATCHING), 60.0, tmp_path)
    assert not run.error and len(run.queries) == QUERIES and max(run.batches) > 1
    assert all(len(q.tokens_ms) == samples[q.sample][1] for q in run.queries), "each query has its own n_tokens"
    assert {samples[q.sample] for q in run.queries} == set(samples)
    mean_tokens = statistics.mean(len(q.tokens_ms) for q in run.queries)
    assert run.summary.completed_tokens_per_s / run.summary.completed_qps == pytest.approx(mean_tokens, rel=0.03)
    # LoadGen stamps a token when the dispatcher reports it: on a busy machine a report can come a few ms late, of
    # steps of 6-15 ms, so LoadGen's mean TPOT strays from the stamps' by 10-15% (CI saw 9.6 ms against 11.2). A
    # member held to its batch's end would have its TPOT up to tripled, and a first token reported at the end a TPOT
    # near 0: LoadGen's mean lies nearer the stamps' than the held one's, and above half of it. A batch's members
    # share its step stamps, so a query's batch is the queries whose first token came at the same instant.
    firsts = [round(q.issued_s * 1e3 + q.tokens_ms[0], 3) for q in run.queries]  # each query's batch
    last_step: dict[float, float] = {}
    for q, first in zip(run.queries, firsts):
        last_step[first] = max(last_step.get(first, 0.0), q.issued_s * 1e3 + q.tokens_ms[-1])
    own = statistics.mean(q.tpot_ms for q in run.queries)
    held = statistics.mean((last_step[first] - q.issued_s * 1e3 - q.tokens_ms[0]) / (len(q.tokens_ms) - 1)
                           for q, first in zip(run.queries, firsts))
    assert held > 1.2 * own, f"held to the batch's end {held:.2f} ms against {own:.2f} ms: the test cannot tell"
    assert own / 2 < run.summary.tpot_ms["mean"] < (own + held) / 2, (run.summary.tpot_ms["mean"], own, held)


def test_the_query_sample_library_follows_the_seeded_spec():
    spec = schema.from_dict(QueryLengths, {"prompt_tokens": [32, 64, 128], "samples": 2000, "seed": 5,
                                           "new_tokens": {"distribution": "lognormal", "median": 32, "sigma": 0.5,
                                                          "low": 8, "high": 128, "step": 8}}, "lengths")
    drawn = spec.draw()
    assert drawn == spec.draw() and drawn != QueryLengths(**{**spec.__dict__, "seed": 6}).draw()
    prompts, news = zip(*drawn)
    assert len(drawn) == 2000 and set(prompts) == {32, 64, 128}
    assert all(prompts.count(p) == pytest.approx(2000 / 3, rel=0.1) for p in (32, 64, 128))
    assert set(news) <= set(range(8, 129, 8)) and statistics.median(news) == pytest.approx(32, abs=8)
    assert spec.values("new_tokens") == tuple(range(8, 129, 8)) and spec.longest == 256
    uniform = schema.from_dict(QueryLengths, {"prompt_tokens": 16, "samples": 400,
                                              "new_tokens": {"distribution": "uniform", "low": 4, "high": 16,
                                                             "step": 4}}, "lengths")
    assert set(n for _, n in uniform.draw()) == {4, 8, 12, 16} and {p for p, _ in uniform.draw()} == {16}
    assert QueryLengths.fixed(128, 64).draw() == ((128, 64),)
    requests = serving_requests(MIXED, 2, VOCAB)
    assert len(requests) == 2 * 2 * 2 and requests["serve b2 p4 n2"][0].shape == (2, 4)


@pytest.mark.parametrize("lengths, key, words", [
    ({"prompt_tokens": 16, "new_tokens": 1}, "lengths.new_tokens", "below 2"),
    ({"prompt_tokens": [], "new_tokens": 4}, "lengths.prompt_tokens", "non-empty list"),
    ({"prompt_tokens": 16, "new_tokens": "many"}, "lengths.new_tokens", "a token count"),
    ({"prompt_tokens": 16, "new_tokens": 4, "samples": 0}, "lengths.samples", "must be positive"),
    ({"prompt_tokens": 16, "new_tokens": list(range(2, 40))}, "lengths.new_tokens", "38 distinct lengths"),
    ({"prompt_tokens": {"distribution": "zipf", "low": 1, "high": 8}, "new_tokens": 4},
     "lengths.prompt_tokens.distribution", "unknown value 'zipf'"),
    ({"prompt_tokens": {"distribution": "lognormal", "low": 1, "high": 8, "sigma": 1.0}, "new_tokens": 4},
     "lengths.prompt_tokens.median", "required by the lognormal"),
    ({"prompt_tokens": {"distribution": "uniform", "low": 1, "high": 8, "sigma": 1.0}, "new_tokens": 4},
     "lengths.prompt_tokens.sigma", "only to the lognormal"),
    ({"prompt_tokens": 16, "new_tokens": {"distribution": "uniform", "low": 8, "high": 4}},
     "lengths.new_tokens.high", "below low"),
    ({"prompt_tokens": {"distribution": "uniform", "low": 1, "high": 512}, "new_tokens": 4},
     "lengths.prompt_tokens.step", "step: 35"),
    ({"prompt_tokens": 16, "new_tokens": {"distribution": "uniform", "low": 1, "high": 8}},
     "lengths.new_tokens", "below 2"),
    ({"prompt_tokens": 16, "new_tokens": 4, "sead": 1}, "lengths.sead", "did you mean 'seed'"),
])
def test_a_bad_length_spec_names_its_key_and_the_fix(lengths, key, words):
    with pytest.raises(UserInputError) as caught:
        schema.from_dict(QueryLengths, lengths, "lengths")
    assert caught.value.where == key and words in str(caught.value) and caught.value.hint, str(caught.value)


def test_the_joint_estimate_over_token_latencies_steps_each_on_its_own_schedule(pool, tmp_path):
    """The default rule beside generate (decoder_estimate, which the serving stage runs), on the stand-in's two workers
    at a TTFT bound that binds, with a small budget: each step a LoadGen run of its own schedule, a query late by
    either bound in issue order, the peak within the interval, the confirming run at its low end, the budget kept.
    How close the estimate comes: tests/scenarios/serving/test_serving_peak.py (the same search on simulated queues)."""
    bounds, top = load(36.0, 15.0), capacity(2, None)
    plan = SearchPlan(1 - PERCENTILE, top, QUERIES, 0.01, RESOLUTION, Budget(8 * QUERIES))
    search, runs = decoder_estimate(pool.servers(30.0)[:2], bounds, DecoderServing(((PROMPT, TOKENS),)), plan, tmp_path)
    assert search is not None and not any(run.error for run in runs)
    assert search.queries == sum(len(run.queries) for run in runs) <= 8 * QUERIES
    assert len(runs) == len(search.steps) + (search.confirm is not None) and len(runs) >= 4
    schedules = {tuple(round(t, 6) for t, _ in first_schedule(run, [(PROMPT, TOKENS)])[1:4]) for run in runs}
    assert len(schedules) == len(runs), "every step offers a schedule of its own"
    for step, run in zip(search.steps, runs):
        issued = sorted(run.queries, key=lambda q: q.issued_s)
        assert step.late.tolist() == [q.late(bounds) for q in issued] and step.qps == run.qps
    estimate = search.estimate
    assert 0 < estimate.low <= estimate.value <= estimate.high and estimate.value < top and estimate.level == 0.9
    if search.confirm is not None:
        assert search.confirm.qps == estimate.low and search.confirm.run is runs[-1]
