"""The serving scenario under MLPerf LoadGen: queueing theory, LoadGen's verdict, lost queries, config.

A toy model that sleeps a fixed time per call is served by worker processes, in short runs: the
machine is shared. The peak search's rule and bisection against the M/D/c queue:
tests/scenarios/serving/test_serving_peak.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal

import pytest

from conftest import run_dict
from helpers.serving import BOUND_MS, CALL_S, SUMMARY_INVALID, serve_sleeper
from trtbench.scenarios.serving.vision.report import serving_of
from trtbench.cli import main
from trtbench.core.record import Record
from trtbench.results.resultset import ResultSet
from trtbench.scenarios.serving.loadgen.summary import parse_summary, read_summary
from trtbench.scenarios.serving.vision.run import ServingWorkers, run_serving
from trtbench.scenarios.serving.loadgen import BatchingConfig
from trtbench.scenarios.serving.vision.config import ServingConfig
from trtbench.scenarios.serving.vision.result import ServingResult
from trtbench.scenarios.serving.loadgen.rule import late_count, passes
from toy_runtimes import SleepsPerCall


def test_a_peak_search_with_one_and_two_workers_runs_loadgen_and_keeps_its_peaks(tmp_path):
    """How close the peaks come to the M/D/c queue's is a matter of an idle machine and long steps:
    benchmarks/serving_peak.py prints it, and tests/scenarios/serving/test_serving_peak.py proves the rule and the
    search on the queue simulated. Here one short search per worker count (at p90, where 22 queries can pass), on a
    machine as busy as CI's, and what must hold whatever the load: each search ran under LoadGen, judged its steps by
    the rule, kept its peak and logs, and no peak exceeds the workers' capacity."""
    settings = ServingConfig(p99_ms=BOUND_MS, percentile=0.9, find_peak=True, min_duration_s=0.8, min_queries=40,
                             workers=[1, 2], threads=1, repeats=1, search_steps=4, validity="bound")
    for result in serve_sleeper(tmp_path, settings):
        assert result.status == "ok", result.reason
        assert result.peak_rule == "late-share-bound/1 at 0.9" and len(result.peaks) == 1 and len(result.runs) <= 4
        assert result.service_ms >= CALL_S * 1e3  # the sleep, and a round trip to the worker
        assert 0 <= result.peak_qps <= result.workers / CALL_S
        for run in result.runs:
            late = late_count(run.latencies_ms, BOUND_MS)
            judged = passes(late, len(run.latencies_ms), 0.9, 0.9)
            assert run.within_bound == (run.summary.minimums_met and run.summary.performance_met and judged)
            assert len(run.service_ms) == len(run.latencies_ms) and min(run.service_ms) >= CALL_S * 1e3, "each call"
            assert all(s <= ms for s, ms in zip(run.service_ms, run.latencies_ms)), "a query's call is in its latency"
        peak = result.peak_run
        assert peak is None if result.peak_qps == 0 else peak.offered_qps == result.peak_qps and peak.within_bound
        assert (tmp_path / result.runs[0].log_dir / "mlperf_log_detail.txt").is_file()
        assert result.batch_histogram == {1: sum(len(r.latencies_ms) for r in result.runs)}


