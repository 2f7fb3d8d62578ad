"""What a scenario is: the :class:`Scenario` protocol, and the registry the config and the runner read.

More: docs/architecture.md, "Module notes", trtbench/scenarios/base.py.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Optional

from trtbench.core.errors import UserInputError
from trtbench.core.part import Part, register_part, unregister_part
from trtbench.core.registry import Registry

if TYPE_CHECKING:
    from trtbench.config.plan import BuildGroup
    from trtbench.core.context import RunContext
    from trtbench.measure.references import References
    from trtbench.report.section import ReportSection
    from trtbench.results.resultset import ResultSet


@dataclass(frozen=True)
class Testbed:
    """One build group once built: the testbed every scenario runs on (its plan: a config.plan.BuildGroup).

    ``outcomes``: slot id -> :class:`~trtbench.building.stage.BuildOutcome`; ``copies``: precision ->
    :class:`~trtbench.building.copies.PrecisionCopy` (the model and inputs at its dtype); ``references``:
    eager fp32's outputs and FLOPs at each point; ``tolerances``: precision -> its accuracy tolerance;
    ``done``: what the run has so far (records by case key, parts by kind, saved files); ``model``: the group's
    model as built (eager, fp32, on the CPU). Where no listed scenario reads ``inputs:`` the runner builds no
    variant: ``outcomes`` and ``copies`` are empty and ``references`` is None."""

    group: BuildGroup
    outcomes: dict
    copies: dict
    references: References
    tolerances: dict
    done: Any  # trtbench.pipeline.state.RunState: records, parts(kind), saved_files(group, precision)
    model: Any = None


class Scenario(ABC):
    """Base of every scenario; see the module docstring. One instance per config entry."""

    name: ClassVar[str]  # its entry in the config's scenarios: list
    former_names: ClassVar[tuple[str, ...]] = ()  # what its entry was called before: refused, naming the new name
    needs: ClassVar[tuple[str, ...]] = ("inputs",)  # config sections it reads
    requires: ClassVar[tuple[str, ...]] = ()  # scenarios that must be listed before it
    parts: ClassVar[tuple[type, ...]] = ()  # the part types it returns
    after_save: ClassVar[bool] = False  # runs once the group's artifacts are saved (it reads them)
    repeatable: ClassVar[bool] = False  # may be listed more than once (with other settings)
    example: ClassVar[str] = ""  # its entry as written in the scenarios: list, for error messages
    decodes: ClassVar[bool] = False  # its variants: entries name decoders (trtbench.decoders), which it builds
    # itself from the model's folder, at the precisions decoders have (DECODER_PRECISIONS)

    def __init__(self, settings: Any = None):
        self.settings = settings

    @classmethod
    def parse(cls, value: Any, key: str) -> "Scenario":
        """The scenario for its config entry: ``value`` is None for a bare name, else its settings."""
        if value is not None:
            raise UserInputError(key, f"'{cls.name}' takes no settings", f"list it by name: - {cls.name}")
        return cls()

    listed: ClassVar[bool] = True  # written in the config's scenarios: list (profile has a section of its own)

    def placed(self, before: list["Scenario"], key: str) -> "Scenario":
        """This entry once the scenarios listed before it (``before``) are known, ``key`` its place in the list:
        itself, where each scenario it :attr:`requires` is among them (UserInputError naming ``key`` otherwise). A
        scenario that serves what an earlier one made (serving: the latency scenario's variants, or generate's
        decoders) returns its settled form."""
        for needed in self.requires:
            if not any(s.name == needed for s in before):
                raise UserInputError(key, f"'{self.name}' needs the '{needed}' scenario before it",
                                     f"list '{needed}' before '{self.name}': {self.name} runs on what {needed} "
                                     f"measures (its builds, timed and checked for accuracy)")
        return self

    def entry(self) -> Any:
        """Its config entry as plain data, as results.json keeps the config: its name, or a mapping from its
        name to its settings."""
        if self.settings is None:
            return self.name
        settings = self.settings
        return {self.name: dataclasses.asdict(settings) if dataclasses.is_dataclass(settings) else settings}

    def check(self, config: Any, key: str) -> None:
        """Check the entry against the rest of the config (its ``key``); raise UserInputError naming it."""

    @abstractmethod
    def owes(self, group: BuildGroup, done: Any) -> bool:
        """Whether it still has something to run for ``group``, given what the run has ``done``."""

    def prepare(self, ctx: RunContext, group: BuildGroup) -> Any:
        """Start what it needs before the group builds (worker processes, say), or None; called only where it
        :meth:`owes` the group something, and not for an ``after_save`` scenario (its ``run`` gets None).
        :meth:`run` gets it back, and the runner calls its ``close()`` once the scenarios before the save
        have run."""
        return None

    @abstractmethod
    def run(self, ctx: RunContext, built: Testbed, prepared: Any) -> Iterable[Part]:
        """Exercise the group's variants; yield each part as it is final, so a kill loses only the rest. A scenario
        that builds and saves its own artifacts (generate's decoders) also yields each save's manifest entries
        (:class:`~trtbench.artifacts.store.Saved`), which the run keeps as it keeps the save stage's."""

    @classmethod
    def report(cls, results: ResultSet, budget_ms: Optional[float]) -> Optional[ReportSection]:
        """Its section of the report from ``results`` alone (a run's or a merge's), its figures as data (the writer
        saves them; a scenario writes no file); None when it has nothing."""
        return None

    @classmethod
    def check_merge(cls, sets: list[ResultSet], names: list[str]) -> None:
        """Raise UserInputError, naming the input (``names[i]`` for ``sets[i]``), when its results in ``sets``
        do not compare, so a merge must not put them in one report; by default they do."""

    @classmethod
    def summary(cls, results: ResultSet, budget_ms: Optional[float]) -> list[str]:
        """Its recommendation from ``results``, as lines for the command line (none by default)."""
        return []


SCENARIOS: Registry[Scenario] = Registry("scenario")


def register(cls: type[Scenario]) -> type[Scenario]:
    """Class decorator: make ``cls`` a scenario the config can list, its parts readable by the journal."""
    for part in cls.parts:
        register_part(part)
    return SCENARIOS.register(cls)


def unregister(name: str) -> None:
    cls = SCENARIOS.unregister(name)
    for part in getattr(cls, "parts", ()):
        if all(part not in other.parts for other in SCENARIOS.classes()):
            unregister_part(part.KIND)


scenario_class = SCENARIOS.find
registered = SCENARIOS.classes  # in registration order: the report's order
