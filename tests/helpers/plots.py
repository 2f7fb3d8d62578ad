"""Figures saved as the report writer saves them, for tests that look at one figure without writing a report."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from trtbench.core.outdir import write_files
from trtbench.report.writer import png_files


def save_plots(out_dir: Path, plots: Iterable) -> list[Path]:
    """Each figure as a PNG at its path under ``out_dir`` (the report's own encoding and atomic write); their
    paths."""
    return list(write_files(out_dir, png_files(plots)).values())
