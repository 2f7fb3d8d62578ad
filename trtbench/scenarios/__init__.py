"""How a built variant is exercised: one module per scenario.

- ``latency``: the interleaved, one-call-at-a-time timing of every variant at every point
  (:mod:`.latency`, over :mod:`trtbench.measure.timing`'s rounds); the default scenario.
- ``profile``: where one variant's time and memory go (:mod:`.profile`), when the config has a
  ``profile:`` section.
- ``server``: serving under load, driven by MLPerf LoadGen (:mod:`.serving`): Poisson arrivals at
  an offered QPS, a pool of worker processes, optional dynamic batching, and the peak QPS whose
  latency percentile stays within a bound.
"""
