"""The serving scenario: serving under MLPerf LoadGen's Poisson load, of what the scenario listed before it made
(latency's variants, or generate's decoders: its :class:`ServingKind`) (more: docs/serving.md, "Module notes",
trtbench/scenarios/serving/scenario.py)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Iterator, Optional

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.core.part import Part
from trtbench.report.section import ReportSection, joined
from trtbench.scenarios.base import Scenario, register
from trtbench.scenarios.serving.vision.config import ServingConfig
from trtbench.report.late_share import late_share_plot
from trtbench.scenarios.serving.loadgen.settings import LoadSettings
from trtbench.scenarios.serving.vision.report import (peak_rules, recommend_serving, serving_markdown, serving_plot,
                                                      serving_recommendation_markdown, share_panels)
from trtbench.scenarios.serving.vision.result import ServedCase
from trtbench.scenarios.serving.vision.stage import serve_group, unserved
from trtbench.scenarios.serving.tokens.config import DecoderServingConfig
from trtbench.scenarios.serving.tokens.report import (decoder_peak_rules, decoder_serving_section,
                                                      decoder_serving_summary)
from trtbench.scenarios.serving.tokens.result import ServedDecoder
from trtbench.scenarios.serving.tokens.stage import serve_decoders, unserved_decoders


@dataclass(frozen=True)
class ServingKind:
    """What a serving entry serves, by the scenario listed before it (``beside``), and its steps."""

    beside: str
    settings: type[LoadSettings]
    needs: tuple[str, ...]
    decodes: bool
    example: str
    check: Callable[[Any, Any, str], None]
    owes: Callable[[Any, Any, Any], bool]
    serve: Callable[[Any, Any], Iterator[Part]]


KINDS = (
    ServingKind("latency", ServingConfig, ("inputs",), decodes=False,
                example="{serving: {p99_ms: 40, find_peak: true, workers: [1, 2]}}",
                check=lambda settings, config, key: settings.check_against_inputs(config.inputs, key),
                owes=lambda config, group, done: bool(unserved(config, group, done)), serve=serve_group),
    ServingKind("generate", DecoderServingConfig, (), decodes=True,
                example="{serving: {ttft_ms: 2000, tpot_ms: 200, find_peak: true, workers: [1]}}",
                check=lambda settings, config, key: settings.check_against_generate(config, key),
                owes=lambda config, group, done: bool(unserved_decoders(config, group, done)), serve=serve_decoders),
)


@register
class Serving(Scenario):
    """LoadGen's Server scenario over the builds of the scenario listed before it (see the module docstring)."""

    name = "serving"
    former_names = ("server",)  # its entry until the LoadGen core was shared by both kinds
    repeatable = True  # every serving entry of a kind is served by the kind's first (its stage), in order
    parts = (ServedCase, ServedDecoder)
    example = KINDS[0].example

    def __init__(self, settings: Any = None, kind: Optional[ServingKind] = None, written: tuple = (None, "")):
        super().__init__(settings)
        self.kind, self.written = kind, written  # written: its settings as listed, and their key, until placed
        if kind is not None:
            self.needs, self.decodes = kind.needs, kind.decodes

    @classmethod
    def parse(cls, value: Any, key: str) -> "Serving":
        """The entry as written: its settings are parsed once it is :meth:`placed`, as its kind's."""
        return cls(written=(value, key))

    def placed(self, before: list[Scenario], key: str) -> "Serving":
        """The entry as the kind of serving the nearest latency or generate scenario before it makes it."""
        kind = next((k for s in reversed(before) for k in KINDS if k.beside == s.name), None)
        if kind is None:
            raise UserInputError(key, "'serving' needs the 'latency' scenario before it (or 'generate', to serve "
                                 "its decoders)", "list 'latency' before 'serving' to serve the variants it times and "
                                 "checks for accuracy, or 'generate' to serve its decoders under token latencies")
        value, where = self.written
        keys = {k.beside: {f.name for f in fields(k.settings)} for k in KINDS}
        own = keys[kind.beside]
        for name in value if isinstance(value, dict) else {}:
            other = next((k for k in KINDS if k is not kind and name in keys[k.beside]), None)
            if name not in own and other is not None:
                raise UserInputError(schema.join(where, name), f"unknown key for serving beside '{kind.beside}': "
                                     f"it is a setting of serving beside '{other.beside}'",
                                     f"serving beside {kind.beside} takes {', '.join(sorted(own))}; write e.g. "
                                     f"{kind.example}")
        return Serving(schema.from_dict(kind.settings, value, where), kind)

    def check(self, config: Any, key: str) -> None:
        self.kind.check(self.settings, config, key)

    def owes(self, group, done) -> bool:
        return self.kind.owes(done.config, group, done)

    def run(self, ctx, built, prepared) -> Iterator[Part]:
        yield from self.kind.serve(ctx, built)

    @classmethod
    def report(cls, results, budget_ms: Optional[float]) -> Optional[ReportSection]:
        return joined([_vision_section(results), decoder_serving_section(results)])

    @classmethod
    def check_merge(cls, sets, names: list[str]) -> None:
        """Refuse inputs whose serving peaks were found by different rules, the vision and LLM peaks each apart."""
        for rules_of in (peak_rules, decoder_peak_rules):
            rules = [(name, rule) for results, name in zip(sets, names) for rule in sorted(rules_of(results))]
            for (first, rule), (name, other) in zip(rules, rules[1:]):
                if other != rule:
                    others = "some of its own" if first == name else f"those of {first}"
                    raise UserInputError(name, f"its serving peaks were found by the rule '{other}' and {others} by "
                                         f"'{rule}': peaks found by different rules do not compare",
                                         "serve the inputs again with the same trtbench and the same serving settings "
                                         "(validity, confidence), then merge them")

    @classmethod
    def summary(cls, results, budget_ms: Optional[float]) -> list[str]:
        under_load = recommend_serving(results)
        vision = (["recommendation under load (serving):", *[f"  {r.text(results.environments)}" for r in under_load]]
                  if under_load else [])
        return vision + decoder_serving_summary(results)


def _vision_section(results) -> Optional[ReportSection]:
    """The vision serving section: its Markdown, plots and results.json entries (None when nothing was served)."""
    plots = [plot for plot in (serving_plot(results, "serving.png"),
                               late_share_plot(share_panels(results), "serving_late_share.png")) if plot is not None]
    markdown = serving_markdown(results, plots)
    under_load = recommend_serving(results)
    if not markdown and not under_load:
        return None
    recommended = serving_recommendation_markdown(under_load, results.environments) if under_load else ""
    json = {"serving_recommendations": [r.to_dict() for r in under_load]} if under_load else {}
    return ReportSection("\n".join(part for part in (markdown, recommended) if part), json, tuple(plots))
