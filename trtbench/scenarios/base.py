"""What a scenario is: the :class:`Scenario` protocol, and the registry the config and the runner read
(docs/architecture.md, "Module notes", trtbench/scenarios/base.py)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, is_dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Optional

from trtbench.core.errors import UserInputError
from trtbench.core.part import Part, register_part, unregister_part
from trtbench.core.registry import Registry

if TYPE_CHECKING:
    from trtbench.config.plan import BuildGroup
    from trtbench.config.context import RunContext
    from trtbench.measure.references import References
    from trtbench.report.section import ReportSection
    from trtbench.results.resultset import ResultSet


@dataclass(frozen=True)
class Testbed:
    """One build group once built: ``outcomes`` by slot id, ``copies`` by precision, eager fp32's ``references``,
    what the run has ``done`` so far, and the group's ``model`` (eager fp32, on the CPU)."""

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
    decodes: ClassVar[bool] = False  # its variants: entries name decoders, which it builds itself

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
        """This entry once the scenarios listed before it are known (UserInputError where it lacks one)."""
        for needed in self.requires:
            if not any(s.name == needed for s in before):
                raise UserInputError(key, f"'{self.name}' needs the '{needed}' scenario before it",
                                     f"list '{needed}' before '{self.name}': {self.name} runs on what {needed} "
                                     f"measures (its builds, timed and checked for accuracy)")
        return self

    def entry(self) -> Any:
        """Its config entry as plain data: its name, or a mapping from its name to its settings."""
        if self.settings is None:
            return self.name
        return {self.name: asdict(self.settings) if is_dataclass(self.settings) else self.settings}

    def check(self, config: Any, key: str) -> None:
        """Check the entry against the rest of the config (its ``key``); raise UserInputError naming it."""

    @abstractmethod
    def owes(self, group: BuildGroup, done: Any) -> bool:
        """Whether it still has something to run for ``group``, given what the run has ``done``."""

    def prepare(self, ctx: RunContext, group: BuildGroup) -> Any:
        """Start what it needs before the group builds (worker processes, say); :meth:`run` gets it back."""
        return None

    @abstractmethod
    def run(self, ctx: RunContext, built: Testbed, prepared: Any) -> Iterable[Part]:
        """Exercise the group's variants; yield each part (and each :class:`Saved`) as it is final."""

    @classmethod
    def report(cls, results: ResultSet, budget_ms: Optional[float]) -> Optional[ReportSection]:
        """Its section of the report from ``results`` alone (a run's or a merge's); None when it has nothing."""
        return None

    @classmethod
    def check_merge(cls, sets: list[ResultSet], names: list[str]) -> None:
        """Raise UserInputError naming ``names[i]`` when its results in ``sets`` do not compare."""

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
