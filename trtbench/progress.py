"""Progress display: alive-progress bars on a terminal, plain lines otherwise, nothing with --quiet."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator, Optional


class Progress:
    """Shows one bar (or line) per build and per timing loop."""

    def __init__(self, quiet: bool = False, stream=None):
        self.stream = stream or sys.stdout
        self.quiet = quiet
        self.bars = not quiet and self.stream.isatty()

    def log(self, message: str) -> None:
        """A plain status line (suppressed with --quiet)."""
        if not self.quiet:
            print(message, file=self.stream, flush=True)

    @contextmanager
    def task(self, title: str, total: Optional[int] = None) -> Iterator[Callable[[], None]]:
        """Yield a ``tick()`` to call once per step; ``total=None`` shows an open-ended spinner."""
        if self.bars:
            from alive_progress import alive_bar

            with alive_bar(total, title=title, file=self.stream, enrich_print=False, receipt=True) as bar:
                yield bar
        else:
            self.log(f"{title} ...")
            yield lambda: None
