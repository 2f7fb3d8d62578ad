"""A run: resolve -> per build group: build -> measure each point -> save -> report.

Each stage returns typed values (:class:`~trtbench.build.BuildOutcome`,
:class:`~trtbench.record.Record`); this module only sequences them, keeps the journal that makes
a run resumable, and restores the global torch settings it changed. One failing variant never
stops the others; Ctrl-C stops the run and what was measured is written, the rest marked
``interrupted``; a run killed outright resumes from its journal.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import torch

from trtbench.artifacts import ArtifactStore, weights_bytes
from trtbench.build import BuildOutcome, build_variants
from trtbench.ceiling import device_ceilings
from trtbench.env import collect_environment
from trtbench.isolation import InProcess, Isolation, VariantWorkers
from trtbench.journal import Journal, JournalState
from trtbench.scenarios.latency import measure_point
from trtbench.models import build_model
from trtbench.outdir import FailureLog, OutputDir
from trtbench.plan import BuildGroup, RunPlan, ShapePoint
from trtbench.precision import float_precision, is_quantized, precision_dtype
from trtbench.precision_copies import PrecisionCopy, point_inputs, precision_copies
from trtbench.progress import Progress
from trtbench.publish import publish
from trtbench.record import Record
from trtbench.references import References, eager_references
from trtbench.report.writer import write_outputs
from trtbench.resultset import ResultSet
from trtbench.scenarios.serving_stage import serve_group
from trtbench.status import RunStatus, Status
from trtbench.variants import BuildContext, build_order, get_variant


@dataclass
class RunOutcome:
    """What a run produced and the exit code the CLI returns."""

    out_dir: Path
    results: ResultSet
    environment: dict
    interrupted: bool = False
    resumed: int = 0  # cases kept from an earlier, unfinished run
    files: dict = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return self.results.exit_code(self.interrupted)


@contextlib.contextmanager
def torch_settings(threads: int, cudnn_benchmark: bool) -> Iterator[None]:
    """Set torch's thread count and cuDNN autotuning for a block, then restore them."""
    old_threads, old_cudnn = torch.get_num_threads(), torch.backends.cudnn.benchmark
    torch.set_num_threads(threads)
    torch.backends.cudnn.benchmark = cudnn_benchmark
    try:
        yield
    finally:
        torch.set_num_threads(old_threads)
        torch.backends.cudnn.benchmark = old_cudnn


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", text).strip("-")


