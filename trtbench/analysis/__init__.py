"""The analysis of results: medians with their intervals, paired speedups, the pooled process variance and the
machine's regimes, for every reader (:mod:`.records`, over :mod:`trtbench.core.stats`' estimators and
:mod:`.regimes`' change points)."""
