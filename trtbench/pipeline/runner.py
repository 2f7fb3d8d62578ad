"""A run: resolve inputs -> per build group: build -> time each point -> serve -> save -> profile -> report.

Each stage is a function of its own module that returns typed values: :func:`~trtbench.build.stage.build_at`
(a :class:`~trtbench.build.stage.BuildOutcome` per variant), :func:`~trtbench.scenarios.latency.time_points`
(frozen :class:`~trtbench.core.record.Record` values, point by point),
:func:`~trtbench.scenarios.serving_stage.serve_group` (serving parts), :func:`~trtbench.artifacts.publish.publish`
(the files published and the records as they now stand), :func:`~trtbench.scenarios.profile.profile_stage`.
This module only sequences them; :class:`~trtbench.pipeline.state.RunState` keeps what they return and
journals it, so a run killed outright resumes where it stopped. One failing variant never stops the
others; Ctrl-C stops the run and what was measured is written, the rest marked ``interrupted``.
"""

from __future__ import annotations

import contextlib
from datetime import datetime, timezone
from pathlib import Path

import torch

from trtbench.artifacts.store import ArtifactStore, weights_bytes
from trtbench.build.stage import BuildOutcome, build_at, int8_setup_at, run_calibration
from trtbench.measure.ceiling import Ceiling, device_ceilings
from trtbench.core.env import collect_environment, torch_settings
from trtbench.core.inputs import point_inputs
from trtbench.workers.isolation import spawn_group_workers, start_isolation
from trtbench.results.journal import Journal
from trtbench.models import build_model
from trtbench.core.outdir import FailureLog, OutputDir
from trtbench.config.plan import BuildGroup, RunPlan
from trtbench.core.precision import dtype_name, float_precision
from trtbench.build.copies import PrecisionCopy, precision_copies
from trtbench.core.progress import Progress
from trtbench.artifacts.publish import artifact_stem, publish
from trtbench.measure.references import References, eager_references
from trtbench.report.writer import write_outputs
from trtbench.pipeline.state import RunOutcome, RunState, save_key
from trtbench.scenarios.latency import time_points, with_run_info
from trtbench.scenarios.profile import profile_stage, profiles_group
from trtbench.scenarios.serving_stage import serve_group
from trtbench.core.status import Status
from trtbench.variants import BuildContext, build_order


