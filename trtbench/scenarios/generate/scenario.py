"""The generate scenario: a causal LM's token latencies on every decoder (more: docs/generate.md, "Module notes")."""

from __future__ import annotations

import hashlib
import re
import signal
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, Optional

import numpy as np

from trtbench.artifacts.decoder_publish import DecoderPublisher
from trtbench.core.knobs import Knobs
from trtbench.building.decoder_recipe import LOGITS, DecoderRecipe
from trtbench.core import schema
from trtbench.core.case import BASELINE_VARIANT
from trtbench.core.errors import UserInputError
from trtbench.core.status import Status
from trtbench.measure.bandwidth import MemoryCeiling, memory_ceilings
from trtbench.measure.decode_bytes import decode_step_bytes, kv_cache_bytes, weight_counts
from trtbench.measure.trackers.energy import PointEnergy
from trtbench.measure.logit_accuracy import logit_agreement, logit_misses, matching_prefix
from trtbench.measure.rounds import BlockAt, Rounds
from trtbench.measure.token_timing import TimedRequest, request_metrics
from trtbench.models import transformers_max_positions
from trtbench.models.hf_folder import write_model_folder
from trtbench.report.section import ReportSection
from trtbench.scenarios.base import Scenario, register
from trtbench.scenarios.generate.memory import MIB, default_budget_bytes, own_rss_bytes, plan_groups, worker_bytes
from trtbench.scenarios.generate.publish import GroupRecords, published_parts
from trtbench.scenarios.generate.report import generate_section, generate_summary
from trtbench.scenarios.generate.result import (GeneratePoint, Slot, GenerateRecord, e2e_converged, metrics_of,
                                                pooled_variances, requests_of, speedups_of, RequestSeries)
from trtbench.workers.isolation import plan_turns, process_name
from trtbench.workers.loop import Worker, WorkerError, close_workers, spawn_workers, start_workers

ACCURACY_TOKENS = 64  # the length of the teacher-forced sequence (at most the model's positions)


@dataclass(frozen=True)
class GenerateSettings:
    """The points (every prompt_tokens x new_tokens x batch) and when a point's rounds stop."""

    prompt_tokens: list[int] = field(default_factory=lambda: [128])
    new_tokens: list[int] = field(default_factory=lambda: [64])
    batch: list[int] = field(default_factory=lambda: [1])
    min_requests: int = 3  # rounds before the E2E interval may stop a point
    max_requests: int = 30  # rounds at most
    max_time_s: float = 120.0  # a point's rounds stop after this (once min_requests are made)
    target_rel_ci: float = 0.05  # stop once each decoder's E2E median is known to this (95% half-width / median)
    memory_budget_mb: Optional[float] = None  # the workers' memory together; default: 80% of MemAvailable

    def validate(self, path: str) -> None:
        for name in ("prompt_tokens", "new_tokens", "batch"):
            values = getattr(self, name)
            if not values:
                raise UserInputError(schema.join(path, name), "is empty", f"list at least one, e.g. {name}: [4]")
            for i, value in enumerate(values):
                schema.require_positive(value, schema.join(path, f"{name}[{i}]"))
        for i, value in enumerate(self.new_tokens):
            if value < 2:
                raise UserInputError(schema.join(path, f"new_tokens[{i}]"), f"is {value}: TPOT and decode tokens/s "
                                     f"need at least two new tokens", "use new_tokens of 2 or more")
        schema.require_positive_fields(self, ("min_requests", "max_requests", "max_time_s", "target_rel_ci",
                                              "memory_budget_mb"), path)
        if self.min_requests > self.max_requests:
            raise UserInputError(schema.join(path, "min_requests"), f"{self.min_requests} is above max_requests "
                                 f"{self.max_requests}", "make min_requests at most max_requests")

    @property
    def points(self) -> list[GeneratePoint]:
        return [GeneratePoint(p, n, b) for p in self.prompt_tokens for n in self.new_tokens for b in self.batch]


