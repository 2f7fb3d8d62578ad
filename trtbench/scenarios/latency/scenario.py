"""The latency scenario (the default): each variant at each point checked against eager fp32 and timed."""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

import torch

from trtbench.core.case import BASELINE_VARIANT
from trtbench.core.env import NATIVE
from trtbench.core.inflight import InFlight, in_flight
from trtbench.core.precision import compute_dtype, dtype_name
from trtbench.core.record import Record
from trtbench.core.status import Status
from trtbench.measure.accuracy import ElementwiseAccuracy, elementwise_accuracy, int8_where_timed
from trtbench.measure.ceiling import Ceiling, device_ceilings
from trtbench.measure.references import MissingReference
from trtbench.measure.race import STOPPED, Entrants
from trtbench.measure.timing import Block, BlockTimer, RawTiming, WarmedUp, measure_interleaved
from trtbench.measure.trackers.energy import EnergyTracker, PointEnergy
from trtbench.measure.trackers.faults import FaultsTracker, faults_metrics
from trtbench.measure.trackers.launch import LaunchTracker, launch_metrics
from trtbench.report.section import ReportSection
from trtbench.scenarios.latency.report import latency_section
from trtbench.results.recommend import recommend
from trtbench.scenarios.base import Testbed, Scenario, register
from trtbench.workers.isolation import Isolation, VariantWorkers, spawn_group_workers, start_isolation
from trtbench.workers.loop import READY_CPU_S, BuildTooSlow

if TYPE_CHECKING:
    from trtbench.config.context import RunContext


class _VariantFailed(Exception):
    """Raised out of the interleaved loop when one variant's block fails, naming it."""

    def __init__(self, name: str, error: BaseException):
        super().__init__(name)
        self.name, self.error = name, error


class _Tagged:
    """A block timer whose failures name their variant."""

    def __init__(self, name: str, timer: BlockTimer):
        self.name, self.timer = name, timer

    def block(self, calls: int, lead_in: int = 0) -> Block:
        try:
            return self.timer.block(calls, lead_in)
        except Exception as err:
            raise _VariantFailed(self.name, err) from err


def _accuracy(output: Any, reference: Any, tolerance, built) -> dict:
    if isinstance(reference, MissingReference):
        return ElementwiseAccuracy(max_abs_err=None, max_rel_err=None, top1_agree=None, ok=False,
                                   atol=getattr(tolerance, "atol", None), rtol=getattr(tolerance, "rtol", None),
                                   reason=reference.reason).to_dict()
    if "accuracy" in built.info:  # a quantized build, judged on the evaluation samples when built: judged again here
        return int8_where_timed(built.info["accuracy"], output, reference, tolerance)
    return elementwise_accuracy(output, reference, tolerance.atol, tolerance.rtol).to_dict()


def _isolation_metrics(isolation: Isolation, name: str, m: RawTiming) -> dict:
    facts = {**isolation.facts(name), "blocks": len(m.settle_s), "unsettled_blocks": m.unsettled,
             "settle_ms_median": _median([s * 1e3 for s in m.settle_s]),
             "settle_ms_max": round(max(m.settle_s) * 1e3, 3) if m.settle_s else None,
             "settle_cpu_ms_median": _median(m.settle_cpu_ms), **faults_metrics(m.kept(FaultsTracker.key)),
             "switch_in_ms_median": _median(m.switch_in_ms)}
    if m.cpu_between_ms:
        facts["cpu_between_blocks_ms_median"] = _median(m.cpu_between_ms)
        facts["cpu_between_blocks_ms_max"] = round(max(m.cpu_between_ms), 3)
    return facts


