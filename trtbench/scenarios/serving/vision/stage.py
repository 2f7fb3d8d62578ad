"""The run's serving stage: each serving entry serves each accurate variant at the opt shape and every precision,
in worker processes hosting it as the timing workers do."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional

import torch

from trtbench.core.inputs import make_inputs, to_memory_format
from trtbench.workers.isolation import deployed_artifact
from trtbench.core.record import Record
from trtbench.scenarios.serving.vision.run import ServingWorkers, run_serving
from trtbench.scenarios.serving.vision.config import ServingConfig
from trtbench.scenarios.serving.vision.pool import call_label
from trtbench.scenarios.serving.vision.result import ServedCase
from trtbench.core.status import Status
from trtbench.building.recipe import VariantRecipe, write_payloads

if TYPE_CHECKING:
    from trtbench.config.context import RunContext


def serving_inputs(config, settings: ServingConfig, device: torch.device, dtype: torch.dtype) -> dict[str, tuple]:
    """The query sample library: call label -> inputs (one query; with batching, each batch size)."""
    opt = [list(spec.opt_shape) for spec in config.inputs]
    sizes = range(1, settings.batching.max_batch + 1) if settings.batching else [None]
    return {call_label(size or 1): to_memory_format(
                make_inputs(config.inputs, [[size, *shape[1:]] if size else shape for shape in opt],
                            config.benchmark.seed, device, dtype), config.channels_last)
            for size in sizes}


def serving_point(group, inputs: list):
    """The point served: the one at the config's opt shapes, else the group's first."""
    opt = tuple(tuple(spec.opt_shape) for spec in inputs)
    return next((p for p in group.points if p.shapes == opt), group.points[0])


def unserved(config, group, done) -> dict[str, tuple[str, Optional[Record]]]:
    """The cases (slot id -> precision, record) of ``group`` not timed yet, or not served yet."""
    if not config.serving:
        return {}
    point = serving_point(group, config.inputs)
    todo = {}
    for precision in group.precisions:
        for entry in group.entries_at(precision):
            case = group.case(entry, point, precision)
            record = done.records.get(case.key)
            if record is None or (record.status is Status.OK and not record.accuracy_failed
                                  and done.part(ServedCase.KIND, record.key) is None):
                todo[group.slot_id(entry.name, precision)] = (precision, record)
    return todo


def serve_group(ctx: RunContext, built) -> Iterator[ServedCase]:
    """Serve every ok, accurate, not yet served variant of the built group, a case at a time."""
    config, group, outcomes, copies = ctx.config, built.group, built.outcomes, built.copies
    device, out_dir, log = ctx.device, ctx.out_dir, ctx.log
    entries = {key: (precision, record, outcomes[key])  # slot id -> (precision, record, outcome)
               for key, (precision, record) in unserved(config, group, built.done).items()
               if record is not None and key in outcomes and outcomes[key].built is not None}
    if not entries:
        return
    with tempfile.TemporaryDirectory(prefix="trtbench-serving-") as tmp:
        folder = Path(tmp)
        precisions = dict.fromkeys(p for p, _, _ in entries.values())
        payloads = [write_payloads(folder, copies, precisions, lambda at, s=settings: serving_inputs(
                        config, s, device, at.dtype), f"payload-{index}")
                    for index, settings in enumerate(config.serving)]
        for key, (precision, record, outcome) in entries.items():
            artifact = deployed_artifact(outcome.variant, outcome.built, folder, key)
            variant, results = outcome.variant, []
            for index, settings in enumerate(config.serving):
                def recipe_for(threads: int, payload=payloads[index][precision]) -> VariantRecipe:
                    recipe = VariantRecipe.for_group(config, group, variant.name, precision, payload,
                                                     device).keeping(copies[precision].fallback.modules)
                    return recipe.hosting(variant.at_threads(artifact, threads) if artifact else None, threads)
                stem = (f"{group.model.id}_{record.case.label}_{precision}" + (f"_s{index}" if index else "")
                        + (f"_{group.knobs.text.replace('=', '-').replace(',', '_')}" if group.knobs.text else ""))
                log(f"serve {group.model.id} {record.case.label} {precision} under LoadGen")
                hosts = ServingWorkers(recipe_for, group.threads, config.benchmark.worker_timeout_s, group.knobs)
                results += run_serving(hosts, settings, out_dir, _slug(stem), log)
            yield ServedCase(record.case.key, record.environment, tuple(results))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in ".-_" else "-" for c in text).strip("-")
