"""The answer that heads the report: per point, the winner or the variants tied; the notes on the race's rows."""

from __future__ import annotations

from trtbench.analysis.race import RACE_MARGIN, PointAnswer
from trtbench.core.record import Record
from trtbench.report.blocks import Block, Heading, Item, Items, Paragraph, strong
from trtbench.results.resultset import ResultSet

INTRO = ("Per point, the fastest variant and its lead over the runner-up (the runner-up's time over the winner's, "
         "paired by round, with its 95% interval), or the variants that could not be told apart by more than "
         f"the race's margin ({RACE_MARGIN:.0%} by default). The full table follows.")


def _name(record: Record, precisions: int) -> str:
    return record.case.label + (f" {record.case.precision}" if precisions > 1 else "")


def _where(record: Record, environments: int) -> str:
    c = record.case
    return (f"{c.model} {c.point} ({c.shapes}, {c.threads} thread(s){', ' + c.knobs if c.knobs else ''}"
            f"{', ' + record.environment if environments > 1 else ''})")


def answer_text(answer: PointAnswer, precisions: int) -> tuple:
    """One point's answer as a line's text: ``ort wins: 1.32x [1.21-1.45] ...`` or ``... a tie at this budget``."""
    name = _name(answer.leader, precisions)
    if answer.tied:
        names = [name, *[_name(r, precisions) for r, _ in answer.tied]]
        return (f"{', '.join(names[:-1])} and {names[-1]} within {answer.within:.0%} of each other: a tie"
                + (" at this budget" if answer.at_budget else ""),)
    if answer.runner_up is None:
        return (strong(name), " alone")
    runner, lead = answer.runner_up
    return (strong(name), f" wins: {lead.text(unit='x')} the speed of {_name(runner, precisions)}, the runner-up")


def answer_blocks(results: ResultSet) -> list[Block]:
    """The answer's heading, what it says, and a line per point with more than one timed row."""
    environments = len({r.environment for r in results})
    items = []
    for records, _ in results.analysis.points():
        answer = results.analysis.answer(records[0]) if len(records) > 1 else None
        if answer is not None:
            precisions = len({r.case.precision for r in records})
            items.append(Item((_where(records[0], environments), ": ", *answer_text(answer, precisions))))
    return [Heading(2, "The answer"), Paragraph((INTRO,)), Items(tuple(items))] if items else []


def race_notes(records: list[Record]) -> list[str]:
    """A note naming the rows the race stopped early, each with why."""
    race = [(r, r.metrics["race"]) for r in records if "race" in r.metrics]
    stopped = [f"{r.case.label} {r.case.precision} {r.case.point} ({part['text']})" for r, part in race
               if part.get("text")]
    out = []
    if stopped:
        out.append(f"the race: {'; '.join(stopped)}: a stopped row keeps the median and intervals of the rounds it "
                   "ran; eager, the reference of every speedup, is never stopped: out of the race, it is timed on.")
    return out
