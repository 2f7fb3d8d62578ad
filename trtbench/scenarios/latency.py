"""The latency scenario (the default): every variant of a build group at one shape point, one call at a time.

Inputs are prepared by each variant outside the timed region; each variant's output is checked
against the eager fp32 reference, from a call where it is timed (its worker, which hosts the
deployed file where the variant ships one); then every variant that ran is timed, interleaved
with the others (:func:`trtbench.measure.timing.measure_interleaved`). The result is one
:class:`~trtbench.core.record.Record` per requested variant, whatever happened to it.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Iterator

import torch

from trtbench.build.stage import BuildOutcome
from trtbench.core.case import BASELINE_VARIANT, Case
from trtbench.workers.isolation import Isolation
from trtbench.core.outdir import FailureLog
from trtbench.measure.accuracy import ElementwiseAccuracy, elementwise_accuracy
from trtbench.core.record import Record
from trtbench.measure.references import MissingReference
from trtbench.core.status import Status
from trtbench.measure.timing import Block, BlockTimer, RawTiming, TimingSettings, WarmedUp, measure_interleaved


class _VariantFailed(Exception):
    """Raised out of the interleaved loop when one variant's block fails, naming it."""

    def __init__(self, name: str, error: BaseException):
        super().__init__(name)
        self.name, self.error = name, error


class _Tagged:
    """A block timer whose failures name their variant."""

    def __init__(self, name: str, timer: BlockTimer):
        self.name, self.timer = name, timer

    def block(self, calls: int, switch_in: bool = False) -> Block:
        try:
            return self.timer.block(calls, switch_in)
        except Exception as err:
            raise _VariantFailed(self.name, err) from err


def _accuracy(output: Any, reference: Any, tolerance, built) -> dict:
    if "accuracy" in built.info:  # a quantized build: judged on the evaluation samples when it was built
        return built.info["accuracy"]
    if isinstance(reference, MissingReference):
        return ElementwiseAccuracy(max_abs_err=None, max_rel_err=None, top1_agree=None, ok=False, atol=tolerance.atol,
                                   rtol=tolerance.rtol, reason=reference.reason).to_dict()
    return elementwise_accuracy(output, reference, tolerance.atol, tolerance.rtol).to_dict()


