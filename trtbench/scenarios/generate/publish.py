"""The generate scenario's save: each accurate slot of a closed memory group publishes its artifact."""

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
    """The saves of one memory group's slots not saved yet, and their rows as they now stand."""
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
