"""The toy scenario: each built variant called once."""

from __future__ import annotations

import os
import time
from typing import Optional

from tally_scenario.result import TallyPart
from trtbench.report.section import ReportSection
from trtbench.scenarios import Scenario


class Tally(Scenario):
    """Calls each built variant once; ``{tally: {pause_s: 0.5, fail: traced}}`` sleeps between variants and
    marks one variant's part failed."""

    name = "tally"
    parts = (TallyPart,)

    @classmethod
    def parse(cls, value, key):
        return cls(dict(value or {}))

    def owes(self, group, done) -> bool:
        return bool(self._todo(group, done))

    @staticmethod
    def _todo(group, done) -> list[str]:
        have = {(p.model, p.threads, p.slot) for p in done.parts(TallyPart.KIND)}  # this environment's only
        return [group.slot_id(e.name, p) for e, p in group.slots()
                if (group.model.id, group.threads, group.slot_id(e.name, p)) not in have]

    def run(self, ctx, built, prepared):
        group, point = built.group, built.group.points[0]
        if self.settings.get("raise"):
            raise RuntimeError("the toy scenario broke outside any one variant")
        for slot in self._todo(group, built.done):
            outcome = built.outcomes[slot]
            precision = next(p for e, p in group.slots() if group.slot_id(e.name, p) == slot)
            inputs = outcome.variant.prepare(outcome.built, built.copies[precision].inputs[point.label])
            output = outcome.variant.run(outcome.built, inputs)
            yield TallyPart(ctx.env_id, group.model.id, group.threads, slot, tuple(output.shape), os.getpid(),
                            failed=self.settings.get("fail") == slot)
            time.sleep(self.settings.get("pause_s", 0))

    @classmethod
    def report(cls, results, budget_ms) -> Optional[ReportSection]:
        parts = sorted(results.parts(TallyPart.KIND), key=lambda p: p.key)
        if not parts:
            return None
        rows = [f"| {p.model} | t{p.threads} | {p.slot} | {'x'.join(map(str, p.output_shape))} |" for p in parts]
        return ReportSection("\n".join(["## Tally", "", "| model | threads | variant | output |", "|---|---|---|---|",
                                  *rows, ""]), {"tally_count": len(parts)})
