"""Static batching's gathering, for the vision and the LLM servers, from a queue of issued queries (``None``: stop)."""

from __future__ import annotations

import queue
import time
from typing import Any


def gather(pending: queue.Queue, first: Any, deadline_s: float, max_batch: int) -> tuple[list, bool]:
    """``first`` and the queries gathered from ``pending`` by ``deadline_s``, and whether it is closing."""
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
