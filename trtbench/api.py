"""trtbench's Python API, also importable as ``trtbench.<name>`` (more: docs/api.md, "Module notes")."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from trtbench.core.errors import UserInputError
from trtbench.core.outdir import DEFAULT_HISTORY

if TYPE_CHECKING:
    from trtbench.config.config import Config
    from trtbench.history.gate import GateResult
    from trtbench.history.ingest import Ingested
    from trtbench.history.series import Series
    from trtbench.pipeline.state import RunOutcome
    from trtbench.results.compare import Change, GenerateChange, ServingChange
    from trtbench.results.resultset import ResultSet

__all__ = ["load_config", "run", "load_results", "compare", "Comparison", "history_series", "ingest", "rebuild",
           "accept", "forget", "export_csv", "gate", "HistoryQuery"]

ConfigSource = Union[str, Path, Mapping]


def load_config(source: ConfigSource, *, device: Optional[str] = None, variants: Optional[list[str]] = None,
                output_dir: Optional[str] = None, profile: bool = False) -> "Config":
    """A validated config from a YAML file path, a bundled config's name or a dict (copied), with the overrides."""
    from trtbench.config.config import config_from_dict, load_config as load_file

    if isinstance(source, (str, Path)):
        return load_file(source, device=device, variants=variants, output_dir=output_dir, profile=profile)
    if not isinstance(source, Mapping):
        raise UserInputError("config", f"expected a dict or a path to a YAML file, got {type(source).__name__}",
                             "pass the config's content as a dict (name: ..., model: ..., inputs: ...) or its file")
    return config_from_dict(copy.deepcopy(dict(source)), device=device, variants=variants, output_dir=output_dir,
                            profile=profile)


def run(config: Union["Config", ConfigSource], *, fresh: bool = False,
        shard: Union[str, tuple[int, int], None] = None, p99_budget_ms: Optional[float] = None,
        quiet: bool = False) -> "RunOutcome":
    """Run a config (or anything :func:`load_config` takes) as ``trtbench run`` does; the run's outcome."""
    from trtbench.config.config import Config
    from trtbench.config.plan import parse_shard, resolve
    from trtbench.core.progress import Progress
    from trtbench.pipeline.runner import run_config

    if not isinstance(config, Config):
        config = load_config(config)
    if p99_budget_ms is not None:
        config = dataclasses.replace(config, budget=dataclasses.replace(config.budget, p99_ms=p99_budget_ms))
    if isinstance(shard, str):
        shard = parse_shard(shard)
    return run_config(resolve(config, shard), Progress(quiet=quiet), fresh=fresh)


def load_results(path: Union[str, Path]) -> "ResultSet":
    """The result set of a run: its output folder or its ``results.json`` (schema versions 1 to 5)."""
    import trtbench.scenarios  # noqa: F401  (registers every scenario's part kinds, which results.json holds)
    from trtbench.results.resultset import ResultSet

    return ResultSet.load(path)


@dataclass(frozen=True)
class Comparison:
    """Two result sets compared case by case: what ``trtbench compare`` prints is ``str(comparison)``."""

    changes: tuple["Change", ...]  # the latency cases
    threshold: float
    generate: tuple["GenerateChange", ...] = ()  # the generate rows' times (TTFT, TPOT, E2E)
    regimes: tuple[str, ...] = ()  # each run's points whose rounds fell into more than one of the machine's regimes
    serving: tuple["ServingChange", ...] = ()  # each served peak beside the baseline's, with their intervals

    def of(self, *verdicts: str) -> list[Union["Change", "GenerateChange"]]:
        """The changes, latency and generate, with one of ``verdicts`` (faster, slower, no change, within noise)."""
        return [c for c in self.changes + self.generate if c.verdict in verdicts]

    @property
    def faster(self) -> list["Change"]:
        return self.of("faster")

    @property
    def slower(self) -> list["Change"]:
        return self.of("slower")

    def table(self) -> str:
        """The Markdown tables: one row per case of the new set, then its generate rows' and served peaks'."""
        from trtbench.results.compare import changes_table, generate_changes_table, serving_changes_table

        tables = [changes_table(list(self.changes))] if self.changes or not (self.generate or self.serving) else []
        if self.generate:
            tables.append(generate_changes_table(list(self.generate)))
        if self.serving:
            tables.append(serving_changes_table(list(self.serving)))
        return "\n".join(tables)

    def summary(self) -> str:
        return (f"{len(self.faster)} faster, {len(self.slower)} slower, "
                f"{len(self.of('no change', 'within noise'))} unchanged or within noise")

    def __str__(self) -> str:
        regimes = "".join(f"- {line}\n" for line in self.regimes)
        return f"{self.table()}\n{regimes}{self.summary()}\n"


