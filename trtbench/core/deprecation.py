"""An upstream deprecation of what a variant is built, saved or loaded with (docs/backends.md)."""

from __future__ import annotations

import contextlib
import re
import warnings
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

DEPRECATION_CATEGORIES = (DeprecationWarning, FutureWarning)


@dataclass(frozen=True)
class Deprecation:
    """``subject`` deprecated in ``since``, replaced by ``successors`` (or ``instead``, in words); ``messages``:
    regular expressions matching the start of upstream's warnings, ignoring case."""

    subject: str
    since: str
    successors: tuple[str, ...]
    messages: tuple[str, ...]
    instead: str = ""

    @property
    def note(self) -> str:
        """The short status note a row carries and the report shows."""
        way_out = self.instead or " / ".join(self.successors)
        return f"{self.subject}: deprecated in {self.since}; successor: {way_out}"

    def says(self, warning: warnings.WarningMessage) -> bool:
        """Whether ``warning`` is upstream saying this deprecation."""
        return (issubclass(warning.category, DEPRECATION_CATEGORIES)
                and any(re.match(message, str(warning.message), re.IGNORECASE) for message in self.messages))


def warning_lines(caught: Iterable[warnings.WarningMessage], deprecations: Sequence[Deprecation] = ()) -> list[str]:
    """Each caught warning as ``Category: message``, once, sorted; a deprecation's as its note."""
    lines = set()
    for warning in caught:
        said = next((d for d in deprecations if d.says(warning)), None)
        lines.add(said.note if said is not None else f"{warning.category.__name__}: {warning.message}")
    return sorted(lines)


@contextlib.contextmanager
def silenced(deprecations: Sequence[Deprecation]) -> Iterator[None]:
    """Inside, the warnings ``deprecations`` say are not shown (the row says them); every other one is."""
    with warnings.catch_warnings():
        for deprecation in deprecations:
            for message in deprecation.messages:
                for category in DEPRECATION_CATEGORIES:
                    warnings.filterwarnings("ignore", message=message, category=category)
        yield
