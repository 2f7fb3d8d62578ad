"""The system under test of a serving scenario: worker processes hosting one variant (:class:`ServingPool`), fed by
dispatchers (:class:`ServerSession`); a call ``x<k>`` runs ``k`` queries on inputs the worker prepared (more:
docs/serving.md, "Module notes", trtbench/scenarios/serving/vision/pool.py)."""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Optional

from trtbench.core.knobs import Knobs
from trtbench.scenarios.serving.loadgen.batch_window import gather
from trtbench.scenarios.serving.loadgen.harness import Query
from trtbench.scenarios.serving.vision import messages
from trtbench.scenarios.serving.vision.messages import call_result, send_call
from trtbench.workers.loop import Recipe, Worker, WorkerError, spawn_workers, start_workers


def call_label(queries: int) -> str:
    """The worker call that runs ``queries`` queries at once."""
    return f"x{queries}"


class ServingPool:
    """``len(recipes)`` worker processes, each hosting one recipe, started and built together."""

    def __init__(self, recipes: list[Recipe], timeout_s: float, log_dir: Optional[Path] = None,
                 knobs: Knobs = Knobs(), threads: int = 1):
        named = {f"server worker {i}": recipe for i, recipe in enumerate(recipes)}
        spawned = spawn_workers(len(named), timeout_s, log_dir, knobs, threads, at_once=True)
        ready, errors = start_workers(named, spawned, handlers=(messages,))
        self.workers: list[Worker] = list(ready.values())
        if errors:
            self.close()
            raise next(iter(errors.values()))

    def time_call(self, label: str, calls: int, timeout_s: float) -> list[float]:
        """The ms of ``calls`` calls at ``label`` on the first worker, one at a time, sorted."""
        worker = self.workers[0]
        took = []
        for _ in range(calls):
            send_call(worker, label)
            took.append(call_result(worker, timeout_s))
        return sorted(took)

    def close(self) -> None:
        for worker in self.workers:
            worker.close()


class ServerSession:
    """One LoadGen run's SUT over a pool's first ``workers``; ``complete(ids)`` tells LoadGen."""

    def __init__(self, pool: ServingPool, workers: int, complete: Callable[[list[int]], Any], timeout_s: float,
                 max_batch: int = 1, window_ms: float = 0.0):
        self.complete, self.timeout_s = complete, timeout_s
        self.max_batch, self.window_s = max_batch, window_ms / 1e3
        self.queue: queue.Queue[Optional[Query]] = queue.Queue()
        self.lock = threading.Lock()
        self.issued = 0
        self.answered: list[tuple[int, float]] = []  # per query: its issue index and its latency to completion (ms)
        self.served: list[tuple[int, float]] = []  # per query: its issue index and its call's time in the worker (ms)
        self.lost_issues: list[int] = []  # the issue index of each query completed as lost
        self.batches: Counter[int] = Counter()  # calls per batch size
        self.lost = 0
        self.errors: list[str] = []  # why queries were lost or failed
        self.alive = workers
        self.threads = [threading.Thread(target=self._dispatch, args=(worker,), daemon=True,
                                         name=f"dispatch-{i}") for i, worker in enumerate(pool.workers[:workers])]
        for thread in self.threads:
            thread.start()

    # ---- LoadGen's callbacks -------------------------------------------------------------------

    def issue(self, samples) -> None:
        now = time.perf_counter()
        with self.lock:
            first, self.issued = self.issued, self.issued + len(samples)
            if self.alive:
                for index, sample in enumerate(samples, first):
                    self.queue.put(Query(sample.id, 0, now, index))
                return
            self.lost += len(samples)
            self.lost_issues += list(range(first, self.issued))
        self.complete([sample.id for sample in samples])

    def flush(self) -> None:
        """Nothing is held back: every query is queued as it is issued."""

    # ---- the dispatchers -----------------------------------------------------------------------

    def _dispatch(self, worker: Worker) -> None:
        closing = False
        while not closing and (first := self.queue.get()) is not None:
            batch, closing = (gather(self.queue, first, first.issued_s + self.window_s, self.max_batch)
                              if self.max_batch > 1 else ([first], False))
            sent = time.perf_counter()
            try:
                send_call(worker, call_label(len(batch)))
                call_result(worker, self.timeout_s)
            except WorkerError as err:
                self._give_up(worker, batch, err)
                return
            done = time.perf_counter()
            with self.lock:
                self.batches[len(batch)] += 1
                self.answered += [(q.index, (done - q.issued_s) * 1e3) for q in batch]
                self.served += [(q.index, (done - sent) * 1e3) for q in batch]
            self.complete([q.id for q in batch])

    def _give_up(self, worker: Worker, batch: list[Query], err: WorkerError) -> None:
        """Complete ``batch`` as lost; the last worker to go completes everything still queued too."""
        worker.kill()
        with self.lock:
            lines = str(err).strip().splitlines()  # what happened, and a failed call's exception
            self.errors.append(" ".join(dict.fromkeys([lines[0], lines[-1]])) + f" ({len(batch)} query(ies) lost)")
            self.alive -= 1
            lost = list(batch)
            while not self.alive and not self.queue.empty():  # no dispatcher left to take from the queue
                if (item := self.queue.get_nowait()) is not None:
                    lost.append(item)
            self.lost += len(lost)
            self.lost_issues += [q.index for q in lost]
        self.complete([q.id for q in lost])

    @property
    def latencies_ms(self) -> list[float]:
        """Each answered query's latency (ms), in issue order."""
        return [ms for _, ms in sorted(self.answered)]

    @property
    def service_ms(self) -> list[float]:
        """Each answered query's service time (ms) in the worker, in issue order."""
        return [ms for _, ms in sorted(self.served)]

    def close(self) -> None:
        """Stop the dispatchers (LoadGen has every query back by now)."""
        for _ in self.threads:
            self.queue.put(None)
        for thread in self.threads:
            thread.join(timeout=self.timeout_s + 5)
