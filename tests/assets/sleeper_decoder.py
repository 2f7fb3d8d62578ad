"""A stand-in decoder whose time to first token and time per output token are known, for the LLM serving tests
(tests/scenarios/serving/test_token_serving.py): a fake of a model, named as one. Its "model folder" is a JSON file of
its times (:func:`write_sleeper`); its build copies that file into the artifact folder and its session sleeps them.

A request of ``batch`` sequences sleeps ``prefill_s`` to its first step, then ``per_token_s * (1 + batch_growth *
(batch - 1))`` per further step, on deadlines from its start (a late wake-up does not delay the next steps), so
that with batching its time per output token grows with the batch. A worker process gets the decoder by
unpickling a :class:`SleeperRecipe`, which imports this module (on the worker's path, as the parent's
``tests/assets`` is) and so registers the decoder.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from trtbench.core.target import Target
from trtbench.building.decoder_recipe import DecoderRecipe
from trtbench.decoders.base import Decoder, register_decoder

TIMES = "sleeper.json"  # the model folder's and the artifact's one file
VOCAB = 8


@dataclass(frozen=True)
class SleeperTimes:
    """The stand-in's times: the prefill (to the first token) and each further step at batch 1, and how much
    longer a step gets per extra sequence in the batch (a share of ``per_token_s``)."""

    prefill_s: float
    per_token_s: float
    batch_growth: float = 0.0

    def step_s(self, batch: int) -> float:
        """A step after the first, at ``batch`` sequences."""
        return self.per_token_s * (1 + self.batch_growth * (batch - 1))

    def request_s(self, batch: int, new_tokens: int) -> float:
        """A whole request of ``batch`` sequences generating ``new_tokens``."""
        return self.prefill_s + (new_tokens - 1) * self.step_s(batch)


def write_sleeper(folder: Path, times: SleeperTimes) -> Path:
    """The stand-in's model folder, holding ``times``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / TIMES).write_text(json.dumps(times.__dict__))
    return folder


class SleeperSession:
    """A loaded stand-in: generates zeros, sleeping its times."""

    def __init__(self, times: SleeperTimes):
        self.times, self.facts = times, {"runtime": "sleeper (a stand-in of known times)"}

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        start, step_s = time.perf_counter(), self.times.step_s(prompt.shape[0])
        for step in range(new_tokens):
            time.sleep(max(0.0, start + self.times.prefill_s + step * step_s - time.perf_counter()))
            stamp()
        return np.zeros((prompt.shape[0], new_tokens), dtype=np.int64)

    def logits(self, ids: np.ndarray) -> np.ndarray:
        return np.zeros((1, ids.shape[1], VOCAB), dtype=np.float32)

    def close(self) -> None:
        pass


@register_decoder
class SleeperDecoder(Decoder):
    name = "sleeper"
    precisions = ("fp32",)
    builds_apart = False  # its build copies one file; a build process of its own would not know this decoder

    def unavailable_reason(self, target: Target) -> Optional[str]:
        precision, device = target.precision, str(target.device)
        return None if precision in self.precisions and device == "cpu" else "the stand-in runs fp32 on the CPU"

    def build(self, source: Path, precision: str, out_dir: Path, threads: int,
              shapes: tuple[tuple[int, int], ...], device: str) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(source / TIMES, out_dir / TIMES)
        return out_dir

    def load(self, artifact: Path, device: str, threads: int) -> SleeperSession:
        return SleeperSession(SleeperTimes(**json.loads((artifact / TIMES).read_text())))


@dataclass(frozen=True)
class SleeperRecipe(DecoderRecipe):
    """A :class:`DecoderRecipe` of the stand-in: its class lives here, so that a worker unpickling it imports this
    module, which registers the decoder."""
