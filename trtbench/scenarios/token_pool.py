"""An LLM server's pool: one worker process per server, each hosting a generate decoder
(:class:`~trtbench.build.decoder_recipe.DecoderRecipe`) and serving one request at a time. A request streams back
(:meth:`~trtbench.workers.loop.Worker.send_stream`): a message the moment its first token exists, so that the
parent reports it to LoadGen then, and its token stamps at the end (``time.perf_counter``: one clock for every
process of the machine).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

from trtbench.build.decoder_recipe import DecoderRecipe
from trtbench.core.knobs import Knobs
from trtbench.scenarios.token_loadgen import Serve
from trtbench.workers.loop import Worker, WorkerError, spawn_workers, start_workers


def worker_server(worker: Worker, label: str, timeout_s: float) -> Serve:
    """A server of :mod:`.token_loadgen` that sends each query to ``worker`` as the request at ``label``."""

    def serve(first_token):
        worker.send_stream(label)
        reply = worker.stream_reply(timeout_s)
        if reply[0] == "first":
            first_token()
            reply = worker.stream_reply(timeout_s)
        return reply[1]

    return serve


class TokenPool:
    """``count`` workers serving ``recipe`` (each builds into a folder of its own under the recipe's ``out_dir``),
    started with ``knobs`` and the recipe's threads, each bound to cores of its own where the knobs bind."""

    def __init__(self, recipe: DecoderRecipe, count: int, timeout_s: float, log_dir: Optional[Path] = None,
                 knobs: Knobs = Knobs()):
        recipes = {f"server {i}": dataclasses.replace(recipe, out_dir=str(Path(recipe.out_dir) / f"server-{i}"))
                   for i in range(count)}
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
        spawned = spawn_workers(count, timeout_s, log_dir, knobs, recipe.threads, at_once=True)
        ready, errors = start_workers(recipes, spawned)
        self.workers = list(ready.values())
        if errors:
            self.close()
            raise WorkerError("; ".join(str(err) for err in errors.values()))

    def servers(self, label: str, timeout_s: float) -> list[Serve]:
        return [worker_server(worker, label, timeout_s) for worker in self.workers]

    def close(self) -> None:
        for worker in self.workers:
            worker.close()

    def __enter__(self) -> "TokenPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
