"""The latency scenario: every variant at every point checked and timed, interleaved, one call at a time
(:mod:`.scenario`); its report section (:mod:`.report`)."""

from trtbench.scenarios.latency.scenario import Latency

__all__ = ["Latency"]
