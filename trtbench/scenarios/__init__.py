"""How a built variant is exercised: one folder per scenario, each holding its config, scenario, result and report
modules, its :class:`~.base.Scenario` registered here by importing the folder (a new scenario: its folder, and its
name on the one line below). Only the frame lives here: the protocol (:mod:`.base`) and the ``scenarios:`` list
(:mod:`.entries`).

- ``latency``: the interleaved, one-call-at-a-time timing of every variant at every point
  (:mod:`.latency`, over :mod:`trtbench.measure.timing`'s rounds); the default scenario.
- ``serving``: serving under load, driven by MLPerf LoadGen (:mod:`.serving`): Poisson arrivals at
  an offered QPS, a pool of worker processes, optional dynamic batching, and the peak QPS whose
  latency percentile (beside latency) or TTFT and TPOT percentiles (beside generate) stay within their bounds.
- ``profile``: where one variant's time and memory go (:mod:`.profile`), when the config has a
  ``profile:`` section.
- ``generate``: a causal language model's TTFT, TPOT, tokens/s and E2E on every listed decoder
  (:mod:`.generate`, over :mod:`trtbench.decoders`).
"""

from trtbench.scenarios import latency, serving, profile, generate  # noqa: F401  (registration, in report order)
from trtbench.scenarios.base import Testbed, Scenario, register, registered, scenario_class, unregister

__all__ = ["Testbed", "Scenario", "register", "registered", "scenario_class", "unregister"]
