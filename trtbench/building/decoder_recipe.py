"""How a worker gets its decoder: built for every (batch, cache length) it serves, loaded as a deployment would, and
warmed up on each request it is timed on (more: docs/generate.md, "Module notes", trtbench/building/decoder_recipe.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, TypeVar

import numpy as np
import torch

from trtbench.building.decoder_build import MIB, DecoderBuild, build_decoder
from trtbench.decoders import get_decoder
from trtbench.measure.engine_timing import engine_alone, serve_engine
from trtbench.measure.token_timing import timed_request
from trtbench.profiling.memory import proc_status_bytes

LOGITS = "logits"  # the call label of the teacher-forced logits
ENGINE = "engine"  # the call label of a continuous-batching engine's serving: (admit message, channel) -> None
T = TypeVar("T")


@dataclass(frozen=True)
class LoadTiming:
    """How a worker's load of its artifact went: its time, when it ended, and the worker's RSS just after."""

    load_s: float
    loaded_at: float  # time.perf_counter() at its end
    rss_after_load_mb: float

    def facts(self, built, first_token_s: float, own: dict) -> dict:
        """The worker's facts once warm: the build's, the load's, the cold start (the load, and the first request's
        time to first token, ``first_token_s``), the warm-up's time, and ``own`` (the session's or engine's)."""
        cold = {"load_s": round(self.load_s, 3), "first_token_ms": round(first_token_s * 1e3, 3)}
        return {**built.facts, "load_s": cold["load_s"], "cold_start": cold,
                "rss_after_load_mb": self.rss_after_load_mb, "warmup_s": round(time.perf_counter() - self.loaded_at, 3),
                "artifact": built.artifact.name, **own}


def timed_load(load: Callable[[], T]) -> tuple[T, LoadTiming]:
    """What ``load()`` returns, and how its load went."""
    started = time.perf_counter()
    loaded = load()
    ended = time.perf_counter()
    return loaded, LoadTiming(ended - started, ended, round(proc_status_bytes("VmRSS") / MIB, 1))


@dataclass(frozen=True)
class DecoderRecipe:
    """A worker's decoder; ``requests``: call label -> (prompt, int64 batch x prompt_len; new tokens)."""

    decoder: str
    precision: str
    source: str
    out_dir: str
    device: str
    threads: int
    requests: dict
    teacher: np.ndarray  # int64 (1, seq): the sequence whose logits are compared with eager fp32's
    engine_batch: int = 0  # > 0: host the decoder's continuous-batching engine with room for this many sequences

    def shapes(self) -> tuple[tuple[int, int], ...]:
        """The (batch, cache length) pairs the artifact serves: each request's, and (1, the teacher's length)."""
        needed = {(prompt.shape[0], prompt.shape[1] + new_tokens) for prompt, new_tokens in self.requests.values()}
        return tuple(sorted(needed | {(1, self.teacher.shape[1])}))

    def materialize(self) -> tuple[dict, dict]:
        torch.set_num_threads(self.threads)
        built = build_decoder(DecoderBuild(self.decoder, self.precision, self.source, self.out_dir, self.threads,
                                           self.shapes(), self.device))
        if self.engine_batch:
            return self._engine_calls(built)
        session, load = timed_load(lambda: get_decoder(self.decoder).load(built.artifact, self.device, self.threads))

        def request(prompt: np.ndarray, new_tokens: int, on_step) -> dict:
            timed = timed_request(session, prompt, new_tokens, on_step)
            return {"start": timed.start, "stamps": timed.stamps, "tokens": timed.tokens, "facts": dict(session.facts)}

        calls = {label: (lambda on_step=None, p=prompt, n=new_tokens: request(p, n, on_step))
                 for label, (prompt, new_tokens) in self.requests.items()}
        calls[LOGITS] = lambda: session.logits(self.teacher)
        # first-call work (compiling, lazy initialisation) stays out of the timing, so that the session's facts at
        # ready hold it, and what changes later changed while timed; the first request is the cold one
        warm = {label: call() for label, call in calls.items()}
        first = warm[next(iter(self.requests))]
        facts = load.facts(built, first["stamps"][0] - first["start"], session.facts)
        return calls, facts

    def _engine_calls(self, built) -> tuple[dict, dict]:
        """The engine's one call and its facts, after a warm-up request of each label made alone."""
        engine, load = timed_load(lambda: get_decoder(self.decoder).load_engine(built.artifact, self.device,
                                                                                 self.threads, self.engine_batch))
        warm = [engine_alone(engine, prompt, new_tokens) for prompt, new_tokens in self.requests.values()]
        first_start, first_stamps = warm[0]
        facts = load.facts(built, first_stamps[0] - first_start, engine.facts)
        return {ENGINE: lambda admit, channel: serve_engine(engine, self.requests, admit, channel)}, facts
