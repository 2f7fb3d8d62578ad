"""The variant step running native code, marked for the run's supervisor (docs/resuming.md, "Native crashes")."""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator, Optional

from trtbench.core.fsutil import atomic_write_text

INFLIGHT_ENV = "TRTBENCH_INFLIGHT"
CRASH_LOG = "crash.log"


@dataclass(frozen=True)
class InFlight:
    """One variant's build, save or check, at one precision, of one model, in a run into ``out_dir``."""

    stage: str  # "build", "save" (the save reloads and checks the saved files too) or "check" (its first call)
    model: str
    variant: str
    precision: str
    out_dir: str


@contextlib.contextmanager
def in_flight(step: InFlight) -> Iterator[None]:
    """Mark ``step`` as running for the supervisor, if there is one, until it ends (a native crash leaves it)."""
    where = os.environ.get(INFLIGHT_ENV)
    if not where:
        yield
        return
    atomic_write_text(Path(where), json.dumps(asdict(step)))
    try:
        yield
    finally:
        Path(where).unlink(missing_ok=True)


def read_in_flight(path: Path) -> Optional[InFlight]:
    """The step the marker at ``path`` names: the one a crashed process was in; None where there is none."""
    try:
        return InFlight(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


@contextlib.contextmanager
def native_crash_log(out_dir: Path) -> Iterator[None]:
    """Under a supervisor, have ``faulthandler`` append a native crash's stack to ``crash.log``."""
    if not os.environ.get(INFLIGHT_ENV):
        yield
        return
    path = Path(out_dir) / CRASH_LOG
    with open(path, "a", encoding="utf-8") as log:
        faulthandler.enable(log)
        try:
            yield
        finally:
            faulthandler.disable()
    if path.stat().st_size == 0:  # no crash, now or in a run before: no file
        path.unlink()