class GenerateWorkers:
    """The replicate worker processes of one turn of a memory group, process ``i`` of every slot."""

    def __init__(self, recipes: dict[str, DecoderRecipe], indices: list[int], timeout_s: float, knobs: Knobs,
                 threads: int):
        self._logs = tempfile.TemporaryDirectory(prefix="trtbench-decoders-")
        self._names = {process_name(slot, i): (slot, i) for i in indices for slot in recipes}
        # replicate process 0 builds in the slot's folder, the others beside it
        self._recipes = {name: replace(recipes[slot], out_dir=f"{recipes[slot].out_dir}-p{i}") if i else recipes[slot]
                         for name, (slot, i) in self._names.items()}
        self._spawned = spawn_workers(len(self._names), timeout_s, Path(self._logs.name), knobs, threads)

    def start(self) -> tuple[dict[str, dict[int, Worker]], dict[str, WorkerError]]:
        """Each slot's built processes by index, and the slots any of whose processes failed, with the first error."""
        ready, errors = start_workers(self._recipes, self._spawned)
        workers: dict[str, dict[int, Worker]] = {}
        failed: dict[str, WorkerError] = {}
        for name, (slot, i) in self._names.items():
            if name in ready:
                workers.setdefault(slot, {})[i] = ready[name]
            else:
                failed.setdefault(slot, errors[name])
        return {slot: found for slot, found in workers.items() if slot not in failed}, failed

    def close(self) -> None:
        close_workers(self._spawned)
        self._logs.cleanup()


def decoder_folder(model_id: str) -> str:
    """A folder name for a model id: its readable part and a short hash of the whole."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)[:40] + "-" + hashlib.sha1(model_id.encode()).hexdigest()[:8]


def _prompts(points: list[GeneratePoint], vocab: int, seed: int) -> dict[str, np.ndarray]:
    """Each point's prompt: token ids past the special tokens, seeded by the run's seed and point."""
    return {p.label: np.random.default_rng([seed, p.prompt_tokens, p.new_tokens, p.batch]).integers(
        min(3, vocab - 1), vocab, size=(p.batch, p.prompt_tokens), dtype=np.int64) for p in points}


@dataclass(frozen=True)
class _Timed:
    """A point's rows by slot and the figures they share, over the turns so far."""

    rows: dict
    shared: dict


@dataclass
class _Row:
    """What one slot has at a point so far."""

    status: Status = Status.OK
    reason: str = ""
    requests: list = field(default_factory=list)  # RequestMetrics, one per round per process
    blocks: list = field(default_factory=list)  # each request's (replicate process, global round)
    tokens: Any = None  # the first request's tokens
    peak_bytes: int = 0
    facts: dict = field(default_factory=dict)  # the session's facts at the last request
    energy: list = field(default_factory=list)  # per request: its EnergyReading, in output tokens

    @property
    def series(self) -> RequestSeries:
        return RequestSeries(self.requests, self.blocks)


