"""A run: per build group, build, each listed scenario, save, then the report (docs/architecture.md)."""

from __future__ import annotations

import contextlib
from datetime import datetime, timezone
from pathlib import Path

import torch

from trtbench.artifacts.publish import publish
from trtbench.artifacts.store import ArtifactStore, Saved
from trtbench.building.copies import Fp32Fallback, Missed, precision_copies
from trtbench.building.stage import BuildOutcome, build_at, hinted_names, int8_setup_at, run_calibration
from trtbench.config.plan import BuildGroup, RunPlan
from trtbench.config.context import RunContext
from trtbench.core.env import collect_environment, torch_settings
from trtbench.core.inflight import InFlight, in_flight, native_crash_log
from trtbench.core.inputs import point_inputs
from trtbench.core.outdir import FailureLog, OutputDir
from trtbench.core.progress import Progress
from trtbench.core.status import RunStatus, Status
from trtbench.core.precision import precision_dtype
from trtbench.diagnose.fallback import FallbackCase, float_fallback
from trtbench.measure.references import MissingReference, References, eager_references
from trtbench.models import build_model
from trtbench.pipeline.diagnosis import diagnose_failing
from trtbench.pipeline.history import append_history, check_history, history_for
from trtbench.pipeline.sections import report_sections
from trtbench.pipeline.state import RunOutcome, RunState
from trtbench.report.markdown import run_intro
from trtbench.report.writer import ReportHead, write_report
from trtbench.results.journal import Journal, save_key
from trtbench.scenarios import Scenario, Testbed
from trtbench.variants import BuildContext, build_order, get_variant