def test_the_joint_estimate_runs_its_steps_under_loadgen_and_confirms_at_its_low_end(tmp_path):
    """The default rule on the sleeper at 1 worker (each further worker only imports torch again), with short steps
    and a small budget (a p90 bound, where a few dozen queries show a late share): every step a LoadGen run of its
    own schedule, the peak with its interval, LoadGen's verdict on the confirming run at the low end, the budget
    kept, and every query's late flag in issue order. How close the peak comes to the queue's:
    tests/scenarios/serving/test_serving_peak.py (simulated), benchmarks/."""
    settings = ServingConfig(p99_ms=BOUND_MS, percentile=0.9, find_peak=True, min_duration_s=0.3, min_queries=40,
                             workers=[1], threads=1, search_queries=480)
    assert settings.peak_rule == "joint-estimate/1 at 90%" and settings.estimates
    (result,) = serve_sleeper(tmp_path, settings)
    assert result.status == "ok", result.reason
    interval, runs = result.interval, result.runs
    assert result.peak_rule == settings.peak_rule and len(result.peaks) == 1 and interval is not None
    assert interval.stopped_by in ("budget", "resolution")
    assert interval.queries == sum(len(r.latencies_ms) for r in runs)
    assert interval.queries <= 480 + 2 * 40, "LoadGen may issue a few more than its minimum"
    assert len({run.log_dir for run in runs}) == len(runs) and [r.repeat for r in runs] == list(range(len(runs)))
    estimate = interval.estimate
    if interval.verdict is not None:
        confirm = runs[-1]
        needed = interval.needs.queries
        assert needed >= 44 and len(confirm.latencies_ms) >= needed, "sized for LoadGen's early stopping (p90: 44)"
        assert confirm.confirm and confirm.offered_qps == estimate.low and result.peak_run == confirm
        assert interval.verdict.valid == confirm.summary.valid == confirm.within_bound
        late = late_count(confirm.latencies_ms, BOUND_MS) / len(confirm.latencies_ms)
        assert interval.verdict.late_share == pytest.approx(late)
    assert 0 <= estimate.low <= result.peak_qps <= estimate.high or result.peak_qps == 0
    assert estimate.value == result.peak_qps and result.peak_interval == estimate
    for run in runs:
        assert run.late_flags(BOUND_MS) == [ms > BOUND_MS for ms in run.latencies_ms]
    stored = json.loads(json.dumps(result.to_dict()))
    assert ServingResult.from_dict(stored).to_dict() == stored and stored["interval"]["low"] == estimate.low
    assert ServingResult.from_dict(stored).interval.estimate == estimate, "its value: the peak beside it"
    # the report: the peak with its interval, the queries and minutes, the stop and LoadGen's verdict; the plot
    from helpers.records import two_variant_set
    from helpers.plots import save_plots
    from trtbench.report.late_share import late_share_plot
    from trtbench.scenarios.serving.vision.report import serving_markdown, share_panels
    from trtbench.scenarios.serving.vision.result import ServedCase

    results = two_variant_set("env-a")
    results.add(ServedCase(next(iter(results)).case.key, "env-a", (result,)))
    table = serving_markdown(results, [])
    assert f"| {interval.text()} |" in table and "queries, " in table
    assert "| joint-estimate/1 at 90% |" in table
    median, p99, largest = result.service_tail_ms
    assert CALL_S * 1e3 <= median <= p99 <= largest and f"| {median:.2f} / {p99:.2f} / {largest:.2f} |" in table
    assert f"stopped by {interval.stopped_by}" in table
    assert "LoadGen VALID at" in table or "LoadGen INVALID at" in table or "no confirming run" in table
    plot = late_share_plot(share_panels(results), "late.png")
    assert plot is not None and save_plots(tmp_path, [plot])[0].stat().st_size > 10_000


def test_batched_run_loadgen_says_valid_and_the_summary_is_parsed(tmp_path):
    # a lax bound at the 90th percentile: LoadGen's early stopping needs ~45 queries, all in time
    settings = ServingConfig(p99_ms=300, percentile=0.9, target_qps=120, min_duration_s=1.0, min_queries=60,
                             repeats=1, validity="loadgen", batching=BatchingConfig(max_batch=4, window_ms=20))
    hosts = ServingWorkers(lambda threads: SleepsPerCall(0.02, max_batch=4), default_threads=1, start_timeout_s=120.0)
    (result,) = run_serving(hosts, settings, tmp_path, "toy")
    assert result.status == "ok", result.reason
    (run,) = result.runs
    text = (tmp_path / run.log_dir / "mlperf_log_summary.txt").read_text()
    assert "Result is : VALID" in text
    assert run.summary == read_summary(tmp_path / run.log_dir)
    assert run.summary.valid and run.within_bound and run.summary.performance_met and run.summary.minimums_met
    assert run.summary.scheduled_qps == pytest.approx(120, rel=0.3)
    lat = run.summary.latency_ms
    assert 20.0 <= lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99.9"] <= lat["max"]
    assert sorted(p.name for p in (tmp_path / run.log_dir).iterdir()) == ["mlperf_log_detail.txt",
                                                                          "mlperf_log_summary.txt"]
    # queries were gathered: calls of up to 4, every query in one of them
    histogram = result.batch_histogram
    assert set(histogram) <= {1, 2, 3, 4} and max(histogram) > 1
    assert sum(size * calls for size, calls in histogram.items()) == len(run.latencies_ms) >= 60


