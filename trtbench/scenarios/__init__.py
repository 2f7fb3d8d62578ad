"""How a built variant is exercised: one module per scenario, each a :class:`~.base.Scenario` registered
here by importing it (a new scenario: its module(s), and one line below).

- ``latency``: the interleaved, one-call-at-a-time timing of every variant at every point
  (:mod:`.latency`, over :mod:`trtbench.measure.timing`'s rounds); the default scenario.
- ``server``: serving under load, driven by MLPerf LoadGen (:mod:`.server`): Poisson arrivals at
  an offered QPS, a pool of worker processes, optional dynamic batching, and the peak QPS whose
  latency percentile stays within a bound.
- ``profile``: where one variant's time and memory go (:mod:`.profile`), when the config has a
  ``profile:`` section.
- ``generate``: a causal language model's TTFT, TPOT, tokens/s and E2E on every listed decoder
  (:mod:`.generate`, over :mod:`trtbench.decoders`).
"""

from trtbench.scenarios import latency, server, profile, generate  # noqa: F401  (registration, in report order)
from trtbench.scenarios.base import Testbed, Scenario, register, registered, scenario_class, unregister

__all__ = ["Testbed", "Scenario", "register", "registered", "scenario_class", "unregister"]
