"""The recommendation weighs a deprecated choice: its successor at the same point is shipped instead where it fits
the budget and is within the interval of the choice's speed (or faster); else the cost of moving is said. A row
whose variant upstream deprecates counts only where its build said so (the note in its warnings)."""

from __future__ import annotations

from helpers.records import record
from trtbench.core.record import Record
from trtbench.report.deprecations import deprecations_markdown
from trtbench.results.recommend import recommend
from trtbench.results.resultset import ResultSet
from trtbench.results.successors import successors
from trtbench.variants.torchscript_common import TORCHSCRIPT_DEPRECATION

OK = {"ok": True, "max_abs_err": 0.0}
NOTE = TORCHSCRIPT_DEPRECATION.note


def _set(traced_ms: float, exported_ms: float, noted: bool = True) -> ResultSet:
    """eager, traced and exported at one point, four rounds each; exported's rounds move by a few percent about
    ``exported_ms``, so its speed over traced has an interval."""
    results = ResultSet(environments={"env-a": {"id": "env-a"}})
    results.add(record("eager", 10.0, accuracy=OK))
    results.add(record("traced", traced_ms, accuracy=OK, warnings=[NOTE] if noted else []))
    moved = [[exported_ms * f * g for f in (0.98, 1.0, 1.03)] for g in (0.97, 1.03, 0.98, 1.02)]
    results.add(Record(case=record("exported", exported_ms).case, environment="env-a", rounds=moved, accuracy=OK))
    return results


def test_a_successor_within_the_interval_is_shipped_instead():
    (rec,) = recommend(_set(4.0, 4.01), p99_budget_ms=100.0)
    assert rec.choice.case.variant == "traced"
    assert rec.instead.variant == "exported" and rec.instead.speed.low <= 1.0 <= rec.instead.speed.high
    text = rec.text({})
    assert f"traced is deprecated ({NOTE})" in text and "ship exported instead" in text
    data = rec.to_dict()
    assert data["instead"]["variant"] == "exported"
    assert [s["variant"] for s in data["successors"]] == ["exported", "aoti"]


def test_a_slower_successor_is_named_with_what_moving_costs():
    (rec,) = recommend(_set(4.0, 8.0), p99_budget_ms=100.0)
    assert rec.instead is None
    assert "at the same point exported: slower: 0.50x" in rec.text({})
    assert "aoti: not timed at this point" in rec.text({})


def test_a_successor_over_the_budget_is_not_shipped():
    (rec,) = recommend(_set(4.0, 4.01), p99_budget_ms=4.15)  # traced's p99 4.12 ms fits, exported's 4.2 does not
    assert rec.choice.case.variant == "traced" and rec.instead is None


def test_without_the_note_the_row_is_not_weighed():
    results = _set(4.0, 4.01, noted=False)
    (rec,) = recommend(results, p99_budget_ms=100.0)
    assert rec.successors == () and "deprecated" not in rec.text({})
    assert deprecations_markdown(results) == ""
    assert successors(results, next(r for r in results if r.case.variant == "traced")) == []


def test_the_section_puts_each_successor_s_speed_beside_the_row():
    section = deprecations_markdown(_set(4.0, 2.0))
    assert f"- traced: {NOTE}" in section
    assert ("| traced | fp32 | opt (2x3x8x8) | 4.000 | exported | 2.009 | faster: 2.00x [1.94-2.06] of its speed |"
            in section)
    assert "- not timed in this run: aoti; list them in `variants`" in section and "| aoti |" not in section


def test_the_speedup_table_marks_only_rows_a_successor_variant_replaces():
    from trtbench.report.tables import markdown_table
    from trtbench.variants.trt import TORCHSCRIPT_FILE

    results = _set(4.0, 2.0)
    results.add(record("trt", 3.0, accuracy=OK, warnings=[TORCHSCRIPT_FILE.note]))
    lines = {line.split(" | ")[0].strip("| *"): line for line in markdown_table(results).splitlines()
             if line.startswith("| ")}
    assert "| ok, deprecated |" in lines["traced"]
    assert "| ok |" in lines["trt"] and "| ok |" in lines["exported"]
    assert "- deprecated: traced: built with what upstream deprecates (TorchScript); each successor's measured " \
           "speed beside it: report.md, Deprecated upstream." in markdown_table(results)
    assert f"- trt: {TORCHSCRIPT_FILE.note}" in deprecations_markdown(results)
