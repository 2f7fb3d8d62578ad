"""Which layer is named: the first, in graph order, whose own SQNR is below the precision's line and more than
``OUTLIER_DB`` below the median of the build's other judged, inexact layers (docs/accuracy.md, "The floor")."""

from __future__ import annotations

import math
import statistics
from typing import Optional, Sequence

from trtbench.diagnose.taps import LayerError

SIGNIFICAND_BITS = {"fp32": 24, "fp16": 11, "bf16": 8, "int8": 8}  # int8: its 8-bit grid at full scale
MARGIN_DB = 24.0  # below the rounding line; about 4 bits
OUTLIER_DB = 20.0  # below the median of the build's layers


def line_db(precision: str) -> float:
    """The own SQNR under which a layer's error exceeds what rounding at ``precision`` explains."""
    return 6.02 * SIGNIFICAND_BITS[precision] + 1.76 - MARGIN_DB


def median_own_db(errors: Sequence[LayerError], but: Optional[LayerError] = None) -> Optional[float]:
    """The median own SQNR of ``errors`` (other than ``but``) that are judged and not exact."""
    values = [e.own_sqnr_db for e in errors
              if e is not but and e.own_sqnr_db is not None and not math.isinf(e.own_sqnr_db)]
    return statistics.median(values) if values else None


def named_layer(errors: Sequence[LayerError], precision: str) -> Optional[LayerError]:
    """The first layer whose own error stands out, or None."""
    line = line_db(precision)
    for error in errors:
        own = error.own_sqnr_db
        if own is None or own >= line:
            continue
        median = median_own_db(errors, but=error)
        if median is None or own < median - OUTLIER_DB:
            return error
    return None


def ranked(errors: Sequence[LayerError]) -> list[LayerError]:
    """The layers by own error, the largest first (layers whose input was not finite last)."""
    return sorted(errors, key=lambda e: math.inf if e.own_sqnr_db is None else e.own_sqnr_db)
