"""The toy scenario's part."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class TallyPart:
    """One variant of a build group, called once at its first point: the output's shape, and who made it."""

    KIND: ClassVar[str] = "tally"
    JOINS_RECORD: ClassVar[bool] = False
    RESULTS_KEY: ClassVar[str] = "tallies"

    environment: str
    model: str
    threads: int
    slot: str
    output_shape: tuple
    pid: int
    failed: bool = False

    @property
    def key(self) -> tuple:
        return (self.environment, self.model, self.threads, self.slot)

    @property
    def fails_run(self) -> bool:
        return self.failed

    def to_dict(self) -> dict:
        return {"environment": self.environment, "model": self.model, "threads": self.threads, "slot": self.slot,
                "output_shape": list(self.output_shape), "pid": self.pid, "failed": self.failed}

    @classmethod
    def from_dict(cls, data: dict) -> "TallyPart":
        return cls(data["environment"], data["model"], data["threads"], data["slot"], tuple(data["output_shape"]),
                   data["pid"], data.get("failed", False))
