"""The LLM serving stage: each ok, accurate generate row at a served point, served under every entry beside generate
(more: docs/serving.md, "Module notes", trtbench/scenarios/serving/tokens/stage.py)."""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional

from trtbench.building.decoder_recipe import DecoderRecipe
from trtbench.core.knobs import Knobs
from trtbench.core.status import Status
from trtbench.decoders import decoder_names, get_decoder
from trtbench.models.hf_folder import write_model_folder
from trtbench.scenarios.generate import GeneratePoint, GenerateRecord, decoder_folder
from trtbench.scenarios.serving.tokens.lengths import QueryLengths
from trtbench.scenarios.serving.loadgen.peaks import searched_peak
from trtbench.scenarios.serving.tokens.run import (PeakSearch, TokenLoad, DecoderRun, DecoderServing,
                                                   decoder_estimate, decoder_peak, decoder_run)
from trtbench.scenarios.serving.tokens.pool import DecoderPool, serving_requests
from trtbench.scenarios.serving.tokens.config import SERVED_BATCH, DecoderServingConfig
from trtbench.scenarios.serving.tokens.result import ServedDecoder, DecoderServingResult, DecoderStep
from trtbench.workers.loop import WorkerError

if TYPE_CHECKING:
    from trtbench.config.context import RunContext

SERVICE_REQUESTS = 3  # requests made alone on a pool before its first LoadGen run: the service time, the capacity


def decoder_servers(config) -> list[DecoderServingConfig]:
    """The settings of the serving entries beside generate, in the order listed."""
    return [s.settings for s in config.scenarios if isinstance(s.settings, DecoderServingConfig)]


def entries_at(config, point: GeneratePoint) -> list[tuple[int, DecoderServingConfig]]:
    """The serving entries (index, settings) served at ``point``: those with ``lengths`` only at the first."""
    first = served_points(config)[0]
    return [(index, settings) for index, settings in enumerate(decoder_servers(config))
            if settings.lengths is None or point == first]


def served_points(config) -> list[GeneratePoint]:
    """The points served: every generate entry's points at batch 1, each once, in the order listed."""
    return list(dict.fromkeys(point for s in config.scenarios if s.name == "generate"
                              for point in s.settings.points if point.batch == SERVED_BATCH))


def servable(row: GenerateRecord) -> bool:
    """Whether a generate row may be served: timed ok and accurate against eager fp32."""
    return row.status is Status.OK and bool(row.data.get("metrics")) and row.data.get("accuracy", {}).get("ok", False)


def unserved_decoders(config, group, done) -> list[tuple[str, GeneratePoint]]:
    """The (slot, point) pairs of ``group`` not timed yet, or ok and accurate but not served."""
    if not decoder_servers(config):
        return []
    rows = {(p.point, p.slot): p for p in done.parts(GenerateRecord.KIND)
            if (p.model, p.threads) == (group.model.id, group.threads)}
    served = {(p.point, p.slot) for p in done.parts(ServedDecoder.KIND)
              if (p.model, p.threads) == (group.model.id, group.threads)}
    todo = []
    for entry, precision in group.slots():
        slot = group.slot_id(entry.name, precision)
        for point in (p for p in served_points(config) if entries_at(config, p)):
            row = rows.get((point.label, slot))
            if slot not in group.unavailable and (row is None or (servable(row) and (point.label, slot) not in served)):
                todo.append((slot, point))
    return todo


