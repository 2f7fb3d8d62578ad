"""A vision server's worker request, :class:`Call` (a query's or gathered batch's call, answered with its time), its
handler and the parent's side; it imports only the worker layer and those below it, as the worker loads it alone."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from trtbench.measure.timing import synchronize
from trtbench.workers.handlers import Hosted, handles
from trtbench.workers.loop import Worker


@dataclass(frozen=True)
class Call:
    """The call at ``label``, synchronized; the reply: :class:`Called`."""

    label: str


def send_call(worker: Worker, label: str) -> None:
    """Ask ``worker`` for one synchronized call at ``label``; :func:`call_result` waits for its answer."""
    worker.send(Call(label))


@dataclass(frozen=True)
class Called:
    """The call's ms in the worker."""

    ms: float


def call_result(worker: Worker, timeout_s: float) -> float:
    """The ms the call asked for took in ``worker``; a worker silent for ``timeout_s`` is killed."""
    return worker.answer("call", timeout_s, "a call").ms


@handles(Call)
def _call(hosted: Hosted, request: Call) -> Called:
    with torch.inference_mode():
        started = time.perf_counter_ns()
        hosted.calls[request.label]()
        synchronize(hosted.device)
        return Called((time.perf_counter_ns() - started) / 1e6)
