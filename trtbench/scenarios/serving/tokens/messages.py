"""An LLM server's worker requests: ``stream``, one generation request whose steps are announced as they exist, and
``admit``, a query joining the worker's continuous-batching engine; the handlers and the parent's side. The worker
loads this file on its own: it imports only the worker layer and those below it."""

from __future__ import annotations

import torch

from trtbench.building.decoder_recipe import ENGINE
from trtbench.workers.handlers import Hosted, handles
from trtbench.workers.loop import Worker


@handles("stream")
def _stream(hosted: Hosted, message: tuple) -> tuple:
    """``("stream", label, marks)``: the request at ``label``, its steps in ``marks`` announced; its stamps."""
    _, label, marks = message
    conn = hosted.conn
    with torch.inference_mode():
        streamed = hosted.calls[label](lambda steps: conn.send(("step", steps)) if steps in marks else None)
    return "streamed", tuple(streamed["stamps"])


@handles("admit")
def _admit(hosted: Hosted, message: tuple) -> None:
    """``("admit", key, label)``: the query ``key`` joins the engine."""
    with torch.inference_mode():
        hosted.calls[ENGINE](message, hosted.conn)


def send_stream(worker: Worker, label: str, marks: frozenset[int]) -> None:
    """Ask ``worker`` for one generation request at ``label``, announcing its steps in ``marks``."""
    worker.send(("stream", label, marks))


def stream_reply(worker: Worker, timeout_s: float) -> tuple:
    """The next answer to a stream; a worker silent for ``timeout_s`` is killed."""
    return worker.answer("stream", timeout_s, "a request")


def send_admit(worker: Worker, key: int, label: str) -> None:
    """Admit query ``key``, asking for the request at ``label``, into ``worker``'s continuous-batching engine."""
    worker.send(("admit", key, label))


def engine_reply(worker: Worker) -> tuple:
    """The engine's next answer (``first``, ``done`` or ``error``), waited for without a limit."""
    return worker.take("serve queries")
