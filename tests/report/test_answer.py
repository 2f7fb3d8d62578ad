"""The answer on top of the report (trtbench/report/answer.py over trtbench/analysis/race.py): per point the winner
with its lead over the runner-up, or the variants tied, and at this budget where the race's budget ended it; the rows
the race stopped never win, and the notes say why they stopped and which rows got a further process; the p99 pick
says what the race at its point found."""

from __future__ import annotations

from dataclasses import replace

from helpers.records import replicated
from trtbench.report.answer import answer_blocks
from trtbench.report.tables import speedup_table
from trtbench.results.recommend import recommend
from trtbench.results.resultset import ResultSet

ROUNDS = [20.0] * 30


def _raced(record, outcome: str, **extra):
    part = {"outcome": outcome, "ended": extra.pop("ended", "decided"), "margin": 0.05, "behind": None, **extra}
    return replace(record.with_metrics(race=part), stopped_by="race" if outcome == "stopped" else part["ended"])


def _results(*records) -> ResultSet:
    results = ResultSet(environments={"e": {"id": "e"}})
    for record in records:
        results.add(record)
    return results


def _answer(results: ResultSet) -> str:
    (_, _, items) = answer_blocks(results)
    (item,) = items.items
    return "".join(part if isinstance(part, str) else part.text for part in item.text)


def test_a_clear_winner_is_named_with_its_lead_over_the_runner_up():
    results = _results(replicated("eager", ROUNDS, [1.0, 1.01, 0.99]),
                       replicated("ort", [r / 2 for r in ROUNDS], [1.0, 1.01, 0.99], seed=1),
                       replicated("openvino", [r / 1.6 for r in ROUNDS], [1.0, 1.01, 0.99], seed=2))
    text = _answer(results)
    assert text.startswith("m opt (4x3x8x8, 2 thread(s)): ort wins: 1.2") and "the speed of openvino, the runner-up" \
        in text


def test_a_raced_point_ties_at_its_budget_and_a_stopped_row_never_wins_however_its_median_reads():
    eager = _raced(replicated("eager", ROUNDS, [1.0, 1.01]), "out", ended="budget_s",
                   text="out of the race: slower than ort by >= 40% (95%)")
    ort = _raced(replicated("ort", [r / 2 for r in ROUNDS], [1.0, 1.08], seed=1), "tie", ended="budget_s",
                 processes=[{"round": 8, "between_share": 0.71, "started": True}])
    openvino = _raced(replicated("openvino", [r / 2.02 for r in ROUNDS], [1.0, 1.08], seed=2), "tie",
                      ended="budget_s")
    lucky = _raced(replicated("compiled", [r / 3 for r in ROUNDS[:6]], [1.0, 1.01], seed=3), "stopped",
                   text="stopped early: slower than ort by >= 9% (95%)")  # stopped early, then read fast
    results = _results(eager, ort, openvino, lucky)
    text = _answer(results)
    assert "ort and openvino within " in text or "openvino and ort within " in text
    assert text.endswith("of each other: a tie at this budget") and "compiled" not in text
    table = speedup_table(results)
    assert not [row for row in table.rows if row.fastest and row.record.case.variant == "compiled"]
    notes = " ".join(table.notes)
    assert "the race: eager fp32 opt (" in notes
    assert "compiled fp32 opt (stopped early: slower than ort by >= 9% (95%))" in notes
    assert "eager fp32 opt (out of the race: slower than ort by >= 40% (95%))" in notes
    assert "raced rows started in 2 processes" in notes and "ort fp32 opt (2: round 8, 71% of its interval" in notes
    for record in results:
        object.__setattr__(record, "accuracy", {"ok": True})
    (pick,) = recommend(results, 1000.0)
    assert pick.choice.case.variant in ("ort", "openvino") and "at its point a tie with" in pick.text({})
