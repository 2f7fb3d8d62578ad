"""Where each variant is timed: in this process, or in a worker process of its own (the default).

``process`` (:class:`VariantWorkers`): one worker per variant of a build group rebuilds the
variant from the parent's exact weights and times it on request (:mod:`trtbench.workers.loop`),
as a deployment runs one runtime per process. ``in_process``: every variant is timed in the
parent, each block followed by the same settle wait. Either way the timing loop, and so the
interleaving, is :func:`trtbench.measure.timing.measure_interleaved`'s. Each record states how it ran
(:meth:`facts`): the method, the process, its threads and the runtime's spinning.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

import torch


if TYPE_CHECKING:
    from trtbench.core.context import RunContext

from trtbench.workers.checked_call import CheckedCall, checked_call
from trtbench.core.env import torch_thread_facts
from trtbench.core.inflight import InFlight, in_flight
from trtbench.core.knobs import Knobs
from trtbench.build.copies import PrecisionCopy
from trtbench.measure.timing import BlockTimer, CallTimer
from trtbench.build.recipe import VariantRecipe, write_payloads
from trtbench.variants import Artifact, Built, Variant
from trtbench.workers.loop import Worker, WorkerError, WorkerTimer, spawn_workers, start_workers

SETTLED = "each block ends when its process's threads are idle (measured settle wait)"


class Isolation(Protocol):
    """Where a build group's variants are timed."""

    method: str

    def check(self, variant: str, label: str, call: Callable[[], Any]) -> CheckedCall:
        """The accuracy check's call of ``variant`` at ``label``, made where the variant is timed."""
        ...

    def timer(self, variant: str, label: str, call: Callable[[], Any]) -> BlockTimer: ...

    def facts(self, variant: str) -> dict: ...


class InProcess:
    """Every variant timed in this process."""

    method = "in_process"

    def __init__(self, device: torch.device, thread_settings: dict[str, dict]):
        self.device, self.thread_settings = device, thread_settings

    def check(self, variant: str, label: str, call: Callable[[], Any]) -> CheckedCall:
        return checked_call(call, self.device)

    def timer(self, variant: str, label: str, call: Callable[[], Any]) -> BlockTimer:
        return CallTimer(call, self.device)

    def facts(self, variant: str) -> dict:
        return {"method": self.method, "settle": SETTLED, "pid": os.getpid(), **torch_thread_facts(),
                **self.thread_settings.get(variant, {})}


def deployed_artifact(variant: Variant, built: Built, folder: Path, key: str = "") -> Optional[Artifact]:
    """The variant's deployable file saved into ``folder`` (None: it saves none, or could not; then
    its worker rebuilds it, and the artifact step reports any save failure itself). ``key`` names
    the file where one variant is built at two precisions (``ort@int8``)."""
    try:
        artifacts = variant.save(built, folder, "timed-" + (key or variant.name).replace("@", "-"))
    except Exception:  # noqa: BLE001 - the rebuild path still times it
        return None
    return artifacts[0] if artifacts else None


class VariantWorkers:
    """A worker process per variant of one build group: spawned when the group starts (they import
    torch while this process builds), given their variants once built, closed together."""

    method = "process"

    def __init__(self, count: int, timeout_s: float, knobs: Knobs = Knobs(), threads: int = 1,
                 max_build_s: Optional[float] = None):
        self._folder = tempfile.TemporaryDirectory(prefix="trtbench-workers-")  # payload, files, logs
        self.knobs = knobs  # the deployment knobs every worker starts with (trtbench.core.knobs)
        self.max_build_s = max_build_s  # a worker still building after it is killed (benchmark.max_build_s)
        self._spawned = spawn_workers(count, timeout_s, Path(self._folder.name), knobs, threads)
        self.workers: dict[str, Worker] = {}
        self.errors: dict[str, WorkerError] = {}

    def start(self, config, group, builds: dict[str, tuple[Variant, Built]], precisions: dict[str, str],
              copies: dict[str, PrecisionCopy], device: torch.device) -> "VariantWorkers":
        """Write ``group``'s weights and inputs once per compute dtype (``copies``, by precision: the
        model copies the parent built from) and each variant's deployable file, then give each variant a
        worker. ``builds`` and ``precisions`` are by slot id (``ort``, ``ort@int8``, ``trt@fp16``)."""
        folder = Path(self._folder.name)
        payloads = write_payloads(folder, copies, dict.fromkeys(precisions.values()), lambda at: at.inputs)
        recipes = {}
        for key, (variant, built) in builds.items():
            with in_flight(InFlight("save", group.model.id, variant.name, precisions[key], str(config.output.dir))):
                artifact = deployed_artifact(variant, built, folder, key)  # the variant's own code, in this process
            recipes[key] = VariantRecipe.for_group(config, group, variant.name, precisions[key],
                                                   payloads[precisions[key]], device).hosting(artifact)
        # a rebuild (torch.compile's compile) takes longest: started first, it overlaps the others' loads
        rebuilds_first = sorted(recipes, key=lambda key: recipes[key].artifact is not None)
        self.workers, self.errors = start_workers({key: recipes[key] for key in rebuilds_first}, self._spawned,
                                                  max_build_s=self.max_build_s)
        return self

    def check(self, variant: str, label: str, call: Callable[[], Any]) -> CheckedCall:
        """The worker's own call: accuracy is judged on what is timed (the deployed file, where one ships)."""
        return self._worker(variant).check(label)

    def timer(self, variant: str, label: str, call: Callable[[], Any]) -> BlockTimer:
        return WorkerTimer(self._worker(variant), label)

    def _worker(self, variant: str) -> Worker:
        if variant in self.errors:
            raise self.errors[variant]
        return self.workers[variant]

    def facts(self, variant: str) -> dict:
        worker = self.workers.get(variant)
        facts = {}
        if worker is not None:
            try:
                facts = worker.refresh_facts()
            except WorkerError:  # a worker that died after its last block: its last known facts
                facts = worker.facts
        return {"method": self.method, "settle": SETTLED, **self.knobs.to_dict(), **facts}

    def close(self) -> None:
        for worker in self._spawned:
            worker.close()
        self._folder.cleanup()


def spawn_group_workers(config, group) -> Optional[VariantWorkers]:
    """With ``isolation: process``, a worker per variant of ``group`` that can run here, spawned now so
    that they import torch while this process builds; None when this process times them."""
    if config.benchmark.isolation != "process":
        return None
    count = sum(group.slot_id(e.name, p) not in group.unavailable for e, p in group.slots())
    return VariantWorkers(count, config.benchmark.worker_timeout_s, group.knobs, group.threads,
                          config.benchmark.max_build_s)


def start_isolation(ctx: RunContext, group, outcomes: dict, copies: dict[str, PrecisionCopy],
                    workers: Optional[VariantWorkers]) -> Isolation:
    """Where ``group``'s built variants (``outcomes``, by slot id; built from ``copies``, by precision)
    are timed: ``workers`` get their variants here, or else this process times them."""
    config, device, log = ctx.config, ctx.device, ctx.log
    built = {group.slot_id(e.name, p): p for e, p in group.slots() if outcomes[group.slot_id(e.name, p)].built is not None}
    if workers is None:
        return InProcess(device, {k: outcomes[k].variant.thread_settings(outcomes[k].built) for k in built})
    log(f"start {len(built)} timing worker(s) for {group.model.id} {'+'.join(group.precisions)}")
    builds = {k: (outcomes[k].variant, outcomes[k].built) for k in built}
    return workers.start(config, group, builds, precisions=built, copies=copies, device=device)
