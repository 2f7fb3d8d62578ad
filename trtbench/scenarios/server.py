"""The server scenario: each variant that the latency scenario timed ok and found accurate, served under
MLPerf LoadGen's Poisson load by a pool of worker processes (:mod:`.serving_stage`), with the peak QPS
whose latency percentile stays within a bound; its section and recommendation (:mod:`.serving_report`).

Written as a single-key mapping in the config's ``scenarios:`` list, e.g.
``{server: {p99_ms: 40, find_peak: true, workers: [1, 2]}}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.scenarios.base import Scenario, ReportSection, register
from trtbench.scenarios.serving_config import ServingConfig
from trtbench.scenarios.serving_report import (peak_rules, recommend_serving, serving_markdown, serving_plot,
                                               serving_recommendation_markdown)
from trtbench.scenarios.serving_result import ServedCase
from trtbench.scenarios.serving_stage import serve_group, unserved


@register
class Server(Scenario):
    """LoadGen's server scenario over the latency scenario's builds."""

    name = "server"
    requires = ("latency",)
    repeatable = True  # every server entry of the config is served by the first (serving_stage), in order
    parts = (ServedCase,)
    example = "{server: {p99_ms: 40, find_peak: true, workers: [1, 2]}}"

    @classmethod
    def parse(cls, value: Any, key: str) -> "Server":
        return cls(schema.from_dict(ServingConfig, value if value is not None else {}, key))

    def check(self, config: Any, key: str) -> None:
        self.settings.check_against_inputs(config.inputs, key)

    def owes(self, group, done) -> bool:
        return bool(unserved(done.config, group, done))

    def run(self, ctx, built, prepared) -> Iterator[ServedCase]:
        yield from serve_group(ctx, built)

    @classmethod
    def report(cls, results, out_dir: Path, budget_ms: Optional[float]) -> Optional[ReportSection]:
        plot = serving_plot(results, out_dir / "plots" / "serving.png")
        markdown = serving_markdown(results, [plot.relative_to(out_dir)] if plot is not None else [])
        under_load = recommend_serving(results)
        if not markdown and not under_load:
            return None
        parts = [markdown] if markdown else []
        if under_load:
            parts.append(serving_recommendation_markdown(under_load, results.environments))
        json = {"serving_recommendations": [r.to_dict() for r in under_load]} if under_load else {}
        return ReportSection("\n".join(parts), json)

    @classmethod
    def check_merge(cls, sets, names: list[str]) -> None:
        """Peaks found by different rules do not compare (:mod:`.serving_rule`): refused, naming two inputs and
        their rules (or the one input whose peaks mix them)."""
        rules = [(name, rule) for results, name in zip(sets, names) for rule in sorted(peak_rules(results))]
        for (first, rule), (name, other) in zip(rules, rules[1:]):
            if other != rule:
                others = "some of its own" if first == name else f"those of {first}"
                raise UserInputError(name, f"its serving peaks were found by the rule '{other}' and {others} by "
                                     f"'{rule}': peaks found by different rules do not compare",
                                     "serve the inputs again with the same trtbench and the same server settings "
                                     "(validity, confidence), then merge them")

    @classmethod
    def summary(cls, results, budget_ms: Optional[float]) -> list[str]:
        under_load = recommend_serving(results)
        return (["recommendation under load (serving):", *[f"  {r.text(results.environments)}" for r in under_load]]
                if under_load else [])
