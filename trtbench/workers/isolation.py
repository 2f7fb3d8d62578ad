"""Where each variant is timed: its replicate worker processes, or this process (docs/measuring.md)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

import torch

from trtbench.workers.checked_call import CheckedCall, checked_call
from trtbench.core.procfs import available_bytes, process_facts
from trtbench.core.env import torch_thread_facts
from trtbench.core.deprecation import silenced
from trtbench.core.inflight import InFlight, in_flight
from trtbench.core.knobs import Knobs
from trtbench.building.copies import PrecisionCopy
from trtbench.measure.timing import BlockTimer, CallTimer
from trtbench.building.recipe import ALLOCATOR_STATE, KERNELS, REBUILD_FACTS, VariantRecipe, write_payloads
from trtbench.measure.kernels import KernelProof
from trtbench.variants import Artifact, Built, Variant
from trtbench.workers.loop import (READY_CPU_S, Worker, WorkerError, WorkerTimer, close_workers, spawn_workers,
                                   start_workers)

if TYPE_CHECKING:
    from trtbench.config.context import RunContext

MIB = 2**20
SPAWNED_BYTES = 512 * MIB  # a spawned worker before its build: an interpreter with torch and trtbench (VmRSS 511 MiB)
AVAILABLE_SHARE = 0.8  # of MemAvailable, for further replicate processes: the rest is the margin
SETTLED = "each block ends when its process's threads are idle (measured settle wait)"
RACE_START = 2  # a raced variant's processes at each point: the between-process spread needs two


@dataclass(frozen=True)
class Replicates:
    """A variant's replicate processes: ``start`` at each point, and the ``most`` it may get there on demand."""

    start: int = 1
    most: int = 1


@dataclass(frozen=True)
class Replicate:
    """A further process of a variant: its process index and its timer."""

    index: int
    timer: BlockTimer


class Isolation(Protocol):
    """Where a build group's variants are timed: each slot in one or more replicate processes, over :attr:`turns`."""

    method: str
    turns: int
    replicates: Replicates

    def check(self, variant: str, label: str, call: Callable[[], Any]) -> CheckedCall:
        """The accuracy check's call of ``variant`` at ``label``, made where it is timed (the first process's)."""

    def timers(self, variant: str, label: str, call: Callable[[], Any]) -> dict[int, BlockTimer]:
        """This turn's processes of ``variant`` at ``label``, by their process index."""

    def more(self, variant: str, label: str) -> Optional[Replicate]:
        """A further process of ``variant``, checked at ``label``, where one can start (else None)."""

    def facts(self, variant: str) -> dict: ...

    def kernels(self, variant: str, read: Callable[[], Optional[KernelProof]]) -> Optional[KernelProof]:
        """What ``variant``'s kernels ran where it is timed: its worker's first call's, or ``read`` here."""

    def next_turn(self) -> None:
        """Close this turn's processes and start the next turn's (only while one is left)."""

    def process_facts(self, variant: str) -> dict[int, dict]:
        """What each of this turn's processes of ``variant`` is and did, by process index."""


class InProcess:
    """Every variant timed in this process: one process."""

    method = "in_process"
    turns = 1
    replicates = Replicates()

    def __init__(self, device: torch.device, thread_settings: dict[str, dict]):
        self.device, self.thread_settings = device, thread_settings

    def check(self, variant: str, label: str, call: Callable[[], Any]) -> CheckedCall:
        return checked_call(call, self.device)

    def timers(self, variant: str, label: str, call: Callable[[], Any]) -> dict[int, BlockTimer]:
        return {0: CallTimer(call, self.device)}

    def more(self, variant: str, label: str) -> Optional[Replicate]:
        return None

    def kernels(self, variant: str, read: Callable[[], Optional[KernelProof]]) -> Optional[KernelProof]:
        return read()

    def facts(self, variant: str) -> dict:
        return {"method": self.method, "settle": SETTLED, "pid": os.getpid(), **torch_thread_facts(),
                **self.thread_settings.get(variant, {})}

    def process_facts(self, variant: str) -> dict[int, dict]:
        return {0: {"pid": os.getpid(), **process_facts(os.getpid())}}


