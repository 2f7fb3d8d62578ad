"""The generate scenario's save: once a memory group's workers have closed, each of its decoder slots whose
teacher-forced logits kept their tolerances publishes its artifact into the run's store
(:class:`~trtbench.artifacts.decoder_publish.DecoderPublisher`: self-contained, checked in a fresh process, listed
in the manifest with every file's SHA-256). A slot that missed its tolerances publishes nothing. Its rows are
yielded again with the published artifact's cold start in that fresh process (``published``, where
``output.cold_start`` asks for it), or failed with the reason where it cannot ship, their timings kept, as the
variants' save stage does (:mod:`trtbench.artifacts.publish`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator

from trtbench.artifacts.decoder_publish import DecoderBuild, DecoderPublisher, DecoderReference
from trtbench.artifacts.publish import artifact_stem
from trtbench.artifacts.store import Saved
from trtbench.building.decoder_recipe import DecoderRecipe
from trtbench.core.status import Status


@dataclasses.dataclass(frozen=True)
class GroupRecords:
    """A memory group's records by slot (as yielded), and what its points shared."""

    records: dict
    shared: dict


def published_parts(ctx, built, publisher: DecoderPublisher, recipes: dict[str, DecoderRecipe], slots: dict,
                    timed: GroupRecords) -> Iterator:
    """The saves of one memory group's slots and their rows as they now stand. ``timed``: the group's rows by slot
    (as yielded), and what its points shared (each slot's ``accuracy``, eager fp32's ``reference_logits`` and each
    worker's ready ``facts``). A slot already saved in this run (eager fp32 of an earlier memory group; another
    thread count's) is not saved again."""
    group, rows, shared = built.group, timed.records, timed.shared
    reference = shared["reference_logits"]
    for slot, records in rows.items():
        name, precision = slots[slot].decoder, slots[slot].precision
        accuracy, facts = shared["accuracy"].get(slot), shared["worker"].get(slot, {})
        if (reference is None or accuracy is None or not accuracy.get("ok") or "artifact" not in facts
                or name in built.done.saved_files(group, precision, publisher.directory)):
            continue
        recipe = recipes[slot]
        out_dir = Path(recipe.out_dir)
        prompt, new_tokens = next(iter(recipe.requests.values()))  # the worker's cold request
        build = DecoderBuild(name, precision, group.model.id, out_dir, out_dir / facts["artifact"], recipe.device,
                             recipe.threads)
        check = DecoderReference(recipe.teacher, reference, dataclasses.asdict(built.tolerances[precision]),
                                 accuracy, prompt, new_tokens)
        try:
            entry = publisher.publish(build, check, artifact_stem(ctx.config, group.model.id, name, precision))
        except KeyboardInterrupt:
            raise
        except Exception as err:  # an artifact that cannot ship: its rows fail, their timings kept
            reason = ctx.failures.reason(f"save {slot}", err)
            yield Saved(name, precision, ())
            yield from (dataclasses.replace(r, status=Status.FAILED, reason=reason) for r in records
                        if r.status is Status.OK)
            continue
        yield Saved(name, precision, (entry,))
        if ctx.config.output.cold_start:
            cold = {"file": entry["file"], **entry["fresh_process_check"]}
            yield from (dataclasses.replace(r, data={**r.data, "published": cold}) for r in records)
