"""The interface every decoder (a deployment path of a causal language model) implements, and their registry."""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable, ClassVar, Optional, Protocol

import numpy as np

from trtbench.core.registry import Registry
from trtbench.core.target import Target


class DecoderSession(Protocol):
    """A loaded decoder; one that cannot stamp each step defines ``step_times()``, each step's moment afterwards."""

    facts: dict  # threads, runtime version, anything the record should state

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        """int64 (batch, prompt_len) ids -> int64 (batch, new_tokens): greedy, EOS ignored, ``stamp()`` called once per
        step (the whole batch) the moment its tokens exist, the first at the first token."""

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """Teacher-forced: ``ids`` int64 (1, seq) -> float32 (1, seq, vocab), the logits at every position."""

    def close(self) -> None: ...


class BatchingEngine(Protocol):
    """A decoder's continuous-batching engine: sequences join between steps and leave at their last token."""

    facts: dict  # as a session's: threads, runtime version, its scheduler's settings

    def add(self, key: int, prompt: np.ndarray, new_tokens: int) -> None:
        """Admit one sequence as ``key``: ``prompt`` int64 (1, prompt_len), ``new_tokens`` to generate."""

    def step(self) -> dict[int, list[int]]:
        """Run one step of the batch; the tokens each sequence got (key -> token ids); finished ones leave."""

    def busy(self) -> bool:
        """Whether some sequence in it has tokens to come."""

    def close(self) -> None: ...


class Decoder(ABC):
    """Base of every decoder: set ``name`` and ``precisions``, implement the abstract methods, register it."""

    name: ClassVar[str]
    precisions: ClassVar[tuple[str, ...]]  # those it can build, e.g. ("fp32", "int4")
    builds_apart: ClassVar[bool] = True  # its build runs in a process of its own (False: in the worker)
    continuous_batching: ClassVar[bool] = False  # it implements load_engine (LLM serving's batching: continuous)

    @abstractmethod
    def unavailable_reason(self, target: Target) -> Optional[str]:
        """Why it cannot run here (a missing library, with the install line; a precision it lacks), else None."""

    @abstractmethod
    def build(self, source: Path, precision: str, out_dir: Path, threads: int,
              shapes: tuple[tuple[int, int], ...], device: str) -> Path:
        """The artifact under ``out_dir`` built from the Hugging Face folder ``source`` for ``device``, holding all
        :meth:`load` needs; ``shapes``: the (batch, cache length) pairs a static decoder builds one program each for."""

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