@register
class Generate(Scenario):
    """Decoders of a causal LM, request by request, interleaved in rounds."""

    name = "generate"
    needs = ()
    decodes = True
    repeatable = True
    parts = (GenerateRecord, MemoryCeiling)
    example = "{generate: {prompt_tokens: [128], new_tokens: [64], batch: [1, 4]}}"

    @classmethod
    def parse(cls, value: Any, key: str) -> "Generate":
        return cls(schema.from_dict(GenerateSettings, value or {}, key))

    def check(self, config: Any, key: str) -> None:
        for i, model in enumerate(config.models):
            where = "model" if len(config.models) == 1 else f"models[{i}]"
            if model.source != "transformers" or model.task != "causal-lm":
                raise UserInputError(key, f"generate runs a causal language model, and {where} ({model.id}) is not one",
                                     f"give {where} source: transformers and task: causal-lm (e.g. name: llama), or "
                                     f"drop generate from scenarios")
            limit = transformers_max_positions(model)
            longest = max(self.settings.prompt_tokens) + max(self.settings.new_tokens)
            if limit is not None and longest > limit:
                raise UserInputError(schema.join(key, "prompt_tokens"), f"prompt_tokens + new_tokens reach {longest}, "
                                     f"above {where}'s {limit} positions (max_position_embeddings)",
                                     f"keep prompt_tokens + new_tokens at most {limit}, or raise "
                                     f"max_position_embeddings in {where}.kwargs")

    def points_todo(self, group, done) -> list[GeneratePoint]:
        """The points some slot of ``group`` has no part at in ``done``."""
        have = {(p.model, p.threads, p.point, p.slot) for p in done.parts(GenerateRecord.KIND)}
        slots = [group.slot_id(e.name, p) for e, p in group.slots()]
        return [point for point in self.settings.points
                if any((group.model.id, group.threads, point.label, slot) not in have for slot in slots)]

    def owes(self, group, done) -> bool:
        return bool(self.points_todo(group, done))

    def run(self, ctx, built, prepared) -> Iterator:
        group, points = built.group, self.points_todo(built.group, built.done)
        folder = ctx.out_dir / "decoders" / decoder_folder(group.model.id)
        source = write_model_folder(built.model, folder / "source", group.model.path)
        config, counts = built.model.config, weight_counts(built.model)
        prompts = _prompts(points, config.vocab_size, ctx.config.benchmark.seed)
        teacher_len = min(ACCURACY_TOKENS, transformers_max_positions(group.model) or ACCURACY_TOKENS)
        teacher = np.random.default_rng(ctx.config.benchmark.seed + 1).integers(
            min(3, config.vocab_size - 1), config.vocab_size, size=(1, teacher_len), dtype=np.int64)
        slots = {group.slot_id(e.name, p): Slot(group.slot_id(e.name, p), e.name, p) for e, p in group.slots()}
        recipes = {slot: DecoderRecipe(s.decoder, s.precision, str(source), str(folder / slot.replace("@", "-")),
                                       str(ctx.device), group.threads,
                                       {p.label: (prompts[p.label], p.new_tokens) for p in points}, teacher)
                   for slot, s in slots.items() if slot not in group.unavailable}
        plan = _MemoryPlan.of(self.settings, built.model, points, recipes)
        untimed = {slot: _Row(Status.SKIPPED, group.unavailable.get(slot) or plan.too_big[slot])
                   for slot in slots if slot in group.unavailable or slot in plan.too_big}
        scope = (ctx.env_id, group.device, group.threads)
        if built.done.part(MemoryCeiling.KIND, scope) is None:
            yield MemoryCeiling(*scope, values=memory_ceilings(ctx.device, group.threads,
                                                               ctx.config.benchmark.measure_ceiling))

        def sizes(point, precision) -> dict:
            return {"kv_cache_bytes": kv_cache_bytes(config, point.batch, point.prompt_tokens + point.new_tokens,
                                                     precision),
                    "decode_bytes": decode_step_bytes(counts, config, (point.prompt_tokens, point.new_tokens,
                                                                       point.batch), precision)}

        publisher = (DecoderPublisher(ctx.out_dir / "artifacts", group.knobs) if ctx.config.output.save_artifacts
                     else None)
        benchmark = ctx.config.benchmark
        processes = benchmark.processes if benchmark.isolation == "process" else 1
        for index, members in enumerate(plan.groups):
            turns = plan.turns(index, processes)
            yielded: dict[str, list[GenerateRecord]] = {slot: [] for slot in plan.recorded(index)}
            earlier: dict[str, _Timed] = {}  # point label -> its rows and shared figures of the turns so far
            shared: dict = {}
            for turn, indices in enumerate(turns):
                ctx.log(f"start {len(members)} x {len(indices)} decoder worker(s) for {group.model.id} (memory group "
                        f"{index + 1} of {len(plan.groups)}: {', '.join(members)}"
                        + (f"; turn {turn + 1} of {len(turns)})" if len(turns) > 1 else ")"))
                timing = GenerateWorkers({s: recipes[s] for s in members}, indices, benchmark.worker_timeout_s,
                                         group.knobs, group.threads)
                try:
                    for point, timed in _time_group(ctx, timing, points, self.settings, built.tolerances, slots):
                        timed = earlier[point.label] = _joined(earlier.get(point.label), timed)
                        rows, shared = timed.rows, timed.shared
                        if turn < len(turns) - 1:
                            continue
                        for slot in plan.recorded(index):
                            record = _record(ctx, group, point, slots[slot], rows[slot],
                                             {**shared, "accuracy": shared["accuracy"].get(slot),
                                              **sizes(point, slots[slot].precision), "turns": turns,
                                              "memory": plan.memory(index, slot, shared["memory"])})
                            yielded[slot].append(record)
                            yield record
                finally:
                    timing.close()
            if publisher is not None and shared:  # the group's workers have closed: their build folders are done
                yield from published_parts(ctx, built, publisher, recipes, slots, GroupRecords(yielded, shared))
        for point in points:
            for slot, row in untimed.items():
                yield _record(ctx, group, point, slots[slot], row,
                              {"accuracy": None, **sizes(point, slots[slot].precision)})

    @classmethod
    def report(cls, results, budget_ms: Optional[float]) -> Optional[ReportSection]:
        return generate_section(results.parts(GenerateRecord.KIND), results.parts(MemoryCeiling.KIND),
                                results.environments)

    @classmethod
    def summary(cls, results, budget_ms: Optional[float]) -> list[str]:
        return generate_summary(results.parts(GenerateRecord.KIND))


