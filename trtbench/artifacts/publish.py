"""The save stage: a variant's deployable files, published once they are known to ship (docs/artifacts.md)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trtbench.artifacts.store import ArtifactSource, ArtifactStore, PublishCheck, weights_bytes
from trtbench.building.copies import PrecisionCopy
from trtbench.building.stage import BuildOutcome, capture_warnings
from trtbench.core.precision import float_precision, is_quantized
from trtbench.core.record import Record
from trtbench.core.status import Status
from trtbench.building.recipe import HOSTED_FILE

if TYPE_CHECKING:
    from trtbench.config.context import RunContext

NOT_SAVED_INACCURATE = "artifact not saved: the variant failed its accuracy check"


@dataclass(frozen=True)
class Published:
    """What the save stage gave: the manifest entries of the files published, and the variant's records."""

    entries: tuple[dict, ...]
    records: tuple[Record, ...]


def artifact_stem(config, model_id: str, variant: str, precision: str) -> str:
    """``<variant>_<precision>``, the model first when the run has several: a variant's artifacts' stem."""
    model = re.sub(r"[^A-Za-z0-9.-]+", "-", model_id).strip("-") + "_" if len(config.models) > 1 else ""
    return f"{model}{variant}_{precision}"


def _checked_by_worker(records: list[Record]) -> str | None:
    """The suffix of the saved file the timing worker loaded and ran accurately at every point (None: none did)."""
    hosted = {(r.metrics.get("isolation") or {}).get(HOSTED_FILE) for r in records}
    if len(hosted) != 1 or None in hosted or any(r.accuracy is None or not r.accuracy.get("ok") for r in records):
        return None
    return hosted.pop()


def reload_tolerance(tolerance, variant):
    """How closely ``variant``'s quantized file must reproduce its build: fp32's or its ``int8_reload_rtol``."""
    allowance = variant.int8_reload_rtol
    return tolerance if allowance is None else dataclasses.replace(tolerance, rtol=max(tolerance.rtol, allowance))


def publish(ctx: RunContext, store: ArtifactStore, outcome: BuildOutcome, records: list[Record],
            at: PrecisionCopy) -> Published:
    """Save ``outcome``'s variant into ``store`` if its ``records`` allow it, its files checked on ``at``'s inputs."""
    ok_rows = [r for r in records if r.status is Status.OK]
    if outcome.built is None or not ok_rows:
        return Published((), tuple(records))
    if any(r.accuracy_failed for r in records):  # an inaccurate build is not something to ship
        return Published((), tuple(r.with_warnings([NOT_SAVED_INACCURATE]) for r in records))
    variant, built = outcome.variant, outcome.built
    model_id, precision = ok_rows[0].case.model, ok_rows[0].case.precision
    labels = [r.case.point for r in ok_rows]
    reference_label = "opt" if "opt" in labels else labels[0]
    quantized = is_quantized(precision)
    tolerance = ctx.config.tolerances[float_precision(precision)]
    check = PublishCheck({label: at.inputs[label] for label in labels}, reference_label,
                         reload_tolerance(tolerance, outcome.variant) if quantized else tolerance,
                         checked_by_worker=None if quantized else _checked_by_worker(records))
    try:
        entries, caught = capture_warnings(lambda: store.save(
            ArtifactSource(variant, built, precision, ctx.device, model=model_id), check,
            stem=artifact_stem(ctx.config, model_id, variant.name, precision), expected_bytes=weights_bytes(at.model)),
            variant.deprecations)
    except Exception as err:  # a variant that cannot be saved cannot ship: failed, timings kept
        reason = ctx.failures.reason(f"save {variant.name} {precision}", err)
        return Published((), tuple(r.failed(reason) for r in records))
    # each file's load time and first call in a fresh process: the check it passed to be published
    cold = [{"file": entry["file"], "ok": True, **{key: entry["fresh_process_check"][key] for key in
                                                   ("load_s", "first_call_ms")}}
            for entry in entries] if ctx.config.output.cold_start else []
    kept = [r.with_warnings(caught) for r in records]
    return Published(tuple(entries), tuple(r.with_metrics(cold_start=cold) if cold else r for r in kept))
