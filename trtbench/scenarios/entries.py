"""The config's ``scenarios:`` list: how each built variant is exercised.

``latency`` (the interleaved timing, and the default) is named by itself; a serving scenario is a
single-key mapping from its LoadGen scenario to its settings, e.g.
``scenarios: [latency, {server: {p99_ms: 40, find_peak: true, workers: [1, 2]}}]``.
"""

from __future__ import annotations

from typing import Any, Union

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.scenarios.serving_config import ServingConfig

LATENCY = "latency"
SERVING = {"server": ServingConfig}  # LoadGen scenario -> its settings
EXAMPLE = "write e.g. scenarios: [latency, {server: {p99_ms: 40, find_peak: true, workers: [1, 2]}}]"

ScenarioEntry = Union[str, ServingConfig]


def parse_scenarios(entries: Any, path: str, inputs: list) -> list[ScenarioEntry]:
    """Validate the list: ``latency`` first, once; serving entries checked against the ``inputs``."""
    if not isinstance(entries, list) or not entries:
        raise UserInputError(path, f"expected a non-empty list, got {entries!r}", EXAMPLE)
    parsed: list[ScenarioEntry] = []
    for i, entry in enumerate(entries):
        key = schema.join(path, i)
        if isinstance(entry, ServingConfig):
            parsed.append(entry)
        elif entry == LATENCY:
            if LATENCY in parsed:
                raise UserInputError(key, "'latency' is listed twice", "list it once")
            parsed.append(LATENCY)
        elif isinstance(entry, dict) and len(entry) == 1 and next(iter(entry)) in SERVING:
            name, settings = next(iter(entry.items()))
            serving = schema.from_dict(SERVING[name], settings, schema.join(key, name))
            serving.check_against_inputs(inputs, schema.join(key, name))
            parsed.append(serving)
        else:
            name = next(iter(entry)) if isinstance(entry, dict) and len(entry) == 1 else entry
            known = [LATENCY, *SERVING]
            hint = ((schema.suggest(name, known) if isinstance(name, str) else "")
                    or f"known scenarios: {', '.join(known)}")
            raise UserInputError(key, f"unknown scenario {name!r}", f"{hint}; {EXAMPLE}")
    if LATENCY not in parsed:
        raise UserInputError(path, "does not list 'latency'",
                             "keep 'latency' in the list: serving runs the builds that the latency scenario times "
                             "and checks for accuracy")
    return parsed


def serving_scenarios(entries: list[ScenarioEntry]) -> list[ServingConfig]:
    return [entry for entry in entries if isinstance(entry, ServingConfig)]
