"""One colour per variant across every plot of a run; series of one variant differ by hatch or marker."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from matplotlib import colormaps
from matplotlib.colors import to_hex

from trtbench.core.record import Record

BASELINE = "eager"  # first, so that it keeps the first colour whatever else the run lists
# tab10, then tab20b's five hues, dark and light: 20 distinct colours before one repeats
PALETTE = tuple(to_hex(c) for c in (*colormaps["tab10"].colors, *colormaps["tab20b"].colors[::4],
                                    *colormaps["tab20b"].colors[2::4]))
OTHER = "#000000"  # a label the mapping was not built with
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


@dataclass(frozen=True)
class VariantColors:
    """Variant label (:attr:`~trtbench.core.case.Case.label`) -> colour, for every plot of one run."""

    colors: Mapping[str, str]

    def of(self, label: str) -> str:
        return self.colors.get(label, OTHER)

    def styles(self, series: Mapping[str, str]) -> dict[str, tuple[str, int]]:
        """Per series (name -> its variant label, in drawing order): its variant's colour and its rank among them."""
        ranks: Counter[str] = Counter()
        out = {}
        for name, label in series.items():
            out[name] = (self.of(label), ranks[label])
            ranks[label] += 1
        return out


def variant_colors(records: Iterable[Record]) -> VariantColors:
    """The colours of a run's variants: eager first, then the others in the order of the records."""
    labels = sorted(dict.fromkeys(r.case.label for r in records), key=lambda label: label != BASELINE)
    return VariantColors({label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels)})


def hatch(rank: int) -> str:
    return HATCHES[rank % len(HATCHES)]


def marker(rank: int) -> str:
    return MARKERS[rank % len(MARKERS)]


def legend_beside(ax, **kwargs):
    """The axes' legend to the right of them, clear of what they draw (``fig.tight_layout`` makes room)."""
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kwargs)
