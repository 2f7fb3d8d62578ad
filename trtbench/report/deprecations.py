"""The report's section on what upstream deprecates: each note once, each deprecated row beside its successors."""

from __future__ import annotations

from trtbench.core.deprecation import Deprecation
from trtbench.report.text import number_text
from trtbench.results.resultset import ResultSet
from trtbench.results.successors import deprecations_of, successors

DEPRECATED_MARK = "deprecated"  # the speedup table's status note on a row whose variant upstream deprecates

DEPRECATIONS_TEXT = (
    "Rows built with what upstream deprecates, beside each successor timed at the same point (model, shapes, "
    "precision, threads): the successor's median, and its speed over the deprecated row's, paired by round, "
    "with its 95% interval. Within its interval: moving to the successor costs nothing this run could measure. "
    "How a trtbench TorchScript file maps to its successor: docs/backends.md.")


def deprecated_labels(results: ResultSet) -> dict[Deprecation, list[str]]:
    """Each deprecation the rows carry, with the variants (labels) that carry it, in row order."""
    labels: dict[Deprecation, list[str]] = {}
    for record in results:
        for deprecation in deprecations_of(record):
            seen = labels.setdefault(deprecation, [])
            if record.case.label not in seen:
                seen.append(record.case.label)
    return labels


def deprecation_notes(results: ResultSet) -> list[str]:
    """The speedup table's note on the rows upstream deprecates with a successor; empty where none is."""
    labels = {d: names for d, names in deprecated_labels(results).items() if d.successors}
    if not labels:
        return []
    variants = list(dict.fromkeys(label for names in labels.values() for label in names))
    subjects = ", ".join(dict.fromkeys(d.subject for d in labels))
    return [f"{DEPRECATED_MARK}: {', '.join(variants)}: built with what upstream deprecates ({subjects}); each "
            f"successor's measured speed beside it: report.md, Deprecated upstream."]


def deprecations_markdown(results: ResultSet) -> str:
    """The section: each note once, the successors not timed, then the deprecated rows beside those timed (or "")."""
    notes = deprecated_labels(results)
    if not notes:
        return ""
    lines = ["## Deprecated upstream", "", DEPRECATIONS_TEXT, ""]
    lines += [f"- {', '.join(labels)}: {deprecation.note}" for deprecation, labels in notes.items()]
    timed = {record.case.variant for record in results if record.timed}
    untimed = [name for name in dict.fromkeys(n for d in notes for n in d.successors) if name not in timed]
    if untimed:
        lines.append(f"- not timed in this run: {', '.join(untimed)}; list them in `variants` to time each "
                     "deprecated row's successor beside it.")
    lines.append("")
    rows = [(record, after) for record in results if record.timed for after in successors(results, record)
            if after.variant in timed]
    if rows:
        lines += ["| variant | precision | point | median ms | successor | successor median ms | successor's speed |",
                  "|---|---|---|---|---|---|---|"]
        for record, after in rows:
            c = record.case
            theirs = number_text(after.record.stats.median, 3) if after.record is not None else ""
            lines.append(f"| {c.label} | {c.precision} | {c.point} ({c.shapes}) | "
                         f"{number_text(record.stats.median, 3)} | {after.variant} | {theirs} | {after.verdict()} |")
        lines.append("")
    return "\n".join(lines) + "\n"
