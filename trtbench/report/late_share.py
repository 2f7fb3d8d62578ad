"""The late-share plot both kinds of serving draw: why each joint estimate's peak is where it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from matplotlib.figure import Figure

from trtbench.report.plots import finish, label_axes
from trtbench.report.section import Plot


@dataclass(frozen=True)
class SharePanel:
    """One joint estimate as :func:`late_share_plot` draws it (the confirming run left out)."""

    title: str
    ylabel: str
    steps: tuple  # the search's steps (serving's loadgen Step: qps, share, late, queries)
    allowed: float
    peak: float
    interval: Any  # its PeakEstimate (estimate, reader): the layer above's type, named here by what is read


def _wilson(late: int, queries: int) -> tuple[float, float]:
    """Wilson's 90% interval on the late share of ``queries`` independent queries, ``late`` of them late."""
    from scipy.stats import binomtest

    interval = binomtest(late, queries).proportion_ci(confidence_level=0.9, method="wilson")
    return interval.low, interval.high


def late_share_plot(panels: list[SharePanel], file_name: str) -> Optional[Plot]:
    """The late share against the offered QPS, a panel per estimate, with its expected share; None without steps."""
    panels = [panel for panel in panels if panel.steps]
    if not panels:
        return None
    columns, rows = min(len(panels), 3), -(-len(panels) // 3)
    fig = Figure(figsize=(6.0 * columns, 4.2 * rows))
    for i, panel in enumerate(panels):
        ax = fig.add_subplot(rows, columns, i + 1)
        qps, share = np.array([s.qps for s in panel.steps]), np.array([s.share for s in panel.steps])
        low, high = np.array([_wilson(int(s.late.sum()), s.queries) for s in panel.steps]).T
        ax.errorbar(qps, share, yerr=[np.clip(share - low, 0, None), np.clip(high - share, 0, None)],
                    fmt="o", markersize=3, capsize=2, label="steps (90% interval, as if independent)")
        grid = np.linspace(qps.min() * 0.9, qps.max() * 1.1, 200)
        expected = panel.interval.reader.expected_shares(panel.steps, grid)
        if expected is not None:
            ax.plot(grid, expected, label="fitted late share")
        ax.axhline(panel.allowed, color="black", linestyle="--", linewidth=0.8, label=f"allowed ({panel.allowed:.2%})")
        ax.axvline(panel.peak, color="red", linewidth=1.0, label=f"peak {panel.peak:.3g} QPS")
        ax.axvspan(panel.interval.estimate.low, min(panel.interval.estimate.high, grid.max()), color="red", alpha=0.12,
                   label="its 90% interval")
        ax.set_yscale("symlog", linthresh=panel.allowed / 10)
        ax.set_ylim(bottom=0)
        label_axes(ax, "offered QPS", panel.ylabel, panel.title)
        ax.title.set_fontsize("small")
        ax.legend(fontsize="x-small")
    return finish(fig, file_name)
