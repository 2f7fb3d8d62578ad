"""The config's ``scenarios:`` list: each entry a scenario's name, or a single-key mapping to its settings."""

from __future__ import annotations

from typing import Any

from trtbench.core import schema
from trtbench.core.errors import UserInputError
from trtbench.scenarios.base import SCENARIOS, Scenario, registered, scenario_class

DEFAULT = ["latency"]


def _example() -> str:
    """How the list is written, from each listed scenario's own example entry."""
    return f"write e.g. scenarios: [{', '.join(c.example for c in registered() if c.listed and c.example)}]"


def parse_scenarios(entries: Any, path: str) -> list[Scenario]:
    """The scenarios listed at ``path``, each in its :meth:`~trtbench.scenarios.base.Scenario.placed` form."""
    if not isinstance(entries, list) or not entries:
        raise UserInputError(path, f"expected a non-empty list, got {entries!r}", _example())
    parsed: list[Scenario] = []
    for i, entry in enumerate(entries):
        key = schema.join(path, i)
        if isinstance(entry, Scenario):
            parsed.append(entry)
            continue
        if isinstance(entry, dict) and len(entry) == 1:
            name, value = next(iter(entry.items()))
        else:
            name, value = entry, None
        cls = scenario_class(name) if isinstance(name, str) else None
        renamed = next((c for c in registered() if name in c.former_names), None)
        if renamed is not None:
            raise UserInputError(key, f"the '{name}' scenario is now called '{renamed.name}'",
                                 f"rename the entry to '{renamed.name}', with the same settings: e.g. "
                                 f"{renamed.example}")
        if cls is None:
            hint = SCENARIOS.hint(name, [c.name for c in registered() if c.listed])
            raise UserInputError(key, f"unknown scenario {name!r}", f"{hint}; {_example()}")
        if any(s.name == name for s in parsed) and not cls.repeatable:
            raise UserInputError(key, f"'{name}' is listed twice", "list it once")
        parsed.append(cls.parse(value, schema.join(key, name) if value is not None else key).placed(parsed, key))
    return parsed


def check_scenarios(scenarios: list[Scenario], config: Any, path: str) -> None:
    """Each scenario's entry against the rest of the config, and the sections they need present."""
    for i, scenario in enumerate(scenarios):
        key = schema.join(path, i)
        for section in scenario.needs:
            if not getattr(config, section, None):
                raise UserInputError(section, f"is missing, and the '{scenario.name}' scenario ({key}) needs it",
                                     f"add a {section}: section (see the bundled configs), or drop "
                                     f"'{scenario.name}' from scenarios")
        scenario.check(config, schema.join(key, scenario.name))
