"""Static batching's gathering, shared by the vision and the LLM servers: a dispatcher that took a first query
from the queue waits for more until the batch is full or the window after the first query's arrival ends. The queue
holds issued queries, with ``None`` as the sentinel that tells a dispatcher to stop."""

from __future__ import annotations

import queue
import time
from typing import Any


def gather(pending: queue.Queue, first: Any, deadline_s: float, max_batch: int) -> tuple[list, bool]:
    """``first`` and the queries taken from ``pending`` until ``max_batch`` of them or ``deadline_s``
    (``time.perf_counter``) passes, whichever comes first (past the deadline: those already queued); and
    whether the session is closing (a sentinel was taken)."""
    batch = [first]
    while len(batch) < max_batch:
        remaining = deadline_s - time.perf_counter()
        try:
            item = pending.get(timeout=remaining) if remaining > 0 else pending.get_nowait()
        except queue.Empty:
            break
        if item is None:
            return batch, True
        batch.append(item)
    return batch, False
