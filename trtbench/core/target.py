"""Where a plug-in is asked to run: what every ``unavailable_reason(target)`` reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Target:
    """The ``device`` (None for a worker's knobs) and ``precision`` to run at, a transformers ``model_type`` (for
    decoders), and the ``processes`` that run at once, each on ``threads`` cores (for the knobs' binding)."""

    device: Optional[torch.device] = None
    precision: str = "fp32"
    model_type: str = ""
    threads: int = 1
    processes: int = 1