class Runner:
    """Runs a resolved :class:`RunPlan` into its output directory."""

    def __init__(self, plan: RunPlan, progress: Progress | None = None, *, fresh: bool = False):
        self.plan, self.config = plan, plan.config
        self.progress, self.fresh = progress or Progress(quiet=True), fresh
        self.out_dir = Path(self.config.output.dir)
        self.failures = FailureLog(self.out_dir)
        self.store = ArtifactStore(self.out_dir / "artifacts", self.config.knob_settings[0])
        self.state = RunState(plan, Journal(self.out_dir))
        self.calibration = None  # trtbench.quantize.calibration.CalibrationData, loaded when a variant quantizes
        # a shard's merge appends the whole
        self.history = None if plan.shard else history_for(self.config.output.history, self.out_dir)

    def run(self) -> RunOutcome:
        models = {m.id: build_model(m) for m in self.config.models}  # user errors surface before any write
        self.calibration = run_calibration(self.plan)  # bad calibration data is bad input: before any write
        check_history(self.history)
        with OutputDir(self.out_dir), native_crash_log(self.out_dir):
            return self._run_locked(models)

    def _run_locked(self, models: dict[str, torch.nn.Module]) -> RunOutcome:
        if self.fresh:
            for name in ("results.json", "results.csv", "report.md", "failures.log"):
                (self.out_dir / name).unlink(missing_ok=True)
        self.store.discard_previous_manifest()
        environment = collect_environment(self.plan.device, self.config.benchmark.cudnn_benchmark)
        earlier = self.state.begin(environment, self.fresh)
        ctx = RunContext(self.plan, environment, self.failures, self.progress, self.state.crashed)
        started, ended = datetime.now(timezone.utc), RunStatus.COMPLETE
        try:
            with torch.cuda.device(ctx.device) if ctx.device.type == "cuda" else contextlib.nullcontext():
                for model_cfg in self.config.models:
                    groups = [g for g in self.plan.groups if g.model.id == model_cfg.id]
                    self._run_model(ctx, models[model_cfg.id], groups)
        except KeyboardInterrupt:
            ended = RunStatus.INTERRUPTED
            self.state.account_unfinished(ctx.env_id, Status.INTERRUPTED, "not run: stopped by Ctrl-C")
        except Exception as err:  # outside any one variant (out of memory copying the model, a scenario's own
            ended = RunStatus.FAILED  # error...): keep what ran; the run exits 1 and the report says why
            reason = self.failures.reason("the run", err)
            self.state.account_unfinished(ctx.env_id, Status.FAILED, f"not run: the run stopped ({reason})")
            ctx.log(f"error: the run stopped: {reason}")
        interrupted = ended is RunStatus.INTERRUPTED
        results = self.state.result_set(earlier, environment, started, ended)
        self.store.entries = self.state.saved_entries
        manifest = (self.store.write_manifest(self.config.to_dict(), environment)
                    if self.config.output.save_artifacts else None)
        head = ReportHead(run_intro(self.config), ended, manifest)
        sections = report_sections(results, self.config.budget.p99_ms)
        if ended is RunStatus.COMPLETE and self._builds_variants:
            sections += self._diagnosis(results, ctx)
        files = write_report(self.out_dir, results, head, sections)
        self.state.end()
        history = "" if interrupted else append_history(self.history, results, self.out_dir)
        return RunOutcome(self.out_dir, results, environment, interrupted, self.state.resumed, files, history)

    def _run_model(self, ctx: RunContext, model: torch.nn.Module, groups: list[BuildGroup]) -> None:
        """The model's build groups not done yet, judged against eager fp32's outputs at each point."""
        if all(self.state.group_done(g) for g in groups):
            return
        references = (eager_references(model, point_inputs(self.config, groups[0].points, ctx.device, torch.float32),
                                       ctx.device) if self._builds_variants else None)
        for group in groups:
            if not self.state.group_done(group):
                self._run_group(ctx, group, model, references)

    def _run_group(self, ctx: RunContext, group: BuildGroup, model: torch.nn.Module, references: References) -> None:
        """Build the group, run each scenario that owes it something, and save what is left to save."""
        owing = [s for s in self.config.scenarios if s.owes(group, self.state)]
        builds = self._builds_variants
        with torch_settings(group.threads, self.config.benchmark.cudnn_benchmark):
            copies = precision_copies(model, group.precisions, self.config, group.points, ctx.device,
                                      self._fallbacks(ctx, group, model, references)) if builds else {}
            prepared: dict[Scenario, object] = {}  # what each started before the build
            try:
                for scenario in [s for s in owing if not s.after_save]:  # before the build: workers import torch
                    prepared[scenario] = scenario.prepare(ctx, group)  # while this process builds
                if builds and any(get_variant(n).saves_files for p in group.precisions
                                  for n in self.state.saves_todo(group, p)):
                    self.store.start_checks()  # so does the fresh-process check's server
                outcomes = self._build(ctx, group, copies, build_all=bool(owing)) if builds else {}
                built = Testbed(group, outcomes, copies, references,
                                   {p: self.config.tolerances[p] for p in group.precisions}, self.state, model)
                for scenario in [s for s in owing if not s.after_save]:
                    self._run_scenario(ctx, scenario, built, prepared.get(scenario))
            finally:
                for handle in prepared.values():
                    if handle is not None:
                        handle.close()
            for precision in group.precisions:
                for name in self.state.saves_todo(group, precision):
                    self._save(ctx, group, precision, outcomes[group.slot_id(name, precision)], copies[precision])
            for scenario in [s for s in owing if s.after_save]:
                self._run_scenario(ctx, scenario, built, None)

    def _fallbacks(self, ctx: RunContext, group: BuildGroup, model: torch.nn.Module, references: References) -> dict:
        """precision -> what the float accuracy fallback keeps in fp32 there, for ``group``'s reduced precisions."""
        found = {}
        for precision in group.precisions:
            runs = [e for e in group.entries_at(precision) if group.slot_id(e.name, precision) not in group.unavailable]
            if precision_dtype(precision) not in (torch.float16, torch.bfloat16) or not runs:
                continue
            labels = [label for label, out in references.outputs.items() if not isinstance(out, MissingReference)]
            inputs = point_inputs(self.config, group.points, ctx.device, torch.float32)
            case = FallbackCase({k: inputs[k] for k in labels if k in inputs}, references.outputs,
                                self.config.tolerances[precision], self.config.calibration.max_fp32_layers)
            if not case.inputs:
                continue
            try:
                found[precision] = float_fallback(model, precision, case, ctx.device, ctx.log)
            except Exception as err:  # the precision builds in full, saying why no fallback was tried
                reason = self.failures.reason(f"fp32 fallback at {precision}", err)
                ctx.log(f"fp32 fallback at {precision}: {reason}")
                found[precision] = Fp32Fallback(Missed(f"fallback failed: {reason}"))
        return found

    def _diagnosis(self, results, ctx: RunContext) -> list:
        """The report's section diagnosing each row that failed its check; a diagnosis that fails is logged."""
        try:
            section = diagnose_failing(self.config, results, ctx.log)
        except Exception as err:  # the diagnosis's own failure: the rows are measured and reported without it
            ctx.log(f"diagnose: {self.failures.reason('diagnose the failing rows', err)}")
            return []
        return [section] if section is not None else []

    @property
    def _builds_variants(self) -> bool:
        """Whether this runner builds the variants: where some listed scenario reads ``inputs:``."""
        return any("inputs" in s.needs for s in self.config.scenarios)

    def _run_scenario(self, ctx: RunContext, scenario: Scenario, built: Testbed, prepared) -> None:
        """Keep (and journal) each part and save ``scenario`` yields as it comes, where it still owes the group."""
        if scenario.owes(built.group, self.state):
            for part in scenario.run(ctx, built, prepared):
                if isinstance(part, Saved):
                    self.state.keep_saved(save_key(built.group.model.id, part.precision, part.variant), part.entries)
                else:
                    self.state.keep(part)

    def _build(self, ctx: RunContext, group: BuildGroup, copies: dict, *, build_all: bool) -> dict[str, BuildOutcome]:
        """Every variant of ``group`` at each precision (by slot id); only what is left to save where nothing else."""
        outcomes: dict[str, BuildOutcome] = {}
        for precision in group.precisions:
            names = (group.build_names_at(precision) if build_all
                     else build_order(self.state.saves_todo(group, precision)))
            plain, hinted = hinted_names(names, precision)
            at = copies[precision]
            bctx = BuildContext(device=ctx.device, precision=precision, dtype=at.dtype, example_inputs=at.example,
                                shape_inputs=at.inputs, input_specs=self.config.inputs,
                                int8=int8_setup_at(self.config, self.calibration, group, at.model, precision),
                                fp32_modules=at.fallback.modules)
            built = build_at(ctx, group, plain, at.model, bctx, outcomes)
            for outcome in built.values():
                _with_fallback(outcome, at)
            outcomes.update(built)
            if hinted:  # a runtime's hint on fp32's model: built from the reference's copy and build steps
                ref = copies[group.reference_precision]
                hint = BuildContext(device=ctx.device, precision=precision, dtype=ref.dtype, example_inputs=ref.example,
                                    shape_inputs=ref.inputs, input_specs=self.config.inputs,
                                    fp32_modules=at.fallback.modules)
                for key, outcome in build_at(ctx, group, hinted, ref.model, hint, outcomes).items():
                    _with_fallback(outcome, at)
                    outcomes.setdefault(key, outcome)
        return outcomes

    def _save(self, ctx: RunContext, group: BuildGroup, precision: str, outcome: BuildOutcome, at) -> None:
        """The save stage for one variant at ``precision`` (built from copy ``at``), journaled once done."""
        name = outcome.variant.name
        with in_flight(InFlight("save", group.model.id, name, precision, str(self.out_dir))):
            published = publish(ctx, self.store, outcome, self.state.variant_records(group, name, precision), at)
        for record in published.records:
            self.state.keep(record)
        self.state.keep_saved(save_key(group.model.id, precision, name), published.entries)


def _with_fallback(outcome: BuildOutcome, at) -> None:
    """A row built at a precision whose accuracy fallback ran says so in its build info (``fp32_fallback``)."""
    if outcome.built is not None and at.fallback.outcome is not None:
        outcome.built.info["fp32_fallback"] = at.fallback.outcome.to_dict()


def run_config(plan: RunPlan, progress: Progress | None = None, *, fresh: bool = False) -> RunOutcome:
    """Run ``plan``; see :class:`Runner`."""
    return Runner(plan, progress, fresh=fresh).run()