def test_a_bound_below_the_service_time_gives_peak_zero_without_load_runs(tmp_path):
    settings = ServingConfig(p99_ms=5, find_peak=True, min_duration_s=1.0, min_queries=10, repeats=2)
    hosts = ServingWorkers(lambda threads: SleepsPerCall(0.02), default_threads=1, start_timeout_s=120.0)
    (result,) = run_serving(hosts, settings, tmp_path, "toy")
    assert result.status == "ok" and result.peaks == (0.0, 0.0) and not result.runs
    assert result.service_ms >= 20 and "no load fits" in result.reason


def test_summary_parser_reads_an_invalid_run():
    summary = parse_summary(SUMMARY_INVALID)
    assert not summary.valid and summary.performance_met and not summary.constraints["Early stopping satisfied"]
    assert summary.completed_qps == 36.56 and summary.scheduled_qps == 36.74
    assert summary.latency_ms["p99"] == pytest.approx(32.809624)
    assert summary.latency_ms["p50"] == pytest.approx(10.574078)


def test_a_query_that_never_completes_is_reported_lost_and_the_run_ends(tmp_path):
    settings = ServingConfig(p99_ms=BOUND_MS, target_qps=40, min_duration_s=1.0, min_queries=10, repeats=2,
                             query_timeout_s=1.0)
    # the service time takes 5 calls; the 8th hangs
    hosts = ServingWorkers(lambda threads: SleepsPerCall(0.002, hang_from=8), default_threads=1, start_timeout_s=120.0)
    (result,) = run_serving(hosts, settings, tmp_path, "toy")
    assert result.status == "failed" and "lost" in result.reason and "within 1 s" in result.reason
    (run,) = result.runs  # the run ended, and no repeat followed
    assert run.lost >= 1 and not run.within_bound
    assert len(run.latencies_ms) == 2  # the queries answered before the hang
    flags = run.late_flags(BOUND_MS)  # in issue order, a lost query late wherever it was issued
    assert len(flags) == 2 + run.lost and len(run.lost_at) == run.lost and all(flags[i] for i in run.lost_at)
    assert min(run.lost_at) == 2, "the first query after those answered hung"


def test_a_worker_killed_during_the_peak_search_stops_it_and_keeps_the_peak_found_before(tmp_path):
    """2 workers; one is SIGKILLed after the search's first step passed (a bound no step misses): the result
    fails naming the dead worker, the search stops there, and the load that passed is kept as its peak."""
    pids = tmp_path / "pids"
    pids.mkdir()
    steps = []

    def progress(text):
        steps.append(text)
        if len(steps) == 2:  # the first step is done: kill one worker, between LoadGen runs
            os.kill(int(min(path.name for path in pids.iterdir())), signal.SIGKILL)

    settings = ServingConfig(p99_ms=5000, percentile=0.9, find_peak=True, min_duration_s=0.5, min_queries=30,
                             workers=[2], threads=1, repeats=2, search_steps=4, validity="bound")
    hosts = ServingWorkers(lambda threads: SleepsPerCall(CALL_S, pid_dir=str(pids)), default_threads=2,
                           start_timeout_s=120.0)
    (result,) = run_serving(hosts, settings, tmp_path / "out", "toy", progress)
    assert len(list(pids.iterdir())) == 2
    assert result.status == "failed"
    assert "server worker " in result.reason and "died during 'call' (killed by signal 9)" in result.reason
    assert len(steps) == 2 and len(result.runs) == 2, "the search stopped at the fault"
    passed, faulted = result.runs
    assert passed.within_bound and faulted.lost >= 1 and not faulted.within_bound
    assert result.peaks == (passed.offered_qps,) and result.peak_run == passed
    assert "the peak search stopped early, at step 2 (of at most 4) of search 1 of 2" in result.reason
    assert f"{passed.offered_qps:.1f} QPS (a lower bound" in result.reason


