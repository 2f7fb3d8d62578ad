"""The report's regimes: each row's speedup per regime of its point, and results.json's ``regimes``."""

from __future__ import annotations

from trtbench.core.record import Record
from trtbench.report.columns.speedup import speedup_text
from trtbench.results.resultset import ResultSet

TEXT = ("The machine ran at more than one speed during these points: every process of every variant slowed or sped "
        "up at the same rounds (change points of the rounds' common factor, docs/measuring.md). Pairing by round "
        "cancels what the regimes do to both sides of a speedup, not what they do to one more than the other, so "
        "each row's speedup is given per regime (95% CI, processes x that regime's rounds). A row whose speedups "
        "differ between regimes beyond their rounds' noise (the same processes timed every regime, so their luck is "
        "no difference) is regime-dependent: its speedup in the table has an interval that covers every regime's.")


def _where(record: Record) -> str:
    c = record.case
    knobs = f" {c.knobs}" if c.knobs else ""
    return f"{c.model} t{c.threads}{knobs} {c.point} ({c.shapes})"


def regimes_json(results: ResultSet) -> list[dict]:
    """Every point's regimes, and where it had more than one, each row's speedup per regime."""
    out, analysis = [], results.analysis
    for records, regimes in analysis.points():
        c, rows = records[0].case, []
        for record in records:
            per_regime = analysis.regime_speedups(record)
            if per_regime:
                rows.append({"variant": record.case.variant, "options": record.case.options,
                             "precision": record.case.precision, "regime_dependent": analysis.regime_dependent(record),
                             "speedups": [None if i is None else i.to_dict() for i in per_regime]})
        out.append({"environment": records[0].environment, "model": c.model, "threads": c.threads, "knobs": c.knobs,
                    "point": c.point, "input_shapes": c.shapes, "regimes": [r.to_dict() for r in regimes],
                    "rows": rows})
    return out


def regimes_markdown(results: ResultSet) -> str:
    """The section: per point with more than one regime, each row's speedup in each (empty where none)."""
    spanning = [(records, regimes) for records, regimes in results.analysis.points() if len(regimes) > 1]
    if not spanning:
        return ""
    lines = ["## Regimes", "", TEXT, ""]
    for records, regimes in spanning:
        lines += [f"{_where(records[0])}: " + "; ".join(r.text() for r in regimes) + ".", "",
                  "| variant | precision | " + " | ".join(f"speedup, rounds {r.start}-{r.end} ({r.rounds})"
                                                         for r in regimes) + " | regime-dependent |",
                  "|---|---|" + "---|" * len(regimes) + "---|"]
        for record in records:
            per_regime = results.analysis.regime_speedups(record)
            if per_regime:
                lines.append(f"| {record.case.label} | {record.case.precision} | "
                             + " | ".join(speedup_text(i) for i in per_regime)
                             + f" | {'yes' if results.analysis.regime_dependent(record) else 'no'} |")
        lines.append("")
    return "\n".join(lines)


def regime_notes(results: ResultSet) -> list[str]:
    """A note naming the rows whose speedup depends on the machine's regime."""
    named = [f"{r.case.label} {r.case.precision} {r.case.point}" for r in results if r.timed
             and results.analysis.regime_dependent(r)]
    if not named:
        return []
    return [f"regime-dependent speedups for: {', '.join(named)}: the machine changed speed during their point and "
            "their speedup differed between its regimes beyond the intervals; each interval covers every regime's "
            "(the Regimes section gives them apart)."]
