"""Queries timed in a continuous-batching engine, a stamp per token (docs/serving.md, "Continuous batching")."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Admit:
    """Query ``key`` joins the engine with the request at ``label``; the replies: :class:`First`, then :class:`Done`."""

    key: int
    label: str


@dataclass(frozen=True)
class First:
    """Query ``key`` has its first token."""

    key: int


@dataclass(frozen=True)
class Done:
    """Query ``key`` has its last token: one stamp per token."""

    key: int
    stamps: tuple[float, ...]


def serve_engine(engine: Any, requests: dict, admit: Admit, channel: Any) -> None:
    """Serve ``admit`` and each query admitted on ``channel`` while any is in ``engine`` (docs/serving.md)."""
    wanted: dict[int, int] = {}
    stamps: dict[int, list[float]] = {}
    arrived = [admit]
    while arrived or wanted:
        for message in arrived:
            if not isinstance(message, Admit):
                raise SystemExit(0)
            prompt, new_tokens = requests[message.label]
            engine.add(message.key, prompt, new_tokens)
            wanted[message.key], stamps[message.key] = new_tokens, []
        for key, (now, count) in _stamped_step(engine).items():
            if not stamps[key]:
                channel.send(First(key))
            stamps[key] += [now] * count
            if len(stamps[key]) >= wanted[key]:
                _check_count(key, len(stamps[key]), wanted.pop(key))
                channel.send(Done(key, tuple(stamps.pop(key))))
        if wanted and not engine.busy():
            raise RuntimeError(f"the engine ended queries {sorted(wanted)} before their last tokens")
        arrived = []
        while channel.poll():
            arrived.append(channel.recv())


def engine_alone(engine: Any, prompt, new_tokens: int) -> tuple[float, list[float]]:
    """One sequence through ``engine`` with no other in it: when it was admitted and its token stamps."""
    start, stamps = time.perf_counter(), []
    engine.add(0, prompt, new_tokens)
    while engine.busy():
        for now, count in _stamped_step(engine).values():
            stamps += [now] * count
    _check_count(0, len(stamps), new_tokens)
    return start, stamps


def _stamped_step(engine: Any) -> dict[int, tuple[float, int]]:
    """One step: per sequence that got tokens, the moment the step returned and how many it got."""
    got = engine.step()
    now = time.perf_counter()
    return {key: (now, len(tokens)) for key, tokens in got.items() if tokens}


def _check_count(key: int, count: int, wanted: int) -> None:
    if count != wanted:
        raise RuntimeError(f"the engine gave query {key} {count} tokens, not the {wanted} it asked for")