def test_a_failed_serving_result_fails_the_run_and_is_named_in_the_notes():
    from helpers.records import record
    from trtbench.core.status import Status
    from trtbench.report.tables import failed_part_notes
    from trtbench.scenarios.serving.vision.result import ServedCase, ServingResult

    eager = record("eager", 10.0)
    results = ResultSet(environments={"env-a": {"id": "env-a"}})
    results.add(eager)
    ok = ServingResult(loadgen_scenario="server", workers=1, threads=2, bound_ms=40.0, percentile=0.99, peaks=(50.0,))
    results.add(ServedCase(eager.case.key, "env-a", (ok,)))
    assert results.exit_code() == 0
    failed = ServingResult(loadgen_scenario="server", workers=2, threads=1, bound_ms=40.0, percentile=0.99,
                           peaks=(98.5,),
                           status=Status.FAILED, reason="1 query(ies) lost at 147.7 QPS offered: server worker 0's "
                                                        "worker died during 'call' (killed by signal 9)")
    results.add(ServedCase(eager.case.key, "env-a", (ok, failed)))
    assert results.exit_code() == 1 and results.exit_code(interrupted=True) == 130
    (note,) = failed_part_notes(results)  # in the report's Failures section and the command line's output
    assert note.startswith("m eager fp32 served w2 x t1: failed: 1 query(ies) lost at 147.7 QPS")


SERVER = {"p99_ms": 40, "find_peak": True, "workers": [1, 2]}


@pytest.mark.parametrize("scenarios, key, fragment", [
    (["latency", {"serving": {**SERVER, "p99_ms": -1}}], "scenarios[1].serving.p99_ms", "must be positive"),
    (["latency", {"serving": {**SERVER, "workers": [1, 1]}}], "scenarios[1].serving.workers", "duplicates"),
    (["latency", {"serving": {**SERVER, "workers": [0]}}], "scenarios[1].serving.workers[0]", "must be positive"),
    (["latency", {"serving": {**SERVER, "percentile": 99}}], "scenarios[1].serving.percentile", "between 0 and 1"),
    (["latency", {"serving": {**SERVER, "target_qps": 10}}], "scenarios[1].serving", "exactly one of"),
    (["latency", {"serving": {**SERVER, "qps": 10}}], "scenarios[1].serving.qps", "unknown key"),
    (["latency", {"serving": {**SERVER, "validity": "strict"}}], "scenarios[1].serving.validity", "unknown value"),
    (["latency", {"serving": {**SERVER, "validity": "bound", "min_queries": 100}}], "scenarios[1].serving.min_queries",
     "too few for any step of the peak search to pass: with none late, the late share's upper bound at confidence 0.9 "
     "reaches 0.01 from 230 queries"),
    (["latency", {"serving": {**SERVER, "search_queries": 600}}], "scenarios[1].serving.search_queries",
     "600 queries cannot hold a step and its confirming run of 500 queries each"),
    (["latency", {"serving": {**SERVER, "search_minutes": 0}}], "scenarios[1].serving.search_minutes",
     "must be positive"),
    (["latency", {"serving": {**SERVER, "confidence": 1}}], "scenarios[1].serving.confidence", "between 0 and 1"),
    (["latency", {"serving": {**SERVER, "resolution": 0}}], "scenarios[1].serving.resolution", "between 0 and 1"),
    (["latency", {"serving": {**SERVER, "batching": {"max_batch": 8}}}], "scenarios[1].serving.batching.max_batch",
     "batch range [1, 4]"),
    (["latency", {"servng": SERVER}], "scenarios[1]", "did you mean 'serving'"),
    (["latency", {"server": SERVER}], "scenarios[1]", "the 'server' scenario is now called 'serving'"),
    ([{"serving": SERVER}], "scenarios[0]", "needs the 'latency' scenario before it"),
    ("latency", "scenarios", "non-empty list"),
])
def test_bad_scenarios_exit_2_naming_the_key(tiny_config, write_config, capsys, scenarios, key, fragment):
    code = main(["--config", str(write_config({**tiny_config, "scenarios": scenarios}))])
    err = capsys.readouterr().err
    assert code == 2 and f"{key}: " in err and fragment in err and "fix:" in err, err


def test_an_entry_under_the_former_name_server_names_the_new_one_and_exits_2(tiny_config, write_config, capsys):
    code = main(["--config", str(write_config({**tiny_config, "scenarios": ["latency", {"server": SERVER}]}))])
    err = capsys.readouterr().err
    assert code == 2 and "scenarios[1]: the 'server' scenario is now called 'serving'" in err, err
    assert "fix: rename the entry to 'serving', with the same settings: e.g. {serving: {p99_ms: 40" in err, err