def _process_metrics(isolation: Isolation, name: str, m: RawTiming, ids: list[int]) -> list[dict]:
    """One dict per process that timed ``name``: its index, facts and minor page faults per call."""
    facts = isolation.process_facts(name)
    faults = m.kept(FaultsTracker.key) if len(m.kept(FaultsTracker.key)) == len(m.rounds) else []
    return [{"process": ids[i], **facts.get(ids[i], {}),
             **({"minor_faults_per_call_median": _median([f for f, p in zip(faults, m.block_process) if p == i])}
                if faults else {})} for i in range(len(ids))]


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def measure_point(ctx: RunContext, built: Testbed, point, isolation: Isolation, tick: Callable[[], None],
                  stopped: frozenset = frozenset()) -> list[Record]:
    """One record per slot of ``built``'s group at ``point``; those ``stopped`` by an earlier turn's race not timed."""
    group, outcomes = built.group, built.outcomes
    slots = [(group.slot_id(e.name, p), group.case(e, point, p)) for e, p in group.slots()]
    inputs = {p: c.inputs[point.label] for p, c in built.copies.items()}
    reference, tolerances = built.references.outputs[point.label], built.tolerances
    failures, point = ctx.failures, point.label
    made: dict[str, dict] = {}  # slot id -> the Record fields found so far
    timers: dict[str, dict[int, _Tagged]] = {}  # slot id -> its processes' timers, by process index
    checked_s: dict[str, float] = {}  # slot id -> its check call's time: an untimed call at this point
    contradicted: dict[str, str] = {}  # slot id -> how its kernels contradict its precision
    started = time.perf_counter()
    with torch.inference_mode():
        for key, case in slots:
            outcome = outcomes[key]
            fields = made[key] = {"status": outcome.status, "reason": outcome.reason, "build": outcome.facts,
                                  "warnings": list(outcome.warnings), "metrics": {}}
            if outcome.built is None or key in stopped:
                continue
            variant, built = outcome.variant, outcome.built
            try:
                with in_flight(InFlight("check", case.model, case.variant, case.precision, str(ctx.out_dir))):
                    prepared = variant.prepare(built, inputs[case.precision])
                    call = functools.partial(variant.run, built, prepared)
                    checked = isolation.check(key, point, call)  # in this process, with isolation in_process
                fields["metrics"]["peak_memory"], caught = checked.peak_memory, checked.warnings
                fields["accuracy"] = _accuracy(checked.output, reference, tolerances[case.precision], built)
                proof = isolation.kernels(key, functools.partial(variant.kernels, built, prepared, ctx.device))
                if proof is not None:
                    fields["metrics"]["kernels"] = proof.to_dict()
                    native = str(built.info.get("bf16", "")).startswith(NATIVE)
                    contradiction = proof.contradiction(case.precision, native_bf16=native)
                    if contradiction:
                        contradicted[key] = contradiction
                processes = isolation.timers(key, point, call)
                checked_s[key] = checked.call_s
            except KeyboardInterrupt:
                raise
            except BuildTooSlow as err:  # its worker was killed at benchmark.max_build_s: skipped, saying so
                fields.update(status=Status.SKIPPED, reason=str(err))
                continue
            except Exception as err:  # this variant at this point failed; the others go on
                fields["status"] = Status.FAILED
                fields["reason"] = failures.reason(f"run {case.variant} {case.precision} at {case.point}", err)
                continue
            fields["warnings"] = sorted(set(fields["warnings"]) | set(caught))
            timers[key] = {i: _Tagged(key, timer) for i, timer in processes.items()}
        energy = PointEnergy.before_rounds(ctx.device) if timers else None

        def more(key: str) -> Optional[BlockTimer]:
            found = isolation.more(key, point)
            if found is not None:
                timers[key][found.index] = _Tagged(key, found.timer)
            return None if found is None else timers[key][found.index]

        barred = frozenset(key for key in timers if not (made[key].get("accuracy") or {}).get("ok", True)
                           or key in contradicted)
        references = {group.slot_id(e.name, p): group.slot_id(e.name, group.reference_precision)
                      for e, p in group.slots() if p != group.reference_precision}
        entrants = Entrants(BASELINE_VARIANT, barred, isolation.replicates.most, more, lambda key: min(
            (facts.get(READY_CPU_S) or 0.0 for facts in isolation.process_facts(key).values()), default=0.0),
                            references=references)
        while timers:
            try:
                measured = measure_interleaved({k: list(p.values()) for k, p in timers.items()}, ctx.device,
                                               ctx.timing, tick, entrants,
                                               warmed=WarmedUp(checked_s, time.perf_counter() - started))
            except _VariantFailed as failed:  # drop the variant that broke and time the rest again
                made[failed.name].update(status=Status.FAILED,
                                         reason=failures.reason(f"timing {failed.name} at {point}", failed.error))
                del timers[failed.name]
                continue
            energy = energy.after_rounds()
            for name, measurement in measured.items():
                fields = made[name]
                ids = sorted(timers[name])  # measure_interleaved's process i is this turn's i-th
                fields.update(rounds=measurement.rounds, device_rounds=measurement.device_rounds,
                              block_process=[ids[i] for i in measurement.block_process],
                              block_round=list(measurement.block_round), stopped_by=measurement.stopped_by)
                fields["metrics"]["isolation"] = _isolation_metrics(isolation, name, measurement)
                launch = launch_metrics(measurement.kept(LaunchTracker.key), measurement.samples)
                if launch:
                    fields["metrics"]["launch"] = launch
                fields["metrics"]["energy"] = energy.metrics(measurement.kept(EnergyTracker.key))
                fields["metrics"]["processes"] = _process_metrics(isolation, name, measurement, ids)
                if measurement.race is not None:
                    fields["metrics"]["race"] = measurement.race
                if measurement.alone:
                    fields["metrics"]["interference"] = {"alone_ms": measurement.alone,
                                                         "variants": [n for n in measured if n != name]}
            break
    records = [Record(case=case, environment=ctx.env_id, **made[key]) for key, case in slots]
    return [record.failed(f"its kernels contradict its precision: {contradicted[key]}") if key in contradicted
            and record.status is Status.OK else record for record, (key, _) in zip(records, slots)]


