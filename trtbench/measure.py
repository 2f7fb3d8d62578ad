"""The measure stage: every variant of a build group at one shape point.

Inputs are prepared by each variant outside the timed region; each variant's first call is
checked against the eager fp32 reference; then every variant that ran is timed, interleaved
with the others (:func:`trtbench.timing.measure_interleaved`). The result is one
:class:`~trtbench.record.Record` per requested variant, whatever happened to it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable

import torch

from trtbench.build import BuildOutcome, capture_warnings
from trtbench.case import BASELINE_VARIANT, Case
from trtbench.isolation import Isolation
from trtbench.outdir import FailureLog
from trtbench.parity import check_parity
from trtbench.profiling.memory import track_peak
from trtbench.record import Record
from trtbench.timing import Block, BlockTimer, Measurement, TimingPlan, measure_interleaved


@dataclass(frozen=True)
class MissingReference:
    """Stands in for eager fp32's output at a point where eager fp32 itself failed."""

    reason: str


class _VariantFailed(Exception):
    """Raised out of the interleaved loop when one variant's block fails, naming it."""

    def __init__(self, name: str, error: BaseException):
        super().__init__(name)
        self.name, self.error = name, error


class _Tagged:
    """A block timer whose failures name their variant."""

    def __init__(self, name: str, timer: BlockTimer):
        self.name, self.timer = name, timer

    def block(self, calls: int) -> Block:
        try:
            return self.timer.block(calls)
        except Exception as err:
            raise _VariantFailed(self.name, err) from err


def _parity(output: Any, reference: Any, tolerance, built) -> dict:
    if "accuracy" in built.info:  # a quantized build: judged on the evaluation samples when it was built
        return built.info["accuracy"]
    if isinstance(reference, MissingReference):
        return {"ok": False, "reason": reference.reason, "max_abs_err": None, "max_rel_err": None,
                "top1_agree": None, "atol": tolerance.atol, "rtol": tolerance.rtol}
    return check_parity(output, reference, tolerance.atol, tolerance.rtol).to_dict()


def _isolation_metrics(isolation: Isolation, name: str, m: Measurement) -> dict:
    facts = {**isolation.facts(name), "blocks": len(m.settle_s), "unsettled_blocks": m.unsettled,
             "settle_ms_median": _median([s * 1e3 for s in m.settle_s]),
             "settle_ms_max": round(max(m.settle_s) * 1e3, 3) if m.settle_s else None,
             "settle_cpu_ms_median": _median(m.settle_cpu_ms)}
    if m.cpu_between_ms:
        facts["cpu_between_blocks_ms_median"] = _median(m.cpu_between_ms)
        facts["cpu_between_blocks_ms_max"] = round(max(m.cpu_between_ms), 3)
    return facts


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def measure_point(slots: list[tuple[str, Case]], outcomes: dict[str, BuildOutcome], inputs: tuple, reference: Any,
                  tolerances: dict, plan: TimingPlan, device: torch.device, environment: str, failures: FailureLog,
                  isolation: Isolation, tick: Callable[[], None] = lambda: None) -> list[Record]:
    """Records for ``slots`` ((slot key, case): one per variant and precision, all at the same point), in
    the same order; ``outcomes`` and ``tolerances`` are by slot key and by precision.

    Accuracy and peak memory are checked here, on this process's builds; the timing runs where
    ``isolation`` puts each variant (its own worker process by default). The slot key ``eager`` (eager at
    the group's first precision) is the baseline of the rounds.
    """
    records: dict[str, Record] = {}
    timers: dict[str, _Tagged] = {}
    point = slots[0][1].point
    with torch.inference_mode():
        for key, case in slots:
            outcome = outcomes[key]
            record = Record(case=case, environment=environment, status=outcome.status, reason=outcome.reason,
                            build=outcome.facts, warnings=list(outcome.warnings))
            records[key] = record
            if outcome.built is None:
                continue
            variant, built = outcome.variant, outcome.built
            try:
                prepared = variant.prepare(built, inputs)
                output, caught = capture_warnings(lambda: variant.run(built, prepared))
                record.parity = _parity(output, reference, tolerances[case.precision], built)
                _, record.metrics["peak_memory"] = track_peak(lambda: variant.run(built, prepared), device)
                timer = isolation.timer(key, point, lambda v=variant, b=built, p=prepared: v.run(b, p))
            except KeyboardInterrupt:
                raise
            except Exception as err:  # this variant at this point failed; the others go on
                record.status = "failed"
                record.reason = failures.reason(f"run {case.variant} {case.precision} at {case.point}", err)
                continue
            record.warnings = sorted(set(record.warnings) | set(caught))
            timers[key] = _Tagged(key, timer)
        while timers:
            try:
                measured = measure_interleaved(timers, device, plan, tick, baseline=BASELINE_VARIANT)
            except _VariantFailed as failed:  # drop the variant that broke and time the rest again
                records[failed.name].status = "failed"
                records[failed.name].reason = failures.reason(f"timing {failed.name} at {point}", failed.error)
                del timers[failed.name]
                continue
            for name, measurement in measured.items():
                record = records[name]
                record.rounds, record.device_rounds = measurement.rounds, measurement.device_rounds
                record.stopped_by = measurement.stopped_by
                record.metrics["isolation"] = _isolation_metrics(isolation, name, measurement)
                if measurement.alone:
                    record.metrics["interference"] = {"alone_ms": measurement.alone,
                                                      "variants": [n for n in measured if n != name]}
            break
    return [records[key] for key, _ in slots]