def test_serving_without_loadgen_exits_2_naming_the_extra(tiny_config, write_config, capsys, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "mlperf_loadgen" else find_spec(name, *args))
    code = main(["--config", str(write_config({**tiny_config, "scenarios": ["latency", {"serving": SERVER}]}))])
    err = capsys.readouterr().err
    assert code == 2 and "scenarios[1].serving" in err and "pip install 'trtbench[serving]'" in err, err


def test_a_run_serves_each_accurate_variant_and_its_int8_rows_from_the_quantized_file_at_the_servers_threads(
        tiny_config, tmp_path):
    """latency + serving on a tiny model with eager and ort at fp32 and int8: each record has its serving results
    (through results.json), the report has the serving table, plot and recommendation, and LoadGen's logs are kept.
    An int8 row is served like a float one: its workers load the quantized .onnx the run saved (a quantized
    build is never redone in a worker), set up for the server's threads (1 worker x 1 thread, in a run at 2
    threads: one worker per row is enough to show it, as each further worker only imports torch again), and the
    report's serving table has its precision."""
    data = {**tiny_config, "variants": ["eager", "ort"], "precisions": ["fp32", "int8"],
            "calibration": {"source": "random", "samples": 8, "eval_samples": 4},
            "tolerances": {"int8": {"top1_agree_min": 0.0, "sqnr_db_min": -1000.0}},  # random weights: not judged
            "output": {"dir": str(tmp_path / "run"), "save_artifacts": False, "cold_start": False}}
    data["benchmark"] = {**data["benchmark"], "shapes": ["opt"], "threads": 2}
    data["scenarios"] = ["latency", {"serving": {"p99_ms": 200, "target_qps": 50, "min_duration_s": 0.5,
                                                "min_queries": 10, "workers": [1], "threads": 1, "repeats": 1}}]
    assert run_dict(data).exit_code == 0
    loaded = ResultSet.load(tmp_path / "run")
    served = {(r.case.variant, r.case.precision): serving_of(loaded, r) for r in loaded if serving_of(loaded, r)}
    assert set(served) == {("eager", "fp32"), ("ort", "fp32"), ("ort", "int8")}, "eager int8 is skipped, not served"
    for (variant, precision), (result,) in served.items():
        assert result.status == "ok" and result.workers == 1 and result.threads == 1, result.reason
        (run,) = result.runs
        assert run.offered_qps == 50 and run.summary.latency_ms["p99"] > 0 and len(run.latencies_ms) >= 10
        assert run.log_dir.startswith(f"serving/python-toy_models-tiny_cnn_{variant}_{precision}_w1/")
        assert (tmp_path / "run" / run.log_dir / "mlperf_log_summary.txt").is_file()
    facts = served["ort", "int8"][0].worker_facts
    assert facts["hosts"] == "the saved .onnx file" and facts["runtime_threads"] == 1, facts
    assert served["eager", "fp32"][0].worker_facts["hosts"] == "a rebuild"
    table = (tmp_path / "run" / "report.md").read_text().split("## Serving under load")[1].split("\n## ")[0]
    assert "| python:toy_models:tiny_cnn | eager | fp32 | 1 x 1 | 1 | off | " in table, table
    assert "| python:toy_models:tiny_cnn | ort | fp32 | 1 x 1 | 1 | off | " in table, table
    assert "| python:toy_models:tiny_cnn | ort | int8 | 1 x 1 | " in table, table
    assert "![serving](plots/serving.png)" in table and (tmp_path / "run" / "plots" / "serving.png").is_file()