class Runner:
    """Runs a resolved :class:`RunPlan` into its output directory."""

    def __init__(self, plan: RunPlan, progress: Progress | None = None, fresh: bool = False):
        self.plan, self.config, self.device = plan, plan.config, plan.device
        self.progress = progress or Progress(quiet=True)
        self.fresh = fresh
        self.out_dir = Path(self.config.output.dir)
        self.failures = FailureLog(self.out_dir)
        self.store = ArtifactStore(self.out_dir / "artifacts")
        self.state = RunState(plan, Journal(self.out_dir))
        self.profiles: dict | None = None
        self.calibration = None  # trtbench.quantize.calibration.CalibrationData, loaded when a variant quantizes

    def run(self) -> RunOutcome:
        models = {m.id: build_model(m) for m in self.config.models}  # user errors surface before any write
        self.calibration = run_calibration(self.plan)  # bad calibration data is bad input: before any write
        with OutputDir(self.out_dir):
            return self._run_locked(models)

    def _run_locked(self, models: dict[str, torch.nn.Module]) -> RunOutcome:
        if self.fresh:
            for name in ("results.json", "results.csv", "report.md", "failures.log"):
                (self.out_dir / name).unlink(missing_ok=True)
        self.store.discard_previous_manifest()
        environment = collect_environment(self.device, self.config.benchmark.cudnn_benchmark)
        earlier = self.state.begin(environment, self.fresh)
        started, interrupted = datetime.now(timezone.utc), False
        try:
            with torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext():
                for model_cfg in self.config.models:
                    groups = [g for g in self.plan.groups if g.model.id == model_cfg.id]
                    self._run_model(models[model_cfg.id], groups, environment["id"])
        except KeyboardInterrupt:
            interrupted = True
            self.state.account_unfinished(environment["id"], Status.INTERRUPTED, "not run: stopped by Ctrl-C")
        except Exception as err:  # outside any one variant (out of memory copying the model...): keep what ran
            reason = self.failures.reason("the run", err)
            self.state.account_unfinished(environment["id"], Status.FAILED, f"not run: the run stopped ({reason})")
        results = self.state.result_set(earlier, environment, started, interrupted, self.profiles)
        self.store.entries = self.state.saved_entries
        manifest = self.store.write_manifest(self.config.to_dict(), environment) if self.config.output.save_artifacts else None
        files = write_outputs(self.out_dir, self.config, results, interrupted, manifest, self.profiles)
        self.state.end()
        return RunOutcome(self.out_dir, results, environment, interrupted, self.state.resumed, files)

    def _run_model(self, model: torch.nn.Module, groups: list[BuildGroup], env_id: str) -> None:
        """The model's build groups not done yet, judged against eager fp32's outputs at each point."""
        if all(self.state.group_done(g) for g in groups):
            return
        references = eager_references(model, point_inputs(self.config, groups[0].points, self.device, torch.float32),
                                      self.device)
        for group in groups:
            if not self.state.group_done(group):
                self._run_group(group, model, references, env_id)

    def _run_group(self, group: BuildGroup, model: torch.nn.Module, references: References, env_id: str) -> None:
        bench = self.config.benchmark
        with torch_settings(group.threads, bench.cudnn_benchmark):
            points = self.state.points_todo(group)
            build_all = bool(points) or self.state.serving_todo(group)  # else only saves are left
            copies = precision_copies(model, group.precisions, self.config, group.points, self.device)
            if points:
                self._keep_ceilings(group, copies, env_id)
            tolerances = {p: self.config.tolerances[p] for p in group.precisions}
            workers = spawn_group_workers(self.config, group) if points else None  # import torch while we build
            try:
                outcomes: dict[str, BuildOutcome] = {}  # slot id -> its build
                for precision in group.precisions:
                    names = (group.build_names_at(precision) if build_all
                             else build_order(self.state.saves_todo(group, precision)))
                    at = copies[precision]
                    ctx = BuildContext(device=self.device, precision=precision, dtype=at.dtype, example_inputs=at.example,
                                       shape_inputs=at.inputs, input_specs=self.config.inputs,
                                       int8=int8_setup_at(self.config, self.calibration, group, at.model, precision))
                    outcomes.update(build_at(group, precision, names, at.model, ctx, outcomes, self.failures,
                                             self.progress.log))
                isolation = (start_isolation(self.config, group, outcomes, copies, workers, self.device,
                                             self.progress.log) if points else None)
                for record in time_points(group, points, outcomes, copies, references, tolerances, self.plan.timing,
                                          self.device, env_id, self.failures, isolation, self.progress):
                    self.state.keep(record)
            finally:
                if workers is not None:
                    workers.close()
            if self.state.serving_todo(group):
                for served in serve_group(self.config, group, outcomes, copies, self.state.records,
                                          self.state.served, self.device, self.out_dir, self.progress.log):
                    self.state.keep_served(served)
            for record in with_run_info(group, outcomes, points, self.state.records):
                self.state.keep(record)
            for precision in group.precisions:
                for name in self.state.saves_todo(group, precision):
                    self._save(group, precision, outcomes[group.slot_id(name, precision)], copies[precision].inputs,
                               tolerances[float_precision(precision)], weights_bytes(copies[precision].model))
            if self.profiles is None and profiles_group(self.config.profile, group):
                self.profiles = profile_stage(self.config, group, outcomes,
                                              self.state.saved_files(group, self.config.profile.precision,
                                                                     self.store.directory), copies,
                                              self.device, self.out_dir, self.progress)

    def _keep_ceilings(self, group: BuildGroup, copies: dict[str, PrecisionCopy], env_id: str) -> None:
        """The device's FLOP/s ceilings at each dtype some variant of ``group`` is timed at, once per
        environment, device, dtype and threads."""
        timed = {copies[p].dtype for e, p in group.slots() if group.slot_id(e.name, p) not in group.unavailable}
        for dtype in timed:
            key = (env_id, group.device, dtype_name(dtype), group.threads)
            if key not in self.state.ceilings:
                self.state.keep_ceiling(Ceiling(*key, values=device_ceilings(
                    self.device, dtype, group.threads, self.config.benchmark.measure_ceiling)))

    def _save(self, group: BuildGroup, precision: str, outcome: BuildOutcome, inputs: dict, tolerance,
              expected_bytes: int) -> None:
        """The save stage for one variant at ``precision``; the state journals that it is done."""
        name = outcome.variant.name
        published = publish(outcome, self.state.variant_records(group, name, precision), inputs, tolerance,
                            store=self.store, failures=self.failures, precision=precision, device=self.device,
                            model_id=group.model.id, stem=artifact_stem(self.config, group.model.id, name, precision),
                            expected_bytes=expected_bytes, cold_start=self.config.output.cold_start)
        for record in published.records:
            self.state.keep(record)
        self.state.keep_saved(save_key(group, name, precision), published.entries)


def run_config(plan: RunPlan, progress: Progress | None = None, fresh: bool = False) -> RunOutcome:
    """Run ``plan``; see :class:`Runner`."""
    return Runner(plan, progress, fresh).run()
