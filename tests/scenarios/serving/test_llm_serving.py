"""LLM serving under LoadGen's token latencies (issue 26): the summary's TTFT/TPOT percentiles, a query's
stamps and lateness on either bound, and one run over an in-process stand-in. The peak search against a queue
simulation, over a stand-in decoder in worker processes: tests/scenarios/serving/test_token_serving.py; real decoders'
workers served from a config, a dead one included: tests/scenarios/serving/test_llm_server_entry.py."""

from __future__ import annotations

import time

import pytest

from trtbench.scenarios.serving.loadgen.summary import LoadGenSummary, parse_summary
from trtbench.scenarios.serving.tokens.run import QueryStamps, TokenLoad, DecoderServing, nearest_rank, decoder_run

PREFILL_S, TOKEN_S, TOKENS = 0.006, 0.0005, 9  # a query is served in 10 ms
SERVING = DecoderServing(((16, TOKENS),))  # every query at the same lengths, one at a time


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
    run = decoder_run([stand_in], load, SERVING, 40.0, tmp_path)
    assert len(run.queries) >= 20 and all(len(q.tokens_ms) == TOKENS for q in run.queries)
    assert run.summary.ttft_ms["p50"] >= PREFILL_S * 1e3 and run.summary.tpot_ms["p50"] >= TOKEN_S * 1e3 * 0.9
    assert run.summary.completed_tokens_per_s > 0 and (tmp_path / "mlperf_log_detail.txt").exists()
    own = run.percentiles_ms()
    assert own["ttft"]["p50"] >= PREFILL_S * 1e3 and own["itl"]["p50"] == pytest.approx(TOKEN_S * 1e3, abs=1.0)
    assert 0 <= run.late <= len(run.queries) and run.output_tokens_per_s == pytest.approx(run.request_per_s * TOKENS)


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
