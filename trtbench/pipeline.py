"""The run: build each variant -> check it against eager -> benchmark it -> save it -> report.

One failing variant never stops the others: its results are ``failed`` with the reason.
Ctrl-C stops the run; what was measured so far is written, the rest marked ``interrupted``.
"""

from __future__ import annotations

import contextlib
import copy
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import torch

from trtbench.artifacts import ArtifactStore
from trtbench.config import Config, resolve_device
from trtbench.env import collect_environment
from trtbench.inputs import format_shapes, make_inputs, shape_points, to_memory_format
from trtbench.models import build_model
from trtbench.parity import compare
from trtbench.precision import precision_dtype, unsupported_reason
from trtbench.profiling.runner import run_profiles
from trtbench.progress import Progress
from trtbench.report.writer import write_outputs
from trtbench.results import Result, add_speedups, exit_code
from trtbench.stats import summarize
from trtbench.timing import TimingPlan, measure
from trtbench.variants import BuildContext, Built, build_order, get_variant


@dataclass
class RunOutcome:
    """What a run produced and the exit code the CLI returns."""

    out_dir: Path
    results: list[Result]
    environment: dict
    interrupted: bool = False
    files: dict = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return exit_code(self.results, self.interrupted)


@dataclass(frozen=True)
class MissingReference:
    """Stands in for eager fp32's output at a shape where eager fp32 itself failed."""

    reason: str


@dataclass
class BuildOutcome:
    """A variant's build: the built variant, or why there is none (status skipped/failed)."""

    built: Built | None = None
    build_s: float | None = None
    warnings: list[str] = field(default_factory=list)
    status: str = "ok"
    reason: str = ""


