"""The interface every decoder (a deployment path of a causal language model) implements, and their registry.

A :class:`Decoder` builds a deployable artifact from a Hugging Face model folder (``config.json``, the
weights and tokenizer files that trtbench writes) at one precision, for the (batch, cache length) shapes it must
serve, and loads it into a :class:`DecoderSession` that generates greedily: the load reads only what the
artifact deploys. The generate scenario's one harness times every
decoder the same way: the session calls ``stamp()`` the moment each step's tokens exist, and every
metric (time to first token, time per output token, inter-token gaps, tokens/s) derives from those
timestamps. Each decoder is one module of :mod:`trtbench.decoders`, decorated with
:func:`register_decoder`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable, ClassVar, Optional, Protocol

import numpy as np

from trtbench.core.registry import Registry
from trtbench.core.target import Target


class DecoderSession(Protocol):
    """A loaded decoder, ready to generate. A session that cannot call ``stamp`` as each step ends at some batch
    (OpenVINO GenAI streams only at batch 1) may define ``step_times()``: after a ``generate``, each step's moment
    on ``time.perf_counter``'s clock from the runtime's own records (None where it stamped), and say so in
    ``facts["per_token_times"]``; the harness (:func:`trtbench.measure.token_timing.timed_request`) takes them."""

    facts: dict  # threads, runtime version, anything the record should state;
    # e.g. {"per_token_times": "streamed" | "from runtime metrics"}

    def generate(self, prompt: np.ndarray, new_tokens: int, stamp: Callable[[], None]) -> np.ndarray:
        """prompt: int64 (batch, prompt_len) token ids. Greedy, EOS ignored, exactly ``new_tokens`` tokens per
        sequence. Calls ``stamp()`` once per generated step (for the whole batch) the moment that step's
        tokens exist, the first call at the first token. Returns int64 (batch, new_tokens)."""

    def logits(self, ids: np.ndarray) -> np.ndarray:
        """Teacher-forced: ``ids`` int64 (1, seq) -> float32 (1, seq, vocab), the logits at every position."""

    def close(self) -> None: ...


class BatchingEngine(Protocol):
    """A decoder's continuous-batching engine, loaded by :meth:`Decoder.load_engine`: sequences join its running
    batch between steps (:meth:`add`) and leave it at their last token; one :meth:`step` advances every sequence in
    it. Greedy, EOS ignored, exactly the asked tokens per sequence, as :meth:`DecoderSession.generate`."""

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
    continuous-batching engine (LLM serving's ``batching: {mode: continuous}``) sets ``continuous_batching`` and
    implements :meth:`load_engine`."""

    name: ClassVar[str]
    extra: ClassVar[str] = ""  # the pip extra that installs its library ("" = core)
    precisions: ClassVar[tuple[str, ...]]  # those it can build, e.g. ("fp32", "int4")
    builds_apart: ClassVar[bool] = True  # its build runs in a process of its own (False: the build loads nothing,
    # as one that writes a file naming the model folder, so it runs in the worker)
    continuous_batching: ClassVar[bool] = False  # it implements load_engine (LLM serving's batching: continuous)

    @abstractmethod
    def unavailable_reason(self, target: Target) -> Optional[str]:
        """Why it cannot run here (a missing library, with the install line; a precision it lacks; an
        architecture its builder cannot build), else None."""

    @abstractmethod
    def build(self, source: Path, precision: str, out_dir: Path, threads: int,
              shapes: tuple[tuple[int, int], ...], device: str) -> Path:
        """Build from the Hugging Face model folder ``source`` with ``threads`` threads, for ``device`` (the run's
        device as configured, ``cuda:1`` stays ``cuda:1``); return the artifact (a file
        or folder) under ``out_dir``, holding everything :meth:`load` needs. ``shapes``: the (batch, cache length)
        pairs the artifact must serve (cache length = prompt + new tokens of a request, and the teacher-forced
        sequence's length at batch 1); a decoder whose programs are static in them builds one per pair, the others
        ignore them. The generate scenario runs it in a process of its own where ``builds_apart``
        (:mod:`trtbench.building.decoder_build`), so that what the build loads never stays in the worker."""

    @abstractmethod
    def load(self, artifact: Path, device: str, threads: int) -> DecoderSession:
        """The artifact :meth:`build` returned, loaded to run on ``device`` with ``threads`` threads."""

    def load_engine(self, artifact: Path, device: str, threads: int, max_batch: int) -> BatchingEngine:
        """The artifact loaded into a continuous-batching engine with up to ``max_batch`` sequences in flight; only
        where ``continuous_batching``."""
        raise NotImplementedError(f"{self.name} has no continuous-batching engine (continuous_batching is False)")

    def self_contained(self, artifact: Path, bring: Callable[[Path, Path], None]) -> None:
        """Make ``artifact``, a copy of what :meth:`build` returned with everything its build folder held, load
        wherever its folder moves: each file or folder it names outside that folder is brought in with
        ``bring(outside, inside)`` and named by its path relative to the artifact. By default it names none."""


DECODERS: Registry[Decoder] = Registry("decoder", "trtbench.decoders")
register_decoder = DECODERS.register