@dataclass(frozen=True)
class _MemoryPlan:
    """The decoder workers' memory groups (:mod:`trtbench.scenarios.generate.memory`)."""

    estimates: dict[str, int]
    budget: int
    groups: list[list[str]]
    too_big: dict[str, str]

    @classmethod
    def of(cls, settings: GenerateSettings, model, points: list[GeneratePoint], recipes: dict[str, DecoderRecipe]
           ) -> "_MemoryPlan":
        budget = (int(settings.memory_budget_mb * MIB) if settings.memory_budget_mb is not None
                  else default_budget_bytes())
        parameters = sum(p.numel() for p in model.parameters())
        largest = max(points, key=lambda p: p.batch * (p.prompt_tokens + p.new_tokens))
        estimates = {slot: worker_bytes(parameters, r.precision, kv_cache_bytes(
            model.config, largest.batch, largest.prompt_tokens + largest.new_tokens, r.precision))
                     for slot, r in recipes.items()}
        return cls(estimates, budget, *plan_groups(estimates, budget, BASELINE_VARIANT))

    def turns(self, index: int, processes: int) -> list[list[int]]:
        """The replicate process indices of each turn of group ``index``."""
        need = sum(self.estimates[slot] for slot in self.groups[index])
        return plan_turns(processes, need, self.budget - need, share=1.0)

    def recorded(self, index: int) -> list[str]:
        """The slots whose rows group ``index`` gives: eager fp32's only in the first group."""
        members = self.groups[index]
        return members if index == 0 else [slot for slot in members if slot != BASELINE_VARIANT]

    def memory(self, index: int, slot: str, measured: dict) -> dict:
        """A row's memory figures: its group, the budget, its estimate, its worker's peak and the group's."""
        return {"group": index, "groups": len(self.groups), "members": self.groups[index],
                "budget_mb": round(self.budget / MIB), "estimate_mb": round(self.estimates[slot] / MIB),
                "worker_peak_rss_mb": measured["worker_peak_rss_mb"].get(slot),
                "worker_pid": measured["pids"].get(slot),
                **{k: v for k, v in measured.items() if k not in ("worker_peak_rss_mb", "pids")}}


def _killed(worker: Worker, err: WorkerError) -> WorkerError:
    """``err``, saying what a SIGKILL may mean where that is how the worker died."""
    if worker.process.poll() == -signal.SIGKILL:
        return WorkerError(f"{err}: killed by SIGKILL (the kernel's OOM killer sends it when memory runs out; "
                           f"lower memory_budget_mb under the generate entry to run fewer workers at once)")
    return err


def _peaks(workers: dict[str, dict[int, Worker]], started: float) -> dict:
    """The turn's memory so far: each slot's peak RSS and pid, this process's RSS, the run's peak."""
    peaks, pids, total = {}, {}, 0.0
    for slot, found in workers.items():
        for i, worker in sorted(found.items()):
            try:
                facts = worker.refresh_facts()
            except WorkerError:
                facts = worker.facts
            peak = facts.get("peak_rss_mb")
            total += peak or 0
            peaks[slot] = max(peaks.get(slot) or 0.0, peak or 0.0) or None
            pids.setdefault(slot, facts.get("pid"))
    parent = own_rss_bytes() / MIB
    return {"worker_peak_rss_mb": peaks, "pids": pids, "parent_rss_mb": round(parent, 1),
            "run_peak_rss_mb": round(parent + total, 1),
            "group_started_at": started, "timed_until": time.time()}


def _time_group(ctx, timing: GenerateWorkers, points: list[GeneratePoint], settings: GenerateSettings,
                tolerances: dict, slots: dict) -> Iterator[tuple[GeneratePoint, _Timed]]:
    """One turn of a memory group's workers (``timing``) checked and timed: each point's rows."""
    started = time.time()
    workers, errors = timing.start()
    rows = {slot: _Row() for slot in (*workers, *errors)}
    rows.update({slot: _Row(Status.FAILED, ctx.failures.reason(f"build {slot}", err)) for slot, err in errors.items()})
    accuracy, reference = _accuracy(ctx, workers, rows, tolerances, slots)
    for point in points:
        point_rows = {slot: _Row(row.status, row.reason) for slot, row in rows.items()}
        energy = PointEnergy.before_rounds(ctx.device)
        with ctx.progress.task(f"generate {point.label} {'+'.join(rows)}", timed=True) as tick:
            stopped_by = _rounds(ctx, workers, point, settings, point_rows, tick)
        memory = _peaks(workers, started)
        yield point, _Timed(point_rows, {"accuracy": accuracy, "reference_logits": reference, "stopped_by": stopped_by,
                                  "energy": energy.after_rounds(), "memory": memory,
                                  "worker": {slot: found[min(found)].facts for slot, found in workers.items()},
                                  "processes": {slot: {i: _process_facts(w) for i, w in found.items()}
                                                for slot, found in workers.items()}})