def capture_warnings(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Call ``fn`` recording its warnings (e.g. torch.jit's FutureWarning) instead of printing them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn()
    return value, sorted({f"{w.category.__name__}: {w.message}" for w in caught})


def describe_error(err: BaseException) -> str:
    """One line for a table: the exception type and the first line of its message."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".rstrip(": ")


class Pipeline:
    """Runs one :class:`Config` end to end and writes its outputs."""

    def __init__(self, config: Config, progress: Progress | None = None):
        self.config = config
        self.progress = progress or Progress(quiet=True)
        self.device = torch.device(resolve_device(config.device))
        self.out_dir = Path(config.output.dir)
        self.results: list[Result] = []
        self.store = ArtifactStore(self.out_dir / "artifacts")
        self.points = shape_points(config.inputs, config.benchmark.shapes)
        self.plan = TimingPlan.from_config(config.benchmark)
        profile = config.profile
        self.profile = profile if profile is not None and profile.enabled else None
        self.profiles: dict | None = None

    def run(self) -> RunOutcome:
        """Build, check, time and save every requested variant at every precision and shape."""
        bench = self.config.benchmark
        if bench.threads:
            torch.set_num_threads(bench.threads)
        torch.backends.cudnn.benchmark = bench.cudnn_benchmark
        model = build_model(self.config.model)  # user errors surface before anything is written
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.store.discard_previous_manifest()
        environment = collect_environment(self.device)
        started = datetime.now(timezone.utc)
        interrupted = False
        # CUDA events and kernels go to the current device: make it the configured one (cuda:N).
        on_device = torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()
        try:
            with on_device:
                references = self._references(model)
                for precision in self.config.precisions:
                    self._run_precision(model, precision, references)
        except KeyboardInterrupt:
            interrupted = True
            self._mark_unfinished("interrupted", "not run: stopped by Ctrl-C")
        except Exception as err:  # outside any one variant (e.g. out of memory copying the model): keep what ran
            self._mark_unfinished("failed", f"not run: the run stopped on {describe_error(err)}")
        add_speedups(self.results)
        manifest = None
        if self.config.output.save_artifacts:
            manifest = self.store.write_manifest(self.config.to_dict(), environment)
        outcome = RunOutcome(self.out_dir, self.results, environment, interrupted)
        outcome.files = write_outputs(self.out_dir, self.config, environment, self.results, started,
                                      interrupted, manifest, self.profiles)
        return outcome

    def _inputs_at(self, label: str, dtype: torch.dtype, channels_last: bool) -> tuple:
        """The seeded inputs at shape ``label`` (min/opt/max), on the device, in ``dtype`` and layout."""
        shapes = [spec.shape_for(label) for spec in self.config.inputs]
        tensors = make_inputs(self.config.inputs, shapes, self.config.benchmark.seed, self.device, dtype)
        return to_memory_format(tensors, channels_last)

    def _inputs(self, dtype: torch.dtype, channels_last: bool) -> dict[str, tuple]:
        return {label: self._inputs_at(label, dtype, channels_last) for label in self.points}

    def _references(self, model: torch.nn.Module) -> dict[str, Any]:
        """Eager fp32 outputs at every shape point: the accuracy reference for every variant.

        A shape where eager itself fails has no reference (None); eager's own result there
        reports the error.
        """
        reference_model = copy.deepcopy(model).to(self.device, torch.float32)
        inputs = self._inputs(torch.float32, self.config.channels_last)
        references = {}
        with torch.inference_mode():
            for label in self.points:
                try:
                    references[label] = reference_model(*inputs[label])
                except Exception as err:  # every check at this shape fails with this reason
                    references[label] = MissingReference(f"no eager fp32 reference: eager fp32 failed here "
                                                         f"({describe_error(err)})")
        return references

    def _skip_all(self, name: str, precision: str, status: str, reason: str, **extra) -> None:
        for label, shapes in self.points.items():
            self.results.append(Result(name, precision, label, format_shapes(shapes), status=status,
                                       reason=reason, **extra))

    def _requested(self) -> list[str]:
        return ["eager", *[n for n in self.config.variant_names if n != "eager"]]

    def _run_precision(self, model: torch.nn.Module, precision: str, references: dict) -> None:
        requested = self._requested()
        reason = unsupported_reason(precision, self.device)
        if reason:
            for name in requested:
                self._skip_all(name, precision, "skipped", reason)
            if self.profile and self.profile.precision == precision:
                self.profiles = {"status": "skipped", "reason": reason, "precision": precision, "device": str(self.device)}
            return
        dtype = precision_dtype(precision)
        channels_last = self.config.channels_last
        cast_model = copy.deepcopy(model).to(self.device, dtype)
        if channels_last:
            cast_model = cast_model.to(memory_format=torch.channels_last)
        inputs = self._inputs(dtype, channels_last)
        options = {entry.name: entry.options for entry in self.config.variants}
        example = self._inputs_at("opt", dtype, channels_last)
        ctx = BuildContext(device=self.device, precision=precision, dtype=dtype, example_inputs=example,
                           shape_inputs=inputs, input_specs=self.config.inputs)
        failures: dict[str, BuildOutcome] = {}
        built_variants = {}
        needed = self._needed(requested, precision)
        for name in build_order(requested):
            if name not in needed:
                continue
            variant = get_variant(name)
            ctx.options = options.get(name) or variant.Options()
            outcome = self._build(variant, cast_model, ctx, failures)
            if name not in requested:
                continue
            if outcome.built is None:
                self._skip_all(name, precision, outcome.status, outcome.reason)
                continue
            built_variants[name] = (variant, outcome.built)
            self._benchmark(variant, outcome, precision, inputs, references)
        if self.profile and self.profile.precision == precision:
            self._profile(built_variants, precision, dtype, channels_last)

    def _profile(self, built_variants: dict, precision: str, dtype: torch.dtype, channels_last: bool) -> None:
        """Where the time and memory go, for the configured variants and shapes (``profile:`` section)."""
        profile = self.profile
        inputs = {label: self._inputs_at(label, dtype, channels_last) for label in profile.shapes}
        artifacts: dict[str, list[Path]] = {}
        for entry in self.store.entries:
            if entry["precision"] == precision:
                artifacts.setdefault(entry["variant"], []).append(self.store.directory / entry["file"])
        chosen = {name: built_variants[name] for name in profile.variants if name in built_variants}
        with self.progress.task(f"profile {precision}", total=len(chosen) * len(profile.shapes)) as tick:
            self.profiles, caught = capture_warnings(lambda: run_profiles(
                profile, chosen, inputs, self.device, self.out_dir, artifacts, tick))
        self.profiles["warnings"] = caught

    def _needed(self, requested: list[str], precision: str) -> set[str]:
        """Requested variants plus what the runnable ones build from (no build for a skipped dependent)."""
        needed = set(requested)
        for name in requested:  # walk the whole chain (ort -> onnx -> exported)
            variant = get_variant(name)
            while variant.depends_on and variant.unavailable_reason(self.device, precision) is None:
                needed.add(variant.depends_on)
                variant = get_variant(variant.depends_on)
        return needed

    def _build(self, variant, model, ctx: BuildContext, failures: dict) -> BuildOutcome:
        """Build one variant; a variant that cannot run here comes back skipped or failed, with the reason."""
        reason = variant.unavailable_reason(ctx.device, ctx.precision)
        if reason:
            failures[variant.name] = BuildOutcome(status="skipped", reason=reason)
            return failures[variant.name]
        if variant.depends_on in failures:  # skipped when the parent cannot run here, failed when it broke
            parent = failures[variant.depends_on]
            failures[variant.name] = BuildOutcome(status=parent.status,
                                                  reason=f"needs {variant.depends_on}, which did not build "
                                                         f"({parent.status}: {parent.reason})")
            return failures[variant.name]
        with self.progress.task(f"build {variant.name} {ctx.precision}", total=1) as tick:
            start = time.perf_counter()
            try:
                with torch.no_grad():
                    built, caught = capture_warnings(lambda: variant.build(model, ctx))
            except KeyboardInterrupt:
                raise
            except Exception as err:  # reported as this variant's failure; the others go on
                failures[variant.name] = BuildOutcome(status="failed", reason=f"build failed: {describe_error(err)}")
                return failures[variant.name]
            build_s = time.perf_counter() - start
            tick()
        ctx.built[variant.name] = built
        return BuildOutcome(built=built, build_s=build_s, warnings=caught)

    def _benchmark(self, variant, outcome: BuildOutcome, precision, inputs, references) -> None:
        tolerance = self.config.tolerances[precision]
        built = outcome.built
        rows: list[Result] = []
        for label, shapes in self.points.items():
            result = Result(variant.name, precision, label, format_shapes(shapes), build_s=outcome.build_s,
                            batch_size=shapes[0][0] if shapes[0] else 1, warnings=list(outcome.warnings),
                            build_info=dict(built.info))
            self.results.append(result)
            rows.append(result)
            try:
                self._measure_point(variant, built, inputs[label], references[label], tolerance, result)
            except KeyboardInterrupt:
                result.status, result.reason = "interrupted", "stopped by Ctrl-C while timing"
                raise
            except Exception as err:  # this shape failed; other shapes and variants go on
                result.status, result.reason = "failed", describe_error(err)
        if not self.config.output.save_artifacts or not any(r.status == "ok" for r in rows):
            return
        if any(r.parity_failed for r in rows):  # an inaccurate build is not something to ship
            for r in rows:
                r.warnings.append("artifact not saved: the variant failed its accuracy check")
            return
        self._save(variant, built, precision, rows, inputs, tolerance)

    def _measure_point(self, variant, built, point_inputs, reference, tolerance, result: Result) -> None:
        with torch.inference_mode():
            prepared = variant.prepare(built, point_inputs)
            output, caught = capture_warnings(lambda: variant.run(built, prepared))
            result.warnings = sorted(set(result.warnings) | set(caught))
            if isinstance(reference, MissingReference):
                result.parity = {"ok": False, "reason": reference.reason, "max_abs_err": None, "max_rel_err": None,
                                 "top1_agree": None, "atol": tolerance.atol, "rtol": tolerance.rtol}
            else:
                result.parity = compare(output, reference, tolerance.atol, tolerance.rtol).to_dict()
            title = f"time {variant.name} {result.precision} {result.shape}"
            total = self.plan.iterations if self.plan.mode == "fixed" else None
            with self.progress.task(title, total=total) as tick:
                measurement = measure(lambda: variant.run(built, prepared), self.device, self.plan, tick)
        stats = summarize(measurement.host_ms)
        result.latency_ms = stats.to_dict()
        result.noisy = stats.noisy
        result.iterations = stats.iterations
        result.stopped_by = measurement.stopped_by
        result.throughput = result.batch_size * 1000.0 / stats.mean
        result.samples_ms = measurement.host_ms
        if measurement.device_ms is not None:
            result.device_ms = summarize(measurement.device_ms).to_dict()
            result.device_samples_ms = measurement.device_ms

    def _save(self, variant, built, precision, rows: list[Result], inputs, tolerance) -> None:
        ok_shapes = [r.shape for r in rows if r.status == "ok"]
        reference_shape = "opt" if "opt" in ok_shapes else ok_shapes[0]
        try:
            with torch.inference_mode():
                runs = {label: (inputs[label], variant.run(built, variant.prepare(built, inputs[label])))
                        for label in ok_shapes}
            _, caught = capture_warnings(lambda: self.store.save(
                variant, built, precision, self.device, runs, reference_shape, tolerance))
        except KeyboardInterrupt:
            raise
        except Exception as err:  # a variant that cannot be saved cannot ship: failed, timings kept
            for r in rows:
                r.status, r.reason = "failed", f"save failed: {describe_error(err)}"
            return
        for r in rows:
            r.warnings = sorted(set(r.warnings) | set(caught))

    def _mark_unfinished(self, status: str, reason: str) -> None:
        """Account for every requested result the run did not reach."""
        done = {(r.variant, r.precision, r.shape) for r in self.results}
        for precision in self.config.precisions:
            for name in self._requested():
                for label, shapes in self.points.items():
                    if (name, precision, label) not in done:
                        self.results.append(Result(name, precision, label, format_shapes(shapes),
                                                   status=status, reason=reason))
