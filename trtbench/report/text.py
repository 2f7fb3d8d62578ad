"""How figures are written in the report's tables."""

from __future__ import annotations

from typing import Optional


def ms_text(value: Optional[float]) -> str:
    """Milliseconds with 3 decimals below 100 ms, 1 above; "" for none."""
    return "" if value is None else f"{value:.3f}" if value < 100 else f"{value:.1f}"


def number_text(value: Optional[float], digits: int, suffix: str = "") -> str:
    """``value`` with ``digits`` decimals and ``suffix``; "" for none."""
    return "" if value is None else f"{value:.{digits}f}{suffix}"
