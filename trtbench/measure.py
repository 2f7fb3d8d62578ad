"""The measure stage: every variant of a build group at one shape point.

Inputs are prepared by each variant outside the timed region; each variant's first call is
checked against the eager fp32 reference; then every variant that ran is timed, interleaved
with the others (:func:`trtbench.timing.measure_interleaved`). The result is one
:class:`~trtbench.record.Record` per requested variant, whatever happened to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from trtbench.build import BuildOutcome, capture_warnings
from trtbench.case import Case
from trtbench.outdir import FailureLog
from trtbench.parity import check_parity
from trtbench.profiling.memory import track_peak
from trtbench.record import Record
from trtbench.timing import TimingPlan, measure_interleaved


@dataclass(frozen=True)
class MissingReference:
    """Stands in for eager fp32's output at a point where eager fp32 itself failed."""

    reason: str


class _VariantFailed(Exception):
    """Raised out of the interleaved loop when one variant's call raises, naming it."""

    def __init__(self, name: str, error: BaseException):
        super().__init__(name)
        self.name, self.error = name, error


def _tagged(name: str, fn: Callable[[], Any]) -> Callable[[], Any]:
    def call():
        try:
            return fn()
        except Exception as err:
            raise _VariantFailed(name, err) from err
    return call


def _parity(output: Any, reference: Any, tolerance) -> dict:
    if isinstance(reference, MissingReference):
        return {"ok": False, "reason": reference.reason, "max_abs_err": None, "max_rel_err": None,
                "top1_agree": None, "atol": tolerance.atol, "rtol": tolerance.rtol}
    return check_parity(output, reference, tolerance.atol, tolerance.rtol).to_dict()


def measure_point(cases: list[Case], outcomes: dict[str, BuildOutcome], inputs: tuple, reference: Any,
                  tolerance, plan: TimingPlan, device: torch.device, environment: str, failures: FailureLog,
                  tick: Callable[[], None] = lambda: None) -> list[Record]:
    """Records for ``cases`` (one per variant, all at the same point), in the same order."""
    records: dict[str, Record] = {}
    runners: dict[str, Callable[[], Any]] = {}
    with torch.inference_mode():
        for case in cases:
            outcome = outcomes[case.variant]
            record = Record(case=case, environment=environment, status=outcome.status, reason=outcome.reason,
                            build=outcome.facts, warnings=list(outcome.warnings))
            records[case.variant] = record
            if outcome.built is None:
                continue
            variant, built = outcome.variant, outcome.built
            try:
                prepared = variant.prepare(built, inputs)
                output, caught = capture_warnings(lambda: variant.run(built, prepared))
                record.parity = _parity(output, reference, tolerance)
                _, record.metrics["peak_memory"] = track_peak(lambda: variant.run(built, prepared), device)
            except KeyboardInterrupt:
                raise
            except Exception as err:  # this variant at this point failed; the others go on
                record.status = "failed"
                record.reason = failures.reason(f"run {case.variant} {case.precision} at {case.point}", err)
                continue
            record.warnings = sorted(set(record.warnings) | set(caught))
            runners[case.variant] = _tagged(case.variant, lambda v=variant, b=built, p=prepared: v.run(b, p))
        while runners:
            try:
                measured = measure_interleaved(runners, device, plan, tick)
            except _VariantFailed as failed:  # drop the variant that broke and time the rest again
                records[failed.name].status = "failed"
                records[failed.name].reason = failures.reason(
                    f"timing {failed.name} at {cases[0].point}", failed.error)
                del runners[failed.name]
                continue
            for name, measurement in measured.items():
                record = records[name]
                record.rounds, record.device_rounds = measurement.rounds, measurement.device_rounds
                record.stopped_by = measurement.stopped_by
            break
    return [records[case.variant] for case in cases]
