"""Where a plug-in is asked to run: what every ``unavailable_reason(target)`` reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Target:
    """Where to run: ``device``, ``precision``, a decoder's ``model_type``, and the knobs' processes and threads."""

    device: Optional[torch.device] = None
    precision: str = "fp32"
    model_type: str = ""
    threads: int = 1
    processes: int = 1
