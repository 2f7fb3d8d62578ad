"""Progress display: bars on a terminal, plain lines otherwise, nothing with --quiet (docs/measuring.md)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Optional


class Progress:
    """Shows one bar (or line) per build and per timed point."""

    def __init__(self, quiet: bool = False, stream=None):
        self.stream, self.quiet = stream or sys.stdout, quiet
        self.bars = not quiet and self.stream.isatty()

    def log(self, message: str) -> None:
        """A plain status line (suppressed with --quiet)."""
        if not self.quiet:
            print(message, file=self.stream, flush=True)

    @contextmanager
    def task(self, title: str, total: Optional[int] = None, timed: bool = False) -> Iterator[Callable[[], None]]:
        """Yield a ``tick()`` to call once per step (``total=None``: open-ended); ``timed=True``: never a thread."""
        if self.bars and not timed:
            from alive_progress import alive_bar

            with alive_bar(total, title=title, file=self.stream, enrich_print=False, receipt=True) as bar:
                yield bar
        elif self.bars:
            steps = [0]

            def tick() -> None:
                steps[0] += 1
                self.stream.write(f"\r{title}: round {steps[0]}")
                self.stream.flush()

            yield tick
            self.stream.write(f"\r{title}: {steps[0]} rounds\n")
            self.stream.flush()
        else:
            self.log(f"{title} ...")
            yield lambda: None
