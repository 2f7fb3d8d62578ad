"""The analysis of results: intervals, speedups, pooled process variance, regimes (:mod:`.records`)."""
