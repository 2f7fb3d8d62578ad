"""How a worker gets its decoder: it builds the decoder's artifact from the model's Hugging Face folder with the
decoder's own library, loads it as a deployment would, and warms up on each request it will be timed on.

The worker's calls (:meth:`DecoderRecipe.materialize`), each made by the parent through the worker's ``check``
request (one untimed call, its output sent back with the call's peak memory): a label of ``requests`` is one
generation request through the one harness (:func:`trtbench.measure.token_timing.timed_request`), returning its
timestamps, its tokens and the session's facts at that moment; ``logits`` is the teacher-forced logits of
``teacher``. The worker is a fresh process, so its load time and its first request's time to first token are the
artifact's cold start (``cold_start`` in its facts).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from trtbench.decoders import get_decoder
from trtbench.measure.token_timing import timed_request

LOGITS = "logits"  # the call label of the teacher-forced logits


@dataclass(frozen=True)
class DecoderRecipe:
    """Decoder ``decoder`` at ``precision``, built from folder ``source`` into ``out_dir``, run on ``device``
    with ``threads`` threads; ``requests``: call label -> (prompt, int64 batch x prompt_len; new tokens)."""

    decoder: str
    precision: str
    source: str
    out_dir: str
    device: str
    threads: int
    requests: dict
    teacher: np.ndarray  # int64 (1, seq): the sequence whose logits are compared with eager fp32's

    def materialize(self) -> tuple[dict, dict]:
        torch.set_num_threads(self.threads)
        decoder = get_decoder(self.decoder)
        started = time.perf_counter()
        artifact = decoder.build(Path(self.source), self.precision, Path(self.out_dir), self.threads)
        built = time.perf_counter()
        session = decoder.load(artifact, self.device, self.threads)
        loaded = time.perf_counter()

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
        cold = {"load_s": round(loaded - built, 3), "first_token_ms": round((first["stamps"][0] - first["start"]) * 1e3, 3)}
        facts = {"build_s": round(built - started, 3), "load_s": cold["load_s"], "cold_start": cold,
                 "warmup_s": round(time.perf_counter() - loaded, 3), "artifact": Path(artifact).name,
                 **session.facts}
        return calls, facts