def join_turns(earlier: list[Record], later: list[Record]) -> list[Record]:
    """Each slot's records of a point over the turns so far (``earlier``) and the next (``later``) as one."""
    offset = 1 + max((r for record in earlier for r in record.round_ids), default=-1)
    joined = []
    for before, after in zip(earlier, later):
        failed = next((r for r in (before, after) if r.status is not Status.OK), None)
        device = (before.device_rounds + after.device_rounds
                  if before.device_rounds is not None and after.device_rounds is not None else None)
        joined.append(replace(
            before, status=failed.status if failed else Status.OK, reason=failed.reason if failed else "",
            rounds=before.rounds + after.rounds, device_rounds=device,
            block_process=before.processes + after.processes,
            block_round=before.round_ids + [r + offset for r in after.round_ids],
            stopped_by=next((why for why in (STOPPED, "max_time_s") if why in (before.stopped_by, after.stopped_by)),
                            after.stopped_by),
            metrics={**before.metrics, **{k: after.metrics[k] for k in ("race",) if k in after.metrics},
                     "processes": before.metrics.get("processes", []) + after.metrics.get("processes", [])},
            warnings=sorted(set(before.warnings) | set(after.warnings))))
    return joined


def with_run_info(built: Testbed, points: list) -> list[Record]:
    """The records of ``points`` whose variant knows facts only after every point ran, joined."""
    group, outcomes, records = built.group, built.outcomes, built.done.records
    derived = []
    for entry, precision in group.slots():
        outcome = outcomes.get(group.slot_id(entry.name, precision))
        info = outcome.variant.run_info(outcome.built) if outcome is not None and outcome.built is not None else None
        if not info:
            continue
        for point in points:
            record = records.get(group.case(entry, point, precision).key)
            if record is not None:
                derived.append(record.with_build_info(info))
    return derived


def points_todo(group, done) -> list:
    """The points of ``group`` some of whose cases have no record yet."""
    return [p for p in group.points
            if any(group.case(e, p, precision).key not in done.records for e, precision in group.slots())]


def ceilings_todo(ctx: RunContext, built: Testbed) -> Iterator[Ceiling]:
    """The device's FLOP/s ceilings at each dtype some variant of the group is timed at, once per scope."""
    group = built.group
    timed = {compute_dtype(p) for e, p in group.slots() if group.slot_id(e.name, p) not in group.unavailable}
    for dtype in timed:
        key = (ctx.env_id, group.device, dtype_name(dtype), group.threads)
        if built.done.part(Ceiling.KIND, key) is None:
            yield Ceiling(*key, values=device_ceilings(ctx.device, dtype, group.threads,
                                                       ctx.config.benchmark.measure_ceiling))


@register
class Latency(Scenario):
    """Every variant at every point, checked against eager fp32 and timed interleaved (the default)."""

    name = "latency"
    parts = (Record, Ceiling)
    example = "latency"

    def owes(self, group, done) -> bool:
        return bool(points_todo(group, done))

    def prepare(self, ctx: RunContext, group) -> Optional[VariantWorkers]:
        """The group's timing workers, spawned before it builds so that they import torch meanwhile."""
        return spawn_group_workers(ctx.config, group)

    def run(self, ctx: RunContext, built: Testbed, prepared: Optional[VariantWorkers]) -> Iterator:
        points = points_todo(built.group, built.done)
        if not points:
            return
        yield from ceilings_todo(ctx, built)
        isolation = start_isolation(ctx, built.group, built.outcomes, built.copies, prepared)
        group, turns = built.group, isolation.turns
        earlier: dict[str, list[Record]] = {}  # point label -> its records of the turns so far
        for turn in range(turns):
            if turn:
                isolation.next_turn()
            for point in points:
                title = f"time {group.model.id} {'+'.join(group.precisions)} t{group.threads} {point.label}"
                stopped = frozenset(group.slot_id(r.case.variant, r.case.precision)
                                    for r in earlier.get(point.label, []) if r.stopped_by == STOPPED)
                with ctx.progress.task(title + (f" (turn {turn + 1} of {turns})" if turns > 1 else ""),
                                       timed=True) as tick:
                    records = measure_point(ctx, built, point, isolation, tick, stopped)
                records = join_turns(earlier[point.label], records) if turn else records
                if turn + 1 < turns:
                    earlier[point.label] = records
                    continue
                flops = {"flops": built.references.flops[point.label]} if point.label in built.references.flops else {}
                took_turns = {"process_turns": turns} if turns > 1 else {}
                yield from (record.with_metrics(**flops, **took_turns) for record in records)
        yield from with_run_info(built, points)

    @classmethod
    def report(cls, results, budget_ms: Optional[float]) -> Optional[ReportSection]:
        return latency_section(results, budget_ms) if len(results) else None

    @classmethod
    def summary(cls, results, budget_ms: Optional[float]) -> list[str]:
        if budget_ms is None:
            return []
        return [f"recommendation (p99 <= {budget_ms:g} ms):",
                *[f"  {rec.text(results.environments)}" for rec in recommend(results, budget_ms)]]