def deployed_artifact(variant: Variant, built: Built, folder: Path, key: str = "") -> Optional[Artifact]:
    """The variant's deployable file saved into ``folder`` (None: none or failed; its worker rebuilds it)."""
    try:
        with silenced(variant.deprecations):
            artifacts = variant.save(built, folder, "timed-" + (key or variant.name).replace("@", "-"))
    except Exception:  # noqa: BLE001 - the rebuild path still times it
        return None
    return artifacts[0] if artifacts else None


class VariantWorkers:
    """``replicates.start`` workers per variant of a build group (up to ``replicates.most`` on demand), in turns."""

    method = "process"

    def __init__(self, count: int, timeout_s: float, knobs: Knobs = Knobs(), threads: int = 1,
                 replicates: Replicates = Replicates(), max_build_s: Optional[float] = None):
        self._folder = tempfile.TemporaryDirectory(prefix="trtbench-workers-")  # payload, files, logs
        self.knobs = knobs  # the deployment knobs every worker starts with (trtbench.core.knobs)
        self.max_build_s = max_build_s  # a worker still building after it is killed (benchmark.max_build_s)
        self.replicates, self._timeout_s, self._threads = replicates, timeout_s, threads
        processes = self.processes = replicates.start
        self.extra: dict[str, dict[int, Worker]] = {}  # slot -> its processes started on demand, by index
        self._lent: dict[str, set[int]] = {}  # slot -> those of them timing at the current point
        available = available_bytes()
        fit = count * processes if available is None else int(available * AVAILABLE_SHARE // SPAWNED_BYTES)
        self._spawned = spawn_workers(max(count, min(count * processes, fit)), timeout_s, Path(self._folder.name),
                                      knobs, threads)
        self._idle = list(self._spawned)  # spawned, not yet given a variant (more are spawned when a turn needs them)
        self.workers: dict[str, dict[int, Worker]] = {}  # slot -> this turn's processes, by index
        self.errors: dict[str, WorkerError] = {}
        self.recipes: dict[str, VariantRecipe] = {}
        self.plan: list[list[int]] = [list(range(processes))]  # the process indices of each turn
        self.turn = 0

    @property
    def turns(self) -> int:
        return len(self.plan)

    def start(self, config, group, builds: dict[str, tuple[Variant, Built]], precisions: dict[str, str],
              copies: dict[str, PrecisionCopy], device: torch.device) -> "VariantWorkers":
        """Write the payloads and deployable files, build each slot's first process, plan the turns, start turn 0."""
        folder = Path(self._folder.name)
        payloads = write_payloads(folder, copies, dict.fromkeys(precisions.values()), lambda at: at.inputs)
        for key, (variant, built) in builds.items():
            with in_flight(InFlight("save", group.model.id, variant.name, precisions[key], str(config.output.dir))):
                artifact = deployed_artifact(variant, built, folder, key)  # the variant's own code, in this process
            self.recipes[key] = VariantRecipe.for_group(config, group, variant.name, precisions[key],
                                                        payloads[precisions[key]], device).hosting(artifact).keeping(
                                                            copies[precisions[key]].fallback.modules)
        self._build([0])
        if self.processes > 1:
            self.plan = plan_turns(self.processes, self._extra_bytes(), available_bytes())
        needed = (len(self.plan[0]) - 1) * len(self.workers)  # the rest: slots that did not build, later turns'
        close_workers(self._idle[needed:])
        self._idle = self._idle[:needed]
        self._build(self.plan[0][1:])
        return self

    def _build(self, indices: list[int]) -> None:
        """Build process ``i`` of every running slot, for each ``i`` of ``indices``; a slot fails with any of them."""
        # a rebuild (torch.compile's compile) takes longest: started first, it overlaps the others' loads
        slots = sorted((k for k in self.recipes if k not in self.errors),
                       key=lambda k: self.recipes[k].artifact is not None)
        ready, errors = self._start({process_name(slot, i): self.recipes[slot] for i in indices for slot in slots})
        for slot in slots:
            for i in indices:
                name = process_name(slot, i)
                if name in ready:
                    self.workers.setdefault(slot, {})[i] = ready[name]
                elif slot not in self.errors:
                    self.errors[slot] = errors[name]

    def _start(self, wanted: dict[str, VariantRecipe]) -> tuple[dict[str, Worker], dict[str, WorkerError]]:
        """Build each of ``wanted`` on an idle worker (spawned where needed); the ready ones, and why not the others."""
        if len(self._idle) < len(wanted):
            logs = Path(self._folder.name) / f"spawned-{len(self._spawned)}"
            logs.mkdir()
            more = spawn_workers(len(wanted) - len(self._idle), self._timeout_s, logs, self.knobs, self._threads)
            self._spawned += more
            self._idle += more
        given, self._idle = self._idle[:len(wanted)], self._idle[len(wanted):]
        return start_workers(wanted, given, max_build_s=self.max_build_s)

    def more(self, variant: str, label: str) -> Optional[Replicate]:
        """A further process of ``variant``, checked at ``label``: an idle one, or a new one that fits (else None)."""
        lent, extra = self._lent.setdefault(variant, set()), self.extra.setdefault(variant, {})
        spare = sorted(set(extra) - lent)
        if not spare and (len(self.workers.get(variant, {})) + len(extra) >= self.replicates.most
                          or self.turns > 1 or variant in self.errors or not self._fits(variant)):
            return None
        if not spare:
            index = max([*self.workers[variant], *extra]) + 1
            ready, _ = self._start({process_name(variant, index): self.recipes[variant]})
            if not ready:
                return None
            extra[index] = next(iter(ready.values()))
            spare = [index]
        try:
            extra[spare[0]].check(label)  # its first call at this point, untimed, as the others made theirs
        except WorkerError:
            return None
        lent.add(spare[0])
        return Replicate(spare[0], WorkerTimer(extra[spare[0]], label))

    def _fits(self, variant: str) -> bool:
        """Whether one more process of ``variant`` (its first process's peak RSS) fits in the memory available."""
        available = available_bytes()
        first = self.workers[variant][min(self.workers[variant])]
        peak = (first.refresh_facts().get("peak_rss_mb") or 0.0) * MIB
        return available is None or peak <= available * AVAILABLE_SHARE

    def _extra_bytes(self) -> int:
        """What one more process of every slot would add: each first process's peak RSS, less an idle worker's."""
        idle = [process_facts(w.process.pid).get("rss_mb", 0.0) for w in self._idle[:1]]
        peaks = [w.refresh_facts().get("peak_rss_mb") or 0.0
                 for slot in self.workers for w in self.workers[slot].values()]
        return int(sum(max(0.0, peak - (idle[0] if idle else 0.0)) for peak in peaks) * MIB)

    def next_turn(self) -> None:
        """Close this turn's processes and start the next turn's."""
        close_workers([worker for processes in self.workers.values() for worker in processes.values()])
        self.workers = {}
        self.turn += 1
        self._build(self.plan[self.turn])

    def check(self, variant: str, label: str, call: Callable[[], Any]) -> CheckedCall:
        """Each process's own call (each warms its process up); the first's is returned."""
        return [worker.check(label) for worker in self._processes(variant).values()][0]

    def timers(self, variant: str, label: str, call: Callable[[], Any]) -> dict[int, BlockTimer]:
        self._lent[variant] = set()  # a new point: its processes started on demand are free again
        return {i: WorkerTimer(worker, label) for i, worker in self._processes(variant).items()}

    def kernels(self, variant: str, read: Callable[[], Optional[KernelProof]]) -> Optional[KernelProof]:
        """What the first process's kernels ran, as it read them on its first call."""
        processes = self._processes(variant)
        found = processes[min(processes)].facts.get(KERNELS)
        return KernelProof.from_dict(found) if found else None

    def _processes(self, variant: str) -> dict[int, Worker]:
        if variant in self.errors:
            raise self.errors[variant]
        return self.workers[variant]

    def facts(self, variant: str) -> dict:
        """The method and knobs, and this turn's first process's facts (its threads, what it hosts, its peak RSS)."""
        processes = self.workers.get(variant, {})
        facts = _refreshed(processes[min(processes)]) if processes else {}
        return {"method": self.method, "settle": SETTLED, **self.knobs.to_dict(),
                **{k: v for k, v in facts.items() if k != KERNELS}}

    def process_facts(self, variant: str) -> dict[int, dict]:
        """Each process of this turn: pid, start-up luck, RSS, ready cost, switches, migrations, allocator."""
        found = {}
        for i, worker in {**self.workers.get(variant, {}), **self.extra.get(variant, {})}.items():
            facts = _refreshed(worker)
            allocator = {"allocator": self.knobs.allocator, **{k: facts[k] for k in (ALLOCATOR_STATE,) if k in facts}}
            kept = ("hash_seed", "env_padding_bytes", "peak_rss_mb", READY_CPU_S, *REBUILD_FACTS)
            found[i] = {"pid": worker.process.pid, **{k: facts[k] for k in kept if k in facts},
                        **process_facts(worker.process.pid), "allocator": allocator}
        return found

    def close(self) -> None:
        close_workers(self._spawned)
        self._folder.cleanup()


def process_name(slot: str, index: int) -> str:
    """A replicate process's name in messages: the slot's for its first process, ``slot (process N)`` after."""
    return slot if index == 0 else f"{slot} (process {index + 1})"


def _refreshed(worker: Worker) -> dict:
    """A worker's facts with its peak RSS so far; a worker that died after its last block: its last known."""
    try:
        return worker.refresh_facts()
    except WorkerError:
        return worker.facts


def plan_turns(processes: int, extra_bytes: int, available: Optional[int],
               share: float = AVAILABLE_SHARE) -> list[list[int]]:
    """The process indices of each turn, as many sets as fit in ``share`` of ``available`` (unknown: one turn)."""
    if available is None or extra_bytes <= 0:
        return [list(range(processes))]
    at_once = max(1, min(processes, 1 + int(available * share // extra_bytes)))
    return [list(range(start, min(processes, start + at_once))) for start in range(0, processes, at_once)]


def replicates_of(benchmark) -> Replicates:
    """A variant's processes: raced, RACE_START and up to ``processes`` on demand; else ``processes``."""
    most = benchmark.processes
    return Replicates(min(RACE_START, most), most) if benchmark.timing.racing else Replicates(most, most)


def spawn_group_workers(config, group) -> Optional[VariantWorkers]:
    """With ``isolation: process``, workers for ``group``'s variants, spawned now; else None."""
    if config.benchmark.isolation != "process":
        return None
    count = sum(group.slot_id(e.name, p) not in group.unavailable for e, p in group.slots())
    return VariantWorkers(count, config.benchmark.worker_timeout_s, group.knobs, group.threads,
                          replicates_of(config.benchmark), max_build_s=config.benchmark.max_build_s)


def start_isolation(ctx: RunContext, group, outcomes: dict, copies: dict[str, PrecisionCopy],
                    workers: Optional[VariantWorkers]) -> Isolation:
    """Where ``group``'s built variants are timed: given to ``workers``, or else in this process."""
    config, device, log = ctx.config, ctx.device, ctx.log
    built = {group.slot_id(e.name, p): p for e,
             p in group.slots() if outcomes[group.slot_id(e.name, p)].built is not None}
    if workers is None:
        return InProcess(device, {k: outcomes[k].variant.thread_settings(outcomes[k].built) for k in built})
    log(f"start {len(built)} x {workers.processes} timing worker(s) for {group.model.id} {'+'.join(group.precisions)}")
    builds = {k: (outcomes[k].variant, outcomes[k].built) for k in built}
    return workers.start(config, group, builds, precisions=built, copies=copies, device=device)
