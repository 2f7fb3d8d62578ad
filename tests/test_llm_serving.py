"""LLM serving under LoadGen's token latencies (issue 26): the summary's TTFT/TPOT percentiles, a query's
stamps and lateness on either bound, and the peak search over a stand-in that sleeps a fixed prefill and a
fixed time per token, held against a discrete-event M/D/c simulation of the same rule and bisection."""

from __future__ import annotations

import heapq
import math
import random
import statistics
import time

import pytest

from trtbench.scenarios.loadgen_summary import LoadGenSummary, parse_summary
from trtbench.scenarios.serving_rule import passes
from trtbench.scenarios.serving_search import Bracket
from trtbench.scenarios.token_loadgen import QueryStamps, TokenLoad, nearest_rank, token_peak, token_run

PREFILL_S, TOKEN_S, TOKENS = 0.006, 0.0005, 9  # a query is served in 10 ms
SERVICE_S = PREFILL_S + (TOKENS - 1) * TOKEN_S
LOAD = TokenLoad(ttft_ms=40.0, tpot_ms=5.0, min_duration_s=1.0, min_queries=230)
STEPS = 6
SAMPLES = ((16, TOKENS),)  # the query sample library: every query at the same lengths


def stand_in(lengths, reached):
    """A decoder stand-in serving one sequence: a fixed prefill, then a fixed time per token, on deadlines (no drift
    from sleeps)."""
    (_, new_tokens), = lengths
    start, stamps = time.perf_counter(), []
    for token in range(new_tokens):
        deadline = start + PREFILL_S + token * TOKEN_S
        time.sleep(max(0.0, deadline - time.perf_counter()))
        stamps.append(time.perf_counter())
        if token == 0:
            reached(1)
    reached(new_tokens)
    return stamps


def simulated_late(qps: float, workers: int, queries: int, rng: random.Random) -> int:
    """Late queries of one M/D/c run: Poisson arrivals at ``qps``, a query late when its wait plus the prefill
    is over the TTFT bound (its TPOT is the fixed per-token time, within its bound)."""
    free, now, late = [0.0] * workers, 0.0, 0
    for _ in range(queries):
        now += rng.expovariate(qps)
        start = max(now, heapq.heappop(free))
        heapq.heappush(free, start + SERVICE_S)
        late += (start - now + PREFILL_S) * 1e3 > LOAD.ttft_ms
    return late


def simulated_peak(workers: int, seed: int) -> float:
    """The search's peak on the simulated queue: the same bisection and the same pass rule, as many queries a
    step as LoadGen issues (its minimum count, or the minimum duration's worth)."""
    rng, bracket = random.Random(seed), Bracket(0.0, workers / SERVICE_S)
    while not bracket.done(0.02, STEPS):
        queries = max(LOAD.min_queries, math.ceil(bracket.qps * LOAD.min_duration_s))
        bracket = bracket.after(passes(simulated_late(bracket.qps, workers, queries, rng), queries, 0.99, 0.9))
    return bracket.lo


def test_the_summary_parser_reads_token_latencies():
    summary = parse_summary(SUMMARY_TOKENS)
    assert summary.ttft_ms["p99"] == pytest.approx(12.251497) and summary.ttft_ms["min"] == pytest.approx(5.270039)
    assert summary.tpot_ms["p50"] == pytest.approx(3.374143) and summary.tpot_ms["mean"] == pytest.approx(3.417565)
    assert summary.latency_ms["p99"] == pytest.approx(22.363955) and summary.completed_tokens_per_s == 77.67
    assert not summary.valid and not summary.constraints["Early stopping satisfied"]
    assert LoadGenSummary.from_dict(summary.to_dict()) == summary


def test_a_query_is_late_on_either_bound():
    load = TokenLoad(ttft_ms=10.0, tpot_ms=2.0)
    on_time, slow_first, slow_tokens = (QueryStamps((5.0, 6.0, 7.0)), QueryStamps((11.0, 12.0, 13.0)),
                                        QueryStamps((5.0, 8.0, 11.0)))
    assert on_time.tpot_ms == 1.0 and slow_tokens.tpot_ms == 3.0 and slow_tokens.itl_ms == [3.0, 3.0]
    assert not on_time.late(load) and slow_first.late(load) and slow_tokens.late(load)
    assert nearest_rank(list(range(1, 101)), 99) == 99 and nearest_rank([4.0], 50) == 4.0


