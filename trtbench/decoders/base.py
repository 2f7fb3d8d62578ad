"""The interface every decoder (a deployment path of a causal language model) implements, and their registry."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable, ClassVar, Optional, Protocol

import numpy as np

from trtbench.core.registry import Registry
from trtbench.core.target import Target


class DecoderSession(Protocol):
    """A loaded decoder, ready to generate. One that cannot stamp each step may define ``step_times()``: after a
    ``generate``, each step's ``time.perf_counter`` moment from the runtime's records (None where it stamped)."""

    # threads, runtime version, anything the record should state, e.g. {"per_token_times": "streamed"}
    facts: dict

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        """prompt: int64 (batch, prompt_len) token ids. Greedy, EOS ignored, exactly ``new_tokens`` tokens per
        sequence. Calls ``stamp()`` once per generated step (for the whole batch) the moment that step's
        tokens exist, the first call at the first token. Returns int64 (batch, new_tokens)."""

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """Teacher-forced: ``ids`` int64 (1, seq) -> float32 (1, seq, vocab), the logits at every position."""

    def close(self) -> None: ...


class BatchingEngine(Protocol):
    """A decoder's continuous-batching engine: sequences join between steps (:meth:`add`) and leave at their last
    token; one :meth:`step` advances every sequence. Greedy, EOS ignored, as :meth:`DecoderSession.generate`."""

    facts: dict  # as a session's: threads, runtime version, its scheduler's settings

    def add(self, key: int, prompt: np.ndarray, new_tokens: int) -> None:
        """Admit one sequence as ``key``: ``prompt`` int64 (1, prompt_len), ``new_tokens`` to generate."""

    def step(self) -> dict[int, list[int]]:
        """Run one step of the batch; the tokens each sequence got from it (key -> token ids, those that got
        any). A sequence that got its last token has left the batch."""

    def busy(self) -> bool:
        """Whether some sequence in it has tokens to come."""

    def close(self) -> None: ...


class Decoder(ABC):
    """Base of every decoder: set ``name`` and ``precisions``, implement the three methods, register it; one with a
    continuous-batching engine sets ``continuous_batching`` and implements :meth:`load_engine`."""

    name: ClassVar[str]
    precisions: ClassVar[tuple[str, ...]]  # those it can build, e.g. ("fp32", "int4")
    # its build runs in a process of its own (False: the build loads nothing, so it runs in the worker)
    builds_apart: ClassVar[bool] = True
    continuous_batching: ClassVar[bool] = False  # it implements load_engine (LLM serving's batching: continuous)

    @abstractmethod
    def unavailable_reason(self, target: Target) -> Optional[str]:
        """Why it cannot run here (a missing library, with the install line; a precision it lacks), else None."""

    @abstractmethod
    def build(self, source: Path, precision: str, out_dir: Path, threads: int,
              shapes: tuple[tuple[int, int], ...], device: str) -> Path:
        """Build from the Hugging Face folder ``source`` for ``device``; return the artifact (a file or folder)
        under ``out_dir`` holding everything :meth:`load` needs. ``shapes``: the (batch, cache length) pairs it
        must serve (a decoder whose programs are static in them builds one per pair, the others ignore them)."""

    @abstractmethod
    def load(self, artifact: Path, device: str, threads: int) -> DecoderSession:
        """The artifact :meth:`build` returned, loaded to run on ``device`` with ``threads`` threads."""

    def load_engine(self, artifact: Path, device: str, threads: int, max_batch: int) -> BatchingEngine:
        """The artifact loaded into a continuous-batching engine with up to ``max_batch`` sequences in flight."""
        raise NotImplementedError(f"{self.name} has no continuous-batching engine (continuous_batching is False)")

    def self_contained(self, artifact: Path, bring: Callable[[Path, Path], None]) -> None:
        """Make the copied ``artifact`` load wherever its folder moves (outside paths: ``bring(outside, inside)``)."""


DECODERS: Registry[Decoder] = Registry("decoder", "trtbench.decoders")
register_decoder = DECODERS.register