def _isolation_metrics(isolation: Isolation, name: str, m: RawTiming) -> dict:
    facts = {**isolation.facts(name), "blocks": len(m.settle_s), "unsettled_blocks": m.unsettled,
             "settle_ms_median": _median([s * 1e3 for s in m.settle_s]),
             "settle_ms_max": round(max(m.settle_s) * 1e3, 3) if m.settle_s else None,
             "settle_cpu_ms_median": _median(m.settle_cpu_ms),
             "minor_faults_per_call_median": _median(m.faults_per_call),
             "switch_in_ms_median": _median(m.switch_in_ms)}
    if m.cpu_between_ms:
        facts["cpu_between_blocks_ms_median"] = _median(m.cpu_between_ms)
        facts["cpu_between_blocks_ms_max"] = round(max(m.cpu_between_ms), 3)
    return facts


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def measure_point(slots: list[tuple[str, Case]], outcomes: dict[str, BuildOutcome], inputs: dict[str, tuple],
                  reference: Any,
                  tolerances: dict, timing: TimingSettings, device: torch.device, environment: str, failures: FailureLog,
                  isolation: Isolation, tick: Callable[[], None] = lambda: None) -> list[Record]:
    """Records for ``slots`` ((slot id, case): one per variant and precision, all at the same point), in
    the same order; ``outcomes`` is by slot id, ``inputs`` (the point's, at each precision's dtype) and
    ``tolerances`` by precision.

    Accuracy and peak memory are checked, and the timing runs, where ``isolation`` puts each variant
    (its own worker process by default). The slot id ``eager`` (eager at
    the group's first precision) is the baseline of the rounds. Each record is made once, at the end.
    """
    made: dict[str, dict] = {}  # slot id -> the Record fields found so far
    timers: dict[str, _Tagged] = {}
    point = slots[0][1].point
    checked_s: dict[str, float] = {}  # slot id -> its check call's time: an untimed call at this point
    started = time.perf_counter()
    with torch.inference_mode():
        for key, case in slots:
            outcome = outcomes[key]
            fields = made[key] = {"status": outcome.status, "reason": outcome.reason, "build": outcome.facts,
                                  "warnings": list(outcome.warnings), "metrics": {}}
            if outcome.built is None:
                continue
            variant, built = outcome.variant, outcome.built
            try:
                prepared = variant.prepare(built, inputs[case.precision])
                call = (lambda v=variant, b=built, p=prepared: v.run(b, p))
                checked = isolation.check(key, point, call)
                fields["metrics"]["peak_memory"], caught = checked.peak_memory, checked.warnings
                fields["accuracy"] = _accuracy(checked.output, reference, tolerances[case.precision], built)
                timer = isolation.timer(key, point, call)
                checked_s[key] = checked.call_s
            except KeyboardInterrupt:
                raise
            except Exception as err:  # this variant at this point failed; the others go on
                fields["status"] = Status.FAILED
                fields["reason"] = failures.reason(f"run {case.variant} {case.precision} at {case.point}", err)
                continue
            fields["warnings"] = sorted(set(fields["warnings"]) | set(caught))
            timers[key] = _Tagged(key, timer)
        while timers:
            try:
                measured = measure_interleaved(timers, device, timing, tick, baseline=BASELINE_VARIANT,
                                               warmed=WarmedUp(checked_s, time.perf_counter() - started))
            except _VariantFailed as failed:  # drop the variant that broke and time the rest again
                made[failed.name].update(status=Status.FAILED,
                                         reason=failures.reason(f"timing {failed.name} at {point}", failed.error))
                del timers[failed.name]
                continue
            for name, measurement in measured.items():
                fields = made[name]
                fields.update(rounds=measurement.rounds, device_rounds=measurement.device_rounds,
                              stopped_by=measurement.stopped_by)
                fields["metrics"]["isolation"] = _isolation_metrics(isolation, name, measurement)
                if measurement.alone:
                    fields["metrics"]["interference"] = {"alone_ms": measurement.alone,
                                                         "variants": [n for n in measured if n != name]}
            break
    return [Record(case=case, environment=environment, **made[key]) for key, case in slots]


def time_points(group, points: list, outcomes: dict[str, BuildOutcome], copies: dict, references,
                tolerances: dict, timing: TimingSettings, device: torch.device, environment: str, failures: FailureLog,
                isolation: Isolation, progress) -> Iterator[Record]:
    """:func:`measure_point` at each of ``points`` of build ``group`` (its inputs from ``copies``: precision
    -> :class:`~trtbench.build.copies.PrecisionCopy`), one point after the other: its records, with
    the model's FLOPs at the point (``references``: :class:`~trtbench.measure.references.References`), yielded
    as each point ends so that a caller keeps every finished point."""
    for point in points:
        slots = [(group.slot_id(e.name, p), group.case(e, point, p)) for e, p in group.slots()]
        title = f"time {group.model.id} {'+'.join(group.precisions)} t{group.threads} {point.label}"
        with progress.task(title, timed=True) as tick:
            records = measure_point(slots, outcomes, {p: c.inputs[point.label] for p, c in copies.items()},
                                    references.outputs[point.label], tolerances, timing, device, environment, failures,
                                    isolation, tick)
        flops = {"flops": references.flops[point.label]} if point.label in references.flops else {}
        yield from (record.with_metrics(**flops) for record in records)


def with_run_info(group, outcomes: dict[str, BuildOutcome], points: list, records: dict[str, Record]) -> list[Record]:
    """The records of ``points`` (of ``records``, by case key) whose variant knows facts only after every
    point ran (compiled's recompilations), with those facts joined to their build info."""
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