def test_one_run_reports_first_tokens_and_token_counts_to_loadgen(tmp_path):
    load = TokenLoad(ttft_ms=40.0, tpot_ms=5.0, min_duration_s=0.5, min_queries=20)
    run = token_run([stand_in], load, 40.0, tmp_path, SAMPLES)
    assert len(run.queries) >= 20 and all(len(q.tokens_ms) == TOKENS for q in run.queries)
    assert run.summary.ttft_ms["p50"] >= PREFILL_S * 1e3 and run.summary.tpot_ms["p50"] >= TOKEN_S * 1e3 * 0.9
    assert run.summary.completed_tokens_per_s > 0 and (tmp_path / "mlperf_log_detail.txt").exists()
    own = run.percentiles_ms()
    assert own["ttft"]["p50"] >= PREFILL_S * 1e3 and own["itl"]["p50"] == pytest.approx(TOKEN_S * 1e3, abs=1.0)
    assert 0 <= run.goodput <= 1 and run.output_tokens_per_s == pytest.approx(run.request_per_s * TOKENS)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_peak_agrees_with_the_queue_simulation_of_the_same_rule(tmp_path, workers):
    """The real search's peak within the simulated searches' 5th-95th percentile range, widened by 5%
    (a single short search is noisy: its spread over seeds is wider than 5% of the peak)."""
    simulated = sorted(simulated_peak(workers, seed) for seed in range(200))
    low, high = simulated[10] * 0.95, simulated[189] * 1.05
    peak, runs = token_peak([stand_in] * workers, LOAD, workers / SERVICE_S, tmp_path, SAMPLES, max_steps=STEPS)
    assert low <= peak <= high, (peak, statistics.median(simulated), low, high)
    assert runs and all((tmp_path / f"step-{i + 1}" / "mlperf_log_summary.txt").exists() for i in range(len(runs)))


SUMMARY_TOKENS = """================================================
MLPerf Results Summary
================================================
SUT name : PySUT
Scenario : Server
Mode     : PerformanceOnly
Completed samples per second    : 18.49
Completed tokens per second: 77.67
Result is : INVALID
  Performance constraints satisfied : Yes
  Min duration satisfied : Yes
  Min queries satisfied : Yes
  Early stopping satisfied: NO
Recommendations:
TTFT Early Stopping Result:

TPOT Early Stopping Result:
 * Run unsuccessful.
 * Processed 21 queries.

================================================
Additional Stats
================================================
Scheduled samples per second : 18.76
Min latency (ns)                : 15429351
Max latency (ns)                : 22363955
Mean latency (ns)               : 16645907
50.00 percentile latency (ns)   : 15522848
99.00 percentile latency (ns)   : 22363955

Completed tokens per second                 : 77.67
Min First Token latency (ns)                : 5270039
Max First Token latency (ns)                : 12251497
Mean First Token latency (ns)               : 6393210
50.00 percentile first token latency (ns)   : 5396609
99.00 percentile first token latency (ns)   : 12251497

Min Time per Output Token (ns)                : 3369188
Max Time per Output Token (ns)                : 4282213
Mean Time per Output Token (ns)               : 3417565
50.00 percentile time to output token (ns)   : 3374143
99.00 percentile time to output token (ns)   : 4282213
"""


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    pytest.importorskip("transformers")
    from test_generate import TINY_LLAMA
    from trtbench.config.config import ModelConfig
    from trtbench.models import build_model
    from trtbench.models.hf_folder import write_model_folder

    return write_model_folder(build_model(ModelConfig(name="llama", source="transformers", task="causal-lm",
                                                      kwargs=TINY_LLAMA)), tmp_path_factory.mktemp("hf"))


def eager_recipe(folder, out_dir):
    import numpy as np
    from trtbench.build.decoder_recipe import DecoderRecipe
    from trtbench.scenarios.token_lengths import QueryLengths
    from trtbench.scenarios.token_pool import serving_requests

    teacher = np.random.default_rng(0).integers(3, 512, size=(1, 8))
    return DecoderRecipe("eager", "fp32", str(folder), str(out_dir), "cpu", 1,
                         serving_requests(QueryLengths.fixed(8, 4), 1, 512), teacher)


def test_the_eager_decoders_workers_serve_loadgen_and_a_dead_one_stops_the_search(tiny_llama, tmp_path):
    from trtbench.scenarios.token_pool import TokenPool

    load = TokenLoad(ttft_ms=2000.0, tpot_ms=200.0, min_duration_s=0.3, min_queries=8)
    with TokenPool(eager_recipe(tiny_llama, tmp_path / "build"), 1, 120.0, tmp_path / "logs") as pool:
        servers = pool.servers(30.0)
        run = token_run(servers, load, 5.0, tmp_path / "run", ((8, 4),))
        assert not run.error and len(run.queries) >= 8 and all(len(q.tokens_ms) == 4 for q in run.queries)
        assert run.summary.ttft_ms["p99"] > 0 and run.summary.tpot_ms["p99"] > 0 and run.passed is False  # < 230
        assert run.percentiles_ms()["ttft"]["p99"] < 2000 and run.goodput == 1.0
        pool.workers[0].kill()
        peak, runs = token_peak(servers, load, 10.0, tmp_path / "search", ((8, 4),))
        assert peak == 0.0 and len(runs) == 1 and "gone" in runs[0].error
