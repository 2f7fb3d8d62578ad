"""An LLM server's worker requests (:class:`Stream`, one generation request whose steps are announced as they exist;
:class:`~trtbench.measure.engine_timing.Admit`, a query joining its engine), their handlers and the parent's side; it
imports only the worker layer and those below it, as the worker loads it on its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import torch

from trtbench.building.decoder_recipe import ENGINE
from trtbench.measure.engine_timing import Admit
from trtbench.workers.handlers import Hosted, handles
from trtbench.workers.loop import Worker


@dataclass(frozen=True)
class Stream:
    """The request at ``label``, its steps in ``marks`` announced (:class:`StepsDone`), then :class:`Streamed`."""

    label: str
    marks: frozenset[int]


@dataclass(frozen=True)
class StepsDone:
    """The request reached ``steps`` steps."""

    steps: int


@dataclass(frozen=True)
class Streamed:
    """The request's stamps."""

    stamps: tuple[float, ...]


@handles(Stream)
def _stream(hosted: Hosted, request: Stream) -> Streamed:
    conn = hosted.conn
    with torch.inference_mode():
        streamed = hosted.calls[request.label](
            lambda steps: conn.send(StepsDone(steps)) if steps in request.marks else None)
    return Streamed(tuple(streamed["stamps"]))


@handles(Admit)
def _admit(hosted: Hosted, request: Admit) -> None:
    with torch.inference_mode():
        hosted.calls[ENGINE](request, hosted.conn)


def send_stream(worker: Worker, label: str, marks: frozenset[int]) -> None:
    """Ask ``worker`` for one generation request at ``label``, announcing its steps in ``marks``."""
    worker.send(Stream(label, marks))


def stream_reply(worker: Worker, timeout_s: float) -> Union[StepsDone, Streamed]:
    """The next answer to a stream; a worker silent for ``timeout_s`` is killed."""
    return worker.answer("stream", timeout_s, "a request")


def send_admit(worker: Worker, key: int, label: str) -> None:
    """Admit query ``key``, asking for the request at ``label``, into ``worker``'s continuous-batching engine."""
    worker.send(Admit(key, label))


def engine_reply(worker: Worker) -> Any:
    """The engine's next answer (``First``, ``Done`` or ``Failed``), waited for without a limit."""
    return worker.take("serve queries")