def test_a_resumed_run_serves_the_latency_records_it_kept(tiny_config, tmp_path):
    """A run killed after its latency points were journaled, before serving: the same command keeps those
    records, as measured, and serves them (it used to keep them and never serve)."""
    from trtbench.results.journal import JOURNAL_NAME

    out = tmp_path / "run"
    data = {**tiny_config, "variants": ["eager"], "output": {"dir": str(out), "save_artifacts": False,
                                                             "cold_start": False}}
    data["benchmark"] = {**data["benchmark"], "shapes": ["opt"], "threads": 1}
    assert run_dict({**data, "scenarios": ["latency"]}).exit_code == 0
    journal = out / JOURNAL_NAME
    lines = journal.read_text().splitlines()
    assert json.loads(lines[-1])["kind"] == "complete"
    journal.write_text("\n".join(lines[:-1]) + "\n")  # what a kill after the latency points leaves
    measured = {r.case.key: r.rounds for r in ResultSet.load(out)}

    data["scenarios"] = ["latency", {"serving": {"p99_ms": 200, "target_qps": 50, "min_duration_s": 0.5,
                                                "min_queries": 10, "workers": [1], "repeats": 1}}]
    outcome = run_dict(data)
    assert outcome.exit_code == 0 and outcome.resumed == 1
    loaded = ResultSet.load(out)
    (record,) = loaded
    assert record.rounds == measured[record.case.key], "kept as measured, not timed again"
    (result,) = serving_of(loaded, record)
    assert result.status == "ok" and result.runs and result.runs[0].offered_qps == 50, result.reason


def test_serving_results_survive_the_journal_and_a_merge(tmp_path):
    from trtbench.core.case import Case
    from trtbench.scenarios.serving.loadgen.summary import LoadGenSummary
    from trtbench.results.journal import Journal
    from trtbench.scenarios.serving.vision.result import LoadGenRun, ServedCase, ServingResult

    summary = parse_summary(SUMMARY_INVALID)
    result = ServingResult(loadgen_scenario="server", workers=2, threads=1, bound_ms=40.0, percentile=0.99,
                           batching={"max_batch": 4, "window_ms": 2.0}, service_ms=10.3, peaks=(120.0, 130.0, 125.0),
                           runs=(LoadGenRun(125.0, 1, summary, True, (10.5, 12.25), {1: 1, 2: 2}, 0, "serving/x/r1"),),
                           log_dir="serving/x")
    case = Case(model="m", variant="eager", precision="fp32", point="opt", input_shapes=((1, 3, 8, 8),), threads=2,
                device="cpu")
    record = Record(case=case, environment="env", rounds=[[1.0]])
    served = ServedCase(case.key, "env", (result,))
    again = ServedCase.from_dict(json.loads(json.dumps(served.to_dict())))
    assert again == served and again.results[0].peak_qps == 125.0
    assert again.results[0].peak_interval.to_dict() == {"value": 125.0, "low": 120.0, "high": 130.0}
    assert isinstance(again.results[0].runs[0].summary, LoadGenSummary)
    journal = Journal(tmp_path)
    journal.part(record)
    journal.part(served)
    assert journal.read().parts.of("served") == [served]
    results = ResultSet(_records={(case.key, "env"): record})
    results.add(served)
    merged, _ = ResultSet.merge([ResultSet.from_dict(json.loads(json.dumps(results.to_dict())))])
    assert serving_of(merged, merged.records[0]) == (result,)




def test_the_counts_left_after_a_failed_count_name_the_count_that_failed(tmp_path, monkeypatch):
    """Served at 1, 2 and 3 workers from one pool whose service fails at 2: the 3-worker result is not run, saying
    the pool failed at 2 workers (the count that failed, not its own)."""
    import trtbench.scenarios.serving.vision.run as vision_run

    class Pool:  # the pool's workers are not started: the bookkeeping of the counts alone is checked
        workers = [type("Worker", (), {"facts": {}})()]

        def __init__(self, *args, **kwargs):
            pass

        def close(self):
            pass

    def serve(pool, result, *args):
        return result if result.workers == 1 else dataclasses.replace(result, status="failed", reason="it broke")

    monkeypatch.setattr(vision_run, "ServingPool", Pool)
    monkeypatch.setattr(vision_run, "_serve", serve)
    settings = ServingConfig(p99_ms=BOUND_MS, workers=(1, 2, 3), threads=1)
    hosts = ServingWorkers(lambda threads: None, default_threads=1, start_timeout_s=1.0)
    one, two, three = run_serving(hosts, settings, tmp_path, "toy")
    assert (one.status, two.status, two.reason) == ("ok", "failed", "it broke")
    assert three.status == "failed" and three.reason == "not run: the pool failed at 2 worker(s) before"
