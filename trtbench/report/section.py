"""A scenario's section of the report, as data: its Markdown, its results.json entries and its figures."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Optional, Sequence

from matplotlib.container import BarContainer
from matplotlib.figure import Figure

PLOTS = "plots"  # the output folder's figures


@dataclass(frozen=True)
class Plot:
    """A drawn figure, saved as ``plots/<file_name>`` with its ``caption``, and what it draws read back from its axes:
    ``values``, its bars' heights; ``series``, its lines and points by gid (``kind|series`` -> ((x, y), ...))."""

    file_name: str
    figure: Figure
    caption: str
    values: tuple[float, ...] = ()
    series: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, figure: Figure, file_name: str, caption: Optional[str] = None) -> "Plot":
        """``figure`` as drawn, to be saved as ``file_name``; its caption is the file name's stem unless given."""
        values = tuple(float(v) for ax in figure.axes for c in ax.containers if isinstance(c, BarContainer)
                       for v in c.datavalues)
        series = {}
        for ax in figure.axes:
            for line in ax.get_lines():
                if line.get_gid():
                    series[line.get_gid()] = tuple(zip(map(float, line.get_xdata()), map(float, line.get_ydata())))
            for collection in ax.collections:
                if collection.get_gid():
                    series[collection.get_gid()] = tuple((float(x), float(y)) for x, y in collection.get_offsets())
        stem = PurePosixPath(file_name).stem
        return cls(file_name, figure, caption if caption is not None else stem, values, series)

    @property
    def path(self) -> PurePosixPath:
        """Where the writer saves it, relative to the output folder (and so where the Markdown points)."""
        return PurePosixPath(PLOTS, self.file_name)

    @property
    def markdown(self) -> str:
        return f"![{self.caption}]({self.path})"

    @property
    def bars(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class ReportSection:
    """A scenario's part of the report: Markdown, results.json entries, figures and the ``summary`` blocks on top."""

    markdown: str
    json: dict = field(default_factory=dict)
    plots: tuple[Plot, ...] = ()
    summary: tuple = ()


def joined(sections: Sequence[Optional[ReportSection]]) -> Optional[ReportSection]:
    """One section of those given (in order; None where none has anything)."""
    present = [section for section in sections if section is not None]
    if not present:
        return None
    return ReportSection("\n".join(section.markdown for section in present),
                         {key: value for section in present for key, value in section.json.items()},
                         tuple(plot for section in present for plot in section.plots),
                         tuple(block for section in present for block in section.summary))
