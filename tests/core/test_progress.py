"""Progress output: alive-progress bars on a terminal, plain lines elsewhere, silence with --quiet."""

from __future__ import annotations

import io

from trtbench.core.progress import Progress


class TerminalStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bars_on_a_terminal():
    stream = TerminalStream()
    progress = Progress(stream=stream)
    assert progress.bars
    with progress.task("time traced fp32 opt", total=5) as tick:
        for _ in range(5):
            tick()
    text = stream.getvalue()
    assert "time traced fp32 opt" in text and "5/5" in text


def test_plain_lines_when_not_a_terminal():
    stream = io.StringIO()
    progress = Progress(stream=stream)
    with progress.task("build scripted fp32", total=1) as tick:
        tick()
    assert stream.getvalue() == "build scripted fp32 ...\n"


def test_quiet_prints_nothing_even_on_a_terminal():
    stream = TerminalStream()
    progress = Progress(quiet=True, stream=stream)
    with progress.task("build eager fp32", total=1) as tick:
        tick()
    progress.log("hello")
    assert stream.getvalue() == ""