def _process_facts(worker: Worker) -> dict:
    """What a replicate process was: its pid, start-up luck and peak RSS so far."""
    return {"pid": worker.process.pid, **{k: worker.facts[k] for k in ("hash_seed", "env_padding_bytes", "peak_rss_mb")
                                          if k in worker.facts}}


def _joined(earlier: Optional[_Timed], later: _Timed) -> _Timed:
    """A point's rows and shared figures over the turns so far (``earlier``) and the next (``later``)."""
    rows, shared = later.rows, later.shared
    if earlier is not None:
        before_rows, before = earlier.rows, earlier.shared
        offset = 1 + max((r for row in before_rows.values() for _, r in row.blocks), default=-1)
        rows = {slot: _join_rows(before_rows.get(slot), row, offset) for slot, row in rows.items()}
        shared = {**shared, **{k: before[k] for k in ("accuracy", "reference_logits", "worker")},
                  "energy": before["energy"].through(shared["energy"]),
                  "processes": {slot: {**before["processes"].get(slot, {}), **shared["processes"].get(slot, {})}
                                for slot in {*before["processes"], *shared["processes"]}}}
        shared["stopped_by"] = f"{before['stopped_by']}, then {shared['stopped_by']}"
    timed = [row.series for row in rows.values() if row.status is Status.OK and row.requests]
    return _Timed(rows, {**shared, "baseline": rows.get(BASELINE_VARIANT), "between": pooled_variances(timed)})


def _join_rows(before: Optional[_Row], after: _Row, offset: int) -> _Row:
    if before is None or before.status is not Status.OK:
        return before or after
    if after.status is not Status.OK:
        return after
    return _Row(Status.OK, "", before.requests + after.requests,
                before.blocks + [(p, r + offset) for p, r in after.blocks], before.tokens,
                max(before.peak_bytes, after.peak_bytes), after.facts, before.energy + after.energy)


def _accuracy(ctx, workers: dict[str, dict[int, Worker]], rows: dict[str, _Row], tolerances: dict,
              slots: dict) -> tuple[dict, Any]:
    """Each ready slot's teacher-forced logits against eager fp32's (a miss fails its row), and eager's."""
    logits, figures = {}, {}
    for slot, found in workers.items():
        for i, worker in sorted(found.items()):
            try:
                output = worker.check(LOGITS).output
            except WorkerError as err:
                rows[slot] = _Row(Status.FAILED, ctx.failures.reason(f"logits of {process_name(slot, i)}",
                                                                     _killed(worker, err)))
                logits.pop(slot, None)
                break
            logits.setdefault(slot, output)
    reference = logits.get(BASELINE_VARIANT)
    for slot in logits:
        precision = slots[slot].precision
        if reference is None:
            rows[slot] = _Row(Status.FAILED, "no eager fp32 reference: eager fp32 did not run "
                                             f"({rows.get(BASELINE_VARIANT, _Row()).reason or 'not listed'})")
            continue
        tolerance = tolerances[precision]
        figures[slot] = found = logit_agreement(logits[slot], reference, tolerance.top1_margin)
        misses = logit_misses(found, tolerance) if slot != BASELINE_VARIANT else []  # the reference itself
        found.update(ok=not misses, cosine_floor=tolerance.cosine_min, top1_floor=tolerance.top1_agree_min)
        if misses:
            rows[slot] = _Row(Status.FAILED, f"accuracy against eager fp32 (tolerances.{precision}): "
                                             f"{'; '.join(misses)}; max abs error {found['max_abs_err']:.3g}")
    return figures, reference


