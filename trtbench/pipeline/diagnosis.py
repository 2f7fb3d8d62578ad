"""``trtbench diagnose``, and a run's own diagnosis of its failing rows (docs/accuracy.md, "Where it diverges")."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

import torch

from trtbench.config.plan import resolve_device, shape_points
from trtbench.core.errors import UserInputError
from trtbench.core.inputs import point_inputs
from trtbench.core.precision import PRECISIONS, REFERENCE, is_quantized
from trtbench.core.status import DiagnosisStatus, Status
from trtbench.diagnose.build import Recipe
from trtbench.diagnose.harness import Diagnosis, Settings, diagnose, tolerance_judge
from trtbench.models import build_model
from trtbench.quantize.calibration import load_calibration
from trtbench.quantize.setup import int8_setup
from trtbench.report.diagnosis import diagnosis_section
from trtbench.report.section import ReportSection
from trtbench.report.writer import write_diagnosis

DIAGNOSE_DIR = "diagnose"
# how an INT8 build that misses its budget fails (trtbench.quantize.fallback.AccuracyBudgetMissed's message)
BUDGET_MISSED = "misses the accuracy budget"


@dataclass(frozen=True)
class Request:
    """What to diagnose (None: the config's variants, precisions, first model) and the minutes each may take."""

    variants: Optional[Sequence[str]] = None
    precisions: Optional[Sequence[str]] = None
    point: str = "opt"
    minutes: float = 10.0
    model: Optional[str] = None  # a model id of the config (None: its first)


@dataclass(frozen=True)
class DiagnoseOutcome:
    diagnoses: list[Diagnosis]
    files: dict[str, Path]

    @property
    def exit_code(self) -> int:
        """0 where every diagnosis agrees or cannot run here (skipped), else 1."""
        passing = (DiagnosisStatus.AGREES, DiagnosisStatus.UNAVAILABLE)
        return 0 if all(d.status in passing for d in self.diagnoses) else 1


def _checked(config, request: Request) -> Request:
    """``request`` with the variants and precisions to diagnose; bad names are bad input, naming the flag."""
    variants = list(request.variants or config.variant_names)
    unknown = [v for v in variants if v not in config.variant_names]
    if unknown:
        raise UserInputError("--variants", f"{', '.join(unknown)} not in the config's variants "
                             f"({', '.join(config.variant_names)})", "name variants the config lists")
    precisions = list(request.precisions or [p for p in config.precisions if p != REFERENCE] or [REFERENCE])
    for precision in precisions:
        if precision not in PRECISIONS:
            raise UserInputError("--precision", f"unknown precision '{precision}'", "use fp32, fp16, bf16 or int8")
        if precision not in config.tolerances:
            raise UserInputError(f"tolerances.{precision}", f"no tolerance for {precision} to hold its output to",
                                 f"give tolerances.{precision} in the config")
    labels = [p.label for p in shape_points(config)]
    if request.point not in labels:
        raise UserInputError("--point", f"'{request.point}' is not one of the config's points ({', '.join(labels)})",
                             "use one of those labels")
    return dataclasses.replace(request, variants=variants, precisions=precisions)


def diagnose_config(config, request: Request, say: Callable[[str], None] = print) -> DiagnoseOutcome:
    """Diagnose ``request`` on ``config``'s model and write ``diagnose/`` in its output folder."""
    diagnoses = _diagnoses(config, _checked(config, request), say)
    section = diagnosis_section(diagnoses)
    files = write_diagnosis(Path(config.output.dir) / DIAGNOSE_DIR, section, [d.stem for d in diagnoses])
    return DiagnoseOutcome(diagnoses, files)


def diagnose_failing(config, results, say: Callable[[str], None]) -> Optional[ReportSection]:
    """The report's section diagnosing each variant and precision at its first failing row (None: none fails)."""
    if not config.diagnose:
        return None
    firsts: dict[tuple, str] = {}
    for record in results:
        case = record.case
        missed = record.accuracy_failed or (record.status is Status.FAILED and BUDGET_MISSED in record.reason)
        if missed and case.precision in config.tolerances:
            firsts.setdefault((case.model, case.variant, case.precision), case.point)
    diagnoses = [diagnosis for (model, variant, precision), point in firsts.items()
                 for diagnosis in _diagnoses(config, Request([variant], [precision], point, model=model), say)]
    if not diagnoses:
        return None
    write_diagnosis(Path(config.output.dir) / DIAGNOSE_DIR, diagnosis_section(diagnoses), [d.stem for d in diagnoses])
    return diagnosis_section(diagnoses)  # drawn again: the writer clears each figure it saves


def _diagnoses(config, request: Request, say: Callable[[str], None]) -> list[Diagnosis]:
    """Each of ``request``'s variants at each of its precisions (both given), diagnosed."""
    device = resolve_device(config.device)
    ids = [m.id for m in config.models]
    if request.model is not None and request.model not in ids:
        raise UserInputError("model", f"no model {request.model!r} in the config", f"name one of: {', '.join(ids)}")
    model_cfg = config.models[ids.index(request.model)] if request.model is not None else config.models[0]
    model = build_model(model_cfg).to(device)
    point = next(p for p in shape_points(config) if p.label == request.point)
    inputs = point_inputs(config, [point], device, torch.float32)[point.label]
    setup = (int8_setup(config, load_calibration(config.calibration, config.inputs, config.benchmark.seed), model)
             if any(is_quantized(p) for p in request.precisions) else None)
    options = {entry.name: entry.options for entry in config.variants}
    folder = Path(config.output.dir) / DIAGNOSE_DIR
    folder.mkdir(parents=True, exist_ok=True)  # the builds' failure log goes there
    diagnoses = []
    for precision in request.precisions:
        settings = Settings(tolerance_judge(config.tolerances[precision]), request.minutes, say)
        for variant in request.variants:
            recipe = Recipe(variant, precision, device, options.get(variant),
                            setup if is_quantized(precision) else None, str(folder))
            sample = setup.data.evaluation[0] if is_quantized(precision) else inputs
            diagnosis = diagnose(model, sample, recipe, settings, point.label)
            say(f"{diagnosis.stem}: {diagnosis.sentence()}")
            diagnoses.append(diagnosis)
    return diagnoses
