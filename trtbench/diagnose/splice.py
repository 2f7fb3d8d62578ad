"""Splice bisection: the layers before boundary k built as the variant, the rest in eager fp32, k bisected (over
boundaries padded to a power of two) to the first whose output misses the tolerance (docs/accuracy.md, "Splices")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

from trtbench.diagnose.graph import LayerGraph

Fails = Callable[[int], bool]  # boundary k -> whether the splice with the layers before k built misses


@dataclass(frozen=True)
class SpliceResult:
    """The layer where the bisection ends (its index in graph order; None where even the whole model spliced keeps
    the tolerance), the boundaries it built and what each did."""

    layer: Optional[int]
    tried: dict  # boundary -> whether it missed the tolerance


def splice_count(layers: int) -> int:
    """The builds a bisection over ``layers`` layers makes."""
    return max(1, math.ceil(math.log2(layers))) if layers > 1 else 1


def bisect(graph: LayerGraph, fails: Fails) -> SpliceResult:
    """The first layer whose splice misses, given that the whole model built as the variant misses: boundaries in
    (0, 2**m], ``fails(k)`` for the k that the search visits, exactly :func:`splice_count` of them."""
    layers = len(graph.layers)
    lo, hi = 0, 2 ** splice_count(layers)  # fails(lo) is False (nothing built), fails(hi) is taken as True
    tried: dict = {}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        tried[mid] = fails(min(mid, layers))
        lo, hi = (lo, mid) if tried[mid] else (mid, hi)
    return SpliceResult(hi - 1 if hi <= layers else None, tried)
