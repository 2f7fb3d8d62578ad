"""The report on replicate processes and the machine's regimes, from synthetic records: each row's process count
and spread (table and CSV), rows whose processes disagree named with what differed between them, the intervals'
headers saying what they cover, and a point spanning two regimes given per regime (report and results.json)."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from helpers.records import regime_results, replicated
from trtbench.analysis.records import process_spread, processes_disagree
from trtbench.report.columns.processes import differences
from trtbench.report.regimes import regimes_json, regimes_markdown
from trtbench.report.tables import csv_text, markdown_table
from trtbench.results.resultset import ResultSet
from trtbench.core.stats import speedup_interval


FACTS = [{"process": 0, "pid": 11, "minor_faults_per_call_median": 2.0, "voluntary_ctx_switches": 40,
          "cpu_migrations": 3, "rss_mb": 210.0, "allocator": {"mmap_threshold_bytes": 16 << 20}},
         {"process": 1, "pid": 12, "minor_faults_per_call_median": 3700.0, "voluntary_ctx_switches": 41,
          "cpu_migrations": 3, "rss_mb": 190.0, "allocator": {"mmap_threshold_bytes": 0}},
         {"process": 2, "pid": 13, "minor_faults_per_call_median": 2.0, "voluntary_ctx_switches": 40,
          "cpu_migrations": 3, "rss_mb": 210.0, "allocator": {"mmap_threshold_bytes": 16 << 20}}]


@pytest.fixture(scope="module")
def spread_set() -> ResultSet:
    """eager in 3 processes within 2.5%; compiled in 3 of which process 1 is 7% slower (it faulted its pages on every
    call); traced in 1 process."""
    results = ResultSet(environments={"e": {"id": "e"}})
    steady = np.full(20, 20.0)
    results.add(replicated("eager", steady, [1.0, 1.02, 0.995]))  # apart beyond their rounds, by under 3%
    results.add(replicated("compiled", steady / 1.3, [1.0, 1.07, 1.002], seed=1, facts=FACTS))
    one = replicated("traced", steady / 1.1, [1.0], seed=2)
    results.add(one)
    return results


def test_each_row_gives_its_processes_and_their_spread(spread_set):
    rows = {row["variant"]: row for row in csv.DictReader(io.StringIO(csv_text(spread_set)))}
    assert [rows[v]["processes"] for v in ("eager", "compiled", "traced")] == ["3", "3", "1"]
    assert float(rows["compiled"]["process_spread_pct"]) == pytest.approx(7.0, abs=0.5)
    assert float(rows["eager"]["process_spread_pct"]) == pytest.approx(2.5, abs=0.3)
    assert rows["traced"]["process_spread_pct"] == ""
    assert rows["eager"]["rounds"] == "20"  # rounds, not blocks
    table = markdown_table(spread_set)
    header = table.splitlines()[0]
    assert "median ms (95% CI, processes x rounds)" in header and "speedup [95% CI, processes x rounds]" in header
    assert "| processes | process spread |" in header
    assert "timed in one process: traced opt; its intervals cover that one process's rounds" in table


def test_a_row_whose_processes_disagree_is_named_with_what_differed(spread_set):
    compiled, eager = (next(r for r in spread_set if r.case.variant == v) for v in ("compiled", "eager"))
    assert processes_disagree(compiled) and not processes_disagree(eager)
    assert process_spread(eager) < 0.03
    what = differences(compiled)
    assert "page faults/call 2, 3700, 2" in what and "RSS MB 210, 190, 210" in what
    assert any(w.startswith("allocator mmap threshold >= 16 MiB / mmap threshold < 128 KiB (fresh)") for w in what)
    assert not any(w.startswith("CPU migrations") for w in what)  # the same in every process
    table = markdown_table(spread_set)
    assert "processes disagreed beyond their own rounds' noise for: compiled fp32 opt (process medians" in table
    assert "page faults/call 2, 3700, 2" in table and "eager fp32 opt (process" not in table


def test_the_interval_of_a_row_whose_processes_disagree_covers_them(spread_set):
    compiled = next(r for r in spread_set if r.case.variant == "compiled")
    speedup = spread_set.speedup(compiled)
    assert speedup.low <= 1.3 / 1.07 * 1.01 and speedup.high >= 1.3 * 0.99  # the slow process's speedup and the others'
    eager, traced = (next(r for r in spread_set if r.case.variant == v) for v in ("eager", "traced"))
    rounds_only = speedup_interval(eager.block_series, traced.block_series)
    # a row timed in one process, in a run whose other rows show process luck, takes the run's pooled spread
    assert spread_set.speedup(traced).rel_halfwidth > 3 * rounds_only.rel_halfwidth


def test_headers_say_one_process_where_every_row_had_one():
    results = ResultSet(environments={"e": {"id": "e"}})
    results.add(replicated("eager", np.full(6, 10.0), [1.0]))
    results.add(replicated("traced", np.full(6, 5.0), [1.0]))
    header = markdown_table(results).splitlines()[0]
    assert "median ms (95% CI, 1 process x rounds)" in header and "speedup [95% CI, 1 process x rounds]" in header


@pytest.fixture(scope="module")
def regime_set() -> ResultSet:
    return regime_results()


def test_a_point_spanning_two_regimes_gives_each_rows_speedup_per_regime(regime_set):
    scripted, traced = (next(r for r in regime_set if r.case.variant == v) for v in ("scripted", "traced"))
    regimes = regime_set.analysis.regimes(scripted)
    assert len(regimes) == 2 and abs(regimes[1].start - 25) <= 2
    per_regime = regime_set.analysis.regime_speedups(scripted)
    assert [round(i.value, 2) for i in per_regime] == [1.03, 1.06]
    assert regime_set.analysis.regime_dependent(scripted) and not regime_set.analysis.regime_dependent(traced)
    reported = regime_set.speedup(scripted)
    assert reported.low <= per_regime[0].low and reported.high >= per_regime[1].high
    section = regimes_markdown(regime_set)
    assert section.startswith("## Regimes") and "| scripted | fp32 | 1.03x [" in section and "| yes |" in section
    assert "| traced | fp32 | 1.20x [" in section
    assert "regime-dependent speedups for: scripted fp32 opt" in markdown_table(regime_set)
    (point,) = regimes_json(regime_set)
    assert [r["start"] for r in point["regimes"]] == [0, regimes[1].start]
    assert point["regimes"][1]["slowdown"] == pytest.approx(1.2, rel=0.03)
    rows = {row["variant"]: row for row in point["rows"]}
    assert rows["scripted"]["regime_dependent"] and not rows["traced"]["regime_dependent"]
    assert rows["scripted"]["speedups"][1]["value"] == pytest.approx(1.06, abs=0.01)


def test_a_point_in_one_regime_has_no_section_but_its_regime_is_recorded(spread_set):
    assert regimes_markdown(spread_set) == ""
    (point,) = regimes_json(spread_set)
    assert point["regimes"] == [{"start": 0, "end": 19, "rounds": 20, "slowdown": 1.0}] and point["rows"] == []


def test_points_whose_processes_took_turns_for_memory_are_named():
    results = ResultSet(environments={"e": {"id": "e"}})
    record = replicated("eager", np.full(6, 10.0), [1.0, 1.0])
    results.add(record)
    assert "took turns" not in markdown_table(results)
    results.add(record.with_metrics(process_turns=2))
    assert "processes took turns for memory at: m opt (2 sets)" in markdown_table(results)