def serve_decoders(ctx: RunContext, built) -> Iterator[ServedDecoder]:
    """Serve every ok, accurate, not yet served generate row of the built group, a part at a time."""
    group, config = built.group, ctx.config
    rows = {(p.point, p.slot): p for p in built.done.parts(GenerateRecord.KIND)
            if (p.environment, p.model, p.threads) == (ctx.env_id, group.model.id, group.threads)}
    todo = [(slot, point, rows[point.label, slot]) for slot, point in unserved_decoders(config, group, built.done)
            if (point.label, slot) in rows and servable(rows[point.label, slot])]
    if not todo:
        return
    folder = ctx.out_dir / "decoders" / decoder_folder(group.model.id)
    source = write_model_folder(built.model, folder / "source", group.model.path)
    vocab, seed = built.model.config.vocab_size, config.benchmark.seed
    with tempfile.TemporaryDirectory(prefix="trtbench-llm-serving-") as tmp:
        for slot, point, row in todo:
            results = []
            for index, settings in entries_at(config, point):
                lengths, batching = settings.query_lengths(point), settings.batching
                requests = serving_requests(lengths, settings.request_batch, vocab, seed)
                teacher = requests[min(requests, key=lambda label: requests[label][0].size)][0][:1]
                for workers in settings.workers:
                    threads = max(1, group.threads // workers)
                    name = f"{decoder_folder(group.model.id)}_{slot.replace('@', '-')}_{point.label}_w{workers}" + (
                        f"_s{index}" if index else "")
                    recipe = DecoderRecipe(row.decoder, row.precision, str(source), str(Path(tmp) / name),
                                           str(ctx.device), threads, requests, teacher,
                                           engine_batch=settings.max_batch if settings.continuous else 0)
                    planned = DecoderServingResult(index, workers, threads, settings.ttft_ms, settings.tpot_ms,
                                                 settings.percentile, settings.peak_rule, log_dir=f"serving/{name}",
                                                 batching=batching.to_dict() if batching else None,
                                                 lengths=lengths.to_dict())
                    lacking = without_engine(row.decoder) if settings.continuous else None
                    if lacking is not None:
                        results.append(replace(planned, status=Status.SKIPPED, reason=lacking, log_dir=""))
                        continue
                    ctx.log(f"serve {group.model.id} {slot} at {point.label} with {workers} worker(s) under LoadGen")
                    results.append(_served(ctx, recipe, group.knobs, lengths, settings, planned))
            yield ServedDecoder(ctx.env_id, group.model.id, group.threads, point.label, slot, row.decoder,
                                row.precision, tuple(results))


def without_engine(decoder: str) -> Optional[str]:
    """Why ``decoder`` cannot be served with ``batching: {mode: continuous}``, or None where it can."""
    if get_decoder(decoder).continuous_batching:
        return None
    having = [name for name in decoder_names() if get_decoder(name).continuous_batching]
    return (f"batching mode 'continuous' needs a decoder with a continuous-batching engine, and {decoder} has none "
            f"(those that have one: {', '.join(having) or 'none'}); serve {decoder} under a serving entry without "
            f"batching or with mode: static")


def _served(ctx: RunContext, recipe: DecoderRecipe, knobs: Knobs, lengths: QueryLengths, settings: DecoderServingConfig,
            result: DecoderServingResult) -> DecoderServingResult:
    """``result`` once served by workers hosting ``recipe``, started with ``knobs``: its steps and peaks, or why it
    failed."""
    steps: list[DecoderStep] = []
    peaks: list[float] = []
    shutil.rmtree(ctx.out_dir / result.log_dir, ignore_errors=True)  # logs of an earlier, unfinished serving of it
    try:
        with DecoderPool(recipe, result.workers, ctx.config.benchmark.worker_timeout_s, ctx.out_dir / result.log_dir,
                         knobs) as pool:
            engine = _TokenEngine(ctx, pool, lengths, settings, result)
            alone = engine.alone(SERVICE_REQUESTS)
            capacity = result.workers * settings.max_batch * 1e3 / alone["e2e_ms"]
            result = replace(result, service=alone, capacity_qps=capacity)
            if settings.find_peak and (alone["ttft_ms"] > settings.ttft_ms or alone["tpot_ms"] > settings.tpot_ms):
                return replace(result, peaks=(0.0,) * settings.repeats,
                               reason=f"no load fits: alone, a request's TTFT is at least {alone['ttft_ms']:.1f} ms "
                                      f"and its TPOT {alone['tpot_ms']:.2f} ms, for the bounds {result.bounds_text}")
            if settings.estimates:
                return engine.estimate(result)
            for repeat in range(settings.repeats):
                peak, made = engine.repeat(repeat, result.capacity_qps)
                steps += made
                failed = next((step for step in made if step.error), None)
                if failed is not None:
                    kept = [*peaks, peak] if peak else peaks
                    return replace(result, status=Status.FAILED, steps=tuple(steps), peaks=tuple(kept),
                                   reason=_stopped(failed, len(made), repeat, settings, peak))
                if peak is not None:
                    peaks.append(peak)
    except WorkerError as err:  # the pool did not start, or a request alone failed
        return replace(result, status=Status.FAILED, reason=f"before any LoadGen run: {_brief(str(err))}")
    return replace(result, steps=tuple(steps), peaks=tuple(peaks))


class _TokenEngine:
    """A pool serving queries of ``lengths`` under LoadGen, its logs in ``result``'s folder."""

    def __init__(self, ctx: RunContext, pool: DecoderPool, lengths: QueryLengths, settings: DecoderServingConfig,
                 result: DecoderServingResult):
        self.out_dir, self.folder, self.settings = ctx.out_dir, ctx.out_dir / result.log_dir, settings
        self.load = TokenLoad(settings.ttft_ms, settings.tpot_ms, settings.min_duration_s, settings.queries,
                              settings.percentile, settings.confidence)
        self.serving = DecoderServing(lengths.draw(), settings.batching.static if settings.batching else None)
        self.servers = pool.servers(settings.query_timeout_s)

    def alone(self, requests: int) -> dict:
        """The fastest TTFT, TPOT and E2E (ms) of ``requests`` of the shortest sample alone."""
        shortest, made = min(self.serving.samples, key=sum), []
        for _ in range(requests):
            start = time.perf_counter()
            stamps = self.servers[0]([shortest], lambda step: None)
            made.append(((stamps[0] - start) * 1e3, (stamps[-1] - stamps[0]) * 1e3 / (len(stamps) - 1),
                         (stamps[-1] - start) * 1e3))
        return {name: round(min(m[i] for m in made), 4) for i, name in enumerate(("ttft_ms", "tpot_ms", "e2e_ms"))}

    def repeat(self, repeat: int, capacity: float) -> tuple[Optional[float], list[DecoderStep]]:
        """Search ``repeat`` by bisection, or its run at the fixed qps: the peak (or None), the steps."""
        settings, where = self.settings, self.folder / f"r{repeat}"
        load = replace(self.load, seed=settings.seed + repeat)
        if settings.find_peak:
            search = PeakSearch(capacity, settings.resolution, settings.search_steps)
            peak, runs = decoder_peak(self.servers, load, self.serving, search, where)
            logs = [where / f"step-{i + 1}" for i in range(len(runs))]
        else:
            peak, runs, logs = None, [decoder_run(self.servers, load, self.serving, settings.qps, where)], [where]
        return peak, [self._step(run, repeat, log) for run, log in zip(runs, logs)]

    def _step(self, run: DecoderRun, repeat: int, log: Path) -> DecoderStep:
        """A LoadGen run as results keep it, its queries in issue order."""
        queries = sorted(run.queries, key=lambda q: q.issued_s)
        return DecoderStep(run.qps, repeat, run.summary, run.passed, run.late, tuple(q.ttft_ms for q in queries),
                         tuple(q.tpot_ms for q in queries), run.percentiles_ms().get("itl", {}), run.request_per_s,
                         run.output_tokens_per_s, _brief(run.error), log.relative_to(self.out_dir).as_posix(),
                         run.batches, run.most_in_flight)

    def estimate(self, result: DecoderServingResult) -> DecoderServingResult:
        """``result`` with the joint estimate's peak and interval; a step whose worker failed fails it."""
        settings = self.settings
        search, runs = decoder_estimate(self.servers, replace(self.load, seed=settings.seed), self.serving,
                                        settings.search_plan(result.capacity_qps), self.folder)
        steps = [self._step(run, index, self.folder / f"step-{index + 1}") for index, run in enumerate(runs)]
        if search is None:
            return replace(result, status=Status.FAILED, steps=tuple(steps),
                           reason=_stopped(steps[-1], len(steps), 0, settings, None))
        valid = None
        if search.confirm is not None:
            steps[-1] = replace(steps[-1], confirm=True)
            valid = steps[-1].summary.valid
        interval = searched_peak(search, result.capacity_qps, valid)
        return replace(result, steps=tuple(steps), peaks=(interval.estimate.value,), interval=interval)


def _brief(error: str) -> str:
    """An error in a line: each of its ``; ``-joined parts as its first and last lines."""
    parts = []
    for part in error.split("; ") if error else []:
        lines = [line.strip() for line in part.strip().splitlines() if line.strip()]
        parts.append(" ".join(dict.fromkeys([lines[0], lines[-1]])) if lines else "")
    return "; ".join(dict.fromkeys(p for p in parts if p))


def _stopped(failed: DecoderStep, step: int, repeat: int, settings: DecoderServingConfig, peak: Optional[float]) -> str:
    """Why a result failed at ``failed``, step ``step`` of search (or run) ``repeat``, and the peak kept."""
    where = f"{failed.error}, at {failed.offered_qps:.2f} QPS offered"
    if not settings.find_peak:
        return f"{where} (run {repeat + 1} of {settings.repeats})"
    where += (f"; the peak search stopped early, at step {step} (of at most {settings.search_steps}) of search "
              f"{repeat + 1} of {settings.repeats}, as a worker that fails fails the result")
    if peak:
        return (f"{where}; its peak is the highest load that passed before the fault, {peak:.2f} QPS (a lower bound: "
                f"the search did not finish)")
    return f"{where}; no load passed before the fault"
