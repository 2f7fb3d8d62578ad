"""The one LoadGen core both kinds of serving stand on (trtbench/scenarios/serving/loadgen/): one TestSettings for a
latency bound or token latencies, one LogSettings with the trace off, and one run that constructs, starts and destroys
LoadGen's SUT and sample library, closes the session and keeps the summary and the detail only."""

from __future__ import annotations

import dataclasses

import pytest

lg = pytest.importorskip("mlperf_loadgen")

from trtbench.scenarios.serving.loadgen import KEPT_LOGS, LatencyBound, ServerLoad, loadgen_settings, log_settings, run_loadgen  # noqa: E402,E501


def test_a_latency_bound_and_token_latencies_set_loadgens_server_settings():
    vision = loadgen_settings(lg, ServerLoad(40.0, 7, 2.5, 300, LatencyBound(0.99, latency_ms=25.0)))
    assert vision.scenario == lg.TestScenario.Server and vision.mode == lg.TestMode.PerformanceOnly
    assert (vision.server_target_qps, vision.server_target_latency_ns, vision.server_target_latency_percentile) == \
        (40.0, 25_000_000, 0.99)
    assert (vision.min_duration_ms, vision.min_query_count, vision.schedule_rng_seed) == (2500, 300, 7)
    assert not vision.use_token_latencies
    tokens = loadgen_settings(lg, ServerLoad(3.0, 0, 1.0, 50, LatencyBound(0.9, ttft_ms=2000.0, tpot_ms=200.0)))
    assert tokens.use_token_latencies and (tokens.ttft_latency, tokens.tpot_latency) == (2_000_000_000, 200_000_000)
    assert tokens.server_target_latency_percentile == 0.9


def test_both_kinds_log_without_the_trace(tmp_path):
    logs = log_settings(lg, tmp_path)
    assert logs.enable_trace is False
    assert logs.log_output.outdir == str(tmp_path) and logs.log_output.copy_summary_to_stdout is False


class AnswersAtOnce:
    """A session that completes every query as it is issued, and says when it was closed."""

    def __init__(self, lg):
        self.lg, self.issued, self.closed = lg, 0, False

    def issue(self, samples) -> None:
        self.issued += len(samples)
        self.lg.QuerySamplesComplete([self.lg.QuerySampleResponse(s.id, 0, 0) for s in samples])

    def flush(self) -> None:
        """Nothing is held back."""

    def close(self) -> None:
        self.closed = True


def test_a_run_closes_its_session_and_keeps_the_summary_and_detail_only(tmp_path):
    folder = tmp_path / "run"
    load = ServerLoad(500.0, 0, 0.1, 64, LatencyBound(0.9, latency_ms=1000.0))
    session, summary = run_loadgen(AnswersAtOnce, 1, load, folder)
    assert session.closed and session.issued >= 64
    assert sorted(p.name for p in folder.iterdir()) == sorted(KEPT_LOGS)
    assert summary.minimums_met and summary.completed_qps, summary


def test_both_kinds_plan_the_joint_estimate_from_their_shared_settings():
    from trtbench.scenarios.serving.loadgen.peak_estimate import Budget, SearchPlan
    from trtbench.scenarios.serving.loadgen import LoadSettings

    settings = LoadSettings(percentile=0.9, find_peak=True, min_duration_s=2.0, resolution=0.05,
                            search_queries=4000, search_minutes=1.5)
    plan = settings.search_plan(120.0)
    assert dataclasses.replace(plan, verdict_queries=None) == SearchPlan(pytest.approx(0.1), 120.0, 500, 2.0, 0.05,
                                                                         Budget(4000, 90.0))
    # the confirming run: LoadGen's early stopping at the settings' percentile (p90: 44 queries with none late)
    assert plan.verdict_queries(0.0) == 44 and plan.confirm_queries(60.0, 0.0) == 500
    assert plan.confirm_queries(60.0, 0.08) > 1000 and plan.confirm_queries(60.0, 0.1) is None
    assert LoadSettings(find_peak=True).search_plan(10.0).budget == Budget(10_000, None)
