"""Report output: figures (:mod:`trtbench.report.plots`)."""