def compare(baseline: Union["ResultSet", str, Path], new: Union["ResultSet", str, Path], *,
            threshold: float = 0.05) -> Comparison:
    """Compare ``new`` with ``baseline`` (result sets, or their folders) as ``trtbench compare`` does."""
    from trtbench.results.compare import compare_generate, compare_runs, compare_serving, regime_lines
    from trtbench.results.resultset import ResultSet

    sides = [side if isinstance(side, ResultSet) else load_results(side) for side in (baseline, new)]
    return Comparison(tuple(compare_runs(sides[0], sides[1], threshold)), threshold,
                      tuple(compare_generate(sides[0], sides[1], threshold)),
                      tuple(regime_lines("baseline", sides[0]) + regime_lines("new", sides[1])),
                      tuple(compare_serving(*sides)))


@dataclass(frozen=True)
class HistoryQuery:
    """Which series :func:`history_series` reads, and the smallest relative step reported (docs/api.md)."""

    model: Optional[str] = None
    variant: Optional[str] = None
    figure: Optional[str] = None
    since: Optional[str] = None
    threshold: float = 0.05


def _existing(where: Union[str, Path]) -> str:
    from trtbench.history.ingest import existing

    return existing(str(where))


def history_series(where: Union[str, Path] = DEFAULT_HISTORY, query: HistoryQuery = HistoryQuery()) -> list["Series"]:
    """The history's series as ``trtbench history`` lists them (:class:`~trtbench.history.series.Series`)."""
    from trtbench.history.series import SeriesFilter, read_history

    keep = SeriesFilter(query.model, query.variant, query.figure, query.since)
    return read_history(_existing(where), keep, query.threshold)


def ingest(dirs: list[Union[str, Path]], where: Union[str, Path] = DEFAULT_HISTORY) -> "Ingested":
    """Add the runs of each output folder to the history, each run once (by its id), whatever its schema."""
    import trtbench.scenarios  # noqa: F401  (registers the part kinds whose figures the history keeps)
    from trtbench.history.ingest import ingest as ingest_dirs

    return ingest_dirs(str(where), [str(d) for d in dirs])


def rebuild(dirs: list[Union[str, Path]], where: Union[str, Path] = DEFAULT_HISTORY) -> "Ingested":
    """Recreate the history from the output folders alone (a lost or corrupt database)."""
    import trtbench.scenarios  # noqa: F401  (registers the part kinds whose figures the history keeps)
    from trtbench.history.ingest import rebuild as rebuild_dirs

    return rebuild_dirs(str(where), [str(d) for d in dirs])


def _on_run(run: str, where: Union[str, Path], action: str) -> str:
    """The id of the stored run ``run`` (an id, its start or a label), after the store's ``action`` on it."""
    from trtbench.history.store import open_store

    with open_store(_existing(where)) as store:
        found = store.find_run(run)
        getattr(store, action)(found.run_id)
    return found.run_id


def accept(run: str, where: Union[str, Path] = DEFAULT_HISTORY) -> str:
    """Accept run ``run``'s levels as the new normal (the gate's baseline starts there); returns its id."""
    return _on_run(run, where, "accept")


def forget(run: str, where: Union[str, Path] = DEFAULT_HISTORY) -> str:
    """Drop run ``run`` and its points from the history (its folder keeps it); returns its id."""
    return _on_run(run, where, "forget")


def export_csv(where: Union[str, Path] = DEFAULT_HISTORY) -> str:
    """Every point of the history as CSV (the same bytes from SQLite and PostgreSQL)."""
    from trtbench.history.store import open_store
    from trtbench.history.text import export_csv as csv_text

    with open_store(_existing(where)) as store:
        return csv_text(store)


def gate(run_dir: Optional[Union[str, Path]] = None, where: Union[str, Path] = DEFAULT_HISTORY, *,
         figures: Optional[list[str]] = None, threshold: float = 0.05) -> "GateResult":
    """Gate ``run_dir`` (added first if missing; None: the latest stored run) as ``trtbench gate`` does."""
    from trtbench.history.figures import stored_runs
    from trtbench.history.gate import DEFAULT_FIGURES, GateSettings, gate_run
    from trtbench.history.ingest import append
    from trtbench.history.store import open_store

    settings = GateSettings(tuple(figures) if figures else DEFAULT_FIGURES, threshold)
    with open_store(_existing(where)) as store:
        if run_dir is None:
            return gate_run(store, None, settings)
        results = load_results(run_dir)
        runs = stored_runs(results, str(run_dir))
        if not runs:
            raise UserInputError(str(run_dir), "the run has no figures to gate (no row, or no start time)",
                                 "gate the output folder of a run that measured something")
        append(store, results, str(run_dir))
        return gate_run(store, runs[-1].run.run_id, settings)
