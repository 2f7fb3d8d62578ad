"""Sweeps: the p99-budget recommendation, the sweep plots (read back from the axes) and their report hooks."""

from __future__ import annotations

import json

import pytest

from trtbench.cli import main
from trtbench.core.case import Case
from trtbench.config.config import config_from_dict
from trtbench.core.errors import UserInputError
from trtbench.results.recommend import recommend
from trtbench.core.record import Record
from trtbench.report.sweeps import (fronts, is_sweep, latency_vs_batch_plot, pareto_front, pareto_plot,
                                    sweep_plots, throughput_vs_batch_plot)
from trtbench.pipeline.sections import report_sections
from helpers.plots import save_plots
from trtbench.report.blocks import Heading
from trtbench.report.writer import ReportHead, write_report
from trtbench.results.resultset import ResultSet

OK = {"ok": True, "max_abs_err": 0.0}


def record(variant, batch, median, p99, env="A", model="m", status="ok", accuracy=OK, threads=1) -> Record:
    """A record whose 100 samples have exactly this median and p99 (98 at the median, 2 at the p99)."""
    case = Case(model=model, variant=variant, precision="fp32", point=f"b{batch}", input_shapes=((batch, 3, 8, 8),),
                threads=threads, device="cpu")
    samples = [median] * 98 + [p99] * 2
    return Record(case=case, environment=env, status=status, rounds=[samples[:50], samples[50:]], accuracy=accuracy)


def result_set(*records: Record) -> ResultSet:
    environments = {r.environment for r in records}
    results = ResultSet(environments={env: {"id": env, "cpu": f"cpu-{env}"} for env in environments})
    for r in records:
        results.add(r)
    return results


def flat(points) -> list[float]:
    return [v for point in points for v in point]


def sweep() -> ResultSet:
    """eager and traced at batch 1, 2, 4 (throughput = batch * 1000 / median), and points that must not count."""
    return result_set(
        record("eager", 1, 1.0, 1.5), record("eager", 2, 1.6, 2.5), record("eager", 4, 3.0, 4.0),
        record("traced", 1, 0.8, 1.2), record("traced", 2, 1.2, 2.0), record("traced", 4, 2.0, 6.0),
        record("scripted", 4, 1.0, 1.1, accuracy={"ok": False, "max_abs_err": 1.0}),  # fastest but inaccurate
        record("exported", 4, 1.0, 1.1, accuracy=None),  # never checked
        record("compiled", 4, 1.0, 1.1, status="failed"),
    )


def test_recommendation_is_the_most_throughput_within_the_budget():
    results = sweep()
    (rec,) = recommend(results, p99_budget_ms=5.0)
    # traced b4 has the most throughput (2000/s) but p99 6 ms; within 5 ms: traced b2 1667/s beats eager b4 1333/s
    assert (rec.choice.case.variant, rec.choice.case.batch) == ("traced", 2)
    assert rec.candidates == 6, "inaccurate, unchecked and failed records are not candidates"
    data = json.loads(json.dumps(rec.to_dict()))
    assert data["fits"] and data["choice"]["batch"] == 2 and data["choice"]["p99_ms"] == pytest.approx(2.0)
    assert data["choice"]["throughput"] == pytest.approx(2 * 1000 / 1.2)
    text = rec.text(results.environments)
    assert "traced fp32, batch 2" in text and "p99 2.000 ms" in text and "cpu-A" in text
    (wide,) = recommend(results, p99_budget_ms=6.0)
    assert (wide.choice.case.variant, wide.choice.case.batch) == ("traced", 4), "p99 equal to the budget fits"


def test_recommendation_says_when_nothing_fits_and_names_the_closest():
    (rec,) = recommend(sweep(), p99_budget_ms=1.0)
    assert rec.choice is None
    assert (rec.closest.case.variant, rec.closest.case.batch) == ("traced", 1), "the lowest measured p99"
    text = rec.text({})
    assert "NOTHING FITS p99 <= 1 ms" in text and "closest: traced fp32, batch 1" in text and "20% over" in text
    assert rec.to_dict()["fits"] is False and rec.to_dict()["closest"]["p99_ms"] == pytest.approx(1.2)


def test_recommendation_per_environment_and_model():
    results = result_set(record("eager", 1, 1.0, 1.0, env="A"), record("eager", 4, 2.0, 2.0, env="A"),
                         record("eager", 4, 1.0, 1.0, env="B"), record("eager", 1, 1.0, 1.0, env="A", model="n"),
                         record("eager", 1, 1.0, 1.0, env="B", model="n", status="failed"))
    recs = {(r.environment, r.model): r for r in recommend(results, p99_budget_ms=3.0)}
    assert set(recs) == {("A", "m"), ("B", "m"), ("A", "n"), ("B", "n")}
    assert recs[("A", "m")].choice.case.batch == 4 and recs[("B", "m")].choice.environment == "B"
    assert recs[("B", "n")].choice is None and recs[("B", "n")].closest is None
    assert "nothing to recommend" in recs[("B", "n")].text({})


def test_budget_config_section_is_validated(tiny_config):
    assert config_from_dict({**tiny_config, "budget": {"p99_ms": 2.5}}).budget.p99_ms == 2.5
    assert config_from_dict(tiny_config).budget.p99_ms is None
    with pytest.raises(UserInputError, match=r"budget\.p99_ms: must be positive"):
        config_from_dict({**tiny_config, "budget": {"p99_ms": 0}})
    with pytest.raises(UserInputError, match=r"budget\.p99: unknown key"):
        config_from_dict({**tiny_config, "budget": {"p99": 3}})


