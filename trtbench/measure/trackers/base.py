"""The tracker protocol: a reading around each timed block of calls (:mod:`trtbench.measure.trackers`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Calls:
    """A block's timed calls: host ms each, and on CUDA the host ms until each returned."""

    host_ms: list[float]
    returned_ms: list[float]


class Tracker(Protocol):
    """A reading around each timed block of calls."""

    key: str  # its values' name in a block's and a RawTiming's ``tracked``

    def start(self) -> None:
        """Just before the block's first timed call."""

    def stop(self, calls: Calls) -> Any:
        """Just after its last: the block's value (None: nothing to keep)."""
