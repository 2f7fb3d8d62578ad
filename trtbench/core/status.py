"""Every status trtbench gives, as string enums whose words results.json keeps."""

from __future__ import annotations

from enum import Enum


class _Word(str, Enum):
    """A status that is its word wherever it is written: JSON, f-strings, CSV."""

    __str__ = str.__str__
    __format__ = str.__format__


class Status(_Word):
    """What became of a case (or of one profiling section)."""

    OK = "ok"
    FAILED = "failed"  # it ran and broke, or missed its accuracy check at save time: the exit code is 1
    SKIPPED = "skipped"  # it cannot run here (no CUDA, a missing library, no path at this precision)
    INTERRUPTED = "interrupted"  # not reached: Ctrl-C or a run-level error; measured again on resume
    UNSUPPORTED = "unsupported"  # a profiling section this variant does not support

    @property
    def final(self) -> bool:
        """Whether a resumed run keeps it (an interrupted case is measured again)."""
        return self in (Status.OK, Status.FAILED, Status.SKIPPED)


class RunStatus(_Word):
    """How a run ended."""

    COMPLETE = "complete"
    INTERRUPTED = "interrupted"
    FAILED = "failed"  # an error outside any one variant stopped it (the reason: failures.log)


class DiagnosisStatus(_Word):
    """What one diagnosis (``trtbench diagnose``) found."""

    AGREES = "agrees"  # the output keeps the tolerance
    DIVERGES = "diverges"  # it misses the tolerance: the splices bisect for the layer
    UNAVAILABLE = "unavailable"  # the path cannot build here
    FAILED = "failed"  # a build raised when called
    STOPPED = "stopped"  # the budget in minutes ran out
