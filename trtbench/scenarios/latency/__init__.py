"""The latency scenario: every variant at every point checked and timed (:mod:`.scenario`), and its report."""

from trtbench.scenarios.latency.scenario import Latency

__all__ = ["Latency"]
