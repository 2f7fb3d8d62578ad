"""Where each variant is timed: in this process, or in a worker process of its own (the default).

``process`` (:class:`VariantWorkers`): one worker per variant of a build group rebuilds the
variant from the parent's exact weights and times it on request (:mod:`trtbench.worker`),
as a deployment runs one runtime per process. ``in_process``: every variant is timed in the
parent, each block followed by the same settle wait. Either way the timing loop, and so the
interleaving, is :func:`trtbench.timing.measure_interleaved`'s. Each record states how it ran
(:meth:`facts`): the method, the process, its threads and the runtime's spinning.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

import torch

from trtbench.precision_copies import PrecisionCopy
from trtbench.timing import BlockTimer, CallTimer
from trtbench.variant_recipe import VariantRecipe, write_payload
from trtbench.variants import Artifact, Built, Variant
from trtbench.worker import Worker, WorkerError, WorkerTimer, spawn_workers, start_workers

SETTLED = "each block ends when its process's threads are idle (measured settle wait)"


def torch_thread_facts() -> dict:
    return {"intra_op_threads": torch.get_num_threads(), "inter_op_threads": torch.get_num_interop_threads(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset (runtime default)")}


class Isolation(Protocol):
    """Where a build group's variants are timed."""

    method: str

    def timer(self, variant: str, label: str, call: Callable[[], Any]) -> BlockTimer: ...

    def facts(self, variant: str) -> dict: ...


class InProcess:
    """Every variant timed in this process."""

    method = "in_process"

    def __init__(self, device: torch.device, thread_settings: dict[str, dict]):
        self.device, self.thread_settings = device, thread_settings

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

    def __init__(self, count: int, timeout_s: float):
        self._folder = tempfile.TemporaryDirectory(prefix="trtbench-workers-")  # payload, files, logs
        self._spawned = spawn_workers(count, timeout_s, Path(self._folder.name))
        self.workers: dict[str, Worker] = {}
        self.errors: dict[str, WorkerError] = {}

    def start(self, builds: dict[str, tuple[Variant, Built]], copies: dict[str, PrecisionCopy],
              precisions: dict[str, str], **recipe_fields) -> "VariantWorkers":
        """Write the group's weights and inputs once per compute dtype (``copies``, by precision: the
        model copies the parent built from) and each variant's deployable file, then give each variant a
        worker. ``builds`` and ``precisions`` are by slot key (``ort``, ``ort@int8``, ``trt@fp16``);
        ``recipe_fields`` are the rest of each :class:`VariantRecipe`."""
        folder = Path(self._folder.name)
        payloads: dict[torch.dtype, Path] = {}
        for at in copies.values():
            if at.dtype not in payloads:
                name = f"payload-{str(at.dtype).removeprefix('torch.')}.pt"
                payloads[at.dtype] = write_payload(folder / name, at.model, at.example, at.inputs)
        recipes = {key: VariantRecipe(variant=variant.name, precision=precisions[key],
                                      payload=str(payloads[copies[precisions[key]].dtype]),
                                      artifact=deployed_artifact(variant, built, folder, key), **recipe_fields)
                   for key, (variant, built) in builds.items()}
        self.workers, self.errors = start_workers(recipes, self._spawned)
        return self

    def timer(self, variant: str, label: str, call: Callable[[], Any]) -> BlockTimer:
        if variant in self.errors:
            raise self.errors[variant]
        return WorkerTimer(self.workers[variant], label)

    def facts(self, variant: str) -> dict:
        worker = self.workers.get(variant)
        facts = {}
        if worker is not None:
            try:
                facts = worker.refresh_facts()
            except WorkerError:  # a worker that died after its last block: its last known facts
                facts = worker.facts
        return {"method": self.method, "settle": SETTLED, **facts}

    def close(self) -> None:
        for worker in self._spawned:
            worker.close()
        self._folder.cleanup()