def test_pareto_front_keeps_points_nothing_beats_on_both():
    points = [(1, 10), (2, 20), (2, 15), (3, 20), (0.5, 5), (1, 10), (4, 30)]
    assert pareto_front(points) == [True, True, False, False, True, True, True]


def test_sweep_plots_draw_the_measured_values(tmp_path):
    results = sweep()
    latency = latency_vs_batch_plot(results, "lat.png", p99_budget_ms=5.0)
    assert save_plots(tmp_path, [latency])[0].stat().st_size > 0
    assert latency.series["median|eager"] == ((1, 1.0), (2, 1.6), (4, 3.0))
    assert latency.series["p99|traced"] == ((1, 1.2), (2, 2.0), (4, 6.0))
    assert {y for _, y in latency.series["budget"]} == {5.0}
    assert not any("scripted" in k or "exported" in k or "compiled" in k for k in latency.series)
    throughput = throughput_vs_batch_plot(results, "thr.png")
    assert flat(throughput.series["throughput|traced"]) == pytest.approx([1, 1250.0, 2, 2000 / 1.2, 4, 2000.0])
    pareto = pareto_plot(results, "pareto.png", p99_budget_ms=5.0)
    assert len(pareto.series["points|eager"]) == 3 and len(pareto.series["points|traced"]) == 3
    # (p99, throughput): traced b1 (1.2, 1250), traced b2 (2, 1667), traced b4 (6, 2000) beat every eager point
    assert flat(pareto.series["front|m|A"]) == pytest.approx([1.2, 1250.0, 2.0, 2000 / 1.2, 6.0, 2000.0])
    assert [r.case.label for r in fronts(results)[("A", "m")]] == ["traced"] * 3


def test_one_series_per_machine_and_thread_count(tmp_path):
    results = result_set(record("eager", 1, 1.0, 1.0, env="A"), record("eager", 2, 1.5, 1.5, env="A"),
                         record("eager", 1, 2.0, 2.0, env="B"), record("eager", 2, 3.0, 3.0, env="B"),
                         record("eager", 1, 2.0, 2.0, env="B", threads=4))
    chart = throughput_vs_batch_plot(results, "thr.png")
    assert set(chart.series) == {"throughput|eager t1 cpu-A [A]", "throughput|eager t1 cpu-B [B]",
                                 "throughput|eager t4 cpu-B [B]"}
    assert flat(chart.series["throughput|eager t1 cpu-B [B]"]) == pytest.approx([1, 500.0, 2, 2000 / 3])


def test_no_sweep_plots_for_one_batch_size():
    results = result_set(record("eager", 4, 1.0, 1.0), record("traced", 4, 0.5, 0.5))
    assert not is_sweep(results)
    assert sweep_plots(results) == [] and latency_vs_batch_plot(results, "x.png") is None


def test_report_has_the_sweep_and_the_recommendation_and_stores_it(tmp_path):
    results = sweep()
    files = write_report(tmp_path, results, ReportHead([Heading(1, "test")]), report_sections(results, 5.0))
    report = files["markdown"].read_text()
    assert "## Sweep" in report and "## Recommendation: p99 <= 5 ms" in report
    for name in ("latency_vs_batch", "throughput_vs_batch", "pareto"):
        assert f"](plots/{name}.png)" in report and (tmp_path / "plots" / f"{name}.png").is_file()
    assert "Pareto front, m on cpu-A [A]: traced fp32 b1 t1" in report
    stored = json.loads(files["json"].read_text())["recommendations"]
    recomputed = [r.to_dict() for r in recommend(ResultSet.load(files["json"]), 5.0)]
    assert stored == recomputed and stored[0]["choice"]["variant"] == "traced"
    plain = write_report(tmp_path / "plain", results, ReportHead([Heading(1, "test")]),
                         report_sections(results, None))
    assert "recommendations" not in json.loads(plain["json"].read_text())
    assert "## Recommendation" not in plain["markdown"].read_text()


def test_run_sweep_with_p99_budget_flag(tiny_config, write_config, tmp_path, capsys):
    """The command line's run with the flag, through its entry point in this process (a process of its own, and
    the supervisor's, would only import torch twice more: tests/test_cli.py runs the command as one)."""
    config = {**tiny_config, "variants": ["eager", "traced"], "sweep": {"batch": [1, 4]},
              "output": {"save_artifacts": False, "cold_start": False}}
    out = tmp_path / "run"
    code = main(["run", "--config", str(write_config(config)), "--output", str(out), "--quiet", "--p99-budget", "1000"])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    (rec,) = json.loads((out / "results.json").read_text())["recommendations"]
    assert rec["fits"] and rec["p99_budget_ms"] == 1000 and rec["candidates"] == 4
    best = max(ResultSet.load(out), key=lambda r: r.throughput)  # every point fits 1 s
    assert rec["choice"]["case_key"] == best.case.key
    assert "recommendation (p99 <= 1000 ms):" in stdout
    assert f"{best.case.variant} fp32, batch {best.case.batch}" in stdout
    report = (out / "report.md").read_text()
    assert "## Sweep" in report and (out / "plots" / "pareto.png").is_file()


def test_p99_budget_flag_must_be_positive(tiny_config, write_config, capsys):
    with pytest.raises(SystemExit) as exited:  # argparse's own refusal, before anything runs
        main(["run", "--config", str(write_config(tiny_config)), "--p99-budget", "-3"])
    stderr = capsys.readouterr().err
    assert exited.value.code == 2 and "--p99-budget" in stderr and "positive" in stderr
