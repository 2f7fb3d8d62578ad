"""An LLM server's pool: one worker process per server, each hosting a generate decoder (or its continuous-batching
engine), a request streaming its steps back as they exist (more: docs/serving.md, "Module notes",
trtbench/scenarios/serving/tokens/pool.py)."""

from __future__ import annotations

import dataclasses
import itertools
import queue
import threading
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

import numpy as np

from trtbench.building.decoder_recipe import DecoderRecipe
from trtbench.core.knobs import Knobs
from trtbench.scenarios.serving.tokens import messages
from trtbench.scenarios.serving.tokens.lengths import QueryLengths
from trtbench.measure.engine_timing import Done, First
from trtbench.scenarios.serving.tokens.messages import StepsDone, engine_reply, send_admit, send_stream, stream_reply
from trtbench.scenarios.serving.tokens.run import Serve
from trtbench.workers.loop import Failed, Worker, WorkerError, spawn_workers, start_workers


def request_label(batch: int, prompt_tokens: int, new_tokens: int) -> str:
    """The worker request of ``batch`` sequences padded to ``prompt_tokens``, generating ``new_tokens``."""
    return f"serve b{batch} p{prompt_tokens} n{new_tokens}"


def serving_requests(lengths: QueryLengths, max_batch: int, vocab: int, seed: int = 0) -> dict[str, tuple]:
    """The requests of a server's recipe: one per batch size and pair of lengths, prompts seeded."""
    prompts, news = lengths.values("prompt_tokens"), lengths.values("new_tokens")
    ids = np.random.default_rng(seed).integers(min(3, vocab - 1), vocab, size=(max_batch, max(prompts)), dtype=np.int64)
    return {request_label(batch, prompt, new): (ids[:batch, :prompt], new)
            for batch in range(1, max_batch + 1) for prompt in prompts for new in news}


def worker_server(worker: Worker, timeout_s: float) -> Serve:
    """A server that sends each request to ``worker``, at its longest prompt and most new tokens."""

    def serve(lengths: Sequence[tuple[int, int]], reached) -> Sequence[float]:
        marks = frozenset({1, *(new for _, new in lengths)})
        send_stream(worker, request_label(len(lengths), max(p for p, _ in lengths), max(marks)), marks)
        while isinstance(reply := stream_reply(worker, timeout_s), StepsDone):
            reached(reply.steps)
        return reply.stamps

    return serve


class EngineClient:
    """The queries in flight in ``worker``'s engine, each answered within ``timeout_s`` or the worker killed."""

    def __init__(self, worker: Worker, timeout_s: float):
        self.worker, self.timeout_s = worker, timeout_s
        self.lock = threading.Lock()  # one sender at a time, and the routes as the reader sees them
        self.routes: dict[int, queue.Queue] = {}
        self.keys = itertools.count()
        threading.Thread(target=self._read, daemon=True).start()

    def serve(self, lengths: Sequence[tuple[int, int]], reached: Callable[[int], None]) -> Sequence[float]:
        """One query (``lengths`` holds its one pair) through the engine; its token stamps."""
        (prompt_tokens, new_tokens), = lengths
        answers: queue.Queue = queue.Queue()
        try:
            with self.lock:
                key = next(self.keys)
                self.routes[key] = answers
                send_admit(self.worker, key, request_label(1, prompt_tokens, new_tokens))
            self._next(answers)
            reached(1)
            stamps = self._next(answers).stamps
        finally:
            with self.lock:
                self.routes.pop(key, None)
        reached(new_tokens)
        return stamps

    def _next(self, answers: queue.Queue) -> Union[First, Done]:
        try:
            answer = answers.get(timeout=self.timeout_s)
        except queue.Empty:
            self.worker.kill()
            raise WorkerError(f"{self.worker.name}'s worker gave no answer to a query within {self.timeout_s:g} s "
                              f"and was killed") from None
        if isinstance(answer, WorkerError):
            raise answer
        return answer

    def _read(self) -> None:
        """Route each answer to its query; an engine's error, or the worker's death, fails every query in flight."""
        while True:
            try:
                answer = engine_reply(self.worker)
            except WorkerError as err:
                self._fail(err)
                return
            if isinstance(answer, Failed):
                self._fail(WorkerError(f"{self.worker.name}'s worker failed in its engine:\n{answer.traceback}"))
                continue
            with self.lock:
                route = self.routes.get(answer.key)
            if route is not None:
                route.put(answer)

    def _fail(self, err: WorkerError) -> None:
        with self.lock:
            for route in self.routes.values():
                route.put(err)


class DecoderPool:
    """``count`` workers serving ``recipe``, each building into a folder of its own, started with ``knobs``."""

    def __init__(self, recipe: DecoderRecipe, count: int, timeout_s: float, log_dir: Optional[Path] = None,
                 knobs: Knobs = Knobs()):
        recipes = {f"server {i}": dataclasses.replace(recipe, out_dir=str(Path(recipe.out_dir) / f"server-{i}"))
                   for i in range(count)}
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
        spawned = spawn_workers(count, timeout_s, log_dir, knobs, recipe.threads, at_once=True)
        ready, errors = start_workers(recipes, spawned, handlers=(messages,))
        self.workers, self.engine_batch = list(ready.values()), recipe.engine_batch
        if errors:
            self.close()
            raise WorkerError("; ".join(str(err) for err in errors.values()))

    def servers(self, timeout_s: float) -> list[Serve]:
        """One server per worker, or ``engine_batch`` per worker's engine."""
        if not self.engine_batch:
            return [worker_server(worker, timeout_s) for worker in self.workers]
        clients = [EngineClient(worker, timeout_s) for worker in self.workers]
        return [client.serve for client in clients for _ in range(self.engine_batch)]

    def close(self) -> None:
        for worker in self.workers:
            worker.close()

    def __enter__(self) -> "DecoderPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
