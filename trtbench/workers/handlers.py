"""What a worker answers: each request's class to its handler (docs/architecture.md, "Worker requests")."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable, Optional

import torch

from trtbench.core.procfs import proc_kib
from trtbench.measure.energy import EnergyCounter
from trtbench.measure.settle import wait_until_idle
from trtbench.measure.timing import Block, time_calls
from trtbench.measure.trackers import Tracker
from trtbench.workers.checked_call import CheckedCall, checked_call


@dataclass
class Hosted:
    """What a worker's handlers work on: channel, calls by label, device, meter, trackers, CPU and RSS marks."""

    conn: Connection
    calls: dict[str, Any]
    device: torch.device
    meter: Optional[EnergyCounter]
    trackers: tuple[Tracker, ...]
    idle_since_cpu: float = 0.0
    start_peak: Optional[float] = None


Handler = Callable[[Hosted, Any], Any]  # the request -> its reply (None: it answered on its own)
HANDLERS: dict[type, Handler] = {}


@dataclass(frozen=True)
class TimeBlock:
    """Time ``calls`` calls at ``label``, after ``lead_in`` untimed ones; the reply: its ``Block``."""

    label: str
    calls: int
    lead_in: int = 0


@dataclass(frozen=True)
class Check:
    """The accuracy check's call at ``label``, its output saved to ``path``; the reply: a ``CheckedCall`` without it."""

    label: str
    path: str


@dataclass(frozen=True)
class Facts:
    """The worker's peak RSS so far; the reply: a :class:`PeakRss`."""


@dataclass(frozen=True)
class PeakRss:
    """The peak RSS (MB) of loading or of any call since (None: unread)."""

    mb: Optional[float]


@dataclass(frozen=True)
class Exit:
    """Exit at once; no reply."""


def handles(kind: type) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of requests of class ``kind`` (one handler per class)."""

    def register(handler: Handler) -> Handler:
        known = HANDLERS.get(kind)
        if known is not None and (known.__module__, known.__qualname__) != (handler.__module__, handler.__qualname__):
            raise ValueError(f"worker request {kind.__name__} has two handlers: {known.__module__}."
                             f"{known.__qualname__} and {handler.__module__}.{handler.__qualname__}")
        HANDLERS[kind] = handler
        return handler

    return register


def load(files: dict[str, str]) -> None:
    """Run each handler module from its file, under its name, without its packages' ``__init__``."""
    for name, path in files.items():
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)


def _peak_rss_mb() -> float | None:
    """This process's RSS high-water mark (VmHWM: ru_maxrss would carry the parent's across exec)."""
    kib = proc_kib("/proc/self/status", "VmHWM")
    return None if kib is None else kib / 1024


@handles(TimeBlock)
def _block(hosted: Hosted, request: TimeBlock) -> Block:
    """A timed block, answered once settled, with the CPU between."""
    between = (time.process_time() - hosted.idle_since_cpu) * 1e3
    with torch.inference_mode():
        timed = time_calls(hosted.calls[request.label], hosted.device, request.calls, request.lead_in,
                           hosted.trackers)
    settle = wait_until_idle()
    hosted.idle_since_cpu = time.process_time()
    return dataclasses.replace(timed, settle=settle, cpu_between_ms=between)


@handles(Check)
def _check(hosted: Hosted, request: Check) -> CheckedCall:
    """The accuracy check's call: memory, warnings, time, energy."""
    hosted.start_peak = hosted.start_peak if hosted.start_peak is not None else _peak_rss_mb()
    with torch.inference_mode():
        checked = checked_call(hosted.calls[request.label], hosted.device, hosted.meter)
    # from the tensors' own memory: bytes here would move glibc's thresholds (docs/measuring.md, page faults)
    torch.save(checked.output, request.path)
    reply = dataclasses.replace(checked, output=None)
    del checked
    # a generate request is a check: the next worker's request starts on quiet cores
    wait_until_idle()
    return reply


@handles(Facts)
def _facts(hosted: Hosted, request: Facts) -> PeakRss:
    """The peak RSS, loading's or any call's since."""
    peaks = [p for p in (hosted.start_peak, _peak_rss_mb()) if p is not None]
    return PeakRss(round(max(peaks), 1) if peaks else None)


@handles(Exit)
def _exit(hosted: Hosted, request: Exit) -> None:
    """At once, its output flushed (nothing of a worker's is left to write)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