def _rounds(ctx, workers: dict[str, dict[int, Worker]], point: GeneratePoint, settings: GenerateSettings,
            rows: dict[str, _Row], tick) -> str:
    """Rounds of one request of every running slot at ``point`` until :func:`_stop`; why they stopped."""
    started = time.perf_counter()
    indices = {slot: sorted(found) for slot, found in workers.items() if rows[slot].status is Status.OK}
    rounds = Rounds({slot: len(found) for slot, found in indices.items()})

    def request(at: BlockAt) -> None:
        i = indices[at.variant][at.process]
        _request(ctx, workers[at.variant][i], point, replace(at, process=i), rows)
        if rows[at.variant].status is not Status.OK:
            rounds.leave(at.variant)

    def finished(rounds: Rounds) -> dict[str, str]:
        if not rounds.at_cycle_end:
            return {}
        why = _stop(settings, rounds.cycles, time.perf_counter() - started, [rows[slot] for slot in rounds.active])
        return dict.fromkeys(rounds.active, why) if why else {}

    rounds.run(request, finished, tick)
    return next(iter(rounds.stopped_by.values()), "no decoder left running")


def _stop(settings: GenerateSettings, cycles: int, elapsed_s: float, running: list[_Row]) -> Optional[str]:
    """Why the rounds stop after ``cycles`` requests a process, ``elapsed_s`` in; None until then."""
    if cycles >= settings.max_requests:
        return "max_requests"
    if cycles < settings.min_requests:
        return None
    if elapsed_s >= settings.max_time_s:
        return "max_time_s"
    if all(e2e_converged(row.series, settings.target_rel_ci) for row in running):
        return "target_rel_ci"
    return None


def _request(ctx, worker: Worker, point: GeneratePoint, at: BlockAt, rows: dict[str, _Row]) -> None:
    """One request by ``worker`` at ``point`` into its slot's row; a worker error fails the slot."""
    slot, i = at.variant, at.process
    try:
        checked = worker.check(point.label)
    except WorkerError as err:
        rows[slot] = _Row(Status.FAILED, ctx.failures.reason(f"generate {process_name(slot, i)} at {point.label}",
                                                             _killed(worker, err)))
        return
    out, row = checked.output, rows[slot]
    row.requests.append(request_metrics(TimedRequest(out["start"], tuple(out["stamps"]), point.batch,
                                                     point.prompt_tokens)))
    row.blocks.append((i, at.round))
    row.tokens = out["tokens"] if row.tokens is None else row.tokens
    row.peak_bytes = max(row.peak_bytes, checked.peak_memory.get("peak_bytes") or 0)
    row.facts = out["facts"]
    if checked.energy is not None:
        row.energy.append(replace(checked.energy, units=point.batch * point.new_tokens))


def _record(ctx, group, point: GeneratePoint, who: Slot, row: _Row, context: dict) -> GenerateRecord:
    """The part of slot ``who`` at ``point``; ``context``: its accuracy, sizes and shared figures."""
    data: dict = {"device": group.device, "prompt_tokens": point.prompt_tokens, "new_tokens": point.new_tokens,
                  "batch": point.batch, "kv_cache_bytes": context["kv_cache_bytes"],
                  "decode_bytes": dict(context["decode_bytes"])}
    if context["accuracy"] is not None:
        data["accuracy"] = dict(context["accuracy"])
    if row.status is Status.OK and row.requests:
        baseline, ready, between = context["baseline"], context["worker"].get(who.id, {}), context["between"]
        data.update(requests=requests_of(row.series), metrics=metrics_of(row.series, between),
                    rounds=len({r for _, r in row.blocks}), processes=len({p for p, _ in row.blocks}),
                    stopped_by=context["stopped_by"], peak_rss_bytes=row.peak_bytes, facts={**ready, **row.facts},
                    changed_while_timed={k: [ready.get(k), v] for k, v in row.facts.items() if ready.get(k) != v})
        if "energy" in context:
            data["energy"] = context["energy"].metrics(row.energy, unit="token")
        tpot_s = data["metrics"]["tpot_ms"]["median"] / 1e3
        data["decode_bytes"]["achieved_bytes_per_s"] = data["decode_bytes"]["bytes"] / tpot_s if tpot_s > 0 else None
        if baseline is not None and baseline.status is Status.OK and baseline.requests:
            data["speedups"] = speedups_of(row.series, baseline.series, between)
            data.setdefault("accuracy", {})["greedy_prefix"] = matching_prefix(row.tokens, baseline.tokens)
    if "memory" in context:
        data["memory"] = context["memory"]
    if who.id in context.get("processes", {}):
        data["process_facts"] = [{"process": i, **facts} for i, facts in sorted(context["processes"][who.id].items())]
    if len(context.get("turns", ())) > 1:
        data["process_turns"] = context["turns"]
    return GenerateRecord(ctx.env_id, group.model.id, group.threads, point.label, who.id, who.decoder, who.precision,
                          row.status, row.reason, data)