class Runner:
    """Runs a resolved :class:`RunPlan` into its output directory."""

    def __init__(self, plan: RunPlan, progress: Progress | None = None, fresh: bool = False):
        self.plan = plan
        self.config = plan.config
        self.progress = progress or Progress(quiet=True)
        self.fresh = fresh
        self.device = plan.device
        self.out_dir = Path(self.config.output.dir)
        self.journal = Journal(self.out_dir)
        self.failures = FailureLog(self.out_dir)
        self.store = ArtifactStore(self.out_dir / "artifacts")
        self.records: dict[str, Record] = {}  # case key -> record, in case order
        self.saved: dict[tuple, list[dict]] = {}  # (model, precision, variant) -> artifact entries
        self.profiles: dict | None = None
        self.resumed = 0
        self.calibration = None  # trtbench.calibration.CalibrationData, loaded when a variant quantizes
        self.unfinished = False  # some planned case was not reached (Ctrl-C, a run-level error): resumable

    # ---- the run -----------------------------------------------------------------------------

    def run(self) -> RunOutcome:
        models = {m.id: build_model(m) for m in self.config.models}  # user errors surface before any write
        if any(self._quantizes(group, p) for group in self.plan.groups for p in group.precisions):
            from trtbench.calibration import load_calibration  # bad calibration data is bad input: before any write

            self.calibration = load_calibration(self.config.calibration, self.config.inputs, self.config.benchmark.seed)
        with OutputDir(self.out_dir):
            return self._run_locked(models)

    def _run_locked(self, models: dict[str, torch.nn.Module]) -> RunOutcome:
        if self.fresh:
            self._discard_previous()
        earlier = self.journal.read()
        if earlier.complete:  # the last run finished: measure anew, in a new journal
            self.journal.discard()
        self.store.discard_previous_manifest()
        environment = collect_environment(self.device, self.config.benchmark.cudnn_benchmark)
        env_id = environment["id"]
        self.resumed = resumed = self._resume(earlier, env_id)
        self.journal.environment(environment)
        started = datetime.now(timezone.utc)
        interrupted = False
        on_device = torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()
        try:
            with on_device:
                for model_cfg in self.config.models:
                    model = models[model_cfg.id]
                    groups = [g for g in self.plan.groups if g.model.id == model_cfg.id]
                    if not groups or all(self._group_done(g) for g in groups):
                        continue
                    references = eager_references(model, point_inputs(self.config, groups[0].points, self.device,
                                                                     torch.float32), self.device)
                    for group in groups:
                        if not self._group_done(group):
                            self._run_group(group, model, references, env_id)
        except KeyboardInterrupt:
            interrupted = True
            self._account_unfinished(env_id, Status.INTERRUPTED, "not run: stopped by Ctrl-C")
        except Exception as err:  # outside any one variant (out of memory copying the model...): keep what ran
            reason = self.failures.reason("the run", err)
            self._account_unfinished(env_id, Status.FAILED, f"not run: the run stopped ({reason})")
        results = self._result_set(earlier, environment, started, interrupted)
        self.store.entries = [entry for entries in self.saved.values() for entry in entries]
        manifest = self.store.write_manifest(self.config.to_dict(), environment) if self.config.output.save_artifacts else None
        files = write_outputs(self.out_dir, self.config, results, interrupted, manifest, self.profiles)
        if not self.unfinished:  # nothing left to resume: the next run of this command measures anew
            self.journal.complete()
        return RunOutcome(self.out_dir, results, environment, interrupted, resumed, files)

    def _discard_previous(self) -> None:
        self.journal.discard()
        for name in ("results.json", "results.csv", "report.md", "failures.log"):
            (self.out_dir / name).unlink(missing_ok=True)

    def _resume(self, earlier: JournalState, env_id: str) -> int:
        """Keep the earlier run's final records of planned cases measured in this same environment,
        whole points only: the variants of a point are timed together (their speedups pair their
        rounds), so a point the kill cut between two journal lines is measured again, all of it."""
        kept = 0
        for group in self.plan.groups:
            for point in group.points:
                keys = [group.case(entry, point, precision).key for entry, precision in group.slots()]
                found = [earlier.records.get(key) for key in keys]
                if all(r is not None and r.environment == env_id for r in found):
                    self.records.update(zip(keys, found))
                    kept += len(keys)
        planned_saves = {(g.model.id, p, e.name) for g in self.plan.groups for e, p in g.slots()}
        self.saved.update({tuple(k): v for k, v in earlier.artifacts.items() if tuple(k) in planned_saves})
        return kept

    def _result_set(self, earlier: JournalState, environment: dict, started: datetime, interrupted: bool) -> ResultSet:
        results = ResultSet(environments={**earlier.environments, environment["id"]: environment})
        results.runs.append({"name": self.config.name, "config": self.config.to_dict(),
                             "environment": environment["id"],
                             "started_at": started.isoformat(timespec="seconds"),
                             "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                             "status": RunStatus.INTERRUPTED if interrupted else RunStatus.COMPLETE,
                             "shard": list(self.plan.shard) if self.plan.shard else None,
                             "resumed_cases": self.resumed,
                             **({"profiles": self.profiles} if self.profiles is not None else {})})
        for case in self.plan.cases:  # in plan order, whatever order they completed in
            if case.key in self.records:
                results.add(self.records[case.key])
        return results

    # ---- one build group ---------------------------------------------------------------------

    def _points_todo(self, group: BuildGroup) -> list[ShapePoint]:
        return [p for p in group.points
                if any(group.case(e, p, precision).key not in self.records for e, precision in group.slots())]

    def _saves_todo(self, group: BuildGroup, precision: str) -> list[str]:
        """Variants at ``precision`` whose artifacts still need saving (the save step is journaled once done)."""
        if not self.config.output.save_artifacts:
            return []
        return [n for n in group.build_names_at(precision) if self._save_key(group, n, precision) not in self.saved
                and any(e.name == n for e in group.entries_at(precision))]

    def _group_done(self, group: BuildGroup) -> bool:
        return not self._points_todo(group) and not any(self._saves_todo(group, p) for p in group.precisions)

    def _save_key(self, group: BuildGroup, name: str, precision: str) -> tuple:
        return (group.model.id, precision, name)

    def _run_group(self, group: BuildGroup, model: torch.nn.Module, references: References, env_id: str) -> None:
        bench = self.config.benchmark
        with torch_settings(group.threads, bench.cudnn_benchmark):
            points = self._points_todo(group)
            copies = precision_copies(model, group.precisions, self.config, group.points, self.device)
            timed = dict.fromkeys(copies[p].dtype for e, p in group.slots() if group.slot(e.name, p) not in group.unavailable)
            ceilings = {dtype: device_ceilings(self.device, dtype, group.threads, bench.measure_ceiling)
                        if points and dtype in timed else {} for dtype in dict.fromkeys(c.dtype for c in copies.values())}
            options = {entry.name: entry.options for entry in group.variants}
            tolerances = {p: self.config.tolerances[p] for p in group.precisions}
            workers = None  # spawned now, so that they import torch while this process builds
            if points and bench.isolation == "process":
                workers = VariantWorkers(sum(group.slot(e.name, p) not in group.unavailable for e, p in group.slots()),
                                         bench.worker_timeout_s)
            try:
                outcomes: dict[str, BuildOutcome] = {}  # slot key -> its build
                for precision in group.precisions:
                    names = (group.build_names_at(precision) if points
                             else build_order(self._saves_todo(group, precision)))  # saves left only
                    at = copies[precision]
                    ctx = BuildContext(device=self.device, precision=precision, dtype=at.dtype, example_inputs=at.example,
                                       shape_inputs=at.inputs, input_specs=self.config.inputs,
                                       int8=self._int8_setup(group, at.model, precision))
                    outcomes.update(self._build(group, precision, names, at.model, ctx, options, outcomes))
                isolation = self._isolation(group, outcomes, copies, workers) if points else None
                for point in points:
                    slots = [(group.slot(e.name, p), group.case(e, point, p)) for e, p in group.slots()]
                    title = f"time {group.model.id} {'+'.join(group.precisions)} t{group.threads} {point.label}"
                    with self.progress.task(title, timed=True) as tick:
                        records = measure_point(slots, outcomes, {p: c.inputs[point.label] for p, c in copies.items()},
                                                references.outputs[point.label],
                                                tolerances, bench.timing, self.device, env_id, self.failures,
                                                isolation, tick)
                    point_flops = {"flops": references.flops[point.label]} if point.label in references.flops else {}
                    for record in records:
                        self._keep(record.with_metrics(**point_flops, ceiling=ceilings[copies[record.case.precision].dtype]))
            finally:
                if workers is not None:
                    workers.close()
            if points and self.config.serving:
                for record in serve_group(self.config, group, outcomes, copies, self.records,
                                          self.device, self.out_dir, self.progress.log):
                    self._keep(record)
            self._add_run_info(group, outcomes, points)
            for precision in group.precisions:
                for name in self._saves_todo(group, precision):
                    self._save(group, precision, outcomes[group.slot(name, precision)], copies[precision].inputs,
                               tolerances[float_precision(precision)], weights_bytes(copies[precision].model))
            self._profile_if_configured(group, outcomes, copies)

    @staticmethod
    def _quantizes(group: BuildGroup, precision: str) -> bool:
        """Whether some variant of ``group`` is built at the quantized ``precision`` here."""
        return is_quantized(precision) and any(group.slot(e.name, precision) not in group.unavailable
                                               for e in group.entries_at(precision))

    def _int8_setup(self, group: BuildGroup, model: torch.nn.Module, precision: str):
        """What a quantizing build at ``precision`` needs (calibration data, budget); None at float precisions."""
        if not self._quantizes(group, precision):
            return None
        from trtbench.quantize.setup import int8_setup

        return int8_setup(self.config, self.calibration, model)

    def _isolation(self, group: BuildGroup, outcomes: dict[str, BuildOutcome], copies: dict[str, PrecisionCopy],
                   workers: VariantWorkers | None) -> Isolation:
        """Where this group's variants are timed: ``workers`` (spawned for ``isolation: process``) get
        their variants here, or else this process times them."""
        bench = self.config.benchmark
        built = {group.slot(e.name, p): p for e, p in group.slots()
                 if outcomes[group.slot(e.name, p)].built is not None}
        if workers is None:
            return InProcess(self.device, {k: outcomes[k].variant.thread_settings(outcomes[k].built) for k in built})
        self.progress.log(f"start {len(built)} timing worker(s) for {group.model.id} {'+'.join(group.precisions)}")
        options = {entry.name: entry.options for entry in group.variants}
        builds = {k: (outcomes[k].variant, outcomes[k].built) for k in built}
        return workers.start(builds, copies, precisions=built,
                             model=group.model, options=options,
                             device=str(self.device), threads=group.threads,
                             cudnn_benchmark=bench.cudnn_benchmark, channels_last=self.config.channels_last,
                             input_specs=self.config.inputs)

    def _add_run_info(self, group: BuildGroup, outcomes: dict[str, BuildOutcome], points: list[ShapePoint]) -> None:
        """Facts a variant knows only after every point ran (compiled's recompilations) join its build info."""
        for entry, precision in group.slots():
            outcome = outcomes.get(group.slot(entry.name, precision))
            if outcome is None or outcome.built is None:
                continue
            info = outcome.variant.run_info(outcome.built)
            if not info:
                continue
            for point in points:
                record = self.records.get(group.case(entry, point, precision).key)
                if record is not None:
                    self._keep(record.with_build_info(info))

    def _build(self, group: BuildGroup, precision: str, names: list[str], model, ctx,
               options, earlier: dict[str, BuildOutcome]) -> dict[str, BuildOutcome]:
        """Build ``names`` at ``precision``, by slot key. What they only build from (``exported``,
        ``onnx``) is reused from the group's first precision where it built there and ``precision`` has
        its dtype: at a quantized precision the model and inputs are the same, and only the timed
        variants quantize (fp16 builds everything from its own half copy)."""
        slots = {e.name for e in group.entries_at(precision)}
        same_dtype = precision_dtype(precision) == precision_dtype(group.precision)
        reuse = {n: earlier[n] for n in names if precision != group.precision and same_dtype
                 and n not in slots and n in earlier and earlier[n].built is not None}
        ctx.built.update({n: outcome.built for n, outcome in reuse.items()})
        unavailable = {name: group.unavailable[group.slot(name, precision)] for name in slots
                       if group.slot(name, precision) in group.unavailable}
        built = build_variants([n for n in names if n not in reuse], model, ctx, options, unavailable, self.failures,
                               on_build=lambda name: self.progress.log(f"build {group.model.id} {name} {precision}"))
        outcomes = {}
        for name in slots:  # a variant that cannot run at this precision is skipped, even where others build from it
            if name in unavailable:
                outcomes[group.slot(name, precision)] = BuildOutcome(get_variant(name), status=Status.SKIPPED,
                                                                     reason=unavailable[name])
            elif name in built:
                outcomes[group.slot(name, precision)] = built[name]
        for name, outcome in built.items():  # build steps (onnx) stay available to the saves
            outcomes.setdefault(group.slot(name, precision), outcome)
        return outcomes

    def _keep(self, record: Record) -> None:
        self.records[record.case.key] = record
        if record.status.final:
            self.journal.record(record)

    # ---- saving ------------------------------------------------------------------------------

    def _save(self, group: BuildGroup, precision: str, outcome: BuildOutcome, inputs: dict, tolerance,
              expected_bytes: int) -> None:
        """The save stage for one variant at ``precision`` (:func:`trtbench.publish.publish`); journal that it is done."""
        entry = next(e for e in group.variants if e.name == outcome.variant.name)
        keys = [group.case(entry, p, precision).key for p in group.points]
        several_models = len(self.config.models) > 1
        stem = (f"{_slug(group.model.id)}_" if several_models else "") + f"{outcome.variant.name}_{precision}"
        published = publish(outcome, [self.records[k] for k in keys if k in self.records], inputs, tolerance,
                             store=self.store, failures=self.failures, precision=precision, device=self.device,
                             model_id=group.model.id, stem=stem, expected_bytes=expected_bytes,
                             cold_start=self.config.output.cold_start)
        for record in published.records:
            self._keep(record)
        key = self._save_key(group, outcome.variant.name, precision)
        self.saved[key] = list(published.entries)
        self.journal.artifacts(key, self.saved[key])

    # ---- profiles and interruptions ----------------------------------------------------------

    def _profile_if_configured(self, group: BuildGroup, outcomes: dict[str, BuildOutcome],
                               copies: dict[str, PrecisionCopy]) -> None:
        """The profile stage, once per run, at the profile's precision (:func:`trtbench.profiling.runner.profile_group`)."""
        profile = self.config.profile
        if profile is None or not profile.enabled or self.profiles is not None or profile.precision not in copies:
            return
        from trtbench.scenarios.profile import profile_group

        artifacts = {name: [self.store.directory / e["file"] for e in entries]
                     for (model_id, precision, name), entries in self.saved.items()
                     if model_id == group.model.id and precision == profile.precision}
        at_precision = {e.name: outcomes[group.slot(e.name, profile.precision)] for e in group.entries_at(profile.precision)
                        if group.slot(e.name, profile.precision) in outcomes}
        points = [p for p in group.points if p.label in profile.shapes]
        inputs = {p.label: copies[profile.precision].inputs[p.label] for p in points}
        self.profiles = profile_group(profile, at_precision, points, inputs, group.points,
                                      self.device, self.out_dir, artifacts, self.progress)

    def _account_unfinished(self, env_id: str, status: Status, reason: str) -> None:
        """A record for every planned case the run did not reach (not journaled: resumable)."""
        self.unfinished = True
        for case in self.plan.cases:
            if case.key not in self.records:
                self.records[case.key] = Record(case=case, environment=env_id, status=status, reason=reason)


def run_config(plan: RunPlan, progress: Progress | None = None, fresh: bool = False) -> RunOutcome:
    """Run ``plan``; see :class:`Runner`."""
    return Runner(plan, progress, fresh).run()
