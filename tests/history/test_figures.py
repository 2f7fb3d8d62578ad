"""What a result set gives the history (trtbench/history/figures.py): each run with its rows' figures and their
intervals, a served case's peak, a failed row's status, runs told apart in a merge written before run ids, and a
figure's name read back from its stored text."""

from __future__ import annotations

from helpers.records import record
from trtbench.core.record import Record
from trtbench.history.figures import FigureKind, FigureName, stored_runs
from trtbench.results.resultset import ResultSet
from trtbench.scenarios.serving.vision.result import ServedCase, ServingResult


def two_machines() -> ResultSet:
    """A merge of two schema-5 runs (no run ids) on two machines, each with eager, traced (served) and a failed
    scripted."""
    results = ResultSet()
    for env, cpu in (("env-a", "CPU A"), ("env-b", "CPU B")):
        results.environments[env] = {"id": env, "cpu": cpu, "cpu_count": 2, "torch": "2.14.1"}
        results.runs.append({"name": "m", "environment": env, "started_at": f"2026-01-0{len(results.runs) + 1}",
                             "config": {"model": {"source": "python", "name": "m"}}})
        results.add(record("eager", 10.0, env))
        traced = record("traced", 4.0, env, accuracy={"ok": False, "max_abs_err": 0.5})
        results.add(traced)
        results.add(Record(case=record("scripted", 1.0).case, environment=env, status="failed", reason="no"))
        served = ServingResult(loadgen_scenario="server", workers=1, threads=2, bound_ms=40.0, percentile=0.99,
                               peaks=(125.0,))
        results.add(ServedCase(traced.case.key, env, (served,)))
    return results


def test_each_run_gets_its_own_environments_rows_with_intervals():
    first, second = stored_runs(two_machines(), "merged")
    assert first.run.run_id != second.run.run_id and first.run.run_id.startswith("d")
    assert first.run.source == "merged" and not first.run.accepted
    assert first.run.machine.id != second.run.machine.id and first.run.versions == {"torch": "2.14.1"}
    assert (first.run.machine.cpu, first.run.machine.cpu_count, first.run.machine.cpu_flags) == ("CPU A", 2, ())
    figures = {(f.key.variant, f.key.figure): f for f in first.figures}
    median = figures[("traced", "median")].value
    assert median.low < 4.0 < median.high or abs(median.value - 4.0) < 0.05
    speedup = figures[("traced", "speedup")].value
    assert speedup.low <= 2.5 <= speedup.high or abs(speedup.value - 2.5) < 0.05
    assert ("eager", "speedup") not in figures, "eager fp32 is its own baseline"
    assert figures[("traced", "accuracy")].status == "failed"
    assert figures[("traced", "peak_qps server w1 t2")].value.value == 125.0
    failed = figures[("scripted", "median")]
    assert failed.status == "failed" and failed.value is None and failed.reason == "no"
    assert {f.key.machine for f in first.figures} == {first.run.machine.id}
    assert len({f.key.model_hash for f in first.figures + second.figures}) == 1, "the same config's model"


def test_a_figures_stored_text_reads_back_as_its_kind_and_setting():
    batched = FigureName(FigureKind.PEAK_QPS, "server", 2, 4, '{"max_batch": 8, "window_ms": 5}')
    assert batched.text == 'peak_qps server w2 t4 batching {"max_batch": 8, "window_ms": 5}'
    stored = {f.key.figure for run in stored_runs(two_machines(), "merged") for f in run.figures}
    assert {"median", "speedup", "peak_qps server w1 t2"} <= stored
    for text in stored | {batched.text, "ttft", "tpot"}:
        assert FigureName.from_text(text).text == text
    assert FigureName.from_text(batched.text) == batched
    assert FigureName.from_text("peak_qps server w1 t2").kind.worse(-0.1), "a lower peak is worse"
    assert FigureName.from_text("median").kind.worse(0.1) and FigureKind.MEDIAN.unit == "ms"
